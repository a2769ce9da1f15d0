// The roofline lesson: FLOPs and bytes by the stated rules (worked out by hand here), the roof
// as min(peak, bandwidth x intensity), and each point's wall from its side of the ridge.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "attn/engine/error.hpp"
#include "attn/lessons/roofline.hpp"
#include "attn/render/roofline_picture.hpp"
#include "picture_support.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;

TEST_CASE("roofline: prefill and decode FLOPs and bytes, worked out by hand") {
  // n = 512, H = 8, d = 64: 4 * 8 * 512^2 * 64 FLOPs over Q, K, V, O = 4 * 8 * 512 * 64 floats.
  const RooflinePoint p = prefill_point(512, 8, 64);
  CHECK(p.flops == 536870912.0);
  CHECK(p.bytes == 4194304.0);
  CHECK(p.intensity == 128.0);  // 4 H n^2 d / (16 H n d) = n / 4
  // Decode, L = 4096, MHA: 4 * 8 * 4096 * 64 FLOPs; K and V are 2 * 8 * 4096 * 64 floats, plus q and o.
  const RooflinePoint m = decode_point(4096, 8, 8, 64);
  CHECK(m.flops == 8388608.0);
  CHECK(m.bytes == (2.0 * 8 * 4096 * 64 + 2.0 * 8 * 64) * 4);
  CHECK(m.intensity == doctest::Approx(0.5).epsilon(1e-3));
  // GQA 8:1 reads an eighth of K and V for the same FLOPs: eight times the intensity.
  const RooflinePoint g = decode_point(4096, 8, 1, 64);
  CHECK(g.flops == m.flops);
  CHECK(g.intensity == doctest::Approx(4.0).epsilon(1e-2));
  CHECK(g.label == "L = 4096 GQA 8:1");
}

TEST_CASE("roofline: a small measured run puts every point under its roof's rule") {
  RooflineConfig c;
  c.prefill_ns = {64, 256};
  c.kv_lens = {512};
  c.sgemm_n = 256;
  c.repeat = 1;
  const RooflineResult r = run_roofline(c);
  CHECK(r.peak_gflops > 0);
  CHECK(r.bandwidth_gbps > 0);
  CHECK(r.ridge == doctest::Approx(r.peak_gflops / r.bandwidth_gbps));
  REQUIRE(r.points.size() == 4);  // 2 prefill, decode MHA and GQA 8:1
  for (const RooflinePoint& p : r.points) {
    CAPTURE(p.label);
    CHECK(p.gflops == doctest::Approx(p.flops / (p.min_ms * 1e6)));
    CHECK(p.roof_gflops == doctest::Approx(std::min(r.peak_gflops, r.bandwidth_gbps * p.intensity)));
    CHECK(p.memory_bound == (p.intensity < r.ridge));
  }
  const Json j = roofline_json(r);
  CHECK(j["points"].size() == 4);
  CHECK(j["points"][2]["wall"] == (r.points[2].memory_bound ? "memory" : "compute"));
  const Figure f = roofline_figure(r);
  REQUIRE(f.plots.size() == 1);
  CHECK(DecodedPng::from_bytes(render_png(f, 1)).ok());

  c.gqa_kv_heads = 3;
  CHECK_THROWS_AS(run_roofline(c), InputError);
}

TEST_CASE("cli roofline: JSON with every point and the picture in --plots") {
  TempDir dir;
  const CliResult r = run_cli("roofline --n 64,128 --kv 512 --repeat 1 --format json --plots p", "", dir.path.string());
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  const Json j = Json::parse(r.out);
  CHECK(j["points"].size() == 4);
  CHECK(j["rules"]["decode"].get<std::string>().find("2 Hkv L d") != std::string::npos);
  CHECK(j["machine"].contains("blas"));
  CHECK(DecodedPng::from_file(dir / "p/roofline.png").ok());
  const CliResult text = run_cli("roofline --n 64 --kv 512 --repeat 1");
  REQUIRE(text.code == 0);
  CHECK(text.out.find("ridge point:") != std::string::npos);
  CHECK(text.out.find("decode L = 512 MHA") != std::string::npos);
}

