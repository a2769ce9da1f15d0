// The terminal heatmap: when to colour, which colours, and CJK labels aligned.
#include <doctest/doctest.h>

#include <cstdlib>
#include <optional>
#include <regex>
#include <sstream>

#include "attn/engine/attention/mask.hpp"
#include "attn/render/draw/terminal_heatmap.hpp"
#include "attn/render/draw/text_table.hpp"

using namespace attn;

namespace {

// Sets environment variables for one test and restores them afterwards.
struct Env {
  std::vector<std::pair<std::string, std::optional<std::string>>> saved;
  void set(const char* name, const char* value) {
    const char* old = std::getenv(name);
    saved.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value) ::setenv(name, value, 1); else ::unsetenv(name);
  }
  ~Env() {
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
      if (it->second) ::setenv(it->first.c_str(), it->second->c_str(), 1); else ::unsetenv(it->first.c_str());
    }
  }
};

std::string strip_ansi(const std::string& s) { return std::regex_replace(s, std::regex("\x1b\\[[0-9;]*m"), ""); }

TerminalHeatmap sample() {
  TerminalHeatmap h;
  h.row_labels = h.col_labels = {"我", "喜欢", "深度", "学习"};
  h.weights = Tensor2{{1, 0, 0, 0}, {0.5f, 0.5f, 0, 0}, {0.2f, 0.3f, 0.5f, 0}, {0.1f, 0.2f, 0.3f, 0.4f}};
  h.scale = {0, 1};
  return h;
}

}  // namespace

TEST_CASE("terminal heatmap: colour only on a terminal, and never with NO_COLOR, --no-color or TERM=dumb") {
  Env env;
  env.set("NO_COLOR", nullptr);
  env.set("TERM", "xterm-256color");
  env.set("COLORTERM", nullptr);
  CHECK(terminal_color_mode(false, false) == ColorMode::none);
  CHECK(terminal_color_mode(true, false) == ColorMode::ansi256);
  CHECK(terminal_color_mode(true, true) == ColorMode::none);
  env.set("COLORTERM", "truecolor");
  CHECK(terminal_color_mode(true, false) == ColorMode::truecolor);
  env.set("COLORTERM", "24bit");
  CHECK(terminal_color_mode(true, false) == ColorMode::truecolor);
  env.set("NO_COLOR", "");  // no-color.org: an empty value does not count
  CHECK(terminal_color_mode(true, false) == ColorMode::truecolor);
  env.set("NO_COLOR", "1");
  CHECK(terminal_color_mode(true, false) == ColorMode::none);
  env.set("NO_COLOR", nullptr);
  env.set("TERM", "dumb");
  CHECK(terminal_color_mode(true, false) == ColorMode::none);
}

TEST_CASE("terminal heatmap: the xterm-256 palette index nearest to a colour") {
  CHECK(ansi256_index({0, 0, 0}) == 16);
  CHECK(ansi256_index({1, 1, 1}) == 231);
  CHECK(ansi256_index({1, 0, 0}) == 196);
  CHECK(ansi256_index({0, 0, 1}) == 21);
  CHECK(ansi256_index({128 / 255.0, 128 / 255.0, 128 / 255.0}) == 244);  // grey ramp: 8 + 10 * 12
  CHECK(ansi256_index({95 / 255.0, 135 / 255.0, 175 / 255.0}) == 16 + 36 * 1 + 6 * 2 + 3);
}

TEST_CASE("terminal heatmap: truecolor cells carry the colormap's colour, masked cells are dots, not numbers") {
  TerminalHeatmap h = sample();
  const Mask2 causal = causal_allowed(4, 4);
  h.allowed = &causal;
  const std::string out = render_terminal_heatmap(h, ColorMode::truecolor);
  CHECK(out.find("\x1b[48;2;8;48;107m") != std::string::npos);     // weight 1 = Blues #08306b
  CHECK(out.find("\x1b[48;2;107;174;214m") != std::string::npos);  // weight 0.5 = #6baed6
  const std::string plain = strip_ansi(out);
  std::istringstream lines(plain);
  std::string header, first_row;
  std::getline(lines, header);
  std::getline(lines, first_row);
  CHECK(first_row.find("1.000") != std::string::npos);
  CHECK(first_row.find("0.000") == std::string::npos);  // the masked keys of row 0
  CHECK(first_row.find("·") != std::string::npos);
  CHECK(plain.find("masked") != std::string::npos);
  CHECK(render_terminal_heatmap(h, ColorMode::ansi256).find("\x1b[48;5;") != std::string::npos);
}

