#pragma once
// The GPU check kit (scripts/gpu_check.sh): what the CPU-side case writer (kit_cases.cpp, which
// links the engine) and the GPU-side driver (kit_driver.cpp, which needs only the C++ standard
// library and the CUDA kernel) must agree on. Standard library only, so that a bare GPU machine
// with nvcc and nothing else builds it.
//
//   - the cases: the CUDA test's shapes (every mask kind, rows with no visible key, causal with
//     Lq != Lk, GQA/MQA, head dims 1-256, lengths off every tile), per dtype and pass, the
//     score modifiers (soft-cap, ALiBi, both, with a temperature) over causal and a sliding
//     window, and every mask variant the kernels read by index (window with sinks, prefix-LM,
//     strided, chunked, documents);
//   - their inputs, made from a seed with integer arithmetic only, so both machines make the
//     same bits whatever their libm (a hash of the inputs is stored and checked);
//   - the mask variants' rules as the kernel takes them (kit_rules: variants/index_rules.hpp,
//     standard library only), while the reference reads the engine's own descriptors;
//   - the case file: the float64 reference outputs and the error of plain attention in the
//     case's dtype against them (FlashAttention's rule, tests/fa_rule.hpp), written here and
//     read there.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attn/engine/attention/variants/index_rules.hpp"

