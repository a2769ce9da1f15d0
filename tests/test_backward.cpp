// The backward pass of attention (backward.hpp): the naive reference against finite
// differences of the float64 forward, and the flash backward (FlashAttention-2, Algorithm 2)
// against the naive one over the shapes that break tiled kernels.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <functional>
#include <vector>

#include "attn/engine/attention/attention.hpp"
#include "attn/engine/attention/backward.hpp"
#include "attn/engine/attention/cuda.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/core/random.hpp"
#include "engine/attention/backward_f64.hpp"  // the float64 cores, tested without float32 rounding
#include "fa_rule.hpp"
#include "support.hpp"

using namespace attn;

namespace {

TensorD3 randn64(Rng& rng, std::size_t a, std::size_t b, std::size_t c, double sd = 1.0) {
  TensorD3 t = TensorD3::from_shape({a, b, c});
  for (double& x : t) x = rng.normal() * sd;
  return t;
}

double max_abs(const TensorD3& a, const TensorD3& b) {
  REQUIRE(a.shape() == b.shape());
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a.data()[i] - b.data()[i]));
  return m;
}

// d loss / d x by central differences, x perturbed in place one element at a time.
TensorD3 numeric_gradient(TensorD3& x, const std::function<double()>& loss) {
  constexpr double e = 1e-5;  // truncation ~e^2, rounding ~1e-16 / e: both near 1e-10
  TensorD3 g = TensorD3::from_shape(x.shape());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double saved = x.data()[i];
    x.data()[i] = saved + e;
    const double up = loss();
    x.data()[i] = saved - e;
    const double down = loss();
    x.data()[i] = saved;
    g.data()[i] = (up - down) / (2 * e);
  }
  return g;
}

struct Case {
  std::size_t H, Hkv, Lq, Lk, d, dv;
  bool causal = false;
  bool mask = false;  // a random mask with one fully masked row
  std::optional<double> scale;
  double temperature = 1.0;
  std::size_t block_q = 0, block_k = 0;
  std::optional<double> softcap;  // Gemma 2's c tanh(x / c) on the scaled scores
  bool alibi = false;             // ALiBi slopes 0.6, 0.3, ... (one per query head)
};

struct Inputs {
  TensorD3 q, k, v, grad_output;
  Mask3 mask;
  const Mask3* allowed = nullptr;
  SdpaOptions options;
};

Inputs make_inputs(const Case& c, std::uint64_t seed) {
  Rng rng(seed);
  Inputs in{randn64(rng, c.H, c.Lq, c.d), randn64(rng, c.Hkv, c.Lk, c.d), randn64(rng, c.Hkv, c.Lk, c.dv),
            randn64(rng, c.H, c.Lq, c.dv), {}, nullptr, {}};
  if (c.mask) {
    in.mask = Mask3::from_shape({c.H, c.Lq, c.Lk});
    for (bool& b : in.mask) b = rng.uniform() < 0.6;
    for (std::size_t j = 0; j < c.Lk; ++j) in.mask(c.H - 1, c.Lq / 2, j) = false;  // a fully masked row
    in.allowed = &in.mask;
  }
  in.options.causal = c.causal;
  in.options.scale = c.scale;
  in.options.temperature = c.temperature;
  if (c.softcap) in.options.score_mod.softcap = variants::SoftCap{*c.softcap};
  if (c.alibi) in.options.score_mod.alibi = variants::AlibiBias{};
  for (std::size_t h = 0; c.alibi && h < c.H; ++h) in.options.score_mod.alibi->slopes.push_back(0.6 / double(h + 1));
  return in;
}

double alpha_of(const Inputs& in) {
  return resolved_scale(in.options.scale, in.q.shape(2)) / in.options.temperature;
}

// The loss whose gradients the backward computes: sum(dO o O), dO held fixed.
double loss(const Inputs& in) {
  const detail::SdpaF64 f = detail::sdpa_f64(in.q, in.k, in.v, in.allowed, in.options);
  double s = 0;
  for (std::size_t i = 0; i < f.output.size(); ++i) s += f.output.data()[i] * in.grad_output.data()[i];
  return s;
}

