#include "attn/io/numbers.hpp"

#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "attn/engine/core/error.hpp"

namespace attn {
namespace {

// %.17g, so that a bound such as 3.4028234663852886e+38 reads back exactly.
std::string number_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  std::string s = buf;
  // Prefer the short form when it is exact (1e+12, not 1000000000000.0000000).
  std::snprintf(buf, sizeof buf, "%g", x);
  return std::strtod(buf, nullptr) == x ? std::string(buf) : s;
}

std::string range_text(double lo, double hi) {
  if (lo == -kMaxFinite && hi == kMaxFinite) return "a finite number";
  if (hi == kMaxFinite) return "a finite number >= " + number_text(lo);
  if (lo == -kMaxFinite) return "a finite number <= " + number_text(hi);
  return "a number in [" + number_text(lo) + ", " + number_text(hi) + "]";
}

std::string count_text(std::uint64_t lo, std::uint64_t hi) {
  if (hi == kMaxCount) return "a whole number >= " + std::to_string(lo);
  return "a whole number in " + std::to_string(lo) + ".." + std::to_string(hi);
}

[[noreturn]] void refuse(const std::string& field, const std::string& expected, std::string_view got) {
  throw InputError(field + ": expected " + expected + ", got " + std::string(got));
}

// from_chars accepts no leading '+'; people (and CLI11) do.
std::string_view without_plus(std::string_view text) {
  return text.size() > 1 && text[0] == '+' && text[1] != '-' ? text.substr(1) : text;
}

}  // namespace

double parse_number(std::string_view text, const std::string& field, double lo, double hi) {
  const std::string_view t = without_plus(text);
  double x = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), x);
  if (t.empty() || end != t.data() + t.size() || (ec != std::errc{} && ec != std::errc::result_out_of_range)) {
    refuse(field, range_text(lo, hi), text.empty() ? "nothing" : "'" + std::string(text) + "'");
  }
  // from_chars leaves x alone when out of range; strtod tells an underflow ("1e-400", which
  // is 0 or a subnormal: a number) from an overflow ("1e400", HUGE_VAL: refused below).
  if (ec == std::errc::result_out_of_range) x = std::strtod(std::string(t).c_str(), nullptr);
  // "nan" and "inf" read as numbers; neither is one a flag can hold.
  if (!std::isfinite(x) || x < lo || x > hi) {
    refuse(field, range_text(lo, hi), text);
  }
  return x;
}

std::uint64_t parse_count(std::string_view text, const std::string& field, std::uint64_t lo, std::uint64_t hi) {
  const std::string_view t = without_plus(text);
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
  if (t.empty() || ec != std::errc{} || end != t.data() + t.size() || n < lo || n > hi) {
    refuse(field, count_text(lo, hi), text.empty() ? "nothing" : text);
  }
  return n;
}

std::int64_t parse_integer(std::string_view text, const std::string& field, std::int64_t lo, std::int64_t hi) {
  const std::string_view t = without_plus(text);
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
  if (t.empty() || ec != std::errc{} || end != t.data() + t.size() || n < lo || n > hi) {
    refuse(field, "a whole number in " + std::to_string(lo) + ".." + std::to_string(hi),
           text.empty() ? "nothing" : text);
  }
  return n;
}

std::uint64_t parse_size(std::string_view text, const std::string& field) {
  std::string_view digits = text;
  for (const char* suffix : {"iB", "B"}) {
    const std::string_view sv(suffix);
    if (digits.size() > sv.size() && digits.substr(digits.size() - sv.size()) == sv) {
      digits.remove_suffix(sv.size());
      break;
    }
  }
  double unit = 1;
  if (!digits.empty()) {
    const std::string_view units = "KMGT";
    if (const auto u = units.find(static_cast<char>(std::toupper(static_cast<unsigned char>(digits.back()))));
        u != std::string_view::npos) {
      unit = std::ldexp(1.0, 10 * static_cast<int>(u + 1));
      digits.remove_suffix(1);
    }
  }
  const std::string expected = "a size such as 8G, 512M or 4096 (bytes)";
  double x = 0;
  try {
    x = parse_number(digits, field, 0, kMaxFinite) * unit;
  } catch (const InputError&) {
    refuse(field, expected, "'" + std::string(text) + "'");
  }
  if (!(x >= 1) || x > std::ldexp(1.0, 62)) refuse(field, expected, "'" + std::string(text) + "'");
  return static_cast<std::uint64_t>(x);
}

double number_field(const nlohmann::json& v, const std::string& field, double lo, double hi) {
  if (!v.is_number()) refuse(field, range_text(lo, hi), v.dump());
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) refuse(field, range_text(lo, hi), v.dump());
  return x;
}

std::uint64_t count_field(const nlohmann::json& v, const std::string& field, std::uint64_t lo, std::uint64_t hi) {
  // nlohmann keeps -1 as a signed integer and 2^64 or 1e23 as a float: none is a count.
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0)) {
    refuse(field, count_text(lo, hi), v.dump());
  }
  const std::uint64_t n = v.get<std::uint64_t>();
  if (n < lo || n > hi) refuse(field, count_text(lo, hi), v.dump());
  return n;
}

}  // namespace attn
