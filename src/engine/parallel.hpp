#pragma once
// Private to the engine: a list of independent work items run on a few threads, each thread
// with its own workspace (the flash forward, its decode path and the flash backward).
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace attn::detail {

// Threads to use: `requested` (0 = all hardware threads), at least 1, at most `items`.
inline std::size_t thread_count(std::size_t requested, std::size_t items) {
  const std::size_t wanted = requested ? requested : std::max(1u, std::thread::hardware_concurrency());
  return std::max<std::size_t>(1, std::min(wanted, items));
}

// Calls work(worker, item) for every item in [0, items), taken in order by `threads` workers
// (worker 0 is the caller's thread). Anything a worker throws stops the others after their
// current item and is rethrown here after the join, never std::terminate. When the system
// gives fewer threads than asked (a ulimit), the ones running share all the work.
template <class Work>
void parallel_items(std::size_t items, std::size_t threads, Work&& work) {
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto worker = [&](std::size_t w) {
    try {
      for (std::size_t n; (n = next.fetch_add(1)) < items;) work(w, n);
    } catch (...) {
      next = items;
      const std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t w = 1; w < threads; ++w) {
    try {
      pool.emplace_back(worker, w);
    } catch (const std::system_error&) {
      break;
    }
  }
  worker(0);
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace attn::detail
