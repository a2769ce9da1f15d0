// attn-cli tune, after the blockings: the decode path's prefetch distances and the thread
// crossovers of decode and small prefill, chosen by timing them here.
#include "attn/lessons/measure/tune_decode.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <utility>

#include "attn/engine/core/error.hpp"
#include "attn/lessons/measure/memory_policy.hpp"
#include "attn/lessons/measure/tune.hpp"
#include "bench_timing.hpp"

namespace attn {
namespace {

using bench_detail::Clock;
using bench_detail::ms_since;

// One shape's inputs: K and V in float32, or (bf16) in bfloat16 as a bfloat16 KV cache keeps them.
struct Call {
  Tensor3 q, k, v;
  Bf16Tensor3 k16, v16;
  bool bf16 = false;
};

FlashResult run(const Call& c, const DecodeTuning& t, std::size_t threads) {
  FlashOptions fo;
  fo.threads = threads;
  fo.decode_tuning = &t;
  return c.bf16 ? flash_decode_bf16(c.q, c.k16, c.v16, nullptr, fo) : flash_attention(c.q, c.k, c.v, nullptr, fo);
}

// The same bytes: -0 is not +0, and a NaN equals the same NaN (== says neither).
bool same_bytes(const FlashResult& a, const FlashResult& b) {
  auto same = [](const auto& x, const auto& y) {
    return x.shape() == y.shape() && std::memcmp(x.data(), y.data(), x.size() * sizeof(*x.data())) == 0;
  };
  return same(a.output, b.output) && same(a.lse, b.lse);
}

// A decode step or a small prefill takes microseconds: one sample repeats the call, back to back
// as a generation loop makes them (so the pool's threads are awake, as they would be there),
// until sample_ms has passed, and gives the time per call.
double per_call_ms(const Call& c, const DecodeTuning& t, std::size_t threads, double sample_ms) {
  const auto t0 = Clock::now();
  std::size_t calls = 0;
  double ms = 0;
  do {
    run(c, t, threads);
    ++calls;
    ms = ms_since(t0);
  } while (ms < sample_ms);
  return ms / double(calls);
}

// A decode step of a long cache in a model finds none of it in the caches: the other layers'
// weights and caches were read since. A prefetch stage's sample reads all of this first (as
// many bytes as the float32 cache, untimed), then times one call. Timed back to back instead,
// on a Zen 3 EPYC (32 MiB of L3) the 64 MiB cache was partly read from L3, and the stages picked
// a float32 near distance 1.04x faster there that `bench --mode decode` (each run after a
// streaming read) measured at 0.66-0.69 of the stream on 1 thread against 0.88-0.94 without.
struct Flush {
  std::vector<float> bytes;
  void operator()(std::size_t threads) const {
    static volatile double sink;
    sink = stream_read(bytes.data(), bytes.size(), nullptr, 0, threads);
  }
};

// One setting to time: a shape, a tuning, a thread count, and the bytes it must give; with a
// flush, each sample is one call from cold caches.
struct Setting {
  const Call* call;
  DecodeTuning tuning;
  std::size_t threads;
  const FlashResult* reference;
  const Flush* flush = nullptr;
};

double time_sample(const Setting& s, double sample_ms) {
  if (!s.flush) return per_call_ms(*s.call, s.tuning, s.threads, sample_ms);
  (*s.flush)(s.threads);
  const auto t0 = Clock::now();
  run(*s.call, s.tuning, s.threads);
  return ms_since(t0);
}

struct Timed {
  double ms = std::numeric_limits<double>::infinity();
  bool same_bits = true;
};

// Every setting's best sample over `rounds` rounds, a round visiting each in turn and starting
// one further along each round (no setting always runs just after the same other one). One
// untimed run first warms each up and checks its bytes.
std::vector<Timed> time_settings(const std::vector<Setting>& settings, const DecodeTuneConfig& c) {
  std::vector<Timed> timed(settings.size());
  for (std::size_t i = 0; i < settings.size(); ++i)
    timed[i].same_bits = same_bytes(run(*settings[i].call, settings[i].tuning, settings[i].threads), *settings[i].reference);
  for (std::size_t round = 0; round < c.rounds; ++round) {
    for (std::size_t step = 0; step < settings.size(); ++step) {
      const std::size_t i = (round + step) % settings.size();
      const Setting& s = settings[i];
      timed[i].ms = std::min(timed[i].ms, time_sample(s, c.sample_ms));
    }
    if (c.progress) c.progress(round + 1, c.rounds);
  }
  return timed;
}

Call random_call(Rng& rng, std::size_t heads, std::size_t queries, std::size_t keys, std::size_t d) {
  return {bench_detail::random_tensor(rng, heads, queries, d), bench_detail::random_tensor(rng, heads, keys, d),
          bench_detail::random_tensor(rng, heads, keys, d)};
}

// The same query against the same cache, stored in bfloat16.
Call bf16_call(const Call& c) { return {c.q, {}, {}, to_bf16(c.k), to_bf16(c.v), true}; }

// A prefetch stage's call, the built-in's bytes for it (on all threads), which the stage and
// the head-to-head compare every run with, and what each sample reads first (Flush).
struct Checked {
  Call call;
  FlashResult reference;
  const Flush* flush;
};
Checked checked(Call call, const DecodeTuneResult& r, const Flush& flush) {
  FlashResult reference = run(call, r.builtin, r.threads);
  return {std::move(call), std::move(reference), &flush};
}

// The thread counts a prefetch distance is timed on: one and all. A distance serves every
// thread count, and what it is worth can differ between them.
std::vector<std::size_t> distance_threads(const DecodeTuneResult& r) {
  return r.threads > 1 ? std::vector<std::size_t>{1, r.threads} : std::vector<std::size_t>{1};
}

// A prefetch stage: the call with each distance in turn, set in `member` of `base` (the
// built-in, or for a near distance the built-in with the prefetch stage's pick: head_to_head
// judges it against the same base), on one thread and on all (distance_threads), each sample
// from cold caches; the built-in distance first, and the index of the one the margin rule
// picks by the sum of its times.
std::size_t distance_stage(const Checked& shape, const std::vector<std::size_t>& distances,
                           std::size_t DecodeTuning::*member, const DecodeTuning& base, DecodeTuneResult& r,
                           std::vector<DistanceCandidate>& out, const DecodeTuneConfig& c) {
  const std::vector<std::size_t> threads = distance_threads(r);
  std::vector<Setting> settings;
  for (std::size_t distance : distances) {
    DecodeTuning t = base;
    t.*member = distance;
    for (std::size_t n : threads) settings.push_back({&shape.call, t, n, &shape.reference, shape.flush});
  }
  const std::vector<Timed> timed = time_settings(settings, c);
  std::vector<double> scores;
  for (std::size_t i = 0; i < distances.size(); ++i) {
    DistanceCandidate d{distances[i], settings[i * threads.size()].tuning.prefetch_blocks};
    d.same_bits = true;
    for (std::size_t t = 0; t < threads.size(); ++t) {
      const Timed& one = timed[i * threads.size() + t];
      (t == 0 ? d.one_ms : d.many_ms) = one.ms;
      d.ms += one.ms;
      d.same_bits = d.same_bits && one.same_bits;
    }
    if (threads.size() == 1) d.many_ms = d.one_ms;
    out.push_back(d);
    scores.push_back(d.same_bits ? d.ms : std::numeric_limits<double>::infinity());
    r.all_same_bits = r.all_same_bits && d.same_bits;
  }
  return pick_faster(scores, 0, c.margin);
}

// A ladder's shapes: decode (one query row against n keys) or prefill (n x n), and the work
// each means to the crossover that the kernel applies.
struct Ladder {
  std::vector<std::size_t> n;
  std::vector<double> work;
  std::vector<Call> calls;
};

Ladder decode_ladder(Rng& rng, const DecodeTuneConfig& c) {
  Ladder l;
  // (key, query row) pairs from 2^11 to 2^16: 1 to 32 MiB of float32 K and V at d = 64.
  for (std::size_t pairs = 2048; pairs <= 65536; pairs *= 2) {
    const std::size_t keys = std::max<std::size_t>(256, pairs / c.heads);  // the decode path's least
    if (!l.n.empty() && keys == l.n.back()) continue;
    l.n.push_back(keys);
    l.work.push_back(double(c.heads) * double(keys));
    l.calls.push_back(random_call(rng, c.heads, 1, keys, c.head_dim));
  }
  return l;
}

Ladder prefill_ladder(Rng& rng, const DecodeTuneConfig& c) {
  Ladder l;
  for (std::size_t n : {16, 32, 64, 96, 128, 192, 256, 384}) {
    l.n.push_back(n);
    l.work.push_back(double(c.heads) * double(n) * double(n) * double(2 * c.head_dim));
    l.calls.push_back(random_call(rng, c.heads, n, n, c.head_dim));
  }
  return l;
}

// Times every ladder point on one thread and on all, with `forced` (a crossover of 1: every
// thread asked for works) and returns the points.
std::vector<CrossoverPoint> time_ladder(const Ladder& l, const DecodeTuning& forced, std::size_t threads,
                                        const DecodeTuneConfig& c, std::vector<FlashResult>& references) {
  references.clear();
  for (const Call& call : l.calls) references.push_back(run(call, decode_tuning_builtin(), 1));
  std::vector<Setting> settings;
  for (std::size_t i = 0; i < l.calls.size(); ++i)
    for (std::size_t t : {std::size_t(1), threads}) settings.push_back({&l.calls[i], forced, t, &references[i]});
  const std::vector<Timed> timed = time_settings(settings, c);
  std::vector<CrossoverPoint> points;
  for (std::size_t i = 0; i < l.calls.size(); ++i)
    points.push_back({l.n[i], l.work[i], timed[2 * i].ms, timed[2 * i + 1].ms,
                      timed[2 * i].same_bits && timed[2 * i + 1].same_bits});
  return points;
}

void check_decode_tune_config(const DecodeTuneConfig& c) {
  if (c.heads < 1 || c.head_dim < 1) throw InputError("tune: heads and head_dim must be at least 1");
  if (c.kv < 256) throw InputError("decode-kv: expected at least 256 keys (the decode path's shortest cache)");
  if (c.rounds < 1 || c.rounds > 1000) throw InputError("rounds: expected 1 to 1000");
  if (!std::isfinite(c.margin) || c.margin < 0 || c.margin >= 1)
    throw InputError("margin: expected a fraction in [0, 1)");
}

// One setting of DecodeTuning: its name and where it lives.
struct Field {
  const char* name;
  std::size_t DecodeTuning::*member;
};
constexpr Field kFields[] = {{"prefetch_blocks", &DecodeTuning::prefetch_blocks},
                             {"bf16_near_keys", &DecodeTuning::bf16_near_keys},
                             {"f32_near_keys", &DecodeTuning::f32_near_keys},
                             {"decode_thread_work", &DecodeTuning::decode_thread_work},
                             {"prefill_thread_work", &DecodeTuning::prefill_thread_work}};

bool is_near_distance(std::size_t DecodeTuning::*member) {
  return member == &DecodeTuning::bf16_near_keys || member == &DecodeTuning::f32_near_keys;
}

// The base a staged setting is judged against (HeadToHead): the built-in, but for a near
// distance with the prefetch the first stage picked, which its stage ran with.
DecodeTuning base_for(const DecodeTuneResult& r, std::size_t DecodeTuning::*member) {
  DecodeTuning base = r.builtin;
  if (is_near_distance(member)) base.prefetch_blocks = r.staged.prefetch_blocks;
  return base;
}

// Each setting the stages changed against its base, on the shapes where that change alone
// runs differently (prefetch_blocks: both caches, float32 and bfloat16, since both stream with
// it; bf16_near_keys: the bfloat16 one; f32_near_keys: the float32 one; a crossover: each
// ladder point where the thread counts differ), all in one set of alternating rounds; each is
// kept only when it wins there by the margin, so a noisy pick does not ride on another
// setting's clear win, and a near distance only with the prefetch it was timed with.
void head_to_head(DecodeTuneResult& r, const Checked& f32, const Checked& bf16, const Ladder& dl, const Ladder& pl,
                  const std::vector<FlashResult>& dref, const std::vector<FlashResult>& pref,
                  const DecodeTuneConfig& c) {
  std::vector<Setting> settings;
  std::vector<std::size_t> owner;  // settings[2i], [2i + 1]: the base and the change, for r.compared[owner[i]]
  for (const Field& f : kFields) {
    if (r.staged.*f.member == r.builtin.*f.member) continue;
    const DecodeTuning base = base_for(r, f.member);
    DecodeTuning changed = base;
    changed.*f.member = r.staged.*f.member;
    const std::size_t before = settings.size();
    auto both = [&](const Call& call, const FlashResult& ref, std::size_t threads, const Flush* flush) {
      settings.push_back({&call, base, threads, &ref, flush});
      settings.push_back({&call, changed, threads, &ref, flush});
      owner.push_back(r.compared.size());
    };
    auto distance = [&](const Checked& shape) {  // as its stage timed it
      for (std::size_t n : distance_threads(r)) both(shape.call, shape.reference, n, shape.flush);
    };
    const std::size_t any = std::numeric_limits<std::size_t>::max();
    auto ladder = [&](const Ladder& l, const std::vector<FlashResult>& refs, std::size_t DecodeTuning::*work) {
      for (std::size_t i = 0; i < l.calls.size(); ++i)
        if (threads_for_work(r.threads, any, l.work[i], r.builtin.*work) !=
            threads_for_work(r.threads, any, l.work[i], changed.*work))
          both(l.calls[i], refs[i], r.threads, nullptr);
    };
    if (f.member == &DecodeTuning::prefetch_blocks) distance(f32), distance(bf16);
    if (f.member == &DecodeTuning::bf16_near_keys) distance(bf16);
    if (f.member == &DecodeTuning::f32_near_keys) distance(f32);
    if (f.member == &DecodeTuning::decode_thread_work) ladder(dl, dref, f.member);
    if (f.member == &DecodeTuning::prefill_thread_work) ladder(pl, pref, f.member);
    // A change that runs as the built-in on every shape timed is not worth keeping.
    if (settings.size() > before) {
      HeadToHead h;
      h.setting = f.name, h.builtin = r.builtin.*f.member, h.staged = r.staged.*f.member;
      if (base.prefetch_blocks != r.builtin.prefetch_blocks)  // a near distance on a changed prefetch
        h.base_setting = "prefetch_blocks", h.base_value = base.prefetch_blocks;
      r.compared.push_back(h);
    }
  }
  if (settings.empty()) return;  // they never run differently here: the built-in stays
  const std::vector<Timed> timed = time_settings(settings, c);
  for (std::size_t i = 0; i < timed.size(); i += 2) {
    HeadToHead& h = r.compared[owner[i / 2]];
    h.builtin_ms += timed[i].ms;
    h.staged_ms += timed[i + 1].ms;
    r.builtin_ms += timed[i].ms;
    r.staged_ms += timed[i + 1].ms;
    r.all_same_bits = r.all_same_bits && timed[i].same_bits && timed[i + 1].same_bits;
  }
  if (!r.all_same_bits) return;
  judge_head_to_head(r.compared, c.margin);
  for (const HeadToHead& h : r.compared)
    for (const Field& f : kFields)
      if (h.kept && h.setting == f.name) r.chosen.*f.member = r.staged.*f.member;
}

}  // namespace

void judge_head_to_head(std::vector<HeadToHead>& compared, double margin) {
  // First the comparisons against the built-in, then those whose base is one of them.
  for (bool on_base : {false, true})
    for (HeadToHead& h : compared) {
      if (h.base_setting.empty() == on_base) continue;
      const bool base_kept =
          !on_base || std::any_of(compared.begin(), compared.end(), [&](const HeadToHead& b) {
            return b.setting == h.base_setting && b.base_setting.empty() && b.kept;
          });
      h.kept = base_kept && pick_faster({h.builtin_ms, h.staged_ms}, 0, margin) == 1;
    }
}

std::vector<std::size_t> tune_prefetch_blocks() {
  std::vector<std::size_t> blocks{decode_tuning_builtin().prefetch_blocks};
  for (std::size_t b : {0, 1, 2, 4})
    if (b != blocks.front()) blocks.push_back(b);
  return blocks;
}

std::vector<std::size_t> tune_bf16_near_keys() { return {decode_tuning_builtin().bf16_near_keys, 0, 32, 128, 256}; }

std::vector<std::size_t> tune_f32_near_keys() { return {decode_tuning_builtin().f32_near_keys, 16, 32, 64, 128, 256}; }

std::size_t crossover_work(const std::vector<CrossoverPoint>& ladder, std::size_t threads, double margin) {
  if (ladder.empty() || threads < 2) return decode_tuning_builtin().decode_thread_work;
  std::size_t from = ladder.size();
  while (from > 0 && ladder[from - 1].many_ms < ladder[from - 1].one_ms * (1 - margin)) --from;
  if (from == ladder.size()) return std::size_t(ladder.back().work / double(threads)) + 1;
  return std::max<std::size_t>(1, std::size_t(ladder[from].work / double(threads)));
}

DecodeTuneResult tune_decode(const DecodeTuneConfig& c) {
  check_decode_tune_config(c);
  reuse_freed_memory();
  DecodeTuneResult r;
  r.threads = c.threads ? c.threads : std::max(1u, std::thread::hardware_concurrency());
  r.builtin = r.staged = r.chosen = decode_tuning_builtin();
  Rng rng(c.seed);

  // Stage 1, the prefetch distance: one query row against a float32 cache of c.kv keys, on one
  // thread and on all (distance_threads), from the built-in. Stage 2, a bfloat16 cache's near
  // distance: the same query and cache in bfloat16. Stage 3, a float32 cache's near distance.
  // Both near stages run with stage 1's pick: a near distance and the prefetch ask for the same
  // rows, so what one is worth depends on the other (on a Zen 3 EPYC on 2 threads, 128 keys
  // near beat none with 1 block ahead and lost to none with 0 ahead, the pair that the stages,
  // each from the built-in, chose).
  const Flush flush{std::vector<float>(2 * c.heads * c.kv * c.head_dim, 1.0f)};
  const Checked f32 = checked(random_call(rng, c.heads, 1, c.kv, c.head_dim), r, flush);
  const Checked bf16 = checked(bf16_call(f32.call), r, flush);
  const std::vector<std::size_t> blocks = tune_prefetch_blocks(), near = tune_bf16_near_keys(),
                                 f32_near = tune_f32_near_keys();
  r.staged.prefetch_blocks =
      blocks[distance_stage(f32, blocks, &DecodeTuning::prefetch_blocks, r.builtin, r, r.prefetch, c)];
  const DecodeTuning near_base = base_for(r, &DecodeTuning::f32_near_keys);
  r.staged.bf16_near_keys =
      near[distance_stage(bf16, near, &DecodeTuning::bf16_near_keys, near_base, r, r.bf16_near, c)];
  r.staged.f32_near_keys =
      f32_near[distance_stage(f32, f32_near, &DecodeTuning::f32_near_keys, near_base, r, r.f32_near, c)];

  // Stages 4 and 5, the crossovers: each ladder point on one thread and on all.
  const Ladder dl = r.threads > 1 ? decode_ladder(rng, c) : Ladder{}, pl = r.threads > 1 ? prefill_ladder(rng, c) : Ladder{};
  std::vector<FlashResult> dref, pref;
  if (r.threads > 1) {
    DecodeTuning forced = r.staged;
    forced.decode_thread_work = forced.prefill_thread_work = 1;
    r.decode_ladder = time_ladder(dl, forced, r.threads, c, dref);
    r.prefill_ladder = time_ladder(pl, forced, r.threads, c, pref);
    for (const auto* ladder : {&r.decode_ladder, &r.prefill_ladder})
      for (const CrossoverPoint& p : *ladder) r.all_same_bits = r.all_same_bits && p.same_bits;
    r.staged.decode_thread_work = crossover_work(r.decode_ladder, r.threads, c.margin);
    r.staged.prefill_thread_work = crossover_work(r.prefill_ladder, r.threads, c.margin);
  }
  if (!r.all_same_bits) r.staged = r.builtin;  // a setting that changed the bits is never chosen
  if (r.staged != r.builtin) head_to_head(r, f32, bf16, dl, pl, dref, pref, c);
  return r;
}

}  // namespace attn
