// The CUDA kernels against the naive float64 oracle on the same inputs, under FlashAttention's
// accuracy rule (fa_rule.hpp): float32 at most 2x the error of plain float32 attention; float16
// and bfloat16 at most 2x the error of plain attention in that type, both measured against
// float64 on the same (rounded) inputs. A separate test binary so that CTest can report it as
// skipped, with the reason, on machines without a CUDA device (exit code 77 =
// SKIP_RETURN_CODE), instead of silently passing.
//
// ATTN_CUDA_TEST_QUICK=1 runs the small cases only (for compute-sanitizer, which is slow).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "attn/engine/attention/attention.hpp"
#include "attn/engine/attention/backward.hpp"
#include "attn/engine/attention/cuda.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/mha.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/engine/attention/sdpa.hpp"
#include "fa_rule.hpp"
#include "kit/kit.hpp"
#include "kit/kit_engine.hpp"

using namespace attn;

namespace {

int failures = 0;

void report(bool ok, const std::string& what) {
  failures += !ok;
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
}

Tensor3 randn(Rng& rng, std::size_t a, std::size_t b, std::size_t c) {
  Tensor3 t = Tensor3::from_shape({a, b, c});
  for (float& x : t) x = float(rng.normal());
  return t;
}

float round_to(CudaDtype dtype, float x) {
  return kit::round_to(dtype == CudaDtype::float16 ? kit::Dtype::f16 : dtype == CudaDtype::bfloat16 ? kit::Dtype::bf16
                                                                                                 : kit::Dtype::f32, x);
}

// The shapes are the GPU check kit's (tests/cuda/kit/kit.hpp), so both runs cover the same cases.
using MaskKind = kit::MaskKind;
using kit::mask_name;
using Case = kit::Shape;

double max_abs_diff(const Tensor3& a, const Tensor3& b) {
  double e = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = std::fabs(double(a.data()[i]) - double(b.data()[i]));
    if (!(x <= e)) e = std::isnan(x) ? INFINITY : x;  // a NaN anywhere fails the rule
  }
  return e;
}

// A case's random q, k, v (rounded to dtype: the oracle sees exactly what the kernel multiplies)
// and its mask: 70 % of keys visible, and with empty_rows rows 0 and Lq / 2 seeing none.
struct CaseInputs {
  Tensor3 q, k, v;
  Mask3 mask;
};

CaseInputs case_inputs(const Case& c, CudaDtype dtype, Rng& rng) {
  CaseInputs in{randn(rng, c.H, c.Lq, c.d), randn(rng, c.Hkv, c.Lk, c.d), randn(rng, c.Hkv, c.Lk, c.dv),
                Mask3::from_shape({c.mask == MaskKind::shared ? 1 : c.H, c.Lq, c.Lk})};
  for (Tensor3* t : {&in.q, &in.k, &in.v})
    for (float& x : *t) x = round_to(dtype, x);
  for (bool& b : in.mask) b = rng.uniform() < 0.7;
  if (c.mask == MaskKind::empty_rows)
    for (std::size_t h = 0; h < c.H; ++h)
      for (std::size_t j = 0; j < c.Lk; ++j) in.mask(h, c.Lq / 2, j) = in.mask(h, 0, j) = false;
  return in;
}

// One kernel run against the oracle; true when within the rule.
void check_case(const Case& c, CudaDtype dtype, Rng& rng) {
  const CaseInputs in = case_inputs(c, dtype, rng);
  const Tensor3 &q = in.q, &k = in.k, &v = in.v;
  const Mask3* allowed = c.mask == MaskKind::none ? nullptr : &in.mask;
  SdpaOptions so;
  so.causal = c.causal;
  FlashOptions fo;
  fo.causal = c.causal;
  const float scale = 1.0f / std::sqrt(float(c.d));
  const SdpaResult ref = sdpa(q, k, v, allowed, so);
  CudaOptions co;
  co.dtype = dtype;
  const FlashResult got = flash_attention_cuda(q, k, v, allowed, fo, co);
  const Tensor3 plain = dtype == CudaDtype::float32
                            ? test::plain_float32_output(q, k, v, allowed, c.causal, scale)
                            : test::plain_16bit_output(q, k, v, allowed, c.causal, scale,
                                                       [dtype](float x) { return round_to(dtype, x); });
  const double err = max_abs_diff(got.output, ref.output), err_plain = max_abs_diff(plain, ref.output);
  // lse: -inf exactly where every key is masked, else close to float64's.
  const float lse_tol = dtype == CudaDtype::float32 ? 1e-4f : 1e-3f;
  bool lse_ok = true;
  for (std::size_t i = 0; i < ref.lse.size(); ++i) {
    const float a = got.lse.data()[i], b = ref.lse.data()[i];
    lse_ok = lse_ok && (std::isinf(b) ? a == b : std::fabs(a - b) <= lse_tol * std::max(1.0f, std::fabs(b)));
  }
  const bool ok = err <= 2 * err_plain + 1e-6 && lse_ok;
  char line[256];
  std::snprintf(line, sizeof line, "%-4s H=%zu Hkv=%zu Lq=%zu Lk=%zu d=%zu dv=%zu causal=%d mask=%s "
                "max|err|=%.2e (plain %s %.2e)%s", cuda_dtype_name(dtype), c.H, c.Hkv, c.Lq, c.Lk, c.d, c.dv,
                int(c.causal), mask_name(c.mask), err, cuda_dtype_name(dtype), err_plain, lse_ok ? "" : " lse off");
  report(ok, line);
}

