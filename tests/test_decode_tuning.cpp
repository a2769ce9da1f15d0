// The decode path's prefetch distance and the thread crossovers of decode and small prefill
// (DecodeTuning, flash.hpp): every setting `attn-cli tune` may choose, and every thread count,
// gives the built-in's bytes; the thread count follows the work size.
#include <doctest/doctest.h>

#include <vector>

#include "attn/engine/attention/flash.hpp"
#include "attn/engine/core/bf16.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/lessons/measure/tune_decode.hpp"
#include "engine/attention/flash/flash_decode.hpp"  // private: the split a decode run makes
#include "support.hpp"

using namespace attn;
using test::randn;

namespace {

bool same_result_bytes(const FlashResult& a, const FlashResult& b) {
  return test::same_bytes(a.output, b.output) && test::same_bytes(a.lse, b.lse);
}

// Settings tune may choose: each prefetch distance it tries, crossovers that force every
// thread to work (1) or keep one thread (huge).
std::vector<DecodeTuning> tuning_candidates() {
  std::vector<DecodeTuning> out;
  // Each with near prefetches too, a bfloat16 cache's and a float32 one's: none, 16 or 32 keys,
  // past a block (200), the most allowed (1024), and in other pairings.
  struct Distances {
    std::size_t prefetch_blocks, bf16_near_keys, f32_near_keys;
  };
  for (const Distances& a : {Distances{0, 0, 0}, Distances{1, 16, 32}, Distances{2, 200, 16},
                             Distances{4, 1024, 1024}, Distances{0, 0, 64}})
    for (std::size_t work : {std::size_t(1), std::size_t(1) << 40})
      out.push_back({a.prefetch_blocks, work, work, a.bf16_near_keys, a.f32_near_keys});
  return out;
}

struct DecodeShape {
  std::size_t H, Hkv, Lq, Lk, d, dv;
  bool causal, masked;
};

// Runs one shape under every setting and thread count; each must give the first run's bytes.
void check_same_bytes_every_setting(const DecodeShape& c, bool bf16_cache) {
  CAPTURE(c.H);
  CAPTURE(c.Hkv);
  CAPTURE(c.Lq);
  CAPTURE(c.Lk);
  CAPTURE(bf16_cache);
  Rng rng(c.Lk + c.H);
  const Tensor3 q = randn(rng, c.H, c.Lq, c.d), k = randn(rng, c.Hkv, c.Lk, c.d), v = randn(rng, c.Hkv, c.Lk, c.dv);
  const Bf16Tensor3 kb = to_bf16(k), vb = to_bf16(v);
  Mask3 mask = Mask3::from_shape({c.H, c.Lq, c.Lk});
  for (bool& b : mask) b = rng.uniform() < 0.8;
  auto run = [&](const DecodeTuning* t, std::size_t threads) {
    FlashOptions fo;
    fo.causal = c.causal;
    fo.threads = threads;
    fo.decode_tuning = t;
    return bf16_cache ? flash_decode_bf16(q, kb, vb, c.masked ? &mask : nullptr, fo)
                      : flash_attention(q, k, v, c.masked ? &mask : nullptr, fo);
  };
  const FlashResult builtin = run(nullptr, 1);
  for (const DecodeTuning& t : tuning_candidates())
    for (std::size_t threads : {1, 2, 3, 4}) {
      CAPTURE(t.prefetch_blocks);
      CAPTURE(t.decode_thread_work);
      CAPTURE(t.bf16_near_keys);
      CAPTURE(t.f32_near_keys);
      CAPTURE(threads);
      CHECK(same_result_bytes(run(&t, threads), builtin));
    }
}

}  // namespace

TEST_CASE("decode tuning: every prefetch distance, crossover and thread count gives the built-in's bytes") {
  // MQA (one KV head: the cache is cut into up to 16 chunks, merged), GQA, MHA; causal and a
  // mask; Lk not a multiple of a block or a chunk; d and dv not multiples of a register. A
  // chunk is scored in runs of keys before their P V (flash_decode.cpp): 16 KV heads make one
  // chunk of 5000 keys, three runs (here with d and dv not whole registers too); 64 query rows
  // to a KV head make runs of 256 keys, 256 rows runs of one block.
  for (const DecodeShape& c : {DecodeShape{8, 1, 1, 5000, 64, 64, false, false},
                               DecodeShape{8, 2, 2, 4500, 64, 64, true, false},
                               DecodeShape{4, 4, 1, 2100, 40, 24, false, true},
                               DecodeShape{2, 1, 7, 9000, 67, 19, true, true},
                               DecodeShape{16, 16, 1, 5000, 67, 19, false, true},
                               DecodeShape{8, 1, 8, 3000, 32, 32, true, true},
                               DecodeShape{32, 1, 8, 2000, 64, 64, true, false}}) {
    REQUIRE(flash::decode_path_applies(c.Lq, c.Lk, 0, 0));
    check_same_bytes_every_setting(c, false);
    check_same_bytes_every_setting(c, true);
  }
}

