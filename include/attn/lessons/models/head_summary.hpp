#pragma once
// What each head of a model does, measured on the very tokens it is shown (the kinds of head that
// Clark et al. 2019, "What Does BERT Look At?", and Olsson et al. 2022, "In-context Learning and
// Induction Heads", name). One scoring function for every command: train (on its held-out
// sequences), demo, forward, report and the pictures. Every score is a mean of attention
// weights over the rows that count, so it lies in [0, 1]:
//
//   previous_token  mean over queries i >= 1 of A[i, i-1]            (the key just before)
//   first_token     mean over queries i >= 1 of A[i, 0]              (the "attention sink")
//   induction       mean over the queries i whose token appeared exactly once before, at j, of
//                   A[i, j+1]: the key just after that copy, which holds what followed the token
//                   last time (a token seen twice before has two candidates, so its row says
//                   nothing and is left out); null when no such query exists
//   entropy         mean over queries i >= 1 of H(A[i, 0..i]) / ln(i + 1): 1 = evenly spread
//                   over every visible key, 0 = all weight on one key
//
// A score means nothing next to what a head with no pattern at all gets: a uniform head
// (A[i, j] = 1/(i+1) over the visible keys) scores the mean of 1/(i+1) over the same rows, 0.42
// for previous-token at 3 tokens. So each kind's bar is its threshold (previous-token 0.4,
// first-token 0.5, induction 0.4), raised to at least a quarter of the way from that uniform
// score to 1 (kBeatUniformShare): 0.56 for previous-token at 3 tokens, 0.4 again from 12.
//
// The rule (kHeadKindRule), in a sentence: a head is the kind with the largest score among
// those that reach their bar; else "broad" when its entropy is >= 0.8; else "mixed". Query 0
// sees only itself, so it says nothing and is left out of every mean; with one token every
// score is null and every head "untested".
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attn/engine/core/tensor.hpp"
#include "attn/io/json_io.hpp"

namespace attn {

inline constexpr double kPrevTokenThreshold = 0.4, kFirstTokenThreshold = 0.5, kInductionThreshold = 0.4,
                        kBroadEntropyThreshold = 0.8, kBeatUniformShare = 0.25;
inline const char* kHeadKindRule =
    "a head is the kind (previous-token, first-token, induction) with the largest score among those that "
    "reach their bar; else broad when its entropy >= 0.8; else mixed";
inline const char* kHeadBarRule =
    "bar = max(threshold, uniform + 0.25 x (1 - uniform)); thresholds previous-token 0.4, first-token 0.5, "
    "induction 0.4; uniform = the score of a head that spreads its weight evenly over the visible keys";

// One kind's bar on some rows: uniform = mean over the scored queries i of 1/(i+1);
// bar = max(threshold, uniform + kBeatUniformShare * (1 - uniform)).
struct KindBar {
  double threshold = 0, uniform = 0, bar = 0;
};
// The bar for a score averaged over the given query rows of a causal head (InputError when none).
KindBar kind_bar(double threshold, const std::vector<std::size_t>& queries);

// The cells an induction score reads: query i, whose token appeared exactly once before, at j,
// and key j + 1.
struct InductionCell {
  std::size_t query = 0, key = 0;
};
std::vector<InductionCell> induction_cells(const std::vector<std::int32_t>& ids);

struct HeadScores {
  std::size_t layer = 0, head = 0;
  std::optional<double> previous_token, first_token, entropy;  // null with one token
  std::optional<double> induction;                             // null with no induction cell
  std::string kind;  // "previous-token", "first-token", "induction", "broad", "mixed", "untested"
};

struct HeadSummary {
  std::size_t tokens = 0;     // n of each scored sequence
  std::size_t sequences = 1;  // how many the scores are pooled over (train's held-out set)
  // The induction rows, of the one sequence shown (summed over sequences in induction_rows).
  std::vector<InductionCell> induction_cells;
  std::size_t induction_rows = 0;
  bool induction_measured() const { return induction_rows > 0; }
  // The bars (null with one token; induction's null when no token repeats).
  std::optional<KindBar> previous_token_bar, first_token_bar, induction_bar;
  std::vector<HeadScores> heads;  // layer-major
};

// ids: the n tokens shown; attention: [layers] of [H, n, n] on them.
HeadSummary summarize_heads(const std::vector<std::int32_t>& ids, const std::vector<Tensor3>& attention);
// Pooled over several sequences of the same length (train's held-out set): every mean runs over
// the counted rows of all of them; attention[s] is sequence s's [layers] of [H, n, n].
HeadSummary summarize_heads(const std::vector<std::vector<std::int32_t>>& ids,
                            const std::vector<std::vector<Tensor3>>& attention);

// Whether `score` reaches `bar` (false when either is missing).
bool reaches_bar(const std::optional<double>& score, const std::optional<KindBar>& bar);

// "L3 H5" style short name of a kind, for picture titles: "prev", "first", "induct", "broad", "mixed".
std::string head_kind_short(const std::string& kind);

// What a picture of these heads says of the induction score: on which rows it was scored, or
// that no token of the text appears twice.
std::string induction_scope(const HeadSummary& s);

// {"rule", "bar_rule", "thresholds", "bars", "score_definitions", "tokens", "sequences",
//  "induction_measured", "induction_cells", "heads": [...]}.
Json head_summary_json(const HeadSummary& summary);

}  // namespace attn
