#include "attn/lessons/concepts/positions_lesson.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/linear.hpp"
#include "attn/engine/attention/mha.hpp"
#include "attn/engine/positions/positional.hpp"
#include "attn/engine/positions/rope.hpp"
#include "attn/engine/attention/attention.hpp"

namespace attn {

std::string position_kind_name(PositionKind kind) {
  switch (kind) {
    case PositionKind::none: return "none";
    case PositionKind::sinusoidal: return "sinusoidal";
    case PositionKind::rope: return "rope";
  }
  return "none";
}

PositionKind parse_position_kind(const std::string& name, const std::string& field) {
  for (PositionKind k : {PositionKind::none, PositionKind::sinusoidal, PositionKind::rope})
    if (position_kind_name(k) == name) return k;
  throw InputError(field + ": expected \"none\", \"sinusoidal\" or \"rope\", got \"" + name + "\"");
}

Tensor2 single_head_weights(const std::vector<Token>& tokens, std::size_t D, std::uint64_t seed, PositionKind kind) {
  // x [L, D]: the same seeded vector wherever the same word appears (tokenize.hpp).
  Tensor2 x = embed_tokens(tokens, D, seed);
  // The seeded embeddings are N(0,1), already the size of PE's entries: added as they are. (A
  // model whose embeddings are ~1/sqrt(D) scales them by sqrt(D) first, positional.hpp; here
  // that would make the scores 64 times larger and every row one-hot.)
  if (kind == PositionKind::sinusoidal) x = x + sinusoidal_encoding(tokens.size(), D);
  const MhaWeights w = init_mha_weights(D, 1, 1, seed + 1);
  Tensor3 q = xt::expand_dims(linear(x, w.w_q), 0), k = xt::expand_dims(linear(x, w.w_k), 0);
  const Tensor3 v = xt::expand_dims(linear(x, w.w_v), 0);
  if (kind == PositionKind::rope) {
    std::vector<std::int64_t> positions(tokens.size());
    std::iota(positions.begin(), positions.end(), 0);
    const RopeOptions rope{10000.0, RopeStyle::Half, {}, {}};
    q = apply_rope(q, positions, rope);
    k = apply_rope(k, positions, rope);
  }
  return xt::view(attention(q, k, v).weights, 0, xt::all(), xt::all());
}

std::vector<PositionRun> run_positions_lesson(const std::vector<Token>& tokens, std::size_t D, std::uint64_t seed) {
  const std::size_t L = tokens.size();
  std::vector<Token> reversed(tokens.rbegin(), tokens.rend());
  std::vector<PositionRun> runs;
  for (PositionKind kind : {PositionKind::none, PositionKind::sinusoidal, PositionKind::rope}) {
    if (kind == PositionKind::rope && D % 2 != 0) continue;
    PositionRun run{kind, {}, 0};
    const Tensor2 a = single_head_weights(tokens, D, seed, kind);
    for (std::size_t i = 0; i < L; ++i) {
      bool seen_before = false;
      for (std::size_t p = 0; p < i && !seen_before; ++p) seen_before = tokens[p].text == tokens[i].text;
      if (seen_before) continue;
      for (std::size_t j = i + 1; j < L; ++j) {
        if (tokens[j].text != tokens[i].text) continue;
        RepeatedWord r{tokens[i].text, i, j, 0};
        for (std::size_t c = 0; c < L; ++c) r.max_row_diff = std::max(r.max_row_diff, std::fabs(double(a(i, c)) - double(a(j, c))));
        run.repeated.push_back(r);
        break;
      }
    }
    const Tensor2 ar = single_head_weights(reversed, D, seed, kind);
    for (std::size_t i = 0; i < L; ++i)
      for (std::size_t j = 0; j < L; ++j)
        run.reversal_diff = std::max(run.reversal_diff, std::fabs(double(ar(i, j)) - double(a(L - 1 - i, L - 1 - j))));
    runs.push_back(std::move(run));
  }
  return runs;
}

Json positions_json(const std::vector<PositionRun>& runs, PositionKind used) {
  Json kinds = Json::array();
  for (const PositionRun& run : runs) {
    Json repeated = Json::array();
    for (const RepeatedWord& r : run.repeated) {
      repeated.push_back({{"token", r.token}, {"positions", {r.first, r.second}}, {"max_row_diff", r.max_row_diff}});
    }
    kinds.push_back({{"kind", position_kind_name(run.kind)}, {"repeated_words", repeated},
                     {"reversal_max_diff", run.reversal_diff}});
  }
  return {{"used", position_kind_name(used)},
          {"rule",
           "single head, non-causal; max_row_diff = max_j |A[first, j] - A[second, j]| for two copies of a word; "
           "reversal_max_diff = max |A_reversed[i, j] - A[L-1-i, L-1-j]| for the sentence reversed. Both are 0 "
           "without positions: attention alone is permutation-equivariant"},
          {"sinusoidal", "x + PE (Vaswani et al. 2017, 3.5; x is N(0,1), already the size of PE)"},
          {"rope", "q and k rotated to positions 0..L-1, rotate-half, base 10000"},
          {"kinds", kinds}};
}

}  // namespace attn