namespace attn::kit {

// A case file or command line the kit cannot use: the driver prints "error: ..." and exits 2.
struct KitError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class Dtype : std::uint64_t { f32 = 0, f16 = 1, bf16 = 2 };
// none .. empty_rows: a bitmap; window .. combined: a mask variant (KitRules), which the kernel
// reads by index (kit_rules) and the engine's reference as its descriptor; combined is the
// window with sinks, documents and chunks at once; bitmap_window is a per-head bitmap and the
// window together (attend's "mask" beside "window").
enum class MaskKind : std::uint64_t {
  none = 0, per_head = 1, shared = 2, empty_rows = 3, window = 4, prefix = 5, strided = 6, chunked = 7, documents = 8,
  combined = 9, bitmap_window = 10
};
inline constexpr std::uint64_t kLastMaskKind = 10;
inline bool is_rule(MaskKind m) { return m >= MaskKind::window; }
inline bool has_bitmap(MaskKind m) { return m != MaskKind::none && (!is_rule(m) || m == MaskKind::bitmap_window); }
enum class Pass : std::uint64_t { forward = 0, backward = 1 };

inline const char* dtype_name(Dtype t) { return t == Dtype::f16 ? "f16" : t == Dtype::bf16 ? "bf16" : "f32"; }
inline const char* mask_name(MaskKind m) {
  switch (m) {
    case MaskKind::none: return "none";
    case MaskKind::per_head: return "per-head";
    case MaskKind::shared: return "shared";
    case MaskKind::empty_rows: return "empty-rows";
    case MaskKind::window: return "window";
    case MaskKind::prefix: return "prefix";
    case MaskKind::strided: return "strided";
    case MaskKind::chunked: return "chunked";
    case MaskKind::documents: return "documents";
    case MaskKind::combined: return "combined";
    case MaskKind::bitmap_window: return "bitmap-window";
  }
  return "?";
}

// q [H, Lq, d], k [Hkv, Lk, d], v [Hkv, Lk, dv]; causal is bottom-right aligned (mask.hpp).
struct Shape {
  std::size_t H, Hkv, Lq, Lk, d, dv;
  bool causal;
  MaskKind mask;
};

// The mask variants' parameters, as attend would take them: "window": [24, 4] with "sinks": 2;
// "prefix": Lq / 3; "stride": 5; "chunk": 48; "segments": queries in documents of 29, keys in
// documents of 41 (so with Lq != Lk some queries' documents have no key: rows that see none;
// document_ids below).
struct KitRules {
  static constexpr std::size_t left = 24, right = 4, sinks = 2, stride = 5, chunk = 48, q_doc = 29, k_doc = 41;
  static std::size_t prefix(std::size_t Lq) { return Lq / 3; }
};
// The document ids of a case's queries and keys. documents: queries in documents of 29, keys of
// 41, by index. combined: both by position (query i at i + Lk - Lq), in documents of 41, as a
// packed batch is cut, so that the window, the chunks and the documents leave keys to see.
struct CaseDocuments {
  std::vector<std::int64_t> q, k;
};
inline CaseDocuments document_ids(const Shape& s) {
  CaseDocuments ids{std::vector<std::int64_t>(s.Lq), std::vector<std::int64_t>(s.Lk)};
  const bool by_position = s.mask == MaskKind::combined;
  const long q_run = long(by_position ? KitRules::k_doc : KitRules::q_doc);
  const long shift = by_position ? long(s.Lk) - long(s.Lq) : 0;
  for (std::size_t i = 0; i < s.Lq; ++i) {
    const long at = long(i) + shift;  // before the first key (Lq > Lk): a document of no key
    ids.q[i] = at < 0 ? -1 : std::int64_t(at / q_run);
  }
  for (std::size_t j = 0; j < s.Lk; ++j) ids.k[j] = std::int64_t(j / KitRules::k_doc);
  return ids;
}

// The score modifiers of a case (variant.hpp's ScoreMod, on scale * q.k before the temperature):
// a soft-cap c (0 = none), ALiBi with alibi_slopes(H), and the temperature.
struct Mods {
  float softcap = 0;
  bool alibi = false;
  float temperature = 1;
  bool any() const { return softcap > 0 || alibi; }
};
// Head h's ALiBi slope: 2^-(2 + h % 6), exact in float32 and float64 alike.
inline std::vector<float> alibi_slopes(std::size_t H) {
  std::vector<float> m(H);
  for (std::size_t h = 0; h < H; ++h) m[h] = std::ldexp(1.0f, -int(2 + h % 6));
  return m;
}

// float32: any head dims up to 256, d != dv, lengths not a multiple of 32, causal with Lq < Lk
// and Lq > Lk (the first Lq - Lk rows see no key), GQA and MQA, every mask kind.
inline const std::vector<Shape>& f32_shapes() {
  using M = MaskKind;
  static const std::vector<Shape> s = {
      {1, 1, 1, 1, 1, 1, false, M::none},           {2, 2, 7, 13, 5, 3, true, M::none},
      {4, 2, 100, 37, 64, 64, true, M::none},       {2, 1, 33, 300, 64, 80, true, M::per_head},
      {3, 3, 129, 129, 128, 128, false, M::shared}, {2, 2, 70, 90, 256, 256, true, M::none},
      {8, 1, 65, 65, 32, 32, false, M::empty_rows}, {8, 2, 1, 777, 64, 64, true, M::none},
      {2, 2, 40, 40, 96, 20, false, M::per_head}};
  return s;
}
// float16 / bfloat16 (tensor cores): d = dv = 64 or 128; rows and keys off the 64-row tiles.
inline const std::vector<Shape>& tensor_core_shapes() {
  using M = MaskKind;
  static const std::vector<Shape> s = {
      {1, 1, 1, 1, 64, 64, false, M::none},         {2, 2, 7, 13, 64, 64, true, M::none},
      {4, 2, 100, 37, 64, 64, true, M::none},       {2, 1, 33, 300, 128, 128, true, M::per_head},
      {3, 3, 129, 129, 128, 128, false, M::shared}, {8, 1, 65, 200, 64, 64, false, M::empty_rows},
      {8, 2, 1, 777, 128, 128, true, M::none},      {2, 2, 130, 64, 64, 64, true, M::none}};
  return s;
}
// Many tiles in both directions, every dtype (left out of the quick run: compute-sanitizer is slow).
inline const std::vector<Shape>& large_shapes() {
  static const std::vector<Shape> s = {{8, 8, 1024, 1024, 64, 64, true, MaskKind::none},
                                       {4, 4, 513, 2049, 128, 128, false, MaskKind::none}};
  return s;
}
// The backward (float32): the float32 shapes, and one long causal GQA run (not quick).
inline const Shape kLongBackward{8, 2, 700, 900, 64, 64, true, MaskKind::none};

// The score modifiers: a shape and its modifiers, and whether compute-sanitizer runs it (one per
// kernel; the modifiers read one slope per head and change no memory access).
struct VariantCase {
  Shape shape;
  Mods mods;
  bool quick;
};
// The mask variants by index: each over rows and keys off the tiles, with GQA or MQA; documents
// with Lq > Lk, not causal (the first 29 queries see every key, the rest none: their documents
// have no key); chunked with Lq < Lk (positions offset).
inline const std::vector<Shape>& f32_rule_shapes() {
  using M = MaskKind;
  static const std::vector<Shape> s = {{2, 2, 100, 100, 64, 64, false, M::prefix},
                                       {2, 1, 70, 90, 64, 48, true, M::strided},
                                       {2, 2, 130, 150, 64, 64, false, M::chunked},
                                       {4, 2, 100, 37, 32, 32, false, M::documents}};
  return s;
}
inline const std::vector<Shape>& tensor_core_rule_shapes() {
  using M = MaskKind;
  static const std::vector<Shape> s = {{2, 2, 200, 200, 64, 64, false, M::prefix},
                                       {2, 2, 300, 300, 64, 64, true, M::chunked},
                                       {2, 1, 130, 300, 128, 128, true, M::documents}};
  return s;
}
// A long causal window with sinks: most key tiles of a block are hidden and skipped.
inline const Shape kLongWindow{4, 4, 600, 1500, 64, 64, true, MaskKind::window};
// Rules together (combined), prefill and a decode step (Lq = 1: the query at the last position),
// and a decode step under each rule that takes Lq != Lk (prefix-LM does not).
inline const std::vector<Shape>& f32_rule_more_shapes() {
  using M = MaskKind;
  static const std::vector<Shape> s = {{2, 1, 90, 200, 64, 64, true, M::combined},
                                       {8, 2, 1, 777, 64, 64, true, M::combined},
                                       {8, 2, 1, 777, 64, 64, true, M::window},
                                       {8, 2, 1, 777, 64, 64, true, M::strided},
                                       {8, 2, 1, 777, 64, 64, false, M::chunked},
                                       {8, 2, 1, 777, 64, 64, false, M::documents}};
  return s;
}
// A per-head bitmap and a causal window with sinks at once, GQA, Lq < Lk.
inline const Shape kBitmapWindow{4, 2, 100, 160, 64, 64, true, MaskKind::bitmap_window};
inline const std::vector<Shape>& tensor_core_rule_more_shapes() {
  using M = MaskKind;
  static const std::vector<Shape> s = {{2, 2, 130, 300, 64, 64, true, M::combined},
                                       {8, 2, 1, 777, 128, 128, true, M::combined},
                                       {8, 2, 1, 777, 64, 64, true, M::window}};
  return s;
}

// float32 forward and backward: the soft-cap over causal rows with Lq < Lk, ALiBi with Lq > Lk
// (positions bottom-right aligned; the first rows see no key) and GQA, both with a temperature
// over the sliding window (MQA, Lq < Lk, d != dv), and both over causal and the window.
inline const std::vector<VariantCase>& f32_variant_cases() {
  using M = MaskKind;
  static const std::vector<VariantCase> c = {
      {{2, 2, 70, 90, 64, 64, true, M::none}, {2.0f, false, 1.0f}, true},
      {{4, 2, 100, 37, 64, 64, true, M::none}, {0.0f, true, 1.0f}, false},
      {{2, 1, 33, 300, 96, 80, false, M::window}, {2.0f, true, 0.5f}, false},
      {{3, 3, 129, 129, 128, 128, true, M::window}, {5.0f, true, 1.0f}, false}};
  return c;
}
// float16 / bfloat16 forward: the same, with d = dv = 64 or 128.
inline const std::vector<VariantCase>& tensor_core_variant_cases() {
  using M = MaskKind;
  static const std::vector<VariantCase> c = {
      {{2, 2, 130, 64, 64, 64, true, M::none}, {2.0f, false, 1.0f}, true},
      {{4, 2, 100, 37, 64, 64, true, M::none}, {0.0f, true, 1.0f}, false},
      {{2, 1, 33, 300, 128, 128, false, M::window}, {2.0f, true, 0.5f}, false},
      {{3, 3, 129, 129, 128, 128, true, M::window}, {5.0f, true, 1.0f}, false}};
  return c;
}

struct CaseSpec {
  Pass pass;
  Dtype dtype;
  Shape shape;
  bool quick;          // in the subset compute-sanitizer runs
  std::uint64_t seed;  // of the inputs (make_inputs)
  Mods mods = {};
};

// Every case of the kit, in a fixed order; the seed is the case's index.
inline std::vector<CaseSpec> all_cases() {
  std::vector<CaseSpec> cases;
  auto add = [&](Pass p, Dtype t, const Shape& s, bool quick, const Mods& mods = {}) {
    cases.push_back({p, t, s, quick, 1000 + cases.size(), mods});
  };
  for (const Shape& s : f32_shapes()) add(Pass::forward, Dtype::f32, s, true);
  for (Dtype t : {Dtype::f16, Dtype::bf16})
    for (const Shape& s : tensor_core_shapes()) add(Pass::forward, t, s, true);
  for (Dtype t : {Dtype::f32, Dtype::f16, Dtype::bf16})
    for (const Shape& s : large_shapes()) add(Pass::forward, t, s, false);
  for (const Shape& s : f32_shapes()) add(Pass::backward, Dtype::f32, s, true);
  add(Pass::backward, Dtype::f32, kLongBackward, false);
  // The score modifiers, after the cases above so that those keep their seeds and names.
  for (const VariantCase& v : f32_variant_cases()) add(Pass::forward, Dtype::f32, v.shape, v.quick, v.mods);
  for (Dtype t : {Dtype::f16, Dtype::bf16})
    for (const VariantCase& v : tensor_core_variant_cases()) add(Pass::forward, t, v.shape, v.quick, v.mods);
  for (const VariantCase& v : f32_variant_cases()) add(Pass::backward, Dtype::f32, v.shape, v.quick, v.mods);
  // The mask variants by index, after those.
  for (const Shape& s : f32_rule_shapes()) add(Pass::forward, Dtype::f32, s, s.mask == MaskKind::documents);
  for (Dtype t : {Dtype::f16, Dtype::bf16})
    for (const Shape& s : tensor_core_rule_shapes()) add(Pass::forward, t, s, s.mask == MaskKind::documents);
  for (Dtype t : {Dtype::f32, Dtype::f16, Dtype::bf16}) add(Pass::forward, t, kLongWindow, false);
  for (const Shape& s : f32_rule_shapes()) add(Pass::backward, Dtype::f32, s, s.mask == MaskKind::documents);
  add(Pass::backward, Dtype::f32, kLongWindow, false);
  // Rules together and decode steps, after those.
  auto quick = [](const Shape& s) { return s.mask == MaskKind::combined; };
  for (const Shape& s : f32_rule_more_shapes()) add(Pass::forward, Dtype::f32, s, quick(s));
  for (Dtype t : {Dtype::f16, Dtype::bf16})
    for (const Shape& s : tensor_core_rule_more_shapes()) add(Pass::forward, t, s, quick(s));
  for (const Shape& s : f32_rule_more_shapes())
    if (quick(s)) add(Pass::backward, Dtype::f32, s, true);
  // An explicit bitmap beside a rule, after those.
  add(Pass::forward, Dtype::f32, kBitmapWindow, true);
  add(Pass::forward, Dtype::f16, kBitmapWindow, true);
  add(Pass::backward, Dtype::f32, kBitmapWindow, true);
  return cases;
}

inline std::string case_name(std::size_t index, const CaseSpec& c) {
  const Shape& s = c.shape;
  char buf[200];
  int n = std::snprintf(buf, sizeof buf, "%03zu-%s-%s-H%zu-Hkv%zu-Lq%zu-Lk%zu-d%zu-dv%zu-%s-%s", index,
                        c.pass == Pass::forward ? "fwd" : "bwd", dtype_name(c.dtype), s.H, s.Hkv, s.Lq, s.Lk, s.d,
                        s.dv, s.causal ? "causal" : "full", mask_name(s.mask));
  if (c.mods.softcap > 0) n += std::snprintf(buf + n, sizeof buf - std::size_t(n), "-softcap%g", double(c.mods.softcap));
  if (c.mods.alibi) n += std::snprintf(buf + n, sizeof buf - std::size_t(n), "-alibi");
  if (c.mods.temperature != 1) std::snprintf(buf + n, sizeof buf - std::size_t(n), "-T%g", double(c.mods.temperature));
  return buf;
}

// x rounded to the nearest float16 / bfloat16 (ties to even), as a float. Exact operations only
// (frexp, ldexp, nearbyint, bit shifts), so every machine gives the same bits.
inline float round_f16(float x) {
  const float a = std::fabs(x);
  if (!std::isfinite(x) || a == 0) return x;
  if (a >= 65520.0f) return std::copysign(INFINITY, x);  // half a step past 65504 and beyond
  int e = 0;
  std::frexp(a, &e);                                               // a = m 2^e, m in [0.5, 1)
  const float step = std::ldexp(1.0f, std::max(e - 1, -14) - 10);  // float16's spacing at a
  return std::copysign(std::nearbyint(a / step) * step, x);
}
inline float round_bf16(float x) {
  if (!std::isfinite(x)) return x;
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even, on the kept 16 bits
  u &= 0xffff0000u;
  float y;
  std::memcpy(&y, &u, sizeof y);
  return y;
}
inline float round_to(Dtype t, float x) {
  return t == Dtype::f16 ? round_f16(x) : t == Dtype::bf16 ? round_bf16(x) : x;
}

// SplitMix64 (Steele, Lea, Flood 2014): integer arithmetic only, the same on every machine.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Mean 0, variance 1: the sum of four uniform 24-bit integers, centred, times sqrt(3) / 2^24
  // (Irwin-Hall; each step is exact or one correctly rounded operation, unlike log/cos).
  float normalish() {
    std::int64_t sum = 0;
    for (int i = 0; i < 4; ++i) sum += std::int64_t(next() >> 40);
    const double centred = double(sum - 2 * (std::int64_t(1) << 24)) / double(std::int64_t(1) << 24);
    return float(centred * 1.7320508075688772);
  }
  bool chance_70_percent() { return (next() >> 32) < 3006477107ull; }  // 0.7 * 2^32
};

