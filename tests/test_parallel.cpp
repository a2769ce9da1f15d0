// parallel_items on the kept worker threads (engine/platform/parallel.hpp): every item once, on the
// threads asked for, exceptions carried back, nested and concurrent calls served.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "engine/platform/parallel.hpp"

using attn::detail::parallel_items;

TEST_CASE("parallel items: every item runs once, on at most the threads asked for, call after call") {
  // Many short calls in a row: a worker that misses a job (a lost wake-up, a new thread that
  // starts after its job was posted) would hang here or leave an item undone.
  for (int call = 0; call < 2000; ++call) {
    const std::size_t items = 1 + std::size_t(call % 37), threads = 1 + std::size_t(call % 4);
    std::vector<std::atomic<int>> runs(items);
    std::mutex m;
    std::set<std::size_t> workers;
    parallel_items(items, threads, [&](std::size_t w, std::size_t n) {
      runs[n].fetch_add(1);
      const std::lock_guard<std::mutex> lock(m);
      workers.insert(w);
    });
    for (const std::atomic<int>& r : runs) REQUIRE(r.load() == 1);
    REQUIRE(*workers.rbegin() < threads);
  }
}

TEST_CASE("worker pool: a worker that wakes after finish() never runs that job") {
  // Between calls the pool's threads fall asleep (they spin for 50 microseconds), so many jobs
  // below are finished by the caller before a worker is up. Each job's context lives on the
  // heap until the end of the test and is marked once finish() has returned: a worker that
  // took a job late would run it and see the mark (where parallel_items' context, on the
  // caller's stack, would already be gone).
  struct Context {
    std::atomic<bool> finished{false};
    std::atomic<int> runs{0}, late{0};
  };
  attn::detail::WorkerPool& pool = attn::detail::WorkerPool::shared();
  std::vector<std::unique_ptr<Context>> contexts;
  for (int call = 0; call < 300; ++call) {
    std::this_thread::sleep_for(std::chrono::microseconds(call % 2 ? 300 : 0));
    contexts.push_back(std::make_unique<Context>());
    Context* c = contexts.back().get();
    const attn::detail::WorkerPool::Job job{[](void* p, std::size_t) {
                                              auto* ctx = static_cast<Context*>(p);
                                              if (ctx->finished.load()) ctx->late.fetch_add(1);
                                              ctx->runs.fetch_add(1);
                                            },
                                            c};
    REQUIRE(pool.start(1, job) == 1);
    pool.finish();
    c->finished.store(true);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // time for a late worker to show itself
  int taken = 0;
  for (const auto& c : contexts) {
    CHECK(c->late.load() == 0);
    taken += c->runs.load();
  }
  CHECK(taken <= 300);  // each job at most once, by the one worker offered it
  // And parallel_items on top of it still runs every item once when the worker is asleep.
  for (int call = 0; call < 100; ++call) {
    std::this_thread::sleep_for(std::chrono::microseconds(call % 2 ? 300 : 0));
    std::vector<std::atomic<int>> runs(1 + std::size_t(call % 3));
    parallel_items(runs.size(), 2, [&](std::size_t, std::size_t n) { runs[n].fetch_add(1); });
    for (const std::atomic<int>& r : runs) REQUIRE(r.load() == 1);
  }
}

TEST_CASE("parallel items: an exception in any worker reaches the caller, and the pool still works after") {
  for (int call = 0; call < 50; ++call) {
    CHECK_THROWS_AS(parallel_items(64, 2, [&](std::size_t, std::size_t n) {
                      if (n == std::size_t(call % 64)) throw std::runtime_error("item failed");
                    }),
                    std::runtime_error);
  }
  std::atomic<int> sum{0};
  parallel_items(100, 2, [&](std::size_t, std::size_t n) { sum += int(n); });
  CHECK(sum == 4950);
}

TEST_CASE("parallel items: a call from inside a work item, and calls from two threads at once, complete") {
  std::atomic<int> inner{0};
  parallel_items(4, 2, [&](std::size_t, std::size_t) {
    parallel_items(8, 2, [&](std::size_t, std::size_t) { inner.fetch_add(1); });
  });
  CHECK(inner == 32);
  std::atomic<int> total{0};
  auto many = [&] {
    for (int i = 0; i < 200; ++i) parallel_items(16, 2, [&](std::size_t, std::size_t) { total.fetch_add(1); });
  };
  std::thread other(many);
  many();
  other.join();
  CHECK(total == 2 * 200 * 16);
}

TEST_CASE("parallel items: a child process after fork() runs its items on threads of its own") {
  std::atomic<int> before{0};
  parallel_items(8, 2, [&](std::size_t, std::size_t) { before.fetch_add(1); });  // the pool has a thread now
  REQUIRE(before == 8);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::alarm(20);  // a child waiting for the parent's threads would hang: end it instead
    std::atomic<int> n{0};
    parallel_items(64, 2, [&](std::size_t, std::size_t) { n.fetch_add(1); });
    ::_exit(n == 64 ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
