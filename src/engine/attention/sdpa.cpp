#include "attn/engine/attention/sdpa.hpp"

#include <cblas.h>

#include <cmath>
#include <limits>

#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/mask.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/engine/attention/softmax.hpp"
#include "sdpa_f64.hpp"

namespace attn {
namespace {

[[noreturn]] void shape_error(const std::string& field, const std::string& expected,
                              const Shape& actual) {
  throw InputError(field + ": expected shape " + expected + ", got " + shape_string(actual));
}

}  // namespace

void check_sdpa_shapes(const Shape& q, const Shape& k, const Shape& v, const Shape* mask) {
  if (q.size() != 2 && q.size() != 3) shape_error("q", "[Lq, d] or [H, Lq, d]", q);
  const bool heads = q.size() == 3;
  const std::string lead = heads ? "H, " : "";
  for (std::size_t x : q)
    if (x == 0) shape_error("q", "non-empty dimensions", q);
  const std::size_t H = heads ? q[0] : 1, d = q.back();
  if (k.size() != q.size()) shape_error("k", heads ? "[Hkv, Lk, d] like q" : "[Lk, d] like q", k);
  for (std::size_t x : k)
    if (x == 0) shape_error("k", "non-empty dimensions", k);
  const std::size_t Hkv = heads ? k[0] : 1, Lk = k[k.size() - 2];
  if (k.back() != d) shape_error("k", "[" + lead + "Lk, " + std::to_string(d) + "] (d of q)", k);
  if (H % Hkv != 0) {
    shape_error("k", "a head count dividing q's " + std::to_string(H) + " heads (GQA)", k);
  }
  if (v.size() != k.size() || v[v.size() - 2] != Lk || (heads && v[0] != Hkv) || v.back() == 0) {
    // Built by appending: g++ 12 warns -Wrestrict (a false positive) on "[" + std::string&&.
    std::string expected = "[";
    if (heads) expected += std::to_string(Hkv) + ", ";
    shape_error("v", expected + std::to_string(Lk) + ", dv] (heads and Lk of k)", v);
  }
  if (mask) {
    const std::size_t Lq = q[q.size() - 2];
    const std::string plain = "[" + std::to_string(Lq) + ", " + std::to_string(Lk) + "]";
    const std::string per_head =
        "[" + std::to_string(H) + ", " + std::to_string(Lq) + ", " + std::to_string(Lk) + "]";
    const Shape& m = *mask;
    const bool ok2 = m.size() == 2 && m[0] == Lq && m[1] == Lk;
    const bool ok3 = heads && m.size() == 3 && (m[0] == H || m[0] == 1) && m[1] == Lq && m[2] == Lk;
    if (!ok2 && !ok3) shape_error("mask", heads ? plain + " or " + per_head : plain, m);
  }
}

void check_head_shapes(const Shape& q, const Shape& k, const Shape& v, const Mask3* allowed) {
  Shape m;
  if (allowed) {
    m = shape_of(*allowed);
    if (m[0] == 1) m.erase(m.begin());  // [1, Lq, Lk] broadcasts like [Lq, Lk]
  }
  check_sdpa_shapes(q, k, v, allowed ? &m : nullptr);
}

double resolved_scale(std::optional<double> scale, std::size_t d) {
  return scale.value_or(1.0 / std::sqrt(static_cast<double>(d)));
}

void check_sdpa_options(const SdpaOptions& options, std::size_t num_heads) {
  if (!(options.temperature > 0.0) || !std::isfinite(options.temperature))
    throw InputError("temperature: expected a finite number > 0");
  if (options.scale && !std::isfinite(*options.scale))
    throw InputError("scale: expected a finite number");
  if (!(options.dropout_p >= 0.0 && options.dropout_p < 1.0))
    throw InputError("dropout: expected a probability in [0, 1)");
  if (num_heads > 0) options.score_mod.check(num_heads);
}

std::size_t count_fully_masked_rows(const Tensor2& lse) {
  std::size_t n = 0;
  for (float x : lse) n += std::isinf(x) && x < 0;
  return n;
}

Tensor2 mean_over_heads(const Tensor3& weights) {
  const std::size_t H = weights.shape(0), Lq = weights.shape(1), Lk = weights.shape(2);
  Tensor2 mean = xt::zeros<float>({Lq, Lk});
  for (std::size_t i = 0; i < Lq; ++i) {
    for (std::size_t j = 0; j < Lk; ++j) {
      double sum = 0;  // float64 sum, then one rounding, like the engine
      for (std::size_t h = 0; h < H; ++h) sum += weights(h, i, j);
      mean(i, j) = static_cast<float>(sum / static_cast<double>(H));
    }
  }
  return mean;
}

namespace detail {

SdpaF64 sdpa_f64(const TensorD3& q, const TensorD3& k, const TensorD3& v, const Mask3* allowed,
                 const SdpaOptions& options) {
  const std::size_t H = q.shape(0), Lq = q.shape(1), d = q.shape(2);
  const std::size_t Hkv = k.shape(0), Lk = k.shape(1), dv = v.shape(2);
  const std::size_t group = H / Hkv;  // query heads per key/value head (GQA)
  const double alpha = resolved_scale(options.scale, d) / options.temperature;
  const Mask2 causal = options.causal ? causal_allowed(Lq, Lk) : Mask2{};  // bottom-right (mask.hpp)
  const long query_offset = static_cast<long>(Lk) - static_cast<long>(Lq);  // query i sits at i + Lk - Lq
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();

  SdpaF64 r{TensorD3::from_shape({H, Lq, dv}), TensorD3::from_shape({H, Lq, Lk}),
            TensorD2::from_shape({H, Lq})};
  Rng dropout_rng(options.dropout_seed);
  const double keep = 1.0 - options.dropout_p;

  for (std::size_t h = 0; h < H; ++h) {
    const double* qh = q.data() + h * Lq * d;
    const double* kh = k.data() + (h / group) * Lk * d;
    const double* vh = v.data() + (h / group) * Lk * dv;
    double* s = r.weights.data() + h * Lq * Lk;
    // S = alpha * Q K^T   [Lq, Lk]
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(Lq),
                static_cast<int>(Lk), static_cast<int>(d), alpha, qh, static_cast<int>(d), kh,
                static_cast<int>(d), 0.0, s, static_cast<int>(Lk));
    const bool* m = nullptr;
    if (allowed) m = allowed->data() + (allowed->shape(0) == 1 ? 0 : h) * Lq * Lk;
    const bool modded = options.score_mod.any(), variant = options.mask_mod.any();
    for (std::size_t i = 0; i < Lq; ++i) {
      double* row = s + i * Lk;
      for (std::size_t j = 0; j < Lk; ++j) {
        if (modded) {  // on scale * q.k, then divided by the temperature as the rest of the score
          const double x = row[j] * options.temperature;
          row[j] = options.score_mod.apply(x, h, long(i) + query_offset, long(j)) / options.temperature;
        }
        if (variant && !options.mask_mod.visible(i, j, Lq, Lk)) {
          row[j] = kNegInf;
          continue;
        }
        const bool blocked = (m && !m[i * Lk + j]) || (options.causal && !causal(i, j));
        if (blocked) row[j] = kNegInf;  // exact -inf: exp gives exactly 0 (softmax.hpp)
      }
      r.lse(h, i) = softmax_row_inplace(row, Lk);
      if (options.dropout_p > 0.0) {
        for (std::size_t j = 0; j < Lk; ++j)
          row[j] = dropout_rng.uniform() < options.dropout_p ? 0.0 : row[j] / keep;
      }
    }
    // O = P V   [Lq, dv]
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(Lq),
                static_cast<int>(dv), static_cast<int>(Lk), 1.0, s, static_cast<int>(Lk), vh,
                static_cast<int>(dv), 0.0, r.output.data() + h * Lq * dv, static_cast<int>(dv));
  }
  return r;
}

