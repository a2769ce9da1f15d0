#pragma once
// Host entry points of the CUDA backend, on raw pointers so that neither nvcc nor the .cu
// files ever see xtensor. Implemented by flash_cuda.cu when CMake finds nvcc, and by
// cuda_absent.cpp otherwise. include/attn/cuda.hpp wraps them for the rest of the engine.
#include <cstddef>
#include <string>

namespace attn::cuda {

// Whether a CUDA device can run the kernel; when not, `reason` says why, for the user.
bool device_usable(std::string& reason);

struct FlashDims {
  std::size_t H, Lq, d, Hkv, Lk, dv;
};

// q [H, Lq, d], k [Hkv, Lk, d], v [Hkv, Lk, dv] (host memory, row-major); allowed
// [mask_heads, Lq, Lk] of 0/1 or null. Writes out [H, Lq, dv] and lse [H, Lq] (host memory).
// Returns an empty string on success, else the CUDA error.
std::string flash_forward(const float* q, const float* k, const float* v,
                          const unsigned char* allowed, std::size_t mask_heads,
                          const FlashDims& dims, bool causal, float scale, float* out,
                          float* lse);

inline constexpr std::size_t kMaxHeadDim = 256;  // q/k and v head dims the kernel supports

}  // namespace attn::cuda
