#pragma once
// The linear algebra every model of the engine shares: the projection y = x W^T + b as
// torch.nn.Linear stores it (W [out, in]), and multi-head attention's head split and merge.
// mha, the toy transformer, GPT-2 and the lessons all call these; nothing else forms them.
//
//   split_heads   x [L, H*d] -> [H, L, d]   head h takes columns h*d .. h*d + d - 1
//   merge_heads   [H, L, d] -> [L, H*d]     its inverse (the "concat" of the paper)
#include <cstddef>
#include <cstring>

#include "attn/engine/core/tensor.hpp"

namespace attn {

// y [L, out] = x [L, in] W^T + b: w [out, in], b [out] or null. Float64 inside, rounded once;
// InputError naming "weight" or "bias" when the shapes disagree.
Tensor2 linear(const Tensor2& x, const Tensor2& w, const Tensor1* b = nullptr);

// The same on float64 tensors (the references), shapes already checked.
TensorD2 linear_f64(const TensorD2& x, const TensorD2& w, const TensorD1* b = nullptr);

namespace detail {
// n values from src to dst. The head split moves rows of d (often 16 to 128) values: in whole
// 64-byte blocks of constant size the compiler emits the moves inline, where a memcpy call
// per row cost as much as the copying (the toy transformer's training step).
template <class T>
void copy_row(const T* src, std::size_t n, T* dst) {
  constexpr std::size_t block = 64 / sizeof(T);
  std::size_t c = 0;
  for (; c + block <= n; c += block) std::memcpy(dst + c, src + c, block * sizeof(T));
  for (; c < n; ++c) dst[c] = src[c];
}
}  // namespace detail

// The raw forms, for callers that own the buffers: `rows` rows of x, row i starting at
// x + i * stride, head h's columns at + h * d, into heads [H, rows, d] (and back). A stride
// wider than H * d reads one part of a fused projection, e.g. q of GPT-2's [L, 3D] qkv.
template <class T>
void split_heads(const T* x, std::size_t stride, std::size_t rows, std::size_t H, std::size_t d, T* heads) {
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t i = 0; i < rows; ++i) detail::copy_row(x + i * stride + h * d, d, heads + (h * rows + i) * d);
}
template <class T>
void merge_heads(const T* heads, std::size_t rows, std::size_t H, std::size_t d, T* x, std::size_t stride) {
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t i = 0; i < rows; ++i) detail::copy_row(heads + (h * rows + i) * d, d, x + i * stride + h * d);
}

// x [L, H*d] -> [H, L, d]; H must divide x's columns (the callers have checked it).
template <class T>
xt::xtensor<T, 3> split_heads(const xt::xtensor<T, 2>& x, std::size_t H) {
  const std::size_t L = x.shape(0), d = x.shape(1) / H;
  xt::xtensor<T, 3> heads = xt::xtensor<T, 3>::from_shape({H, L, d});
  split_heads(x.data(), x.shape(1), L, H, d, heads.data());
  return heads;
}
// heads [H, L, d] -> [L, H*d].
template <class T>
xt::xtensor<T, 2> merge_heads(const xt::xtensor<T, 3>& heads) {
  const std::size_t H = heads.shape(0), L = heads.shape(1), d = heads.shape(2);
  xt::xtensor<T, 2> x = xt::xtensor<T, 2>::from_shape({L, H * d});
  merge_heads(heads.data(), L, H, d, x.data(), H * d);
  return x;
}

}  // namespace attn
