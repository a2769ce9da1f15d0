// The roofline lesson: FLOPs and bytes by the stated rules (worked out by hand here), the roof
// as min(peak, bandwidth x intensity), and each point's wall from its side of the ridge.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "attn/engine/attention/flash.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/lessons/measure/roofline.hpp"
#include "attn/render/draw/canvas.hpp"
#include "attn/render/views/roofline_picture.hpp"
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

TEST_CASE("roofline --bf16: each prefill length again with bfloat16 products, the same FLOPs and bytes") {
  RooflineConfig c;
  c.prefill_ns = {64, 128};
  c.kv_lens = {512};
  c.sgemm_n = 256;
  c.repeat = 1;
  c.bf16 = true;
  // The budget: sgemm and, per length, the float32 point, the bf16 point and the float32 run
  // beside it, each repeat + 1 = 2 times.
  const double prefill = prefill_point(64, 8, 64).flops + prefill_point(128, 8, 64).flops;
  CHECK(roofline_flops(c) == doctest::Approx((2.0 * 256 * 256 * 256 + 3 * prefill) * 2));
  const RooflineResult r = run_roofline(c);
  REQUIRE(r.points.size() == 6);  // 64, 64 bf16, 128, 128 bf16, decode MHA and GQA
  for (std::size_t k : {0, 2}) {
    const RooflinePoint &f32 = r.points[k], &bf16 = r.points[k + 1];
    CAPTURE(bf16.label);
    CHECK(f32.dtype == "f32");
    CHECK(bf16.dtype == "bf16");
    CHECK(bf16.label == f32.label + " bf16");
    CHECK(bf16.flops == f32.flops);
    CHECK(bf16.bytes == f32.bytes);
    CHECK(bf16.gflops == doctest::Approx(bf16.flops / (bf16.min_ms * 1e6)));
  }
  const Json j = roofline_json(r);
  CHECK(j["points"][1]["dtype"] == "bf16");
  CHECK(j["points"][4]["dtype"] == "f32");  // decode
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
  // A bfloat16 point over the float32 roof is not evidence against the sgemm measured: it is said apart.
  RooflineResult b = r;
  RooflinePoint bf16 = at(prefill_point(2048, 8, 64), 170);
  bf16.dtype = "bf16";
  b.points = {bf16, bf16};
  const std::string cb = roofline_caption(b);
  CAPTURE(cb);
  CHECK(cb.find("2 bfloat16 points run above the float32 sgemm roof") != std::string::npos);
  CHECK(cb.find("bound them.") != std::string::npos);
  CHECK(cb.find("understates") == std::string::npos);
  // The caption names the instruction that ran them on this CPU (what the tile loop reports).
  FlashOptions bf16_products;
  bf16_products.precision = FlashPrecision::bfloat16;
  const bool tiles = flash_tiling(64, 64, bf16_products).isa == "amx-bf16";
  CHECK(flash_bf16_isa() == flash_tiling(64, 64, bf16_products).isa);
  CHECK(cb.find(tiles ? "tdpbf16ps" : "vdpbf16ps") != std::string::npos);
  CHECK(cb.find(tiles ? "vdpbf16ps" : "tdpbf16ps") == std::string::npos);
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

namespace {

// Each prefill label's box in the plot's points (x right, y up from the bottom), worked out
// here from the label's anchor, pango's measure of its text and the axes' ranges.
struct LabelBox {
  double x0, x1, y0, y1;
};

std::vector<LabelBox> prefill_label_boxes(const RooflineResult& r, const std::vector<PlotLabel>& labels) {
  const RooflineRange a = roofline_range(r);
  Canvas measuring = Canvas::measuring();
  std::vector<LabelBox> boxes;
  for (std::size_t k = 0; k < labels.size(); ++k) {
    if (r.points[k].kind != "prefill") continue;
    const PlotLabel& l = labels[k];
    const TextSize t = measuring.measure(l.text, TextStyle{l.size});
    const double w = t.width + 4, h = t.height + 4;  // line_plot's 2-point margin round a backdrop
    const double px = std::log(l.x / a.x_lo) / std::log(a.x_hi / a.x_lo) * kRooflinePlotWidth;
    const double py = std::log(l.y / a.y_lo) / std::log(a.y_hi / a.y_lo) * kRooflinePlotHeight;
    const double top = py + l.anchor_y * h;  // anchor_y 0: the top edge at y; 1: the bottom edge
    boxes.push_back({px - l.anchor_x * w, px + (1 - l.anchor_x) * w, top - h, top});
  }
  return boxes;
}

// A point as a run measured it: its GFLOP/s, under a roof of roof_gflops.
RooflinePoint measured(RooflinePoint p, double gflops, double roof_gflops) {
  p.gflops = gflops;
  p.roof_gflops = roof_gflops;
  return p;
}

// No label's box (drawn white, over the markers) may hide a point: each marker, 8 points
// across, stays clear of every prefill label.
void check_markers_clear(const RooflineResult& r, const std::vector<LabelBox>& boxes) {
  const RooflineRange a = roofline_range(r);
  for (std::size_t k = 0; k < r.points.size(); ++k) {
    const double px = std::log(r.points[k].intensity / a.x_lo) / std::log(a.x_hi / a.x_lo) * kRooflinePlotWidth;
    const double py = std::log(r.points[k].gflops / a.y_lo) / std::log(a.y_hi / a.y_lo) * kRooflinePlotHeight;
    for (const LabelBox& b : boxes) {
      CAPTURE(k);
      CHECK_FALSE((px + 4 > b.x0 && px - 4 < b.x1 && py + 4 > b.y0 && py - 4 < b.y1));
    }
  }
}

void check_boxes_apart_and_inside(const std::vector<LabelBox>& boxes) {
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    CAPTURE(i);
    CHECK(boxes[i].y1 <= kRooflinePlotHeight);
    CHECK(boxes[i].y0 >= 0);
    for (std::size_t j = i + 1; j < boxes.size(); ++j) {
      CAPTURE(j);
      const bool meet = boxes[i].x0 < boxes[j].x1 && boxes[j].x0 < boxes[i].x1 && boxes[i].y0 < boxes[j].y1 &&
                        boxes[j].y0 < boxes[i].y1;
      CHECK_FALSE(meet);
    }
  }
}

}  // namespace

