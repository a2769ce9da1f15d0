#include "attn/engine/attention/attention.hpp"

#include "attn/engine/attention/cuda.hpp"
#include "attn/engine/core/error.hpp"
#include "backward_f64.hpp"
#include "sdpa_f64.hpp"

namespace attn {

Backend parse_backend(std::string_view name) {
  if (name == "naive") return Backend::naive;
  if (name == "flash") return Backend::flash;
  if (name == "cuda") return Backend::cuda;
  throw InputError("backend: expected \"naive\", \"flash\" or \"cuda\", got \"" + std::string(name) + "\"");
}

const char* backend_name(Backend backend) {
  switch (backend) {
    case Backend::naive: return "naive";
    case Backend::flash: return "flash";
    case Backend::cuda: return "cuda";
  }
  return "?";
}

FlashOptions tiled_options(const SdpaOptions& attention, const BackendOptions& backend,
                           std::size_t head_dim) {
  const std::string name = backend_name(backend.backend);
  if (attention.dropout_p > 0) throw InputError("dropout: not supported by backend \"" + name + "\"");
  FlashOptions fo;
  fo.score_mod = attention.score_mod.any() ? &attention.score_mod : nullptr;
  fo.temperature = attention.temperature;
  fo.causal = attention.causal;
  // softmax(scale * S / T) = softmax((scale / T) * S): the temperature folds into the scale.
  fo.scale = resolved_scale(attention.scale, head_dim) / attention.temperature;
  fo.block_q = backend.block_q;
  fo.block_k = backend.block_k;
  fo.threads = backend.threads;
  fo.precision = backend.precision;
  fo.isa = backend.isa;
  fo.qk_kernel = backend.qk_kernel;
  fo.pv_kernel = backend.pv_kernel;
  fo.observer = backend.observer;
  return fo;
}

namespace {

// The tiled kernels take a mask descriptor as the bitmap it stands for, joined with the
// explicit mask (variant.hpp); null when there is neither.
std::optional<Mask3> tiled_mask(const Mask3* allowed, const AttentionMask& m, std::size_t Lq, std::size_t Lk) {
  if (!m.any()) return allowed ? std::optional<Mask3>(*allowed) : std::nullopt;
  m.check(Lq, Lk);
  const Mask3 variant = xt::expand_dims(m.allowed(Lq, Lk), 0);  // [1, Lq, Lk]
  if (!allowed) return variant;
  return Mask3(*allowed && variant);  // broadcast over the explicit mask's heads
}

// Every variant mask is an index rule the tiled kernels evaluate themselves
// (FlashOptions::mask_rule): no [Lq, Lk] bitmap. CUDA's kernels take the rules that have a slot
// in variants::IndexRules (every built-in one), and the bitmap of a mask with any other.
bool by_index(const AttentionMask& m, Backend backend) {
  if (!m.any()) return false;
  return backend == Backend::flash || (backend == Backend::cuda && m.index_rules().has_value());
}

// What the kernel reads of the masks: the variant rule in `fo` and the explicit mask alone, or
// the bitmap of both.
std::optional<Mask3> kernel_mask(const Mask3* given, const SdpaOptions& options, Backend backend, std::size_t Lq,
                                 std::size_t Lk, FlashOptions& fo) {
  if (!by_index(options.mask_mod, backend)) return tiled_mask(given, options.mask_mod, Lq, Lk);
  options.mask_mod.check(Lq, Lk);
  fo.mask_rule = &options.mask_mod;
  return given ? std::optional<Mask3>(*given) : std::nullopt;
}

// The mask the recomputed weights read: the kernel's own bitmap, or, where the kernel read the
// variant by index, the bitmap it did without, built into `storage` (the weights are [Lq, Lk]
// anyway).
const Mask3* weights_mask(const Mask3* given, const AttentionMask& m, std::size_t Lq, std::size_t Lk,
                          const FlashOptions& fo, const Mask3* kernel, std::optional<Mask3>& storage) {
  if (!fo.mask_rule) return kernel;
  storage = tiled_mask(given, m, Lq, Lk);
  return storage ? &*storage : nullptr;
}

}  // namespace

SdpaResult attention(const Tensor3& q, const Tensor3& k, const Tensor3& v, const Mask3* given,
                     const SdpaOptions& options, const BackendOptions& backend, bool with_weights) {
  if (backend.backend == Backend::naive) return sdpa(q, k, v, given, options);
  FlashOptions fo = tiled_options(options, backend, q.shape(2));
  const std::optional<Mask3> kernel = kernel_mask(given, options, backend.backend, q.shape(1), k.shape(1), fo);
  const Mask3* allowed = kernel ? &*kernel : nullptr;
  FlashResult f = backend.backend == Backend::cuda ? flash_attention_cuda(q, k, v, allowed, fo)
                                                   : flash_attention(q, k, v, allowed, fo);
  SdpaResult r;
  if (with_weights) {  // the kernel never forms the weights: recompute them from q and k
    std::optional<Mask3> storage;
    const Mask3* mask = weights_mask(given, options.mask_mod, q.shape(1), k.shape(1), fo, allowed, storage);
    const xt::xtensor<double, 2> lse = f.lse64.size() ? f.lse64 : xt::xtensor<double, 2>(xt::cast<double>(f.lse));
    r.weights = recompute_weights(q, k, lse, mask, fo.causal, fo.scale, fo.score_mod, fo.temperature, fo.threads);
  }
  r.output = std::move(f.output);
  r.lse = std::move(f.lse);
  r.lse64 = std::move(f.lse64);
  return r;
}

SdpaGradients attention_backward(const Tensor3& q, const Tensor3& k, const Tensor3& v, const Mask3* given,
                                 const SdpaResult& forward, const Tensor3& grad_output,
                                 const SdpaOptions& options, const BackendOptions& backend) {
  detail::check_backward_options(options);
  if (backend.backend == Backend::naive) return sdpa_backward(q, k, v, forward, grad_output, options);
  FlashOptions fo = tiled_options(options, backend, q.shape(2));
  const std::optional<Mask3> kernel = kernel_mask(given, options, backend.backend, q.shape(1), k.shape(1), fo);
  const Mask3* allowed = kernel ? &*kernel : nullptr;
  if (backend.backend == Backend::cuda)
    return flash_backward_cuda(q, k, v, allowed, forward.output, forward.lse, grad_output, fo);
  return flash_backward(q, k, v, allowed, FlashResult{forward.output, forward.lse, forward.lse64}, grad_output, fo);
}

SdpaGradients attention_backward(const Tensor3& q, const Tensor3& k, const Tensor3& v,
                                 const Mask3* allowed, const Tensor3& grad_output,
                                 const SdpaOptions& options, const BackendOptions& backend) {
  check_head_shapes(shape_of(q), shape_of(k), shape_of(v), allowed);
  check_sdpa_options(options, q.shape(0));
  detail::check_backward_options(options);
  check_grad_output_shape(shape_of(grad_output), {q.shape(0), q.shape(1), v.shape(2)});
  const TensorD3 qd = xt::cast<double>(q), kd = xt::cast<double>(k), vd = xt::cast<double>(v);
  // Flash's backward needs only the output and lse; naive's uses the weights it always forms.
  const detail::SdpaF64 forward = detail::attend_f64(qd, kd, vd, allowed, options, backend, /*with_weights=*/false);
  const detail::GradsF64 g = detail::attend_backward_f64(qd, kd, vd, allowed, forward,
                                                         xt::cast<double>(grad_output), options, backend);
  return {xt::cast<float>(g.dq), xt::cast<float>(g.dk), xt::cast<float>(g.dv)};
}

namespace detail {

GradsF64 attend_backward_f64(const TensorD3& q, const TensorD3& k, const TensorD3& v,
                             const Mask3* given, const SdpaF64& forward,
                             const TensorD3& grad_output, const SdpaOptions& options,
                             const BackendOptions& backend) {
  check_backward_options(options);
  // The naive backward differentiates the forward's weights, which hold every variant.
  if (backend.backend == Backend::naive) {
    return sdpa_backward_f64(q, k, v, forward.weights, grad_output,
                             resolved_scale(options.scale, q.shape(2)) / options.temperature, &options.score_mod,
                             options.temperature);
  }
  // The tiled ones read the variant by index, as their forwards do.
  FlashOptions fo = tiled_options(options, backend, q.shape(2));
  const std::optional<Mask3> kernel = kernel_mask(given, options, backend.backend, q.shape(1), k.shape(1), fo);
  const Mask3* allowed = kernel ? &*kernel : nullptr;
  if (backend.backend == Backend::cuda) {  // float32 on the GPU, from the forward's output and lse
    const Tensor3 qf = xt::cast<float>(q), kf = xt::cast<float>(k), vf = xt::cast<float>(v);
    const SdpaGradients g = flash_backward_cuda(qf, kf, vf, allowed, xt::cast<float>(forward.output),
                                                xt::cast<float>(forward.lse), xt::cast<float>(grad_output), fo);
    return {xt::cast<double>(g.grad_q), xt::cast<double>(g.grad_k), xt::cast<double>(g.grad_v)};
  }
  return flash_backward_f64(q, k, v, allowed, forward.output, forward.lse, grad_output, fo);
}


SdpaF64 attend_f64(const TensorD3& q, const TensorD3& k, const TensorD3& v, const Mask3* given,
                   const SdpaOptions& options, const BackendOptions& backend, bool with_weights) {
  if (backend.backend == Backend::naive) {
    options.mask_mod.check(q.shape(1), k.shape(1));
    return sdpa_f64(q, k, v, given, options);
  }
  FlashOptions fo = tiled_options(options, backend, q.shape(2));
  const std::optional<Mask3> kernel = kernel_mask(given, options, backend.backend, q.shape(1), k.shape(1), fo);
  const Mask3* allowed = kernel ? &*kernel : nullptr;
  SdpaF64 r;
  if (backend.backend == Backend::flash && fo.precision == FlashPrecision::float64) {
    FlashF64 f = flash_f64(q, k, v, allowed, fo);
    r.output = std::move(f.output);
    r.lse = std::move(f.lse);
  } else {  // the float32 kernels: flash's fast one, or CUDA
    const Tensor3 qf = xt::cast<float>(q), kf = xt::cast<float>(k), vf = xt::cast<float>(v);
    const FlashResult f = backend.backend == Backend::cuda ? flash_attention_cuda(qf, kf, vf, allowed, fo)
                                                           : flash_attention(qf, kf, vf, allowed, fo);
    r.output = xt::cast<double>(f.output);
    r.lse = xt::cast<double>(f.lse);
  }
  // The kernel never forms the weights: recompute them (rows it found fully masked stay 0).
  if (with_weights) {
    std::optional<Mask3> storage;
    const Mask3* mask = weights_mask(given, options.mask_mod, q.shape(1), k.shape(1), fo, allowed, storage);
    r.weights = recompute_weights_f64(q, k, r.lse, mask, fo.causal, *fo.scale, fo.score_mod, fo.temperature);
  }
  return r;
}

}  // namespace detail
}  // namespace attn