// The float32 backward (dQ, dK, dV) against the naive float64 backward, under the same rule
// against plain float32 gradients (fa_rule.hpp), from the CUDA forward's own output and lse.
void check_backward_case(const Case& c, Rng& rng) {
  const CaseInputs in = case_inputs(c, CudaDtype::float32, rng);
  const Tensor3 &q = in.q, &k = in.k, &v = in.v;
  const Tensor3 dO = randn(rng, c.H, c.Lq, c.dv);
  const Mask3* allowed = c.mask == MaskKind::none ? nullptr : &in.mask;
  SdpaOptions so;
  so.causal = c.causal;
  FlashOptions fo;
  fo.causal = c.causal;
  const SdpaGradients ref = sdpa_backward(q, k, v, allowed, dO, so);
  const FlashResult f = flash_attention_cuda(q, k, v, allowed, fo);
  const SdpaGradients got = flash_backward_cuda(q, k, v, allowed, f.output, f.lse, dO, fo);
  const test::PlainGrads plain =
      test::plain_float32_backward(q, k, v, allowed, c.causal, 1.0f / std::sqrt(float(c.d)), dO);
  const double eq = max_abs_diff(got.grad_q, ref.grad_q), ek = max_abs_diff(got.grad_k, ref.grad_k),
               ev = max_abs_diff(got.grad_v, ref.grad_v);
  const double pq = max_abs_diff(plain.dq, ref.grad_q), pk = max_abs_diff(plain.dk, ref.grad_k),
               pv = max_abs_diff(plain.dv, ref.grad_v);
  const bool ok = eq <= 2 * pq + 1e-6 && ek <= 2 * pk + 1e-6 && ev <= 2 * pv + 1e-6;
  char line[256];
  std::snprintf(line, sizeof line, "bwd  H=%zu Hkv=%zu Lq=%zu Lk=%zu d=%zu dv=%zu causal=%d mask=%s "
                "max|err| dq %.1e dk %.1e dv %.1e (plain f32 %.1e %.1e %.1e)", c.H, c.Hkv, c.Lq, c.Lk, c.d, c.dv,
                int(c.causal), mask_name(c.mask), eq, ek, ev, pq, pk, pv);
  report(ok, line);
}

