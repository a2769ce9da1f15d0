// Attention through the installed attn::engine: one query that matches the first of two keys.
// Checked against the softmax written out by hand, so the test fails if the library is wrong.
#include <cmath>
#include <cstdio>

#include "attn/engine/attention/sdpa.hpp"

int main() {
  attn::Tensor3 q = {{{1.0f, 0.0f}}};                 // [H=1, Lq=1, d=2]
  attn::Tensor3 k = {{{1.0f, 0.0f}, {0.0f, 1.0f}}};   // [1, Lk=2, 2]
  attn::Tensor3 v = {{{1.0f, 2.0f}, {3.0f, 4.0f}}};   // [1, 2, dv=2]
  const attn::SdpaResult r = attn::sdpa(q, k, v);
  // scores 1/sqrt(2) and 0 -> weights softmax([0.7071, 0]) -> output = w0 * v0 + w1 * v1
  const double w0 = 1.0 / (1.0 + std::exp(-1.0 / std::sqrt(2.0)));
  const double expect0 = w0 * 1 + (1 - w0) * 3, expect1 = w0 * 2 + (1 - w0) * 4;
  const double err = std::fabs(r.output(0, 0, 0) - expect0) + std::fabs(r.output(0, 0, 1) - expect1) +
                     std::fabs(r.weights(0, 0, 0) - w0);
  std::printf("output [%.6f, %.6f], weight %.6f, error %.2e\n", r.output(0, 0, 0), r.output(0, 0, 1),
              r.weights(0, 0, 0), err);
  if (err > 1e-5) return 1;
  std::printf("consumer: attention matches the hand computation\n");
  return 0;
}
