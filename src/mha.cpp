#include "attn/mha.hpp"

#include "attn/error.hpp"
#include "sdpa_f64.hpp"

namespace attn {
namespace {

using detail::TensorD1;
using detail::TensorD2;
using detail::TensorD3;

void expect_shape(const std::string& field, const Shape& actual, const Shape& expected) {
  if (actual != expected) {
    throw InputError(field + ": expected shape " + shape_string(expected) + ", got " +
                     shape_string(actual));
  }
}

template <class T>
Shape shape_of(const T& t) {
  return Shape(t.shape().begin(), t.shape().end());
}

struct HeadLayout {
  std::size_t D, H, Hkv, d;
};

HeadLayout check_heads(std::size_t D, const MhaOptions& o) {
  const std::size_t H = o.num_heads, Hkv = o.num_kv_heads ? o.num_kv_heads : o.num_heads;
  if (H == 0) throw InputError("num_heads: expected an integer >= 1, got 0");
  if (D % H != 0) {
    throw InputError("num_heads: " + std::to_string(H) + " does not divide the model dim D = " +
                     std::to_string(D));
  }
  if (Hkv == 0 || H % Hkv != 0) {
    throw InputError("num_kv_heads: expected a divisor of num_heads = " + std::to_string(H) +
                     ", got " + std::to_string(Hkv));
  }
  return {D, H, Hkv, D / H};
}

// [L, heads * d] -> [heads, L, d]: head h takes columns h*d .. h*d + d - 1.
TensorD3 split_heads(const TensorD2& x, std::size_t heads) {
  const std::size_t L = x.shape(0), d = x.shape(1) / heads;
  TensorD3 out = TensorD3::from_shape({heads, L, d});
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t i = 0; i < L; ++i)
      for (std::size_t c = 0; c < d; ++c) out(h, i, c) = x(i, h * d + c);
  return out;
}

// [H, L, d] -> [L, H * d], the inverse of split_heads.
TensorD2 merge_heads(const TensorD3& x) {
  const std::size_t H = x.shape(0), L = x.shape(1), d = x.shape(2);
  TensorD2 out = TensorD2::from_shape({L, H * d});
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t i = 0; i < L; ++i)
      for (std::size_t c = 0; c < d; ++c) out(i, h * d + c) = x(h, i, c);
  return out;
}

std::optional<TensorD1> to_f64(const std::optional<Tensor1>& b) {
  if (!b) return std::nullopt;
  return TensorD1(xt::cast<double>(*b));
}

void check_bias(const std::string& field, const std::optional<Tensor1>& b, std::size_t out) {
  if (b) expect_shape(field, shape_of(*b), {out});
}

void check_mask(const Mask3* allowed, const HeadLayout& l, std::size_t Lq, std::size_t Lk) {
  if (!allowed) return;
  const Shape m = shape_of(*allowed);
  if (!(m[1] == Lq && m[2] == Lk && (m[0] == 1 || m[0] == l.H))) {
    throw InputError("mask: expected shape [" + std::to_string(Lq) + ", " + std::to_string(Lk) +
                     "] or [" + std::to_string(l.H) + ", " + std::to_string(Lq) + ", " +
                     std::to_string(Lk) + "], got " +
                     shape_string(m[0] == 1 ? Shape{m[1], m[2]} : m));
  }
}

// Attention on projected Q, K, V [L, *] and the output projection: the part mha and
// mha_fused share.
MhaResult attend_and_project(const TensorD2& Q, const TensorD2& K, const TensorD2& V,
                             const HeadLayout& l, const Tensor2& w_o,
                             const std::optional<Tensor1>& b_o, const Mask3* allowed,
                             const SdpaOptions& options) {
  const detail::SdpaF64 a = detail::sdpa_f64(split_heads(Q, l.H), split_heads(K, l.Hkv),
                                             split_heads(V, l.Hkv), allowed, options);
  const TensorD2 wo = xt::cast<double>(w_o);
  const std::optional<TensorD1> bo = to_f64(b_o);
  const TensorD2 y = detail::linear_f64(merge_heads(a.output), wo, bo ? &*bo : nullptr);
  return {xt::cast<float>(y), xt::cast<float>(a.weights), xt::cast<float>(a.lse)};
}

}  // namespace