// The kit's variant cases (soft-cap, ALiBi, a temperature, over causal and a sliding window; and
// every mask variant) through the engine as attend reaches the GPU: tiled_options, the mask
// variant by index (variants::IndexRules), cuda_backend.cpp's float32 modifiers. float32 forward and backward through the
// door (attention, attention_backward), float16 / bfloat16 through flash_attention_cuda; each
// against the naive float64 oracle under FlashAttention's rule, the plain computation with the
// same modifiers (fa_rule.hpp).
void check_variant_case(const kit::VariantCase& vc, CudaDtype dtype, Rng& rng) {
  const Case& c = vc.shape;
  Tensor3 q = randn(rng, c.H, c.Lq, c.d), k = randn(rng, c.Hkv, c.Lk, c.d), v = randn(rng, c.Hkv, c.Lk, c.dv);
  for (Tensor3* t : {&q, &k, &v})
    for (float& x : *t) x = round_to(dtype, x);
  SdpaOptions so;
  so.causal = c.causal;
  so.temperature = vc.mods.temperature;
  if (vc.mods.softcap > 0) so.score_mod.softcap = variants::SoftCap{vc.mods.softcap};
  if (vc.mods.alibi) {
    const std::vector<float> m = kit::alibi_slopes(c.H);
    so.score_mod.alibi = variants::AlibiBias{std::vector<double>(m.begin(), m.end())};
  }
  so.mask_mod = kit::case_mask(c);
  const bool ruled = so.mask_mod.any();
  Mask3 bitmap;  // the plain computations read the bitmap the variant stands for
  if (ruled) bitmap = xt::expand_dims(so.mask_mod.allowed(c.Lq, c.Lk), 0);
  const Mask3* plain_mask = ruled ? &bitmap : nullptr;
  const float scale = float(1.0 / std::sqrt(double(c.d)) / so.temperature);
  const SdpaResult ref = sdpa(q, k, v, nullptr, so);
  const BackendOptions gpu{Backend::cuda};
  Tensor3 got;
  if (dtype == CudaDtype::float32) {
    got = attention(q, k, v, nullptr, so, gpu, false).output;
  } else {
    CudaOptions co;
    co.dtype = dtype;
    FlashOptions fo = tiled_options(so, gpu, c.d);
    fo.mask_rule = ruled ? &so.mask_mod : nullptr;  // by index, as attention() hands it over
    got = flash_attention_cuda(q, k, v, nullptr, fo, co).output;
  }
  const Tensor3 plain = test::plain_16bit_output(
      q, k, v, plain_mask, c.causal, scale, [dtype](float x) { return round_to(dtype, x); }, &so.score_mod,
      float(so.temperature));
  const double err = max_abs_diff(got, ref.output), err_plain = max_abs_diff(plain, ref.output);
  bool ok = err <= 2 * err_plain + 1e-6;
  char line[320];
  int n = std::snprintf(line, sizeof line, "%-4s H=%zu Hkv=%zu Lq=%zu Lk=%zu causal=%d mask=%s softcap=%g alibi=%d T=%g "
                        "max|err|=%.2e (plain %.2e)", cuda_dtype_name(dtype), c.H, c.Hkv, c.Lq, c.Lk, int(c.causal),
                        mask_name(c.mask), double(vc.mods.softcap), int(vc.mods.alibi), double(vc.mods.temperature), err,
                        err_plain);
  if (dtype == CudaDtype::float32) {  // the backward through the door, from its own float64 forward
    const Tensor3 dO = randn(rng, c.H, c.Lq, c.dv);
    const SdpaGradients r = sdpa_backward(q, k, v, nullptr, dO, so);
    const SdpaGradients g = attention_backward(q, k, v, nullptr, dO, so, gpu);
    const test::PlainGrads pg = test::plain_float32_backward(q, k, v, plain_mask, c.causal, scale, dO, &so.score_mod,
                                                             float(so.temperature));
    const double eq = max_abs_diff(g.grad_q, r.grad_q), ek = max_abs_diff(g.grad_k, r.grad_k),
                 ev = max_abs_diff(g.grad_v, r.grad_v);
    const double pq = max_abs_diff(pg.dq, r.grad_q), pk = max_abs_diff(pg.dk, r.grad_k), pv = max_abs_diff(pg.dv, r.grad_v);
    ok = ok && eq <= 2 * pq + 1e-6 && ek <= 2 * pk + 1e-6 && ev <= 2 * pv + 1e-6;
    std::snprintf(line + n, sizeof line - std::size_t(n), "; bwd dq %.1e dk %.1e dv %.1e (plain %.1e %.1e %.1e)", eq, ek,
                  ev, pq, pk, pv);
  }
  report(ok, line);
}

// The backend option as mha and attend use it: output, lse and recomputed weights.
void check_backend_option(Rng& rng) {
  const std::size_t D = 64, H = 4, Hkv = 2, L = 37;
  Tensor2 x = Tensor2::from_shape({L, D});
  for (float& e : x) e = float(rng.normal());
  MhaOptions naive;
  naive.num_heads = H;
  naive.num_kv_heads = Hkv;
  naive.attention.causal = true;
  MhaOptions gpu = naive;
  gpu.backend.backend = Backend::cuda;
  const MhaWeights w = init_mha_weights(D, H, Hkv, 7);
  const MhaResult a = mha(x, x, x, w, nullptr, naive), b = mha(x, x, x, w, nullptr, gpu);
  // ... and its backward, through mha_backward's door (float32 on the GPU vs float64 naive).
  Tensor2 dy = Tensor2::from_shape({L, D});
  for (float& e : dy) e = float(rng.normal());
  const MhaGradients ga = mha_backward(x, x, x, w, nullptr, dy, naive), gb = mha_backward(x, x, x, w, nullptr, dy, gpu);
  double grad_err = 0;
  for (std::size_t i = 0; i < ga.grad_w_q.size(); ++i)
    grad_err = std::max(grad_err, double(std::fabs(ga.grad_w_q.data()[i] - gb.grad_w_q.data()[i])));
  for (std::size_t i = 0; i < ga.grad_query.size(); ++i)
    grad_err = std::max(grad_err, double(std::fabs(ga.grad_query.data()[i] - gb.grad_query.data()[i])));
  double out_err = 0, w_err = 0;
  for (std::size_t i = 0; i < a.output.size(); ++i)
    out_err = std::max(out_err, double(std::fabs(a.output.data()[i] - b.output.data()[i])));
  for (std::size_t i = 0; i < a.weights.size(); ++i)
    w_err = std::max(w_err, double(std::fabs(a.weights.data()[i] - b.weights.data()[i])));
  char line[160];
  std::snprintf(line, sizeof line, "mha backend cuda (GQA 4:2, causal): output max|err| %.2e, weights %.2e, "
                "grad_w_q and grad_query %.2e", out_err, w_err, grad_err);
  report(out_err < 1e-5 && w_err < 1e-5 && grad_err < 1e-4 && b.weights.size() == a.weights.size(), line);
}

