// PackedHead::ensure_packed (engine/attention/flash/tile_products.hpp): the threads that reach a
// head pack it together, in pieces. Every piece once, nobody returns before the last piece is
// done, one allocation, and a failed allocation leaves the head for the next thread to try.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <new>
#include <thread>
#include <vector>

#include "engine/attention/flash/tile_products.hpp"

using attn::flash::tiled::PackedHead;

namespace {

// A piece that takes a little while, so that threads arriving together share the pieces.
void busy_for(std::chrono::microseconds t) {
  const auto until = std::chrono::steady_clock::now() + t;
  while (std::chrono::steady_clock::now() < until) {
  }
}

}  // namespace

TEST_CASE("packed head: more threads than cores pack every piece once, and none returns before the last") {
  const std::size_t kThreads = std::max(3u, std::thread::hardware_concurrency() + 1);
  for (int round = 0; round < 20; ++round) {
    constexpr std::size_t kPieces = 64;
    PackedHead<float> head;
    std::atomic<int> allocations{0};
    std::vector<std::atomic<int>> packed(kPieces);
    std::vector<int> seen_done(kThreads, -1);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        head.ensure_packed(kPieces, [&] { allocations.fetch_add(1); },
                           [&](std::size_t i) {
                             busy_for(std::chrono::microseconds(5));
                             packed[i].fetch_add(1);
                           });
        int done = 0;  // what this thread can rely on once ensure_packed has returned
        for (const auto& p : packed) done += p.load();
        seen_done[t] = done;
      });
    for (std::thread& t : threads) t.join();
    CAPTURE(round);
    CHECK(allocations.load() == 1);
    for (const auto& p : packed) CHECK(p.load() == 1);
    for (int done : seen_done) CHECK(done == int(kPieces));
    CHECK(head.state.load() == 3);
  }
}

TEST_CASE("packed head: an allocation that throws leaves the head to the next caller, and no pieces is no work") {
  PackedHead<float> head;
  int allocations = 0, pieces = 0;
  auto allocate = [&] {
    if (++allocations == 1) throw std::bad_alloc();
  };
  auto piece = [&](std::size_t) { ++pieces; };
  CHECK_THROWS_AS(head.ensure_packed(3, allocate, piece), std::bad_alloc);
  CHECK(head.state.load() == 0);
  CHECK(pieces == 0);
  head.ensure_packed(3, allocate, piece);
  CHECK(allocations == 2);
  CHECK(pieces == 3);
  head.ensure_packed(3, allocate, piece);  // packed: nothing more
  CHECK(allocations == 2);
  CHECK(pieces == 3);

  PackedHead<float> empty;
  empty.ensure_packed(0, [&] { ++allocations; }, piece);
  CHECK(allocations == 3);
  CHECK(empty.state.load() == 3);
}

TEST_CASE("packed head: V's stride spreads one P V pass's slice over every L1 set, and is V's own where a pass reads whole rows or a tile has one block of rows") {
  using attn::flash::kPvSliceKeys;
  using attn::flash::tiled::packed_v_stride;
  // The most lines of one pass's slice (kPvSliceKeys rows, `columns` floats of each from column
  // c0) in one set of a 64-set L1 with 64-byte lines.
  auto crowding = [](std::size_t stride, std::size_t columns, std::size_t c0) {
    std::vector<int> per_set(64, 0);
    for (std::size_t k = 0; k < kPvSliceKeys; ++k)
      for (std::size_t b = (k * stride + c0) * 4 / 64; b <= ((k * stride + c0 + columns) * 4 - 1) / 64; ++b)
        ++per_set[b % 64];
    return *std::max_element(per_set.begin(), per_set.end());
  };
  for (std::size_t dvp : {32, 64, 128, 256}) {
    CAPTURE(dvp);
    // AVX2's 16 columns a pass: at V's own stride (an even number of lines) the slice's 128
    // lines crowd into a few sets (4 lines each at d_v = 32, 8 at 64: every way of an 8-way L1,
    // 16 at 128); the packed stride puts 2 in each set.
    CHECK(crowding(dvp, 16, 0) == dvp / 8);
    const std::size_t stride = packed_v_stride<float>(dvp, 16, 192, 6);
    CHECK(stride > dvp);
    CHECK(stride % 16 == 0);        // rows start on a line: a pass never splits a line
    CHECK((stride / 16) % 2 == 1);  // an odd number of lines
    for (std::size_t c0 = 0; c0 < dvp; c0 += 16) CHECK(crowding(stride, 16, c0) <= 2);
    // A pass over whole rows reads the slice's lines in a row: V stays as it is.
    CHECK(packed_v_stride<float>(dvp, dvp, 192, 6) == dvp);
    // One block of P V rows reads each slice once: nothing to spread, V stays as it is.
    CHECK(packed_v_stride<float>(dvp, 16, 6, 6) == dvp);
  }
  CHECK(packed_v_stride<float>(48, 16, 192, 6) == 48);  // 3 lines: already odd
  CHECK(packed_v_stride<float>(40, 8, 192, 6) == 40);   // not whole lines: no line-sized aliasing
  CHECK(packed_v_stride<double>(64, 16, 192, 6) == 72);  // 8 lines of doubles -> 9
}
