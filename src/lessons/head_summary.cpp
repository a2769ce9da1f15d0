// Head scores and kinds (head_summary.hpp).
#include "attn/lessons/head_summary.hpp"

#include <cmath>

#include "attn/engine/error.hpp"

namespace attn {
namespace {

std::string classify(const HeadScores& s) {
  std::string kind;
  double best = -1;
  auto consider = [&](const char* name, double score, double threshold) {
    if (score >= threshold && score > best) {
      best = score;
      kind = name;
    }
  };
  consider("previous-token", s.previous_token, kPrevTokenThreshold);
  consider("first-token", s.first_token, kFirstTokenThreshold);
  if (s.induction) consider("induction", *s.induction, kInductionThreshold);
  if (!kind.empty()) return kind;
  return s.entropy >= kBroadEntropyThreshold ? "broad" : "mixed";
}

}  // namespace

HeadSummary summarize_heads(const std::vector<Tensor3>& attention, const std::vector<Tensor3>& repeated) {
  if (attention.empty()) throw InputError("head summary: no layers");
  const std::size_t n = attention.front().shape(1);
  if (n < 2) throw InputError("head summary: expected at least 2 tokens (query 0 sees only itself), got " + std::to_string(n));
  HeadSummary out;
  out.tokens = n;
  out.induction_measured = !repeated.empty();
  for (std::size_t l = 0; l < attention.size(); ++l) {
    const Tensor3& a = attention[l];
    for (std::size_t h = 0; h < a.shape(0); ++h) {
      HeadScores s;
      s.layer = l;
      s.head = h;
      for (std::size_t i = 1; i < n; ++i) {
        s.previous_token += a(h, i, i - 1);
        s.first_token += a(h, i, 0);
        double entropy = 0;
        for (std::size_t j = 0; j <= i; ++j) {
          const double w = a(h, i, j);
          if (w > 0) entropy -= w * std::log(w);
        }
        s.entropy += entropy / std::log(double(i + 1));
      }
      s.previous_token /= double(n - 1);
      s.first_token /= double(n - 1);
      s.entropy /= double(n - 1);
      if (!repeated.empty()) {
        const Tensor3& r = repeated[l];
        double sum = 0;
        for (std::size_t i = n; i < 2 * n; ++i) sum += r(h, i, i - n + 1);
        s.induction = sum / double(n);
      }
      s.kind = classify(s);
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
                     {"previous_token", h.previous_token},
                     {"first_token", h.first_token},
                     {"induction", h.induction ? Json(*h.induction) : Json(nullptr)},
                     {"entropy", h.entropy},
                     {"kind", h.kind}});
  }
  return {{"rule", kHeadKindRule},
          {"thresholds",
           {{"previous_token", kPrevTokenThreshold},
            {"first_token", kFirstTokenThreshold},
            {"induction", kInductionThreshold},
            {"entropy", kBroadEntropyThreshold}}},
          {"score_definitions",
           {{"previous_token", "mean over queries i >= 1 of A[i, i-1]"},
            {"first_token", "mean over queries i >= 1 of A[i, 0]"},
            {"induction",
             "on the n tokens repeated twice: mean over i in [n, 2n) of A[i, i-n+1] (the key after the same "
             "token's first copy); null when 2n exceeds n_positions"},
            {"entropy", "mean over queries i >= 1 of H(A[i, 0..i]) / ln(i+1); 1 = even over the visible keys"}}},
          {"tokens", s.tokens},
          {"induction_measured", s.induction_measured},
          {"heads", heads}};
}

}  // namespace attn
