// explain and pitfalls draw into --plots like the other experiments: PNG/SVG per
// --image-format, byte-identical reruns, stdout unchanged, masked cells never read as 0.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <tuple>

#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/mask.hpp"
#include "attn/lessons/models/generate.hpp"
#include "attn/render/views/explain_pictures.hpp"
#include "attn/render/draw/heatmap.hpp"
#include "attn/render/views/kv_cache_picture.hpp"
#include "attn/render/draw/text_table.hpp"
#include "picture_support.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;
namespace fs = std::filesystem;

TEST_CASE("cli explain/pitfalls pictures: files exist, decode, and reruns are byte-identical") {
  TempDir dir;
  const std::string cwd = dir.path.string();
  for (const char* run : {"a", "b"}) {
    const std::string out = std::string("p-") + run;
    const CliResult e = run_cli("explain --plots " + out, "", cwd);
    CAPTURE(e.err);
    REQUIRE(e.code == 0);
    CHECK(e.out.find("Wrote " + out + "/explain-3-masked.png") != std::string::npos);
    const CliResult p = run_cli("pitfalls --plots " + out, "", cwd);
    CAPTURE(p.err);
    REQUIRE(p.code == 0);
    CHECK(p.out.find("Wrote " + out + "/pitfall-causal-alignment.png") != std::string::npos);
    // The six without a matrix are named, not skipped in silence.
    CHECK(p.out.find("No picture for mask-value-float16, paper-dk, softmax-cost, mha-bias, flash-memory, mb-mib: ") !=
          std::string::npos);
  }
  const CliResult one = run_cli("pitfalls paper-dk --plots p-one", "", cwd);
  REQUIRE(one.code == 0);
  CHECK(one.out.find("No picture for paper-dk: its lesson is numbers, not a matrix") != std::string::npos);
  std::filesystem::remove_all(dir.path / "p-one");
  const std::vector<std::string> names = {"explain-1-scores", "explain-2-scaled", "explain-3-masked",
                                          "explain-4-shifted", "explain-5-weights", "explain-6-output",
                                          "pitfall-mask-polarity",
                                          "pitfall-causal-alignment", "pitfall-fully-masked-row"};
  CHECK(files_in(dir.path / "p-a") == 14);  // 6 steps + the 8 pitfalls with matrices, no temporary files left
  CHECK(files_in(dir.path / "p-b") == 14);
  for (const std::string& name : names) {
    CAPTURE(name);
    const DecodedPng img = DecodedPng::from_file(dir / ("p-a/" + name + ".png"));
    REQUIRE(img.ok());
    CHECK(img.width() > 400);
    CHECK(read_text(dir / ("p-a/" + name + ".png")) == read_text(dir / ("p-b/" + name + ".png")));
  }
}

TEST_CASE("explain pictures: a masked cell is drawn unlike an unmasked cell of weight 0") {
  ExplainResult r = explain_attention({});
  REQUIRE(!r.allowed(0, 1));  // causal: query 0 may not see key 1
  // Make an allowed cell carry exactly weight 0, the colour a masked cell must not share.
  r.weights(1, 0) = 0;
  const Figure f = explain_step_figure(r, 5);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  const Rgb8 masked = img.cell_mean(f.grids[0], 0, 1, 2);
  const Rgb8 zero = img.cell_mean(f.grids[0], 1, 0, 2);
  CAPTURE(masked);
  CAPTURE(zero);
  CHECK(!near(masked, zero, 8));
  // A corner of the cell, away from its "0.000", is the colormap's own 0.
  const CellGrid& g = f.grids[0];
  CHECK(near(img.pixel(g.cell_x(0) + 4, g.cell_y(1) + 4, 2), to_rgb8(Colormap::by_name("Blues").at(0)), 3));
  CHECK_THROWS_AS(explain_step_figure(r, 7), InputError);
  CHECK_THROWS_AS(explain_jacobian_figure(r), InputError);  // not computed
}