TEST_CASE("terminal heatmap: Chinese labels line up by display width, without colour it is the plain table") {
  const TerminalHeatmap h = sample();
  std::istringstream lines(strip_ansi(render_terminal_heatmap(h, ColorMode::truecolor)));
  std::string line;
  std::vector<std::size_t> widths;
  for (int k = 0; k < 5 && std::getline(lines, line); ++k) widths.push_back(display_width(line));
  REQUIRE(widths.size() == 5);
  for (std::size_t w : widths) CHECK(w == widths[0]);
  const std::string plain = render_terminal_heatmap(h, ColorMode::none);
  CHECK(plain.find('\x1b') == std::string::npos);
  CHECK(plain == matrix_table(h.row_labels, h.col_labels, h.weights));
}

// L x L weights, every one different, labelled tok0, tok1, ...
static TerminalHeatmap labelled_table(std::size_t L) {
  TerminalHeatmap h;
  for (std::size_t i = 0; i < L; ++i) h.row_labels.push_back("tok" + std::to_string(i));
  h.col_labels = h.row_labels;
  h.weights = Tensor2::from_shape({L, L});
  for (std::size_t i = 0; i < L; ++i)
    for (std::size_t j = 0; j < L; ++j) h.weights(i, j) = float(i * L + j) / float(L * L);
  return h;
}

TEST_CASE("terminal heatmap: a table wider than max_width is cut into blocks of keys, every value kept") {
  const std::size_t L = 30;
  TerminalHeatmap h = labelled_table(L);
  h.scale = {0, 1};
  h.max_width = 80;
  for (ColorMode mode : {ColorMode::none, ColorMode::truecolor}) {
    CAPTURE(int(mode));
    const std::string out = strip_ansi(render_terminal_heatmap(h, mode));
    std::istringstream lines(out);
    std::size_t blocks = 0, widest = 0;
    for (std::string line; std::getline(lines, line);) {
      widest = std::max(widest, display_width(line));
      blocks += line.rfind("keys ", 0) == 0;
    }
    CHECK(widest <= 80);
    CHECK(blocks >= 3);  // 30 columns of 7 characters need at least 3 blocks of 80
    CHECK(out.find("keys 0-") == 0);
    CHECK(out.find(" of 30:") != std::string::npos);
    // Every weight is printed once, in some block.
    for (std::size_t i = 0; i < L; i += 7)
      for (std::size_t j = 0; j < L; j += 5) {
        char v[16];
        std::snprintf(v, sizeof v, "%.3f", double(h.weights(i, j)));
        CHECK(out.find(v) != std::string::npos);
      }
    if (mode != ColorMode::none) CHECK(out.find("(Blues)") == out.rfind("(Blues)"));  // one legend, at the end
  }
  h.max_width = 0;  // no limit: one table
  CHECK(render_terminal_heatmap(h, ColorMode::none).find("keys 0-") == std::string::npos);
}

TEST_CASE("terminal heatmap: cut_to_fit keeps the keys and rows that fit and says what it left out") {
  const std::size_t L = 30;
  TerminalHeatmap h = labelled_table(L);
  h.scale = {0, 1};
  h.max_width = 80;
  h.cut_to_fit = true;
  h.max_rows = 10;
  for (ColorMode mode : {ColorMode::none, ColorMode::truecolor}) {
    CAPTURE(int(mode));
    const std::string out = strip_ansi(render_terminal_heatmap(h, mode));
    std::istringstream lines(out);
    std::size_t widest = 0, count = 0;
    for (std::string line; std::getline(lines, line); ++count) widest = std::max(widest, display_width(line));
    CHECK(widest <= 80);
    // Header, 10 rows, the note (and the colour legend): never the 30 rows in blocks.
    CHECK(count == (mode == ColorMode::none ? 12u : 13u));
    CHECK(out.find("keys 0-") == std::string::npos);  // no blocks
    CHECK(out.find("tok9 ") != std::string::npos);
    CHECK(out.find("tok10 ") == std::string::npos);
    // Labels of 5 characters, cells of 6 + a space: (80 - 5) / 7 = 10 keys fit.
    CHECK(out.find("(keys 10-29 and queries 10-29 not shown, to fit 80 columns)") != std::string::npos);
  }
  h.max_width = 0;
  h.max_rows = 0;  // nothing to cut: no note
  CHECK(render_terminal_heatmap(h, ColorMode::none).find("not shown") == std::string::npos);
}
