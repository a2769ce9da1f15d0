#include <limits>

#include <doctest/doctest.h>

#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/mask.hpp"

using namespace attn;

TEST_CASE("causal: square is the lower triangle") {
  const Mask2 m = causal_allowed(3, 3);
  const Mask2 expected = {{true, false, false}, {true, true, false}, {true, true, true}};
  CHECK(m == expected);
}

TEST_CASE("causal: Lq < Lk is bottom-right aligned (the queries are the last positions)") {
  // Two new queries after three cached keys: query 0 is position 3, query 1 is position 4.
  const Mask2 m = causal_allowed(2, 5);
  const Mask2 expected = {{true, true, true, true, false}, {true, true, true, true, true}};
  CHECK(m == expected);
}

TEST_CASE("causal: Lq > Lk leaves the first Lq - Lk rows with no key") {
  const Mask2 m = causal_allowed(4, 2);
  const Mask2 expected = {{false, false}, {false, false}, {true, false}, {true, true}};
  CHECK(m == expected);
}

TEST_CASE("sliding window: each query sees itself and the previous left keys") {
  const Mask2 m = sliding_window_allowed(4, 4, 1, 0);
  const Mask2 expected = {{true, false, false, false},
                          {true, true, false, false},
                          {false, true, true, false},
                          {false, false, true, true}};
  CHECK(m == expected);
  const Mask2 both = sliding_window_allowed(3, 3, 1, 1);
  const Mask2 band = {{true, true, false}, {true, true, true}, {false, true, true}};
  CHECK(both == band);
}

TEST_CASE("sliding window: matches its definition p - left <= j <= p + right on small shapes") {
  for (std::size_t Lq = 1; Lq <= 5; ++Lq)
    for (std::size_t Lk = 1; Lk <= 5; ++Lk)
      for (std::size_t left = 0; left <= 6; ++left)
        for (std::size_t right = 0; right <= 6; ++right) {
          const Mask2 m = sliding_window_allowed(Lq, Lk, left, right);
          for (std::size_t i = 0; i < Lq; ++i)
            for (std::size_t j = 0; j < Lk; ++j) {
              const long p = long(i) + long(Lk) - long(Lq), jj = long(j);
              CHECK(m(i, j) == (jj >= p - long(left) && jj <= p + long(right)));
            }
        }
}

TEST_CASE("sliding window: huge windows mean unbounded, never a wrapped negative bound") {
  // left >= 2^63 used to become a negative long (blocking key 0), and p + SIZE_MAX overflowed.
  const std::size_t huge = std::size_t(1) << 63, max = std::numeric_limits<std::size_t>::max();
  CHECK(sliding_window_allowed(4, 4, huge, 0) == causal_allowed(4, 4));
  CHECK(sliding_window_allowed(4, 4, max, 0) == causal_allowed(4, 4));
  CHECK(sliding_window_allowed(3, 2, max, 0) == causal_allowed(3, 2));
  const Mask2 all = xt::ones<bool>({3, 2});
  CHECK(sliding_window_allowed(3, 2, max, max) == all);
  CHECK(sliding_window_allowed(3, 2, 0, max) == Mask2{{true, true}, {true, true}, {false, true}});
  CHECK(sliding_window_allowed(2, 3, huge, huge) == Mask2{{true, true, true}, {true, true, true}});
}

TEST_CASE("padding: keys past each sequence's length are blocked for every query") {
  const std::vector<std::size_t> lengths = {3, 1};
  const Mask3 m = padding_allowed(lengths, 3);
  CHECK(m.shape(0) == 2);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(m(0, i, 2) == true);
    CHECK(m(1, i, 0) == true);
    CHECK(m(1, i, 1) == false);
    CHECK(m(1, i, 2) == false);
  }
  const std::vector<std::size_t> too_long = {4};
  CHECK_THROWS_AS(padding_allowed(too_long, 3), InputError);
}

TEST_CASE("graph: neighbours only, undirected by default, with self loops") {
  const std::vector<std::pair<std::size_t, std::size_t>> edges = {{0, 1}, {1, 2}};
  const Mask2 m = graph_allowed(4, edges);
  const Mask2 expected = {{true, true, false, false},
                          {true, true, true, false},
                          {false, true, true, false},
                          {false, false, false, true}};
  CHECK(m == expected);
  const Mask2 directed = graph_allowed(3, edges, /*directed=*/true, /*self_loops=*/false);
  CHECK(directed(0, 1) == true);
  CHECK(directed(1, 0) == false);
  CHECK(directed(0, 0) == false);
  const std::vector<std::pair<std::size_t, std::size_t>> bad = {{0, 9}};
  CHECK_THROWS_AS(graph_allowed(3, bad), InputError);
}
