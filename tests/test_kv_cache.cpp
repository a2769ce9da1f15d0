// The KV cache, and decoding through it: prefill + one token at a time == the one-shot run.
#include <doctest/doctest.h>

#include "attn/engine/positions/alibi.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/kv_cache.hpp"
#include "attn/engine/attention/mask.hpp"
#include "attn/engine/core/random.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;

namespace {

Tensor2 random_tokens(std::size_t L, std::size_t D, std::uint64_t seed) {
  Tensor2 x = Tensor2::from_shape({L, D});
  Rng rng(seed);
  for (float& e : x) e = static_cast<float>(rng.normal());
  return x;
}

void check_same_run(const MhaResult& decoded, const MhaResult& full) {
  CHECK(max_abs_diff(flat_tensor(decoded.output), flat_tensor(full.output)) <= 1e-6);
  CHECK(max_abs_diff(flat_tensor(decoded.weights), flat_tensor(full.weights)) <= 1e-6);
  CHECK(max_abs_diff(flat_tensor(decoded.lse), flat_tensor(full.lse)) <= 1e-5);
}

}  // namespace

TEST_CASE("kv cache: append keeps each kv head's rows in order, and counts its bytes") {
  KvCache c(2, 3);
  c.append(std::vector<double>{1, 2, 3, 4, 5, 6}, std::vector<double>{-1, -2, -3, -4, -5, -6});
  CHECK(c.length() == 1);
  CHECK(c.bytes() == 2 * 2 * 1 * 3 * 8);
  c.append(std::vector<double>{7, 8, 9, 10, 11, 12}, std::vector<double>{0, 0, 0, 1, 1, 1});
  CHECK(c.length() == 2);
  CHECK(c.bytes() == 2 * 2 * 2 * 3 * 8);
  CHECK(c.bytes(2) == 2 * 2 * 2 * 3 * 2);  // what fp16 would hold
  const std::vector<double> k0(c.keys(0).begin(), c.keys(0).end()), v1(c.values(1).begin(), c.values(1).end());
  CHECK(k0 == std::vector<double>{1, 2, 3, 7, 8, 9});
  CHECK(v1 == std::vector<double>{-4, -5, -6, 1, 1, 1});
  CHECK_THROWS_WITH_AS(c.append(std::vector<double>{1, 2, 3}, std::vector<double>{1, 2, 3}),
                       doctest::Contains("expected k and v of 6 values"), InputError);
}

TEST_CASE("kv cache: a window keeps only the last w tokens") {
  KvCache c(1, 2, 2);
  for (double t : {0.0, 1.0, 2.0, 3.0}) c.append(std::vector<double>{t, t}, std::vector<double>{t, -t});
  CHECK(c.length() == 2);
  CHECK(c.tokens_seen() == 4);
  CHECK(c.first_position() == 2);
  const std::vector<double> k(c.keys(0).begin(), c.keys(0).end());
  CHECK(k == std::vector<double>{2, 2, 3, 3});
  CHECK(c.bytes() == 2 * 1 * 2 * 2 * 8);
}

TEST_CASE("decode: prefill P then one token at a time equals the one-shot causal run, for every P and GQA") {
  const std::size_t L = 7, D = 16, H = 4;
  const Tensor2 x = random_tokens(L, D, 31);
  for (std::size_t Hkv : {4u, 2u, 1u}) {
    const MhaWeights w = init_mha_weights(D, H, Hkv, 17 + Hkv, /*with_bias=*/true);
    for (int rope = 0; rope < 3; ++rope) {
      MhaOptions o;
      o.num_heads = H;
      o.num_kv_heads = Hkv;
      o.attention.causal = true;
      if (rope) o.rope = RopeOptions{10000, rope == 1 ? RopeStyle::Half : RopeStyle::Interleaved, {}, {}};
      const MhaResult full = mha(x, x, x, w, nullptr, o);
      for (std::size_t P : {0u, 1u, 3u, 6u, 7u}) {
        CAPTURE(Hkv);
        CAPTURE(rope);
        CAPTURE(P);
        const MhaDecodeResult d = mha_decode(x, w, nullptr, o, P);
        check_same_run(d.result, full);
        CHECK(d.kv_cache_len == L);
        CHECK(d.steps.size() == (P == 0 ? L : 1 + L - P));
        CHECK(d.steps.back().cache_bytes == 2 * Hkv * L * (D / H) * sizeof(double));  // GQA: Hkv heads
        CHECK(d.steps.front().count == std::max<std::size_t>(P, 1));
        // A decoded row has zero weight on the keys after it (they are not in the cache yet).
        for (std::size_t j = 1; j < L; ++j) CHECK(d.result.weights(0, 0, j) == 0.0f);
      }
    }
  }
}

