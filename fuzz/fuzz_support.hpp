#pragma once
// What every fuzz target shares: how a finding is reported, and the one-line rule for warnings.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace attn::fuzz {

// A broken contract that no sanitizer would see (a wrong mask cell, an exception that would
// reach the user as raw library text): print it and abort, so libFuzzer saves the input.
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline void check(bool ok, const std::string& what) {
  if (!ok) finding(what);
}

// A line the user sees on a terminal: no newline, no ESC or other control byte.
inline bool is_one_clean_line(std::string_view text) {
  if (text.empty()) return false;
  for (const unsigned char c : text)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

}  // namespace attn::fuzz
