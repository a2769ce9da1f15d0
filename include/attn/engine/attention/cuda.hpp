#pragma once
// The CUDA backend (src/engine/attention/cuda/): FlashAttention forward on the GPU with the CPU kernel's
// semantics. Built only when CMake finds nvcc; every call works in any build and reports
// "no CUDA device" when it cannot run.
#include <string>
#include <string_view>
#include <vector>

#include "attn/engine/attention/backward.hpp"
#include "attn/engine/attention/flash.hpp"

namespace attn {

// True when a CUDA device can run the kernel; otherwise `reason` says why. When true,
// `reason` is the device's name.
bool cuda_usable(std::string* reason = nullptr);

// What the GPU computes in. float32: the CUDA cores, float32 throughout (the CPU kernel's
// arithmetic; head dims up to 256). float16 / bfloat16: Q, K and V rounded to that type and
// multiplied on the tensor cores with float32 accumulation and a float32 softmax; the output
// and lse stay float32 (head dims d = dv = 64 or 128). float16 refuses inputs past its range.
enum class CudaDtype { float32, float16, bfloat16 };
CudaDtype parse_cuda_dtype(std::string_view name);  // "f32" | "f16" | "bf16"
const char* cuda_dtype_name(CudaDtype dtype);

struct CudaOptions {
  CudaDtype dtype = CudaDtype::float32;
  // After the result is computed, launch the kernel this many more times on the inputs already
  // on the device and record each launch's time (CUDA events; no copies or rounding inside).
  std::size_t timed_runs = 0;
};

// Same contract as flash_attention() (block sizes and threads are ignored). Throws InputError
// "no CUDA device (...)" when no device is usable, InputError for head dims or values the
// chosen dtype's kernel cannot take, and RuntimeError for a CUDA failure. `kernel_ms`, when
// given, receives the times of cuda.timed_runs launches.
FlashResult flash_attention_cuda(const Tensor3& q, const Tensor3& k, const Tensor3& v,
                                 const Mask3* allowed, const FlashOptions& options,
                                 const CudaOptions& cuda = {}, std::vector<double>* kernel_ms = nullptr);

// The float32 backward on the GPU: dQ, dK, dV from the inputs, grad_output dO [H, Lq, dv] and
// the forward's output and lse (flash_attention_cuda's), as flash_backward() on the CPU. Same
// errors as flash_attention_cuda for float32.
SdpaGradients flash_backward_cuda(const Tensor3& q, const Tensor3& k, const Tensor3& v, const Mask3* allowed,
                                  const Tensor3& output, const Tensor2& lse, const Tensor3& grad_output,
                                  const FlashOptions& options);

}  // namespace attn