TEST_CASE("roofline labels: prefill points a factor 2 apart never cover each other's labels") {
  RooflineResult r;
  r.peak_gflops = 200;
  r.bandwidth_gbps = 30;
  r.ridge = 200.0 / 30;
  // All under the flat roof, all at one height: only rows can keep their labels apart.
  for (std::size_t n : {512, 1024, 2048, 4096}) r.points.push_back(measured(prefill_point(n, 8, 64), 180, 200));
  // MHA decode over its roof, as a cache read from the CPU's caches is: the x axis then spans
  // 4.5 decades, as in `attn-cli roofline`, and a factor 2 is narrower than "n = 1024".
  const RooflinePoint mha = decode_point(4096, 8, 8, 64);
  r.points.push_back(measured(mha, 25, 30 * mha.intensity));
  const std::vector<PlotLabel> labels = roofline_labels(r);
  REQUIRE(labels.size() == 5);
  for (std::size_t k = 0; k < 4; ++k) CHECK(labels[k].y < 180);  // under the points, away from the roof
  // Side by side the labels would overlap: more than one row is in use, and no boxes meet.
  CHECK(std::any_of(labels.begin() + 1, labels.begin() + 4, [&](const PlotLabel& l) { return l.y < labels[0].y / 1.01; }));
  check_boxes_apart_and_inside(prefill_label_boxes(r, labels));
  // Points a factor 8 apart share the first row.
  r.points.erase(r.points.begin() + 1, r.points.begin() + 3);  // n = 512 and 4096 are left
  const std::vector<PlotLabel> spread = roofline_labels(r);
  CHECK(spread[0].y == doctest::Approx(spread[1].y));
}

