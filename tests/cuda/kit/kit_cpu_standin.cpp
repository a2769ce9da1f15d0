// A CPU stand-in for the CUDA kernel's host entry points (src/engine/attention/cuda/flash_cuda.hpp), so
// that the kit's driver (kit_driver.cpp) and scripts/gpu_check.sh are tested end to end on a
// machine with no GPU. It computes what the kernel computes, the way the kernel does: 32-key
// tiles with tile_math.hpp's online softmax in float32 (forward), FlashAttention-2's
// Algorithm 2 from the lse and delta (backward), Q/K/V rounded to the dtype, and the score
// modifiers from score_mod_math.hpp on scale T q.k, dS times their slope, the mask variants'
// rules by index (variants/index_rules.hpp). Standard library only, like the driver.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "attn/engine/attention/score_mod_math.hpp"
#include "attn/engine/attention/tile_math.hpp"
#include "flash_cuda.hpp"
#include "kit.hpp"

namespace attn::cuda {

namespace {

constexpr std::size_t kKeyTile = 32;

// Whether query i of head h sees key j: causal, the bitmap [mask_heads, Lq, Lk] (or none) and the
// rules (or none) all say so.
struct KeyMask {
  const unsigned char* allowed;
  std::size_t mask_heads;
  const variants::IndexRules* rules;
  bool causal;
  bool operator()(const FlashDims& d, std::size_t h, std::size_t i, std::size_t j) const {
    if (causal && !tile::causal_visible(long(i), long(j), long(d.Lq), long(d.Lk))) return false;
    if (rules && !rules->visible(i, j, d.Lq, d.Lk)) return false;
    return !allowed || allowed[((mask_heads == 1 ? 0 : h) * d.Lq + i) * d.Lk + j] != 0;
  }
};

// A score q.k of head h, query i, key j in units of `scale`'s (which has 1 / T folded in) times
// `unit` (log2(e) for the forward's base-2 scores, 1 for the backward), and the slope dS is
// multiplied by: without modifiers dot * scale * unit, with them mod(scale T dot) unit / T.
struct Scorer {
  float scaled, to_raw, from_raw;
  const ScoreMods* mods;
  Scorer(const ScoreMods& m, float scale, double unit)
      : scaled(scale * float(unit)), to_raw(float(double(scale) * double(m.temperature))),
        from_raw(float(unit / double(m.temperature))), mods(&m) {}
  tile::ModifiedScore<float> operator()(float dot, const FlashDims& d, std::size_t h, std::size_t i,
                                        std::size_t j) const {
    if (!mods->any()) return {dot * scaled, 1.0f};
    const float slope = mods->alibi_slopes ? mods->alibi_slopes[h] : 0.0f;
    const long distance = long(i) + long(d.Lk) - long(d.Lq) - long(j);
    tile::ModifiedScore<float> m = tile::modify_score(dot * to_raw, mods->softcap, slope, distance);
    m.score *= from_raw;
    return m;
  }
};

void forward_once(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                  const KeyMask& visible, const FlashDims& d, float scale, const ScoreMods& mods, float* out,
                  float* lse) {
  const std::size_t group = d.H / d.Hkv;
  const Scorer score(mods, scale, tile::kLog2ed);  // base-2 scores, as the kernel keeps them
  std::vector<float> s(kKeyTile), o(d.dv);
  for (std::size_t h = 0; h < d.H; ++h)
    for (std::size_t i = 0; i < d.Lq; ++i) {
      const float* qi = &q[(h * d.Lq + i) * d.d];
      tile::RowState<float> st = tile::row_start<float>();
      std::fill(o.begin(), o.end(), 0.0f);
      for (std::size_t j0 = 0; j0 < d.Lk; j0 += kKeyTile) {
        const std::size_t j1 = std::min(d.Lk, j0 + kKeyTile);
        float tile_max = -INFINITY;
        for (std::size_t j = j0; j < j1; ++j) {
          float acc = 0;
          const float* kj = &k[((h / group) * d.Lk + j) * d.d];
          for (std::size_t c = 0; c < d.d; ++c) acc += qi[c] * kj[c];
          s[j - j0] = visible(d, h, i, j) ? score(acc, d, h, i, j).score : -INFINITY;
          tile_max = std::max(tile_max, s[j - j0]);
        }
        const float alpha = tile::row_rescale(st, tile_max);  // Algorithm 1, lines 10-11
        for (float& x : o) x *= alpha;
        if (st.m == -INFINITY) continue;  // nothing visible yet: the -inf trap of tile_math.hpp
        for (std::size_t j = j0; j < j1; ++j) {
          const float p = tile::tile_exp2(s[j - j0] - st.m);
          st.l += p;
          const float* vj = &v[((h / group) * d.Lk + j) * d.dv];
          for (std::size_t c = 0; c < d.dv; ++c) o[c] += p * vj[c];
        }
      }
      const float inv_l = tile::row_output_scale(st);
      for (std::size_t c = 0; c < d.dv; ++c) out[(h * d.Lq + i) * d.dv + c] = o[c] * inv_l;
      lse[h * d.Lq + i] = tile::row_lse(st);
    }
}

std::vector<float> rounded(const float* x, std::size_t n, Dtype dtype) {
  const kit::Dtype t = dtype == Dtype::float16 ? kit::Dtype::f16 : dtype == Dtype::bfloat16 ? kit::Dtype::bf16 : kit::Dtype::f32;
  std::vector<float> r(x, x + n);
  for (float& e : r) e = kit::round_to(t, e);
  return r;
}

}  // namespace

bool device_usable(std::string& reason) {
  reason = "CPU stand-in (tests/cuda/kit/kit_cpu_standin.cpp), not a GPU";
  return true;
}

std::string flash_forward(const float* q, const float* k, const float* v, const unsigned char* allowed,
                          std::size_t mask_heads, const variants::IndexRules* rules, const FlashDims& dims, bool causal,
                          float scale,
                          const ScoreMods& mods, Dtype dtype, float* out, float* lse, std::size_t timed_runs,
                          std::vector<double>* kernel_ms) {
  const std::vector<float> qr = rounded(q, dims.H * dims.Lq * dims.d, dtype),
                           kr = rounded(k, dims.Hkv * dims.Lk * dims.d, dtype),
                           vr = rounded(v, dims.Hkv * dims.Lk * dims.dv, dtype);
  const KeyMask mask{allowed, mask_heads, rules, causal};
  forward_once(qr, kr, vr, mask, dims, scale, mods, out, lse);
  for (std::size_t run = 0; run < timed_runs && kernel_ms; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    forward_once(qr, kr, vr, mask, dims, scale, mods, out, lse);
    kernel_ms->push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return {};
}

// FlashAttention-2's Algorithm 2 without tiles: P = exp(s - lse), dP = dO V^T, dS = P o (dP -
// delta) x slope x scale; dQ = dS K, dK = dS^T Q and dV = P^T dO, summed over a KV head's query
// heads.
std::string flash_backward(const float* q, const float* k, const float* v, const unsigned char* allowed,
                           std::size_t mask_heads, const variants::IndexRules* rules, const FlashDims& d, bool causal,
                           float scale, const ScoreMods& mods,
                           const float* dout, const float* lse, const float* delta, float* dq, float* dk, float* dv) {
  const std::size_t group = d.H / d.Hkv;
  const Scorer score(mods, scale, 1.0);
  const KeyMask visible{allowed, mask_heads, rules, causal};
  std::fill(dq, dq + d.H * d.Lq * d.d, 0.0f);
  std::fill(dk, dk + d.Hkv * d.Lk * d.d, 0.0f);
  std::fill(dv, dv + d.Hkv * d.Lk * d.dv, 0.0f);
  for (std::size_t h = 0; h < d.H; ++h)
    for (std::size_t i = 0; i < d.Lq; ++i) {
      const float row_lse = lse[h * d.Lq + i];
      if (row_lse == -INFINITY) continue;  // the row attends to nothing: no gradient
      const float* qi = &q[(h * d.Lq + i) * d.d];
      const float* doi = &dout[(h * d.Lq + i) * d.dv];
      for (std::size_t j = 0; j < d.Lk; ++j) {
        if (!visible(d, h, i, j)) continue;
        const std::size_t kh = h / group;
        const float* kj = &k[(kh * d.Lk + j) * d.d];
        const float* vj = &v[(kh * d.Lk + j) * d.dv];
        float s = 0, dp = 0;
        for (std::size_t c = 0; c < d.d; ++c) s += qi[c] * kj[c];
        for (std::size_t c = 0; c < d.dv; ++c) dp += doi[c] * vj[c];
        const tile::ModifiedScore<float> m = score(s, d, h, i, j);
        const float p = std::exp(m.score - row_lse);
        const float ds = p * (dp - delta[h * d.Lq + i]) * m.slope * scale;
        for (std::size_t c = 0; c < d.d; ++c) {
          dq[(h * d.Lq + i) * d.d + c] += ds * kj[c];
          dk[(kh * d.Lk + j) * d.d + c] += ds * qi[c];
        }
        for (std::size_t c = 0; c < d.dv; ++c) dv[(kh * d.Lk + j) * d.dv + c] += p * doi[c];
      }
    }
  return {};
}

}  // namespace attn::cuda
