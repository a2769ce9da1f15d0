// Tensors -> raw pointers for the CUDA backend (src/engine/attention/cuda/flash_cuda.hpp), so nvcc never
// compiles xtensor.
#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>
#include <utility>

#include "attn/engine/attention/cuda.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/sdpa.hpp"
#include "attention/cuda/flash_cuda.hpp"

namespace attn {
namespace {

// The largest finite float16 is 65504: a larger input would become inf and the row NaN.
void check_fits_float16(const Tensor3& t, const char* name) {
  for (float x : t) {
    if (std::fabs(x) > 65504.0f) {
      throw InputError(std::string(name) + ": value " + std::to_string(x) +
                       " is outside float16's range (|x| <= 65504); use bf16 or f32");
    }
  }
}

// What every CUDA entry point checks first: a usable device, consistent shapes, and sizes the
// kernel for `dtype` takes. Returns the dims and the resolved, finite scale.
struct CheckedCall {
  cuda::FlashDims dims;
  double scale;
};

CheckedCall check_cuda_call(const Tensor3& q, const Tensor3& k, const Tensor3& v, const Mask3* allowed,
                            const FlashOptions& options, CudaDtype dtype) {
  std::string why;
  if (!cuda::device_usable(why)) throw InputError(why);
  check_head_shapes(shape_of(q), shape_of(k), shape_of(v), allowed);
  const cuda::FlashDims dims{q.shape(0), q.shape(1), q.shape(2), k.shape(0), k.shape(1), v.shape(2)};
  if (dtype == CudaDtype::float32) {
    if (dims.d > cuda::kMaxHeadDim || dims.dv > cuda::kMaxHeadDim) {
      throw InputError("q, v: the CUDA kernel supports head dims up to " + std::to_string(cuda::kMaxHeadDim) +
                       ", got d = " + std::to_string(dims.d) + ", dv = " + std::to_string(dims.dv));
    }
  } else {
    const auto& dims_ok = cuda::kTensorCoreHeadDims;
    if (dims.d != dims.dv || std::find(std::begin(dims_ok), std::end(dims_ok), dims.d) == std::end(dims_ok)) {
      throw InputError(std::string("q, v: the CUDA ") + cuda_dtype_name(dtype) +
                       " kernel supports d = dv = 64 or 128, got d = " + std::to_string(dims.d) +
                       ", dv = " + std::to_string(dims.dv));
    }
  }
  if (dims.H > 65535) throw InputError("q: the CUDA kernel supports up to 65535 heads, got " + std::to_string(dims.H));
  if (dims.Lq > (std::size_t(1) << 30) || dims.Lk > (std::size_t(1) << 30))
    throw InputError("q, k: the CUDA kernel supports up to 2^30 positions");
  const double scale = resolved_scale(options.scale, dims.d);
  if (!std::isfinite(scale)) throw InputError("scale: must be finite, got " + std::to_string(scale));
  return {dims, scale};
}

// The score modifiers (FlashOptions::score_mod, on scale * q.k before the temperature folded into
// options.scale) as the kernels take them: float32 numbers, one ALiBi slope per query head in
// `slopes` (which must outlive the call). InputError for a cap, slope or temperature that
// float32 cannot hold (the double ones were checked by ScoreMod::check and check_sdpa_options).
cuda::ScoreMods cuda_score_mods(const FlashOptions& options, std::size_t num_heads, std::vector<float>& slopes) {
  // A modifier added to ScoreMod would be dropped here without a word: give it its arithmetic in
  // score_mod_math.hpp and its field in cuda::ScoreMods (or refuse it for CUDA) first.
  static_assert(std::tuple_size_v<decltype(std::declval<ScoreMod>().modifiers())> == 2,
                "the CUDA kernels know the soft-cap and ALiBi only");
  cuda::ScoreMods mods;
  const ScoreMod* mod = options.score_mod;
  if (!mod || !mod->any()) return mods;
  mod->check(num_heads);
  auto as_float = [](double x, const char* what) {
    const float f = float(x);
    if (!std::isfinite(f) || (x != 0 && f == 0))
      throw InputError(std::string(what) + ": " + std::to_string(x) +
                       " is outside float32's range, which the CUDA kernels compute in");
    return f;
  };
  if (mod->softcap) mods.softcap = as_float(mod->softcap->cap, "softcap");
  if (mod->alibi) {
    slopes.clear();
    for (double m : mod->alibi->slopes) slopes.push_back(as_float(m, "alibi"));
    mods.alibi_slopes = slopes.data();
  }
  mods.temperature = as_float(options.temperature, "temperature");
  return mods;
}

// The mask variants the kernels read by index (FlashOptions::mask_rule; attention.cpp hands
// them over only when every rule has a slot in IndexRules, else their bitmap); nullopt for none.
std::optional<variants::IndexRules> cuda_rules(const FlashOptions& options, const cuda::FlashDims& dims) {
  if (!options.mask_rule || !options.mask_rule->any()) return std::nullopt;
  options.mask_rule->check(dims.Lq, dims.Lk);  // the document ids copied to the GPU are Lq and Lk long
  std::optional<variants::IndexRules> rules = options.mask_rule->index_rules();
  if (!rules) throw RuntimeError("CUDA: a mask variant without a rule the kernels read by index (pass its bitmap)");
  return rules;
}

}  // namespace

CudaDtype parse_cuda_dtype(std::string_view name) {
  if (name == "f32") return CudaDtype::float32;
  if (name == "f16") return CudaDtype::float16;
  if (name == "bf16") return CudaDtype::bfloat16;
  throw InputError("dtype: expected f32, f16 or bf16, got \"" + std::string(name) + "\"");
}

const char* cuda_dtype_name(CudaDtype dtype) {
  switch (dtype) {
    case CudaDtype::float32: return "f32";
    case CudaDtype::float16: return "f16";
    case CudaDtype::bfloat16: return "bf16";
  }
  return "?";
}

bool cuda_usable(std::string* reason) {
  std::string why;
  const bool ok = cuda::device_usable(why);
  if (reason) *reason = why;
  return ok;
}

FlashResult flash_attention_cuda(const Tensor3& q, const Tensor3& k, const Tensor3& v,
                                 const Mask3* allowed, const FlashOptions& options,
                                 const CudaOptions& cuda, std::vector<double>* kernel_ms) {
  const auto [dims, scale] = check_cuda_call(q, k, v, allowed, options, cuda.dtype);
  if (cuda.dtype == CudaDtype::float16) {
    check_fits_float16(q, "q");
    check_fits_float16(k, "k");
    check_fits_float16(v, "v");
  }
  std::vector<unsigned char> mask;
  if (allowed) mask.assign(allowed->begin(), allowed->end());
  const cuda::Dtype dtype = cuda.dtype == CudaDtype::float16    ? cuda::Dtype::float16
                            : cuda.dtype == CudaDtype::bfloat16 ? cuda::Dtype::bfloat16
                                                                : cuda::Dtype::float32;
  std::vector<float> slopes;
  const cuda::ScoreMods mods = cuda_score_mods(options, dims.H, slopes);
  const std::optional<variants::IndexRules> rules = cuda_rules(options, dims);
  FlashResult r{Tensor3::from_shape({dims.H, dims.Lq, dims.dv}), Tensor2::from_shape({dims.H, dims.Lq}), {}};
  const std::string err = cuda::flash_forward(q.data(), k.data(), v.data(), allowed ? mask.data() : nullptr,
                                              allowed ? allowed->shape(0) : 0, rules ? &*rules : nullptr, dims,
                                              options.causal, float(scale), mods, dtype, r.output.data(),
                                              r.lse.data(), cuda.timed_runs, kernel_ms);
  if (!err.empty()) throw RuntimeError("CUDA: " + err);
  return r;
}

SdpaGradients flash_backward_cuda(const Tensor3& q, const Tensor3& k, const Tensor3& v, const Mask3* allowed,
                                  const Tensor3& output, const Tensor2& lse, const Tensor3& grad_output,
                                  const FlashOptions& options) {
  const auto [dims, scale] = check_cuda_call(q, k, v, allowed, options, CudaDtype::float32);
  check_grad_output_shape(shape_of(grad_output), {dims.H, dims.Lq, dims.dv});
  // D = rowsum(dO o O), the softmax Jacobian's correction per row (Algorithm 2, line 4), in float64.
  Tensor2 delta = Tensor2::from_shape({dims.H, dims.Lq});
  for (std::size_t r = 0; r < dims.H * dims.Lq; ++r) {
    double acc = 0;
    for (std::size_t c = 0; c < dims.dv; ++c)
      acc += double(grad_output.data()[r * dims.dv + c]) * double(output.data()[r * dims.dv + c]);
    delta.data()[r] = float(acc);
  }
  std::vector<unsigned char> mask;
  if (allowed) mask.assign(allowed->begin(), allowed->end());
  std::vector<float> slopes;
  const cuda::ScoreMods mods = cuda_score_mods(options, dims.H, slopes);
  const std::optional<variants::IndexRules> rules = cuda_rules(options, dims);
  SdpaGradients g{Tensor3::from_shape(q.shape()), Tensor3::from_shape(k.shape()), Tensor3::from_shape(v.shape())};
  const std::string err = cuda::flash_backward(q.data(), k.data(), v.data(), allowed ? mask.data() : nullptr,
                                               allowed ? allowed->shape(0) : 0, rules ? &*rules : nullptr, dims,
                                               options.causal, float(scale), mods, grad_output.data(), lse.data(),
                                               delta.data(), g.grad_q.data(), g.grad_k.data(), g.grad_v.data());
  if (!err.empty()) throw RuntimeError("CUDA: " + err);
  return g;
}

}  // namespace attn
