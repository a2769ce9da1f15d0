#pragma once
// FlashAttention's rule (fa_rule.hpp) as doctest checks, for the CPU kernels' tests.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "attn/engine/attention/sdpa.hpp"
#include "fa_rule.hpp"
#include "support.hpp"

namespace attn::test {

// The rule on a kernel's output against the float64 oracle's, with `plain` (plain_float32_output) as the
// baseline; and its lse: -inf exactly where the oracle has it, within 1e-5 (relative past 1)
// elsewhere.
inline void check_fa_rule(const Tensor3& out, const Tensor2& lse, const SdpaResult& ref, const Tensor3& plain) {
  const double err = max_abs_diff(flat_tensor(out), flat_tensor(ref.output));
  const double err_plain = max_abs_diff(flat_tensor(plain), flat_tensor(ref.output));
  CAPTURE(err);
  CAPTURE(err_plain);
  CHECK(err <= 2 * err_plain + 1e-6);
  for (std::size_t i = 0; i < lse.size(); ++i) {
    const float a = lse.data()[i], b = ref.lse.data()[i];
    if (std::isinf(b))
      CHECK(a == b);  // fully masked: -inf, and an output of zeros (checked above)
    else
      CHECK(std::fabs(a - b) <= 1e-5 * std::max(1.0f, std::fabs(b)));
  }
}

}  // namespace attn::test
