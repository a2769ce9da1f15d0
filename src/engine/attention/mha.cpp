#include "attn/engine/attention/mha.hpp"

#include <span>

#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/kv_cache.hpp"
#include "mha_parts.hpp"
#include "sdpa_f64.hpp"

namespace attn {
// The pieces mha_backward.cpp shares (mha_parts.hpp); the others are private to this file.
namespace detail {

void expect_shape(const std::string& field, const Shape& actual, const Shape& expected) {
  if (actual != expected) {
    throw InputError(field + ": expected shape " + shape_string(expected) + ", got " +
                     shape_string(actual));
  }
}


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

// Rotates x [heads, L, d] in place, row l of every head to positions[l] (rope.hpp).
void rotate_heads(TensorD3& x, std::span<const std::int64_t> positions, const RopeOptions& rope) {
  const std::span<double> rows(x.data(), x.size());
  if (rope.frequencies.empty()) apply_rope_inplace(rows, x.shape(2), positions, rope.base, rope.style);
  else apply_rope_inplace(rows, x.shape(2), positions, rope.frequencies, rope.style);
}

// concat_h(O_h) W_o^T + b_o: [H, L, d] -> [L, D].
TensorD2 output_projection(const TensorD3& o, const Tensor2& w_o, const std::optional<Tensor1>& b_o) {
  const std::optional<TensorD1> bo = to_f64(b_o);
  return linear_f64(merge_heads(o), xt::cast<double>(w_o), bo ? &*bo : nullptr);
}

// Attention on projected Q, K, V [L, *] and the output projection: the part mha and
// mha_fused share. RoPE turns q and k after the split into heads, before the scores.
MhaResult attend_and_project(const TensorD2& Q, const TensorD2& K, const TensorD2& V,
                             const HeadLayout& l, const Tensor2& w_o,
                             const std::optional<Tensor1>& b_o, const Mask3* allowed,
                             const MhaOptions& options) {
  TensorD3 q = split_heads(Q, l.H), k = split_heads(K, l.Hkv);
  if (options.rope) {
    const std::size_t Lq = Q.shape(0), Lk = K.shape(0);
    rotate_heads(q, rope_query_positions(*options.rope, Lq), *options.rope);
    rotate_heads(k, rope_key_positions(*options.rope, Lq, Lk), *options.rope);
  }
  const detail::SdpaF64 a =
      detail::attend_f64(q, k, split_heads(V, l.Hkv), allowed, options.attention, options.backend,
                         options.with_weights);
  const TensorD2 y = output_projection(a.output, w_o, b_o);
  detail::check_lse_fits_float32(a.lse);
  return {xt::cast<float>(y), xt::cast<float>(a.weights), xt::cast<float>(a.lse)};
}

// Every check of mha() on its inputs; returns the head layout.
HeadLayout check_mha(const Tensor2& query, const Tensor2& key, const Tensor2& value,
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
  check_sdpa_options(options.attention, l.H);
  if (options.rope) check_rope(*options.rope, l.d, Lq, Lk);
  return l;
}

// y = x W^T + b in float64, for rows [first, first + count) of x.
TensorD2 project_rows(const TensorD2& x, std::size_t first, std::size_t count, const Tensor2& w,
                      const std::optional<Tensor1>& b) {
  const std::optional<TensorD1> bd = to_f64(b);
  const TensorD2 rows = xt::view(x, xt::range(first, first + count), xt::all());
  return linear_f64(rows, xt::cast<double>(w), bd ? &*bd : nullptr);
}

}  // namespace detail

using namespace detail;  // this file is where those pieces live

MhaResult mha(const Tensor2& query, const Tensor2& key, const Tensor2& value,
              const MhaWeights& w, const Mask3* allowed, const MhaOptions& options) {
  const HeadLayout l = check_mha(query, key, value, w, allowed, options);
  const TensorD2 xq = xt::cast<double>(query), xk = xt::cast<double>(key),
                 xv = xt::cast<double>(value);
  const TensorD2 Q = project_rows(xq, 0, xq.shape(0), w.w_q, w.b_q);
  const TensorD2 K = project_rows(xk, 0, xk.shape(0), w.w_k, w.b_k);
  const TensorD2 V = project_rows(xv, 0, xv.shape(0), w.w_v, w.b_v);
  return attend_and_project(Q, K, V, l, w.w_o, w.b_o, allowed, options);
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
  check_sdpa_options(options.attention, l.H);
  if (options.rope) check_rope(*options.rope, l.d, L, L);

  // One GEMM projects Q, K and V together; their columns are then views of the result.
  const auto b = to_f64(w.b_qkv);
  const TensorD2 qkv = linear_f64(xt::cast<double>(x), xt::cast<double>(w.w_qkv),
                                          b ? &*b : nullptr);
  const TensorD2 Q = xt::view(qkv, xt::all(), xt::range(0, D));
  const TensorD2 K = xt::view(qkv, xt::all(), xt::range(D, D + Dkv));
  const TensorD2 V = xt::view(qkv, xt::all(), xt::range(D + Dkv, D + 2 * Dkv));
  return attend_and_project(Q, K, V, l, w.w_o, w.b_o, allowed, options);
}

namespace {

// allowed[:, rows, cols] as a new [1 or H, |rows|, |cols|] mask (null stays null).
std::optional<Mask3> slice_mask(const Mask3* allowed, std::size_t row0, std::size_t rows,
                                std::size_t col0, std::size_t cols) {
  if (!allowed) return std::nullopt;
  return Mask3(xt::view(*allowed, xt::all(), xt::range(row0, row0 + rows),
                        xt::range(col0, col0 + cols)));
}

// Token i's row of x [heads, n, d], all heads: the [heads, d] slice the cache stores.
std::vector<double> token_heads(const TensorD3& x, std::size_t i) {
  const std::size_t heads = x.shape(0), d = x.shape(2);
  std::vector<double> out(heads * d);
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t c = 0; c < d; ++c) out[h * d + c] = x(h, i, c);
  return out;
}

}  // namespace

