// The GPU check kit's driver: runs the CUDA kernel (src/engine/attention/cuda/flash_cuda.cu, through its
// raw-pointer entry points in flash_cuda.hpp) on the kit's cases and holds each result to
// FlashAttention's rule against the float64 reference written on the CPU (kit_cases.cpp); and
// times the kernel for scripts/bench_cuda.py. Needs only the C++ standard library and the
// kernel, so a bare GPU machine builds it with one nvcc command (scripts/gpu_check.sh). Linked
// with kit_cpu_standin.cpp instead of the kernel, it runs on any CPU: that is how the default
// test suite checks the kit without a GPU.
//
//   kit_driver info                       the device, or why none (exit 77)
//   kit_driver check DIR [--quick] [--json FILE]
//   kit_driver bench [--dtypes f16,bf16,f32] [--n 1024,4096] [--shapes 64x16,128x8]
//                    [--causal no,yes] [--repeat 20] [--json FILE]
//
// Exit codes: 0 all passed, 1 a case failed, 2 bad use or a bad case file, 77 no device.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "flash_cuda.hpp"
#include "kit.hpp"

namespace kit = attn::kit;
namespace cuda = attn::cuda;

namespace {

// A finite number for the JSON, or null (an error that is NaN or inf failed anyway).
std::string json_number(double x) {
  if (!std::isfinite(x)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

cuda::Dtype kernel_dtype(kit::Dtype t) {
  return t == kit::Dtype::f16 ? cuda::Dtype::float16 : t == kit::Dtype::bf16 ? cuda::Dtype::bfloat16 : cuda::Dtype::float32;
}

// max |got - ref|; a NaN anywhere makes it inf, so it fails every bound.
double max_abs_err(const std::vector<float>& got, const std::vector<double>& ref) {
  double e = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double x = std::fabs(double(got[i]) - ref[i]);
    if (!(x <= e)) e = std::isnan(x) ? INFINITY : x;
  }
  return e;
}

struct Outcome {
  bool ok = false;
  std::string detail;           // for the log line
  std::vector<double> errs;     // the kernel's max |err| per compared output
  std::vector<double> bounds;   // FlashAttention's bound for each: 2 x plain + 1e-6
};

// A case's scale and score modifiers as the engine hands them to the kernel (cuda_backend.cpp):
// the scale 1 / sqrt(d) with 1 / T folded in, the soft-cap, one ALiBi slope per head in `slopes`
// (which must outlive the call), the temperature.
struct KernelArgs {
  float scale;
  std::vector<float> slopes;
  cuda::ScoreMods mods;
};
KernelArgs kernel_args(const kit::CaseSpec& c) {
  const kit::Mods& m = c.mods;
  KernelArgs a{float(1.0 / std::sqrt(double(c.shape.d)) / double(m.temperature)), {}, {}};
  a.mods.softcap = m.softcap;
  a.mods.temperature = m.temperature;
  if (m.alibi) a.slopes = kit::alibi_slopes(c.shape.H);
  return a;
}

// FlashAttention's rule (tests/test_flash_attn.py): at most 2x the error of the plain
// computation, both against float64; 1e-6 absorbs cases where plain attention is exact.
double fa_bound(double plain_err) { return 2 * plain_err + 1e-6; }

Outcome run_forward(const kit::CaseFile& f, const kit::Inputs& in) {
  const kit::Shape& s = f.spec.shape;
  const cuda::FlashDims dims{s.H, s.Lq, s.d, s.Hkv, s.Lk, s.dv};
  std::vector<float> out(s.H * s.Lq * s.dv, NAN), lse(s.H * s.Lq, NAN);
  Outcome o;
  KernelArgs args = kernel_args(f.spec);
  args.mods.alibi_slopes = args.slopes.empty() ? nullptr : args.slopes.data();
  const attn::variants::IndexRules rules = kit::kit_rules(s, in);
  const std::string err = cuda::flash_forward(in.q.data(), in.k.data(), in.v.data(), in.mask.empty() ? nullptr : in.mask.data(),
                                              in.mask_heads, rules.any() ? &rules : nullptr, dims, s.causal, args.scale, args.mods,
                                              kernel_dtype(f.spec.dtype), out.data(), lse.data(), 0, nullptr);
  if (!err.empty()) {
    o.detail = "CUDA error: " + err;
    return o;
  }
  const double e = max_abs_err(out, f.refs[0]);
  // lse: -inf exactly where every key is masked, else within a relative tolerance of float64's
  // (the log of a sum: float32 rounding 1e-4, the 16-bit types' inputs and weights 1e-3).
  const double lse_tol = f.spec.dtype == kit::Dtype::f32 ? 1e-4 : 1e-3;
  double lse_worst = 0;
  bool lse_ok = true;
  for (std::size_t i = 0; i < lse.size(); ++i) {
    const double a = lse[i], b = f.refs[1][i];
    if (std::isinf(b)) {
      lse_ok = lse_ok && a == b;
    } else {
      const double rel = std::fabs(a - b) / std::max(1.0, std::fabs(b));
      if (!(rel <= lse_worst)) lse_worst = std::isnan(rel) ? INFINITY : rel;
    }
  }
  lse_ok = lse_ok && lse_worst <= lse_tol;
  o.errs = {e};
  o.bounds = {fa_bound(f.plain_err[0])};
  o.ok = e <= o.bounds[0] && lse_ok;
  char buf[160];
  std::snprintf(buf, sizeof buf, "max|err| %.2e (plain %s %.2e, bound %.2e), lse rel %.1e%s", e,
                kit::dtype_name(f.spec.dtype), f.plain_err[0], o.bounds[0], lse_worst, lse_ok ? "" : " LSE OFF");
  o.detail = buf;
  return o;
}

// The backward from the kernel's own forward output and lse, as attention_backward does on the
// GPU; delta = rowsum(dO o O) (Algorithm 2, line 4) in float64, as cuda_backend.cpp computes it.
Outcome run_backward(const kit::CaseFile& f, const kit::Inputs& in) {
  const kit::Shape& s = f.spec.shape;
  const cuda::FlashDims dims{s.H, s.Lq, s.d, s.Hkv, s.Lk, s.dv};
  KernelArgs args = kernel_args(f.spec);
  args.mods.alibi_slopes = args.slopes.empty() ? nullptr : args.slopes.data();
  const unsigned char* mask = in.mask.empty() ? nullptr : in.mask.data();
  const attn::variants::IndexRules rules = kit::kit_rules(s, in);
  const attn::variants::IndexRules* by_index = rules.any() ? &rules : nullptr;
  std::vector<float> out(s.H * s.Lq * s.dv, NAN), lse(s.H * s.Lq, NAN), delta(s.H * s.Lq);
  Outcome o;
  std::string err = cuda::flash_forward(in.q.data(), in.k.data(), in.v.data(), mask, in.mask_heads, by_index, dims, s.causal,
                                        args.scale, args.mods, cuda::Dtype::float32, out.data(), lse.data(), 0, nullptr);
  for (std::size_t r = 0; r < delta.size(); ++r) {
    double acc = 0;
    for (std::size_t c = 0; c < s.dv; ++c) acc += double(in.dout[r * s.dv + c]) * double(out[r * s.dv + c]);
    delta[r] = float(acc);
  }
  std::vector<float> grads[3] = {std::vector<float>(s.H * s.Lq * s.d, NAN), std::vector<float>(s.Hkv * s.Lk * s.d, NAN),
                                 std::vector<float>(s.Hkv * s.Lk * s.dv, NAN)};
  if (err.empty())
    err = cuda::flash_backward(in.q.data(), in.k.data(), in.v.data(), mask, in.mask_heads, by_index, dims, s.causal, args.scale,
                               args.mods, in.dout.data(), lse.data(), delta.data(), grads[0].data(), grads[1].data(), grads[2].data());
  if (!err.empty()) {
    o.detail = "CUDA error: " + err;
    return o;
  }
  o.ok = true;
  std::string d;
  for (int i = 0; i < 3; ++i) {
    o.errs.push_back(max_abs_err(grads[i], f.refs[i]));
    o.bounds.push_back(fa_bound(f.plain_err[i]));
    o.ok = o.ok && o.errs[i] <= o.bounds[i];
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s%s %.1e (plain f32 %.1e)", i ? ", " : "max|err| ", i == 0 ? "dq" : i == 1 ? "dk" : "dv",
                  o.errs[i], f.plain_err[i]);
    d += buf;
  }
  o.detail = d;
  return o;
}

int check(const std::string& dir, bool quick, const std::string& json_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw kit::KitError(dir + ": no such folder of cases (scripts/gpu_check.sh prepare writes it)");
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".case") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw kit::KitError(dir + ": holds no .case files");
  std::string device;
  if (!cuda::device_usable(device)) {
    std::printf("SKIPPED: %s\n", device.c_str());
    return 77;
  }
  std::printf("device: %s%s\n", device.c_str(), quick ? " (quick cases)" : "");
  std::string rows;
  std::size_t passed = 0, failed = 0;
  for (const fs::path& p : files) {
    const kit::CaseFile f = kit::read_case(p.string());
    if (quick && !f.spec.quick) continue;
    const kit::Inputs in = kit::make_inputs(f.spec);
    if (kit::hash_inputs(in) != f.input_hash)
      throw kit::KitError(p.string() + ": the inputs made here differ from those the reference was computed on");
    const auto t0 = std::chrono::steady_clock::now();
    const Outcome o = f.spec.pass == kit::Pass::forward ? run_forward(f, in) : run_backward(f, in);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    (o.ok ? passed : failed)++;
    const std::string name = p.stem().string();
    std::printf("%s %s  %s\n", o.ok ? "ok  " : "FAIL", name.c_str(), o.detail.c_str());
    std::fflush(stdout);
    std::string errs, bounds;
    for (std::size_t i = 0; i < o.errs.size(); ++i) {
      errs += (i ? ", " : "") + json_number(o.errs[i]);
      bounds += (i ? ", " : "") + json_number(o.bounds[i]);
    }
    rows += std::string(rows.empty() ? "" : ",\n") + "    {\"name\": \"" + name + "\", \"ok\": " + (o.ok ? "true" : "false") +
            ", \"max_abs_err\": [" + errs + "], \"bound\": [" + bounds + "], \"ms\": " + json_number(ms) + "}";
  }
  std::printf("%zu passed, %zu failed\n", passed, failed);
  if (!json_path.empty()) {
    FILE* out = std::fopen(json_path.c_str(), "w");
    if (!out) throw kit::KitError("cannot write " + json_path);
    std::fprintf(out, "{\n  \"device\": \"%s\",\n  \"quick\": %s,\n  \"passed\": %zu,\n  \"failed\": %zu,\n  \"cases\": [\n%s\n  ]\n}\n",
                 device.c_str(), quick ? "true" : "false", passed, failed, rows.c_str());
    if (std::fclose(out) != 0) throw kit::KitError("cannot write " + json_path);
  }
  return failed ? 1 : 0;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t comma = std::min(s.find(',', start), s.size());
    parts.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return parts;
}

