// attn-cli tradeoff (tradeoff.hpp): every method timed, its memory and error measured, in one run per n.
#include "attn/lessons/measure/tradeoff.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "attn/engine/attention/attention.hpp"
#include "attn/engine/attention/attention_methods.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/lessons/measure/bench.hpp"
#include "attn/lessons/measure/scaling.hpp"
#include "attn/io/shipped_model.hpp"
#include "attn/lessons/models/head_summary.hpp"
#include "attn/lessons/models/train.hpp"
#include "bench_timing.hpp"
#include "concepts/max_difference.hpp"

namespace attn {
namespace {

using namespace bench_detail;

// One method at one n: what it computes, and how many FLOPs that is.
struct Method {
  std::string name, family;
  bool causal = true;
  double flops = 0;
  std::function<Tensor3()> run;
};

struct Inputs {
  Tensor3 q, k, v;
  Tensor3 exact_causal, exact_full;  // the float64 flash kernel's outputs, rounded once
};

BackendOptions flash_backend(const TradeoffConfig& c, FlashPrecision precision) {
  BackendOptions b;
  b.backend = Backend::flash;
  b.precision = precision;
  b.threads = c.threads;
  return b;
}

Tensor3 flash_run(const Inputs& in, const SdpaOptions& so, const BackendOptions& b) {
  return attention(in.q, in.k, in.v, nullptr, so, b, /*with_weights=*/false).output;
}

SdpaOptions causal_options() {
  SdpaOptions so;
  so.causal = true;
  return so;
}

MethodOptions method_options(AttentionMethod m, bool causal, std::size_t d, std::uint64_t seed) {
  MethodOptions o;
  o.method = m;
  o.causal = causal;
  o.scale = 1.0 / std::sqrt(double(d));
  o.seed = seed;
  o.with_weights = false;  // the linear-time forms
  return o;
}

// The masked softmax methods: flash with a window or a strided pattern.
void add_masked(std::vector<Method>& ms, const TradeoffConfig& c, const Inputs& in, std::size_t n) {
  const double d = double(c.head_dim);
  double window_pairs = 0, strided_pairs = 0;
  for (std::size_t p = 0; p < n; ++p) window_pairs += double(window_keys(p, c.window)), strided_pairs += double(strided_keys(p, c.stride));
  SdpaOptions window = causal_options();
  window.mask_mod.window = variants::SlidingWindow{c.window - 1, 0};
  SdpaOptions sparse = causal_options();
  sparse.mask_mod.stride = variants::Strided{c.stride};
  const BackendOptions b = flash_backend(c, FlashPrecision::float32);
  ms.push_back({"window " + std::to_string(c.window), "window", true, 4 * d * window_pairs,
                [&in, window, b] { return flash_run(in, window, b); }});
  ms.push_back({"sparse stride " + std::to_string(c.stride), "sparse", true, 4 * d * strided_pairs,
                [&in, sparse, b] { return flash_run(in, sparse, b); }});
}

// The methods that replace softmax: linear, performer for each m, linformer.
void add_kernels(std::vector<Method>& ms, const TradeoffConfig& c, const Inputs& in, std::size_t n) {
  const double d = double(c.head_dim), N = double(n);
  const MethodOptions linear = method_options(AttentionMethod::linear, true, c.head_dim, c.seed);
  ms.push_back({"linear", "linear", true, 4 * N * d * d, [&in, linear] { return method_attention(in.q, in.k, in.v, linear).output; }});
  for (std::size_t m : c.features) {
    MethodOptions o = method_options(AttentionMethod::performer, true, c.head_dim, c.seed);
    o.features = m;
    ms.push_back({"performer m=" + std::to_string(m), "performer", true, 4 * N * double(m) * 2 * d,
                  [&in, o] { return method_attention(in.q, in.k, in.v, o).output; }});
  }
  MethodOptions o = method_options(AttentionMethod::linformer, false, c.head_dim, c.seed);
  o.rank = c.rank;
  ms.push_back({"linformer k=" + std::to_string(c.rank), "linformer", false, 4 * N * double(c.rank) * 2 * d,
                [&in, o] { return method_attention(in.q, in.k, in.v, o).output; }});
}

std::vector<Method> methods_at(const TradeoffConfig& c, const Inputs& in, std::size_t n) {
  std::vector<Method> ms;
  const BackendOptions b = flash_backend(c, FlashPrecision::float32);
  ms.push_back({"flash", "flash", true, attention_flops(n, 1, c.head_dim, true),
                [&in, b] { return flash_run(in, causal_options(), b); }});
  add_masked(ms, c, in, n);
  add_kernels(ms, c, in, n);
  return ms;
}

// One untimed run (its output's error and the process's peak memory above its size before),
// then `repeat` timed ones; the median time.
TradeoffRun measure(const Method& m, const Inputs& in, std::size_t n, const std::string& kind, std::size_t repeat) {
  TradeoffRun r{m.name, m.family, n, kind, 0, m.causal, 0, m.flops, 0, 0};
  hand_back_kept_memory();
  const double before = double(rss_field("VmRSS:"));
  reset_peak_rss();
  const Tensor3 out = m.run();
  r.peak_bytes = std::max(0.0, double(rss_field("VmHWM:")) - before);
  r.error = relative_frobenius_error(out, m.causal ? in.exact_causal : in.exact_full);
  std::vector<double> ms;
  for (std::size_t k = 0; k < repeat; ++k) {
    const auto t0 = Clock::now();
    const Tensor3 timed = m.run();
    ms.push_back(ms_since(t0));
  }
  std::sort(ms.begin(), ms.end());
  r.ms = ms[ms.size() / 2];
  return r;
}

// K a random walk along the sequence, Q = 2 K + noise: attention peaked on the nearest keys
// (score about 2 sqrt(d) 0.9^|i-j|: 16 against 0 at d = 64, so e^16 : 1).
void make_local(TradeoffInputs& in, Rng& rng) {
  const std::size_t n = in.k.shape(1), d = in.k.shape(2);
  constexpr double kCarry = 0.9, kQueryScale = 2, kQueryNoise = 0.1;
  for (std::size_t c = 0; c < d; ++c) in.k(0, 0, c) = float(rng.normal());
  for (std::size_t i = 1; i < n; ++i)
    for (std::size_t c = 0; c < d; ++c)
      in.k(0, i, c) = float(kCarry * in.k(0, i - 1, c) + std::sqrt(1 - kCarry * kCarry) * rng.normal());
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t c = 0; c < d; ++c) in.q(0, i, c) = float(kQueryScale * in.k(0, i, c) + kQueryNoise * rng.normal());
}

// The shipped toy model's best induction head (the largest score on the first window).
struct ToyHead {
  std::size_t layer = 0, head = 0;
};
ToyHead best_induction_head(const std::vector<std::int32_t>& ids, const std::vector<Tensor3>& attention) {
  const HeadSummary summary = summarize_heads(ids, attention);
  const HeadScores* best = &summary.heads.front();
  for (const HeadScores& h : summary.heads)
    if (h.induction.value_or(-1) > best->induction.value_or(-1)) best = &h;
  return {best->layer, best->head};
}

// The toy model's induction head on ceil(n / context) held-out windows of its task, each its own
// forward pass, their q, k, v laid end to end and cut to n.
void make_toy(TradeoffInputs& in, Rng& rng) {
  const ToyModel model = shipped_toy_model();
  const ToyConfig& mc = model.config;
  const std::size_t n = in.q.shape(1), windows = (n + mc.context - 1) / mc.context;
  const TokenBatch batch = held_out_batch(TrainTask::induction, windows, mc.context, mc.vocab, rng);
  std::optional<ToyHead> head;
  for (std::size_t w = 0; w < windows; ++w) {
    const std::vector<std::int32_t> ids(batch.tokens.begin() + std::ptrdiff_t(w * mc.context),
                                        batch.tokens.begin() + std::ptrdiff_t((w + 1) * mc.context));
    const ToyForward f = toy_forward(model, ids);
    if (!head) head = best_induction_head(ids, f.attention);
    const std::size_t first = w * mc.context, count = std::min(mc.context, n - first);
    for (std::size_t i = 0; i < count; ++i)
      for (std::size_t c = 0; c < in.q.shape(2); ++c) {
        in.q(0, first + i, c) = f.q[head->layer](head->head, i, c);
        in.k(0, first + i, c) = f.k[head->layer](head->head, i, c);
        in.v(0, first + i, c) = f.v[head->layer](head->head, i, c);
      }
  }
}

Inputs inputs_at(const TradeoffConfig& c, std::size_t n, const std::string& kind) {
  TradeoffInputs qkv = tradeoff_inputs(c, n, kind);
  Inputs in{std::move(qkv.q), std::move(qkv.k), std::move(qkv.v), {}, {}};
  const BackendOptions exact = flash_backend(c, FlashPrecision::float64);
  in.exact_causal = flash_run(in, causal_options(), exact);
  in.exact_full = flash_run(in, SdpaOptions{}, exact);
  return in;
}

std::vector<TradeoffFit> fit_times(const std::vector<TradeoffRun>& runs) {
  std::vector<std::string> order;
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> points;
  for (const TradeoffRun& r : runs) {
    if (r.inputs != runs.front().inputs) continue;  // time does not depend on the values
    if (!points.count(r.method)) order.push_back(r.method);
    points[r.method].first.push_back(double(r.n));
    points[r.method].second.push_back(std::max(r.ms, 1e-6));
  }
  std::vector<TradeoffFit> fits;
  for (const std::string& name : order)
    if (std::set<double>(points[name].first.begin(), points[name].first.end()).size() >= 2) fits.push_back({name, fit_loglog_slope(points[name].first, points[name].second)});
  return fits;
}

}  // namespace

