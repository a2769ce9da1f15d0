#pragma once
// ALiBi, attention with linear biases (Press, Smith, Lewis, "Train Short, Test Long",
// arXiv 2108.12409). No position is added to the embeddings; instead every score gets a
// penalty proportional to how far back the key is:
//     S[h, i, j] = scale * q_i . k_j  -  m_h * (i - j)        (causal: j <= i)
// Each head h has its own slope m_h, a geometric sequence, so some heads look far back and
// others only at their neighbours.
#include <cstddef>
#include <cstdlib>
#include <span>
#include <vector>

#include "attn/engine/core/tensor.hpp"

namespace attn {

// The slopes of the paper's reference code (get_slopes in ofirpress/attention_with_linear_biases):
//   H a power of two:  m_h = 2^(-8 (h + 1) / H)        (H = 8: 1/2, 1/4, ..., 1/256)
//   otherwise:         the slopes for the closest power of two below H, then every other
//                      slope (indices 0, 2, 4, ...) of the next power of two, until H slopes.
// H == 0 -> InputError.
std::vector<double> alibi_slopes(std::size_t num_heads);

// The bias for a query at absolute position p and a key at position j: -m |p - j|.
// For causal attention (j <= p) this is the paper's -m (p - j); the absolute value gives the
// symmetric form used when ALiBi is applied without a causal mask (e.g. MosaicBERT).
inline double alibi_bias_value(double slope, long query_pos, long key_pos) {
  const long distance = std::labs(query_pos - key_pos);
  return distance == 0 ? 0.0 : -slope * static_cast<double>(distance);  // no -0 on the diagonal
}

// bias [H, Lq, Lk], bottom-right aligned like causal masks (query i sits at position
// i + Lk - Lq), so a decode step's single query row equals the last row of the full matrix.
Tensor3 alibi_bias(std::span<const double> slopes, std::size_t Lq, std::size_t Lk);

}  // namespace attn