std::size_t parse_size(const std::string& s, const char* what, std::size_t lo, std::size_t hi) {
  std::size_t used = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty() || s[0] == '-' || v < lo || v > hi)
    throw kit::KitError(std::string(what) + ": expected a whole number in [" + std::to_string(lo) + ", " +
                        std::to_string(hi) + "], got \"" + s + "\"");
  return std::size_t(v);
}

// Times the kernel (CUDA events around each launch, inputs already on the device, after one
// untimed launch) for every row of the grid; median and min per row.
int bench(const std::vector<std::string>& dtypes, const std::vector<std::size_t>& ns,
          const std::vector<std::pair<std::size_t, std::size_t>>& shapes, const std::vector<bool>& causals,
          std::size_t repeat, const std::string& json_path) {
  std::string device;
  if (!cuda::device_usable(device)) {
    std::printf("SKIPPED: %s\n", device.c_str());
    return 77;
  }
  std::string rows;
  for (const std::string& dt : dtypes) {
    const kit::Dtype dtype = dt == "f16" ? kit::Dtype::f16 : dt == "bf16" ? kit::Dtype::bf16 : kit::Dtype::f32;
    for (const auto& [d, H] : shapes)
      for (std::size_t n : ns)
        for (bool causal : causals) {
          const kit::CaseSpec spec{kit::Pass::forward, dtype, {H, H, n, n, d, d, causal, kit::MaskKind::none}, false, 7};
          const kit::Inputs in = kit::make_inputs(spec);
          std::vector<float> out(H * n * d), lse(H * n);
          std::vector<double> ms;
          const std::string err =
              cuda::flash_forward(in.q.data(), in.k.data(), in.v.data(), nullptr, 0, nullptr, {H, n, d, H, n, d}, causal,
                                  float(1.0 / std::sqrt(double(d))), cuda::ScoreMods{}, kernel_dtype(dtype), out.data(),
                                  lse.data(), repeat, &ms);
          if (!err.empty()) throw kit::KitError("CUDA error in the " + dt + " run at n = " + std::to_string(n) + ": " + err);
          std::vector<double> sorted = ms;
          std::sort(sorted.begin(), sorted.end());
          const double median = sorted[sorted.size() / 2], fastest = sorted.front();
          // FlashAttention's count: 4 H n^2 d, halved when causal.
          const double flops = 4.0 * double(H) * double(n) * double(n) * double(d) / (causal ? 2 : 1);
          std::printf("%-4s d=%-3zu H=%-2zu n=%-5zu causal=%d  median %.3f ms  min %.3f ms  %.1f TFLOP/s\n", dt.c_str(), d,
                      H, n, int(causal), median, fastest, flops / (median * 1e9));
          std::fflush(stdout);
          rows += std::string(rows.empty() ? "" : ",\n") + "    {\"dtype\": \"" + dt + "\", \"head_dim\": " + std::to_string(d) +
                  ", \"heads\": " + std::to_string(H) + ", \"n\": " + std::to_string(n) +
                  ", \"causal\": " + (causal ? "true" : "false") + ", \"median_ms\": " + json_number(median) +
                  ", \"min_ms\": " + json_number(fastest) + ", \"flops\": " + json_number(flops) + "}";
        }
  }
  if (!json_path.empty()) {
    FILE* out = std::fopen(json_path.c_str(), "w");
    if (!out) throw kit::KitError("cannot write " + json_path);
    std::fprintf(out, "{\n  \"device\": \"%s\",\n  \"repeat\": %zu,\n  \"rows\": [\n%s\n  ]\n}\n", device.c_str(), repeat,
                 rows.c_str());
    if (std::fclose(out) != 0) throw kit::KitError("cannot write " + json_path);
  }
  return 0;
}

