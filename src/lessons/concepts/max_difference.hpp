#pragma once
// Private to attn::lessons: the one "max |a - b|" the lessons' checks report (the demo's flash
// and decode checks, the multi-head lesson's comparison with mha()), and the one relative error
// an approximation is judged by (tradeoff, approximations).
#include <algorithm>
#include <cmath>

namespace attn {

// max |a - b| over two tensors of one shape; equal infinities (a fully masked row's lse of
// -inf on both sides) count as no difference.
template <class A, class B>
double max_abs_difference(const A& a, const B& b) {
  double m = 0;
  auto it = b.begin();
  for (auto x : a) {
    const double u = x, w = *it++;
    if (u != w) m = std::max(m, std::fabs(u - w));
  }
  return m;
}

// ||a - ref||_F / ||ref||_F (the absolute norm when ref is all zero).
template <class A, class B>
double relative_frobenius_error(const A& a, const B& ref) {
  double diff = 0, norm = 0;
  auto it = ref.begin();
  for (auto x : a) {
    const double r = *it++, e = double(x) - r;
    diff += e * e;
    norm += r * r;
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

}  // namespace attn