TEST_CASE("explain pictures: steps 1 to 4 share one colour scale, so scaling shows and a score keeps its colour") {
  ExplainConfig c;
  c.d_model = 16;  // scale 1/4: step 2 is plainly paler
  const ExplainResult r = explain_attention(c);
  // The cell of the largest |score|, allowed by the causal mask.
  std::size_t bi = 0, bj = 0;
  for (std::size_t i = 0; i < r.tokens.size(); ++i)
    for (std::size_t j = 0; j <= i; ++j)
      if (std::fabs(r.scores(i, j)) > std::fabs(r.scores(bi, bj))) bi = i, bj = j;
  auto colour = [&](int step, std::size_t i, std::size_t j) {
    const Figure f = explain_step_figure(r, step);
    const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
    REQUIRE(img.ok());
    const CellGrid& g = f.grids[0];
    return img.pixel(g.cell_x(j) + 3, g.cell_y(i) + 3, 2);  // a corner, away from the printed value
  };
  const Rgb8 white{255, 255, 255};
  const Rgb8 s1 = colour(1, bi, bj), s2 = colour(2, bi, bj), s3 = colour(3, bi, bj);
  CAPTURE(s1);
  CAPTURE(s2);
  auto distance = [](Rgb8 a, Rgb8 b) { return std::abs(a.r - b.r) + std::abs(a.g - b.g) + std::abs(a.b - b.b); };
  CHECK(distance(s2, white) + 60 < distance(s1, white));  // a quarter of the score, a much paler cell
  CHECK(near(s2, s3, 2));                                 // the mask leaves an allowed score alone
}

TEST_CASE("explain pictures: step 6 draws V beside the output, --jacobian draws the Jacobian") {
  ExplainConfig c;
  c.jacobian = true;
  const ExplainResult r = explain_attention(c);
  const Figure f = explain_step_figure(r, 6);
  REQUIRE(f.grids.size() == 2);
  CHECK(f.grids[0].rows == r.tokens.size());
  CHECK(f.grids[0].cols == r.config.d_model);
  CHECK(f.grids[1].x > f.grids[0].x + f.grids[0].cell_w * double(r.config.d_model));
  const Figure jf = explain_jacobian_figure(r);
  CHECK(jf.grids[0].rows == r.tokens.size());
  CHECK(DecodedPng::from_bytes(render_png(jf, 1)).ok());
  // The default row is the last: under the causal mask it sees every key, so nothing is masked
  // -- said as such, not as "Masked keys: all 0".
  REQUIRE(r.tokens.size() == 4);  // 我 / 喜欢 / 深度 / 学习
  CHECK(jf.subtitle.find("No key of row 3 is masked.") != std::string::npos);
  CHECK(jf.subtitle.find("all 0.") == std::string::npos);
  // Row 1 may not see keys 2 and 3: named, with their tokens.
  c.row = 1;
  const Figure row1 = explain_jacobian_figure(explain_attention(c));
  CHECK(row1.subtitle.find("Masked keys 2 '深度', 3 '学习': p = 0 there, so their rows and columns are all 0.") !=
        std::string::npos);
  c.row = 2;
  CHECK(explain_jacobian_figure(explain_attention(c)).subtitle.find("Masked key 3 '学习': p = 0 there, so its row and "
                                                                     "column are all 0.") != std::string::npos);
}

TEST_CASE("explain pictures: step 6 at 48 tokens is as tall as step 5, with shorter rows and every value written") {
  ExplainConfig c;
  c.max_tokens = 64;
  c.sentence.clear();
  for (int i = 0; i < 48; ++i) c.sentence += "w" + std::to_string(i % 17) + " ";
  const ExplainResult r = explain_attention(c);
  REQUIRE(r.tokens.size() == 48);
  const Figure six = explain_step_figure(r, 6), five = explain_step_figure(r, 5);
  CHECK(six.height < 1.2 * five.height);  // it was 4.3 times as tall: square cells 58 points high
  REQUIRE(six.grids.size() == 2);
  CHECK(six.grids[0].cell_h < six.grids[0].cell_w / 3);
  CHECK(six.grids[0].cell_h * 48 <= 560.5);
  // Every value of V and of the output is still written in its cell.
  std::size_t values = 0;
  for (const std::string& t : drawn_texts(six)) values += t.size() >= 5 && t.find('.') != std::string::npos && t.find(' ') == std::string::npos;
  CHECK(values >= 2 * 48 * r.config.d_model);
  CHECK(DecodedPng::from_bytes(render_png(six, 1)).ok());
}

