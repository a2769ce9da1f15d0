// A Llama-family decoder's forward pass (decoder_model.hpp), top-down: embed, layers, norm, logits.
#include "attn/engine/models/decoder_model.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numbers>
#include <numeric>
#include <span>

#include "attn/engine/attention/attention.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/core/linear.hpp"
#include "attn/engine/positions/rope.hpp"
#include "core/finite_stream.hpp"
#include "decoder_parts.hpp"

namespace attn {
namespace detail {

Tensor3 decoder_rotated(const Tensor3& heads, std::size_t first_position, const RopeOptions& rope) {
  std::vector<std::int64_t> positions(heads.shape(1));
  std::iota(positions.begin(), positions.end(), std::int64_t(first_position));
  return apply_rope(heads, positions, rope);
}

Tensor3 decoder_rotated_heads(const Tensor2& x, std::size_t heads, std::size_t first_position,
                              const RopeOptions& rope) {
  return decoder_rotated(split_heads(x, heads), first_position, rope);
}

SdpaOptions decoder_attention_options(const DecoderConfig& c, std::size_t layer) {
  SdpaOptions so;
  so.causal = true;  // bottom-right aligned: a decode step's queries are the last positions; scale 1/sqrt(d)
  if (c.sliding_window > 0 && layer >= c.window_first_layer) {
    so.mask_mod.window = variants::SlidingWindow{c.sliding_window - 1, 0, c.attention_sinks};
  }
  return so;
}

BackendOptions decoder_backend(std::size_t threads) {
  BackendOptions bo;
  bo.backend = Backend::flash;
  bo.precision = FlashPrecision::float32;
  bo.threads = threads;
  return bo;
}

Tensor2 decoder_product(const Tensor2& x, const StoredMatrix& m, const float* bias, const DecoderStoredWeights& store,
                        std::size_t layer, std::size_t which, std::size_t threads, Activation activation) {
  const std::size_t L = x.shape(0);
  Tensor2 y = Tensor2::from_shape({L, m.rows});
  if (L <= kStoredMatmulRows) {
    store.check_finite(layer);
    stored_matmul(x.data(), L, m, bias, y.data(), m.rows, threads);
    if (activation) activation(y.data(), y.size());
  } else if (!stored_gemm(x.data(), L, m, StoredLayout::out_in, bias, y.data(), m.rows, threads, activation)) {
    store.non_finite(layer, which);
  }
  return y;
}

Tensor2 DecoderProjections::operator()(const Tensor2& x, Matrix which, Activation activation) const {
  static constexpr StoredMatrix DecoderStoredLayer::*kStored[] = {
      &DecoderStoredLayer::w_q,    &DecoderStoredLayer::w_k,  &DecoderStoredLayer::w_v,   &DecoderStoredLayer::w_o,
      &DecoderStoredLayer::w_gate, &DecoderStoredLayer::w_up, &DecoderStoredLayer::w_down};
  const Tensor1 none;
  const Tensor1& bias = which == q ? w_.b_q : which == k ? w_.b_k : which == v ? w_.b_v : none;
  return decoder_product(x, stored_.*kStored[which], bias.size() ? bias.data() : nullptr, store_, layer_,
                         std::size_t(which), threads_, activation);
}

Tensor2 decoder_mlp(const DecoderProjections& w, const Tensor2& h) {
  // SiLU in float, applied by the gate's product on its threads as its outputs are done (after
  // it, in double, it was 2.9 million exps on one thread in a 64-token SmolLM2-135M pass).
  Tensor2 gate = w(h, DecoderProjections::gate, silu);
  const Tensor2 up = w(h, DecoderProjections::up);
  for (std::size_t i = 0; i < gate.size(); ++i) gate.data()[i] *= up.data()[i];
  return w(gate, DecoderProjections::down);
}

Tensor2 decoder_embed(const DecoderModel& model, const std::vector<std::int32_t>& ids) {
  const std::size_t D = model.config.hidden;
  Tensor2 x = Tensor2::from_shape({ids.size(), D});
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || std::size_t(ids[i]) >= model.config.vocab)
      throw InputError("tokens: id " + std::to_string(ids[i]) + " is outside the vocabulary [0, " +
                       std::to_string(model.config.vocab) + ")");
    model.stored->widen_embed_rows(std::size_t(ids[i]), 1, x.data() + i * D);
  }
  return x;
}