int run(int argc, char** argv) {
  if (argc < 2) throw kit::KitError("expected a command: info, check DIR or bench");
  const std::string cmd = argv[1];
  auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) throw kit::KitError(std::string(argv[i]) + " needs a value");
    return argv[++i];
  };
  if (cmd == "info") {
    if (argc != 2) throw kit::KitError("info takes no arguments");
    std::string why;
    const bool ok = cuda::device_usable(why);
    std::printf("%s%s\n", ok ? "device: " : "SKIPPED: ", why.c_str());
    return ok ? 0 : 77;
  }
  if (cmd == "check") {
    std::string dir, json;
    bool quick = false;
    for (int i = 2; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--quick") quick = true;
      else if (a == "--json") json = value(i);
      else if (!a.empty() && a[0] != '-' && dir.empty()) dir = a;
      else throw kit::KitError("check: unexpected argument \"" + a + "\"");
    }
    if (dir.empty()) throw kit::KitError("check needs the folder of cases");
    return check(dir, quick, json);
  }
  if (cmd == "bench") {
    std::vector<std::string> dtypes = {"f16", "bf16", "f32"};
    std::vector<std::size_t> ns = {1024, 4096};
    std::vector<std::pair<std::size_t, std::size_t>> shapes = {{64, 16}, {128, 8}};
    std::vector<bool> causals = {false, true};
    std::size_t repeat = 20;
    std::string json;
    for (int i = 2; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--dtypes") {
        dtypes = split(value(i));
        for (const std::string& t : dtypes)
          if (t != "f16" && t != "bf16" && t != "f32") throw kit::KitError("--dtypes: expected f16, bf16 or f32, got \"" + t + "\"");
      } else if (a == "--n") {
        ns.clear();
        for (const std::string& s : split(value(i))) ns.push_back(parse_size(s, "--n", 1, 65536));
      } else if (a == "--shapes") {
        shapes.clear();
        for (const std::string& s : split(value(i))) {
          const std::size_t x = s.find('x');
          if (x == std::string::npos) throw kit::KitError("--shapes: expected DxH (head dim x heads), got \"" + s + "\"");
          const std::size_t d = parse_size(s.substr(0, x), "--shapes head dim", 1, cuda::kMaxHeadDim);
          shapes.push_back({d, parse_size(s.substr(x + 1), "--shapes heads", 1, 1024)});
        }
      } else if (a == "--causal") {
        causals.clear();
        for (const std::string& s : split(value(i))) {
          if (s != "no" && s != "yes") throw kit::KitError("--causal: expected no, yes or no,yes, got \"" + s + "\"");
          causals.push_back(s == "yes");
        }
      } else if (a == "--repeat") {
        repeat = parse_size(value(i), "--repeat", 1, 1000);
      } else if (a == "--json") {
        json = value(i);
      } else {
        throw kit::KitError("bench: unexpected argument \"" + a + "\"");
      }
    }
    for (const std::string& t : dtypes)
      for (const auto& [d, H] : shapes)
        if (t != "f32" && d != 64 && d != 128)
          throw kit::KitError("--shapes: the " + t + " kernel takes head dims 64 and 128, got " + std::to_string(d));
    return bench(dtypes, ns, shapes, causals, repeat, json);
  }
  throw kit::KitError("unknown command \"" + cmd + "\" (expected info, check or bench)");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const kit::KitError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // out of memory, a filesystem error
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
