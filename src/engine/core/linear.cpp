#include "attn/engine/core/linear.hpp"

#include <cblas.h>

#include <string>

#include "attn/engine/core/error.hpp"

namespace attn {

TensorD2 linear_f64(const TensorD2& x, const TensorD2& w, const TensorD1* b) {
  const std::size_t L = x.shape(0), in = x.shape(1), out = w.shape(0);
  TensorD2 y = TensorD2::from_shape({L, out});
  if (b) {
    for (std::size_t i = 0; i < L; ++i)
      for (std::size_t o = 0; o < out; ++o) y(i, o) = (*b)(o);
  }
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(L),
              static_cast<int>(out), static_cast<int>(in), 1.0, x.data(), static_cast<int>(in),
              w.data(), static_cast<int>(in), b ? 1.0 : 0.0, y.data(), static_cast<int>(out));
  return y;
}

Tensor2 linear(const Tensor2& x, const Tensor2& w, const Tensor1* b) {
  if (x.shape(1) != w.shape(1)) {
    throw InputError("weight: expected shape [out, " + std::to_string(x.shape(1)) + "], got " +
                     shape_string(w.shape()));
  }
  if (b && (b->shape(0) != w.shape(0))) {
    throw InputError("bias: expected shape [" + std::to_string(w.shape(0)) + "], got " +
                     shape_string(b->shape()));
  }
  const TensorD1 bd = b ? TensorD1(xt::cast<double>(*b)) : TensorD1();
  return xt::cast<float>(linear_f64(xt::cast<double>(x), xt::cast<double>(w), b ? &bd : nullptr));
}

}  // namespace attn
