#pragma once
// The few number formats every printout of attn-cli shares (tables, titles, summaries), so
// every subcommand prints alike: below lessons and render, which both use them. Numbers only:
// the tables that use them are in render/.
#include <string>

namespace attn {

// "4.29" / "1.2e-08": printf %.*g with `significant` digits; never "nan" (non-finite values are
// a bug upstream and throw std::logic_error here, so one cannot slip into a printout).
std::string format_g(double x, int significant = 4);

// "3.142": printf %.*f.
std::string format_fixed(double x, int decimals);

// 137438953472 -> "137 G" (decimal SI prefixes k, M, G, T, P; 3 significant digits).
std::string format_si(double x);

// "1 token", "3 tokens"; "1 query", "2 queries" with the plural given.
std::string count_of(std::size_t n, const std::string& one, const std::string& many = "");

// 1073741824 -> "1 GiB" (binary prefixes, 3 significant digits): memory sizes.
std::string format_bytes(double bytes);

}  // namespace attn