TEST_CASE("decode tuning: small prefill gives the same bytes on one thread as on many") {
  Rng rng(3);
  for (std::size_t n : {40, 200, 500}) {
    CAPTURE(n);
    const Tensor3 q = randn(rng, 4, n, 64), k = randn(rng, 2, n, 64), v = randn(rng, 2, n, 64);
    FlashOptions fo;
    fo.causal = n != 200;
    fo.threads = 1;
    const FlashResult one = flash_attention(q, k, v, nullptr, fo);
    for (const DecodeTuning& t : tuning_candidates())
      for (std::size_t threads : {2, 4}) {
        fo.decode_tuning = &t;
        fo.threads = threads;
        CHECK(same_result_bytes(flash_attention(q, k, v, nullptr, fo), one));
      }
  }
}

TEST_CASE("decode tuning: the chunks come from the shape alone, the threads from the work size") {
  for (std::size_t Hkv : {1, 2, 8})
    for (std::size_t Lk : {256, 1000, 4096, 16384, 100000}) {
      CAPTURE(Hkv);
      CAPTURE(Lk);
      const flash::DecodeSplit one = flash::decode_split(Hkv, Lk, 1, 1);
      for (std::size_t threads : {2, 4, 64})
        for (std::size_t work : {std::size_t(1), std::size_t(4096), std::size_t(1) << 40}) {
          const flash::DecodeSplit s = flash::decode_split(Hkv, Lk, 1, threads, work);
          CHECK(s.chunk_keys == one.chunk_keys);  // the merge points: the bits
          CHECK(s.chunks == one.chunks);
          CHECK(s.threads <= threads);
          CHECK(s.threads <= Hkv * s.chunks);
          if (work == 1) CHECK(s.threads == std::min(threads, Hkv * s.chunks));  // all it may
          if (work == std::size_t(1) << 40) CHECK(s.threads == 1);
        }
    }
  // The crossover: Hkv x Lk x rows pairs, at least `work` a thread.
  CHECK(flash::decode_split(8, 1024, 1, 2, 4096).threads == 2);   // 8192 pairs: two of 4096
  CHECK(flash::decode_split(8, 1024, 1, 2, 4097).threads == 1);
  CHECK(flash::decode_split(1, 4096, 8, 4, 8192).threads == 4);   // GQA 8:1: 8 rows a key
  CHECK(flash::decode_split(1, 4096, 8, 4, 16384).threads == 2);
}

TEST_CASE("decode tuning: threads_for_work never exceeds the request or the items, never drops below 1") {
  CHECK(threads_for_work(4, 100, 1e9, 1000) == 4);
  CHECK(threads_for_work(4, 3, 1e9, 1000) == 3);
  CHECK(threads_for_work(4, 100, 2500, 1000) == 2);
  CHECK(threads_for_work(4, 100, 10, 1000) == 1);
  CHECK(threads_for_work(4, 0, 1e9, 1) == 1);
  CHECK(threads_for_work(1, 100, 1e18, 1) == 1);
}

TEST_CASE("decode tuning: set once, later calls run it, and out-of-range values are input errors") {
  struct Restore {
    ~Restore() { set_decode_tuning(decode_tuning_builtin()); }
  } restore;
  CHECK(decode_tuning() == decode_tuning_builtin());
  set_decode_tuning({2, 4096, 1 << 18, 32, 64});
  CHECK(decode_tuning() == DecodeTuning{2, 4096, 1 << 18, 32, 64});
  CHECK_THROWS_AS(set_decode_tuning({17, 4096, 1}), InputError);
  CHECK_THROWS_AS(set_decode_tuning({1, 0, 1}), InputError);
  CHECK_THROWS_AS(set_decode_tuning({1, 1, 0}), InputError);
  CHECK_THROWS_AS(set_decode_tuning({1, 1, 1, 1025}), InputError);
  CHECK_THROWS_AS(set_decode_tuning({1, 1, 1, 64, 1025}), InputError);
  CHECK(decode_tuning() == DecodeTuning{2, 4096, 1 << 18, 32, 64});  // a refused setting changes nothing
}