void check_lse_fits_float32(const TensorD2& lse) {
  constexpr double kFloatMax = std::numeric_limits<float>::max();
  for (double x : lse) {
    if (std::isfinite(x) && std::fabs(x) > kFloatMax) {
      throw InputError("the scores overflow float32 (a log-sum-exp of " + std::to_string(x).substr(0, 12) +
                       "...): scale the inputs (or scale) down");
    }
  }
}

}  // namespace detail

Tensor3 attention_scores(const Tensor3& q, const Tensor3& k, std::optional<double> scale) {
  check_head_shapes(shape_of(q), shape_of(k), shape_of(k), nullptr);
  const std::size_t H = q.shape(0), Lq = q.shape(1), d = q.shape(2), Lk = k.shape(1), group = H / k.shape(0);
  const TensorD3 qd = xt::cast<double>(q), kd = xt::cast<double>(k);
  TensorD3 s = TensorD3::from_shape({H, Lq, Lk});
  for (std::size_t h = 0; h < H; ++h) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(Lq), static_cast<int>(Lk),
                static_cast<int>(d), resolved_scale(scale, d), qd.data() + h * Lq * d, static_cast<int>(d),
                kd.data() + (h / group) * Lk * d, static_cast<int>(d), 0.0, s.data() + h * Lq * Lk,
                static_cast<int>(Lk));
  }
  return xt::cast<float>(s);
}

SdpaResult sdpa(const Tensor3& q, const Tensor3& k, const Tensor3& v, const Mask3* allowed,
                const SdpaOptions& options) {
  check_head_shapes(shape_of(q), shape_of(k), shape_of(v), allowed);
  check_sdpa_options(options, q.shape(0));
  options.mask_mod.check(q.shape(1), k.shape(1));

  detail::SdpaF64 r = detail::sdpa_f64(xt::cast<double>(q), xt::cast<double>(k),
                                             xt::cast<double>(v), allowed, options);
  detail::check_lse_fits_float32(r.lse);
  return {xt::cast<float>(r.output), xt::cast<float>(r.weights), xt::cast<float>(r.lse), std::move(r.lse)};
}

}  // namespace attn