TEST_CASE("roofline labels: over their points, at different heights, apart and inside the plot") {
  RooflineResult r;
  r.peak_gflops = 76;  // a slow sgemm: the prefill points run over their roof, labels above
  r.bandwidth_gbps = 19;
  r.ridge = 76.0 / 19;
  // The picture that showed the fault: heights differ, so a lower point's second row met a
  // higher point's first.
  const std::size_t ns[] = {512, 768, 1024, 4096};
  const double gflops[] = {152, 106, 88.2, 139};
  for (std::size_t k = 0; k < 4; ++k) r.points.push_back(measured(prefill_point(ns[k], 8, 64), gflops[k], 76));
  const RooflinePoint mha = decode_point(16384, 8, 8, 64);
  r.points.push_back(measured(mha, 10, 19 * mha.intensity));
  const std::vector<PlotLabel> labels = roofline_labels(r);
  REQUIRE(labels.size() == 5);
  for (std::size_t k = 0; k < 4; ++k) {
    CHECK(labels[k].anchor_y == 1.0);
    CHECK(labels[k].y > gflops[k]);
  }
  check_boxes_apart_and_inside(prefill_label_boxes(r, labels));
  // The same points at one height.
  for (std::size_t k = 0; k < 4; ++k) r.points[k].gflops = 150;
  check_boxes_apart_and_inside(prefill_label_boxes(r, roofline_labels(r)));
  // A run on this project's machine under OPENBLAS_CORETYPE=Haswell (numbers from its JSON),
  // where n = 1024's label, three rows out, covered n = 768's second row.
  r.peak_gflops = 80.4, r.bandwidth_gbps = 23.6, r.ridge = 80.4 / 23.6;
  const double haswell[] = {100, 110, 87.9, 127};
  for (std::size_t k = 0; k < 4; ++k) r.points[k].gflops = haswell[k], r.points[k].roof_gflops = 80.4;
  r.points[4].gflops = 9.59, r.points[4].roof_gflops = 23.6 * r.points[4].intensity;
  for (const auto& [len, kv_heads, gf] : {std::tuple<std::size_t, std::size_t, double>{1024, 8, 22.7},
                                          {1024, 1, 91.5}, {16384, 1, 96.3}}) {
    const RooflinePoint q = decode_point(len, 8, kv_heads, 64);
    r.points.push_back(measured(q, gf, std::min(80.4, 23.6 * q.intensity)));
  }
  check_boxes_apart_and_inside(prefill_label_boxes(r, roofline_labels(r)));
  check_markers_clear(r, prefill_label_boxes(r, roofline_labels(r)));
}

TEST_CASE("roofline labels: eleven prefill points, none hidden under another's label") {
  // `roofline --n 128,192,...,4096`, where the label of n = 256 had hidden half of n = 192's
  // marker: labels kept clear of each other, not of the points.
  RooflineResult r;
  r.peak_gflops = 202, r.bandwidth_gbps = 28.9, r.ridge = 202 / 28.9;
  const std::size_t ns[] = {128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096};
  const double gflops[] = {142, 162, 171, 179, 179, 187, 186, 189, 189, 191, 192};
  for (std::size_t k = 0; k < 11; ++k) r.points.push_back(measured(prefill_point(ns[k], 8, 64), gflops[k], 202));
  const RooflinePoint mha = decode_point(16384, 8, 8, 64);
  r.points.push_back(measured(mha, 13.9, 28.9 * mha.intensity));
  const std::vector<LabelBox> boxes = prefill_label_boxes(r, roofline_labels(r));
  check_boxes_apart_and_inside(boxes);
  check_markers_clear(r, boxes);
}

