// attend's variants as descriptors (engine/attention/variant.hpp), on cases worked out by hand; the
// NumPy reference (scripts/check_variants.py) checks random combinations on every backend.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include <xtensor/xmath.hpp>

#include "attn/engine/attention/attention.hpp"
#include "attn/engine/attention/attention_methods.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/engine/attention/variant.hpp"
#include "support.hpp"

using namespace attn;

namespace {

// The visible keys of query i, as a string of 0/1.
std::string row(const AttentionMask& m, std::size_t i, std::size_t Lq, std::size_t Lk) {
  std::string s;
  for (std::size_t j = 0; j < Lk; ++j) s += m.visible(i, j, Lq, Lk) ? '1' : '0';
  return s;
}

// Document ids 0, 0, ..., 1, 1, ...: L positions in runs of `run`.
std::vector<std::int64_t> ids_in_runs(std::size_t L, std::size_t run) {
  std::vector<std::int64_t> ids;
  for (std::size_t i = 0; i < L; ++i) ids.push_back(std::int64_t(i / run));
  return ids;
}

}  // namespace

TEST_CASE("variant masks: window, sinks, segments and prefix, alone and together") {
  AttentionMask window;
  window.window = variants::SlidingWindow{1, 0};  // the key before and itself
  CHECK(row(window, 0, 4, 4) == "1000");
  CHECK(row(window, 2, 4, 4) == "0110");
  // Decode shape: one query at position Lk - 1 = 4.
  CHECK(row(window, 0, 1, 5) == "00011");
  AttentionMask both = window;
  both.window = variants::SlidingWindow{0, 1};  // itself and the key after: not causal by itself
  CHECK(row(both, 1, 4, 4) == "0110");
  AttentionMask sinks = window;
  sinks.window->sinks = 1;  // key 0 whatever the window says
  CHECK(row(sinks, 3, 4, 4) == "1011");
  AttentionMask docs;
  docs.segments = variants::Documents{{0, 0, 1, 1}, {0, 0, 1, 1}};
  CHECK(row(docs, 1, 4, 4) == "1100");
  CHECK(row(docs, 2, 4, 4) == "0011");
  AttentionMask prefix;
  prefix.prefix = variants::PrefixLM{2};  // keys 0 and 1 for everyone, the rest causally
  CHECK(row(prefix, 0, 4, 4) == "1100");
  CHECK(row(prefix, 2, 4, 4) == "1110");
  CHECK(row(prefix, 3, 4, 4) == "1111");
  AttentionMask all = sinks;
  all.segments = variants::Documents{{0, 0, 1, 1}, {0, 0, 1, 1}};
  CHECK(row(all, 3, 4, 4) == "0011");  // the sink is in another document
  CHECK(all.allowed(4, 4)(3, 2));
  CHECK_FALSE(AttentionMask{}.any());
  CHECK(all.any());

  AttentionMask bad = docs;
  CHECK_THROWS_WITH_AS(bad.check(3, 4), doctest::Contains("segments.q: expected 3 ids"), InputError);
  CHECK_THROWS_WITH_AS(prefix.check(1, 4), doctest::Contains("prefix-LM is self-attention"), InputError);
}

TEST_CASE("variant masks: chunked attention (Llama 4), by hand") {
  // Chunks of 2 over 5 positions: {0, 1}, {2, 3}, {4}; a query sees its own chunk only.
  AttentionMask chunked;
  chunked.chunk = variants::Chunked{2};
  CHECK(row(chunked, 0, 5, 5) == "11000");
  CHECK(row(chunked, 1, 5, 5) == "11000");
  CHECK(row(chunked, 2, 5, 5) == "00110");
  CHECK(row(chunked, 4, 5, 5) == "00001");  // the first query of a chunk sees nothing before it
  CHECK(row(chunked, 0, 1, 4) == "0011");   // decode: the query at position 3
  // More queries than keys: query 0 sits at position -1, in chunk -1 (floor), and sees nothing.
  CHECK(row(chunked, 0, 3, 2) == "00");
  CHECK(row(chunked, 1, 3, 2) == "11");
  // With a window of 2 (the key before and itself), the chunk still cuts at 2: query 2 loses key 1.
  AttentionMask both = chunked;
  both.window = variants::SlidingWindow{1, 0};
  CHECK(row(both, 2, 5, 5) == "00100");
  CHECK(row(both, 3, 5, 5) == "00110");
  // Tiles of 2 x 2 on chunks of 3: positions 0-1 x keys 0-1 share chunk 0; 2-3 x 0-1 straddle
  // chunks 0 and 1; 6-7 x 0-1 share none.
  AttentionMask three;
  three.chunk = variants::Chunked{3};
  CHECK(int(three.cover(0, 2, 0, 2, 10, 10)) == int(tile::MaskCover::all));
  CHECK(int(three.cover(2, 2, 0, 2, 10, 10)) == int(tile::MaskCover::some));
  CHECK(int(three.cover(6, 2, 0, 2, 10, 10)) == int(tile::MaskCover::none));
}

