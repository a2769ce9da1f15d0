// Multi-head attention taken apart: the split is columns, each head's weights are a softmax of
// its own slice, and split + attend + concat + W_o is exactly what mha() and the fused QKV do.
#include <doctest/doctest.h>

#include <cmath>

#include "attn/engine/core/error.hpp"
#include "attn/engine/text/tokenize.hpp"
#include "attn/lessons/concepts/explain.hpp"
#include "attn/lessons/concepts/multihead_by_hand.hpp"
#include "attn/render/views/explain_pictures.hpp"
#include "picture_support.hpp"

using namespace attn;
using namespace attn::test;

TEST_CASE("multi-head by hand: head slices, per-head softmax in float64, and the engine agree") {
  const Tensor2 x = embed_tokens(tokenize("the cat sat on the mat"), 6, 3);
  const MultiHeadByHand m = multihead_by_hand(x, 3, 9, true);
  REQUIRE(m.head_dim == 2);
  REQUIRE(m.weights.size() == 3);
  const std::size_t L = 6, d = 2;
  for (std::size_t h = 0; h < 3; ++h) {
    CAPTURE(h);
    // The head's Q is columns 2h, 2h+1 of Q, and its weights are softmax(Q_h K_h^T / sqrt(2)),
    // causal, recomputed here in float64 from Q and K.
    for (std::size_t i = 0; i < L; ++i) {
      CHECK(m.q_h[h](i, 1) == m.q(i, h * d + 1));
      double mx = -1e300, z = 0;
      std::vector<double> s(i + 1);
      for (std::size_t j = 0; j <= i; ++j) {
        s[j] = (double(m.q(i, h * d)) * m.k(j, h * d) + double(m.q(i, h * d + 1)) * m.k(j, h * d + 1)) / std::sqrt(2.0);
        mx = std::max(mx, s[j]);
      }
      for (double& v : s) z += (v = std::exp(v - mx));
      for (std::size_t j = 0; j < L; ++j) CHECK(m.weights[h](i, j) == doctest::Approx(j <= i ? s[j] / z : 0.0).epsilon(1e-5));
      // The concatenation puts O_h back in the head's columns.
      CHECK(m.concat(i, h * d) == m.head_out[h](i, 0));
    }
  }
  CHECK(m.max_diff_vs_mha < 1e-5);
  CHECK(m.max_diff_fused < 1e-5);
  CHECK_THROWS_AS(multihead_by_hand(x, 4, 9, true), InputError);  // 4 does not divide 6
}

TEST_CASE("multi-head by hand: explain --heads draws every matrix, each head outlined in its colour") {
  ExplainConfig c;
  c.sentence = "The cat sat on the mat";
  c.heads = 2;
  const ExplainResult r = explain_attention(c);
  REQUIRE(r.multihead);
  const Figure f = multihead_figure(r);
  REQUIRE(f.grids.size() == 4 + 2 * 2 + 2);  // x, Q, K, V, (A_h, O_h) per head, O, y
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  // A_0 (grid 4): a key the causal mask hides is hatched grey, not Blues' colour of a weight of 0.
  const Rgb8 masked = img.cell_mean(f.grids[4], 0, 3, 2);
  CAPTURE(masked);
  CHECK(std::abs(masked.r - masked.b) <= 3);
  CHECK_FALSE(near(masked, to_rgb8(Colormap::by_name("Blues").at(0)), 8));
  // Head 1's O (grid 7) is outlined in the second head colour (tab10 orange), just outside its cells.
  const CellGrid& o1 = f.grids[7];
  const Rgb8 edge = img.pixel(o1.x + o1.cell_w, o1.y - 0.8, 2);
  CAPTURE(edge);
  CHECK(near(edge, Rgb8{0xff, 0x7f, 0x0e}, 40));
  CHECK_THROWS(multihead_figure(explain_attention(ExplainConfig{})));  // no --heads: no lesson
}