TEST_CASE("multi-head by hand: O_h and O get their own colour scale and y its own, so their structure shows") {
  ExplainConfig c;
  c.sentence = "The cat sat on the mat";
  c.heads = 2;
  const ExplainResult r = explain_attention(c);
  const MultiHeadByHand& mh = *r.multihead;
  // The largest |value| of some matrices, and where it lies in the last of them.
  auto largest = [](std::initializer_list<const Tensor2*> ms, std::size_t* at = nullptr) {
    double top = 0;
    for (const Tensor2* m : ms) {
      for (std::size_t i = 0; i < m->size(); ++i) {
        if (std::fabs(m->data()[i]) > top) {
          top = std::fabs(m->data()[i]);
          if (at) *at = i;
        }
      }
    }
    return top;
  };
  const double inputs = largest({&mh.x, &mh.q, &mh.k, &mh.v});
  std::size_t at_y = 0, at_o = 0;
  const double y_max = largest({&mh.output}, &at_y), o_max = largest({&mh.concat}, &at_o);
  CAPTURE(inputs);
  CAPTURE(o_max);
  CAPTURE(y_max);
  // Averaging V's rows shrinks the outputs: on one shared scale they would be pale.
  REQUIRE(inputs > 1.5 * std::max(y_max, o_max));
  const Figure f = multihead_figure(r);
  REQUIRE(f.grids.size() == 10);  // x, Q, K, V, (A_h, O_h) x 2, O (8), y (9)
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  const Colormap rdbu = Colormap::by_name("RdBu_r");
  // Each largest |value| is drawn at its own scale's end: 0.5 + 0.5 v / max|v|, 0 or 1.
  for (const auto& panel : {std::tuple{&mh.concat, 8, at_o, o_max}, std::tuple{&mh.output, 9, at_y, y_max}}) {
    // Plain locals, not a structured binding: clang 14's CAPTURE cannot capture one.
    const auto* m = std::get<0>(panel);
    const int grid = std::get<1>(panel);
    const std::size_t at = std::get<2>(panel);
    const double top = std::get<3>(panel);
    const std::size_t D = m->shape(1), i = at / D, j = at % D;
    const double v = (*m)(i, j);
    CAPTURE(grid);
    const Rgb8 got = img.cell_mean(f.grids[std::size_t(grid)], i, j, 2);
    CAPTURE(got);
    CHECK(near(got, to_rgb8(rdbu.at(0.5 + 0.5 * v / top)), 6));
    // Not the washed-out colour that one scale shared with x, Q, K, V gives it.
    CHECK_FALSE(near(got, to_rgb8(rdbu.at(0.5 + 0.5 * v / inputs)), 6));
  }
  CHECK(draws_text(f, "value: O_h, O (own scale)"));
  CHECK(draws_text(f, "value: y (own scale)"));
  CHECK(f.subtitle.find("own colour scale") != std::string::npos);
}

TEST_CASE("multi-head by hand at 48 causal tokens: the heads' weights are on the log scale, so late rows show") {
  ExplainConfig c;
  c.max_tokens = 64;
  c.heads = 2;
  c.sentence.clear();
  for (int i = 0; i < 48; ++i) c.sentence += "w" + std::to_string(i % 17) + " ";
  const ExplainResult r = explain_attention(c);
  REQUIRE(r.tokens.size() == 48);
  const MultiHeadByHand& mh = *r.multihead;
  const Figure f = multihead_figure(r);
  REQUIRE(f.grids.size() == 10);  // x, Q, K, V, (A_h, O_h) x 2, O, y
  CHECK(f.subtitle.find(kLongCausalLogNote) != std::string::npos);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  // Head 0's last row: 48 weights near 1/48, a colour on the log scale 0.01..1, which on a
  // linear 0..1 scale would be all but white.
  const std::optional<ColorScale> log = long_causal_log_scale(mh.weights[0], causal_allowed(48, 48));
  REQUIRE(log);
  const Colormap blues = Colormap::by_name("Blues");
  for (std::size_t j : {0, 20, 47}) {
    CAPTURE(j);
    const double w = mh.weights[0](47, j);
    const Rgb8 got = img.cell_mean(f.grids[4], 47, j, 2);
    CAPTURE(got);
    CHECK(near(got, to_rgb8(blues.at(log->position(w))), 8));
    CHECK_FALSE(near(got, to_rgb8(blues.at(w)), 8));
  }
  // Q's head blocks are two cells of 3 points wide: their cells show values, not head outlines
  // (those become bars under the matrix).
  double inputs = 0;
  for (const Tensor2* m : {&mh.x, &mh.q, &mh.k, &mh.v})
    for (float x : *m) inputs = std::max(inputs, double(std::fabs(x)));
  const Colormap rdbu = Colormap::by_name("RdBu_r");
  for (std::size_t j = 0; j < mh.q.shape(1); ++j) {
    CAPTURE(j);
    const Rgb8 got = img.cell_mean(f.grids[1], 24, j, 2);
    CAPTURE(got);
    CHECK(near(got, to_rgb8(rdbu.at(0.5 + 0.5 * mh.q(24, j) / inputs)), 12));
  }
  // A short sentence keeps the linear scale.
  c.sentence = "The cat sat";
  CHECK(multihead_figure(explain_attention(c)).subtitle.find(kLongCausalLogNote) == std::string::npos);
}

