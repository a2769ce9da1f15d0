#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>

#include "attn/io/number_format.hpp"
#include "attn/render/report/report_table.hpp"

using namespace attn;

TEST_CASE("report_table: text columns line up by display width, numbers right-aligned") {
  const Table t{{"token", "weight"}, {{"我", "0.5"}, {"喜欢", "0.25"}}};
  CHECK(render_table(t, TableFormat::text) ==
        "token  weight\n"
        "-------------\n"
        "我        0.5\n"
        "喜欢     0.25\n");
}

TEST_CASE("report_table: markdown has a separator row, CSV quotes commas and quotes") {
  const Table t{{"n", "note"}, {{"1", "a, \"b\""}}};
  CHECK(render_table(t, TableFormat::markdown) ==
        "| n   |   note |\n"
        "| :-- | -----: |\n"
        "| 1   | a, \"b\" |\n");
  CHECK(render_table(t, TableFormat::csv) == "n,note\n1,\"a, \"\"b\"\"\"\n");
}

TEST_CASE("report_table: number formats, and no NaN can reach a printout") {
  CHECK(format_si(137438953472.0) == "137 G");
  CHECK(format_si(999.0) == "999");
  CHECK(format_bytes(1073741824.0) == "1 GiB");
  CHECK(format_bytes(805306368.0) == "768 MiB");
  CHECK(format_bytes(512.0) == "512 B");
  CHECK(format_g(1e-8) == "1e-08");
  CHECK(format_fixed(3.14159, 3) == "3.142");
  CHECK(format_fixed(-0.0004, 3) == "0.000");  // no sign on a zero
  CHECK(format_fixed(-0.0, 2) == "0.00");
  CHECK(format_fixed(-0.0006, 3) == "-0.001");
  CHECK(format_fixed(-0.4, 0) == "0");
  CHECK_THROWS_AS(format_g(std::nan("")), std::logic_error);
  CHECK_THROWS_AS(format_fixed(INFINITY, 2), std::logic_error);
}

TEST_CASE("count_of: singular for exactly one, the given or +s plural otherwise") {
  CHECK(count_of(1, "token") == "1 token");
  CHECK(count_of(0, "token") == "0 tokens");
  CHECK(count_of(3, "tile") == "3 tiles");
  CHECK(count_of(1, "query", "queries") == "1 query");
  CHECK(count_of(2, "query", "queries") == "2 queries");
}
