#pragma once
// What `attn-cli rope` shows, as plain numbers (the renderer draws the same structs later):
//   1. the per-pair frequencies theta_i = base^(-2i/d) and their wavelengths in tokens;
//   2. one 2-D pair turning as the position grows (the unit vector on that pair's first dim,
//      rotated by the engine's own kernel);
//   3. the score rope(q, i) . rope(k, j) for every (i, j): constant along each diagonal
//      i - j = const, i.e. it depends on the offset only (checked numerically per offset);
//   4. the two styles side by side on one vector, and the permutation between them.
#include <cstdint>
#include <utility>
#include <vector>

#include "attn/io/json_io.hpp"
#include "attn/engine/positions/rope.hpp"

namespace attn {

struct RopeLessonConfig {
  std::size_t head_dim = 8;          // d, even
  double base = 10000.0;
  std::size_t positions = 8;         // the tables cover positions 0 .. positions - 1
  std::size_t pair = 0;              // the pair traced in (2)
  std::int64_t position = 3;         // the position of (4)
  RopeStyle style = RopeStyle::Half; // the style of (2) and (3)
  std::uint64_t seed = 42;           // q, k and x are seeded N(0, 1) vectors
};

struct RopeFrequency {
  std::size_t pair;
  double theta;       // radians per token
  double wavelength;  // 2 pi / theta tokens for one full turn
  std::pair<std::size_t, std::size_t> half_dims, interleaved_dims;
};

struct RopeRotationPoint {
  std::int64_t position;
  double angle;  // position * theta, radians
  double x, y;   // the pair's two components after rotation: (cos angle, sin angle)
};

struct RopeOffset {
  long offset;        // i - j
  std::size_t count;  // cells on that diagonal
  double mean;
  double spread;      // max - min of the scores on the diagonal: ~1e-16 when only i - j matters
};

struct RopeLesson {
  RopeLessonConfig config;
  std::vector<RopeFrequency> frequencies;
  std::vector<RopeRotationPoint> rotation;
  std::vector<double> q, k;                  // [d]
  double score_without_rope = 0;             // q . k, the same at every (i, j)
  std::vector<std::vector<double>> scores;   // [N, N]: rope(q, i) . rope(k, j)
  std::vector<RopeOffset> by_offset;         // offsets -(N-1) .. N-1
  double max_spread = 0;
  std::vector<double> x, half, interleaved;  // x [d] rotated to `position` in each style
  std::vector<std::size_t> permutation;      // interleaved_to_half_permutation(d)
  double permutation_max_diff = 0;           // max |rope_half(P x) - P rope_interleaved(x)|
};

// InputError for an odd or zero head_dim, pair >= d/2, positions == 0, a bad base.
RopeLesson rope_lesson(const RopeLessonConfig& config);

Json rope_lesson_json(const RopeLesson& lesson);

}  // namespace attn
