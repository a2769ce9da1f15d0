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