Tensor2 decoder_unembed(const DecoderModel& model, const Tensor2& x, std::size_t threads) {
  return decoder_product(x, model.stored->stored_lm_head(), nullptr, *model.stored, model.config.layers, 0, threads);
}

}  // namespace detail

namespace {

// [Hkv, L, d] -> [H, L, d]: key/value head h / (H / Hkv) for query head h.
Tensor3 repeated_for_query_heads(const Tensor3& kv, std::size_t heads) {
  const std::size_t group = heads / kv.shape(0);
  Tensor3 out = Tensor3::from_shape({heads, kv.shape(1), kv.shape(2)});
  for (std::size_t h = 0; h < heads; ++h) xt::view(out, h) = xt::view(kv, h / group);
  return out;
}

// The attention half of a layer on h = rms_norm(x) * input_layernorm: its output [L, D]; its
// weights [H, L, L] into out.attention[layer] (and q, k, v with keep_qkv).
Tensor2 attention_branch(const detail::DecoderProjections& w, const Tensor2& h, const DecoderConfig& c,
                         std::size_t layer, const RopeOptions& rope, std::size_t threads, DecoderForward& out,
                         bool keep_qkv) {
  using namespace detail;
  using P = DecoderProjections;
  const Tensor3 q_raw = split_heads(w(h, P::q), c.heads), k_raw = split_heads(w(h, P::k), c.kv_heads);
  const Tensor3 q = decoder_rotated(q_raw, 0, rope), k = decoder_rotated(k_raw, 0, rope);
  const Tensor3 v = split_heads(w(h, P::v), c.kv_heads);
  SdpaResult r = attention(q, k, v, nullptr, decoder_attention_options(c, layer), decoder_backend(threads),
                           /*with_weights=*/true);
  out.attention[layer] = std::move(r.weights);
  if (keep_qkv) {
    out.q.push_back(q);
    out.k.push_back(repeated_for_query_heads(k, c.heads));
    out.v.push_back(repeated_for_query_heads(v, c.heads));
    out.q_raw.push_back(q_raw);
    out.k_raw.push_back(repeated_for_query_heads(k_raw, c.heads));
  }
  return w(merge_heads(r.output), P::o);
}

}  // namespace

DecoderLayer unfilled_decoder_layer(const DecoderConfig& c) {
  const std::size_t D = c.hidden, Q = c.heads * c.head_dim, KV = c.kv_heads * c.head_dim, I = c.intermediate;
  DecoderLayer w;
  w.input_norm = Tensor1::from_shape({D});
  w.post_norm = Tensor1::from_shape({D});
  w.w_q = Tensor2::from_shape({Q, D});
  w.w_k = Tensor2::from_shape({KV, D});
  w.w_v = Tensor2::from_shape({KV, D});
  w.w_o = Tensor2::from_shape({D, Q});
  if (c.qkv_bias) {
    w.b_q = Tensor1::from_shape({Q});
    w.b_k = Tensor1::from_shape({KV});
    w.b_v = Tensor1::from_shape({KV});
  }
  w.w_gate = Tensor2::from_shape({I, D});
  w.w_up = Tensor2::from_shape({I, D});
  w.w_down = Tensor2::from_shape({D, I});
  return w;
}

DecoderLayer unfilled_decoder_vectors(const DecoderConfig& c) {
  const std::size_t D = c.hidden, Q = c.heads * c.head_dim, KV = c.kv_heads * c.head_dim;
  DecoderLayer w;
  w.input_norm = Tensor1::from_shape({D});
  w.post_norm = Tensor1::from_shape({D});
  if (c.qkv_bias) {
    w.b_q = Tensor1::from_shape({Q});
    w.b_k = Tensor1::from_shape({KV});
    w.b_v = Tensor1::from_shape({KV});
  }
  return w;
}