TEST_CASE("score modifiers: soft-cap, then ALiBi's -m (p - j)") {
  ScoreMod cap;
  cap.softcap = variants::SoftCap{2.0};
  CHECK(cap.apply(2.0, 0, 3, 1) == doctest::Approx(2.0 * std::tanh(1.0)));  // 1.5232
  CHECK(cap.apply(100.0, 0, 3, 1) == doctest::Approx(2.0).epsilon(1e-9));   // capped
  CHECK(cap.derivative(2.0, 0, 3, 1) == doctest::Approx(1 - std::tanh(1.0) * std::tanh(1.0)));
  ScoreMod alibi;
  alibi.alibi = variants::AlibiBias{{0.5, 0.25}};
  CHECK(alibi.apply(1.0, 0, 3, 1) == doctest::Approx(0.0));    // 1 - 0.5 * 2
  CHECK(alibi.apply(1.0, 1, 3, 1) == doctest::Approx(0.5));    // 1 - 0.25 * 2
  CHECK(alibi.apply(1.0, 0, 1, 3) == doctest::Approx(2.0));    // a key after the query: + m (j - p)
  ScoreMod both = alibi;
  both.softcap = variants::SoftCap{2.0};
  CHECK(both.apply(2.0, 0, 3, 1) == doctest::Approx(2.0 * std::tanh(1.0) - 1.0));  // cap first
  CHECK_THROWS_AS(alibi.check(3), InputError);
  ScoreMod zero;
  zero.softcap = variants::SoftCap{0.0};
  CHECK_THROWS_AS(zero.check(1), InputError);
}

TEST_CASE("variants through attention(): a soft-capped pair by hand, the same on every CPU backend") {
  // q = [1], k = [4, 0] with d = 1 and scale 1: scores 4 and 0; capped at c = 2 they are
  // 2 tanh(2) = 1.92806 and 0, so the weights are e^1.92806 / (e^1.92806 + 1) = 0.87298 and
  // 0.12702.
  const Tensor3 q{{{1.0f}}}, k{{{4.0f}, {0.0f}}}, v{{{1.0f}, {0.0f}}};
  SdpaOptions o;
  o.scale = 1.0;
  o.score_mod.softcap = variants::SoftCap{2.0};
  for (Backend b : {Backend::naive, Backend::flash}) {
    for (FlashPrecision precision : {FlashPrecision::float64, FlashPrecision::float32}) {
      CAPTURE(backend_name(b));
      BackendOptions backend;
      backend.backend = b;
      backend.precision = precision;
      const SdpaResult r = attention(q, k, v, nullptr, o, backend, /*with_weights=*/true);
      CHECK(r.weights(0, 0, 0) == doctest::Approx(0.87298).epsilon(1e-4));
      CHECK(r.output(0, 0, 0) == doctest::Approx(0.87298).epsilon(1e-4));
      CHECK(r.lse(0, 0) == doctest::Approx(1.92806 + std::log1p(std::exp(-1.92806))).epsilon(1e-4));
    }
  }
  // A window that leaves key 0 out, with a sink that brings it back, on flash.
  SdpaOptions w;
  w.mask_mod.window = variants::SlidingWindow{0, 0};
  w.mask_mod.window->sinks = 1;
  const Tensor3 q2{{{1.0f}, {1.0f}}}, k2{{{0.0f}, {0.0f}}}, v2{{{2.0f}, {4.0f}}};
  BackendOptions flash;
  flash.backend = Backend::flash;
  const SdpaResult r = attention(q2, k2, v2, nullptr, w, flash, true);
  CHECK(r.weights(0, 0, 1) == 0.0f);       // query 0 sees key 0 only
  CHECK(r.output(0, 1, 0) == doctest::Approx(3.0));  // query 1: the sink and itself, evenly
}