MhaResult mha(const Tensor2& query, const Tensor2& key, const Tensor2& value,
              const MhaWeights& w, const Mask3* allowed, const MhaOptions& options) {
  const std::size_t Lq = query.shape(0), D = query.shape(1), Lk = key.shape(0);
  if (Lq == 0 || D == 0 || Lk == 0) {
    throw InputError("query, key: expected non-empty [L, D], got " + shape_string(query.shape()) +
                     " and " + shape_string(key.shape()));
  }
  const HeadLayout l = check_heads(D, options);
  const std::size_t Dkv = l.Hkv * l.d;
  expect_shape("key", shape_of(key), {Lk, D});
  expect_shape("value", shape_of(value), {Lk, D});
  expect_shape("w_q", shape_of(w.w_q), {D, D});
  expect_shape("w_k", shape_of(w.w_k), {Dkv, D});
  expect_shape("w_v", shape_of(w.w_v), {Dkv, D});
  expect_shape("w_o", shape_of(w.w_o), {D, D});
  check_bias("b_q", w.b_q, D);
  check_bias("b_k", w.b_k, Dkv);
  check_bias("b_v", w.b_v, Dkv);
  check_bias("b_o", w.b_o, D);
  check_mask(allowed, l, Lq, Lk);
  check_sdpa_options(options.attention);

  const auto bq = to_f64(w.b_q), bk = to_f64(w.b_k), bv = to_f64(w.b_v);
  const TensorD2 Q = detail::linear_f64(xt::cast<double>(query), xt::cast<double>(w.w_q),
                                        bq ? &*bq : nullptr);
  const TensorD2 K = detail::linear_f64(xt::cast<double>(key), xt::cast<double>(w.w_k),
                                        bk ? &*bk : nullptr);
  const TensorD2 V = detail::linear_f64(xt::cast<double>(value), xt::cast<double>(w.w_v),
                                        bv ? &*bv : nullptr);
  return attend_and_project(Q, K, V, l, w.w_o, w.b_o, allowed, options.attention);
}

FusedQkvWeights fuse_qkv(const MhaWeights& w) {
  FusedQkvWeights f;
  f.w_qkv = xt::concatenate(xt::xtuple(w.w_q, w.w_k, w.w_v), 0);
  if (w.b_q || w.b_k || w.b_v) {
    auto bias_or_zero = [](const std::optional<Tensor1>& b, std::size_t n) {
      return b ? *b : Tensor1(xt::zeros<float>({n}));
    };
    f.b_qkv = xt::concatenate(xt::xtuple(bias_or_zero(w.b_q, w.w_q.shape(0)),
                                         bias_or_zero(w.b_k, w.w_k.shape(0)),
                                         bias_or_zero(w.b_v, w.w_v.shape(0))),
                              0);
  }
  f.w_o = w.w_o;
  f.b_o = w.b_o;
  return f;
}

MhaResult mha_fused(const Tensor2& x, const FusedQkvWeights& w, const Mask3* allowed,
                    const MhaOptions& options) {
  const std::size_t L = x.shape(0), D = x.shape(1);
  const HeadLayout l = check_heads(D, options);
  const std::size_t Dkv = l.Hkv * l.d;
  expect_shape("w_qkv", shape_of(w.w_qkv), {D + 2 * Dkv, D});
  check_bias("b_qkv", w.b_qkv, D + 2 * Dkv);
  expect_shape("w_o", shape_of(w.w_o), {D, D});
  check_bias("b_o", w.b_o, D);
  check_mask(allowed, l, L, L);
  check_sdpa_options(options.attention);

  // One GEMM projects Q, K and V together; their columns are then views of the result.
  const auto b = to_f64(w.b_qkv);
  const TensorD2 qkv = detail::linear_f64(xt::cast<double>(x), xt::cast<double>(w.w_qkv),
                                          b ? &*b : nullptr);
  const TensorD2 Q = xt::view(qkv, xt::all(), xt::range(0, D));
  const TensorD2 K = xt::view(qkv, xt::all(), xt::range(D, D + Dkv));
  const TensorD2 V = xt::view(qkv, xt::all(), xt::range(D + Dkv, D + 2 * Dkv));
  return attend_and_project(Q, K, V, l, w.w_o, w.b_o, allowed, options.attention);
}

Tensor2 linear(const Tensor2& x, const Tensor2& w, const Tensor1* b) {
  if (x.shape(1) != w.shape(1)) {
    throw InputError("weight: expected shape [out, " + std::to_string(x.shape(1)) + "], got " +
                     shape_string(w.shape()));
  }
  if (b) expect_shape("bias", shape_of(*b), {w.shape(0)});
  const std::optional<TensorD1> bd = b ? std::optional<TensorD1>(xt::cast<double>(*b))
                                       : std::nullopt;
  return xt::cast<float>(detail::linear_f64(xt::cast<double>(x), xt::cast<double>(w),
                                            bd ? &*bd : nullptr));
}

}  // namespace attn

#include "attn/random.hpp"

namespace attn {

MhaWeights init_mha_weights(std::size_t D, std::size_t num_heads, std::size_t num_kv_heads,
                            std::uint64_t seed, bool with_bias) {
  MhaOptions o;
  o.num_heads = num_heads;
  o.num_kv_heads = num_kv_heads;
  const HeadLayout l = check_heads(D, o);
  const std::size_t Dkv = l.Hkv * l.d;
  Rng rng(seed);
  const double bound = 1.0 / std::sqrt(static_cast<double>(D));
  auto draw = [&](Shape shape) {
    Tensor1 t = Tensor1::from_shape({shape[0] * (shape.size() > 1 ? shape[1] : 1)});
    for (float& x : t) x = static_cast<float>(rng.uniform(-bound, bound));
    return t;
  };
  auto matrix = [&](std::size_t out) { return Tensor2(xt::reshape_view(draw({out, D}), {out, D})); };
  MhaWeights w{matrix(D), matrix(Dkv), matrix(Dkv), matrix(D), {}, {}, {}, {}};
  if (with_bias) {
    w.b_q = draw({D});
    w.b_k = draw({Dkv});
    w.b_v = draw({Dkv});
    w.b_o = draw({D});
  }
  return w;
}

}  // namespace attn
