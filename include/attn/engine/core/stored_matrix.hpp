#pragma once
// A weight matrix read where it is stored (a memory-mapped safetensors file), in its stored
// element type, and the product a decode step needs from it.
//
// Generating a token reads every weight once for one new row of activations: the step is bound
// by memory, not arithmetic. Widening a bfloat16 matrix to float32 first writes and reads it
// again at twice its size; stored_matmul widens each weight in a register as it is loaded, so the
// step reads 2 bytes per bfloat16 weight and nothing else of that size.
#include <cstddef>
#include <cstdint>

#include "attn/engine/core/activation.hpp"

namespace attn {

enum class StoredType { f32, bf16, f16 };

// Row-major [rows, cols] at `data`, little-endian values of `type`, no alignment assumed.
struct StoredMatrix {
  const void* data = nullptr;
  StoredType type = StoredType::f32;
  std::size_t rows = 0, cols = 0;

  std::size_t element_bytes() const { return type == StoredType::f32 ? 4 : 2; }
  std::size_t bytes() const { return rows * cols * element_bytes(); }
};

// y [m, W.rows] (row stride ldy) = x [m, W.cols] . W^T, plus bias [W.rows] when it is not null:
// torch.nn.Linear on weights as they are stored. Each weight is widened to float32 exactly (a
// bfloat16 is the high half of a float32; a float16 converts exactly), products and sums are
// float32. Rows of W are split across `threads` (0 = all); each output sums its terms in the same
// order whatever the thread count, so the bits do not depend on it. Best for few rows of x (a
// decode step): W is read once per call, x once per few rows of W (the kernel's blocking).
void stored_matmul(const float* x, std::size_t m, const StoredMatrix& w, const float* bias, float* y,
                   std::size_t ldy, std::size_t threads);

// How a stored matrix multiplies a row of activations: as it is stored, [in, out] (Hugging
// Face's Conv1D: y = x W), or transposed, [out, in] (torch.nn.Linear: y = x W^T).
enum class StoredLayout { in_out, out_in };

// y [m, out] (row stride ldy) = activation(x [m, in] . W + bias), W laid out as `layout` says;
// bias [out] and activation when not null. Best for many rows of x (a whole prompt), where
// stored_matmul suits a few: W is widened to float32 a panel of output columns at a time into a
// buffer that stays in the core's cache (transposed in registers for out_in), so it is read
// once from memory and never written back, and multiplied by the flash kernel's
// register-blocked product. Columns are split across `threads` (0 = all); each output starts
// from its bias and adds its terms in the order of k by fused multiply-adds, so its bits
// depend neither on the thread count nor (on a CPU with FMA: AVX2, AVX-512) on m. Returns false when a weight it widened was not
// finite (y is then unspecified); the caller names the tensor.
bool stored_gemm(const float* x, std::size_t m, const StoredMatrix& w, StoredLayout layout, const float* bias,
                 float* y, std::size_t ldy, std::size_t threads, Activation activation = nullptr);

// Rows of x up to which a model's product reads W row by row (stored_matmul: a decode step, the
// time it takes to read the weights once); more rows widen W a panel at a time (stored_gemm: a
// prompt, bound by arithmetic). Chosen by rows alone, so a prompt fed to a cache and the same
// prompt in a full forward pass give the same bits.
inline constexpr std::size_t kStoredMatmulRows = 8;

// The instruction set stored_matmul dispatched to on this CPU: "avx512", "avx2" or "generic".
const char* stored_matmul_isa();

// IEEE binary16 -> float, exactly (subnormals, infinities and NaN included).
float half_to_float(std::uint16_t h);
// bfloat16 -> float, exactly: the bits are a float32's high half.
inline float bf16_to_float(std::uint16_t h) {
  const std::uint32_t bits = std::uint32_t(h) << 16;
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}

}  // namespace attn
