#pragma once
// What the demo's terminal text shares (demo_text.cpp, demo_checks_text.cpp).
#include <algorithm>
#include <cstdio>
#include <ostream>
#include <string>

#include "attn/lessons/demo/demo_result.hpp"
#include "attn/render/draw/text_table.hpp"

namespace attn {

// Where the text goes, and the terminal's width: prose is wrapped to it, at most kProseColumns.
struct TextOut {
  static constexpr std::size_t kProseColumns = 100;
  std::ostream& os;
  std::size_t columns;
  std::string wrapped(const std::string& text, const std::string& indent = "  ") const {
    return wrap_words(text, std::min(columns, kProseColumns), indent) + "\n";
  }
};

// "1.2e-07"; an exact 0 as "0" (bit-identical after rounding to float32).
inline std::string sci(double v) {
  if (v == 0) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1e", v);
  return buf;
}

// --verbose: the flash check's runs and tile grids, split-KV, the decode check, RoPE.
void print_demo_checks(const TextOut& out, const DemoResult& r);
// --verbose: repeated words and the reversed sentence under each kind of position information.
void print_demo_positions(const TextOut& out, const DemoResult& r);
// --verbose: the variance and complexity experiments at the demo's size.
void print_demo_experiments(const TextOut& out, const DemoResult& r);
// Without --verbose: positions, the checks, efficient attention and variance, a line or two each.
void print_demo_short_checks(const TextOut& out, const DemoResult& r);

}  // namespace attn
