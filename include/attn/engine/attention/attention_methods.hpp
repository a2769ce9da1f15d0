#pragma once
// attend's methods other than softmax attention (docs/contracts.md, "method"), the efficient-
// attention family that the long-sequence notes list, each computed exactly as its paper defines
// it, in float64, per head (GQA: query head h reads key/value head h / (H / Hkv)):
//
//   linear     Katharopoulos et al. 2020: phi(x) = elu(x) + 1,
//              out_i = phi(q_i)^T sum_j phi(k_j) v_j^T / phi(q_i)^T sum_j phi(k_j) over the
//              visible j (all, or j <= p with causal); weights A_ij = the normalised
//              phi(q_i)^T phi(k_j). No scale: the kernel has none.
//   performer  Choromanski et al. 2021 (FAVOR+): positive random features
//              phi(x) = exp(w_r . x' - |x'|^2 / 2) / sqrt(m), r = 1..m, w_r ~ N(0, I_d) drawn from
//              `seed`, x' = sqrt(scale) x, so that E[phi(q')^T phi(k')] = exp(scale q . k); then
//              normalised as linear attention (causal: prefix sums); weights likewise.
//   linformer  Wang et al. 2020: K and V projected along the sequence to `rank` rows,
//              K' = E K, V' = F V with E, F [rank, Lk] of N(0, 1/rank) entries from `seed`;
//              out = softmax(scale q K'^T) V'. Its weights are over projected rows, not keys:
//              none are returned. Not causal (the projection mixes future keys into every row).
//   sparse     Child et al. 2019's strided pattern: softmax attention where key j <= p is
//              visible when p - j < stride or (p - j) mod stride = 0. It is a mask
//              (variant.hpp's AttentionMask::stride) and runs on every backend; not here.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attn/engine/core/tensor.hpp"

namespace attn {

enum class AttentionMethod { softmax, linear, performer, linformer, sparse };
AttentionMethod parse_attention_method(const std::string& name);  // InputError naming the choices
const char* attention_method_name(AttentionMethod method);

struct MethodOptions {
  AttentionMethod method = AttentionMethod::linear;
  bool causal = false;
  double scale = 1.0;            // performer and linformer (resolved_scale of the call)
  std::size_t features = 0;      // performer's m (> 0)
  std::size_t rank = 0;          // linformer's k (> 0)
  std::uint64_t seed = 0;        // performer's and linformer's random draws
  // false: linear and performer in their linear-time form (Katharopoulos et al.'s eq. 5: the
  // keys summed once into S = sum phi(k_j) v_j^T and z = sum phi(k_j), prefix sums with causal),
  // which never forms the [Lq, Lk] weights: O((Lq + Lk) f dv) time, O(f dv) memory per head.
  bool with_weights = true;
};

struct MethodResult {
  Tensor3 output;                  // [H, Lq, dv]
  std::optional<Tensor3> weights;  // [H, Lq, Lk] where the method has them
  // The random draws, so that an outside check can recompute the method exactly: performer's
  // w [m, d]; linformer's E and F [rank, Lk]. Empty for linear.
  std::vector<xt::xtensor<double, 2>> draws;
};

// q [H, Lq, d], k [Hkv, Lk, d], v [Hkv, Lk, dv]; linear, performer or linformer. The weights
// (linear, performer) only when options.with_weights; the outputs of the two forms agree to
// float64 round-off (the same sums, grouped differently).
MethodResult method_attention(const Tensor3& q, const Tensor3& k, const Tensor3& v, const MethodOptions& options);

}  // namespace attn
