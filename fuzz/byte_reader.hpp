#pragma once
// Turns a fuzzer's bytes into small parameters, in order; past the end every read is 0.
// (clang's FuzzedDataProvider does the same, but the replay build may be g++.)
#include <cstddef>
#include <cstdint>
#include <limits>

namespace attn::fuzz {

class ByteReader {
 public:
  ByteReader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  std::uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
  bool flag() { return byte() & 1; }
  bool empty() const { return at_ >= size_; }

  // 0..max (max < 256).
  std::size_t small(std::size_t max) { return byte() % (max + 1); }

  // A size that is usually small, sometimes at the edges of size_t where arithmetic wraps.
  std::size_t extent() {
    constexpr std::size_t top = std::numeric_limits<std::size_t>::max();
    switch (const std::uint8_t b = byte(); b % 8) {
      case 5: return std::size_t(1) << (b / 8 % 64);
      case 6: return top - small(3);
      case 7: return (top >> 1) + small(3) - 1;  // around 2^63
      default: return b / 8;  // 0..31 (and 0 once the bytes run out)
    }
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

}  // namespace attn::fuzz
