// linear.hpp: the one projection and head split/merge that mha, the toy transformer and
// GPT-2 share. Hand-derived cases: every expected value below is worked out in the comment.
#include <doctest/doctest.h>

#include <numeric>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/linear.hpp"

using namespace attn;

TEST_CASE("linear follows torch.nn.Linear, y = x W^T + b") {
  const Tensor2 x = {{1, 2}}, w = {{1, 0}, {0, 1}, {1, 1}};
  const Tensor1 b = {10, 20, 30};
  // rows of W: (1,0).(1,2) = 1, (0,1).(1,2) = 2, (1,1).(1,2) = 3; plus the bias.
  CHECK(linear(x, w, &b) == Tensor2{{11, 22, 33}});
  CHECK(linear(x, w) == Tensor2{{1, 2, 3}});
  const TensorD2 xd = {{1, 2}}, wd = {{1, 0}, {0, 1}, {1, 1}};
  CHECK(linear_f64(xd, wd) == TensorD2{{1, 2, 3}});
}

TEST_CASE("linear names the weight or the bias whose shape disagrees") {
  const Tensor2 x = {{1, 2}};
  CHECK_THROWS_WITH_AS(linear(x, Tensor2{{1, 0, 0}}), "weight: expected shape [out, 2], got [1, 3]", InputError);
  const Tensor1 b = {1, 2};
  CHECK_THROWS_WITH_AS(linear(x, Tensor2{{1, 0}}, &b), "bias: expected shape [1], got [2]", InputError);
}

TEST_CASE("split_heads gives head h the columns h*d .. h*d + d - 1, and merge_heads undoes it") {
  // x [L = 2, H*d = 4] with H = 2, d = 2: x(i, c) = 10 i + c.
  const Tensor2 x = {{0, 1, 2, 3}, {10, 11, 12, 13}};
  const Tensor3 heads = split_heads(x, 2);
  CHECK(heads == Tensor3{{{0, 1}, {10, 11}}, {{2, 3}, {12, 13}}});
  CHECK(merge_heads(heads) == x);
  const TensorD2 xd = xt::cast<double>(x);
  CHECK(merge_heads(split_heads(xd, 4)) == xd);
  CHECK(split_heads(xd, 1) == TensorD3(xt::expand_dims(xd, 0)));
}

TEST_CASE("split_heads reads one part of a fused projection through its row stride") {
  // GPT-2's qkv [L = 2, 3D] with D = 4, H = 2, d = 2: k is columns 4..7 of each row.
  std::vector<float> qkv(2 * 12);
  std::iota(qkv.begin(), qkv.end(), 0.0f);  // row 0: 0..11, row 1: 12..23
  std::vector<float> k(2 * 2 * 2);
  split_heads(qkv.data() + 4, 12, 2, 2, 2, k.data());
  // head 0: (4, 5), (16, 17); head 1: (6, 7), (18, 19).
  CHECK(k == std::vector<float>{4, 5, 16, 17, 6, 7, 18, 19});
  // Back into a zeroed fused buffer: exactly those columns come back, the rest stay 0.
  std::vector<float> back(2 * 12, 0.0f);
  merge_heads(k.data(), 2, 2, 2, back.data() + 4, 12);
  for (std::size_t i = 0; i < back.size(); ++i) CHECK(back[i] == ((i % 12 >= 4 && i % 12 < 8) ? qkv[i] : 0.0f));
}

TEST_CASE("the row copy is exact past its 64-byte blocks") {
  // d = 37 floats: two 16-float blocks and 5 left over; doubles: four 8-double blocks and 5.
  std::vector<float> xf(37);
  std::iota(xf.begin(), xf.end(), 1.0f);
  std::vector<float> hf(37);
  split_heads(xf.data(), 37, 1, 1, 37, hf.data());
  CHECK(hf == xf);
  std::vector<double> xd(37), hd(37);
  std::iota(xd.begin(), xd.end(), -5.0);
  split_heads(xd.data(), 37, 1, 1, 37, hd.data());
  CHECK(hd == xd);
}
