#pragma once
// The CUDA backend (src/cuda/): FlashAttention forward on the GPU with the CPU kernel's
// semantics. Built only when CMake finds nvcc; every call works in any build and reports
// "no CUDA device" when it cannot run.
#include <string>

#include "attn/engine/flash.hpp"

namespace attn {

// True when a CUDA device can run the kernel; otherwise `reason` says why.
bool cuda_usable(std::string* reason = nullptr);

// Same contract as flash_attention() (float32; block sizes and threads are ignored).
// Throws InputError "no CUDA device (...)" when no device is usable, and InputError when
// d or dv exceed the kernel's limit of 256.
FlashResult flash_attention_cuda(const Tensor3& q, const Tensor3& k, const Tensor3& v,
                                 const Mask3* allowed, const FlashOptions& options);

}  // namespace attn
