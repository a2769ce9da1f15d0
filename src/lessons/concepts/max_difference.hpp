#pragma once
// Private to attn::lessons: the one "max |a - b|" the lessons' checks report (the demo's flash
// and decode checks, the multi-head lesson's comparison with mha()).
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

}  // namespace attn
