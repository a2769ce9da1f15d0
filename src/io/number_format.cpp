#include "attn/io/number_format.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace attn {
namespace {

void require_finite(double x) {
  if (!std::isfinite(x)) throw std::logic_error("a non-finite number reached a printout");
}

std::string scaled(double x, double base, const char* const* prefixes, std::size_t count,
                   const std::string& space) {
  require_finite(x);
  std::size_t p = 0;
  double v = x;
  while (std::fabs(v) >= base && p + 1 < count) {
    v /= base;
    ++p;
  }
  std::string out = format_g(v, 3);
  if (*prefixes[p]) out += space + prefixes[p];
  return out;
}

}  // namespace

std::string format_g(double x, int significant) {
  require_finite(x);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", significant, x);
  return buf;
}

std::string format_fixed(double x, int decimals) {
  require_finite(x);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  // A tiny negative value rounds to "-0.000": a sign on zero reads as a real negative number.
  const std::string s = buf;
  if (s[0] == '-' && s.find_first_not_of("0.", 1) == std::string::npos) return s.substr(1);
  return s;
}

std::string format_si(double x) {
  static const char* const kPrefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  return scaled(x, 1000.0, kPrefixes, 7, " ");
}

std::string format_bytes(double bytes) {
  static const char* const kPrefixes[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  return scaled(bytes, 1024.0, kPrefixes, 6, " ");
}

std::string count_of(std::size_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many.empty() ? one + "s" : many);
}

}  // namespace attn