void check_naive_against_finite_differences(const Case& c, std::uint64_t seed) {
  Inputs in = make_inputs(c, seed);
  const detail::SdpaF64 f = detail::sdpa_f64(in.q, in.k, in.v, in.allowed, in.options);
  const detail::GradsF64 g = detail::sdpa_backward_f64(in.q, in.k, in.v, f.weights, in.grad_output, alpha_of(in),
                                                       &in.options.score_mod, in.options.temperature);
  auto l = [&] { return loss(in); };
  CHECK(max_abs(g.dq, numeric_gradient(in.q, l)) < 1e-7);
  CHECK(max_abs(g.dk, numeric_gradient(in.k, l)) < 1e-7);
  CHECK(max_abs(g.dv, numeric_gradient(in.v, l)) < 1e-7);
}

void check_flash_against_naive(const Case& c, std::uint64_t seed, std::size_t threads = 2) {
  const Inputs in = make_inputs(c, seed);
  const detail::SdpaF64 f = detail::sdpa_f64(in.q, in.k, in.v, in.allowed, in.options);
  const detail::GradsF64 naive = detail::sdpa_backward_f64(in.q, in.k, in.v, f.weights, in.grad_output, alpha_of(in),
                                                           &in.options.score_mod, in.options.temperature);
  FlashOptions fo;
  fo.causal = c.causal;
  fo.scale = alpha_of(in);
  fo.block_q = c.block_q;
  fo.block_k = c.block_k;
  fo.threads = threads;
  fo.score_mod = in.options.score_mod.any() ? &in.options.score_mod : nullptr;
  fo.temperature = c.temperature;
  const detail::GradsF64 flash =
      detail::flash_backward_f64(in.q, in.k, in.v, in.allowed, f.output, f.lse, in.grad_output, fo);
  // Both float64: they differ only in the order of the sums.
  CHECK(max_abs(flash.dq, naive.dq) < 1e-10);
  CHECK(max_abs(flash.dk, naive.dk) < 1e-10);
  CHECK(max_abs(flash.dv, naive.dv) < 1e-10);
}

}  // namespace

TEST_CASE("backward: the naive reference matches central finite differences in float64") {
  const Case cases[] = {
      {1, 1, 1, 1, 1, 1},                                     // one query, one key: dq = dk = 0
      {2, 2, 3, 4, 3, 2},                                     // plain, Lq != Lk
      {4, 2, 3, 5, 2, 3},                                     // GQA: dk, dv summed over 2 heads
      {2, 1, 4, 3, 2, 2, /*causal=*/true},                    // causal, Lq > Lk: row 0 sees nothing
      {2, 2, 3, 6, 3, 1, true},                               // causal, Lq < Lk: bottom-right
      {2, 2, 4, 5, 3, 2, false, /*mask=*/true},               // mask with a fully masked row
      {2, 2, 3, 4, 2, 2, true, true, /*scale=*/0.7, /*temperature=*/1.9},  // custom scale, temperature
      // The soft-cap, small enough that tanh bends the scores (|scale q.k| reaches 2-3 here):
      {2, 1, 3, 5, 4, 2, false, false, {}, 1.0, 0, 0, /*softcap=*/0.8},
      {2, 2, 4, 4, 3, 2, true, true, 0.9, 1.7, 0, 0, /*softcap=*/1.5},  // with causal, mask, temperature
      {3, 1, 4, 6, 3, 2, true, false, {}, 1.0, 0, 0, {}, /*alibi=*/true},  // ALiBi, causal, Lq < Lk
      {2, 2, 4, 5, 3, 2, false, true, 0.8, 1.4, 0, 0, 1.1, true},         // both modifiers together
  };
  std::uint64_t seed = 10;
  for (const Case& c : cases) {
    CAPTURE(c.Lq);
    CAPTURE(c.Lk);
    CAPTURE(c.causal);
    CAPTURE(c.mask);
    check_naive_against_finite_differences(c, seed++);
  }
}