TEST_CASE("roofline labels: a bfloat16 point's label away from its float32 twin, and leaders to far labels") {
  // `roofline --bf16 --n 512,1024,2048` on the Emerald Rapids Xeon (AMX): n = 512 bf16 ran under
  // the roof, right over its float32 twin. Its label stood below, under the twin's, and the
  // crowded labels stood rows away from points nothing joined them to.
  RooflineResult r;
  r.peak_gflops = 157, r.bandwidth_gbps = 25.4, r.ridge = 157 / 25.4;
  const std::size_t ns[] = {512, 1024, 2048};
  const double f32[] = {77.6, 113, 133}, bf16[] = {110, 170, 270};
  for (std::size_t k = 0; k < 3; ++k) {
    r.points.push_back(measured(prefill_point(ns[k], 8, 64), f32[k], 157));
    RooflinePoint b = measured(prefill_point(ns[k], 8, 64), bf16[k], 157);
    b.dtype = "bf16";
    b.label += " bf16";
    r.points.push_back(b);
  }
  const RooflinePoint mha = decode_point(16384, 8, 8, 64);
  r.points.push_back(measured(mha, 10.3, 25.4 * mha.intensity));
  const std::vector<PlotLabel> labels = roofline_labels(r);
  REQUIRE(labels.size() == 7);
  for (std::size_t k = 0; k < 6; k += 2) {
    CAPTURE(k);
    CHECK(labels[k].y < r.points[k].gflops);          // float32: below, away from the roof
    CHECK(labels[k + 1].y > r.points[k + 1].gflops);  // bfloat16: above, away from its twin
  }
  const std::vector<LabelBox> boxes = prefill_label_boxes(r, labels);
  check_boxes_apart_and_inside(boxes);
  check_markers_clear(r, boxes);

  CHECK(roofline_leaders(r).empty());  // every label in its first row: nothing to join
  // Over the roof too (a slow sgemm), the pair's faster point's label above, the slower's
  // below: bfloat16 faster at n = 512, slower at 1024 (a CPU without bfloat16 arithmetic).
  for (RooflinePoint& p : r.points) p.roof_gflops = 50;
  r.points[0].gflops = 130, r.points[1].gflops = 200;
  r.points[2].gflops = 210, r.points[3].gflops = 150;
  const std::vector<PlotLabel> over = roofline_labels(r);
  CHECK(over[0].y < 130);
  CHECK(over[1].y > 200);
  CHECK(over[2].y > 210);
  CHECK(over[3].y < 150);

  // Four float32 points at one height, under the roof: some labels must stand rows out. Each
  // leader runs from just outside its point's marker to just short of its label, at the
  // point's intensity, and only a label a row or more out has one.
  r.points.clear();
  for (std::size_t n : {512, 1024, 2048, 4096}) r.points.push_back(measured(prefill_point(n, 8, 64), 120, 157));
  r.points.push_back(measured(mha, 10.3, 25.4 * mha.intensity));
  const std::vector<PlotLabel> rows = roofline_labels(r);
  const RooflineRange a = roofline_range(r);
  const double point = std::pow(a.y_hi / a.y_lo, 1.0 / kRooflinePlotHeight);  // one point of height
  const std::vector<RooflineLeader> leaders = roofline_leaders(r);
  CHECK(!leaders.empty());
  std::size_t joined = 0;
  for (std::size_t k = 0; k < 4; ++k) {
    CAPTURE(k);
    const RooflinePoint& p = r.points[k];
    const bool up = rows[k].y > p.gflops;
    const double gap = up ? rows[k].y / p.gflops : p.gflops / rows[k].y;  // 7 points: its first row
    const auto leader = std::find_if(leaders.begin(), leaders.end(), [&](const RooflineLeader& l) {
      return l.x == p.intensity && (l.y_point > p.gflops) == up;
    });
    if (gap < std::pow(point, 8)) {
      CHECK(leader == leaders.end());
      continue;
    }
    REQUIRE(leader != leaders.end());
    ++joined;
    CHECK(leader->y_point == doctest::Approx(up ? p.gflops * std::pow(point, 5) : p.gflops / std::pow(point, 5)));
    CHECK(leader->y_label == doctest::Approx(up ? rows[k].y / point : rows[k].y * point));
  }
  CHECK(joined == leaders.size());
}