namespace {

// The tokens a causal decode step can still see when the mask is a sliding window alone: the
// query and `left` keys before it (Mistral's rolling buffer keeps just those). 0 = keep every
// token: sinks, documents, a prefix or a strided pattern still read older keys.
std::size_t cache_window(const AttentionMask& m) {
  const bool window_alone = m.window && m.window->sinks == 0 && !m.segments && !m.prefix && !m.stride;
  return window_alone ? m.window->left + 1 : 0;
}

}  // namespace

MhaDecodeResult mha_decode(const Tensor2& x, const MhaWeights& w, const Mask3* allowed,
                           const MhaOptions& options, std::size_t prefill) {
  // x [L, D] -> output [L, D], weights [H, L, L], lse [H, L]
  const HeadLayout l = check_mha(x, x, x, w, allowed, options);
  const std::size_t L = x.shape(0), H = l.H;
  if (prefill > L) {
    throw InputError("decode_from: expected 0 <= P <= Lq = " + std::to_string(L) + ", got " +
                     std::to_string(prefill));
  }
  if (!options.attention.causal) {
    throw InputError("decode_from: KV-cache decoding is causal self-attention; set \"causal\": true");
  }
  if (options.attention.dropout_p > 0.0) {
    throw InputError("decode_from: dropout must be off (it would draw its random numbers in a "
                     "different order than the one-shot run)");
  }
  std::vector<std::int64_t> q_pos, k_pos;
  if (options.rope) {
    q_pos = rope_query_positions(*options.rope, L);
    k_pos = rope_key_positions(*options.rope, L, L);
  }

  MhaDecodeResult r;
  r.result = {Tensor2::from_shape({L, l.D}), xt::zeros<float>({H, L, L}),
              Tensor2::from_shape({H, L})};
  KvCache cache(l.Hkv, l.d, cache_window(options.attention.mask_mod), options.kv_dtype);
  const TensorD2 xd = xt::cast<double>(x);

  // Step 0 is the prefill chunk [0, P) (skipped when P = 0); then one token per step.
  for (std::size_t first = 0; first < L;) {
    const std::size_t count = first == 0 && prefill > 0 ? prefill : 1;
    // Project only the new tokens: the keys and values of earlier ones are in the cache.
    TensorD3 q = split_heads(project_rows(xd, first, count, w.w_q, w.b_q), H);
    TensorD3 k = split_heads(project_rows(xd, first, count, w.w_k, w.b_k), l.Hkv);
    TensorD3 v = split_heads(project_rows(xd, first, count, w.w_v, w.b_v), l.Hkv);
    if (options.rope) {  // rotate before caching: the cache holds rotated keys
      rotate_heads(q, std::span(q_pos).subspan(first, count), *options.rope);
      rotate_heads(k, std::span(k_pos).subspan(first, count), *options.rope);
    }
    if (options.kv_dtype != KvDtype::float64)  // the prefill chunk reads them as the cache holds them
      for (TensorD3* t : {&k, &v})
        for (double& e : *t) e = kv_stored_value(options.kv_dtype, e);
    // The prefill chunk attends among its own tokens (with a window shorter than P the cache
    // will not keep them all); a decoded token attends to everything the cache holds, itself
    // included. Either way its queries are the last `count` of the keys: bottom-right causal.
    for (std::size_t i = 0; i < count; ++i) cache.append(token_heads(k, i), token_heads(v, i));
    const std::size_t key0 = first == 0 ? 0 : cache.first_position();
    const std::optional<Mask3> mask = slice_mask(allowed, first, count, key0, first + count - key0);
    const detail::SdpaF64 a =
        first == 0 ? detail::attend_f64(q, k, v, mask ? &*mask : nullptr, options.attention, options.backend)
                   : detail::attend_f64(q, cache.keys_tensor(), cache.values_tensor(),
                                        mask ? &*mask : nullptr, options.attention, options.backend);
    detail::check_lse_fits_float32(a.lse);
    const TensorD2 y = output_projection(a.output, w.w_o, w.b_o);
    const std::size_t nk = a.weights.shape(2);
    for (std::size_t i = 0; i < count; ++i) {
      for (std::size_t c = 0; c < l.D; ++c) r.result.output(first + i, c) = static_cast<float>(y(i, c));
      for (std::size_t h = 0; h < H; ++h) {
        r.result.lse(h, first + i) = static_cast<float>(a.lse(h, i));
        for (std::size_t j = 0; j < nk; ++j)
          r.result.weights(h, first + i, key0 + j) = static_cast<float>(a.weights(h, i, j));
      }
    }
    r.steps.push_back({first, count, cache.length(), cache.bytes()});
    first += count;
  }
  r.kv_cache_len = cache.length();
  return r;
}

}  // namespace attn

#include "attn/engine/core/random.hpp"

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