TEST_CASE("backward: a fully masked row has zero gradient and adds nothing to dk, dv") {
  Inputs in = make_inputs({1, 1, 3, 4, 2, 2, false, true}, 3);
  for (std::size_t j = 0; j < 4; ++j) in.mask(0, 1, j) = false;
  const detail::SdpaF64 f = detail::sdpa_f64(in.q, in.k, in.v, in.allowed, in.options);
  const detail::GradsF64 g = detail::sdpa_backward_f64(in.q, in.k, in.v, f.weights, in.grad_output, alpha_of(in));
  for (std::size_t c = 0; c < 2; ++c) CHECK(g.dq(0, 1, c) == 0.0);
  // Changing that row's dO changes nothing: it reached no key.
  Inputs other = in;
  for (std::size_t c = 0; c < 2; ++c) other.grad_output(0, 1, c) += 5.0;
  const detail::GradsF64 g2 =
      detail::sdpa_backward_f64(other.q, other.k, other.v, f.weights, other.grad_output, alpha_of(in));
  CHECK(max_abs(g.dk, g2.dk) == 0.0);
  CHECK(max_abs(g.dv, g2.dv) == 0.0);
}

TEST_CASE("backward: flash (Algorithm 2) matches the naive reference on odd shapes") {
  const Case cases[] = {
      {1, 1, 1, 1, 1, 1},                                              // d = 1, one key
      {2, 2, 7, 13, 5, 3, false, false, {}, 1.0, 3, 4},                // nothing divides anything
      {3, 3, 17, 9, 1, 2, true, false, {}, 1.0, 4, 4},                 // causal Lq > Lk, d = 1
      {2, 2, 9, 30, 4, 4, true, false, {}, 1.0, 4, 7},                 // causal Lq < Lk
      {4, 2, 21, 21, 6, 5, true, false, {}, 1.0, 5, 3},                // GQA, causal square
      {4, 1, 10, 14, 3, 3, false, false, {}, 1.0, 1, 1},               // MQA, 1 x 1 tiles
      {2, 2, 12, 15, 4, 3, false, true, {}, 1.0, 4, 4},                // mask, a fully masked row
      {2, 2, 12, 15, 4, 3, true, true, 0.37, 2.5, 5, 2},               // everything together
      {2, 2, 70, 130, 8, 8, true},                                     // default tiles
      // The score modifiers, recomputed in each tile and differentiated through their slope:
      {2, 1, 9, 13, 5, 3, false, false, {}, 1.0, 4, 3, /*softcap=*/0.7},
      {4, 2, 11, 17, 4, 4, true, false, {}, 1.0, 3, 5, {}, /*alibi=*/true},
      {2, 2, 12, 15, 4, 3, true, true, 0.9, 1.6, 5, 2, 1.2, true},     // both, with everything else
  };
  std::uint64_t seed = 100;
  for (const Case& c : cases) {
    CAPTURE(c.H);
    CAPTURE(c.Lq);
    CAPTURE(c.Lk);
    CAPTURE(c.causal);
    CAPTURE(c.block_q);
    CAPTURE(c.block_k);
    check_flash_against_naive(c, seed++);
  }
}

