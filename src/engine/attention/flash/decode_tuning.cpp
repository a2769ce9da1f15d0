// The decode path's prefetch distances and the thread crossovers of decode and small prefill
// (flash.hpp, DecodeTuning): the built-in, and the choice `attn-cli tune` measured, which every
// later call reads without a lock (each field is its own atomic: a call that reads one field
// from before a set_decode_tuning and another from after runs a mix of two valid choices, and
// none of them changes a number).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>

#include "attn/engine/attention/flash.hpp"
#include "attn/engine/core/error.hpp"
#include "platform/parallel.hpp"

namespace attn {
namespace {

struct DecodeTuningSlot {
  std::atomic<std::size_t> prefetch_blocks, decode_thread_work, prefill_thread_work, bf16_near_keys,
      f32_near_keys;
  static DecodeTuningSlot& get() {
    static DecodeTuningSlot slot{decode_tuning_builtin()};
    return slot;
  }
  explicit DecodeTuningSlot(const DecodeTuning& t)
      : prefetch_blocks(t.prefetch_blocks), decode_thread_work(t.decode_thread_work),
        prefill_thread_work(t.prefill_thread_work), bf16_near_keys(t.bf16_near_keys),
        f32_near_keys(t.f32_near_keys) {}
};

}  // namespace

DecodeTuning decode_tuning_builtin() { return DecodeTuning{}; }

void set_decode_tuning(const DecodeTuning& t) {
  if (t.prefetch_blocks > 16)
    throw InputError("prefetch_blocks: expected 0 to 16, got " + std::to_string(t.prefetch_blocks));
  if (t.decode_thread_work == 0) throw InputError("decode_thread_work: expected at least 1");
  if (t.prefill_thread_work == 0) throw InputError("prefill_thread_work: expected at least 1");
  if (t.bf16_near_keys > 1024)
    throw InputError("bf16_near_keys: expected 0 to 1024, got " + std::to_string(t.bf16_near_keys));
  if (t.f32_near_keys > 1024)
    throw InputError("f32_near_keys: expected 0 to 1024, got " + std::to_string(t.f32_near_keys));
  DecodeTuningSlot& slot = DecodeTuningSlot::get();
  slot.prefetch_blocks.store(t.prefetch_blocks, std::memory_order_relaxed);
  slot.decode_thread_work.store(t.decode_thread_work, std::memory_order_relaxed);
  slot.prefill_thread_work.store(t.prefill_thread_work, std::memory_order_relaxed);
  slot.bf16_near_keys.store(t.bf16_near_keys, std::memory_order_relaxed);
  slot.f32_near_keys.store(t.f32_near_keys, std::memory_order_relaxed);
}

DecodeTuning decode_tuning() {
  const DecodeTuningSlot& slot = DecodeTuningSlot::get();
  return {slot.prefetch_blocks.load(std::memory_order_relaxed), slot.decode_thread_work.load(std::memory_order_relaxed),
          slot.prefill_thread_work.load(std::memory_order_relaxed), slot.bf16_near_keys.load(std::memory_order_relaxed),
          slot.f32_near_keys.load(std::memory_order_relaxed)};
}

std::size_t threads_for_work(std::size_t requested, std::size_t items, double work, std::size_t min_work_per_thread) {
  const std::size_t threads = detail::thread_count(requested, items);
  const double useful = std::floor(work / double(std::max<std::size_t>(1, min_work_per_thread)));
  return std::clamp<std::size_t>(useful >= double(threads) ? threads : std::size_t(useful), 1, threads);
}

}  // namespace attn