TEST_CASE("decode tuning: the crossover is the smallest size from which all threads win at every larger size") {
  using P = CrossoverPoint;
  // work, one thread, all threads: all threads win from 4000 on (by more than 3 %), not at 2000.
  const std::vector<P> ladder = {P{1, 1000, 1.0, 1.5, true}, P{2, 2000, 1.0, 0.99, true}, P{3, 4000, 1.0, 0.6, true},
                                 P{4, 8000, 1.0, 0.55, true}};
  CHECK(crossover_work(ladder, 2, 0.03) == 2000);  // 4000 of work on 2 threads: 2000 each
  CHECK(crossover_work(ladder, 4, 0.03) == 1000);
  CHECK(crossover_work(ladder, 2, 0.0) == 1000);   // with no margin 2000 wins too (0.99 < 1)
  // A win below a loss does not count: all threads must win at every larger size too.
  const std::vector<P> dip = {P{1, 1000, 1.0, 0.5, true}, P{2, 2000, 1.0, 1.2, true}, P{3, 4000, 1.0, 0.5, true}};
  CHECK(crossover_work(dip, 2, 0.03) == 2000);
  // Never a win: one thread up to the largest size measured.
  const std::vector<P> never = {P{1, 1000, 1.0, 1.1, true}, P{2, 4000, 1.0, 1.0, true}};
  CHECK(crossover_work(never, 2, 0.03) == 2001);
  CHECK(threads_for_work(2, 100, 4000, crossover_work(never, 2, 0.03)) == 1);
}

TEST_CASE("decode tuning: a near distance staged on a changed prefetch is kept only with that prefetch") {
  // Illustrative times (ms); the prefetch's are a Zen 3 EPYC's on 2 threads (1 block ahead
  // 5.2, none 4.2). A near distance that beats its base stays exactly when that base's
  // prefetch does. Listed first, so the order in `compared` cannot decide it.
  auto judged = [](double prefetch_ms) {
    std::vector<HeadToHead> compared{{"f32_near_keys", 0, 128, 4.2, 3.9, "prefetch_blocks", 0},
                                     {"bf16_near_keys", 64, 32, 2.0, 2.0, "prefetch_blocks", 0},
                                     {"prefetch_blocks", 1, 0, 5.2, prefetch_ms}};
    judge_head_to_head(compared, 0.03);
    return compared;
  };
  const std::vector<HeadToHead> won = judged(4.2);  // 0 blocks ahead, 1.24x as fast: kept
  CHECK(won[2].kept);
  CHECK(won[0].kept);   // 3.9 < 4.2 * 0.97
  CHECK(!won[1].kept);  // no faster
  const std::vector<HeadToHead> lost = judged(5.1);  // within the margin: the built-in stays
  CHECK(!lost[2].kept);
  CHECK(!lost[0].kept);  // as fast as before against its base, but that base is gone
  CHECK(!lost[1].kept);
  // As the Zen 3 EPYC measured it: 128 keys near with 0 blocks ahead, 4.69 against 4.21.
  std::vector<HeadToHead> slower{{"prefetch_blocks", 1, 0, 5.21, 4.21},
                                 {"f32_near_keys", 0, 128, 4.21, 4.69, "prefetch_blocks", 0}};
  judge_head_to_head(slower, 0.03);
  CHECK(slower[0].kept);
  CHECK(!slower[1].kept);
  // A base that was never compared is not kept.
  std::vector<HeadToHead> orphan{{"f32_near_keys", 0, 128, 4.2, 3.9, "prefetch_blocks", 0}};
  judge_head_to_head(orphan, 0.03);
  CHECK(!orphan[0].kept);
  // With the built-in as its base, a near distance stands alone.
  std::vector<HeadToHead> alone{{"f32_near_keys", 0, 128, 4.2, 3.9}};
  judge_head_to_head(alone, 0.03);
  CHECK(alone[0].kept);
  alone[0].staged_ms = 4.1;  // 0.976 of the base: inside the 3 % margin
  judge_head_to_head(alone, 0.03);
  CHECK(!alone[0].kept);
}