TEST_CASE("methods: linear and performer in linear time give the quadratic form's outputs") {
  // The 2-token case above, without weights: the same [19/9, 28/9] from S and z alone.
  const Tensor3 q2{{{1.0f, 0.0f}, {0.0f, 1.0f}}}, v2{{{1.0f, 2.0f}, {3.0f, 4.0f}}};
  MethodOptions o;
  o.method = AttentionMethod::linear;
  o.causal = true;
  o.with_weights = false;
  const MethodResult hand = method_attention(q2, q2, v2, o);
  CHECK_FALSE(hand.weights);
  CHECK(hand.output(0, 1, 0) == doctest::Approx(19.0 / 9));
  CHECK(hand.output(0, 1, 1) == doctest::Approx(28.0 / 9));
  CHECK(hand.output(0, 0, 1) == doctest::Approx(2.0));
  // Random heads with GQA, fewer queries than keys (bottom-right causal), both methods, both
  // masks: the two groupings of the same float64 sums agree far below float32's rounding.
  Rng rng(11);
  Tensor3 q = Tensor3::from_shape({4, 5, 8}), k = Tensor3::from_shape({2, 9, 8}), v = Tensor3::from_shape({2, 9, 3});
  for (Tensor3* t : {&q, &k, &v})
    for (float& x : *t) x = float(rng.normal());
  for (AttentionMethod method : {AttentionMethod::linear, AttentionMethod::performer})
    for (bool causal : {false, true}) {
      CAPTURE(attention_method_name(method));
      CAPTURE(causal);
      MethodOptions m;
      m.method = method;
      m.causal = causal;
      m.features = 16;
      m.scale = 0.35;
      m.seed = 3;
      const MethodResult quadratic = method_attention(q, k, v, m);
      m.with_weights = false;
      const MethodResult linear = method_attention(q, k, v, m);
      CHECK_FALSE(linear.weights);
      CHECK(xt::amax(xt::abs(linear.output - quadratic.output))() <= 1e-6f);
      CHECK(xt::amax(xt::abs(quadratic.output))() > 0.1f);  // not two empty results
    }
}

TEST_CASE("sparse: Child et al.'s strided pattern is a mask") {
  AttentionMask strided;
  strided.stride = variants::Strided{2};
  // p = 5: the last 2 keys (4, 5) and every 2nd before them (3, 1); never a later key.
  CHECK(row(strided, 5, 6, 6) == "010111");
  CHECK(row(strided, 0, 6, 6) == "100000");
  CHECK(row(strided, 0, 1, 6) == "010111");  // decode: the query sits at p = 5
}

TEST_CASE("methods: linear attention on a 2-token case worked out by hand") {
  // phi(x) = elu(x) + 1: phi([1, 0]) = [2, 1], phi([0, 1]) = [1, 2]. Query 1 against both keys:
  // phi(q1) . phi(k0) = 4, . phi(k1) = 5, so the weights are 4/9 and 5/9 and the output
  // 4/9 [1, 2] + 5/9 [3, 4] = [19/9, 28/9]; query 0, causal, sees key 0 alone.
  const Tensor3 q{{{1.0f, 0.0f}, {0.0f, 1.0f}}}, v{{{1.0f, 2.0f}, {3.0f, 4.0f}}};
  MethodOptions o;
  o.method = AttentionMethod::linear;
  o.causal = true;
  const MethodResult r = method_attention(q, q, v, o);
  REQUIRE(r.weights);
  CHECK((*r.weights)(0, 1, 0) == doctest::Approx(4.0 / 9));
  CHECK((*r.weights)(0, 0, 1) == 0.0f);
  CHECK(r.output(0, 1, 0) == doctest::Approx(19.0 / 9));
  CHECK(r.output(0, 1, 1) == doctest::Approx(28.0 / 9));
  CHECK(r.output(0, 0, 1) == doctest::Approx(2.0));
  // Linformer has no weights over keys; it is not causal; performer needs features.
  o.method = AttentionMethod::linformer;
  o.rank = 2;
  CHECK_THROWS_AS(method_attention(q, q, v, o), InputError);
  o.causal = false;
  CHECK_FALSE(method_attention(q, q, v, o).weights);
  o.method = AttentionMethod::performer;
  CHECK_THROWS_AS(method_attention(q, q, v, o), InputError);
  CHECK_THROWS_AS(parse_attention_method("flash"), InputError);
}

