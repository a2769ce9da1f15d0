// printable_text: what reaches a terminal from a sentence, a token or a file name can never
// drive it (retitle the window, hide a hyperlink, move the cursor, reorder the line).
#include "attn/engine/text/printable_text.hpp"

#include <filesystem>
#include <string>

#include <doctest/doctest.h>

#include "support.hpp"

namespace attn::test {
namespace {

// Bytes a terminal acts on: C0 (but newline and tab), DEL, and UTF-8's C1 (0xC2 0x80-0x9F).
bool has_terminal_control(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto u = static_cast<unsigned char>(text[i]);
    if ((u < 0x20 && text[i] != '\n' && text[i] != '\t') || u == 0x7f) return true;
    if (u == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) <= 0x9f) return true;
  }
  return text.find("\u202e") != std::string::npos;
}

}  // namespace

TEST_CASE("printable_text: control characters, C1, bidi overrides and broken UTF-8 are written out") {
  CHECK(printable_text("a\x1b]0;PWNED\x07z") == "a\\x1b]0;PWNED\\x07z");
  CHECK(printable_text(std::string("nul\0here", 8)) == "nul\\x00here");
  CHECK(printable_text("two\nlines\tand\rreturn") == "two\\nlines\\tand\\rreturn");
  CHECK(printable_text("two\nlines\tand\r", Whitespace::keep) == "two\nlines\tand\r");
  CHECK(printable_text("\x7f") == "\\x7f");
  CHECK(printable_text("csi\u009b31m") == "csi\\u009b31m");                      // C1 CSI, as UTF-8
  CHECK(printable_text("abc\u202edef\u2066x\u2069") == "abc\\u202edef\\u2066x\\u2069");  // Trojan Source
  CHECK(printable_text("half \xf0\x9f emoji") == "half \\xf0\\x9f emoji");        // the bytes, as Python's repr
  CHECK(printable_text("a\xC3\xA9" "b\xC3", Whitespace::keep) == "a\xC3\xA9" "b\\xc3");  // é kept, the half é escaped
  CHECK(printable_text("\xF0\x9F\x98", Whitespace::keep) == "\\xf0\\x9f\\x98");        // a truncated emoji
  CHECK(printable_text("\xC0\xAF", Whitespace::keep) == "\\xc0\\xaf");                    // an overlong '/'
  CHECK(printable_text("\xED\xA0\x80", Whitespace::keep) == "\\xed\\xa0\\x80");        // a surrogate
  // What a terminal shows as text stays as it is.
  CHECK(printable_text("我喜欢深度学习 😀 café \\ back") == "我喜欢深度学习 😀 café \\ back");
  CHECK(printable_text("") == "");
}

TEST_CASE("printable_text: no command echoes a terminal control from a sentence or a path") {
  const std::string evil = "a\x1b]0;PWNED\x07 b \x1b[31mred \u009b2J \u202eevil";
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("attn-printable-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "evil.txt", std::ios::binary) << evil << std::string("\0 nul", 5);
    std::ofstream(dir / "short.txt", std::ios::binary) << "a\x1b]0;X\x07 \u202eb";  // within GPT-2 tiny's 32 positions
  }
  const std::string quoted = "\"$(cat evil.txt)\"";  // argv cannot hold the NUL: the file can
  for (const std::string& args : std::vector<std::string>{
           "demo " + quoted + " --out \"out$(printf '\\033')[2J\"", "explain --input evil.txt",
        "explain " + quoted + " --plots \"p$(printf '\\033')]0;x\"", "generate " + quoted + " --prefill 2",
        "tokenize " + quoted, "forward --model " + std::string(ATTN_DATA_DIR) + "/gpt2_tiny \"$(cat short.txt)\"",
           "demo --model " + std::string(ATTN_DATA_DIR) + "/gpt2_tiny \"$(cat short.txt)\" --out g"}) {
    CAPTURE(args);
    const CliResult r = run_cli(args, "", dir.string(), 120);
    CAPTURE(r.err);
    CHECK(r.code == 0);
    CAPTURE(printable_text(r.out, Whitespace::keep));
    CHECK_FALSE(has_terminal_control(r.out));
    CHECK_FALSE(has_terminal_control(r.err));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace attn::test
