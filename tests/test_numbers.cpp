// io/numbers.hpp: the checked readers behind every numeric flag and JSON field.
#include <doctest/doctest.h>

#include <cmath>

#include "attn/engine/core/error.hpp"
#include "attn/io/numbers.hpp"

using namespace attn;

TEST_CASE("parse_number: finite decimals in range, everything else an error naming the field") {
  CHECK(parse_number("1e3", "--x") == 1000.0);
  CHECK(parse_number("-0.5", "--x") == -0.5);
  CHECK(parse_number("+2", "--x") == 2.0);
  CHECK(parse_number("1e-400", "--x") == 0.0);  // underflow is a number (0)
  for (const char* bad : {"nan", "NaN", "inf", "-inf", "1e400", "-1e309", "", "1.5x", "0x10", " 1", "--1"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(parse_number(bad, "--scale"), doctest::Contains("--scale: expected a finite number"),
                         InputError);
  }
  CHECK_THROWS_WITH_AS(parse_number("1e13", "--base", 1, 1e12), "--base: expected a number in [1, 1e+12], got 1e13",
                       InputError);
}

TEST_CASE("parse_count: digits only, never a wrapped -1 or a clamped 2^64") {
  CHECK(parse_count("42", "--seed") == 42);
  CHECK(parse_count("010", "--seed") == 10);  // decimal, not CLI11's octal
  CHECK(parse_count("18446744073709551615", "--seed") == kMaxCount);
  for (const char* bad : {"-1", "18446744073709551616", "1e23", "1.5", "0x10", "", "nan"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(parse_count(bad, "--seed"), doctest::Contains("--seed: expected a whole number >= 0"),
                         InputError);
  }
  CHECK_THROWS_AS(parse_count("0", "--n", 1), InputError);
  CHECK(parse_integer("-7", "--k") == -7);
  CHECK_THROWS_AS(parse_integer("9223372036854775808", "--k"), InputError);
}

TEST_CASE("number_field / count_field: the same rules for JSON values") {
  using nlohmann::json;
  CHECK(number_field(json(0.25), "scale") == 0.25);
  CHECK_THROWS_WITH_AS(number_field(json("1"), "scale"), "scale: expected a finite number, got \"1\"", InputError);
  CHECK_THROWS_AS(number_field(json(-1e300), "scale", -1e38, 1e38), InputError);
  CHECK(count_field(json(7), "seed") == 7);
  CHECK(count_field(json::parse("18446744073709551615"), "seed") == kMaxCount);
  for (const char* bad : {"-1", "18446744073709551616", "1e23", "1.0", "true", "null"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(count_field(json::parse(bad), "seed"), doctest::Contains("seed: expected a whole number"),
                         InputError);
  }
}

TEST_CASE("parse_size: bytes with an optional binary unit, nothing else") {
  CHECK(parse_size("4096", "--max-memory") == 4096);
  CHECK(parse_size("8G", "--max-memory") == (std::uint64_t{8} << 30));
  CHECK(parse_size("512m", "--max-memory") == (std::uint64_t{512} << 20));
  CHECK(parse_size("1.5GiB", "--max-memory") == (std::uint64_t{3} << 29));
  CHECK(parse_size("2KB", "--max-memory") == 2048);
  for (const char* bad : {"", "G", "-5G", "0", "0.5", "nan", "infG", "8X", "8 G", "1e30", "lots"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(parse_size(bad, "--max-memory"), doctest::Contains("--max-memory: expected a size"),
                         InputError);
  }
}