TEST_CASE("cli: mask draws attend's variants from the same descriptor, and refuses what does not fit") {
  test::TempDir dir;
  for (const char* args : {"--kind sinks --size 10 --window 3 --sinks 2", "--kind document --size 5 --segments 0,0,1,1,1",
                           "--kind prefix --size 6 --prefix 2", "--kind sparse --size 9 --stride 3"}) {
    CAPTURE(args);
    const test::CliResult r = test::run_cli(std::string("mask ") + args + " --out m.png", "", dir.path.string());
    CHECK(r.code == 0);
    CHECK(std::filesystem::exists(dir.path / "m.png"));
    std::filesystem::remove(dir.path / "m.png");
  }
  const test::CliResult wrong = test::run_cli("mask --kind document --size 5 --segments 0,1", "", dir.path.string());
  CHECK(wrong.code == 2);
  CHECK(wrong.err.find("--segments: expected 5 ids") != std::string::npos);
  CHECK(test::run_cli("mask --kind prefix --size 6 --queries 2", "", dir.path.string()).code == 2);
}

TEST_CASE("flash skips the tiles a mask hides entirely, runs whole ones unmasked, and still equals the reference") {
  // 200 tokens in 16 x 16 tiles: a window of 8 leaves most tiles of each row block hidden,
  // documents of 50 hide whole blocks; the sinks keep column 0's tiles in. Documents of 48
  // alone (not causal) make whole tiles visible: those run without reading the mask.
  const std::size_t L = 200, d = 8;
  Rng rng(7);
  Tensor3 q = Tensor3::from_shape({2, L, d}), k = Tensor3::from_shape({1, L, d}), v = Tensor3::from_shape({1, L, d});
  for (Tensor3* t : {&q, &k, &v})
    for (float& x : *t) x = float(rng.normal());
  SdpaOptions windowed;
  windowed.causal = true;
  windowed.mask_mod.window = variants::SlidingWindow{7, 0};
  windowed.mask_mod.window->sinks = 2;
  windowed.mask_mod.segments = variants::Documents{ids_in_runs(L, 50), ids_in_runs(L, 50)};
  SdpaOptions documents;
  documents.mask_mod.segments = variants::Documents{ids_in_runs(L, 48), ids_in_runs(L, 48)};
  // A window and its sinks alone are index rules inside the kernel (no bitmap): causal, and
  // looking ahead too (Longformer), with a few rows against many keys (a decode step's shape).
  SdpaOptions sliding;
  sliding.causal = true;
  sliding.mask_mod.window = variants::SlidingWindow{7, 0};
  sliding.mask_mod.window->sinks = 2;
  SdpaOptions ahead;
  ahead.mask_mod.window = variants::SlidingWindow{5, 3};
  // Prefix-LM and Child et al.'s stride, index rules too since every variant is one.
  SdpaOptions prefix;
  prefix.mask_mod.prefix = variants::PrefixLM{37};
  SdpaOptions strided;
  strided.causal = true;
  strided.mask_mod.stride = variants::Strided{5};
  SdpaOptions chunked;  // Llama 4's chunks of 32: whole tiles inside one chunk run unmasked
  chunked.causal = true;
  chunked.mask_mod.chunk = variants::Chunked{32};
  for (const SdpaOptions& o : {windowed, documents, sliding, ahead, prefix, strided, chunked}) {
    const SdpaResult ref = attention(q, k, v, nullptr, o, BackendOptions{}, false);
    BackendOptions flash;
    flash.backend = Backend::flash;
    flash.block_q = flash.block_k = 16;
    for (const char* isa : {"", "generic"})
      for (FlashPrecision precision : {FlashPrecision::float64, FlashPrecision::float32}) {
        CAPTURE(isa);
        flash.isa = isa;
        flash.precision = precision;
        const SdpaResult f = attention(q, k, v, nullptr, o, flash, false);
        CHECK(xt::amax(xt::abs(f.output - ref.output))() < 1e-5);
        CHECK(xt::amax(xt::abs(f.lse - ref.lse))() < 1e-5);
      }
    // The last 3 queries against all 200 keys, and the weights recomputed from the kernel's lse
    // (documents name one id per query: those descriptors are for the square case).
    if (o.mask_mod.segments || o.mask_mod.prefix) continue;
    const Tensor3 q3 = xt::view(q, xt::all(), xt::range(L - 3, L), xt::all());
    const SdpaResult ref3 = attention(q3, k, v, nullptr, o, BackendOptions{}, true);
    BackendOptions fast;
    fast.backend = Backend::flash;
    fast.precision = FlashPrecision::float32;
    const SdpaResult f3 = attention(q3, k, v, nullptr, o, fast, true);
    CHECK(xt::amax(xt::abs(f3.output - ref3.output))() < 1e-5);
    CHECK(xt::amax(xt::abs(f3.weights - ref3.weights))() < 1e-5);
  }
}

