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

TEST_CASE("packed head: V goes into panels where a P V pass reads part of a row and a tile has several blocks of rows") {
  using attn::flash::tiled::packed_v_panel;
  // One AVX2 pass's slice of V (microkernels_impl.hpp's pv_columns): 16 floats of each key, as
  // many keys as fill kPvSliceBytes.
  const std::size_t slice = std::max(attn::flash::kPvSliceKeys, attn::flash::kPvSliceBytes / 64);
  // The most lines of that slice (`columns` floats of each key from column c0, keys `stride`
  // floats apart) in one set of a 64-set L1 with 64-byte lines.
  auto crowding = [&](std::size_t stride, std::size_t columns, std::size_t c0) {
    std::vector<std::size_t> per_set(64, 0);
    for (std::size_t k = 0; k < slice; ++k)
      for (std::size_t b = (k * stride + c0) * 4 / 64; b <= ((k * stride + c0 + columns) * 4 - 1) / 64; ++b)
        ++per_set[b % 64];
    return *std::max_element(per_set.begin(), per_set.end());
  };
  for (std::size_t dvp : {32, 64, 128, 256}) {
    CAPTURE(dvp);
    // As rows of dvp (dvp / 16 lines, an even number) the slice's lines crowd into 64 / (dvp /
    // 16) sets; in a panel of 16 columns they follow one another, spread evenly over all 64.
    CHECK(crowding(dvp, 16, 0) == slice * dvp / 16 / 64);
    CHECK(packed_v_panel(dvp, 16, 192, 6) == 16);
    CHECK(crowding(16, 16, 0) == slice / 64);
    // A pass over whole rows reads the slice's lines in a row: V stays as rows.
    CHECK(packed_v_panel(dvp, dvp, 192, 6) == 0);
    // One block of P V rows reads each slice once: nothing to gain from a copy.
    CHECK(packed_v_panel(dvp, 16, 6, 6) == 0);
  }
  CHECK(packed_v_panel(128, 64, 192, 6) == 64);  // AVX-512 at d_v = 128: two passes of 64
  CHECK(packed_v_panel(40, 16, 192, 6) == 16);   // panels of 16, 16 and 8 (padded to 16)
}
