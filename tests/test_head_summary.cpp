// head_summary.hpp on attention patterns built by hand, each with the scores worked out here.
#include <doctest/doctest.h>

#include <cmath>

#include "attn/engine/core/error.hpp"
#include "attn/lessons/models/head_summary.hpp"

using namespace attn;

namespace {

// [1, n, n] with row i given by `row(i, j)`.
template <class Row>
Tensor3 pattern(std::size_t n, Row row) {
  Tensor3 a = Tensor3::from_shape({1, n, n});
  a.fill(0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j <= i; ++j) a(0, i, j) = float(row(i, j));
  return a;
}

}  // namespace

// Ids 0, 1, ..., n-1: no token appears twice, so induction is not scored.
static std::vector<std::int32_t> distinct(std::size_t n) {
  std::vector<std::int32_t> ids(n);
  for (std::size_t i = 0; i < n; ++i) ids[i] = std::int32_t(i);
  return ids;
}

TEST_CASE("summarize_heads: a previous-token head, a sink, an even head and an induction head") {
  const std::size_t n = 5;
  auto even = [](std::size_t i, std::size_t) { return 1.0 / double(i + 1); };
  auto prev = [](std::size_t i, std::size_t j) { return i == 0 ? 1.0 : (j + 1 == i ? 1.0 : 0.0); };
  auto sink = [](std::size_t, std::size_t j) { return j == 0 ? 1.0 : 0.0; };
  const std::vector<Tensor3> on_text = {pattern(n, prev), pattern(n, sink), pattern(n, even)};
  const HeadSummary s = summarize_heads(distinct(n), on_text);
  REQUIRE(s.heads.size() == 3);
  CHECK(*s.heads[0].previous_token == doctest::Approx(1.0));
  CHECK(*s.heads[0].first_token == doctest::Approx(0.25));  // only query 1's previous key is key 0
  CHECK(*s.heads[0].entropy == doctest::Approx(0.0));
  CHECK(s.heads[0].kind == "previous-token");
  CHECK(*s.heads[1].first_token == doctest::Approx(1.0));
  CHECK(s.heads[1].kind == "first-token");
  CHECK(*s.heads[2].entropy == doctest::Approx(1.0));  // evenly spread: H = ln(i+1) on every row
  CHECK(*s.heads[2].previous_token == doctest::Approx((1.0 / 2 + 1.0 / 3 + 1.0 / 4 + 1.0 / 5) / 4));
  CHECK(s.heads[2].kind == "broad");
  CHECK_FALSE(s.heads[2].induction);
  CHECK_FALSE(s.induction_measured());
  CHECK(induction_scope(s) == "induction not scored: no token of this text appears twice");

  // The text twice, ids 0..4 0..4: query i >= 5 puts all its weight on key i - 4, the token
  // after its token's first copy; the first half looks at key 0.
  std::vector<std::int32_t> twice = distinct(n);
  twice.insert(twice.end(), twice.begin(), twice.begin() + std::ptrdiff_t(n));
  auto induct = [](std::size_t i, std::size_t j) { return i < 5 ? (j == 0 ? 1.0 : 0.0) : (j == i - 4 ? 1.0 : 0.0); };
  const HeadSummary with = summarize_heads(twice, {pattern(2 * n, induct)});
  CHECK(with.induction_measured());
  REQUIRE(with.induction_cells.size() == 5);
  CHECK(with.induction_cells[0].query == 5);
  CHECK(with.induction_cells[0].key == 1);
  CHECK(*with.heads[0].induction == doctest::Approx(1.0));
  // Its first-token score: queries 1..4 on key 0 and query 5's key 1 is not key 0: 4 of 9 rows.
  CHECK(*with.heads[0].first_token == doctest::Approx(4.0 / 9));
  CHECK(with.heads[0].kind == "induction");
  CHECK(induction_scope(with) == "induction scored on the 5 rows whose token appeared once before");
}

TEST_CASE("induction_cells: a query counts only when its token appeared exactly once before") {
  // 7 8 7 7 8: query 2 (7, seen at 0) reads key 1; query 3 (7, seen twice) has two candidate
  // followers and is left out; query 4 (8, seen at 1) reads key 2.
  const std::vector<InductionCell> cells = induction_cells({7, 8, 7, 7, 8});
  REQUIRE(cells.size() == 2);
  CHECK(cells[0].query == 2);
  CHECK(cells[0].key == 1);
  CHECK(cells[1].query == 4);
  CHECK(cells[1].key == 2);
  // A token right after its own copy: the key after the copy is the query itself.
  const std::vector<InductionCell> doubled = induction_cells({5, 5});
  REQUIRE(doubled.size() == 1);
  CHECK(doubled[0].query == 1);
  CHECK(doubled[0].key == 1);
  CHECK(induction_cells({1, 2, 3}).empty());
}

TEST_CASE("summarize_heads: pooled over sequences, every mean runs over all their counted rows") {
  // Sequence A = 0 1 0 (query 2 reads key 1), B = 0 1 2 (no induction row). One head that puts
  // 0.6 on the key before and the rest on itself (row 0: all on itself).
  auto head = [](std::size_t i, std::size_t j) { return i == 0 ? 1.0 : (j + 1 == i ? 0.6 : (j == i ? 0.4 : 0.0)); };
  const HeadSummary s = summarize_heads(std::vector<std::vector<std::int32_t>>{{0, 1, 0}, {0, 1, 2}},
                                        std::vector<std::vector<Tensor3>>{{pattern(3, head)}, {pattern(3, head)}});
  CHECK(s.sequences == 2);
  CHECK(s.induction_rows == 1);
  CHECK(*s.heads[0].previous_token == doctest::Approx(0.6));   // 0.6 on each of the 4 rows
  CHECK(*s.heads[0].induction == doctest::Approx(0.6));        // A's query 2 on key 1: the key before
  CHECK(*s.heads[0].first_token == doctest::Approx((0.6 + 0 + 0.6 + 0) / 4));
  // The bars pool the rows too: uniform previous-token = (1/2 + 1/3 + 1/2 + 1/3) / 4.
  CHECK(s.previous_token_bar->uniform == doctest::Approx(5.0 / 12));
  CHECK(s.induction_bar->uniform == doctest::Approx(1.0 / 3));
  CHECK_THROWS_AS(summarize_heads(std::vector<std::vector<std::int32_t>>{{0, 1}, {0, 1, 2}},
                                  std::vector<std::vector<Tensor3>>{{pattern(2, head)}, {pattern(3, head)}}),
                  InputError);
}

