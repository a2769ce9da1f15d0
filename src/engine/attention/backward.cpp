// The naive backward of attention: the reference every faster backward is checked against,
// straight from the stored weights P with BLAS dgemm, as sdpa.cpp does the forward.
#include "attn/engine/attention/backward.hpp"

#include <cblas.h>

#include <vector>

#include "attn/engine/core/error.hpp"
#include "backward_f64.hpp"

namespace attn {

void check_grad_output_shape(const Shape& grad_output, const Shape& expected) {
  if (grad_output != expected) {
    throw InputError("grad_output: expected shape " + shape_string(expected) + ", got " +
                     shape_string(grad_output));
  }
}

namespace detail {

void check_backward_options(const SdpaOptions& options) {
  // Dropout would need the forward's random mask: refused rather than silently differentiated
  // as something else.
  if (options.dropout_p > 0) throw InputError("grad_output: the backward pass does not support dropout");
  // attend's variants are differentiated by every backward: masks are masks, a score modifier's
  // slope (the soft-cap's 1 - tanh^2; ALiBi's 1) multiplies dS, on the CPU and in CUDA's float32
  // backward alike.
}

GradsF64 sdpa_backward_f64(const TensorD3& q, const TensorD3& k, const TensorD3& v,
                           const TensorD3& weights, const TensorD3& grad_output, double alpha,
                           const ScoreMod* mod, double temperature) {
  // q [H, Lq, d], k [Hkv, Lk, d], v [Hkv, Lk, dv], weights P [H, Lq, Lk], dO [H, Lq, dv]
  const int H = int(q.shape(0)), Lq = int(q.shape(1)), d = int(q.shape(2));
  const int Hkv = int(k.shape(0)), Lk = int(k.shape(1)), dv = int(v.shape(2));
  const int group = H / Hkv;  // query heads per key/value head (GQA)
  GradsF64 g{TensorD3::from_shape(q.shape()), xt::zeros<double>(k.shape()), xt::zeros<double>(v.shape())};
  std::vector<double> ds(std::size_t(Lq) * Lk);  // dP, then dS in place
  const bool modded = mod && mod->any();
  std::vector<double> raw(modded ? std::size_t(Lq) * Lk : 0);  // scale q.k, where the modifier was taken

  for (int h = 0; h < H; ++h) {
    const double* qh = q.data() + std::size_t(h) * Lq * d;
    const double* kh = k.data() + std::size_t(h / group) * Lk * d;
    const double* vh = v.data() + std::size_t(h / group) * Lk * dv;
    const double* p = weights.data() + std::size_t(h) * Lq * Lk;
    const double* dO = grad_output.data() + std::size_t(h) * Lq * dv;
    double* dk = g.dk.data() + std::size_t(h / group) * Lk * d;
    double* dV = g.dv.data() + std::size_t(h / group) * Lk * dv;

    // dV += P^T dO   [Lk, dv]   (+=: the query heads of a GQA group share this V)
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Lk, dv, Lq, 1.0, p, Lk, dO, dv, 1.0, dV, dv);
    // dP = dO V^T   [Lq, Lk]
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Lq, Lk, dv, 1.0, dO, dv, vh, dv, 0.0, ds.data(), Lk);
    // dS = P o (dP - rowsum(dP o P)): the softmax Jacobian diag(p) - p p^T applied to each row.
    // A fully masked row has p = 0, so its dS is 0 and it contributes nothing below.
    for (int i = 0; i < Lq; ++i) {
      double* row = ds.data() + std::size_t(i) * Lk;
      const double* pr = p + std::size_t(i) * Lk;
      double dot = 0;
      for (int j = 0; j < Lk; ++j) dot += row[j] * pr[j];
      for (int j = 0; j < Lk; ++j) row[j] = pr[j] * (row[j] - dot);
    }
    // Through the score modifier, at x = scale q.k: the soft-cap's d(c tanh(x / c)) / dx =
    // 1 - tanh^2(x / c); a bias's slope is 1.
    if (modded) {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Lq, Lk, d, alpha * temperature, qh, d, kh, d, 0.0,
                  raw.data(), Lk);
      for (int i = 0; i < Lq; ++i)
        for (int j = 0; j < Lk; ++j) {
          const std::size_t e = std::size_t(i) * Lk + j;
          ds[e] *= mod->derivative(raw[e], std::size_t(h), long(i) + Lk - Lq, long(j));
        }
    }
    // dQ = alpha dS K   [Lq, d]
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Lq, d, Lk, alpha, ds.data(), Lk, kh, d, 0.0,
                g.dq.data() + std::size_t(h) * Lq * d, d);
    // dK += alpha dS^T Q   [Lk, d]
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Lk, d, Lq, alpha, ds.data(), Lk, qh, d, 1.0, dk, d);
  }
  return g;
}

}  // namespace detail

SdpaGradients sdpa_backward(const Tensor3& q, const Tensor3& k, const Tensor3& v,
                            const Mask3* allowed, const Tensor3& grad_output,
                            const SdpaOptions& options) {
  check_head_shapes(shape_of(q), shape_of(k), shape_of(v), allowed);
  check_sdpa_options(options, q.shape(0));
  detail::check_backward_options(options);
  check_grad_output_shape(shape_of(grad_output), {q.shape(0), q.shape(1), v.shape(2)});
  const TensorD3 qd = xt::cast<double>(q), kd = xt::cast<double>(k), vd = xt::cast<double>(v);
  const detail::SdpaF64 f = detail::sdpa_f64(qd, kd, vd, allowed, options);
  const detail::GradsF64 g = detail::sdpa_backward_f64(
      qd, kd, vd, f.weights, xt::cast<double>(grad_output),
      resolved_scale(options.scale, q.shape(2)) / options.temperature, &options.score_mod, options.temperature);
  return {xt::cast<float>(g.dq), xt::cast<float>(g.dk), xt::cast<float>(g.dv)};
}

SdpaGradients sdpa_backward(const Tensor3& q, const Tensor3& k, const Tensor3& v,
                            const SdpaResult& forward, const Tensor3& grad_output,
                            const SdpaOptions& options) {
  check_head_shapes(shape_of(q), shape_of(k), shape_of(v), nullptr);
  check_sdpa_options(options, q.shape(0));
  detail::check_backward_options(options);
  check_grad_output_shape(shape_of(grad_output), {q.shape(0), q.shape(1), v.shape(2)});
  const Shape weights{q.shape(0), q.shape(1), k.shape(1)};
  if (shape_of(forward.weights) != weights) {
    throw InputError("weights: expected shape " + shape_string(weights) + ", got " + shape_string(forward.weights.shape()));
  }
  const detail::GradsF64 g = detail::sdpa_backward_f64(
      xt::cast<double>(q), xt::cast<double>(k), xt::cast<double>(v), xt::cast<double>(forward.weights),
      xt::cast<double>(grad_output), resolved_scale(options.scale, q.shape(2)) / options.temperature,
      &options.score_mod, options.temperature);
  return {xt::cast<float>(g.dq), xt::cast<float>(g.dk), xt::cast<float>(g.dv)};
}

}  // namespace attn
