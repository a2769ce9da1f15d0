// Tensors -> raw pointers for the CUDA backend (src/cuda/flash_cuda.hpp), so nvcc never
// compiles xtensor.
#include <cmath>

#include "attn/engine/cuda.hpp"
#include "attn/engine/error.hpp"
#include "cuda/flash_cuda.hpp"

namespace attn {

bool cuda_usable(std::string* reason) {
  std::string why;
  const bool ok = cuda::device_usable(why);
  if (reason) *reason = why;
  return ok;
}

FlashResult flash_attention_cuda(const Tensor3& q, const Tensor3& k, const Tensor3& v,
                                 const Mask3* allowed, const FlashOptions& options) {
  std::string why;
  if (!cuda::device_usable(why)) throw InputError(why);
  check_head_shapes(shape_of(q), shape_of(k), shape_of(v), allowed);
  const cuda::FlashDims dims{q.shape(0), q.shape(1), q.shape(2), k.shape(0), k.shape(1), v.shape(2)};
  if (dims.d > cuda::kMaxHeadDim || dims.dv > cuda::kMaxHeadDim) {
    throw InputError("q, v: the CUDA kernel supports head dims up to " +
                     std::to_string(cuda::kMaxHeadDim) + ", got d = " + std::to_string(dims.d) +
                     ", dv = " + std::to_string(dims.dv));
  }
  if (dims.H > 65535) throw InputError("q: the CUDA kernel supports up to 65535 heads, got " + std::to_string(dims.H));
  std::vector<unsigned char> mask;
  if (allowed) mask.assign(allowed->begin(), allowed->end());
  const double scale = resolved_scale(options.scale, dims.d);
  FlashResult r{Tensor3::from_shape({dims.H, dims.Lq, dims.dv}), Tensor2::from_shape({dims.H, dims.Lq}), {}};
  const std::string err = cuda::flash_forward(q.data(), k.data(), v.data(), allowed ? mask.data() : nullptr,
                                              allowed ? allowed->shape(0) : 0, dims, options.causal,
                                              float(scale), r.output.data(), r.lse.data());
  if (!err.empty()) throw RuntimeError("CUDA: " + err);
  return r;
}

}  // namespace attn