// A case's inputs, row-major, rounded to its dtype: the reference sees exactly what the kernel
// multiplies. mask [mask_heads, Lq, Lk] of 0/1 (empty when the case has no bitmap), 70 % of keys
// visible; with empty_rows, rows 0 and Lq / 2 see none. documents: the ids of queries and keys
// (KitRules). dout [H, Lq, dv] for the backward.
struct Inputs {
  std::vector<float> q, k, v, dout;
  std::vector<unsigned char> mask;
  std::size_t mask_heads = 0;
  std::vector<std::int64_t> doc_q, doc_k;
};

inline Inputs make_inputs(const CaseSpec& c) {
  const Shape& s = c.shape;
  SplitMix64 rng{c.seed};
  Inputs in;
  auto fill = [&](std::vector<float>& t, std::size_t n) {
    t.resize(n);
    for (float& x : t) x = round_to(c.dtype, rng.normalish());
  };
  fill(in.q, s.H * s.Lq * s.d);
  fill(in.k, s.Hkv * s.Lk * s.d);
  fill(in.v, s.Hkv * s.Lk * s.dv);
  if (s.mask == MaskKind::documents || s.mask == MaskKind::combined) {
    CaseDocuments ids = document_ids(s);
    in.doc_q = std::move(ids.q);
    in.doc_k = std::move(ids.k);
  } else if (has_bitmap(s.mask)) {
    in.mask_heads = s.mask == MaskKind::shared ? 1 : s.H;
    in.mask.resize(in.mask_heads * s.Lq * s.Lk);
    for (unsigned char& b : in.mask) b = rng.chance_70_percent();
    if (s.mask == MaskKind::empty_rows)
      for (std::size_t h = 0; h < in.mask_heads; ++h)
        for (std::size_t row : {std::size_t(0), s.Lq / 2})
          std::fill_n(in.mask.begin() + std::ptrdiff_t((h * s.Lq + row) * s.Lk), s.Lk, 0);
  }
  if (c.pass == Pass::backward) fill(in.dout, s.H * s.Lq * s.dv);
  return in;
}