TEST_CASE("kv cache picture: a bfloat16 cache's difference from recomputation is named as its rounding") {
  GenerateConfig g;
  g.sentence = "the cat sat on the mat";
  g.kv_dtype = KvDtype::bfloat16;
  const GenerateResult r = run_generate(g);
  REQUIRE(r.max_diff > 0);
  const Figure bf = kv_cache_figure(r);
  CHECK(bf.subtitle.find("rounded to bfloat16: that rounding, not the caching, is the difference") != std::string::npos);
  g.kv_dtype = KvDtype::float64;
  CHECK(kv_cache_figure(run_generate(g)).subtitle.find("bfloat16") == std::string::npos);
}

TEST_CASE("pitfall pictures: wrong | right panels, two per table") {
  const Pitfall p = pitfall_causal_alignment();
  REQUIRE(pitfall_has_figure(p));
  const Figure f = pitfall_figure(p);
  REQUIRE(f.grids.size() == 2 * p.tables.size());
  CHECK(f.grids[0].rows == 2);
  CHECK(f.grids[1].cols == 4);
  CHECK(f.grids[1].x > f.grids[0].x + f.grids[0].cell_w * 4);  // right sits beside wrong
  Pitfall none = p;
  none.tables.clear();
  CHECK(!pitfall_has_figure(none));
}

TEST_CASE("cli explain/pitfalls pictures: --format json stdout unchanged, bad flags exit 2") {
  TempDir dir;
  const std::string cwd = dir.path.string();
  for (const std::string args : {"explain --format json", "pitfalls fully-masked-row --format json"}) {
    CAPTURE(args);
    const CliResult plain = run_cli(args, "", cwd);
    REQUIRE(plain.code == 0);
    CHECK(files_in(dir.path) == (args[0] == 'e' ? 0 : 1));  // no --plots: nothing drawn (1 = j/ of explain)
    const CliResult drawn = run_cli(args + " --plots j --image-format both", "", cwd);
    CAPTURE(drawn.err);
    REQUIRE(drawn.code == 0);
    CHECK(drawn.out == plain.out);
    CHECK(drawn.err.find("Wrote j/") != std::string::npos);
  }
  CHECK(well_formed_xml(read_text(dir / "j/explain-1-scores.svg")));
  CHECK(DecodedPng::from_file(dir / "j/pitfall-fully-masked-row.png").ok());
  check_input_error(run_cli("explain --plots q --image-format gif", "", cwd), "gif");
  check_input_error(run_cli("pitfalls --plots q --image-format jpeg", "", cwd), "jpeg");
  CHECK(!fs::exists(dir.path / "q"));
}

