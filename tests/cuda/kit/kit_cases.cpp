// The GPU check kit's CPU side: writes every case of kit.hpp into a folder, each with the
// engine's float64 reference (the naive sdpa and its backward, in float64) and the error of
// plain attention in the case's dtype against it (tests/fa_rule.hpp), for the driver that runs
// the CUDA kernel on a machine without the engine's libraries (scripts/gpu_check.sh). A case's
// score modifiers and mask variant reach the reference as the engine's own descriptors
// (ScoreMod, AttentionMask), not as the kit's arithmetic and rules (kit_rules).
//
// Usage: attn_gpu_kit_cases --out DIR [--quick]   (exit 2 with "error: ..." on bad use)
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "../../fa_rule.hpp"
#include "attn/engine/attention/sdpa.hpp"
#include "engine/attention/backward_f64.hpp"
#include "engine/attention/sdpa_f64.hpp"
#include "kit.hpp"
#include "kit_engine.hpp"

using namespace attn;
namespace kit = attn::kit;

namespace {

TensorD3 to_f64(const std::vector<float>& x, std::size_t a, std::size_t b, std::size_t c) {
  TensorD3 t = TensorD3::from_shape({a, b, c});
  std::copy(x.begin(), x.end(), t.begin());
  return t;
}
Tensor3 to_f32(const std::vector<float>& x, std::size_t a, std::size_t b, std::size_t c) {
  Tensor3 t = Tensor3::from_shape({a, b, c});
  std::copy(x.begin(), x.end(), t.begin());
  return t;
}

template <class T>
double max_abs_diff(const T& got, const std::vector<double>& ref) {
  double e = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) e = std::max(e, std::fabs(double(got.data()[i]) - ref[i]));
  return e;
}

// The case's attention options for the engine: causal, the temperature, the score modifiers
// (ScoreMod) and the mask variant (AttentionMask, read by index as attend reads it).
SdpaOptions case_options(const kit::CaseSpec& c) {
  SdpaOptions so;
  so.causal = c.shape.causal;
  so.temperature = double(c.mods.temperature);
  if (c.mods.softcap > 0) so.score_mod.softcap = variants::SoftCap{double(c.mods.softcap)};
  if (c.mods.alibi) {
    const std::vector<float> m = kit::alibi_slopes(c.shape.H);
    so.score_mod.alibi = variants::AlibiBias{std::vector<double>(m.begin(), m.end())};
  }
  so.mask_mod = kit::case_mask(c.shape);
  return so;
}

kit::CaseFile reference(const kit::CaseSpec& c) {
  const kit::Shape& s = c.shape;
  const kit::Inputs in = kit::make_inputs(c);
  kit::CaseFile f;
  f.spec = c;
  f.input_hash = kit::hash_inputs(in);
  const SdpaOptions so = case_options(c);
  so.mask_mod.check(s.Lq, s.Lk);
  // The reference reads the kit's bitmap (if any) and the variant as the descriptor; the plain
  // computations read one bitmap, the kit's joined with the one the variant stands for.
  Mask3 bitmap, mask;
  if (kit::has_bitmap(s.mask)) {
    bitmap = Mask3::from_shape({in.mask_heads, s.Lq, s.Lk});
    std::copy(in.mask.begin(), in.mask.end(), bitmap.begin());
  }
  if (kit::is_rule(s.mask)) {
    const Mask3 rule = xt::expand_dims(so.mask_mod.allowed(s.Lq, s.Lk), 0);
    mask = kit::has_bitmap(s.mask) ? Mask3(bitmap && rule) : rule;
  } else {
    mask = bitmap;
  }
  const Mask3* allowed = s.mask == kit::MaskKind::none ? nullptr : &mask;
  const Mask3* ref_allowed = kit::has_bitmap(s.mask) ? &bitmap : nullptr;
  const TensorD3 qd = to_f64(in.q, s.H, s.Lq, s.d), kd = to_f64(in.k, s.Hkv, s.Lk, s.d),
                         vd = to_f64(in.v, s.Hkv, s.Lk, s.dv);
  const detail::SdpaF64 ref = detail::sdpa_f64(qd, kd, vd, ref_allowed, so);
  const Tensor3 q = to_f32(in.q, s.H, s.Lq, s.d), k = to_f32(in.k, s.Hkv, s.Lk, s.d), v = to_f32(in.v, s.Hkv, s.Lk, s.dv);
  const double alpha = 1.0 / std::sqrt(double(s.d)) / so.temperature;  // the scale with 1 / T folded in
  const float scale = float(alpha), temperature = c.mods.temperature;
  const ScoreMod* mod = so.score_mod.any() ? &so.score_mod : nullptr;
  if (c.pass == kit::Pass::forward) {
    f.refs[0].assign(ref.output.begin(), ref.output.end());
    f.refs[1].assign(ref.lse.begin(), ref.lse.end());
    const kit::Dtype dtype = c.dtype;
    const Tensor3 plain = test::plain_16bit_output(
        q, k, v, allowed, s.causal, scale, [dtype](float x) { return kit::round_to(dtype, x); }, mod, temperature);
    f.plain_err[0] = max_abs_diff(plain, f.refs[0]);
  } else {
    const TensorD3 dod = to_f64(in.dout, s.H, s.Lq, s.dv);
    const detail::GradsF64 g = detail::sdpa_backward_f64(qd, kd, vd, ref.weights, dod, alpha, mod, so.temperature);
    f.refs[0].assign(g.dq.begin(), g.dq.end());
    f.refs[1].assign(g.dk.begin(), g.dk.end());
    f.refs[2].assign(g.dv.begin(), g.dv.end());
    const test::PlainGrads p = test::plain_float32_backward(q, k, v, allowed, s.causal, scale,
                                                            to_f32(in.dout, s.H, s.Lq, s.dv), mod, temperature);
    f.plain_err[0] = max_abs_diff(p.dq, f.refs[0]);
    f.plain_err[1] = max_abs_diff(p.dk, f.refs[1]);
    f.plain_err[2] = max_abs_diff(p.dv, f.refs[2]);
  }
  return f;
}

int usage_error(const std::string& what) {
  std::fprintf(stderr, "error: %s\nusage: attn_gpu_kit_cases --out DIR [--quick]\n", what.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) out = argv[++i];
    else if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    else return usage_error(std::string("unknown argument \"") + argv[i] + "\"");
  }
  if (out.empty()) return usage_error("--out DIR is required");
  try {
    namespace fs = std::filesystem;
    fs::create_directories(out);
    for (const fs::directory_entry& e : fs::directory_iterator(out))  // a stale case would be run too
      if (e.path().extension() == ".case") fs::remove(e.path());
    const std::vector<kit::CaseSpec> cases = kit::all_cases();
    std::size_t written = 0;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      if (quick && !cases[i].quick) continue;
      kit::write_case((fs::path(out) / (kit::case_name(i, cases[i]) + ".case")).string(), reference(cases[i]));
      ++written;
    }
    std::printf("wrote %zu cases to %s\n", written, out.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  return 0;
}
