// The RoPE pitfall seen in tutorials: cos/sin built with width d/2 and multiplied into a head of
// width d. RoPE itself belongs to rope.hpp (another module); the few lines needed here are
// written out locally, in the rotate-half convention (GPT-NeoX, LLaMA in Hugging Face):
//
//   theta_i = base^(-2i/d), i < d/2          (Su et al. 2021, RoFormer, arXiv 2104.09864)
//   angle_i(pos) = pos * theta_i
//   cos_full = cat(cos(angle), cos(angle))   width d: element i and i + d/2 share angle_i
//   rope(x, pos) = x * cos_full + rotate_half(x) * sin_full,  rotate_half(x) = cat(-x2, x1)
//
// The tutorial's cos/sin have width d/2. PyTorch (and NumPy) refuse to broadcast d/2 against d
// unless d = 2, so the code fails; the quick "fix" that makes the shapes agree,
// cos.repeat_interleave(2) (the GPT-J / interleaved layout), runs silently and is wrong with
// rotate_half: element i is paired with i + d/2 but turned by a different angle, so the map
// is no longer a rotation and q.k no longer depends only on the distance m - n.
#include <cmath>
#include <numeric>

#include "attn/lessons/concepts/pitfalls.hpp"

namespace attn {
namespace {

constexpr double kRopeBase = 10000.0;

std::vector<double> half_angles(std::size_t d, double pos) {
  std::vector<double> a(d / 2);
  for (std::size_t i = 0; i < d / 2; ++i) a[i] = pos * std::pow(kRopeBase, -2.0 * double(i) / double(d));
  return a;
}

// Width-d angle layouts built from the d/2 angles.
std::vector<double> cat_layout(const std::vector<double>& half) {  // right: [a0..a_{d/2-1}, a0..]
  std::vector<double> full(half);
  full.insert(full.end(), half.begin(), half.end());
  return full;
}
std::vector<double> interleave_layout(const std::vector<double>& half) {  // wrong here: [a0, a0, a1, a1, ...]
  std::vector<double> full;
  for (double a : half) full.insert(full.end(), {a, a});
  return full;
}

std::vector<double> rope_rotate_half(const std::vector<double>& x, const std::vector<double>& angle) {
  const std::size_t d = x.size(), h = d / 2;
  std::vector<double> out(d);
  for (std::size_t i = 0; i < d; ++i) {
    const double rotated = i < h ? -x[i + h] : x[i - h];  // rotate_half(x)[i]
    out[i] = x[i] * std::cos(angle[i]) + rotated * std::sin(angle[i]);
  }
  return out;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

// NumPy / PyTorch broadcasting of one trailing dimension: equal, or one of them is 1.
bool broadcastable(std::size_t a, std::size_t b) { return a == b || a == 1 || b == 1; }

}  // namespace

Pitfall pitfall_rope_half_width() {
  const std::size_t d = 8;
  const std::vector<double> q = {1.0, 0.5, -0.3, 0.8, 0.2, -1.0, 0.7, 0.1};
  const std::vector<double> k = {0.4, -0.6, 0.9, 0.3, -0.2, 0.5, 0.1, -0.8};
  auto rope = [&](const std::vector<double>& x, double pos, bool right) {
    const std::vector<double> half = half_angles(d, pos);
    return rope_rotate_half(x, right ? cat_layout(half) : interleave_layout(half));
  };
  auto norm_ratio = [&](bool right) { return std::sqrt(dot(rope(q, 3, right), rope(q, 3, right)) / dot(q, q)); };
  // RoPE's point: <R_m q, R_n k> depends on m - n only. Distance 2 at (3, 1) and at (7, 5).
  auto relative_gap = [&](bool right) {
    return dot(rope(q, 3, right), rope(k, 1, right)) - dot(rope(q, 7, right), rope(k, 5, right));
  };

  Pitfall p{"rope-half-width", "RoPE: cos/sin of width d/2 against a head of width d",
            "cos, sin of width d/2, made to fit by cos.repeat_interleave(2)",
            "cos_full = cat(cos, cos): element i and i + d/2 turn by the same angle (rotate-half convention)",
            "Build cos/sin at the head's full width in the layout that matches your rotate function: "
            "cat(freqs, freqs) for rotate_half, repeat_interleave for interleaved pairs. A mismatch still runs "
            "and silently breaks the rotation.",
            "a tutorial's apply_rotary_pos_emb (cos, sin: [seq_len, d_k // 2] times q: [.., d_k])", {}, {}};
  std::vector<std::string> dims;
  for (std::size_t i = 0; i < d; ++i) {
    std::string label = "d";  // appended, not "d" + ...: g++ 12 -O3 warns falsely (-Wrestrict) on that
    label += std::to_string(i);
    dims.push_back(label);
  }
  Tensor2 wrong = Tensor2::from_shape({1, d}), right = Tensor2::from_shape({1, d});
  const std::vector<double> w = rope(q, 3, false), r = rope(q, 3, true);
  for (std::size_t i = 0; i < d; ++i) {
    wrong(0, i) = static_cast<float>(w[i]);
    right(0, i) = static_cast<float>(r[i]);
  }
  p.tables.push_back({"q = (1, 0.5, -0.3, 0.8, 0.2, -1, 0.7, 0.1) at position 3", {"RoPE(q, 3)"}, dims, wrong, right});
  // The two properties a rotation guarantees, across positions: the length of q is kept, and
  // q.k depends only on the distance (here 2) between the two positions.
  const std::size_t positions = 8;
  std::vector<std::string> pos_labels, pair_labels;
  Tensor2 norm_wrong = Tensor2::from_shape({1, positions}), norm_right = Tensor2::from_shape({1, positions});
  Tensor2 dot_wrong = Tensor2::from_shape({1, positions}), dot_right = Tensor2::from_shape({1, positions});
  for (std::size_t m = 0; m < positions; ++m) {
    pos_labels.push_back("m=" + std::to_string(m));
    pair_labels.push_back("(" + std::to_string(m + 2) + "," + std::to_string(m) + ")");
    for (bool ok : {false, true}) {
      const std::vector<double> rq = rope(q, double(m), ok);
      (ok ? norm_right : norm_wrong)(0, m) = static_cast<float>(std::sqrt(dot(rq, rq) / dot(q, q)));
      (ok ? dot_right : dot_wrong)(0, m) = static_cast<float>(dot(rope(q, double(m + 2), ok), rope(k, double(m), ok)));
    }
  }
  p.tables.push_back({"|RoPE(q, m)| / |q| at positions m (a rotation keeps 1)", {"length ratio"}, pos_labels,
                      norm_wrong, norm_right});
  p.tables.back().reference = 1.0;  // on a 0-to-1 scale 0.93 and 1.00 look alike
  p.tables.push_back({"q.k with q at m + 2, k at m: distance 2 every time (equal if relative)", {"q.k"}, pair_labels,
                      dot_wrong, dot_right});
  p.facts.push_back({"cos/sin width for a head of width 8", double(d / 2), double(d)});
  p.facts.push_back({"broadcasts against the head as written (1 = yes)", double(broadcastable(d / 2, d)),
                     double(broadcastable(d, d))});
  p.facts.push_back({"|RoPE(q)| / |q| (a rotation keeps it 1)", norm_ratio(false), norm_ratio(true)});
  p.facts.push_back({"q.k at positions (3, 1) minus at (7, 5) (0 if relative)", relative_gap(false), relative_gap(true)});
  return p;
}

}  // namespace attn