TEST_CASE("pitfall pictures: a key a way masks is hatched, not a 0.000 cell, and the legend says so") {
  const Pitfall p = pitfall_mask_polarity();
  const Figure f = pitfall_figure(p);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  const CellGrid &wrong = f.grids[0], &right = f.grids[1];
  // Hatching is grey (no channel stands out); a weight of 0 on Blues is bluish white.
  auto grey = [](const Rgb8& c) { return std::abs(c.r - c.b) <= 3 && c.r < 240; };
  CHECK(grey(img.cell_mean(wrong, 0, 0, 2)));   // k0 blocked by the flipped mask
  CHECK(grey(img.cell_mean(right, 0, 3, 2)));   // pad blocked by the right mask
  CHECK(!grey(img.cell_mean(right, 0, 0, 2)));  // k0 attended: a Blues colour
  // The rope pitfall's length-ratio row: white where the ratio is 1, coloured where it is not.
  const Pitfall rope = pitfall_rope_half_width();
  const Figure rf = pitfall_figure(rope);
  const DecodedPng rimg = DecodedPng::from_bytes(render_png(rf, 2));
  const CellGrid &ratio_wrong = rf.grids[2], &ratio_right = rf.grids[3];
  std::size_t far = 0;  // the wrong way's position furthest from 1
  for (std::size_t m = 0; m < rope.tables[1].wrong.shape(1); ++m)
    if (std::fabs(rope.tables[1].wrong(0, m) - 1) > std::fabs(rope.tables[1].wrong(0, far) - 1)) far = m;
  const Rgb8 off = rimg.cell_corner(ratio_wrong, 0, far, 2), kept = rimg.cell_corner(ratio_right, 0, far, 2);
  CAPTURE(off);
  CAPTURE(kept);
  CHECK(kept.r > 240);
  CHECK(kept.g > 240);
  CHECK(kept.b > 240);                                         // 1.000: the centre of the scale
  CHECK(std::abs(off.r - off.b) > 60);                          // 5 % off 1 is clearly red or blue
}

TEST_CASE("long sentences: generate's and explain's pictures quote the sentence cut to 60 columns, as demo does") {
  std::string sentence;
  for (int i = 0; i < 48; ++i) sentence += (i ? " word" : "word") + std::to_string(i);
  const std::string cut = title_quote(sentence);
  CHECK(display_width(cut) <= 62);  // 60 columns and the quotes
  CHECK(cut.find("…") != std::string::npos);
  GenerateConfig g;
  g.sentence = sentence;
  const Figure kv = kv_cache_figure(run_generate(g));
  CHECK(kv.title == "KV-cache decoding of " + cut + " with no positions, one row per token");
  ExplainConfig e;
  e.sentence = sentence;
  e.max_tokens = 64;
  e.heads = 2;
  const ExplainResult r = explain_attention(e);
  CHECK(explain_step_figure(r, 1).subtitle.rfind(cut + ": 48 tokens", 0) == 0);
  const Figure mh = multihead_figure(r);
  CHECK(mh.title.size() >= cut.size());
  CHECK(mh.title.compare(mh.title.size() - cut.size(), cut.size(), cut) == 0);
}

// Issue 34: step 4's subtitle broke inside "exp(s − c) / Σ exp(s − c)" (at 3 tokens, before
// "exp(s) / Σ exp(s)"). At 1 to 16 tokens the identity stays on one line of the drawn subtitle.
TEST_CASE("explain step 4: the identity exp(s − c) / Σ exp(s − c) = exp(s) / Σ exp(s) is never broken") {
  const std::string formula = "exp(s − c) / Σ exp(s − c) = exp(s) / Σ exp(s).";
  const std::vector<std::string> words = {"我", "爱", "你", "The", "cat", "sat", "on", "the", "mat", "and", "it",
                                          "was", "a", "warm", "day", "today"};
  for (std::size_t n = 1; n <= words.size(); ++n) {
    ExplainConfig e;
    e.sentence.clear();
    for (std::size_t i = 0; i < n; ++i) e.sentence += (i ? " " : "") + words[i];
    CAPTURE(e.sentence);
    const Figure f = explain_step_figure(explain_attention(e), 4);
    bool found = false, whole = false;
    for (const DrawnText& d : drawn_boxes(f)) {
      if (d.text.find("Row maxima") == std::string::npos) continue;
      found = true;
      for (const std::string& line : d.lines) whole = whole || line.find(formula) != std::string::npos;
      if (!whole) for (const std::string& line : d.lines) MESSAGE(line);
    }
    CHECK(found);
    CHECK(whole);
  }
}

TEST_CASE("kv_cache.png names the positional scheme it ran with in its title") {
  GenerateConfig g;
  g.sentence = "The cat sat on";
  auto title = [&] { return kv_cache_figure(run_generate(g)).title; };
  CHECK(title() == "KV-cache decoding of \"The cat sat on\" with no positions, one row per token");
  g.alibi = true;
  CHECK(title().find("\" with ALiBi, one row") != std::string::npos);
  g.alibi = false;
  g.rope = RopeStyle::Half;
  CHECK(title().find("\" with RoPE (half), one row") != std::string::npos);
  g.rope = RopeStyle::Interleaved;
  g.sinusoidal = true;
  CHECK(title().find("\" with sinusoidal positions + RoPE (interleaved), one row") != std::string::npos);
}