TEST_CASE("summarize_heads: a head split between two keys is mixed") {
  auto split = [](std::size_t i, std::size_t j) { return i == 0 ? 1.0 : (j == i ? 0.7 : (j + 1 == i ? 0.3 : 0.0)); };
  const HeadSummary s = summarize_heads(distinct(6), {pattern(6, split)});
  CHECK(*s.heads[0].previous_token == doctest::Approx(0.3));
  CHECK(s.heads[0].kind == "mixed");
}

TEST_CASE("summarize_heads: at 3 tokens a near-uniform head is not a previous-token head") {
  // Row 1 splits evenly, row 2 nearly so: previous-token = (0.5 + 0.34) / 2 = 0.42, over the
  // fixed 0.4 -- but a head spreading its weight evenly scores (1/2 + 1/3) / 2 = 5/12 here.
  auto flat = [](std::size_t i, std::size_t j) {
    const double row2[] = {0.3, 0.34, 0.36};
    return i == 0 ? 1.0 : i == 1 ? 0.5 : row2[j];
  };
  const HeadSummary s = summarize_heads(distinct(3), {pattern(3, flat)});
  CHECK(*s.heads[0].previous_token == doctest::Approx(0.42));
  REQUIRE(s.previous_token_bar);
  CHECK(s.previous_token_bar->uniform == doctest::Approx(5.0 / 12));
  // The bar: a quarter of the way from 5/12 to 1, 5/12 + 7/48 = 27/48.
  CHECK(s.previous_token_bar->bar == doctest::Approx(27.0 / 48));
  CHECK(s.first_token_bar->bar == doctest::Approx(27.0 / 48));  // over the fixed 0.5 too
  CHECK(s.heads[0].kind == "broad");

  // A head that does look back still passes at 3 tokens: (1 + 0.8) / 2 = 0.9.
  auto back = [](std::size_t i, std::size_t j) { return i == 0 ? 1.0 : i == 1 ? (j == 0 ? 1.0 : 0.0) : (j == 1 ? 0.8 : 0.1); };
  CHECK(summarize_heads(distinct(3), {pattern(3, back)}).heads[0].kind == "previous-token");
}

TEST_CASE("summarize_heads: the bars at other lengths, worked out by hand") {
  auto even = [](std::size_t i, std::size_t) { return 1.0 / double(i + 1); };
  // 12 tokens: uniform = (1/2 + ... + 1/12) / 11 = 0.19120, and 0.19120 + 0.25 x 0.80880 =
  // 0.39340 is under 0.4: the fixed threshold is the bar again.
  const HeadSummary twelve = summarize_heads(distinct(12), {pattern(12, even)});
  CHECK(twelve.previous_token_bar->uniform == doctest::Approx(0.191201).epsilon(1e-5));
  CHECK(twelve.previous_token_bar->bar == doctest::Approx(0.4));
  CHECK(twelve.first_token_bar->bar == doctest::Approx(0.5));
  // Induction on 0 1 2 0 1 2 is scored on queries 3..5: uniform = (1/4 + 1/5 + 1/6) / 3 =
  // 0.205556, bar 0.205556 + 0.25 x 0.794444 = 0.404167. An induction score of 0.402 clears the
  // fixed 0.4 but not the bar.
  auto weak = [&](std::size_t i, std::size_t j) {
    if (i < 3) return even(i, j);
    const double rest = (1 - 0.402) / double(i);  // 0.402 on key i - 2, the rest spread
    return j == i - 2 ? 0.402 : rest;
  };
  const HeadSummary three = summarize_heads({0, 1, 2, 0, 1, 2}, {pattern(6, weak)});
  REQUIRE(three.induction_bar);
  CHECK(three.induction_bar->uniform == doctest::Approx((0.25 + 0.2 + 1.0 / 6) / 3));
  CHECK(three.induction_bar->bar == doctest::Approx(0.404167).epsilon(1e-5));
  CHECK(*three.heads[0].induction == doctest::Approx(0.402));
  CHECK(three.heads[0].kind != "induction");
  // JSON states the bars with the scores.
  const Json j = head_summary_json(three);
  CHECK(j["bars"]["induction"]["bar"].get<double>() == doctest::Approx(0.404167).epsilon(1e-5));
  CHECK(j["induction_cells"].size() == 3);
}

TEST_CASE("summarize_heads: one token - every head untested, every score null") {
  auto self = [](std::size_t, std::size_t) { return 1.0; };
  const HeadSummary s = summarize_heads({3}, {pattern(1, self), pattern(1, self)});
  REQUIRE(s.heads.size() == 2);
  for (const HeadScores& h : s.heads) {
    CHECK(h.kind == "untested");
    CHECK_FALSE(h.previous_token);
    CHECK_FALSE(h.entropy);
  }
  CHECK_FALSE(s.previous_token_bar);
  const Json j = head_summary_json(s);
  CHECK(j["heads"][1]["previous_token"].is_null());
  CHECK(j["bars"]["first_token"].is_null());
}
