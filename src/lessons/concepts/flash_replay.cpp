#include "attn/lessons/concepts/flash_replay.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "attn/engine/attention/attention.hpp"

namespace attn {
namespace {

// Collects the kernel's tiles as they come (one thread: no lock needed).
class Recorder : public FlashObserver {
 public:
  void on_tile(const FlashTileStep& step) override { steps.push_back(step); }
  std::vector<FlashTileStep> steps;
};

// A double as JSON, at float32's shortest text (the replay is read by people, and a 48-token
// sentence has thousands of numbers); infinities and NaN (m before any key) as null.
Json number(double x) {
  if (!std::isfinite(x)) return nullptr;
  return json_float(static_cast<float>(x), FloatText::shortest);
}

Json numbers(const std::vector<double>& xs) {
  Json a = Json::array();
  for (double x : xs) a.push_back(number(x));
  return a;
}

Json rows_of(const std::vector<double>& xs, std::size_t width) {
  Json a = Json::array();
  for (std::size_t i = 0; i + width <= xs.size() && width > 0; i += width)
    a.push_back(numbers(std::vector<double>(xs.begin() + long(i), xs.begin() + long(i + width))));
  return a;
}

}  // namespace

std::size_t FlashReplay::read() const {
  return std::size_t(std::count_if(steps.begin(), steps.end(), [](const FlashTileStep& s) { return !s.skipped; }));
}
std::size_t FlashReplay::skipped() const { return steps.size() - read(); }

std::size_t teaching_block(std::size_t tokens) { return std::max<std::size_t>(2, (tokens + 7) / 8); }

FlashReplay replay_flash(const Tensor3& q, const Tensor3& k, const Tensor3& v,
                         const std::vector<std::string>& tokens, const FlashReplayOptions& options) {
  Recorder recorder;
  SdpaOptions so;
  so.causal = options.causal;
  BackendOptions b;  // float64 tiles on one thread, every step observed
  b.backend = Backend::flash;
  b.block_q = options.block_q;
  b.block_k = options.block_k;
  b.threads = 1;
  b.precision = FlashPrecision::float64;
  b.isa = "generic";
  b.observer = &recorder;
  const SdpaResult f = attention(q, k, v, nullptr, so, b, /*with_weights=*/false);

  FlashReplay r;
  r.tokens = tokens;
  r.causal = options.causal;
  const FlashTiling t = flash_tiling(q.shape(1), k.shape(1), tiled_options(so, b, q.shape(2)));
  r.block_q = t.block_q, r.block_k = t.block_k, r.isa = t.isa;
  r.scale = resolved_scale(std::nullopt, q.shape(2));
  // The kernel walks causal query blocks last-first (the costly ones first); a learner reads
  // them top-down, so the steps are put in (query block, key block) order.
  r.steps = std::move(recorder.steps);
  std::stable_sort(r.steps.begin(), r.steps.end(), [](const FlashTileStep& a, const FlashTileStep& b) {
    return std::tie(a.head, a.i0, a.j0) < std::tie(b.head, b.i0, b.j0);
  });

  const SdpaResult n = attention(q, k, v, nullptr, so);
  r.output = xt::view(f.output, 0, xt::all(), xt::all());
  r.naive_output = xt::view(n.output, 0, xt::all(), xt::all());
  for (std::size_t i = 0; i < q.shape(1); ++i) {
    r.lse.push_back(f.lse64(0, i));
    r.naive_lse.push_back(n.lse(0, i));
    for (std::size_t c = 0; c < r.output.shape(1); ++c)
      r.max_diff_output = std::max(r.max_diff_output, std::fabs(double(r.output(i, c)) - double(r.naive_output(i, c))));
    if (std::isfinite(r.lse.back()))
      r.max_diff_lse = std::max(r.max_diff_lse, std::fabs(double(float(r.lse.back())) - double(n.lse(0, i))));
  }
  return r;
}

Json flash_replay_json(const FlashReplay& r) {
  Json steps = Json::array();
  for (const FlashTileStep& s : r.steps) {
    steps.push_back({{"rows", {s.i0, s.i0 + s.rows}},
                     {"keys", {s.j0, s.j0 + s.cols}},
                     {"kind", s.skipped ? "skipped" : s.diagonal ? "diagonal" : "full"},
                     {"visible", s.visible},
                     {"m_before", numbers(s.m_before)},
                     {"l_before", numbers(s.l_before)},
                     {"m_after", numbers(s.m_after)},
                     {"l_after", numbers(s.l_after)},
                     {"rescale", numbers(s.rescale)},
                     {"p", rows_of(s.p, s.cols)},
                     {"partial_output", rows_of(s.output, s.dv)}});
  }
  Json out = Json::array(), naive = Json::array();
  for (std::size_t i = 0; i < r.output.shape(0); ++i) {
    std::vector<double> a, b;
    for (std::size_t c = 0; c < r.output.shape(1); ++c) a.push_back(r.output(i, c)), b.push_back(r.naive_output(i, c));
    out.push_back(numbers(a));
    naive.push_back(numbers(b));
  }
  return {{"about",
           "the flash kernel's own tile loop (float64, generic micro-kernels, one thread), recorded by its observer "
           "hook: m and l are each row's running max and sum of exp(s - m) over the scaled scores s seen so far "
           "(natural log; null = no key seen yet), rescale = exp(m_before - m_after) multiplies l and the partial "
           "output, p = exp(s - m_after) for the tile's keys, partial_output = the unnormalised O before the "
           "final division by l"},
          {"tokens", r.tokens},
          {"causal", r.causal},
          {"block_q", r.block_q},
          {"block_k", r.block_k},
          {"isa", r.isa},
          {"scale", r.scale},
          {"tiles_read", r.read()},
          {"tiles_skipped", r.skipped()},
          {"steps", steps},
          {"output", out},
          {"naive_output", naive},
          {"lse", numbers(r.lse)},
          {"max_abs_diff_output", r.max_diff_output},
          {"max_abs_diff_lse", r.max_diff_lse}};
}

}  // namespace attn
