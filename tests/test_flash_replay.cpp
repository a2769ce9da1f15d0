// The flash kernel's observer hook and the replay built on it: the recorded tiles are the ones
// flash_tiles() lists, the recorded m, l, rescale and partial outputs obey Algorithm 1 against
// scores computed here independently, they end in the kernel's own output and lse, and the hook
// does not change a single bit of the result.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <vector>

#include "attn/engine/attention/flash.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/lessons/concepts/flash_replay.hpp"
#include "attn/render/views/flash_replay_pictures.hpp"
#include "picture_support.hpp"
#include "support.hpp"

using namespace attn;
using test::randn;

namespace {

struct Recorder : FlashObserver {
  std::vector<FlashTileStep> steps;
  void on_tile(const FlashTileStep& s) override { steps.push_back(s); }
};

FlashOptions teaching(bool causal, std::size_t bq, std::size_t bk) {
  FlashOptions o;
  o.causal = causal;
  o.block_q = bq;
  o.block_k = bk;
  o.threads = 1;
  o.precision = FlashPrecision::float64;
  o.isa = "generic";
  return o;
}

// Equal, or within 1e-12 relative (infinities only equal to themselves).
bool close_enough(double a, double b) { return a == b || std::fabs(a - b) <= 1e-12 * std::max({1.0, std::fabs(a), std::fabs(b)}); }

// s[i][j] = scale * q_i . k_j in float64, computed here, not by the kernel.
std::vector<std::vector<double>> scores_of(const Tensor3& q, const Tensor3& k) {
  const std::size_t L = q.shape(1), M = k.shape(1), d = q.shape(2);
  const double scale = 1 / std::sqrt(double(d));
  std::vector<std::vector<double>> s(L, std::vector<double>(M));
  for (std::size_t i = 0; i < L; ++i)
    for (std::size_t j = 0; j < M; ++j) {
      double acc = 0;
      for (std::size_t c = 0; c < d; ++c) acc += double(q(0, i, c)) * double(k(0, j, c));
      s[i][j] = acc * scale;
    }
  return s;
}

void check_against_algorithm_1(std::size_t L, std::size_t block, bool causal, std::uint64_t seed) {
  CAPTURE(L);
  CAPTURE(block);
  CAPTURE(causal);
  Rng rng(seed);
  const Tensor3 q = randn(rng, 1, L, 8), k = randn(rng, 1, L, 8), v = randn(rng, 1, L, 5);
  Recorder rec;
  FlashOptions o = teaching(causal, block, block);
  const FlashResult plain = flash_attention(q, k, v, nullptr, o);
  o.observer = &rec;
  const FlashResult seen = flash_attention(q, k, v, nullptr, o);
  // The hook changes nothing: the same bits out.
  CHECK(std::equal(plain.output.begin(), plain.output.end(), seen.output.begin()));
  CHECK(std::equal(plain.lse64.begin(), plain.lse64.end(), seen.lse64.begin()));

  // The same tiles, of the same kinds, as flash_tiles() says the loop walks.
  const std::vector<FlashTile> tiles = flash_tiles(L, L, o);
  REQUIRE(rec.steps.size() == tiles.size());
  std::vector<FlashTileStep> steps = rec.steps;
  std::sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return std::tie(a.i0, a.j0) < std::tie(b.i0, b.j0); });
  for (std::size_t t = 0; t < tiles.size(); ++t) {
    CHECK(steps[t].i0 == tiles[t].i0);
    CHECK(steps[t].j0 == tiles[t].j0);
    CHECK(steps[t].rows == tiles[t].rows);
    CHECK(steps[t].skipped == (tiles[t].kind == FlashTile::Kind::skipped));
    CHECK(steps[t].diagonal == (tiles[t].kind == FlashTile::Kind::diagonal));
  }

  // Each step, row by row, against the scores computed here.
  const auto s = scores_of(q, k);
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> m(L, -inf), l(L, 0.0);
  for (const FlashTileStep& st : steps) {
    REQUIRE(st.dv == 5);
    for (std::size_t r = 0; r < st.rows; ++r) {
      const std::size_t i = st.i0 + r;
      CHECK(close_enough(st.m_before[r], m[i]));
      CHECK(close_enough(st.l_before[r], l[i]));
      double tile_max = -inf;
      std::size_t seen_keys = 0;
      for (std::size_t c = 0; c < st.cols; ++c) {
        const std::size_t j = st.j0 + c;
        if (st.skipped || (causal && j > i)) continue;
        tile_max = std::max(tile_max, s[i][j]);
        ++seen_keys;
      }
      CHECK(st.visible[r] == seen_keys);
      const double m_new = std::max(m[i], tile_max);
      CHECK(close_enough(st.m_after[r], m_new));
      // exp(m_old - m_new): 0 when the row's first visible key arrives (exp(-inf), on l = 0 and
      // O = 0), 1 while no key has been seen (tile_math.hpp's -inf trap).
      const double rescale = m_new == -inf ? 1.0 : std::exp(m[i] - m_new);
      CHECK(close_enough(st.rescale[r], rescale));
      double add = 0;
      for (std::size_t c = 0; c < st.cols; ++c) {
        const std::size_t j = st.j0 + c;
        const bool counted = !st.skipped && !(causal && j > i);
        const double p = counted ? std::exp(s[i][j] - m_new) : 0.0;
        CHECK(close_enough(st.p[r * st.cols + c], p));
        add += p;
      }
      l[i] = l[i] * rescale + add;
      m[i] = m_new;
      CHECK(close_enough(st.l_after[r], l[i]));
    }
  }
  // The last partial output of each row, divided by l, is the kernel's output; m + log l its lse.
  for (std::size_t i = 0; i < L; ++i) {
    const FlashTileStep* last = nullptr;
    for (const FlashTileStep& st : steps)
      if (st.i0 <= i && i < st.i0 + st.rows) last = &st;
    REQUIRE(last);
    const std::size_t r = i - last->i0;
    CHECK(std::log(last->l_after[r]) + last->m_after[r] == doctest::Approx(seen.lse64(0, i)).epsilon(1e-12));
    for (std::size_t c = 0; c < 5; ++c)
      CHECK(float(last->output[r * 5 + c] / last->l_after[r]) == doctest::Approx(seen.output(0, i, c)).epsilon(1e-6));
  }
}

}  // namespace

