// Head scores and kinds (head_summary.hpp).
#include "attn/lessons/models/head_summary.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "attn/engine/core/error.hpp"

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

// Sums of one head's scores over the counted rows of every sequence.
struct HeadSums {
  double previous = 0, first = 0, spread = 0, induction = 0;
};

void add_sequence(HeadSums& sums, const Tensor3& a, std::size_t h, const std::vector<InductionCell>& cells) {
  const std::size_t n = a.shape(1);
  for (std::size_t i = 1; i < n; ++i) {
    sums.previous += a(h, i, i - 1);
    sums.first += a(h, i, 0);
    double entropy = 0;
    for (std::size_t j = 0; j <= i; ++j) {
      const double w = a(h, i, j);
      if (w > 0) entropy -= w * std::log(w);
    }
    sums.spread += entropy / std::log(double(i + 1));
  }
  for (const InductionCell& c : cells) sums.induction += a(h, c.query, c.key);
}

}  // namespace

KindBar kind_bar(double threshold, const std::vector<std::size_t>& queries) {
  if (queries.empty()) throw InputError("head summary: no query to score");
  double uniform = 0;
  for (std::size_t i : queries) uniform += 1.0 / double(i + 1);
  uniform /= double(queries.size());
  return {threshold, uniform, std::max(threshold, uniform + kBeatUniformShare * (1 - uniform))};
}

std::vector<InductionCell> induction_cells(const std::vector<std::int32_t>& ids) {
  std::vector<InductionCell> cells;
  struct Seen {
    std::size_t first = 0, times = 0;
  };
  std::map<std::int32_t, Seen> seen;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    Seen& s = seen[ids[i]];
    if (s.times == 1) cells.push_back({i, s.first + 1});
    if (s.times++ == 0) s.first = i;
  }
  return cells;
}

bool reaches_bar(const std::optional<double>& score, const std::optional<KindBar>& bar) {
  return score && bar && *score >= bar->bar;
}

HeadSummary summarize_heads(const std::vector<std::int32_t>& ids, const std::vector<Tensor3>& attention) {
  return summarize_heads(std::vector<std::vector<std::int32_t>>{ids}, std::vector<std::vector<Tensor3>>{attention});
}

HeadSummary summarize_heads(const std::vector<std::vector<std::int32_t>>& ids,
                            const std::vector<std::vector<Tensor3>>& attention) {
  if (ids.empty() || ids.size() != attention.size()) throw InputError("head summary: one token list per sequence");
  if (attention.front().empty()) throw InputError("head summary: no layers");
  const std::size_t n = ids.front().size(), layers = attention.front().size();
  if (n == 0) throw InputError("head summary: no tokens");
  HeadSummary out;
  out.tokens = n;
  out.sequences = ids.size();
  std::vector<std::vector<InductionCell>> cells;
  std::vector<std::size_t> all_rows, induction_queries;
  for (std::size_t s = 0; s < ids.size(); ++s) {
    if (ids[s].size() != n || attention[s].size() != layers) throw InputError("head summary: sequences differ in shape");
    cells.push_back(induction_cells(ids[s]));
    for (std::size_t i = 1; i < n; ++i) all_rows.push_back(i);
    for (const InductionCell& c : cells.back()) induction_queries.push_back(c.query);
  }
  out.induction_cells = cells.front();
  out.induction_rows = induction_queries.size();
  const bool scored = n >= 2;  // query 0 sees only itself
  if (scored) {
    out.previous_token_bar = kind_bar(kPrevTokenThreshold, all_rows);
    out.first_token_bar = kind_bar(kFirstTokenThreshold, all_rows);
    if (out.induction_measured()) out.induction_bar = kind_bar(kInductionThreshold, induction_queries);
  }
  for (std::size_t l = 0; l < layers; ++l) {
    for (std::size_t h = 0; h < attention.front()[l].shape(0); ++h) {
      HeadScores s;
      s.layer = l;
      s.head = h;
      if (!scored) {
        s.kind = "untested";
        out.heads.push_back(s);
        continue;
      }
      HeadSums sums;
      for (std::size_t q = 0; q < ids.size(); ++q) add_sequence(sums, attention[q][l], h, cells[q]);
      const double rows = double(all_rows.size());
      s.previous_token = sums.previous / rows;
      s.first_token = sums.first / rows;
      s.entropy = sums.spread / rows;
      if (out.induction_measured()) s.induction = sums.induction / double(out.induction_rows);
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
  Json heads = Json::array(), cells = Json::array();
  for (const HeadScores& h : s.heads) {
    heads.push_back({{"layer", h.layer},
                     {"head", h.head},
                     {"previous_token", optional_json(h.previous_token)},
                     {"first_token", optional_json(h.first_token)},
                     {"induction", optional_json(h.induction)},
                     {"entropy", optional_json(h.entropy)},
                     {"kind", h.kind}});
  }
  for (const InductionCell& c : s.induction_cells) cells.push_back({{"query", c.query}, {"key", c.key}});
  return {{"rule", kHeadKindRule},
          {"bar_rule", kHeadBarRule},
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
             "mean over the queries i whose token appeared exactly once before (at j) of A[i, j+1], the key "
             "after that copy (induction_cells); null when there is no such query"},
            {"entropy", "mean over queries i >= 1 of H(A[i, 0..i]) / ln(i+1); 1 = even over the visible keys"},
            {"uniform", "the score of a head with A[i, j] = 1/(i+1): mean of 1/(i+1) over the scored queries"}}},
          {"tokens", s.tokens},
          {"sequences", s.sequences},
          {"induction_measured", s.induction_measured()},
          {"induction_cells", cells},
          {"heads", heads}};
}

std::string induction_scope(const HeadSummary& s) {
  if (!s.induction_measured()) return "induction not scored: no token of this text appears twice";
  const std::size_t rows = s.induction_cells.size();
  return "induction scored on the " + (rows == 1 ? std::string("row") : std::to_string(rows) + " rows") +
         " whose token appeared once before";
}

}  // namespace attn
