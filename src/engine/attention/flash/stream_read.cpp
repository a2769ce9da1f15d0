// stream_read() (flash.hpp): the memory-bandwidth yardstick for the decode benchmark.
#include <algorithm>
#include <numeric>
#include <vector>

#include "attn/engine/attention/flash.hpp"
#include "microkernels.hpp"
#include "platform/parallel.hpp"

namespace attn {

double stream_read(const float* a, std::size_t n, const float* b, std::size_t m, std::size_t threads) {
  const flash::Microkernels<float>& mk = flash::best_microkernels<float>();
  constexpr std::size_t kPiece = std::size_t(1) << 16;  // 256 KiB of floats per work item
  const std::size_t pieces_a = (n + kPiece - 1) / kPiece, pieces = pieces_a + (m + kPiece - 1) / kPiece;
  std::vector<double> sums(pieces, 0.0);
  detail::parallel_items(pieces, detail::thread_count(threads, pieces), [&](std::size_t, std::size_t i) {
    const bool in_a = i < pieces_a;
    const std::size_t start = (in_a ? i : i - pieces_a) * kPiece, total = in_a ? n : m;
    sums[i] = mk.sum((in_a ? a : b) + start, std::min(kPiece, total - start));
  });
  return std::accumulate(sums.begin(), sums.end(), 0.0);
}

}  // namespace attn
