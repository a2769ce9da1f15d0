#pragma once
// Host entry points of the CUDA backend, on raw pointers so that neither nvcc nor the .cu
// files ever see xtensor. Implemented by flash_cuda.cu when CMake finds nvcc, and by
// cuda_absent.cpp otherwise. include/attn/engine/attention/cuda.hpp wraps them for the rest of the engine.
#include <cstddef>
#include <string>
#include <vector>

#include "attn/engine/attention/variants/index_rules.hpp"

namespace attn::cuda {

// Whether a CUDA device can run the kernel; when not, `reason` says why, for the user. When
// it can, `reason` is the device's name.
bool device_usable(std::string& reason);

struct FlashDims {
  std::size_t H, Lq, d, Hkv, Lk, dv;
};

// The score modifiers (variant.hpp's ScoreMod: the soft-cap, then ALiBi) as plain values. They
// act on x = scale * temperature * q.k, the score before the temperature that `scale` has folded
// in, as sdpa.cpp applies them (S = mod(x) / T); the per-score arithmetic is
// include/attn/engine/attention/score_mod_math.hpp's. The default is none.
struct ScoreMods {
  float softcap = 0;                    // c > 0: x -> c tanh(x / c); 0: no soft-cap
  const float* alibi_slopes = nullptr;  // [H] (host memory): x -> x - m_h (p - j); null: no ALiBi
  float temperature = 1;                // the one folded into `scale`
  bool any() const { return softcap > 0 || alibi_slopes; }
};

// What the kernel computes in. float32: CUDA cores, the CPU kernel's arithmetic. float16 and
// bfloat16: Q, K, V rounded to that type on the device and multiplied on the tensor cores
// (mma.sync m16n8k16) with float32 accumulation and a float32 softmax; the output stays float32.
enum class Dtype { float32, float16, bfloat16 };

// q [H, Lq, d], k [Hkv, Lk, d], v [Hkv, Lk, dv] (host memory, row-major); allowed
// [mask_heads, Lq, Lk] of 0/1 or null; `rules` the mask variants by index (their document ids in
// host memory) or null: a key is visible when causality, the bitmap and the rules all say so,
// and tiles the rules hide entirely are skipped. `scale` has the temperature folded in, `mods`
// the score modifiers. Writes out [H, Lq, dv] and lse [H, Lq] (host memory).
// When timed_runs > 0, the kernel is then launched that many more times on the inputs already
// on the device and each launch's time, from CUDA events, is appended to kernel_ms (copies and
// conversions excluded). Returns an empty string on success, else the CUDA error.
std::string flash_forward(const float* q, const float* k, const float* v,
                          const unsigned char* allowed, std::size_t mask_heads,
                          const variants::IndexRules* rules, const FlashDims& dims, bool causal, float scale, const ScoreMods& mods,
                          Dtype dtype, float* out, float* lse, std::size_t timed_runs,
                          std::vector<double>* kernel_ms);

// The float32 backward (FlashAttention-2's Algorithm 2): dq [H, Lq, d], dk [Hkv, Lk, d] and dv
// [Hkv, Lk, dv] (host memory; dk and dv summed over the query heads sharing a KV head) from the
// inputs and masks as flash_forward takes them, dO [H, Lq, dv], the forward's lse [H, Lq] (natural log) and delta = rowsum(dO o O)
// [H, Lq]; dS is multiplied by the score modifiers' slope. Returns an empty string on success,
// else the CUDA error.
std::string flash_backward(const float* q, const float* k, const float* v, const unsigned char* allowed,
                           std::size_t mask_heads, const variants::IndexRules* rules, const FlashDims& dims, bool causal, float scale,
                           const ScoreMods& mods, const float* dout, const float* lse, const float* delta, float* dq, float* dk,
                           float* dv);

inline constexpr std::size_t kMaxHeadDim = 256;  // float32: q/k and v head dims up to this
// float16/bfloat16: d == dv, one of these (the tensor-core kernel is compiled per head dim).
inline constexpr std::size_t kTensorCoreHeadDims[] = {64, 128};

}  // namespace attn::cuda
