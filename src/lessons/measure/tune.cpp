// attn-cli tune: the float32 flash kernel's blockings and query tile, chosen by timing them here.
#include "attn/lessons/measure/tune.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "attn/engine/attention/attention.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/lessons/measure/memory_policy.hpp"
#include "bench_timing.hpp"

namespace attn {

std::size_t pick_faster(const std::vector<double>& ms, std::size_t incumbent, double margin) {
  if (incumbent >= ms.size()) throw InputError("pick_faster: no incumbent among the candidates");
  std::size_t best = incumbent;
  for (std::size_t i = 0; i < ms.size(); ++i)
    if (ms[i] < ms[best]) best = i;
  return ms[best] < ms[incumbent] * (1.0 - margin) ? best : incumbent;
}

namespace {

using bench_detail::Clock;
using bench_detail::ms_since;

struct Inputs {
  Tensor3 q, k, v;
};

// The same bytes: -0 is not +0, and a NaN equals the same NaN (== says neither).
bool same_bytes(const SdpaResult& a, const SdpaResult& b) {
  auto same = [](const auto& x, const auto& y) {
    return x.shape() == y.shape() && std::memcmp(x.data(), y.data(), x.size() * sizeof(*x.data())) == 0;
  };
  return same(a.output, b.output) && same(a.lse, b.lse);
}

struct Timed {
  double full_ms = std::numeric_limits<double>::infinity(), causal_ms = full_ms;
  bool same_bits = true;
};

// The float32 flash kernel with one candidate's blockings and query tile.
BackendOptions backend_for(const FlashTuning& t, std::size_t threads) {
  BackendOptions b;
  b.backend = Backend::flash;
  b.precision = FlashPrecision::float32;
  b.qk_kernel = t.qk_kernel, b.pv_kernel = t.pv_kernel, b.block_q = t.block_q;
  b.threads = threads;
  return b;
}

SdpaResult run_flash(const Inputs& in, const FlashTuning& t, std::size_t threads, bool causal) {
  SdpaOptions so;
  so.causal = causal;
  return attention(in.q, in.k, in.v, nullptr, so, backend_for(t, threads), /*with_weights=*/false);
}

// Times every candidate `rounds` times, a round visiting each in turn (non-causal, then causal)
// and starting one further along each round, so that no candidate always runs first after
// another one's caches. One untimed round first warms them up and checks their bits against
// `reference` (the built-in's non-causal and causal results).
std::vector<Timed> time_candidates(const std::vector<FlashTuning>& candidates, const Inputs& in,
                                   const TuneConfig& c, std::size_t threads, const SdpaResult (&reference)[2],
                                   std::size_t& done, std::size_t total) {
  std::vector<Timed> timed(candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i)
    for (bool causal : {false, true}) {
      const SdpaResult r = run_flash(in, candidates[i], threads, causal);
      const SdpaResult& want = reference[causal];
      timed[i].same_bits = timed[i].same_bits && same_bytes(r, want);
    }
  for (std::size_t round = 0; round < c.rounds; ++round) {
    for (std::size_t step = 0; step < candidates.size(); ++step) {
      const std::size_t i = (round + step) % candidates.size();
      for (bool causal : {false, true}) {
        const auto t0 = Clock::now();
        const SdpaResult r = run_flash(in, candidates[i], threads, causal);
        const double ms = ms_since(t0);
        double& best = causal ? timed[i].causal_ms : timed[i].full_ms;
        best = std::min(best, ms);
      }
      if (c.progress) c.progress(++done, total);
    }
  }
  return timed;
}

void check_tune_config(const TuneConfig& c) {
  if (c.n < 1 || c.heads < 1 || c.head_dim < 1) throw InputError("tune: n, heads and head_dim must be at least 1");
  if (c.rounds < 1 || c.rounds > 1000) throw InputError("rounds: expected 1 to 1000");
  if (!std::isfinite(c.margin) || c.margin < 0 || c.margin >= 1)
    throw InputError("margin: expected a fraction in [0, 1)");
}

}  // namespace

std::vector<std::size_t> tune_block_qs() {
  const std::size_t builtin = flash_default_block_q();
  return {builtin, builtin / 2, builtin * 2};
}

TuneResult tune_flash(const TuneConfig& c) {
  check_tune_config(c);
  reuse_freed_memory();
  TuneResult result;
  result.threads = c.threads ? c.threads : std::max(1u, std::thread::hardware_concurrency());
  const FlashBlockings offered = flash_blockings();
  result.isa = offered.isa;
  result.builtin = {offered.qk.front(), offered.pv.front(), offered.block_q};

  Rng rng(c.seed);
  Inputs in{bench_detail::random_tensor(rng, c.heads, c.n, c.head_dim),
            bench_detail::random_tensor(rng, c.heads, c.n, c.head_dim),
            bench_detail::random_tensor(rng, c.heads, c.n, c.head_dim)};
  const SdpaResult reference[2] = {run_flash(in, result.builtin, result.threads, false),
                                    run_flash(in, result.builtin, result.threads, true)};

  // The stages and their candidates, each varying one field of the choice so far.
  const std::vector<std::size_t> block_qs = tune_block_qs();
  // At most: every stage's candidates, then the built-in against the stages' choice.
  const std::size_t total = c.rounds * (offered.qk.size() + offered.pv.size() + block_qs.size() + 2);
  std::size_t done = 0;

  FlashTuning chosen = result.builtin;
  std::size_t stage_start = 0;  // the index of the last stage's first candidate
  for (const char* stage : {"qk_kernel", "pv_kernel", "block_q"}) {
    const std::string name = stage;
    std::vector<FlashTuning> candidates;
    auto add = [&](FlashTuning t) {  // the incumbent first, then the others
      if (std::find(candidates.begin(), candidates.end(), t) == candidates.end()) candidates.push_back(t);
    };
    add(chosen);
    if (name == "qk_kernel")
      for (const std::string& qk : offered.qk) add({qk, chosen.pv_kernel, chosen.block_q});
    if (name == "pv_kernel")
      for (const std::string& pv : offered.pv) add({chosen.qk_kernel, pv, chosen.block_q});
    if (name == "block_q")
      for (std::size_t bq : block_qs) add({chosen.qk_kernel, chosen.pv_kernel, bq});
    for (const FlashTuning& t : candidates) {  // each runs what it is named, or its time says nothing
      const FlashTiling tiling = flash_tiling(c.n, c.n, tiled_options({}, backend_for(t, result.threads), c.head_dim));
      if (tiling.qk_kernel != t.qk_kernel || tiling.pv_kernel != t.pv_kernel)
        throw InputError("n: at n = " + std::to_string(c.n) + " the key tile is " + std::to_string(tiling.block_k) +
                         " keys, which the Q K^T blocking " + t.qk_kernel + " does not divide into its panels; tune at n >= " +
                         std::to_string(flash_default_block_k()));
    }
    const std::vector<Timed> timed = time_candidates(candidates, in, c, result.threads, reference, done, total);
    stage_start = result.candidates.size();
    std::vector<double> scores;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const double score = timed[i].full_ms + timed[i].causal_ms;
      // A candidate that changed the bits is never chosen.
      scores.push_back(timed[i].same_bits ? score : std::numeric_limits<double>::infinity());
      result.candidates.push_back({name, candidates[i], timed[i].full_ms, timed[i].causal_ms, score, timed[i].same_bits});
    }
    chosen = candidates[pick_faster(scores, 0, c.margin)];
  }
  result.staged = result.chosen = chosen;

  // What the stages chose against the built-in, in rounds of their own (when they differ): a
  // stage compares candidates with each other, and a small gain in each of three stages can
  // be noise that adds up. Kept only if it wins here too.
  if (chosen != result.builtin) {
    const std::vector<Timed> last = time_candidates({result.builtin, chosen}, in, c, result.threads, reference, done, total);
    result.builtin_ms = last.front().full_ms + last.front().causal_ms;
    result.staged_ms = last.back().full_ms + last.back().causal_ms;
    if (pick_faster({result.builtin_ms, result.staged_ms}, 0, c.margin) == 0) result.chosen = result.builtin;
  } else {  // the last stage's first candidate was the built-in
    result.builtin_ms = result.staged_ms = result.candidates[stage_start].score_ms;
  }
  if (c.progress && done < total) c.progress(total, total);
  return result;
}

}  // namespace attn