// FNV-1a over every input byte: the driver refuses a case whose inputs it made differently.
inline std::uint64_t hash_inputs(const Inputs& in) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  auto eat = [&](const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  };
  for (const std::vector<float>* t : {&in.q, &in.k, &in.v, &in.dout}) eat(t->data(), t->size() * sizeof(float));
  eat(in.mask.data(), in.mask.size());
  for (const std::vector<std::int64_t>* t : {&in.doc_q, &in.doc_k}) eat(t->data(), t->size() * sizeof(std::int64_t));
  return h;
}

// The case's mask variant as the kernel takes it (none for a bitmap case); its document ids
// point into `in`.
inline variants::IndexRules kit_rules(const Shape& s, const Inputs& in) {
  variants::IndexRules r;
  switch (s.mask) {
    case MaskKind::window:
    case MaskKind::bitmap_window: r.window = {true, {KitRules::left, KitRules::right, KitRules::sinks}}; break;
    case MaskKind::prefix: r.prefix = {true, {KitRules::prefix(s.Lq)}}; break;
    case MaskKind::strided: r.stride = {true, {KitRules::stride}}; break;
    case MaskKind::chunked: r.chunk = {true, {KitRules::chunk}}; break;
    case MaskKind::documents: r.segments = {true, {in.doc_q.data(), in.doc_k.data()}}; break;
    case MaskKind::combined:
      r.window = {true, {KitRules::left, KitRules::right, KitRules::sinks}};
      r.segments = {true, {in.doc_q.data(), in.doc_k.data()}};
      r.chunk = {true, {KitRules::chunk}};
      break;
    default: break;
  }
  return r;
}

