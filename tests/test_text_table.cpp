#include <doctest/doctest.h>

#include "attn/render/draw/text_table.hpp"

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

TEST_CASE("wrap_words: lines of at most the width, the indent after the first, no lone short last word") {
  const std::string text = "the quick brown fox jumps over the lazy dog and sums to 1.";
  const std::string out = wrap_words(text, 20, "  ");
  // The indent counts: "  jumps over the lazy" would be 21 columns.
  CHECK(out == "the quick brown fox\n  jumps over the\n  lazy dog and sums\n  to 1.");
  // Greedy would leave "1." alone on the last line; the word before it keeps it company.
  CHECK(wrap_words("aaaa bbbb cccc dddd 1.", 19) == "aaaa bbbb cccc\ndddd 1.");
  // Its own line breaks and leading indent stay; a word wider than the width stands alone.
  CHECK(wrap_words("  one two\nthree", 80) == "  one two\nthree");
  CHECK(wrap_words("supercalifragilistic ok", 10) == "supercalifragilistic\nok");
  // CJK by display width: 我喜欢 is 6 columns.
  CHECK(wrap_words("我喜欢 深度学习 ok", 9) == "我喜欢\n深度学习\nok");
}