TEST_CASE("decode: a sliding window bounds the cache, and ALiBi decodes like the one-shot run") {
  const std::size_t L = 8, D = 8, H = 2, window = 3;
  const Tensor2 x = random_tokens(L, D, 8);
  const MhaWeights w = init_mha_weights(D, H, 1, 3);
  MhaOptions o;
  o.num_heads = H;
  o.num_kv_heads = 1;
  o.attention.causal = true;
  o.attention.mask_mod.window = variants::SlidingWindow{window - 1, 0};
  o.rope = RopeOptions{};
  const MhaResult full = mha(x, x, x, w, nullptr, o);
  // The window descriptor is the sliding-window mask of mask.hpp (an independent path).
  MhaOptions masked = o;
  masked.attention.mask_mod = {};
  const Mask2 m2 = sliding_window_allowed(L, L, window - 1, 0);
  const Mask3 m3 = xt::expand_dims(m2, 0);
  check_same_run(mha(x, x, x, w, &m3, masked), full);
  for (std::size_t P : {0u, 2u, 5u}) {
    CAPTURE(P);
    const MhaDecodeResult d = mha_decode(x, w, nullptr, o, P);
    check_same_run(d.result, full);
    CHECK(d.kv_cache_len == window);
    for (const DecodeStep& s : d.steps) CHECK(s.cache_len <= window);
  }

  MhaOptions alibi = o;
  alibi.attention.mask_mod = {};
  alibi.rope.reset();
  alibi.attention.score_mod.alibi = variants::AlibiBias{alibi_slopes(H)};
  const MhaResult full_alibi = mha(x, x, x, w, nullptr, alibi);
  check_same_run(mha_decode(x, w, nullptr, alibi, 2).result, full_alibi);
  CHECK(max_abs_diff(flat_tensor(full_alibi.weights), flat_tensor(mha(x, x, x, w, nullptr, masked).weights)) > 1e-3);
}

TEST_CASE("decode: matches the float64 NumPy reference of the one-shot run (golden decode cases)") {
  for (const char* name : {"mha_decode_gqa_rope", "mha_decode_mqa_p0", "mha_decode_last"}) {
    CAPTURE(name);
    check_mha_golden(name);
  }
}

TEST_CASE("decode: a mask is sliced row by row") {
  const std::size_t L = 5, D = 8;
  const Tensor2 x = random_tokens(L, D, 2);
  const MhaWeights w = init_mha_weights(D, 2, 2, 4);
  Mask3 m = xt::ones<bool>({std::size_t{2}, L, L});
  m(0, 3, 1) = false;
  m(1, 4, 0) = false;
  m(1, 2, 2) = false;
  MhaOptions o;
  o.num_heads = 2;
  o.attention.causal = true;
  const MhaResult full = mha(x, x, x, w, &m, o);
  for (std::size_t P : {0u, 3u}) check_same_run(mha_decode(x, w, &m, o, P).result, full);
}

TEST_CASE("decode: requests that cannot be decoded are input errors naming decode_from") {
  const Tensor2 x = random_tokens(3, 8, 1);
  const MhaWeights w = init_mha_weights(8, 2, 2, 1);
  MhaOptions o;
  o.num_heads = 2;
  o.attention.causal = true;
  CHECK_THROWS_WITH_AS(mha_decode(x, w, nullptr, o, 4), doctest::Contains("decode_from: expected 0 <= P <= Lq = 3, got 4"),
                       InputError);
  o.attention.dropout_p = 0.1;
  CHECK_THROWS_WITH_AS(mha_decode(x, w, nullptr, o, 1), doctest::Contains("decode_from: dropout must be off"), InputError);
  o.attention.dropout_p = 0;
  o.attention.causal = false;
  CHECK_THROWS_WITH_AS(mha_decode(x, w, nullptr, o, 1), doctest::Contains("decode_from: KV-cache decoding is causal"),
                       InputError);
}

TEST_CASE("kv cache: a bfloat16 cache holds each value rounded to nearest even, 2 bytes a value") {
  KvCache c(1, 3, 0, KvDtype::bfloat16);
  // bfloat16 keeps 8 significant bits: near 1 its step is 2^-7. 1 + 2^-9 is under half a step
  // (down to 1); 1 + 3 * 2^-8 is exactly half-way between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  c.append(std::vector<double>{1 + 0x1p-9, 1 + 3 * 0x1p-8, -2.5}, std::vector<double>{0.1, 1e-3, 3});
  CHECK(c.keys(0)[0] == 1.0);
  CHECK(c.keys(0)[1] == 1 + 0x1p-6);
  CHECK(c.keys(0)[2] == -2.5);                // exact in 8 bits
  CHECK(c.values(0)[0] == 0.10009765625);     // 0x3dcd: 1.6015625 * 2^-4
  CHECK(c.values(0)[2] == 3.0);
  CHECK(c.bytes() == 2 * 1 * 1 * 3 * 2);
  CHECK(kv_stored_value(KvDtype::float64, 0.1) == 0.1);
  CHECK_THROWS_AS(parse_kv_dtype("f16"), InputError);
}

TEST_CASE("kv cache: decoding through a bfloat16 cache reads the same rounded K and V in the prefill as in each step") {
  const Tensor2 x = random_tokens(7, 8, 11);
  const MhaWeights w = init_mha_weights(8, 2, 1, 12);
  MhaOptions o;
  o.num_heads = 2;
  o.num_kv_heads = 1;
  o.attention.causal = true;
  const MhaDecodeResult f64 = mha_decode(x, w, nullptr, o, 1);
  o.kv_dtype = KvDtype::bfloat16;
  const MhaDecodeResult stepwise = mha_decode(x, w, nullptr, o, 0), prefilled = mha_decode(x, w, nullptr, o, 7);
  // Every query reads the same rounded keys and values either way: float rounding apart, equal.
  CHECK(max_abs_diff(flat_tensor(stepwise.result.output), flat_tensor(prefilled.result.output)) <= 1e-6);
  // ... and they are not the float64 cache's: the rounding shows, within bfloat16's 2^-8.
  const double diff = max_abs_diff(flat_tensor(stepwise.result.output), flat_tensor(f64.result.output));
  CHECK(diff > 1e-6);
  CHECK(diff < 2e-2);
  for (std::size_t s = 0; s < f64.steps.size(); ++s) CHECK(4 * stepwise.steps[s].cache_bytes == f64.steps[s].cache_bytes);
}
