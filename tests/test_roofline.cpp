// The roofline lesson: FLOPs and bytes by the stated rules (worked out by hand here), the roof
// as min(peak, bandwidth x intensity), and each point's wall from its side of the ridge.
#include <doctest/doctest.h>

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
