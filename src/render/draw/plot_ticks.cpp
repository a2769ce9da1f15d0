// Tick placement and labels for line_plot.cpp (see line_plot.hpp for the rules).
#include "plot_ticks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "attn/engine/core/error.hpp"
#include "figure_parts.hpp"

namespace attn {
namespace render {
namespace {

std::string superscript(long n) {
  static const char* digits[] = {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"};
  std::string s = n < 0 ? "⁻" : "";
  const std::string plain = std::to_string(std::labs(n));
  for (char c : plain) s += digits[c - '0'];
  return s;
}

// Powers of `base` (2 or 10) between lo and hi, every step-th one, so that at most `most` are
// labelled; empty when fewer than two fit.
std::vector<AxisTick> power_ticks(double base, double lo, double hi, std::size_t most) {
  const double e0 = std::ceil(std::log(lo) / std::log(base) - 1e-9);
  const double e1 = std::floor(std::log(hi) / std::log(base) + 1e-9);
  std::vector<AxisTick> ticks;
  if (e1 - e0 < 1) return ticks;
  const long step = std::max(1L, static_cast<long>(std::ceil((e1 - e0 + 1) / static_cast<double>(most))));
  const bool two = base == 2;
  // One style per axis: plain numbers when every label is short, else powers for all, so an
  // axis never reads "100, 10000, 10^6".
  const bool plain = two ? (e0 >= -3 && e1 <= 16) : (e0 >= -3 && e1 <= 4);
  for (long e = static_cast<long>(e0); e <= static_cast<long>(e1); ++e) {
    const double v = std::pow(base, static_cast<double>(e));
    const bool labelled = (e - static_cast<long>(e0)) % step == 0;  // the skipped ones: minor ticks
    ticks.push_back({v, !labelled ? "" : plain ? plain_number(v) : (two ? "2" : "10") + superscript(e)});
  }
  if (!two && step == 1 && e1 - e0 <= 7) {  // minor ticks at 2..9 x 10^e
    for (long e = static_cast<long>(e0) - 1; e <= static_cast<long>(e1); ++e) {
      for (int m = 2; m <= 9; ++m) {
        const double v = m * std::pow(10.0, static_cast<double>(e));
        if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) ticks.push_back({v, ""});
      }
    }
  }
  return ticks;
}

std::vector<AxisTick> linear_ticks(double lo, double hi, double target, bool integer) {
  std::vector<AxisTick> ticks;
  for (double v : nice_ticks(lo, hi, target, integer ? 1.0 : 0.0)) {
    ticks.push_back({v, tick_label(v)});
  }
  return ticks;
}

}  // namespace

std::string plain_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::vector<AxisTick> ticks_for(const PlotAxis& axis, double lo, double hi, double target) {
  if (axis.scale == AxisScale::linear) return linear_ticks(lo, hi, target, axis.integer_ticks);
  const double base = axis.scale == AxisScale::log2 ? 2.0 : 10.0;
  std::vector<AxisTick> ticks = power_ticks(base, lo, hi, static_cast<std::size_t>(std::max(target * 1.6, 3.0)));
  if (!ticks.empty()) return ticks;
  if (base == 10) {  // less than a decade: 1, 2 and 5 times a power of ten
    for (double e = std::floor(std::log10(lo)); e <= std::ceil(std::log10(hi)); e += 1) {
      for (double m : {1.0, 2.0, 5.0}) {
        const double v = m * std::pow(10.0, e);
        if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) ticks.push_back({v, plain_number(v)});
      }
    }
    if (ticks.size() >= 2) return ticks;
  }
  return linear_ticks(lo, hi, target, axis.integer_ticks);  // too narrow for powers
}

}  // namespace render

std::vector<AxisTick> axis_ticks(const PlotAxis& axis, double lo, double hi) {
  // Finite limits too: the tick loops step from lo to hi, and a log axis reaching 0 or inf
  // (rope --base 1e-320) had them count exponents forever.
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi) ||
      (axis.scale != AxisScale::linear && !(lo > 0))) {
    throw InputError("plot: axis limits must be finite and satisfy lo < hi (and lo > 0 on a log axis)");
  }
  return render::ticks_for(axis, lo, hi, 5);
}

}  // namespace attn
