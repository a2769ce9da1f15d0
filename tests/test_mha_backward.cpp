// The backward pass of multi-head attention (mha.hpp's mha_backward) against central finite
// differences of a float64 forward: projections with biases, RoPE in both styles, GQA/MQA,
// causal, a mask with a fully masked row, cross-attention; naive and flash backends.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include "attn/engine/attention/cuda.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/core/linear.hpp"
#include "attn/engine/attention/mha.hpp"
#include "attn/engine/core/random.hpp"
#include "engine/attention/mha_parts.hpp"  // the forward's float64 steps, to differentiate numerically
#include "support.hpp"

using namespace attn;

namespace {

// Everything the loss depends on, in float64 (the values of the float32 inputs).
struct Params {
  TensorD2 query, key, value, w_q, w_k, w_v, w_o;
  TensorD1 b_q, b_k, b_v, b_o;
};

struct Case {
  std::size_t D, H, Hkv, Lq, Lk;
  bool self = true, causal = false, biases = false, mask = false;
  std::optional<RopeStyle> rope;
  Backend backend = Backend::naive;
};

// The loss sum(dy o y) with y = mha(...) from mha()'s own float64 steps, with the naive
// attention (the forward is tested against NumPy elsewhere; here it is the function whose
// derivative the backward must be).
double loss(const Params& p, const Case& c, const MhaOptions& o, const Mask3* allowed, const TensorD2& dy) {
  const TensorD2& key = c.self ? p.query : p.key;
  const TensorD2& value = c.self ? p.query : p.value;
  auto bias = [&](const TensorD1& b) { return c.biases ? &b : nullptr; };
  TensorD3 q = split_heads(linear_f64(p.query, p.w_q, bias(p.b_q)), c.H);
  TensorD3 k = split_heads(linear_f64(key, p.w_k, bias(p.b_k)), c.Hkv);
  const TensorD3 v = split_heads(linear_f64(value, p.w_v, bias(p.b_v)), c.Hkv);
  if (o.rope) {
    detail::rotate_heads(q, rope_query_positions(*o.rope, c.Lq), *o.rope);
    detail::rotate_heads(k, rope_key_positions(*o.rope, c.Lq, key.shape(0)), *o.rope);
  }
  const detail::SdpaF64 a = detail::attend_f64(q, k, v, allowed, o.attention, {});
  const TensorD2 y = linear_f64(merge_heads(a.output), p.w_o, bias(p.b_o));
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) s += y.data()[i] * dy.data()[i];
  return s;
}

TensorD2 d64(const Tensor2& t) { return xt::cast<double>(t); }
TensorD1 d64(const Tensor1& t) { return xt::cast<double>(t); }

// Central differences of loss() in x, one element at a time; compared with `analytic`.
template <class T, class G>
void check_gradient(const char* name, T& x, const G& analytic, const std::function<double()>& f) {
  CAPTURE(name);
  REQUIRE(analytic.size() == x.size());
  constexpr double e = 1e-5;
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double saved = x.data()[i];
    x.data()[i] = saved + e;
    const double up = f();
    x.data()[i] = saved - e;
    const double down = f();
    x.data()[i] = saved;
    const double numeric = (up - down) / (2 * e), a = analytic.data()[i];
    worst = std::max(worst, std::fabs(numeric - a) / std::max(1.0, std::fabs(numeric)));
  }
  CAPTURE(worst);
  CHECK(worst < 2e-6);  // the analytic gradient is rounded to float32 once (~6e-8 relative)
}