std::vector<double> decoder_rope_frequencies(const DecoderConfig& c) {
  std::vector<double> theta = rope_frequencies(c.head_dim, c.rope_theta);
  const RopeScaling& s = c.rope_scaling;
  if (s.type == "linear")
    for (double& t : theta) t /= s.factor;
  if (s.type != "llama3") return theta;
  const double old_context = double(s.original_max_positions);
  const double low_wavelength = old_context / s.low_freq_factor, high_wavelength = old_context / s.high_freq_factor;
  for (double& t : theta) {
    const double wavelength = 2 * std::numbers::pi / t;
    if (wavelength > low_wavelength) {
      t /= s.factor;  // low frequencies: stretched to the new context
    } else if (wavelength >= high_wavelength) {  // between: a smooth blend of the two
      const double smooth = (old_context / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      t = (1 - smooth) * t / s.factor + smooth * t;
    }
  }
  return theta;
}

Tensor2 rms_norm(const Tensor2& x, const Tensor1& weight, double eps) {
  const std::size_t L = x.shape(0), D = x.shape(1);
  Tensor2 y = Tensor2::from_shape({L, D});
  for (std::size_t i = 0; i < L; ++i) {
    const float* row = x.data() + i * D;
    double sum = 0;
    for (std::size_t j = 0; j < D; ++j) sum += double(row[j]) * row[j];
    const float inv = float(1 / std::sqrt(sum / double(D) + eps));
    for (std::size_t j = 0; j < D; ++j) y(i, j) = weight(j) * (row[j] * inv);
  }
  return y;
}

Mask2 decoder_visible(const DecoderConfig& c, std::size_t layer, std::size_t n) {
  const SdpaOptions so = detail::decoder_attention_options(c, layer);
  Mask2 visible = so.mask_mod.any() ? so.mask_mod.allowed(n, n) : Mask2(xt::ones<bool>({n, n}));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) visible(i, j) = false;
  return visible;
}

double decoder_forward_flops(const DecoderConfig& c, std::size_t n) {
  const double N = double(n), D = double(c.hidden), I = double(c.intermediate), V = double(c.vocab);
  const double H = double(c.heads), Hkv = double(c.kv_heads), d = double(c.head_dim);
  const double per_token_layer = 2 * D * (2 * H * d + 2 * Hkv * d) + 2 * 3 * D * I;
  return double(c.layers) * (N * per_token_layer + 4 * H * d * N * (N + 1) / 2) + N * 2 * D * V;
}

DecoderForward decoder_forward(const DecoderModel& model, const std::vector<std::int32_t>& ids, std::size_t threads,
                               bool keep_qkv) {
  const DecoderConfig& c = model.config;
  if (ids.empty()) throw InputError("tokens: expected at least one token");
  if (ids.size() > c.max_positions)
    throw InputError("tokens: " + std::to_string(ids.size()) + " is more than the model's max_position_embeddings " +
                     std::to_string(c.max_positions));
  RopeOptions rope;
  rope.frequencies = decoder_rope_frequencies(c);
  Tensor2 x = detail::decoder_embed(model, ids);
  DecoderForward out;
  out.attention.resize(c.layers);
  DecoderLayer w = unfilled_decoder_vectors(c);
  for (std::size_t l = 0; l < c.layers; ++l) {
    model.stored->widen_layer_vectors(l, w);
    const detail::DecoderProjections p(w, *model.stored, l, threads);
    const Tensor2 h = rms_norm(x, w.input_norm, c.rms_eps);
    x += attention_branch(p, h, c, l, rope, threads, out, keep_qkv);
    x += detail::decoder_mlp(p, rms_norm(x, w.post_norm, c.rms_eps));
    detail::require_finite_stream(x, "layer " + std::to_string(l));
  }
  out.logits = detail::decoder_unembed(model, rms_norm(x, model.norm, c.rms_eps), threads);
  detail::require_finite_stream(out.logits, "the unembedding (the logits)");
  return out;
}

}  // namespace attn