TEST_CASE("variant masks: the block mask from the indices agrees with the bitmap's, tile by tile, and the kernels' IndexRules with both") {
  // Every tile of every size from 1 to 7 on a 23-key problem: the rule's cover may say "some"
  // where the bitmap says all or none (a tile of sinks and window keys, stride's periodic
  // pattern, documents' ids), never the reverse; for a window alone and prefix-LM it is exact.
  auto docs = [](std::size_t n, std::size_t len) {
    std::vector<std::int64_t> ids;
    for (std::size_t i = 0; i < n; ++i) ids.push_back(std::int64_t(i / len));
    return ids;
  };
  std::vector<std::pair<AttentionMask, std::size_t>> cases;  // mask, Lq
  AttentionMask m;
  m.window = variants::SlidingWindow{4, 0};
  m.window->sinks = 2;
  cases.push_back({m, 23});
  cases.push_back({m, 5});
  m.window = variants::SlidingWindow{2, 3};
  cases.push_back({m, 23});
  m.window->sinks = 0;
  cases.push_back({m, 23});
  cases.push_back({m, 4});
  AttentionMask s;
  s.stride = variants::Strided{4};
  cases.push_back({s, 23});
  cases.push_back({s, 6});
  AttentionMask pre;
  pre.prefix = variants::PrefixLM{9};
  cases.push_back({pre, 23});
  AttentionMask d;
  d.segments = variants::Documents{docs(23, 6), docs(23, 6)};
  cases.push_back({d, 23});
  AttentionMask all = d;
  all.window = variants::SlidingWindow{5, 0};
  all.window->sinks = 1;
  all.stride = variants::Strided{3};
  all.prefix = variants::PrefixLM{4};
  cases.push_back({all, 23});
  AttentionMask chunk;
  chunk.chunk = variants::Chunked{5};
  cases.push_back({chunk, 23});
  cases.push_back({chunk, 4});
  chunk.window = variants::SlidingWindow{3, 0};
  cases.push_back({chunk, 23});
  for (std::size_t n = 0; n < cases.size(); ++n) {
    const auto& c = cases[n];
    const AttentionMask& mask = c.first;
    CAPTURE(n);
    const std::size_t Lq = c.second, Lk = 23;
    const Mask2 bitmap = mask.allowed(Lq, Lk);
    // The rules as the CUDA kernels take them (variants/index_rules.hpp) answer as the mask does,
    // score by score and tile by tile.
    const std::optional<variants::IndexRules> rules = mask.index_rules();
    REQUIRE(rules.has_value());
    CHECK(rules->any());
    for (std::size_t i = 0; i < Lq; ++i)
      for (std::size_t j = 0; j < Lk; ++j) CHECK(rules->visible(i, j, Lq, Lk) == bool(bitmap(i, j)));
    // Exact: a window without sinks, prefix-LM or chunks, alone (two exact covers joined may
    // still say "some" of a tile where the two rules never overlap).
    const int present = std::apply([](const auto&... r) { return (int(r.has_value()) + ...); }, mask.rules());
    const bool exact = present == 1 && ((mask.window && mask.window->sinks == 0) || mask.prefix || mask.chunk);
    for (std::size_t rows = 1; rows <= 7; ++rows)
      for (std::size_t cols = 1; cols <= 7; ++cols)
        for (std::size_t i0 = 0; i0 + rows <= Lq; i0 += rows)
          for (std::size_t j0 = 0; j0 + cols <= Lk; j0 += cols) {
            const tile::MaskCover want = tile::mask_cover(bitmap.data(), Lk, i0, rows, j0, cols);
            const tile::MaskCover got = mask.cover(i0, rows, j0, cols, Lq, Lk);
            CHECK(int(rules->cover(i0, rows, j0, cols, Lq, Lk)) == int(got));
            CAPTURE(Lq);
            CAPTURE(i0);
            CAPTURE(j0);
            CAPTURE(rows);
            CAPTURE(cols);
            if (exact) CHECK(int(got) == int(want));
            else CHECK((got == tile::MaskCover::some || got == want));
          }
  }
}

