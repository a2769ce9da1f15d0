#pragma once
// Private to the engine: the pieces of mha() (mha.cpp) that its backward (mha_backward.cpp)
// repeats step by step.
#include <cstdint>
#include <optional>
#include <span>

#include "attn/engine/attention/mha.hpp"
#include "sdpa_f64.hpp"

namespace attn::detail {

struct HeadLayout {
  std::size_t D, H, Hkv, d;  // model dim, query heads, key/value heads, head dim
};

// Every check of mha() on its inputs (shapes, heads, biases, mask, options, rope).
HeadLayout check_mha(const Tensor2& query, const Tensor2& key, const Tensor2& value,
                     const MhaWeights& w, const Mask3* allowed, const MhaOptions& options);


// Rotates x [heads, L, d] in place, row l of every head to positions[l] (rope.hpp).
void rotate_heads(TensorD3& x, std::span<const std::int64_t> positions, const RopeOptions& rope);

std::optional<TensorD1> to_f64(const std::optional<Tensor1>& b);

// y = x W^T + b in float64, for rows [first, first + count) of x.
TensorD2 project_rows(const TensorD2& x, std::size_t first, std::size_t count, const Tensor2& w,
                      const std::optional<Tensor1>& b);

}  // namespace attn::detail