// The reference of one case. forward: refs = {out [H, Lq, dv], lse [H, Lq]} and plain_err[0]
// = max |plain attention in the dtype - out|. backward: refs = {dq, dk, dv} and plain_err[i] =
// max |plain float32 gradient - refs[i]|.
struct CaseFile {
  CaseSpec spec;
  std::uint64_t input_hash = 0;
  double plain_err[3] = {0, 0, 0};
  std::vector<double> refs[3];
};

inline std::size_t ref_size(const CaseSpec& c, int i) {
  const Shape& s = c.shape;
  if (c.pass == Pass::forward) return i == 0 ? s.H * s.Lq * s.dv : i == 1 ? s.H * s.Lq : 0;
  return i == 0 ? s.H * s.Lq * s.d : i == 1 ? s.Hkv * s.Lk * s.d : s.Hkv * s.Lk * s.dv;
}

// The file: "ATTNKIT2", 16 uint64 (pass, dtype, H, Hkv, Lq, Lk, d, dv, causal, mask, quick,
// seed, input hash, then the modifiers: the soft-cap and the temperature as the bits of a float64,
// ALiBi 0 or 1 between them), 3 float64 plain errors, then the references as float64,
// little-endian as both machines are (x86-64). Its length must be exactly what the header implies.
inline constexpr char kMagic[8] = {'A', 'T', 'T', 'N', 'K', 'I', 'T', '2'};
inline constexpr std::size_t kHeaderWords = 16;

