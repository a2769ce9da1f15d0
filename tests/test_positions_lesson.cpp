// Permutation equivariance, computed: without positions two copies of a word get the same row
// and reversing the sentence reverses the matrix; sinusoidal PE and RoPE break both.
#include <doctest/doctest.h>

#include "attn/lessons/concepts/positions_lesson.hpp"
#include "attn/engine/core/error.hpp"

using namespace attn;

TEST_CASE("positions lesson: none keeps copies identical and reversal exact, PE and RoPE do not") {
  const std::vector<Token> tokens = tokenize("the cat saw the dog");
  const std::vector<PositionRun> runs = run_positions_lesson(tokens, 8, 42);
  REQUIRE(runs.size() == 3);
  for (const PositionRun& run : runs) {
    CAPTURE(position_kind_name(run.kind));
    REQUIRE(run.repeated.size() == 1);
    CHECK(run.repeated[0].token == "the");
    CHECK(run.repeated[0].first == 0);
    CHECK(run.repeated[0].second == 3);
    if (run.kind == PositionKind::none) {
      CHECK(run.repeated[0].max_row_diff <= 1e-6);
      CHECK(run.reversal_diff <= 1e-6);
    } else {
      CHECK(run.repeated[0].max_row_diff > 1e-3);
      CHECK(run.reversal_diff > 1e-3);
    }
  }
  // The row comparison compares the rows, not something else that is always 0: with positions
  // the two copies' rows differ, and a word never repeated is not listed.
  const Tensor2 a = single_head_weights(tokens, 8, 42, PositionKind::sinusoidal);
  double d = 0;
  for (std::size_t j = 0; j < 5; ++j) d = std::max(d, std::fabs(double(a(0, j)) - double(a(3, j))));
  CHECK(d == doctest::Approx(runs[1].repeated[0].max_row_diff));
}

TEST_CASE("positions lesson: odd widths leave RoPE out, names parse and bad ones are refused") {
  CHECK(run_positions_lesson(tokenize("a b a"), 5, 1).size() == 2);
  CHECK(parse_position_kind("sinusoidal", "--positions") == PositionKind::sinusoidal);
  CHECK_THROWS_AS(parse_position_kind("learned", "--positions"), InputError);
  const Json j = positions_json(run_positions_lesson(tokenize("a b a"), 4, 1), PositionKind::none);
  CHECK(j["used"] == "none");
  CHECK(j["kinds"][0]["repeated_words"][0]["positions"] == Json::array({0, 2}));
}
