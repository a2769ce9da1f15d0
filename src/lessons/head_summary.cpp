// Head scores and kinds (head_summary.hpp).
#include "attn/lessons/head_summary.hpp"

#include <algorithm>
#include <cmath>

#include "attn/engine/error.hpp"

namespace attn {
namespace {

std::string classify(const HeadScores& s, const HeadSummary& summary) {
  std::string kind;
  double best = -1;
  auto consider = [&](const char* name, const std::optional<double>& score, const std::optional<KindBar>& bar) {
    if (reaches_bar(score, bar) && *score > best) {
      best = *score;
      kind = name;
    }
  };
  consider("previous-token", s.previous_token, summary.previous_token_bar);
  consider("first-token", s.first_token, summary.first_token_bar);
  consider("induction", s.induction, summary.induction_bar);
  if (!kind.empty()) return kind;
  return *s.entropy >= kBroadEntropyThreshold ? "broad" : "mixed";
}

Json bar_json(const std::optional<KindBar>& b) {
  if (!b) return nullptr;
  return {{"threshold", b->threshold}, {"uniform", b->uniform}, {"bar", b->bar}};
}

Json optional_json(const std::optional<double>& x) { return x ? Json(*x) : Json(nullptr); }

}  // namespace

KindBar kind_bar(double threshold, std::size_t first_query, std::size_t end_query) {
  if (end_query <= first_query) throw InputError("head summary: no query to score");
  double uniform = 0;
  for (std::size_t i = first_query; i < end_query; ++i) uniform += 1.0 / double(i + 1);
  uniform /= double(end_query - first_query);
  return {threshold, uniform, std::max(threshold, uniform + kBeatUniformShare * (1 - uniform))};
}

bool reaches_bar(const std::optional<double>& score, const std::optional<KindBar>& bar) {
  return score && bar && *score >= bar->bar;
}

HeadSummary summarize_heads(const std::vector<Tensor3>& attention, const std::vector<Tensor3>& repeated) {
  if (attention.empty()) throw InputError("head summary: no layers");
  const std::size_t n = attention.front().shape(1);
  if (n == 0) throw InputError("head summary: no tokens");
  HeadSummary out;
  out.tokens = n;
  const bool scored = n >= 2;  // query 0 sees only itself
  out.induction_measured = scored && !repeated.empty();
  if (scored) {
    out.previous_token_bar = kind_bar(kPrevTokenThreshold, 1, n);
    out.first_token_bar = kind_bar(kFirstTokenThreshold, 1, n);
    if (out.induction_measured) out.induction_bar = kind_bar(kInductionThreshold, n, 2 * n);
  }
  for (std::size_t l = 0; l < attention.size(); ++l) {
    const Tensor3& a = attention[l];
    for (std::size_t h = 0; h < a.shape(0); ++h) {
      HeadScores s;
      s.layer = l;
      s.head = h;
      if (!scored) {
        s.kind = "untested";
        out.heads.push_back(s);
        continue;
      }
      double previous = 0, first = 0, spread = 0;
      for (std::size_t i = 1; i < n; ++i) {
        previous += a(h, i, i - 1);
        first += a(h, i, 0);
        double entropy = 0;
        for (std::size_t j = 0; j <= i; ++j) {
          const double w = a(h, i, j);
          if (w > 0) entropy -= w * std::log(w);
        }
        spread += entropy / std::log(double(i + 1));
      }
      s.previous_token = previous / double(n - 1);
      s.first_token = first / double(n - 1);
      s.entropy = spread / double(n - 1);
      if (out.induction_measured) {
        const Tensor3& r = repeated[l];
        double sum = 0;
        for (std::size_t i = n; i < 2 * n; ++i) sum += r(h, i, i - n + 1);
        s.induction = sum / double(n);
      }
      s.kind = classify(s, out);
      out.heads.push_back(s);
    }
  }
  return out;
}

std::string head_kind_short(const std::string& kind) {
  if (kind == "previous-token") return "prev";
  if (kind == "first-token") return "first";
  if (kind == "induction") return "induct";
  return kind;
}

Json head_summary_json(const HeadSummary& s) {
  Json heads = Json::array();
  for (const HeadScores& h : s.heads) {
    heads.push_back({{"layer", h.layer},
                     {"head", h.head},
                     {"previous_token", optional_json(h.previous_token)},
                     {"first_token", optional_json(h.first_token)},
                     {"induction", optional_json(h.induction)},
                     {"entropy", optional_json(h.entropy)},
                     {"kind", h.kind}});
  }
  return {{"rule", kHeadKindRule},
          {"thresholds",
           {{"previous_token", kPrevTokenThreshold},
            {"first_token", kFirstTokenThreshold},
            {"induction", kInductionThreshold},
            {"entropy", kBroadEntropyThreshold},
            {"beat_uniform_share", kBeatUniformShare}}},
          {"bars",
           {{"previous_token", bar_json(s.previous_token_bar)},
            {"first_token", bar_json(s.first_token_bar)},
            {"induction", bar_json(s.induction_bar)}}},
          {"score_definitions",
           {{"previous_token", "mean over queries i >= 1 of A[i, i-1]; null with one token"},
            {"first_token", "mean over queries i >= 1 of A[i, 0]; null with one token"},
            {"induction",
             "on the n tokens repeated twice: mean over i in [n, 2n) of A[i, i-n+1] (the key after the same "
             "token's first copy); null when 2n exceeds n_positions or n < 2"},
            {"entropy", "mean over queries i >= 1 of H(A[i, 0..i]) / ln(i+1); 1 = even over the visible keys"},
            {"uniform", "the score of a head with A[i, j] = 1/(i+1): mean of 1/(i+1) over the scored queries"}}},
          {"tokens", s.tokens},
          {"induction_measured", s.induction_measured},
          {"heads", heads}};
}

std::string induction_scope(const HeadSummary& s) {
  if (s.induction_measured) return "induction scored on this text repeated twice";
  return "induction not scored: the text twice (" + std::to_string(2 * s.tokens) +
         " tokens) does not fit the model's positions";
}

}  // namespace attn
