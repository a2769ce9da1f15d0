#include "attn/lessons/concepts/multihead_by_hand.hpp"

#include <algorithm>
#include <cmath>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/linear.hpp"
#include "attn/engine/attention/mha.hpp"
#include "attn/engine/attention/attention.hpp"
#include "max_difference.hpp"

namespace attn {
namespace {

// Columns [c0, c0 + n) of t: one head's slice of Q, K or V.
Tensor2 columns(const Tensor2& t, std::size_t c0, std::size_t n) {
  return xt::view(t, xt::all(), xt::range(c0, c0 + n));
}

}  // namespace

MultiHeadByHand multihead_by_hand(const Tensor2& x, std::size_t H, std::uint64_t seed, bool causal) {
  const std::size_t L = x.shape(0), D = x.shape(1);
  if (H == 0 || D % H != 0) {
    throw InputError("--heads: " + std::to_string(H) + " does not divide --d-model " + std::to_string(D));
  }
  MultiHeadByHand m;
  m.heads = H;
  m.head_dim = D / H;
  m.causal = causal;
  m.x = x;
  const MhaWeights w = init_mha_weights(D, H, H, seed);
  // Project: one [L, D] matrix each, all heads at once.
  m.q = linear(x, w.w_q);
  m.k = linear(x, w.w_k);
  m.v = linear(x, w.w_v);
  // Split, attend per head, concatenate.
  m.concat = Tensor2::from_shape({L, D});
  SdpaOptions options;
  options.causal = causal;
  const std::size_t d = m.head_dim;
  for (std::size_t h = 0; h < H; ++h) {
    m.q_h.push_back(columns(m.q, h * d, d));
    m.k_h.push_back(columns(m.k, h * d, d));
    m.v_h.push_back(columns(m.v, h * d, d));
    const SdpaResult a = attention(Tensor3(xt::expand_dims(m.q_h.back(), 0)), Tensor3(xt::expand_dims(m.k_h.back(), 0)),
                              Tensor3(xt::expand_dims(m.v_h.back(), 0)), nullptr, options);
    m.weights.push_back(xt::view(a.weights, 0, xt::all(), xt::all()));
    m.head_out.push_back(xt::view(a.output, 0, xt::all(), xt::all()));
    xt::view(m.concat, xt::all(), xt::range(h * d, (h + 1) * d)) = m.head_out.back();
  }
  m.output = linear(m.concat, w.w_o);

  // The engine's multi-head layer on the same x and weights, separate and fused.
  MhaOptions mo;
  mo.num_heads = mo.num_kv_heads = H;
  mo.attention.causal = causal;
  const MhaResult ref = mha(x, x, x, w, nullptr, mo);
  const MhaResult fused = mha_fused(x, fuse_qkv(w), nullptr, mo);
  m.max_diff_vs_mha = max_abs_difference(m.output, ref.output);
  m.max_diff_fused = std::max(max_abs_difference(fused.output, ref.output), max_abs_difference(fused.weights, ref.weights));
  return m;
}

Json multihead_json(const MultiHeadByHand& m) {
  Json heads = Json::array();
  for (std::size_t h = 0; h < m.heads; ++h) {
    heads.push_back({{"head", h},
                     {"columns", {h * m.head_dim, (h + 1) * m.head_dim}},
                     {"weights", to_json(m.weights[h])},
                     {"output", to_json(m.head_out[h])}});
  }
  return {{"heads", m.heads},
          {"head_dim", m.head_dim},
          {"causal", m.causal},
          {"steps",
           {"project: Q, K, V = x W^T [L, D]", "split: head h takes columns h*d_h .. (h+1)*d_h - 1 -> [L, d_h]",
            "per head: A_h = softmax(Q_h K_h^T / sqrt(d_h)) [L, L], O_h = A_h V_h [L, d_h]",
            "concat: O = [O_0 | ... | O_{H-1}] [L, D]", "output: y = O W_o^T [L, D]"}},
          {"q", to_json(m.q)},
          {"k", to_json(m.k)},
          {"v", to_json(m.v)},
          {"per_head", heads},
          {"concat", to_json(m.concat)},
          {"output", to_json(m.output)},
          {"max_abs_diff_vs_mha", m.max_diff_vs_mha},
          {"max_abs_diff_fused_qkv", m.max_diff_fused}};
}

}  // namespace attn
