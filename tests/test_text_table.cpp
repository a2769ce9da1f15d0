#include <doctest/doctest.h>

#include "attn/render/text_table.hpp"

using namespace attn;

TEST_CASE("display_width: CJK takes two columns, ASCII one, combining marks none") {
  CHECK(display_width("cat") == 3);
  CHECK(display_width("喜欢") == 4);
  CHECK(display_width("e\xcc\x81") == 1);  // e + COMBINING ACUTE ACCENT
}

TEST_CASE("pad_to_width: pads by display width and truncates with an ellipsis") {
  CHECK(pad_to_width("喜欢", 6) == "喜欢  ");
  CHECK(pad_to_width("ab", 4, true) == "  ab");
  CHECK(pad_to_width("abcdefgh", 5) == "abcd…");
  CHECK(display_width(pad_to_width("深度学习深度学习", 7)) == 7);
}

TEST_CASE("matrix_table: one line per row plus the header, values rounded") {
  const Tensor2 w = {{0.25f, 0.75f}, {1.0f, 0.0f}};
  const std::string t = matrix_table({"a", "b"}, {"a", "b"}, w, 2);
  CHECK(t.find("0.25") != std::string::npos);
  CHECK(t.find("0.75") != std::string::npos);
  CHECK(t.find("1.00") != std::string::npos);
  CHECK(std::count(t.begin(), t.end(), '\n') == 3);
}
