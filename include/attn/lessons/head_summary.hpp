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
// The rule (kHeadKindRule): a head is the kind among previous-token (>= 0.4), first-token
// (>= 0.5) and induction (>= 0.4) whose score is largest among those over their threshold;
// otherwise "broad" when its entropy is >= 0.8; otherwise "mixed". Query 0 sees only itself,
// so it says nothing and is left out of every mean.
#include <optional>
#include <string>
#include <vector>

#include "attn/engine/tensor.hpp"
#include "attn/io/json_io.hpp"

namespace attn {

inline constexpr double kPrevTokenThreshold = 0.4, kFirstTokenThreshold = 0.5, kInductionThreshold = 0.4,
                        kBroadEntropyThreshold = 0.8;
inline const char* kHeadKindRule =
    "the kind among previous-token (score >= 0.4), first-token (>= 0.5) and induction (>= 0.4) with the "
    "largest score over its threshold; else broad when entropy >= 0.8; else mixed";

struct HeadScores {
  std::size_t layer = 0, head = 0;
  double previous_token = 0, first_token = 0, entropy = 0;
  std::optional<double> induction;
  std::string kind;  // "previous-token", "first-token", "induction", "broad", "mixed"
};

struct HeadSummary {
  std::size_t tokens = 0;           // n
  bool induction_measured = false;  // the repeated run fitted the model's positions
  std::vector<HeadScores> heads;    // layer-major
};

// attention: [layers] of [H, n, n] on the text; repeated: [layers] of [H, 2n, 2n] on the text
// twice (empty when it was not run). InputError for fewer than 2 tokens (query 0 alone says
// nothing about any head).
HeadSummary summarize_heads(const std::vector<Tensor3>& attention, const std::vector<Tensor3>& repeated);

// "L3 H5" style short name of a kind, for picture titles: "prev", "first", "induct", "broad", "mixed".
std::string head_kind_short(const std::string& kind);

// {"rule", "thresholds", "score_definitions", "tokens", "induction_measured", "heads": [...]}.
Json head_summary_json(const HeadSummary& summary);

}  // namespace attn
