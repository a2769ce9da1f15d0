#pragma once
// What each head of a real model does, measured rather than guessed (the kinds of head that
// Clark et al. 2019, "What Does BERT Look At?", and Olsson et al. 2022, "In-context Learning and
// Induction Heads", name). Every score is a mean of attention weights, so it lies in [0, 1]:
//
//   previous_token  mean over queries i >= 1 of A[i, i-1]            (the key just before)
//   first_token     mean over queries i >= 1 of A[i, 0]              (the "attention sink")
//   induction       on the tokens repeated twice, T T (n tokens each): mean over the second
//                   copy's queries i in [n, 2n) of A[i, i-n+1], the key just after the same
//                   token's first copy; null when 2n exceeds the model's positions or n < 2
//   entropy         mean over queries i >= 1 of H(A[i, 0..i]) / ln(i + 1): 1 = evenly spread
//                   over every visible key, 0 = all weight on one key
//
// A score means nothing next to what a head with no pattern at all gets: a uniform head
// (A[i, j] = 1/(i+1) over the visible keys) scores mean 1/(i+1) over the same queries, 0.42 for
// previous-token at 3 tokens. So each kind's bar at this length is its threshold (previous-token
// 0.4, first-token 0.5, induction 0.4), raised to at least a quarter of the way from that uniform
// score to 1 (kBeatUniformShare): 0.56 for previous-token at 3 tokens, 0.4 again from 12.
//
// The rule (kHeadKindRule): a head is the kind among previous-token, first-token and induction
// whose score is largest among those that reach their bar; otherwise "broad" when its entropy is
// >= 0.8; otherwise "mixed". Query 0 sees only itself, so it says nothing and is left out of every
// mean; with one token every score is null and every head "untested".
#include <optional>
#include <string>
#include <vector>

#include "attn/engine/tensor.hpp"
#include "attn/io/json_io.hpp"

namespace attn {

inline constexpr double kPrevTokenThreshold = 0.4, kFirstTokenThreshold = 0.5, kInductionThreshold = 0.4,
                        kBroadEntropyThreshold = 0.8, kBeatUniformShare = 0.25;
inline const char* kHeadKindRule =
    "the kind among previous-token, first-token and induction with the largest score that reaches its bar "
    "(its threshold: previous-token 0.4, first-token 0.5, induction 0.4, raised to uniform + 0.25 x (1 - uniform), "
    "where uniform is the score of a head spreading its weight evenly over the visible keys at this length); "
    "else broad when entropy >= 0.8; else mixed; untested with one token";

// One kind's bar at one length: uniform = mean over the scored queries i of 1/(i+1);
// bar = max(threshold, uniform + kBeatUniformShare * (1 - uniform)).
struct KindBar {
  double threshold = 0, uniform = 0, bar = 0;
};
// The bar for a score averaged over queries i in [first_query, end_query) of a causal head.
KindBar kind_bar(double threshold, std::size_t first_query, std::size_t end_query);

struct HeadScores {
  std::size_t layer = 0, head = 0;
  std::optional<double> previous_token, first_token, entropy;  // null with one token
  std::optional<double> induction;
  std::string kind;  // "previous-token", "first-token", "induction", "broad", "mixed", "untested"
};

struct HeadSummary {
  std::size_t tokens = 0;           // n
  bool induction_measured = false;  // the repeated run fitted the model's positions
  // The bars at this n (null with one token; induction's null when it was not measured).
  std::optional<KindBar> previous_token_bar, first_token_bar, induction_bar;
  std::vector<HeadScores> heads;    // layer-major
};

// attention: [layers] of [H, n, n] on the text; repeated: [layers] of [H, 2n, 2n] on the text
// twice (empty when it was not run; ignored for n < 2).
HeadSummary summarize_heads(const std::vector<Tensor3>& attention, const std::vector<Tensor3>& repeated);

// Whether `score` reaches `bar` (false when either is missing).
bool reaches_bar(const std::optional<double>& score, const std::optional<KindBar>& bar);

// "L3 H5" style short name of a kind, for picture titles: "prev", "first", "induct", "broad", "mixed".
std::string head_kind_short(const std::string& kind);

// What a picture of these heads says of the induction score: "induction scored on this text
// repeated twice", or, when the text twice did not fit the model's positions, that it was not.
std::string induction_scope(const HeadSummary& s);

// {"rule", "thresholds", "bars", "score_definitions", "tokens", "induction_measured", "heads": [...]}.
Json head_summary_json(const HeadSummary& summary);

}  // namespace attn