void check_case(const Case& c, std::uint64_t seed) {
  CAPTURE(c.D);
  CAPTURE(c.H);
  CAPTURE(c.Hkv);
  CAPTURE(c.self);
  CAPTURE(c.causal);
  CAPTURE(c.biases);
  CAPTURE(c.mask);
  CAPTURE(c.rope.has_value());
  CAPTURE(backend_name(c.backend));
  Rng rng(seed);
  auto matrix = [&](std::size_t rows, std::size_t cols, double sd) {
    Tensor2 t = Tensor2::from_shape({rows, cols});
    for (float& x : t) x = float(rng.normal() * sd);
    return t;
  };
  auto vector = [&](std::size_t n) {
    Tensor1 t = Tensor1::from_shape({n});
    for (float& x : t) x = float(rng.normal() * 0.3);
    return t;
  };
  const std::size_t Lk = c.self ? c.Lq : c.Lk, Dkv = c.Hkv * (c.D / c.H);
  const double w_sd = 1.0 / std::sqrt(double(c.D));
  const Tensor2 query = matrix(c.Lq, c.D, 1.0), key = matrix(Lk, c.D, 1.0), value = matrix(Lk, c.D, 1.0);
  MhaWeights w{matrix(c.D, c.D, w_sd), matrix(Dkv, c.D, w_sd), matrix(Dkv, c.D, w_sd), matrix(c.D, c.D, w_sd),
               {}, {}, {}, {}};
  if (c.biases) w = {w.w_q, w.w_k, w.w_v, w.w_o, vector(c.D), vector(Dkv), vector(Dkv), vector(c.D)};
  const Tensor2 dy = matrix(c.Lq, c.D, 1.0);

  MhaOptions o;
  o.num_heads = c.H;
  o.num_kv_heads = c.Hkv;
  o.attention.causal = c.causal;
  o.backend.backend = c.backend;
  o.backend.block_q = o.backend.block_k = 2;  // flash: several tiles even at these sizes
  if (c.backend == Backend::naive) o.backend.block_q = o.backend.block_k = 0;
  if (c.rope) {
    o.rope = RopeOptions{500.0, *c.rope, {}, {}};
    if (c.self) {
      for (std::size_t i = 0; i < c.Lq; ++i) o.rope->position_ids.push_back(std::int64_t(3 * i + 1));
    } else {  // cross-attention: the keys are a sequence of their own, at 0..Lk-1
      for (std::size_t j = 0; j < Lk; ++j) o.rope->key_position_ids.push_back(std::int64_t(j));
    }
  }
  Mask3 mask;
  if (c.mask) {
    mask = Mask3::from_shape({1, c.Lq, Lk});
    for (bool& b : mask) b = rng.uniform() < 0.7;
    for (std::size_t j = 0; j < Lk; ++j) mask(0, 0, j) = false;  // a fully masked row
  }
  const Mask3* allowed = c.mask ? &mask : nullptr;

  const MhaGradients g = c.self ? mha_self_backward(query, w, allowed, dy, o)
                                : mha_backward(query, key, value, w, allowed, dy, o);
  CHECK(g.grad_b_q.has_value() == c.biases);
  CHECK(g.grad_b_o.has_value() == c.biases);
  CHECK(g.grad_key.size() == (c.self ? 0 : Lk * c.D));

  Params p{d64(query), d64(key), d64(value), d64(w.w_q), d64(w.w_k), d64(w.w_v), d64(w.w_o), {}, {}, {}, {}};
  if (c.biases) p.b_q = d64(*w.b_q), p.b_k = d64(*w.b_k), p.b_v = d64(*w.b_v), p.b_o = d64(*w.b_o);
  const TensorD2 dyd = d64(dy);
  auto f = [&] { return loss(p, c, o, allowed, dyd); };
  check_gradient("query", p.query, g.grad_query, f);
  if (!c.self) {
    check_gradient("key", p.key, g.grad_key, f);
    check_gradient("value", p.value, g.grad_value, f);
  }
  check_gradient("w_q", p.w_q, g.grad_w_q, f);
  check_gradient("w_k", p.w_k, g.grad_w_k, f);
  check_gradient("w_v", p.w_v, g.grad_w_v, f);
  check_gradient("w_o", p.w_o, g.grad_w_o, f);
  if (c.biases) {
    check_gradient("b_q", p.b_q, *g.grad_b_q, f);
    check_gradient("b_k", p.b_k, *g.grad_b_k, f);
    check_gradient("b_v", p.b_v, *g.grad_b_v, f);
    check_gradient("b_o", p.b_o, *g.grad_b_o, f);
  }
}

}  // namespace

TEST_CASE("mha backward: matches finite differences (biases, RoPE, GQA, causal, mask, cross, naive and flash)") {
  //        D  H  Hkv Lq Lk  self   causal biases mask   rope                    backend
  const Case cases[] = {
      {4, 2, 2, 3, 0, true, false, true, false, {}, Backend::naive},
      {8, 4, 2, 5, 0, true, true, true, false, RopeStyle::Half, Backend::naive},         // GQA, causal, RoPE half
      {8, 4, 2, 5, 0, true, true, true, false, RopeStyle::Half, Backend::flash},
      {4, 2, 1, 4, 0, true, true, false, false, RopeStyle::Interleaved, Backend::naive}, // MQA, interleaved
      {4, 2, 1, 4, 0, true, true, false, false, RopeStyle::Interleaved, Backend::flash},
      {4, 2, 1, 3, 5, false, false, true, true, RopeStyle::Half, Backend::naive},        // cross, mask
      {4, 2, 1, 3, 5, false, true, true, true, RopeStyle::Interleaved, Backend::flash},  // cross, causal
      {6, 3, 3, 4, 2, false, false, false, false, {}, Backend::flash},                   // cross, Lq > Lk
  };
  std::uint64_t seed = 40;
  for (const Case& c : cases) check_case(c, seed++);
}

TEST_CASE("mha backward: bad grad_output and unsupported options are InputErrors") {
  const MhaWeights w = init_mha_weights(4, 2, 2, 1, true);
  const Tensor2 x = xt::ones<float>({3, 4});
  MhaOptions o;
  o.num_heads = 2;
  CHECK_THROWS_WITH_AS(mha_self_backward(x, w, nullptr, xt::ones<float>({3, 5}), o),
                       "grad_output: expected shape [3, 4], got [3, 5]", InputError);
  o.attention.dropout_p = 0.2;
  CHECK_THROWS_AS(mha_self_backward(x, w, nullptr, xt::ones<float>({3, 4}), o), InputError);
  o.attention.dropout_p = 0;
  o.backend.backend = Backend::cuda;  // without a GPU: the device's absence, as one InputError
  if (!cuda_usable()) CHECK_THROWS_AS(mha_self_backward(x, w, nullptr, xt::ones<float>({3, 4}), o), InputError);
}