inline std::uint64_t double_bits(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
inline double bits_double(std::uint64_t u) {
  double x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
// Sizes past these are a lying header, not a case of this kit.
inline constexpr std::uint64_t kMaxDim = 1 << 16, kMaxRefElements = std::uint64_t(1) << 28;

inline void write_case(const std::string& path, const CaseFile& f) {
  const Shape& s = f.spec.shape;
  const Mods& m = f.spec.mods;
  const std::uint64_t header[kHeaderWords] = {std::uint64_t(f.spec.pass), std::uint64_t(f.spec.dtype), s.H, s.Hkv,
                                              s.Lq, s.Lk, s.d, s.dv, s.causal, std::uint64_t(s.mask), f.spec.quick,
                                              f.spec.seed, f.input_hash, double_bits(m.softcap), m.alibi,
                                              double_bits(m.temperature)};
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(kMagic, sizeof kMagic);
    out.write(reinterpret_cast<const char*>(header), sizeof header);
    out.write(reinterpret_cast<const char*>(f.plain_err), sizeof f.plain_err);
    for (int i = 0; i < 3; ++i) {
      if (f.refs[i].size() != ref_size(f.spec, i)) throw KitError(path + ": reference " + std::to_string(i) + " has the wrong size");
      out.write(reinterpret_cast<const char*>(f.refs[i].data()), std::streamsize(f.refs[i].size() * sizeof(double)));
    }
    if (!out.flush()) throw KitError("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw KitError("cannot rename " + tmp + " to " + path);
}

inline CaseFile read_case(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw KitError(path + ": cannot open");
  char magic[8];
  std::uint64_t h[kHeaderWords];
  CaseFile f;
  if (!in.read(magic, sizeof magic) || std::memcmp(magic, kMagic, sizeof magic) != 0)
    throw KitError(path + ": not a kit case file of this kit (no ATTNKIT2 header)");
  if (!in.read(reinterpret_cast<char*>(h), sizeof h) || !in.read(reinterpret_cast<char*>(f.plain_err), sizeof f.plain_err))
    throw KitError(path + ": truncated header");
  if (h[0] > 1 || h[1] > 2 || h[8] > 1 || h[9] > kLastMaskKind || h[10] > 1 || h[14] > 1)
    throw KitError(path + ": header fields out of range");
  const double cap = bits_double(h[13]), temperature = bits_double(h[15]);
  // Each must be what a float32 holds: the kernel takes them as float32.
  if (!(std::isfinite(cap) && cap >= 0 && double(float(cap)) == cap && std::isfinite(temperature) &&
        temperature > 0 && double(float(temperature)) == temperature))
    throw KitError(path + ": the soft-cap or the temperature is out of range");
  for (int i = 2; i < 8; ++i)
    if (h[i] == 0 || h[i] > kMaxDim) throw KitError(path + ": dimension " + std::to_string(h[i]) + " out of range");
  if (h[2] % h[3] != 0) throw KitError(path + ": H is not a multiple of Hkv");
  f.spec = {Pass(h[0]),  Dtype(h[1]), {h[2], h[3], h[4], h[5], h[6], h[7], h[8] != 0, MaskKind(h[9])}, h[10] != 0, h[11],
            {float(cap), h[14] != 0, float(temperature)}};
  f.input_hash = h[12];
  for (double e : f.plain_err)
    if (!std::isfinite(e) || e < 0) throw KitError(path + ": plain error is not a finite non-negative number");
  for (int i = 0; i < 3; ++i) {
    const std::size_t n = ref_size(f.spec, i);
    if (n > kMaxRefElements) throw KitError(path + ": reference too large");
    f.refs[i].resize(n);
    if (!in.read(reinterpret_cast<char*>(f.refs[i].data()), std::streamsize(n * sizeof(double))))
      throw KitError(path + ": truncated (reference " + std::to_string(i) + ")");
  }
  if (in.peek() != std::char_traits<char>::eof()) throw KitError(path + ": trailing bytes after the references");
  return f;
}

}  // namespace attn::kit
