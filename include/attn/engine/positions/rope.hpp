#pragma once
// Rotary position embedding, RoPE (Su et al., RoFormer, arXiv 2104.09864).
//
// RoPE splits a head vector of d dims into d/2 pairs and rotates pair i by the angle
// pos * theta_i, with theta_i = base^(-2i/d) (base = 10000 in RoFormer and LLaMA). Rotations
// compose, so for q at position m and k at position n
//     rot(q, m) . rot(k, n) = q . rot(k, n - m)
// and the score depends on the positions only through their difference: relative position
// without any learned table. q and k are rotated after the projection, per head, and the
// keys are stored in a KV cache already rotated.
//
// Which dims form a pair is a convention, and the two in use are easy to mix up:
//   RopeStyle::Half        pairs (i, i + d/2)   "rotate_half": GPT-NeoX, HF transformers'
//                          LlamaRotaryEmbedding / apply_rotary_pos_emb, Qwen, Mistral (HF)
//   RopeStyle::Interleaved pairs (2i, 2i + 1)   GPT-J, RoFormer's paper (eq. 34), and Meta's
//                          llama reference code (view_as_complex on adjacent dims)
// They are the same rotation in two memory layouts: de-interleaving the dims (see
// interleaved_to_half_permutation) maps one onto the other; HF's convert_llama_weights_to_hf.py
// permutes the rows of W_q and W_k per head for exactly this reason.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attn/engine/core/tensor.hpp"

namespace attn {

enum class RopeStyle { Half, Interleaved };

// "half" / "interleaved"; anything else -> InputError naming `field`.
RopeStyle parse_rope_style(std::string_view name, const std::string& field = "rope.style");
std::string rope_style_name(RopeStyle style);

// The bases the tool accepts: above 1 the frequencies fall with i as RoPE intends; real models
// use 1e4 to 1e7. Outside this range theta overflows or every pair stops turning (and a
// frequency plot spans no finite range), so flags and JSON fields refuse it.
inline constexpr double kRopeBaseMin = 1.0;
inline constexpr double kRopeBaseMax = 1e12;

struct RopeOptions {
  double base = 10000.0;
  RopeStyle style = RopeStyle::Half;
  // Position of each query, [Lq] integers >= 0; empty = 0, 1, ..., Lq - 1.
  std::vector<std::int64_t> position_ids;
  // Position of each key, [Lk]; empty = the query positions when Lk == Lq (self-attention:
  // the keys are the same tokens), else 0, 1, ..., Lk - 1 (cross-attention: the keys are a
  // sequence of their own, starting at 0).
  std::vector<std::int64_t> key_position_ids;
  // theta_i for i = 0 .. d/2 - 1 when the model scales them (Llama 3's "llama3", "linear");
  // empty = rope_frequencies(d, base).
  std::vector<double> frequencies{};
};

// theta_i = base^(-2i/d) for i = 0 .. d/2 - 1: pair 0 turns fastest (1 rad per token), the
// last pair slowest (wavelength close to 2*pi*base tokens).
std::vector<double> rope_frequencies(std::size_t d, double base);

// The two dims of a head vector that pair i rotates together.
std::pair<std::size_t, std::size_t> rope_pair(RopeStyle style, std::size_t i, std::size_t d);

// perm[k] = the interleaved-layout dim that lands on half-layout dim k: half[k] =
// interleaved[perm[k]], i.e. perm = (0, 2, 4, ..., d-2, 1, 3, ..., d-1). Then
//     rope_half(P x) == P rope_interleaved(x)   for every x and position.
std::vector<std::size_t> interleaved_to_half_permutation(std::size_t d);

// The RoPE kernel. x is [L, d] row-major (one head's rows), or [heads, L, d] (every head's, L =
// positions.size()); row l of each head is rotated in place to position positions[l], each
// angle's cos and sin computed once for all heads. d must be even (checked by check_rope).
void apply_rope_inplace(std::span<double> x, std::size_t d, std::span<const std::int64_t> positions,
                        double base, RopeStyle style);

// The inverse rotation, by -positions[r] * theta_i: the backward of apply_rope_inplace. A
// rotation R is orthogonal, so the gradient through y = R x is dL/dx = R^T dL/dy = R^-1 dL/dy:
// back-propagating through RoPE turns the gradient back by the same angle.
void apply_rope_inverse_inplace(std::span<double> x, std::size_t d,
                                std::span<const std::int64_t> positions, double base, RopeStyle style);

// One head vector x [d] rotated to position pos (what the teaching tables are built from).
std::vector<double> rope_rotated(std::vector<double> x, std::int64_t pos, double base, RopeStyle style);

// The same kernels with the frequencies given (theta [d/2], InputError for fewer): a scaled RoPE.
void apply_rope_inplace(std::span<double> x, std::size_t d, std::span<const std::int64_t> positions,
                        std::span<const double> theta, RopeStyle style);
void apply_rope_inverse_inplace(std::span<double> x, std::size_t d, std::span<const std::int64_t> positions,
                                std::span<const double> theta, RopeStyle style);

// Float32 convenience: x [H, L, d] -> rotated copy, row l of every head at positions[l]
// (float64 inside, like the rest of the engine), at options.frequencies when given.
Tensor3 apply_rope(const Tensor3& x, std::span<const std::int64_t> positions,
                   const RopeOptions& options);

// Validates options for head dim d and Lq queries / Lk keys; InputError names the field
// ("rope: head dim ...", "rope.base", "rope.position_ids", "rope.key_position_ids").
void check_rope(const RopeOptions& options, std::size_t d, std::size_t Lq, std::size_t Lk);

// The positions actually used (the defaults above made explicit).
std::vector<std::int64_t> rope_query_positions(const RopeOptions& options, std::size_t Lq);
std::vector<std::int64_t> rope_key_positions(const RopeOptions& options, std::size_t Lq,
                                             std::size_t Lk);

}  // namespace attn
