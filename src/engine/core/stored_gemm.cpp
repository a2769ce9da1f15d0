// stored_gemm (stored_matrix.hpp): W [in, out] widened one panel of columns at a time into a
// buffer that stays in L1, and multiplied by the flash kernel's general product
// (microkernels_impl.hpp: key_panel columns x qk_rows rows of accumulators in registers).
//
// A pass over a model with weights stored as float16 used to widen each matrix into a float32
// copy (written to memory, read back by OpenBLAS, which copied it once more into its own packed
// panels). Here the widening is the packing: each weight is read once, as stored.
#include <algorithm>
#include <memory>
#include <vector>

#include "attention/flash/microkernels.hpp"
#include "attn/engine/core/stored_matrix.hpp"
#include "platform/parallel.hpp"
#include "stored_matmul.hpp"

namespace attn {
namespace {

// Rows of W per widened chunk: 128 x 64 floats (AVX-512's panel) = 32 KiB, in L1 while every
// row of x passes it. Rows of x per work item: enough that widening (once per item) is a small
// part of the multiply-adds, few enough that a chunk of x stays in L2.
constexpr std::size_t kDepth = 128, kRowBlocks = 32;
// Panels per work item: about 4 x 64 columns, so that two threads share a 768-wide matrix evenly.
constexpr std::size_t kPanelsPerItem = 4;

detail::StoredWidenKernel widen_kernel() {
  static const detail::StoredWidenKernel kernel = [] {
    const detail::StoredWidenKernel avx512 = detail::stored_widen_avx512();
    return avx512 ? avx512 : detail::stored_widen_generic();
  }();
  return kernel;
}

struct Problem {
  const float* x;
  std::size_t m;
  const StoredMatrix& w;
  const float* bias;
  float* y;
  std::size_t ldy;
  float (*activation)(float);
};

// One worker's buffers: the widened chunk [kDepth][panel], the item's outputs [rows][panel],
// and the item's last rows of x, zero-padded to a whole register block.
struct Buffers {
  std::vector<float> chunk, out, tail;
};

// Rows r0 .. r0 + rows of y, the columns of panel p. Returns false when a weight was not finite.
bool run_panel(const Problem& pb, const flash::Microkernels<float>& mk, std::size_t r0, std::size_t rows,
               std::size_t p, Buffers& buf) {
  const std::size_t K = pb.w.rows, N = pb.w.cols, PW = mk.key_panel, MR = mk.qk_rows;
  const std::size_t j0 = p * PW, width = std::min(PW, N - j0), main = rows / MR * MR;
  const std::size_t padded = (rows + MR - 1) / MR * MR;
  for (std::size_t r = 0; r < padded; ++r) {
    float* o = buf.out.data() + r * PW;
    if (pb.bias) std::copy_n(pb.bias + j0, width, o); else std::fill_n(o, width, 0.0f);
    std::fill(o + width, o + PW, 0.0f);
  }
  bool finite = true;
  const detail::StoredWidenKernel widen = widen_kernel();
  for (std::size_t k0 = 0; k0 < K; k0 += kDepth) {
    const std::size_t depth = std::min(kDepth, K - k0);
    for (std::size_t k = 0; k < depth; ++k) {
      float* row = buf.chunk.data() + k * PW;
      finite &= widen(pb.w, k0 + k, j0, width, row);
      std::fill(row + width, row + PW, 0.0f);
    }
    if (main) mk.gemm(pb.x + r0 * K + k0, K, 1, depth, main, buf.chunk.data(), 1, buf.out.data(), PW, true);
    if (main < rows)
      mk.gemm(buf.tail.data() + k0, K, 1, depth, MR, buf.chunk.data(), 1, buf.out.data() + main * PW, PW, true);
  }
  for (std::size_t r = 0; r < rows; ++r) {
    float* o = buf.out.data() + r * PW;
    if (pb.activation)
      for (std::size_t t = 0; t < width; ++t) o[t] = pb.activation(o[t]);
    std::copy_n(o, width, pb.y + (r0 + r) * pb.ldy + j0);
  }
  return finite;
}

}  // namespace

bool stored_gemm(const float* x, std::size_t m, const StoredMatrix& w, const float* bias, float* y, std::size_t ldy,
                 std::size_t threads, float (*activation)(float)) {
  if (m == 0 || w.cols == 0) return true;
  const flash::Microkernels<float>& mk = flash::best_microkernels<float>();
  const std::size_t K = w.rows, PW = mk.key_panel, MR = mk.qk_rows, group = kRowBlocks * MR;
  const std::size_t panels = (w.cols + PW - 1) / PW, panel_items = (panels + kPanelsPerItem - 1) / kPanelsPerItem;
  const std::size_t row_items = (m + group - 1) / group, items = row_items * panel_items;
  const std::size_t workers = detail::thread_count(threads, items);
  std::vector<Buffers> buffers(workers);
  std::vector<char> finite(workers, 1);
  const Problem pb{x, m, w, bias, y, ldy, activation};
  detail::parallel_items(items, workers, [&](std::size_t worker, std::size_t item) {
    Buffers& buf = buffers[worker];
    const std::size_t r0 = item / panel_items * group, rows = std::min(group, m - r0);
    const std::size_t p0 = item % panel_items * kPanelsPerItem, p1 = std::min(panels, p0 + kPanelsPerItem);
    buf.chunk.resize(kDepth * PW);
    buf.out.resize((rows + MR - 1) / MR * MR * PW);
    const std::size_t main = rows / MR * MR;
    if (main < rows) {  // the last rows of x, contiguous and zero-padded to MR rows
      buf.tail.assign(MR * K, 0.0f);
      std::copy_n(x + (r0 + main) * K, (rows - main) * K, buf.tail.data());
    }
    for (std::size_t p = p0; p < p1; ++p)
      if (!run_panel(pb, mk, r0, rows, p, buf)) finite[worker] = 0;
  });
  return std::all_of(finite.begin(), finite.end(), [](char f) { return f != 0; });
}

}  // namespace attn