template <class F>
void expect_input_error(const char* what, F&& f) {
  try {
    f();
    report(false, std::string(what) + ": no error");
  } catch (const InputError& e) {
    report(true, std::string(what) + ": InputError \"" + e.what() + "\"");
  }
}

}  // namespace

int main() {
  std::string reason;
  if (!cuda_usable(&reason)) {
    std::printf("SKIPPED: %s\n", reason.c_str());
    return 77;
  }
  const bool quick = std::getenv("ATTN_CUDA_TEST_QUICK") != nullptr;
  std::printf("CUDA device: %s%s\n", reason.c_str(), quick ? " (quick cases)" : "");
  Rng rng(5);
  const std::vector<Case>&f32_cases = kit::f32_shapes(), &tc_cases = kit::tensor_core_shapes(),
                          &large = kit::large_shapes();
  for (const Case& c : f32_cases) check_case(c, CudaDtype::float32, rng);
  for (CudaDtype dtype : {CudaDtype::float16, CudaDtype::bfloat16})
    for (const Case& c : tc_cases) check_case(c, dtype, rng);
  if (!quick)
    for (CudaDtype dtype : {CudaDtype::float32, CudaDtype::float16, CudaDtype::bfloat16})
      for (const Case& c : large) check_case(c, dtype, rng);
  // The backward: the float32 cases' shapes (head dims 1-256, GQA, masks, empty rows, causal
  // both ways), and one long causal run.
  for (const Case& c : f32_cases) check_backward_case(c, rng);
  if (!quick) check_backward_case(kit::kLongBackward, rng);
  for (const kit::VariantCase& vc : kit::f32_variant_cases())
    if (!quick || vc.quick) check_variant_case(vc, CudaDtype::float32, rng);
  for (CudaDtype dtype : {CudaDtype::float16, CudaDtype::bfloat16})
    for (const kit::VariantCase& vc : kit::tensor_core_variant_cases())
      if (!quick || vc.quick) check_variant_case(vc, dtype, rng);
  // Every mask variant the kernels read by index, without modifiers.
  for (const auto* shapes : {&kit::f32_rule_shapes(), &kit::f32_rule_more_shapes()})
    for (const Case& c : *shapes) check_variant_case({c, {}, true}, CudaDtype::float32, rng);
  for (CudaDtype dtype : {CudaDtype::float16, CudaDtype::bfloat16})
    for (const auto* shapes : {&kit::tensor_core_rule_shapes(), &kit::tensor_core_rule_more_shapes()})
      for (const Case& c : *shapes) check_variant_case({c, {}, true}, dtype, rng);
  if (!quick)
    for (CudaDtype dtype : {CudaDtype::float32, CudaDtype::float16, CudaDtype::bfloat16})
      check_variant_case({kit::kLongWindow, {}, false}, dtype, rng);
  check_backend_option(rng);

  // Timed launches: one time per launch, each positive.
  {
    const Tensor3 q = randn(rng, 2, 64, 64), k = randn(rng, 2, 64, 64), v = randn(rng, 2, 64, 64);
    CudaOptions co;
    co.dtype = CudaDtype::float16;
    co.timed_runs = 3;
    std::vector<double> ms;
    flash_attention_cuda(q, k, v, nullptr, FlashOptions{}, co, &ms);
    report(ms.size() == 3 && ms[0] > 0 && ms[1] > 0 && ms[2] > 0, "timed runs: 3 launch times from CUDA events");
  }
  // What the 16-bit kernels refuse, as InputError (exit code 2 at the command line).
  expect_input_error("f16 with d = 96", [&] {
    const Tensor3 q = randn(rng, 1, 4, 96);
    CudaOptions co;
    co.dtype = CudaDtype::float16;
    flash_attention_cuda(q, q, q, nullptr, FlashOptions{}, co);
  });
  expect_input_error("a soft-cap float32 cannot hold", [&] {
    const Tensor3 q = randn(rng, 1, 4, 8);
    SdpaOptions so;
    so.score_mod.softcap = variants::SoftCap{1e-50};
    attention(q, q, q, nullptr, so, BackendOptions{Backend::cuda});
  });
  expect_input_error("f16 with a value past 65504", [&] {
    Tensor3 q = randn(rng, 1, 4, 64);
    q(0, 2, 5) = 1e5f;
    CudaOptions co;
    co.dtype = CudaDtype::float16;
    flash_attention_cuda(q, q, q, nullptr, FlashOptions{}, co);
  });
  std::printf("%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