TEST_CASE("roofline caption: each point's side of the ridge and its share of the roof, computed per point") {
  RooflineResult r;
  r.peak_gflops = 100;
  r.bandwidth_gbps = 10;
  r.ridge = 10;  // FLOP/byte
  auto at = [&](RooflinePoint p, double gflops) {
    p.gflops = gflops;
    p.roof_gflops = std::min(r.peak_gflops, r.bandwidth_gbps * p.intensity);
    p.memory_bound = p.intensity < r.ridge;
    return p;
  };
  // Intensities 128 and 512 (n / 4) lie right of the ridge, MHA decode's 0.5 left of it.
  r.points = {at(prefill_point(512, 8, 64), 8), at(prefill_point(2048, 8, 64), 90), at(decode_point(4096, 8, 8, 64), 4)};
  std::string c = roofline_caption(r);
  CAPTURE(c);
  CHECK(c.find("Right of it, compute-bound (roof: the sgemm's 100 GFLOP/s): prefill n = 512 at 8 %, prefill n = 2048 "
               "at 90 % of the roof.") != std::string::npos);
  CHECK(c.find("Left of it, memory-bound (roof: 10 GB/s × intensity): decode L = 4096 MHA at 80 % of the roof.") !=
        std::string::npos);
  // n = 512 at 8 % of its roof hits no wall: the caption must not say it does.
  CHECK(c.find("1 point runs under half of its roof: held back by the kernel itself, not by a wall.") != std::string::npos);
  CHECK(c.find("hit the") == std::string::npos);
  CHECK(c.find("warning") == std::string::npos);  // the reader of a picture sees no terminal
  r.points[1] = at(prefill_point(2048, 8, 64), 120);
  c = roofline_caption(r);
  CHECK(c.find("1 compute-bound point runs above the sgemm roof") != std::string::npos);
  const Figure f = roofline_figure(r);
  CHECK(f.subtitle == c);

  // Labels keep off the roof: a prefill point under its roof (n = 512, 8 of 100 GFLOP/s) is
  // labelled below itself, one over it (n = 2048, 120) above; every label on a white box.
  // A decode point under its rising roof (L = 4096 MHA, 4 of 5 GFLOP/s) is labelled to its
  // right, where the roof is higher; one over it (4096 GQA 8:1 at 50 of 40) to its left.
  r.points.push_back(at(decode_point(4096, 8, 1, 64), 50));
  const std::vector<PlotLabel> labels = roofline_labels(r);
  REQUIRE(labels.size() == 4);
  CHECK(labels[0].y < 8);
  CHECK(labels[0].anchor_y == 0.0);  // its top edge under the point
  CHECK(labels[1].y > 120);
  CHECK(labels[1].anchor_y == 1.0);  // its bottom edge over the point
  CHECK(labels[2].x > r.points[2].intensity);
  CHECK(labels[2].anchor_x == 0.0);
  CHECK(labels[3].x < r.points[3].intensity);
  CHECK(labels[3].anchor_x == 1.0);
  for (const PlotLabel& l : labels) CHECK(l.backdrop);
}

TEST_CASE("roofline labels: prefill points a factor 2 apart take alternate rows, so no label covers the next") {
  RooflineResult r;
  r.peak_gflops = 200;
  r.bandwidth_gbps = 30;
  r.ridge = 200.0 / 30;
  for (std::size_t n : {512, 1024, 2048, 4096}) {
    RooflinePoint p = prefill_point(n, 8, 64);
    p.gflops = 180;  // all under the flat roof, all at one height: only the rows can tell them apart
    p.roof_gflops = r.peak_gflops;
    r.points.push_back(p);
  }
  const std::vector<PlotLabel> labels = roofline_labels(r);
  REQUIRE(labels.size() == 4);
  // "n = 1024" is wider than the factor 2 to its neighbours: 512 and 2048 (a factor 4 apart)
  // share the first row under their points, 1024 and 4096 the second, lower one.
  CHECK(labels[0].y == doctest::Approx(labels[2].y));
  CHECK(labels[1].y == doctest::Approx(labels[3].y));
  // The second row lies further under the first than the first under its points (7 points of
  // height): by the two lines of text the first row's labels take (24 points).
  CHECK(std::log(labels[0].y / labels[1].y) > 3 * std::log(180 / labels[0].y));
  for (const PlotLabel& l : labels) CHECK(l.y < 180);  // under the points, away from the roof
  // Points a factor 4 or more apart need no second row.
  r.points.erase(r.points.begin() + 3);
  r.points.erase(r.points.begin() + 1);
  const std::vector<PlotLabel> spread = roofline_labels(r);
  CHECK(spread[0].y == doctest::Approx(spread[1].y));
}