TEST_CASE("flash observer hook: the recorded tiles obey Algorithm 1 and end in the kernel's own result") {
  check_against_algorithm_1(7, 2, true, 1);
  check_against_algorithm_1(7, 3, false, 2);
  check_against_algorithm_1(12, 4, true, 3);
  check_against_algorithm_1(1, 2, true, 4);
}

TEST_CASE("flash observer hook: one query with default tiles still goes through the observed tile loop") {
  Rng rng(5);
  const Tensor3 q = randn(rng, 1, 1, 4), k = randn(rng, 1, 300, 4), v = randn(rng, 1, 300, 4);
  Recorder rec;
  FlashOptions o;
  o.precision = FlashPrecision::float64;
  o.observer = &rec;
  flash_attention(q, k, v, nullptr, o);
  CHECK(!rec.steps.empty());
}

TEST_CASE("flash replay: steps in reading order, the naive check, and JSON for the report") {
  Rng rng(6);
  const Tensor3 q = randn(rng, 1, 5, 6), k = randn(rng, 1, 5, 6), v = randn(rng, 1, 5, 3);
  const FlashReplay r = replay_flash(q, k, v, {"a", "b", "c", "d", "e"}, {2, 2, true});
  // 3 x 3 tiles, causal: the 3 above the diagonal are skipped, 6 read.
  CHECK(r.steps.size() == 9);
  CHECK(r.skipped() == 3);
  CHECK(r.read() == 6);
  for (std::size_t t = 1; t < r.steps.size(); ++t)
    CHECK(std::tie(r.steps[t - 1].i0, r.steps[t - 1].j0) < std::tie(r.steps[t].i0, r.steps[t].j0));
  CHECK(r.max_diff_output < 1e-6);
  CHECK(r.max_diff_lse < 1e-6);
  const Json j = flash_replay_json(r);
  CHECK(j["steps"].size() == 9);
  CHECK(j["steps"][0]["m_before"][0].is_null());  // -inf: no key seen yet
  CHECK(j["steps"][0]["partial_output"][0].size() == 3);
  CHECK(j["tiles_skipped"] == 3);
  CHECK(teaching_block(4) == 2);
  CHECK(teaching_block(48) == 6);
  CHECK(flash_replay_frame(r, 0).subtitle.find("tiles of 2 queries × 2 keys") != std::string::npos);
  // One token: the tile is clamped to the 1 x 1 matrix, as flash_tiles.png says (not "1 x 2").
  const Tensor3 q1 = randn(rng, 1, 1, 6), k1 = randn(rng, 1, 1, 6), v1 = randn(rng, 1, 1, 3);
  const FlashReplay one = replay_flash(q1, k1, v1, {"a"}, {2, 2, true});
  CHECK(flash_replay_frame(one, 0).subtitle.find("tiles of 1 query × 1 key") != std::string::npos);
  // ... and its title names query 0 and key 0 (not "queries 0 × keys 0"); its legend lists only
  // what the frame shows: no earlier step, nothing left to reach.
  const Figure first = flash_replay_frame(one, 0);
  CHECK(first.title == "FlashAttention replay, step 1 of 1: query 0 × key 0");
  CHECK(test::draws_text(first, "this step's tile"));
  CHECK_FALSE(test::draws_text(first, "earlier step"));
  CHECK_FALSE(test::draws_text(first, "not reached yet"));
  CHECK(flash_replay_frame(r, 0).title == "FlashAttention replay, step 1 of 9: queries 0–1 × keys 0–1");
  // The last frame's lse column: each value with 4 significant digits, trailing zeros kept, so a
  // column reads 3.000, 2.910, 3.105 and not 3, 2.91, 3.105.
  const std::vector<std::string> texts = test::drawn_texts(flash_replay_frame(r, r.steps.size()));
  for (std::size_t i = 0; i < 5; ++i) {
    CAPTURE(i);
    const bool found = std::any_of(texts.begin(), texts.end(), [&](const std::string& t) {
      if (t.empty() || t.find_first_not_of("0123456789.−-") != std::string::npos) return false;
      const std::size_t digits = std::size_t(std::count_if(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }));
      const std::size_t lead = t.find_first_not_of("0.−-") == std::string::npos ? 0 : t.find_first_not_of("0.−-");
      const std::size_t leading_zeros = std::size_t(std::count(t.begin(), t.begin() + long(lead), '0'));
      std::string ascii = t;
      if (ascii.rfind("−", 0) == 0) ascii = "-" + ascii.substr(std::string("−").size());
      return digits - leading_zeros == 4 && std::fabs(std::stod(ascii) - r.lse[i]) <= 5e-4 * std::max(1.0, std::fabs(r.lse[i]));
    });
    CHECK(found);
  }
}

