#pragma once
// The one door to xtensor: every other file uses these aliases, so the xtensor version
// (and its include layout) can change in one place.
//
// Conventions: row-major float32 at every public boundary; shapes are written with fixed
// letters, H heads, Lq/Lk query/key lengths, d head dim, D model dim.
#include <cstddef>
#include <string>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <xtensor/xadapt.hpp>
#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>
#pragma GCC diagnostic pop

namespace attn {

using Tensor1 = xt::xtensor<float, 1>;
using Tensor2 = xt::xtensor<float, 2>;
using Tensor3 = xt::xtensor<float, 3>;
// The float64 references (sdpa, mha, backward) work in these.
using TensorD1 = xt::xtensor<double, 1>;
using TensorD2 = xt::xtensor<double, 2>;
using TensorD3 = xt::xtensor<double, 3>;

// Boolean masks: true = the query may attend to that key (PyTorch SDPA's convention).
using Mask2 = xt::xtensor<bool, 2>;
using Mask3 = xt::xtensor<bool, 3>;

using Shape = std::vector<std::size_t>;

// A tensor's shape as a Shape, for the checks and their messages.
template <class T>
Shape shape_of(const T& t) {
  return Shape(t.shape().begin(), t.shape().end());
}

// "[2, 3, 4]" -- for error messages.
template <class Shape>
std::string shape_string(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace attn
