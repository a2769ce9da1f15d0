#pragma once
// The one place where numbers typed by a user are read: command-line flags (through
// cli/number_flags, applied to every numeric option) and JSON fields (through the *_field
// functions). Each reader rejects what the tool cannot use -- NaN, infinities, values out of
// range, a negative or fractional count, a count past 2^64 -- with an InputError that names
// the field, instead of letting a conversion clamp or wrap it silently (a seed of -1 once
// became 2^64 - 1, a scale of "nan" reached the kernels).
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace attn {

inline constexpr double kMaxFinite = std::numeric_limits<double>::max();
inline constexpr std::uint64_t kMaxCount = std::numeric_limits<std::uint64_t>::max();

// A finite decimal number lo <= x <= hi, the whole text and nothing else ("1e3", "-0.5").
double parse_number(std::string_view text, const std::string& field, double lo = -kMaxFinite,
                    double hi = kMaxFinite);

// A whole number lo <= n <= hi written in digits ("42"; not "-1", "1.5", "1e3" or 2^64).
std::uint64_t parse_count(std::string_view text, const std::string& field, std::uint64_t lo = 0,
                          std::uint64_t hi = kMaxCount);

// A whole number, possibly negative, lo <= n <= hi.
std::int64_t parse_integer(std::string_view text, const std::string& field,
                           std::int64_t lo = std::numeric_limits<std::int64_t>::min(),
                           std::int64_t hi = std::numeric_limits<std::int64_t>::max());

// A size in bytes: a number > 0 with an optional binary unit K, M, G or T ("8G", "512M",
// "1.5GiB", "4096"); at most 2^62.
std::uint64_t parse_size(std::string_view text, const std::string& field);

// The same rules for a JSON value (nlohmann has already read the digits).
double number_field(const nlohmann::json& v, const std::string& field, double lo = -kMaxFinite,
                    double hi = kMaxFinite);
std::uint64_t count_field(const nlohmann::json& v, const std::string& field, std::uint64_t lo = 0,
                          std::uint64_t hi = kMaxCount);

}  // namespace attn
