// head_summary.hpp on attention patterns built by hand, each with the scores worked out here.
#include <doctest/doctest.h>

#include <cmath>

#include "attn/engine/error.hpp"
#include "attn/lessons/head_summary.hpp"

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

TEST_CASE("summarize_heads: a previous-token head, a sink, an even head and an induction head") {
  const std::size_t n = 5;
  auto even = [](std::size_t i, std::size_t) { return 1.0 / double(i + 1); };
  auto prev = [](std::size_t i, std::size_t j) { return i == 0 ? 1.0 : (j + 1 == i ? 1.0 : 0.0); };
  auto sink = [](std::size_t, std::size_t j) { return j == 0 ? 1.0 : 0.0; };
  const std::vector<Tensor3> on_text = {pattern(n, prev), pattern(n, sink), pattern(n, even)};
  const HeadSummary s = summarize_heads(on_text, {});
  REQUIRE(s.heads.size() == 3);
  CHECK(s.heads[0].previous_token == doctest::Approx(1.0));
  CHECK(s.heads[0].first_token == doctest::Approx(0.25));  // only query 1's previous key is key 0
  CHECK(s.heads[0].entropy == doctest::Approx(0.0));
  CHECK(s.heads[0].kind == "previous-token");
  CHECK(s.heads[1].first_token == doctest::Approx(1.0));
  CHECK(s.heads[1].kind == "first-token");
  CHECK(s.heads[2].entropy == doctest::Approx(1.0));  // evenly spread: H = ln(i+1) on every row
  CHECK(s.heads[2].previous_token == doctest::Approx((1.0 / 2 + 1.0 / 3 + 1.0 / 4 + 1.0 / 5) / 4));
  CHECK(s.heads[2].kind == "broad");
  CHECK_FALSE(s.heads[2].induction);

  // On the text twice (10 tokens): query i >= 5 puts all its weight on key i - 5 + 1.
  auto induct = [](std::size_t i, std::size_t j) { return i < 5 ? (j == 0 ? 1.0 : 0.0) : (j == i - 4 ? 1.0 : 0.0); };
  const HeadSummary with = summarize_heads({pattern(n, even)}, {pattern(2 * n, induct)});
  CHECK(with.induction_measured);
  CHECK(*with.heads[0].induction == doctest::Approx(1.0));
  CHECK(with.heads[0].kind == "induction");
}

TEST_CASE("summarize_heads: a head split between two keys is mixed - one token is refused") {
  auto split = [](std::size_t i, std::size_t j) { return i == 0 ? 1.0 : (j == i ? 0.7 : (j + 1 == i ? 0.3 : 0.0)); };
  const HeadSummary s = summarize_heads({pattern(6, split)}, {});
  CHECK(s.heads[0].previous_token == doctest::Approx(0.3));
  CHECK(s.heads[0].kind == "mixed");
  CHECK_THROWS_AS(summarize_heads({pattern(1, split)}, {}), InputError);
}