TEST_CASE("backward: float32 flash meets FlashAttention's accuracy rule on every instruction set") {
  // Rule (Dao et al.): |flash - float64| <= 2 |plain float32 - float64| per gradient, the
  // float64 reference computed from the same float32-rounded inputs.
  const Case cases[] = {
      {1, 1, 1, 1, 1, 1},
      {2, 2, 7, 13, 5, 3, false, false, {}, 1.0, 3, 4},
      {3, 3, 17, 9, 1, 2, true, false, {}, 1.0, 4, 4},
      {2, 2, 9, 30, 4, 4, true, false, {}, 1.0, 4, 7},
      {4, 2, 21, 21, 6, 5, true, false, {}, 1.0, 5, 3},
      {4, 1, 10, 14, 3, 3, false, false, {}, 1.0, 1, 1},
      {2, 2, 12, 15, 4, 3, false, true, {}, 1.0, 4, 4},
      {2, 2, 12, 15, 4, 3, true, true, 0.37, 2.5, 5, 2},
      {8, 8, 32, 32, 16, 16, true},     // a head of the toy transformer, one tile
      {2, 2, 70, 130, 40, 24, true},    // default tiles, d past one AVX-512 register
  };
  auto to_f32 = [](const TensorD3& t) { return Tensor3(xt::cast<float>(t)); };
  auto to_f64 = [](const Tensor3& t) { return TensorD3(xt::cast<double>(t)); };
  auto err = [&](const Tensor3& a, const TensorD3& ref) { return max_abs(to_f64(a), ref); };
  std::size_t checked = 0;
  for (const char* isa : {"generic", "avx2", "avx512"}) {
    FlashOptions probe;
    probe.isa = isa;
    try {
      flash_tiling(4, 4, probe);
    } catch (const InputError&) {
      continue;  // not on this CPU
    }
    std::uint64_t seed = 300;
    for (const Case& c : cases) {
      CAPTURE(isa);
      CAPTURE(c.Lq);
      CAPTURE(c.Lk);
      CAPTURE(c.d);
      CAPTURE(c.causal);
      CAPTURE(c.mask);
      Inputs in = make_inputs(c, seed++);
      const Tensor3 q = to_f32(in.q), k = to_f32(in.k), v = to_f32(in.v), dO = to_f32(in.grad_output);
      in.q = to_f64(q), in.k = to_f64(k), in.v = to_f64(v), in.grad_output = to_f64(dO);
      const detail::SdpaF64 f = detail::sdpa_f64(in.q, in.k, in.v, in.allowed, in.options);
      const detail::GradsF64 ref = detail::sdpa_backward_f64(in.q, in.k, in.v, f.weights, in.grad_output, alpha_of(in));
      const test::PlainGrads plain =
          test::plain_float32_backward(q, k, v, in.allowed, c.causal, float(alpha_of(in)), dO);
      FlashOptions fo;
      fo.causal = c.causal;
      fo.scale = alpha_of(in);
      fo.block_q = c.block_q;
      fo.block_k = c.block_k;
      fo.isa = isa;
      fo.precision = FlashPrecision::float32;
      const SdpaGradients g = flash_backward(q, k, v, in.allowed, flash_attention(q, k, v, in.allowed, fo), dO, fo);
      CHECK(err(g.grad_q, ref.dq) <= 2 * err(plain.dq, ref.dq) + 1e-6);
      CHECK(err(g.grad_k, ref.dk) <= 2 * err(plain.dk, ref.dk) + 1e-6);
      CHECK(err(g.grad_v, ref.dv) <= 2 * err(plain.dv, ref.dv) + 1e-6);
      ++checked;
    }
  }
  CHECK(checked >= std::size(cases));  // at least the generic set
}

TEST_CASE("backward: float32 flash with score modifiers stays near the float64 one on every instruction set") {
  const Case c{4, 2, 23, 29, 20, 9, true, false, 0.8, 1.3, 8, 8, /*softcap=*/1.1, /*alibi=*/true};
  Inputs in = make_inputs(c, 77);
  const Tensor3 q = xt::cast<float>(in.q), k = xt::cast<float>(in.k), v = xt::cast<float>(in.v);
  const Tensor3 dO = xt::cast<float>(in.grad_output);
  in.q = xt::cast<double>(q), in.k = xt::cast<double>(k), in.v = xt::cast<double>(v);
  in.grad_output = xt::cast<double>(dO);
  FlashOptions fo;
  fo.causal = true;
  fo.scale = alpha_of(in);
  fo.block_q = fo.block_k = 8;
  fo.score_mod = &in.options.score_mod;
  fo.temperature = c.temperature;
  const detail::SdpaF64 f = detail::sdpa_f64(in.q, in.k, in.v, nullptr, in.options);
  const detail::GradsF64 ref = detail::flash_backward_f64(in.q, in.k, in.v, nullptr, f.output, f.lse, in.grad_output, fo);
  std::size_t checked = 0;
  for (const char* isa : {"generic", "avx2", "avx512"}) {
    fo.isa = isa;
    try {
      flash_tiling(4, 4, fo);
    } catch (const InputError&) {
      continue;  // not on this CPU
    }
    CAPTURE(isa);
    fo.precision = FlashPrecision::float32;
    const SdpaGradients g = flash_backward(q, k, v, nullptr, flash_attention(q, k, v, nullptr, fo), dO, fo);
    // float32 rounding of scores near 1 and gradients near 1: a few ulps of 1e-7, summed over 29 keys.
    CHECK(max_abs(TensorD3(xt::cast<double>(g.grad_q)), ref.dq) < 2e-5);
    CHECK(max_abs(TensorD3(xt::cast<double>(g.grad_k)), ref.dk) < 2e-5);
    CHECK(max_abs(TensorD3(xt::cast<double>(g.grad_v)), ref.dv) < 2e-5);
    ++checked;
  }
  CHECK(checked >= 1);
}

