#pragma once
// Memory the tiled flash kernel needs only during a call (packed K and V, tile workspaces), kept
// from one call for the next. Fresh memory is dear where the kernel runs under a hypervisor: the
// first touch of each 4 KiB page is a page fault, and on this project's machine a fault costs
// about 12 us (a C loop touching 64 MiB of new pages takes 190 ms). Allocated per call, a
// 2-thread forward at n = 4096, H = 8, d = 64 touched about 520 new pages a call and zero-filled
// 16 MiB that the packing then overwrote. From the stock it touches none once warm, and writes
// each element once.
#include <cstddef>
#include <mutex>
#include <utility>
#include <vector>

#include "aligned.hpp"

namespace attn::flash {

// The process's stock of free buffers of one element type, at most kKeepBytes in all.
template <class T>
class ScratchStock {
 public:
  static constexpr std::size_t kKeepBytes = std::size_t(64) << 20;

  static ScratchStock& get() {
    static ScratchStock* stock = new ScratchStock;  // never destroyed: no destructor races a late give_back
    return *stock;
  }

  // A buffer of at least n elements: the smallest in stock that fits and is at most twice n (a
  // small request does not take a large buffer that the next large request would then miss),
  // else a new one.
  Aligned<T> take(std::size_t n) {
    {
      std::lock_guard<std::mutex> lock(m_);
      std::size_t best = free_.size();
      for (std::size_t i = 0; i < free_.size(); ++i) {
        const std::size_t size = free_[i].size();
        if (size >= n && size / 2 <= n && (best == free_.size() || size < free_[best].size())) best = i;
      }
      if (best < free_.size()) {
        Aligned<T> b = std::move(free_[best]);
        free_.erase(free_.begin() + long(best));
        bytes_ -= b.size() * sizeof(T);
        return b;
      }
    }
    return Aligned<T>(n);
  }

  // Keeps b for a later take(), dropping the smallest buffers first to stay within kKeepBytes.
  // Never throws (destructors call it): if keeping b fails, b is simply freed.
  void give_back(Aligned<T> b) noexcept {
    const std::size_t size = b.size() * sizeof(T);
    if (size == 0 || size > kKeepBytes) return;  // b frees itself
    try {
      std::lock_guard<std::mutex> lock(m_);
      free_.reserve(free_.size() + 1);  // the one step below that can throw
      while (bytes_ + size > kKeepBytes) {
        std::size_t smallest = 0;
        for (std::size_t i = 1; i < free_.size(); ++i)
          if (free_[i].size() < free_[smallest].size()) smallest = i;
        bytes_ -= free_[smallest].size() * sizeof(T);
        free_.erase(free_.begin() + long(smallest));
      }
      free_.push_back(std::move(b));
      bytes_ += size;
    } catch (...) {
      // Out of memory for the list, or the lock failed: b is freed with this frame.
    }
  }

  // Frees every buffer in stock (bench does, so that a run's memory is its own).
  void release() {
    std::vector<Aligned<T>> dropped;
    std::lock_guard<std::mutex> lock(m_);
    dropped.swap(free_);
    bytes_ = 0;
  }

  std::size_t bytes() {
    std::lock_guard<std::mutex> lock(m_);
    return bytes_;
  }

 private:
  std::mutex m_;
  std::vector<Aligned<T>> free_;
  std::size_t bytes_ = 0;
};

// n elements from the stock for the life of this object, given back when it ends. The elements
// hold whatever an earlier call left there: write before reading.
template <class T>
class Scratch {
 public:
  Scratch() = default;
  explicit Scratch(std::size_t n) : buf_(n ? ScratchStock<T>::get().take(n) : Aligned<T>()), n_(n) {}
  Scratch(Scratch&& o) noexcept : buf_(std::move(o.buf_)), n_(std::exchange(o.n_, 0)) {}
  Scratch& operator=(Scratch&& o) noexcept {
    if (this != &o) {
      reset();
      buf_ = std::move(o.buf_);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  ~Scratch() { reset(); }

  // Gives the buffer back now.
  void reset() noexcept {
    if (!buf_.empty()) ScratchStock<T>::get().give_back(std::move(buf_));
    buf_ = Aligned<T>();
    n_ = 0;
  }

  T* data() { return buf_.data(); }
  const T* data() const { return buf_.data(); }
  T& operator[](std::size_t i) { return buf_[i]; }
  const T& operator[](std::size_t i) const { return buf_[i]; }
  T* begin() { return buf_.data(); }
  T* end() { return buf_.data() + n_; }
  std::size_t size() const { return n_; }

 private:
  Aligned<T> buf_;
  std::size_t n_ = 0;
};

}  // namespace attn::flash
