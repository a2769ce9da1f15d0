#include "attn/engine/attention/softmax.hpp"

namespace attn {

Tensor2 softmax_rows(const Tensor2& scores, Tensor1* lse) {
  const std::size_t rows = scores.shape(0), cols = scores.shape(1);
  // Work in double and round once at the end: this is the reference path.
  std::vector<double> row(cols);
  Tensor2 out = xt::zeros<float>({rows, cols});
  if (lse) *lse = Tensor1::from_shape({rows});
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) row[j] = scores(i, j);
    const double l = softmax_row_inplace(row.data(), cols);
    for (std::size_t j = 0; j < cols; ++j) out(i, j) = static_cast<float>(row[j]);
    if (lse) (*lse)(i) = static_cast<float>(l);
  }
  return out;
}

}  // namespace attn