TEST_CASE("backward: flash's result does not depend on the thread count") {
  const Inputs in = make_inputs({4, 2, 30, 40, 8, 8, true, true}, 7);
  const detail::SdpaF64 f = detail::sdpa_f64(in.q, in.k, in.v, in.allowed, in.options);
  FlashOptions fo;
  fo.causal = true;
  fo.scale = alpha_of(in);
  fo.block_q = fo.block_k = 8;
  fo.threads = 1;
  const detail::GradsF64 one = detail::flash_backward_f64(in.q, in.k, in.v, in.allowed, f.output, f.lse, in.grad_output, fo);
  fo.threads = 3;
  const detail::GradsF64 three = detail::flash_backward_f64(in.q, in.k, in.v, in.allowed, f.output, f.lse, in.grad_output, fo);
  CHECK(max_abs(one.dq, three.dq) == 0.0);
  CHECK(max_abs(one.dk, three.dk) == 0.0);
  CHECK(max_abs(one.dv, three.dv) == 0.0);
}

TEST_CASE("backward: the attention door picks the backend, float32 entry points agree") {
  Rng rng(5);
  auto randn = [&](std::size_t a, std::size_t b, std::size_t c) {
    Tensor3 t = Tensor3::from_shape({a, b, c});
    for (float& x : t) x = float(rng.normal());
    return t;
  };
  const Tensor3 q = randn(4, 11, 6), k = randn(2, 9, 6), v = randn(2, 9, 5), dO = randn(4, 11, 5);
  SdpaOptions so;
  so.causal = true;
  BackendOptions naive, flash;
  flash.backend = Backend::flash;
  flash.block_q = 4;
  flash.block_k = 3;
  const SdpaGradients a = attention_backward(q, k, v, nullptr, dO, so, naive);
  const SdpaGradients b = attention_backward(q, k, v, nullptr, dO, so, flash);
  const SdpaGradients c = sdpa_backward(q, k, v, nullptr, dO, so);
  FlashOptions fo;
  fo.causal = true;
  fo.precision = FlashPrecision::float64;
  const SdpaGradients d = flash_backward(q, k, v, nullptr, flash_attention(q, k, v, nullptr, fo), dO, fo);
  CHECK(a.grad_q.shape() == q.shape());
  CHECK(a.grad_k.shape() == k.shape());
  CHECK(a.grad_v.shape() == v.shape());
  for (const SdpaGradients* g : {&b, &c, &d}) {
    CHECK(xt::allclose(g->grad_q, a.grad_q, 1e-5, 1e-6));
    CHECK(xt::allclose(g->grad_k, a.grad_k, 1e-5, 1e-6));
    CHECK(xt::allclose(g->grad_v, a.grad_v, 1e-5, 1e-6));
  }
}