TradeoffInputs tradeoff_inputs(const TradeoffConfig& c, std::size_t n, const std::string& kind) {
  Rng rng(c.seed + n);
  TradeoffInputs in{random_tensor(rng, 1, n, c.head_dim), random_tensor(rng, 1, n, c.head_dim),
                    random_tensor(rng, 1, n, c.head_dim)};
  if (kind == "local") make_local(in, rng);
  if (kind == "toy") make_toy(in, rng);
  return in;
}

std::size_t toy_head_dim() {
  const ToyConfig c = shipped_toy_model().config;
  return c.d_model / c.heads;
}

TradeoffConfig config_for(const TradeoffConfig& c, const std::string& kind) {
  TradeoffConfig k = c;
  if (kind == "toy") k.head_dim = toy_head_dim();
  return k;
}

std::size_t window_keys(std::size_t p, std::size_t w) { return std::min(w, p + 1); }
std::size_t strided_keys(std::size_t p, std::size_t s) { return std::min(s, p + 1) + p / s; }

void check_tradeoff_config(const TradeoffConfig& c) {
  if (c.ns.empty()) throw InputError("--n: expected at least one sequence length");
  for (std::size_t n : c.ns)
    if (n < 1 || n > 65536) throw InputError("--n: expected 1 to 65536, got " + std::to_string(n));
  if (c.head_dim < 1 || c.head_dim > 1024) throw InputError("--head-dim: expected 1 to 1024");
  if (c.window < 1 || c.stride < 1 || c.rank < 1 || c.repeat < 1)
    throw InputError("--window, --stride, --rank and --repeat must be at least 1");
  if (c.features.empty()) throw InputError("--features: expected at least one count");
  for (std::size_t m : c.features)
    if (m < 1 || m > 65536) throw InputError("--features: expected 1 to 65536, got " + std::to_string(m));
  if (c.inputs.empty()) throw InputError("--inputs: expected random, local or toy");
  for (const std::string& kind : c.inputs)
    if (kind != "random" && kind != "local" && kind != "toy")
      throw InputError("--inputs: expected random, local or toy, got \"" + kind + "\"");
}

