#include "attn/lessons/concepts/rope_lesson.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/random.hpp"

namespace attn {
namespace {

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

std::vector<double> normal_vector(Rng& rng, std::size_t d) {
  std::vector<double> v(d);
  for (double& e : v) e = rng.normal();
  return v;
}

}  // namespace

RopeLesson rope_lesson(const RopeLessonConfig& c) {
  const std::size_t d = c.head_dim, N = c.positions;
  if (d == 0 || d % 2 != 0) {
    throw InputError("--head-dim: expected an even integer >= 2 (RoPE rotates pairs), got " + std::to_string(d));
  }
  RopeOptions options{c.base, c.style, {}, {}};
  check_rope(options, d, 1, 1);
  if (c.pair >= d / 2) {
    throw InputError("--pair: expected 0 <= pair < d/2 = " + std::to_string(d / 2) + ", got " +
                     std::to_string(c.pair));
  }
  if (N == 0) throw InputError("--positions: expected an integer >= 1, got 0");
  if (c.position < 0) throw InputError("--position: expected an integer >= 0");

  RopeLesson r;
  r.config = c;
  const std::vector<double> theta = rope_frequencies(d, c.base);
  for (std::size_t i = 0; i < d / 2; ++i) {
    r.frequencies.push_back({i, theta[i], 2 * std::numbers::pi / theta[i],
                             rope_pair(RopeStyle::Half, i, d), rope_pair(RopeStyle::Interleaved, i, d)});
  }

  // (2) The unit vector on the pair's first dim, turned by the kernel to each position.
  const auto [a, b] = rope_pair(c.style, c.pair, d);
  std::vector<double> unit(d, 0.0);
  unit[a] = 1.0;
  for (std::size_t p = 0; p < N; ++p) {
    const std::vector<double> u = rope_rotated(unit, static_cast<std::int64_t>(p), c.base, c.style);
    r.rotation.push_back({static_cast<std::int64_t>(p), static_cast<double>(p) * theta[c.pair], u[a], u[b]});
  }

  // (3) Scores of one q and one k placed at every pair of positions.
  Rng rng(c.seed);
  r.q = normal_vector(rng, d);
  r.k = normal_vector(rng, d);
  r.score_without_rope = dot(r.q, r.k);
  std::vector<std::vector<double>> qs(N), ks(N);
  for (std::size_t p = 0; p < N; ++p) {
    qs[p] = rope_rotated(r.q, static_cast<std::int64_t>(p), c.base, c.style);
    ks[p] = rope_rotated(r.k, static_cast<std::int64_t>(p), c.base, c.style);
  }
  r.scores.assign(N, std::vector<double>(N));
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = 0; j < N; ++j) r.scores[i][j] = dot(qs[i], ks[j]);
  for (long off = -static_cast<long>(N) + 1; off < static_cast<long>(N); ++off) {
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    std::size_t count = 0;
    for (std::size_t j = 0; j < N; ++j) {
      const long i = static_cast<long>(j) + off;
      if (i < 0 || i >= static_cast<long>(N)) continue;
      const double s = r.scores[static_cast<std::size_t>(i)][j];
      lo = std::min(lo, s);
      hi = std::max(hi, s);
      sum += s;
      ++count;
    }
    r.by_offset.push_back({off, count, sum / static_cast<double>(count), hi - lo});
    r.max_spread = std::max(r.max_spread, hi - lo);
  }

  // (4) Both styles on one vector, and the permutation that maps one onto the other.
  r.x = normal_vector(rng, d);
  r.half = rope_rotated(r.x, c.position, c.base, RopeStyle::Half);
  r.interleaved = rope_rotated(r.x, c.position, c.base, RopeStyle::Interleaved);
  r.permutation = interleaved_to_half_permutation(d);
  std::vector<double> px(d), p_inter(d);
  for (std::size_t m = 0; m < d; ++m) {
    px[m] = r.x[r.permutation[m]];
    p_inter[m] = r.interleaved[r.permutation[m]];
  }
  const std::vector<double> half_of_px = rope_rotated(px, c.position, c.base, RopeStyle::Half);
  for (std::size_t m = 0; m < d; ++m) {
    r.permutation_max_diff = std::max(r.permutation_max_diff, std::fabs(half_of_px[m] - p_inter[m]));
  }
  return r;
}

Json rope_lesson_json(const RopeLesson& r) {
  const RopeLessonConfig& c = r.config;
  Json freqs = Json::array();
  for (const RopeFrequency& f : r.frequencies) {
    freqs.push_back({{"pair", f.pair}, {"theta", f.theta}, {"wavelength_tokens", f.wavelength},
                     {"half_dims", {f.half_dims.first, f.half_dims.second}},
                     {"interleaved_dims", {f.interleaved_dims.first, f.interleaved_dims.second}}});
  }
  Json rotation = Json::array();
  for (const RopeRotationPoint& p : r.rotation) {
    rotation.push_back({{"position", p.position}, {"angle", p.angle}, {"x", p.x}, {"y", p.y}});
  }
  Json offsets = Json::array();
  for (const RopeOffset& o : r.by_offset) {
    offsets.push_back({{"offset", o.offset}, {"count", o.count}, {"mean", o.mean}, {"spread", o.spread}});
  }
  return {
      {"config",
       {{"head_dim", c.head_dim}, {"base", c.base}, {"positions", c.positions}, {"pair", c.pair},
        {"position", c.position}, {"style", rope_style_name(c.style)}, {"seed", c.seed}}},
      {"frequencies", freqs},
      {"rotation", {{"pair", c.pair}, {"theta", r.frequencies[c.pair].theta}, {"points", rotation}}},
      {"scores",
       {{"q", r.q}, {"k", r.k}, {"without_rope", r.score_without_rope}, {"matrix", r.scores},
        {"by_offset", offsets}, {"max_spread", r.max_spread},
        {"note", "scores[i][j] = rope(q, i) . rope(k, j); spread = max - min along the diagonal i - j"}}},
      {"styles",
       {{"position", c.position}, {"x", r.x}, {"half", r.half}, {"interleaved", r.interleaved},
        {"permutation", r.permutation},
        {"permutation_rule", "half[m] = interleaved[permutation[m]]: rope_half(P x) == P rope_interleaved(x)"},
        {"permutation_max_diff", r.permutation_max_diff}}},
  };
}

}  // namespace attn