TEST_CASE("backward: what it refuses, with one InputError each") {
  const Tensor3 q = xt::ones<float>({2, 3, 4}), k = xt::ones<float>({2, 5, 4}), v = xt::ones<float>({2, 5, 3});
  const Tensor3 dO = xt::ones<float>({2, 3, 3});
  BackendOptions cuda;
  cuda.backend = Backend::cuda;
  if (!cuda_usable()) {  // on a machine with a GPU the CUDA backward runs (tests/cuda/ checks it)
    CHECK_THROWS_AS(attention_backward(q, k, v, nullptr, dO, {}, cuda), InputError);
    try {
      attention_backward(q, k, v, nullptr, dO, {}, cuda);
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find("no CUDA device") != std::string::npos);
    }
  }
  CHECK_THROWS_WITH_AS(sdpa_backward(q, k, v, nullptr, xt::ones<float>({2, 3, 4})),
                       "grad_output: expected shape [2, 3, 3], got [2, 3, 4]", InputError);
  SdpaOptions dropout;
  dropout.dropout_p = 0.1;
  CHECK_THROWS_AS(sdpa_backward(q, k, v, nullptr, dO, dropout), InputError);
  SdpaOptions softcap;  // differentiated by every backend; CUDA's answer here is only "no device"
  softcap.score_mod.softcap = variants::SoftCap{5.0};
  if (!cuda_usable()) {
    try {
      attention_backward(q, k, v, nullptr, dO, softcap, cuda);
      CHECK(false);
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find("no CUDA device") != std::string::npos);
    }
  }
}

TEST_CASE("backward: every variant through the door, flash against naive") {
  // Window with sinks, documents and prefix-LM read by index; soft-cap and ALiBi recomputed per
  // tile; causal, temperature and GQA on top: flash's float64 backward differs from naive's only
  // in the order of its sums.
  Rng rng(41);
  auto randn = [&](std::size_t a, std::size_t b, std::size_t c) {
    Tensor3 t = Tensor3::from_shape({a, b, c});
    for (float& x : t) x = float(2 * rng.normal());
    return t;
  };
  const std::size_t L = 19;
  const Tensor3 q = randn(4, L, 6), k = randn(2, L, 6), v = randn(2, L, 5), dO = randn(4, L, 5);
  std::vector<SdpaOptions> variants(4);
  variants[0].mask_mod.window = variants::SlidingWindow{4, 0, /*sinks=*/2};
  variants[0].score_mod.softcap = variants::SoftCap{1.3};
  variants[1].mask_mod.prefix = variants::PrefixLM{6};
  variants[1].score_mod.alibi = variants::AlibiBias{{0.5, 0.25, 0.125, 0.0625}};
  variants[1].temperature = 1.7;
  std::vector<std::int64_t> documents;
  for (std::size_t i = 0; i < L; ++i) documents.push_back(std::int64_t(i / 7));
  variants[2].mask_mod.segments = variants::Documents{documents, documents};
  variants[2].causal = true;
  variants[2].score_mod.softcap = variants::SoftCap{0.9};
  variants[2].score_mod.alibi = variants::AlibiBias{{0.3, 0.3, 0.1, 0.1}};
  variants[3] = variants[0];
  variants[3].causal = true;
  variants[3].scale = 0.0;  // every score is the modifier's own: softcap(0) + the ALiBi bias
  variants[3].score_mod.alibi = variants::AlibiBias{{1.0, 0.5, 0.25, 0.125}};
  BackendOptions naive, flash;
  flash.backend = Backend::flash;
  flash.block_q = 4;
  flash.block_k = 5;
  for (std::size_t n = 0; n < variants.size(); ++n) {
    CAPTURE(n);
    const SdpaGradients a = attention_backward(q, k, v, nullptr, dO, variants[n], naive);
    const SdpaGradients b = attention_backward(q, k, v, nullptr, dO, variants[n], flash);
    CHECK(xt::amax(xt::abs(a.grad_v))() > 1e-3);  // the gradients are not all zero (with scale 0
    if (n < 3) CHECK(xt::amax(xt::abs(a.grad_q))() > 1e-3);  // no score depends on q or k)
    CHECK(xt::allclose(b.grad_q, a.grad_q, 1e-5, 1e-6));
    CHECK(xt::allclose(b.grad_k, a.grad_k, 1e-5, 1e-6));
    CHECK(xt::allclose(b.grad_v, a.grad_v, 1e-5, 1e-6));
  }
}
