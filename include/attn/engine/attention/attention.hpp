#pragma once
// One door to attention for every caller (attend, mha, demo, bench): the kernel is an option.
//
//   naive  the float64 reference (sdpa.hpp): forms the [H, Lq, Lk] weights; every option
//   flash  the tiled kernel with an online softmax (flash.hpp), float64 or float32 inside;
//          the weights, which it never forms, are recomputed from its lse when asked for
//   cuda   the same tiled kernel on a GPU (cuda.hpp), float32; "no CUDA device" without one
//
// The temperature fold (softmax(S / T) is the softmax of scores scaled by scale / T) is done
// here, once, for the tiled kernels; the default scale is resolved_scale() in sdpa.hpp.
#include <cstddef>
#include <string>
#include <string_view>

#include "attn/engine/attention/backward.hpp"
#include "attn/engine/attention/flash.hpp"
#include "attn/engine/attention/sdpa.hpp"

namespace attn {

enum class Backend { naive, flash, cuda };

// "naive" | "flash" | "cuda"; InputError naming the choices otherwise.
Backend parse_backend(std::string_view name);
const char* backend_name(Backend backend);

struct BackendOptions {
  Backend backend = Backend::naive;
  std::size_t block_q = 0, block_k = 0;  // flash tiles (0 = the engine's default)
  std::size_t threads = 0;               // flash worker threads (0 = all hardware threads)
  // Flash only. float64 by default: its only error against the reference is the final
  // rounding (attend/mha's JSON); float32 is the fast kernel that bench and demo time.
  FlashPrecision precision = FlashPrecision::float64;
  std::string isa;  // flash only: "" = the best this CPU has; "avx512", "avx2", "generic"
  // Flash float32 only: the register blockings (FlashOptions; tune's candidates).
  std::string qk_kernel, pv_kernel;
  // Flash only: called for every tile the kernel visits (FlashObserver; flash's replay).
  FlashObserver* observer = nullptr;
};

// The FlashOptions a tiled run uses for these attention options: causal, the resolved scale
// divided by the temperature, tiles, threads, precision, the score modifier. InputError for what
// the tiled kernels do not do (dropout): use the naive backend for that.
FlashOptions tiled_options(const SdpaOptions& attention, const BackendOptions& backend,
                           std::size_t head_dim);

// q [H, Lq, d], k [Hkv, Lk, d], v [Hkv, Lk, dv], allowed [1 or H, Lq, Lk] or null, as sdpa().
// With with_weights = false a tiled backend skips recomputing the weights (result.weights is
// then empty); the naive backend forms them either way. attention(q, k, v) is the reference.
SdpaResult attention(const Tensor3& q, const Tensor3& k, const Tensor3& v, const Mask3* allowed = nullptr,
                     const SdpaOptions& options = {}, const BackendOptions& backend = {},
                     bool with_weights = true);

// The backward pass through the same door (backward.hpp): the gradients of a loss with respect
// to q, k and v, given grad_output = dLoss/dO [H, Lq, dv]. The forward is run again inside in
// float64 (for flash: to get the output and lse it reads), then
//   naive  back-propagates through the stored [H, Lq, Lk] weights (the reference)
//   flash  FlashAttention-2's Algorithm 2, weights recomputed tile by tile; block_q, block_k
//          and threads as in the forward; float64 inside whatever `precision` says
//   cuda   the same algorithm in float32 on the GPU (flash_backward_cuda, cuda.hpp); without a
//          device, InputError "no CUDA device (...)"
// Every variant is differentiated (variant.hpp); dropout is refused (InputError).
SdpaGradients attention_backward(const Tensor3& q, const Tensor3& k, const Tensor3& v,
                                 const Mask3* allowed, const Tensor3& grad_output,
                                 const SdpaOptions& options, const BackendOptions& backend);

// The backward of a forward this door already ran with the same inputs and options (a training
// step keeps it): naive back-propagates through forward.weights, flash and cuda read only
// forward.output and forward.lse (lse64 when present), in the precision `backend` says -- float32
// tiles for training. Nothing is run again.
SdpaGradients attention_backward(const Tensor3& q, const Tensor3& k, const Tensor3& v,
                                 const Mask3* allowed, const SdpaResult& forward,
                                 const Tensor3& grad_output, const SdpaOptions& options,
                                 const BackendOptions& backend);

}  // namespace attn
