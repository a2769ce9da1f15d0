// The flash kernel's kept buffers (src/engine/attention/flash/scratch.hpp): the stock's rules, and that a
// call on buffers an earlier call left behind gives exactly what a call on fresh memory gives.
#include <doctest/doctest.h>

#include <limits>

#include "attn/engine/attention/flash.hpp"
#include "attn/engine/core/random.hpp"
#include "engine/attention/flash/scratch.hpp"
#include "support.hpp"

using namespace attn;
using test::randn;

namespace {

// Fills the stock with buffers of every power-of-two size, several of each, all NaN: whatever
// the next call takes was last written by "someone else". Returns the bytes kept.
template <class T>
std::size_t poison_scratch() {
  flash::ScratchStock<T>& stock = flash::ScratchStock<T>::get();
  stock.release();
  for (std::size_t size = 16; size <= (std::size_t(1) << 17); size *= 2)
    for (int copy = 0; copy < 6; ++copy) stock.give_back(flash::Aligned<T>(size, std::numeric_limits<T>::quiet_NaN()));
  return stock.bytes();
}

struct CountTiles : FlashObserver {
  std::size_t tiles = 0;
  void on_tile(const FlashTileStep&) override { ++tiles; }
};

}  // namespace

TEST_CASE("flash scratch: a call on kept buffers full of NaN gives the bits of a call on fresh memory") {
  // Padding everywhere: dv not a multiple of a register, rows not a multiple of the row
  // blocking, keys not a multiple of a panel; GQA, causal with Lq < Lk, a mask, 2 threads; and
  // the observed tile loop, which reads the tile's P and O for the replay.
  Rng rng(23);
  const std::size_t H = 4, Hkv = 2, Lq = 37, Lk = 150, d = 20, dv = 19;
  const Tensor3 q = randn(rng, H, Lq, d), k = randn(rng, Hkv, Lk, d), v = randn(rng, Hkv, Lk, dv);
  Mask3 mask = Mask3::from_shape({H, Lq, Lk});
  for (bool& b : mask) b = rng.uniform() < 0.8;
  for (FlashPrecision precision : {FlashPrecision::float32, FlashPrecision::float64}) {
    for (bool observe : {false, true}) {
      CAPTURE(int(precision));
      CAPTURE(observe);
      CountTiles observer;
      FlashOptions fo;
      fo.causal = true;
      fo.threads = 2;
      fo.precision = precision;
      fo.block_q = 12;
      fo.block_k = 48;
      if (observe) fo.observer = &observer;
      flash_release_scratch();
      const FlashResult fresh = flash_attention(q, k, v, &mask, fo);
      CHECK(flash_scratch_bytes() > 0);  // kept for the next call
      const std::size_t poisoned = poison_scratch<float>() + poison_scratch<double>();
      const FlashResult reused = flash_attention(q, k, v, &mask, fo);
      // Every buffer came from the poisoned stock and went back to it: a new one would add bytes.
      CHECK(flash_scratch_bytes() == poisoned);
      CHECK(fresh.output == reused.output);  // bitwise
      CHECK(fresh.lse == reused.lse);
      if (observe) CHECK(observer.tiles > 0);
    }
  }
  flash_release_scratch();
  CHECK(flash_scratch_bytes() == 0);
}

TEST_CASE("flash scratch: the stock hands out the smallest buffer that fits and keeps at most its limit") {
  using Stock = flash::ScratchStock<float>;
  Stock& stock = Stock::get();
  stock.release();
  stock.give_back(flash::Aligned<float>(100, 1.0f));
  stock.give_back(flash::Aligned<float>(1000, 2.0f));
  stock.give_back(flash::Aligned<float>(400, 3.0f));
  CHECK(stock.bytes() == 1500 * sizeof(float));
  const flash::Aligned<float> b = stock.take(300);
  CHECK(b.size() == 400);  // not the 1000
  CHECK(b[0] == 3.0f);     // kept, not cleared
  CHECK(stock.take(400).size() == 400);  // the 1000 is more than twice 400: a new one
  CHECK(stock.take(2000).size() == 2000);  // nothing fits: a new one
  CHECK(stock.bytes() == 1100 * sizeof(float));
  CHECK(stock.take(600).size() == 1000);  // at most twice 600
  CHECK(stock.bytes() == 100 * sizeof(float));
  stock.give_back(flash::Aligned<float>(1000));
  // Past the limit, the smallest go first; a buffer larger than the limit is never kept.
  const std::size_t limit = Stock::kKeepBytes / sizeof(float);
  stock.give_back(flash::Aligned<float>(limit - 1100));
  CHECK(stock.bytes() == limit * sizeof(float));  // 100 + 1000 + (limit - 1100)
  stock.give_back(flash::Aligned<float>(500));     // drops the 100, then the 1000
  CHECK(stock.bytes() == (limit - 600) * sizeof(float));
  stock.give_back(flash::Aligned<float>(limit + 1));
  CHECK(stock.bytes() == (limit - 600) * sizeof(float));
  {
    flash::Scratch<float> s(500);  // the 500 comes back when s ends
    CHECK(stock.bytes() == (limit - 1100) * sizeof(float));
    CHECK(s.size() == 500);
  }
  CHECK(stock.bytes() == (limit - 600) * sizeof(float));
  stock.release();
  CHECK(stock.bytes() == 0);
}