TEST_CASE("the flash backward reads every variant mask by index and gives the reference's gradients") {
  // 40 tokens in 8 x 8 tiles: windows hide whole tiles, documents and prefix-LM make some whole,
  // the stride tests each score; every gradient against the float64 reference's.
  const std::size_t L = 40, d = 4;
  Rng rng(11);
  Tensor3 q = Tensor3::from_shape({2, L, d}), k = Tensor3::from_shape({1, L, d}), v = Tensor3::from_shape({1, L, d});
  Tensor3 dout = Tensor3::from_shape({2, L, d});
  for (Tensor3* t : {&q, &k, &v, &dout})
    for (float& x : *t) x = float(rng.normal());
  std::vector<SdpaOptions> cases(5);
  cases[0].causal = true;
  cases[0].mask_mod.window = variants::SlidingWindow{5, 0};
  cases[0].mask_mod.window->sinks = 2;
  cases[1].mask_mod.segments = variants::Documents{ids_in_runs(L, 12), ids_in_runs(L, 12)};
  cases[2].mask_mod.prefix = variants::PrefixLM{13};
  cases[3].causal = true;
  cases[3].mask_mod.stride = variants::Strided{3};
  cases[4].causal = true;
  cases[4].mask_mod.chunk = variants::Chunked{12};
  for (std::size_t n = 0; n < cases.size(); ++n) {
    CAPTURE(n);
    const SdpaGradients ref = attention_backward(q, k, v, nullptr, dout, cases[n], BackendOptions{});
    BackendOptions flash;
    flash.backend = Backend::flash;
    flash.block_q = flash.block_k = 8;
    for (FlashPrecision precision : {FlashPrecision::float64, FlashPrecision::float32}) {
      flash.precision = precision;
      const SdpaGradients g = attention_backward(q, k, v, nullptr, dout, cases[n], flash);
      const double tol = precision == FlashPrecision::float64 ? 1e-6 : 1e-4;
      CHECK(xt::amax(xt::abs(g.grad_q - ref.grad_q))() < tol);
      CHECK(xt::amax(xt::abs(g.grad_k - ref.grad_k))() < tol);
      CHECK(xt::amax(xt::abs(g.grad_v - ref.grad_v))() < tol);
    }
    // The mask matters: without it the gradients differ.
    SdpaOptions plain;
    plain.causal = cases[n].causal;
    const SdpaGradients without = attention_backward(q, k, v, nullptr, dout, plain, BackendOptions{});
    CHECK(xt::amax(xt::abs(without.grad_q - ref.grad_q))() > 1e-3);
  }
}
