// Split-KV on one query row (split_kv.hpp): chunk partials and their merge with the flash
// kernel's own row state and merge (tile_math.hpp), checked against the naive kernel.
#include "attn/lessons/concepts/split_kv.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/attention.hpp"
#include "attn/engine/attention/tile_math.hpp"
#include "max_difference.hpp"

namespace attn {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A partial as the kernel holds it: (m, l) in base-2 units and float32, O unnormalised.
struct Partial {
  tile::RowState<float> state = tile::row_start<float>();
  std::vector<float> o;
};

// One chunk [j0, j1) streamed as one decode task streams its chunk: the chunk's max arrives
// (row_rescale from the empty state: nothing to rescale yet), then p_j = exp2(s_j - m),
// l += p_j, o += p_j v_j. s2 holds the scores in base 2 (q.k * scale * log2(e)), -inf = masked.
Partial chunk_partial(const std::vector<float>& s2, const Tensor2& v, std::size_t j0, std::size_t j1) {
  Partial p;
  p.o.assign(v.shape(1), 0.0f);
  float chunk_max = -std::numeric_limits<float>::infinity();
  for (std::size_t j = j0; j < j1; ++j) chunk_max = std::max(chunk_max, s2[j]);
  tile::row_rescale(p.state, chunk_max);
  if (p.state.m == -std::numeric_limits<float>::infinity()) return p;  // every key masked: (-inf, 0, 0)
  for (std::size_t j = j0; j < j1; ++j) {
    if (s2[j] == -std::numeric_limits<float>::infinity()) continue;
    const float e = tile::tile_exp2(s2[j] - p.state.m);
    p.state.l += e;
    for (std::size_t c = 0; c < p.o.size(); ++c) p.o[c] += e * v(j, c);
  }
  return p;
}

double natural(float base2) { return base2 == -std::numeric_limits<float>::infinity() ? -kInf : double(base2) * tile::kLn2d; }

Json nullable(double x) { return std::isfinite(x) ? Json(x) : Json(nullptr); }

}  // namespace

SplitKvLesson split_kv_merge(const Tensor1& q, const Tensor2& k, const Tensor2& v, const std::vector<bool>& allowed,
                             double scale, std::size_t chunks) {
  const std::size_t n = k.shape(0), d = q.shape(0), dv = v.shape(1);
  if (k.shape(1) != d || v.shape(0) != n || allowed.size() != n)
    throw InputError("split-kv: q [d], k [n, d], v [n, dv] and the mask [n] disagree");
  if (!std::isfinite(scale)) throw InputError("split-kv: the scale must be finite");
  if (chunks < 1 || chunks > n)
    throw InputError("--split-kv " + std::to_string(chunks) + ": expected 1 to " + std::to_string(n) +
                     " chunks (the cache has " + std::to_string(n) + (n == 1 ? " key)" : " keys)"));
  SplitKvLesson r;
  r.keys = n;
  r.scale = scale;

  // Scores as the flash kernel forms them: q pre-multiplied by scale * log2(e), float32 dots.
  const float scale_log2 = float(scale * tile::kLog2ed);
  std::vector<float> s2(n);
  for (std::size_t j = 0; j < n; ++j) {
    float dot = 0;
    for (std::size_t c = 0; c < d; ++c) dot += q(c) * scale_log2 * k(j, c);
    s2[j] = allowed[j] ? dot : -std::numeric_limits<float>::infinity();
    r.scores.push_back(natural(s2[j]));
  }

  // Cut: chunk c holds keys [c n / C, (c + 1) n / C): C chunks, none empty since C <= n.
  std::vector<Partial> parts;
  for (std::size_t c = 0; c < chunks; ++c) {
    SplitKvChunk chunk;
    chunk.first = c * n / chunks;
    chunk.end = (c + 1) * n / chunks;
    for (std::size_t j = chunk.first; j < chunk.end; ++j) chunk.visible += allowed[j] ? 1 : 0;
    parts.push_back(chunk_partial(s2, v, chunk.first, chunk.end));
    chunk.m = natural(parts.back().state.m);
    chunk.l = parts.back().state.l;
    chunk.o.assign(parts.back().o.begin(), parts.back().o.end());
    r.chunks.push_back(std::move(chunk));
  }

  // Merge. The decode kernel folds its chunks into a running state from tile::row_start; here
  // the state starts at the common max m = max_i m_i (with l = 0, O = 0), so that each
  // row_merge returns exactly the factor exp(m_i - m) that the picture shows for chunk i, and
  // 1 for what is already merged. Same function, same result, factors readable.
  float m2 = -std::numeric_limits<float>::infinity();
  for (const Partial& p : parts) m2 = std::max(m2, p.state.m);
  tile::RowState<float> merged{m2, 0.0f};
  std::vector<float> o(dv, 0.0f);
  for (std::size_t c = 0; c < chunks; ++c) {
    const tile::MergeFactors<float> f = tile::row_merge(merged, parts[c].state);
    for (std::size_t x = 0; x < dv; ++x) o[x] = o[x] * f.a + parts[c].o[x] * f.b;
    r.chunks[c].factor = f.b;
  }
  const float inv_l = tile::row_output_scale(merged);
  for (float x : o) {
    r.o.push_back(x);
    r.merged.push_back(double(x * inv_l));
  }
  r.m = natural(merged.m);
  r.l = merged.l;
  r.lse = double(tile::row_lse(merged));

  // The one-pass reference: the naive kernel on the same q, K, V and mask.
  Tensor3 q3 = Tensor3::from_shape({1, 1, d}), k3 = Tensor3::from_shape({1, n, d}), v3 = Tensor3::from_shape({1, n, dv});
  std::copy(q.begin(), q.end(), q3.begin());
  std::copy(k.begin(), k.end(), k3.begin());
  std::copy(v.begin(), v.end(), v3.begin());
  Mask3 mask = Mask3::from_shape({1, 1, n});
  for (std::size_t j = 0; j < n; ++j) mask(0, 0, j) = allowed[j];
  SdpaOptions options;
  options.scale = scale;
  const SdpaResult ref = attention(q3, k3, v3, &mask, options);
  for (std::size_t x = 0; x < dv; ++x) r.one_pass.push_back(ref.output(0, 0, x));
  r.max_abs_diff = max_abs_difference(r.merged, r.one_pass);
  return r;
}

Json split_kv_json(const SplitKvLesson& r) {
  Json chunks = Json::array();
  for (const SplitKvChunk& c : r.chunks) {
    chunks.push_back({{"first", c.first}, {"end", c.end}, {"visible", c.visible}, {"m", nullable(c.m)},
                      {"l", c.l}, {"o", c.o}, {"factor", c.factor}});
  }
  Json scores = Json::array();
  for (double s : r.scores) scores.push_back(nullable(s));
  return {{"about", "Flash-Decoding's split-KV merge on one query row: chunk i keeps (m_i, l_i, o_i) over keys "
                    "[first, end); the merge rescales each by factor = exp(m_i - m), m = max m_i; output = "
                    "sum factor_i o_i / sum factor_i l_i (null = -inf: a chunk with no visible key)"},
          {"keys", r.keys}, {"chunk_count", r.chunks.size()}, {"scale", r.scale}, {"scores", scores},
          {"chunks", chunks}, {"m", nullable(r.m)}, {"l", r.l}, {"o", r.o}, {"lse", nullable(r.lse)},
          {"merged", r.merged}, {"one_pass", r.one_pass}, {"max_abs_diff", r.max_abs_diff}};
}

}  // namespace attn
