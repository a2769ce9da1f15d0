// stored_gemm (stored_matrix.hpp): W widened one panel of output columns at a time into a
// buffer that stays in L1 (rows of a [in, out] matrix as they are, rows of a [out, in] one
// transposed 16 x 16 in registers), and multiplied by the flash kernel's general product
// (microkernels_impl.hpp: key_panel columns x qk_rows rows of accumulators in registers).
//
// A pass over a model with weights stored as float16 used to widen each matrix into a float32
// copy (written to memory, read back by OpenBLAS, which copied it once more into its own packed
// panels). Here the widening is the packing: each weight is read once, as stored.
#include <algorithm>
#include <vector>

#include "attention/flash/microkernels.hpp"
#include "attn/engine/core/stored_matrix.hpp"
#include "platform/parallel.hpp"
#include "stored_matmul.hpp"

namespace attn {
namespace {

// Rows of W per widened chunk: 128 x 64 floats (AVX-512's panel) = 32 KiB, in L1 while every
// row of x passes it. Rows of x per work item: enough that widening (once per item) is a small
// part of the multiply-adds, few enough that a chunk of x stays in L2. Columns per work item: at
// most 256 (4 of AVX-512's 64-column panels, 10 of AVX2's 24), so that a chunk of them (128
// KiB) stays in L2 beside the item's outputs (up to 192 rows x 256 columns, 192 KiB) and x's chunk
// (96 KiB), 416 KiB of a Zen 3 core's 512 KiB, and each row of W is read 256 columns wide: on
// its own, one 128-byte piece of a float16 row every few KiB left the reads waiting on memory.
// With AVX2's then 16-column panels the limit was 4 panels, 64 columns, until a Zen 3 EPYC spent
// 13 % of GPT-2 small's pass in widening (7.5 % at 256 columns; the pass 0.53 -> 0.545 of sgemm,
// medians of 6 alternated runs of 5 rounds).
constexpr std::size_t kDepth = 128, kRowBlocks = 32, kMaxItemColumns = 256;
// Rows of W ahead of the one being widened that are asked for in advance.
constexpr std::size_t kPrefetchRows = 8;
// Rows of x up to which a [in, out] matrix is streamed row by row into outputs kept in L1
// (stored_stream: a decode step, bound by reading W once) instead of widened into panels for
// the register-blocked kernel, whose rows come in blocks of 4 or 6. Columns per work item there: at
// least 4096, so a matrix up to that wide is read by one thread from start to end. On this
// project's 2-core machine one thread reads at the memory's full rate (20 GB/s), and two
// threads each reading half of every row got 9.4 GB/s together.
constexpr std::size_t kStreamRows = 4, kStreamColumns = 4096;

detail::StoredWidenKernel widen_kernel() {
  static const detail::StoredWidenKernel kernel = [] {
    const detail::StoredWidenKernel avx512 = detail::stored_widen_avx512(), avx2 = detail::stored_widen_avx2();
    return avx512 ? avx512 : avx2 ? avx2 : detail::stored_widen_generic();
  }();
  return kernel;
}

detail::StoredStreamKernel stream_kernel() {
  static const detail::StoredStreamKernel kernel = [] {
    const detail::StoredStreamKernel avx512 = detail::stored_stream_avx512(), avx2 = detail::stored_stream_avx2();
    return avx512 ? avx512 : avx2 ? avx2 : detail::stored_stream_generic();
  }();
  return kernel;
}

// The few rows of x against a [in, out] W: column ranges of equal width, at most kStreamColumns
// (their outputs then stay in L1), one per thread, each streamed by stored_stream, then the
// activation.
bool stream_rows(const float* x, std::size_t m, const StoredMatrix& w, const float* bias, float* y, std::size_t ldy,
                 std::size_t threads, Activation activation) {
  const std::size_t N = w.cols, items = (N + kStreamColumns - 1) / kStreamColumns;
  const std::size_t workers = detail::thread_count(threads, items);
  std::vector<char> finite(workers, 1);
  const detail::StoredStreamKernel stream = stream_kernel();
  detail::parallel_items(items, workers, [&](std::size_t worker, std::size_t item) {
    const std::size_t j0 = item * N / items / 16 * 16, j1 = item + 1 == items ? N : (item + 1) * N / items / 16 * 16;
    if (!stream(x, m, w, j0, j1, bias, y, ldy)) finite[worker] = 0;
    if (activation)
      for (std::size_t i = 0; i < m; ++i) activation(y + i * ldy + j0, j1 - j0);
  });
  return std::all_of(finite.begin(), finite.end(), [](char f) { return f != 0; });
}

detail::StoredWidenTransposedKernel widen_transposed_kernel() {
  static const detail::StoredWidenTransposedKernel kernel = [] {
    const detail::StoredWidenTransposedKernel avx512 = detail::stored_widen_transposed_avx512(),
                                              avx2 = detail::stored_widen_transposed_avx2();
    return avx512 ? avx512 : avx2 ? avx2 : detail::stored_widen_transposed_generic();
  }();
  return kernel;
}

struct Problem {
  const float* x;
  const StoredMatrix& w;
  StoredLayout layout;
  std::size_t K, N;  // x [m, K] . W -> y [m, N]
  const float* bias;
  float* y;
  std::size_t ldy;
  Activation activation;
};

// One worker's buffers: the widened chunk [panels][kDepth][panel], the item's outputs
// [panels][rows][panel], and the item's last rows of x, zero-padded to a whole register block.
struct Buffers {
  std::vector<float> chunk, out, tail;
};

// One work item: rows [r0, r0 + rows) of x (`padded` rounded up to the kernel's row block) and
// panels [p0, p1) of W's columns.
struct Item {
  std::size_t r0, rows, padded, p0, p1;
};

// The prefetch hint for `bytes` bytes from p, one per cache line. Always inlined: GCC 12 may
// delete a call, not inlined, to a function whose only effect is prefetches (flash_decode.cpp).
[[gnu::always_inline]] inline void prefetch(const unsigned char* p, std::size_t bytes) {
  for (std::size_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + b);
}

// Inputs k0 .. k0 + depth of the item's output columns, widened into the chunk's panels [depth][PW]
// (zero past the last column). Returns false when a weight was not finite.
bool widen_chunk(const Problem& pb, std::size_t PW, const Item& it, std::size_t k0, std::size_t depth,
                 float* chunk) {
  const StoredMatrix& w = pb.w;
  const std::size_t N = pb.N, bytes = w.element_bytes(), first = it.p0 * PW, last = std::min(N, it.p1 * PW);
  const auto* base = static_cast<const unsigned char*>(w.data);
  bool finite = true;
  if (pb.layout == StoredLayout::out_in) {  // output column j is row j of W: 16 x 16 blocks transposed
    const detail::StoredWidenTransposedKernel widen = widen_transposed_kernel();
    for (std::size_t p = it.p0; p < it.p1; ++p) {
      const std::size_t width = std::min(PW, N - p * PW);
      if (k0 + depth < pb.K)  // the same rows' next inputs, while these are widened
        for (std::size_t t = 0; t < width; ++t)
          prefetch(base + ((p * PW + t) * pb.K + k0 + depth) * bytes, std::min(depth, pb.K - k0 - depth) * bytes);
      float* panel = chunk + (p - it.p0) * depth * PW;
      finite &= widen(w, p * PW, width, k0, depth, panel, PW);
      if (width < PW)
        for (std::size_t k = 0; k < depth; ++k) std::fill(panel + k * PW + width, panel + (k + 1) * PW, 0.0f);
    }
    return finite;
  }
  const detail::StoredWidenKernel widen = widen_kernel();
  for (std::size_t k = 0; k < depth; ++k) {  // input k is row k of W, the item's columns side by side
    if (k0 + k + kPrefetchRows < pb.K) prefetch(base + ((k0 + k + kPrefetchRows) * N + first) * bytes, (last - first) * bytes);
    for (std::size_t p = it.p0; p < it.p1; ++p) {
      const std::size_t width = std::min(PW, N - p * PW);
      float* row = chunk + ((p - it.p0) * depth + k) * PW;
      finite &= widen(w, k0 + k, p * PW, width, row);
      std::fill(row + width, row + PW, 0.0f);
    }
  }
  return finite;
}

// The item's outputs, each starting from its bias, then every chunk of W added by the kernel,
// then the activation, copied into y. Returns false when a weight was not finite.
bool run_item(const Problem& pb, const flash::Microkernels<float>& mk, const Item& it, Buffers& buf) {
  const std::size_t K = pb.K, N = pb.N, PW = mk.key_panel, MR = mk.qk_rows;
  const std::size_t main = it.rows / MR * MR, panels = it.p1 - it.p0;
  buf.chunk.resize(panels * kDepth * PW);
  buf.out.resize(panels * it.padded * PW);
  for (std::size_t p = it.p0; p < it.p1; ++p) {
    const std::size_t width = std::min(PW, N - p * PW);
    for (std::size_t r = 0; r < it.padded; ++r) {
      float* o = buf.out.data() + ((p - it.p0) * it.padded + r) * PW;
      if (pb.bias) std::copy_n(pb.bias + p * PW, width, o); else std::fill_n(o, width, 0.0f);
      std::fill(o + width, o + PW, 0.0f);
    }
  }
  bool finite = true;
  for (std::size_t k0 = 0; k0 < K; k0 += kDepth) {
    const std::size_t depth = std::min(kDepth, K - k0);
    finite &= widen_chunk(pb, PW, it, k0, depth, buf.chunk.data());
    for (std::size_t p = 0; p < panels; ++p) {
      const float* panel = buf.chunk.data() + p * depth * PW;
      float* out = buf.out.data() + p * it.padded * PW;
      if (main) mk.gemm(pb.x + it.r0 * K + k0, K, 1, depth, main, panel, 1, out, PW, true);
      if (main < it.rows) mk.gemm(buf.tail.data() + k0, K, 1, depth, MR, panel, 1, out + main * PW, PW, true);
    }
  }
  for (std::size_t p = it.p0; p < it.p1; ++p) {
    const std::size_t width = std::min(PW, N - p * PW);
    for (std::size_t r = 0; r < it.rows; ++r) {
      float* o = buf.out.data() + ((p - it.p0) * it.padded + r) * PW;
      if (pb.activation) pb.activation(o, width);
      std::copy_n(o, width, pb.y + (it.r0 + r) * pb.ldy + p * PW);
    }
  }
  return finite;
}

}  // namespace

bool stored_gemm(const float* x, std::size_t m, const StoredMatrix& w, StoredLayout layout, const float* bias,
                 float* y, std::size_t ldy, std::size_t threads, Activation activation) {
  const bool in_out = layout == StoredLayout::in_out;
  const std::size_t K = in_out ? w.rows : w.cols, N = in_out ? w.cols : w.rows;
  if (m == 0 || N == 0) return true;
  if (in_out && m <= kStreamRows) return stream_rows(x, m, w, bias, y, ldy, threads, activation);
  const flash::Microkernels<float>& mk = flash::best_microkernels<float>();
  const std::size_t PW = mk.key_panel, MR = mk.qk_rows, group = kRowBlocks * MR;
  const std::size_t panels = (N + PW - 1) / PW, row_items = (m + group - 1) / group;
  // Column items in whole rounds of the workers, each at most kMaxItemColumns wide, so that the
  // threads get equal shares (12 panels of 64 on 2 threads: 4 items of 3, not 3 of 4).
  const std::size_t workers = detail::thread_count(threads, row_items * panels);
  const std::size_t per_item = std::max<std::size_t>(1, kMaxItemColumns / PW);
  const std::size_t rounds = (panels + workers * per_item - 1) / (workers * per_item);
  const std::size_t column_items = std::min(panels, workers * rounds), items = row_items * column_items;
  std::vector<Buffers> buffers(workers);
  std::vector<char> finite(workers, 1);
  const Problem pb{x, w, layout, K, N, bias, y, ldy, activation};
  detail::parallel_items(items, workers, [&](std::size_t worker, std::size_t index) {
    Buffers& buf = buffers[worker];
    const std::size_t r0 = index / column_items * group, rows = std::min(group, m - r0), c = index % column_items;
    const Item it{r0, rows, (rows + MR - 1) / MR * MR, c * panels / column_items, (c + 1) * panels / column_items};
    const std::size_t main = rows / MR * MR;
    if (main < rows) {  // the last rows of x, contiguous and zero-padded to MR rows
      buf.tail.assign(MR * K, 0.0f);
      std::copy_n(x + (r0 + main) * K, (rows - main) * K, buf.tail.data());
    }
    if (!run_item(pb, mk, it, buf)) finite[worker] = 0;
  });
  return std::all_of(finite.begin(), finite.end(), [](char f) { return f != 0; });
}

}  // namespace attn
