#include <doctest/doctest.h>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/linear.hpp"
#include "attn/engine/attention/mha.hpp"
#include "attn/engine/core/random.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;

TEST_CASE("mha: matches the float64 NumPy reference (self, cross, GQA, MQA, biases, mask, causal)") {
  for (const char* name : {"mha_self_bias", "mha_cross_gqa", "mha_mqa_causal"}) {
    CAPTURE(name);
    check_mha_golden(name);
  }
}

TEST_CASE("mha: fused QKV gives the same result as separate projections") {
  for (std::size_t kv_heads : {4u, 2u, 1u}) {
    CAPTURE(kv_heads);
    const std::size_t D = 16, L = 5;
    const MhaWeights w = init_mha_weights(D, 4, kv_heads, 9, /*with_bias=*/true);
    Tensor2 x = Tensor2::from_shape({L, D});
    Rng rng(5);
    for (float& e : x) e = float(rng.normal());
    MhaOptions o;
    o.num_heads = 4;
    o.num_kv_heads = kv_heads;
    o.attention.causal = true;
    const MhaResult a = mha(x, x, x, w, nullptr, o);
    const MhaResult b = mha_fused(x, fuse_qkv(w), nullptr, o);
    CHECK(fuse_qkv(w).w_qkv.shape(0) == D + 2 * (D / 4) * kv_heads);
    CHECK(xt::allclose(a.output, b.output, 1e-6, 1e-7));
    CHECK(xt::allclose(a.weights, b.weights, 1e-6, 1e-7));
  }
}

TEST_CASE("mha: without weights, flash returns the same output and never forms [H, Lq, Lk]") {
  const std::size_t D = 8, L = 7;
  const MhaWeights w = init_mha_weights(D, 2, 2, 3, /*with_bias=*/true);
  Tensor2 x = Tensor2::from_shape({L, D});
  Rng rng(11);
  for (float& e : x) e = float(rng.normal());
  MhaOptions o;
  o.num_heads = o.num_kv_heads = 2;
  o.attention.causal = true;
  const MhaResult naive = mha(x, x, x, w, nullptr, o);
  o.backend.backend = Backend::flash;
  o.with_weights = false;
  const MhaResult flash = mha(x, x, x, w, nullptr, o);
  CHECK(flash.weights.size() == 0);
  CHECK(xt::allclose(flash.output, naive.output, 1e-6, 1e-6));
  CHECK(xt::allclose(flash.lse, naive.lse, 1e-6, 1e-6));
}

TEST_CASE("mha: one head with identity projections is plain sdpa") {
  const std::size_t D = 3;
  const Tensor2 I = xt::eye<float>(D);
  const MhaWeights w{I, I, I, I, {}, {}, {}, {}};
  const Tensor2 x = {{1, 0, 2}, {0, 1, -1}};
  MhaOptions o;
  const MhaResult r = mha(x, x, x, w, nullptr, o);
  const Tensor3 x3 = xt::expand_dims(x, 0);
  const SdpaResult s = sdpa(x3, x3, x3);
  CHECK(xt::allclose(r.output, xt::view(s.output, 0, xt::all(), xt::all())));
}

TEST_CASE("mha: bad configurations are input errors that name the field") {
  const MhaWeights w = init_mha_weights(8, 2, 2, 1);
  const Tensor2 x = xt::zeros<float>({3, 8});
  MhaOptions o;
  o.num_heads = 3;
  CHECK_THROWS_WITH_AS(mha(x, x, x, w, nullptr, o), doctest::Contains("num_heads: 3 does not divide"), InputError);
  o.num_heads = 2;
  o.num_kv_heads = 3;
  CHECK_THROWS_WITH_AS(mha(x, x, x, w, nullptr, o), doctest::Contains("num_kv_heads"), InputError);
  o.num_kv_heads = 1;  // w_k is [8, 8] but MQA needs [4, 8]
  CHECK_THROWS_WITH_AS(mha(x, x, x, w, nullptr, o), doctest::Contains("w_k: expected shape [4, 8], got [8, 8]"),
                       InputError);
}
