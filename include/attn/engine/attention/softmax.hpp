#pragma once
// Numerically stable softmax with exact -inf masking.
//
// A masked score is -inf (never -1e9): exp(-inf - m) is exactly 0, so a masked key gets
// exactly zero weight. The trap is a row whose keys are *all* masked: its max m is -inf and
// s - m = -inf - (-inf) = NaN. The -1e9 trick avoids the NaN but silently turns the row into a
// uniform average over the masked keys. attn-cli treats that row as "attends to nothing":
// zero weights, zero output, and no log-sum-exp (-inf, written as null in JSON).
#include <cmath>
#include <cstddef>
#include <limits>

#include "attn/engine/core/tensor.hpp"

namespace attn {

// Softmax of one row in place. Entries equal to -inf are masked keys.
// Returns the log-sum-exp of the row (m + log Σ exp(s - m)), or -inf for a fully masked row.
template <class T>
T softmax_row_inplace(T* row, std::size_t n) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  T m = kNegInf;
  for (std::size_t j = 0; j < n; ++j) m = row[j] > m ? row[j] : m;
  if (m == kNegInf) {  // fully masked: attend to nothing (see the header comment)
    for (std::size_t j = 0; j < n; ++j) row[j] = T(0);
    return kNegInf;
  }
  T sum = 0;
  for (std::size_t j = 0; j < n; ++j) {
    row[j] = std::exp(row[j] - m);  // subtracting the max keeps every exponent <= 0
    sum += row[j];
  }
  const T inv = T(1) / sum;  // sum >= 1: the max term contributes exp(0)
  for (std::size_t j = 0; j < n; ++j) row[j] *= inv;
  return m + std::log(sum);
}

// Row-wise softmax of scores [L, n]; entries of -inf are masked. Writes the per-row
// log-sum-exp into lse [L] when given.
Tensor2 softmax_rows(const Tensor2& scores, Tensor1* lse = nullptr);

}  // namespace attn
