#pragma once
// Private to the engine: a list of independent work items run on a few threads, each thread
// with its own workspace (the flash forward, its decode path and the flash backward).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include <unistd.h>

namespace attn::detail {

// Threads to use: `requested` (0 = all hardware threads), at least 1, at most `items`.
inline std::size_t thread_count(std::size_t requested, std::size_t items) {
  const std::size_t wanted = requested ? requested : std::max(1u, std::thread::hardware_concurrency());
  return std::max<std::size_t>(1, std::min(wanted, items));
}

// The hint for one turn of a spin-wait loop (x86's pause: the core lets its other hyperthread run
// and does not flood the memory system with the flag's loads).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Threads kept between calls. Starting and joining a thread costs 40-170 microseconds here
// (a hypervisor's clone and exit), as long as a whole decode step over a 16 MiB cache takes on
// two threads. Waking a sleeping thread costs about as much on this hypervisor, so a finished
// worker spins for kSpin before it sleeps: the calls of a generation loop or a benchmark find
// it awake, and then a call costs about a microsecond.
//
// A worker that has not taken the job by the time the caller has run out of items is not waited
// for: the caller closes the job, and a worker that wakes later skips it. So a short job never
// waits for a sleeping thread to wake; it takes what it would on the caller's thread alone.
//
// One caller at a time: a call made while the pool is in use (from inside a work item, or from
// another thread of a program that uses the library) is told so and starts its own threads, as
// does a call in a child process after fork(), where the pool's threads do not exist.
class WorkerPool {
 public:
  struct Job {
    void (*call)(void* context, std::size_t worker);
    void* context;
  };

  // Never destroyed: its threads sleep until the process ends, and no static destructor can run
  // while one of them is still spinning.
  static WorkerPool& shared() {
    static WorkerPool* pool = new WorkerPool;
    return *pool;
  }

  // Offers job to up to `helpers` pool threads as workers 1, 2, ... and returns how many were
  // offered it (fewer when the system refuses a thread), or -1 when the pool is in use. Every
  // started job must be followed by finish() from the same thread, once the caller needs no more
  // help: workers that have not taken the job by then never run it.
  long start(std::size_t helpers, Job job) {
    // A call from inside a work item on the caller's own thread: that thread holds busy_ already,
    // and try_lock on a mutex its own thread holds is undefined behaviour, so it is not asked.
    if (holding_) return -1;
    if (!busy_.try_lock()) return -1;
    if (!threads_.empty() && ::getpid() != owner_) {  // a forked child: the threads stayed behind
      busy_.unlock();
      return -1;
    }
    owner_ = ::getpid();
    holding_ = true;
    std::lock_guard<std::mutex> lock(m_);
    while (threads_.size() < helpers) {
      try {
        // The generation before this job's: the new thread may first run after the increment.
        threads_.emplace_back(&WorkerPool::loop, this, threads_.size(), generation_.load(std::memory_order_relaxed));
      } catch (...) {  // a system_error, or bad_alloc while growing the list: fewer threads
        break;
      }
    }
    active_ = std::min(helpers, threads_.size());
    closed_ = false;
    job_ = job;
    generation_.fetch_add(1, std::memory_order_release);
    wake_.notify_all();
    return long(active_);
  }

  // Closes the job to workers that have not taken it yet, then waits until every worker that
  // did has returned.
  void finish() {
    {
      std::lock_guard<std::mutex> lock(m_);
      closed_ = true;
    }
    // A thread this call started is let finish starting, even when it is no longer needed: no
    // pool thread is halfway through its start (inside the C library or a sanitizer's runtime,
    // holding their locks) once the call has returned, where a fork() could copy those locks
    // held into a child. Only the call that starts a thread waits (its start, ~0.1 ms, once).
    while (started_.load(std::memory_order_acquire) < threads_.size()) std::this_thread::yield();
    const auto until = std::chrono::steady_clock::now() + kSpin;
    while (running_.load(std::memory_order_acquire) != 0 && std::chrono::steady_clock::now() < until) cpu_relax();
    {
      std::unique_lock<std::mutex> lock(m_);
      done_.wait(lock, [&] { return running_.load(std::memory_order_acquire) == 0; });
    }
    holding_ = false;
    busy_.unlock();
  }

  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

 private:
  WorkerPool() = default;
  static constexpr std::chrono::microseconds kSpin{50};

  void loop(std::size_t index, std::uint64_t seen) {
    started_.fetch_add(1, std::memory_order_release);
    for (;;) {
      const auto until = std::chrono::steady_clock::now() + kSpin;
      while (generation_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < until) cpu_relax();
      Job job{};
      {
        std::unique_lock<std::mutex> lock(m_);
        wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        seen = generation_.load(std::memory_order_acquire);
        if (index >= active_ || closed_) continue;  // fewer threads asked for, or no longer needed
        running_.fetch_add(1, std::memory_order_relaxed);  // under m_: finish() closes under m_ too
        job = job_;
      }
      job.call(job.context, index + 1);
      if (running_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(m_);  // finish() may be between its test and its wait
        done_.notify_one();
      }
    }
  }

  std::mutex busy_;  // held from start() to finish() by the one caller
  static inline thread_local bool holding_ = false;  // this thread holds busy_
  std::mutex m_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  Job job_{};
  std::size_t active_ = 0;
  bool closed_ = false;                  // finish() has begun: no worker takes the job any more
  std::atomic<std::size_t> running_{0};  // workers that took the job and have not returned
  std::atomic<std::size_t> started_{0};  // threads that have begun running loop()
  std::atomic<std::uint64_t> generation_{0};
  pid_t owner_ = 0;  // the process whose threads these are
};

// Calls work(worker, item) for every item in [0, items), taken in order by `threads` workers
// (worker 0 is the caller's thread, the others WorkerPool's, or threads of its own when the
// pool is in use). Anything a worker throws stops the others after their current item and is
// rethrown here after the join, never std::terminate. When the system gives fewer threads than
// asked (a ulimit), the ones running share all the work.
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
  if (threads > 1) {
    using Worker = decltype(worker);
    WorkerPool& pool = WorkerPool::shared();
    const WorkerPool::Job job{[](void* w, std::size_t index) { (*static_cast<Worker*>(w))(index); }, &worker};
    if (pool.start(threads - 1, job) >= 0) {
      worker(0);
      pool.finish();
      if (failure) std::rethrow_exception(failure);
      return;
    }
  }
  std::vector<std::thread> own;
  for (std::size_t w = 1; w < threads; ++w) {
    try {
      own.emplace_back(worker, w);
    } catch (const std::system_error&) {
      break;
    }
  }
  worker(0);
  for (std::thread& t : own) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace attn::detail