double tradeoff_seconds(const TradeoffConfig& c) {
  constexpr double kFlash = 2e10, kFlash64 = 5e9, kMethods = 1e9, kMaskElements = 5e7;
  double m_sum = 0;
  for (std::size_t m : c.features) m_sum += double(m);
  double seconds = 0;
  for (std::size_t n : c.ns) {
    const double N = double(n), d = double(c.head_dim), calls = double(c.repeat + 1);
    const double references = (4 + 2) * N * N * d / kFlash64;  // bidirectional and causal
    const double flash = calls * 3 * 2 * N * N * d / kFlash;   // exact, window and sparse at most as much
    const double masks = calls * 2 * 2 * N * N / kMaskElements;  // each mask's bitmap, and its joined copy
    const double methods = calls * 8 * N * d * (d + m_sum + double(c.rank)) / kMethods;
    seconds += references + flash + masks + methods;
  }
  return seconds * double(c.inputs.size());
}

double tradeoff_bytes(const TradeoffConfig& c) {
  const std::size_t n = *std::max_element(c.ns.begin(), c.ns.end());
  const std::size_t m = *std::max_element(c.features.begin(), c.features.end());
  const double N = double(n), d = double(c.head_dim);
  // inputs and references; a mask's bitmap and its joined copy; performer's features (float64,
  // exponents and values, queries and keys); linformer's E and F and its scores
  return 8 * N * d * 4 + 2 * N * N + 32 * N * double(m) + 8 * 3 * N * double(c.rank) + 16 * N * d;
}

TradeoffResult run_tradeoff(const TradeoffConfig& c) {
  check_tradeoff_config(c);
  TradeoffResult r;
  r.config = c;
  const std::size_t total = (5 + c.features.size()) * c.ns.size() * c.inputs.size();
  std::size_t done = 0;
  for (const std::string& kind : c.inputs)
    for (std::size_t n : c.ns) {
      const TradeoffConfig ck = config_for(c, kind);
      const Inputs in = inputs_at(ck, n, kind);
      for (const Method& m : methods_at(ck, in, n)) {
        r.runs.push_back(measure(m, in, n, kind, c.repeat));
        r.runs.back().head_dim = ck.head_dim;
        if (c.progress) c.progress(++done, total);
      }
    }
  r.fits = fit_times(r.runs);
  return r;
}

Json tradeoff_json(const TradeoffResult& r) {
  Json runs = Json::array();
  for (const TradeoffRun& x : r.runs)
    runs.push_back({{"method", x.method}, {"family", x.family}, {"n", x.n}, {"inputs", x.inputs}, {"head_dim", x.head_dim}, {"causal", x.causal}, {"ms", x.ms},
                    {"flops", x.flops}, {"peak_bytes", x.peak_bytes}, {"relative_error", x.error}});
  Json fits = Json::array();
  for (const TradeoffFit& f : r.fits) fits.push_back({{"method", f.method}, {"time_exponent", f.exponent}});
  const TradeoffConfig& c = r.config;
  return {{"config",
           {{"n", c.ns}, {"head_dim", c.head_dim}, {"window", c.window}, {"stride", c.stride}, {"features", c.features},
            {"rank", c.rank}, {"repeat", c.repeat}, {"seed", c.seed}, {"inputs", c.inputs}}},
          {"runs", runs},
          {"fits", fits}};
}

}  // namespace attn