TEST_CASE("flash --replay: numbered frames, replay.json and report.html, without --replay only the trace") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("attn-flash-replay-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const test::CliResult r = test::run_cli("flash \"The cat sat on\" --replay --out '" + dir.string() + "'");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("step 1: queries 0-1 x keys 0-1: on the diagonal") != std::string::npos);
  CHECK(r.out.find("skipped by causality") != std::string::npos);
  const Json replay = read_json((dir / "replay.json").string());
  const std::size_t frames = replay["steps"].size() + 1;
  CHECK(frames == 5);  // 2 x 2 tiles of 2 x 2, one skipped, and the end
  for (std::size_t k = 1; k <= frames; ++k) CHECK(fs::exists(dir / ("frame_00" + std::to_string(k) + ".png")));
  CHECK(!fs::exists(dir / ("frame_00" + std::to_string(frames + 1) + ".png")));
  CHECK(fs::exists(dir / "report.html"));
  fs::remove_all(dir);

  const test::CliResult trace = test::run_cli("flash \"The cat sat on\"");
  CHECK(trace.code == 0);
  CHECK(trace.out.find("End: O = O / l. max |flash - naive|") != std::string::npos);
}

TEST_CASE("flash replay frames: a skipped tile is not drawn like a masked score, and a legend says which is which") {
  Rng rng(6);
  const Tensor3 q = randn(rng, 1, 6, 4), k = randn(rng, 1, 6, 4), v = randn(rng, 1, 6, 3);
  const FlashReplay r = replay_flash(q, k, v, {"a", "b", "c", "d", "e", "f"}, {2, 2, true});
  REQUIRE(r.skipped() == 3);  // 3 x 3 tiles of 2 x 2, causal: the three above the diagonal
  const Figure f = flash_replay_frame(r, r.steps.size());  // the end: every tile drawn
  const test::DecodedPng img = test::DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  const CellGrid& g = f.grids[0];
  using test::Rgb8;
  using test::near;
  using test::draws_text;
  // Query 0, key 5 lies in a skipped tile: one flat grey, never read.
  const Rgb8 skipped = img.cell_mean(g, 0, 5, 2);
  CHECK(near(skipped, Rgb8{0x9a, 0x9a, 0x9a}, 3));
  CHECK(near(img.cell_corner(g, 0, 5, 2), skipped, 3));
  // Query 0, key 1 lies in a diagonal tile that computed it and set it to -inf: hatched, and
  // hatching is not that grey.
  const Rgb8 masked = img.cell_mean(g, 0, 1, 2);
  CAPTURE(skipped);
  CAPTURE(masked);
  CHECK_FALSE(near(masked, skipped, 8));
  CHECK(draws_text(f, "skipped tile: every key after every query, never read"));
  CHECK(draws_text(f, "masked: a key after its query"));
  CHECK(f.subtitle.find("labelled") == std::string::npos);  // 6 tokens: every label drawn

  // 48 tokens: the labels are thinned, and the subtitle says so.
  std::vector<std::string> tokens;
  for (int i = 0; i < 48; ++i) tokens.push_back("w" + std::to_string(i));
  const Tensor3 q48 = randn(rng, 1, 48, 4), k48 = randn(rng, 1, 48, 4), v48 = randn(rng, 1, 48, 3);
  const FlashReplay long_replay = replay_flash(q48, k48, v48, tokens, {teaching_block(48), teaching_block(48), true});
  const Figure f48 = flash_replay_frame(long_replay, 0);
  CHECK(f48.subtitle.find("token labelled (0, ") != std::string::npos);
  CHECK(f48.subtitle.find("of 48") != std::string::npos);
}

TEST_CASE("flash: one token says 1 tile read, query 0 x key 0") {
  const test::CliResult r = test::run_cli("flash cat");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("1 tile read, 0 skipped") != std::string::npos);
  CHECK(r.out.find("causal, tiles of 1 query × 1 key, float64") != std::string::npos);  // not "1 x 2 tiles"
  CHECK(r.out.find("step 1: query 0 x key 0:") != std::string::npos);
  CHECK(r.out.find("tiles read") == std::string::npos);
  const test::CliResult six = test::run_cli("flash 'The cat sat on the mat'");
  REQUIRE(six.code == 0);
  CHECK(six.out.find("6 tiles read, 3 skipped") != std::string::npos);
  CHECK(six.out.find("step 1: queries 0-1 x keys 0-1:") != std::string::npos);
}
