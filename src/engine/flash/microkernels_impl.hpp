#pragma once
// Register-blocked SIMD inner loops of the flash kernel, written once over an xsimd
// architecture and compiled once per instruction set (microkernels_avx512.cpp with
// -mavx512f, microkernels_avx2.cpp with -mavx2 -mfma, microkernels_generic.cpp with the
// compiler's baseline); best_microkernels() picks one at run time, so the binary is not tied
// to -march=native. Include this file only inside a namespace named after the ISA, so the
// copies compiled with different flags never meet at link time.
//
// Register blocking (AVX-512 float numbers; W = floats per register = 16; the double
// instantiation has half the lanes and the same register counts):
//
//   Q K^T, MR x NR registers: 6 query rows x 4 registers = 6 x 64 keys. Per step c of the
//   reduction over d: 4 loads of the packed K^T panel row, 6 broadcasts of q[r][c], 24 FMAs
//   into 24 accumulators that stay in registers for all d steps. K is packed once per head
//   into panels [d][64] so those 4 loads are contiguous; the panel (d * 64 floats = 16 KiB at
//   d = 64) stays in L1 while all query rows of the tile stream past it.
//
//   P V, MR x NR registers: 6 query rows x 4 registers = 6 x 64 output columns (d_v = 64 is one
//   block). Per key k: 4 loads of the row V[k], 6 broadcasts of P[r][k], 24 FMAs into 24
//   accumulators. The online-softmax rescale O <- exp2(m_old - m_new) * O (Algorithm 1, line
//   12) is folded into the accumulator load, so O is read and written once per tile.
//
// Both kernels do 24 FMAs per 10 loads, so they run at the FMA units' rate, as
// a GEMM does: that is what lets the tiled kernel approach sgemm's throughput.

template <class Arch, class T, std::size_t QK_MR, std::size_t QK_NR, std::size_t PV_MR, std::size_t PV_NR>
struct KernelSet {
  using batch = xsimd::batch<T, Arch>;
  static constexpr std::size_t W = batch::size;
  static constexpr std::size_t PW = QK_NR * W;  // keys per packed panel

  static void pack_k(const T* k, std::size_t ldk, std::size_t keys, std::size_t d,
                     T* panels) {
    const std::size_t npanels = (keys + PW - 1) / PW;
    for (std::size_t p = 0; p < npanels; ++p)
      for (std::size_t c = 0; c < d; ++c)
        for (std::size_t t = 0; t < PW; ++t) {
          const std::size_t key = p * PW + t;
          panels[(p * d + c) * PW + t] = key < keys ? k[key * ldk + c] : 0.0f;
        }
  }

  static void qk(const T* q, std::size_t d, std::size_t rows, const T* panels,
                 std::size_t npanels, T* s, std::size_t lds) {
    for (std::size_t p = 0; p < npanels; ++p) {
      const T* kp = panels + p * d * PW;
      for (std::size_t i0 = 0; i0 < rows; i0 += QK_MR) {
        batch acc[QK_MR][QK_NR];
#pragma GCC unroll 8
        for (std::size_t r = 0; r < QK_MR; ++r)
#pragma GCC unroll 4
          for (std::size_t v = 0; v < QK_NR; ++v) acc[r][v] = batch(T(0));
        const T* qr = q + i0 * d;
        for (std::size_t c = 0; c < d; ++c) {
          batch kb[QK_NR];
#pragma GCC unroll 4
          for (std::size_t v = 0; v < QK_NR; ++v) kb[v] = batch::load_unaligned(kp + c * PW + v * W);
#pragma GCC unroll 8
          for (std::size_t r = 0; r < QK_MR; ++r) {
            const batch qb(qr[r * d + c]);
#pragma GCC unroll 4
            for (std::size_t v = 0; v < QK_NR; ++v) acc[r][v] = xsimd::fma(qb, kb[v], acc[r][v]);
          }
        }
#pragma GCC unroll 8
        for (std::size_t r = 0; r < QK_MR; ++r)
#pragma GCC unroll 4
          for (std::size_t v = 0; v < QK_NR; ++v)
            acc[r][v].store_unaligned(s + (i0 + r) * lds + p * PW + v * W);
      }
    }
  }

  static T row_max(const T* s, std::size_t n) {
    batch m(-INFINITY);
    std::size_t j = 0;
    for (; j + W <= n; j += W) m = xsimd::max(m, batch::load_unaligned(s + j));
    alignas(64) T lanes[W];
    m.store_aligned(lanes);
    T r = -INFINITY;
    for (std::size_t t = 0; t < W; ++t) r = std::max(r, lanes[t]);
    for (; j < n; ++j) r = std::max(r, s[j]);
    return r;
  }

  // 2^x for x <= 0 (x = -inf allowed). In float: split x = n + f with n = round(x), |f| <= 1/2; 2^f is a
  // degree-6 polynomial fitted by scripts/fit_exp2.py (relative error 1.6e-8, below float32
  // rounding), and 2^n goes into the exponent. Results below 2^-126 are flushed to exactly 0:
  // masked (-inf) scores get zero weight, and no subnormal ever reaches the P V FMAs (where
  // it would cost a microcode assist).
  static batch exp2_poly(batch f) {
    batch p(T(1.534581243e-04));
    p = xsimd::fma(p, f, batch(T(1.339993090e-03)));
    p = xsimd::fma(p, f, batch(T(9.618489072e-03)));
    p = xsimd::fma(p, f, batch(T(5.550328642e-02)));
    p = xsimd::fma(p, f, batch(T(2.402264625e-01)));
    p = xsimd::fma(p, f, batch(T(6.931471825e-01)));
    return xsimd::fma(p, f, batch(T(1)));
  }

  static batch exp2_nonpositive(batch x) {
    if constexpr (std::is_same_v<T, double>) {
      // The float64 kernel serves reference-grade output, not speed: xsimd's own exp2 is
      // accurate to double precision. It converts round(x) to an integer inside, though, and
      // -inf (a masked score) has no integer value: that cast is undefined behaviour. Clamp
      // first (2^-1100 already rounds to 0, below the smallest subnormal 2^-1074) and give
      // masked lanes exactly 0 by select, so the -inf trap never reaches the cast.
      const batch floor(T(-1100));
      return xsimd::select(x < floor, batch(T(0)), xsimd::exp2(xsimd::max(x, floor)));
    } else {
#if defined(__AVX512F__)
      if constexpr (std::is_same_v<Arch, xsimd::avx512f>) {
        // "p * 2^n, or exactly 0 where x < -126" in two instructions: a compare into a mask
        // register and a zero-masked scalef. For x = -inf, f is NaN, but that lane is masked.
        const batch n = xsimd::nearbyint(x);  // round to nearest even: one vrndscaleps
        const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-126.0f), _CMP_GE_OQ);
        return _mm512_maskz_scalef_ps(keep, exp2_poly(x - n), n);
      }
#endif
      using ibatch = xsimd::batch<std::int32_t, Arch>;
      const batch xc = xsimd::max(x, batch(-127.0f));  // keeps f finite for x = -inf
      const batch n = xsimd::nearbyint(xc);
      const batch p = exp2_poly(xc - n);
      const ibatch bits = (xsimd::batch_cast<std::int32_t>(n) + ibatch(127)) << 23;
      const batch scale = xsimd::bitwise_cast<batch>(bits);
      return xsimd::select(xc < batch(-126.0f), batch(0.0f), p * scale);
    }
  }

  static T exp2_sum(T* s, std::size_t n, T m) {
    const batch mb(m);
    batch sum(0.0f);
    std::size_t j = 0;
    for (; j + W <= n; j += W) {
      const batch e = exp2_nonpositive(batch::load_unaligned(s + j) - mb);
      e.store_unaligned(s + j);
      sum += e;
    }
    alignas(64) T lanes[W];
    sum.store_aligned(lanes);
    T total = 0;
    for (std::size_t t = 0; t < W; ++t) total += lanes[t];
    for (; j < n; ++j) total += (s[j] = std::exp2(s[j] - m));
    return total;
  }

  // Keys per pass of the P V kernel: a 128-key slice of V (32 KiB at d_v = 64) stays in L1
  // while every row block of the tile streams past it; a whole 512-key block would not fit.
  static constexpr std::size_t PV_KEYS = 128;

  template <std::size_t NV>
  static void pv_columns(const T* p, std::size_t ldp, std::size_t rows, std::size_t keys,
                         const T* v, std::size_t ldv, const T* alpha, T* o,
                         std::size_t ldo) {
    for (std::size_t k0 = 0; k0 < keys; k0 += PV_KEYS) {
      const std::size_t k1 = std::min(keys, k0 + PV_KEYS);
      for (std::size_t i0 = 0; i0 < rows; i0 += PV_MR) {
        batch acc[PV_MR][NV];
#pragma GCC unroll 8
        for (std::size_t r = 0; r < PV_MR; ++r) {
          // The rescale of line 12, folded into the accumulator load of the first slice.
          const batch a(k0 == 0 ? alpha[i0 + r] : T(1));
#pragma GCC unroll 4
          for (std::size_t c = 0; c < NV; ++c)
            acc[r][c] = batch::load_unaligned(o + (i0 + r) * ldo + c * W) * a;
        }
        for (std::size_t k = k0; k < k1; ++k) {
          batch vb[NV];
#pragma GCC unroll 4
          for (std::size_t c = 0; c < NV; ++c) vb[c] = batch::load_unaligned(v + k * ldv + c * W);
#pragma GCC unroll 8
          for (std::size_t r = 0; r < PV_MR; ++r) {
            const batch pb(p[(i0 + r) * ldp + k]);
#pragma GCC unroll 4
            for (std::size_t c = 0; c < NV; ++c) acc[r][c] = xsimd::fma(pb, vb[c], acc[r][c]);
          }
        }
#pragma GCC unroll 8
        for (std::size_t r = 0; r < PV_MR; ++r)
#pragma GCC unroll 4
          for (std::size_t c = 0; c < NV; ++c) acc[r][c].store_unaligned(o + (i0 + r) * ldo + c * W);
      }
    }
  }

  static void pv(const T* p, std::size_t ldp, std::size_t rows, std::size_t keys,
                 const T* v, std::size_t ldv, std::size_t dvp, const T* alpha, T* o,
                 std::size_t ldo) {
    std::size_t c0 = 0;
    for (; c0 + PV_NR * W <= dvp; c0 += PV_NR * W)
      pv_columns<PV_NR>(p, ldp, rows, keys, v + c0, ldv, alpha, o + c0, ldo);
    // Narrower tails for d_v not a multiple of PV_NR registers (d_v is padded to W).
    for (; c0 < dvp; c0 += W) pv_columns<1>(p, ldp, rows, keys, v + c0, ldv, alpha, o + c0, ldo);
  }

  // W keys at a time: W independent accumulators, one per key, each a vector over d, summed
  // across lanes at the end. (xsimd 8.1's haddp, which would do the W sums in one transpose,
  // gives wrong lanes for AVX-512 floats: the tests caught it.)
  static void qk_unpacked(const T* q, std::size_t rows, std::size_t d, const T* k, std::size_t ldk,
                      std::size_t keys, T* s, std::size_t lds) {
    for (std::size_t r = 0; r < rows; ++r) {
      const T* qr = q + r * d;
      T* sr = s + r * lds;
      std::size_t j0 = 0;
      for (; j0 + W <= keys; j0 += W) {
        batch acc[W];
#pragma GCC unroll 16
        for (std::size_t t = 0; t < W; ++t) acc[t] = batch(T(0));
        std::size_t c = 0;
        for (; c + W <= d; c += W) {
          const batch qb = batch::load_unaligned(qr + c);
#pragma GCC unroll 16
          for (std::size_t t = 0; t < W; ++t)
            acc[t] = xsimd::fma(qb, batch::load_unaligned(k + (j0 + t) * ldk + c), acc[t]);
        }
#pragma GCC unroll 16
        for (std::size_t t = 0; t < W; ++t) sr[j0 + t] = xsimd::hadd(acc[t]);
        for (; c < d; ++c)  // d not a multiple of W
          for (std::size_t t = 0; t < W; ++t) sr[j0 + t] += qr[c] * k[(j0 + t) * ldk + c];
      }
      for (; j0 < keys; ++j0) {
        T dot = 0;
        for (std::size_t c = 0; c < d; ++c) dot += qr[c] * k[j0 * ldk + c];
        sr[j0] = dot;
      }
    }
  }

  // Four independent accumulators, so the adds never wait on each other and the loads set
  // the pace.
  static T sum(const T* x, std::size_t n) {
    batch acc[4] = {batch(T(0)), batch(T(0)), batch(T(0)), batch(T(0))};
    std::size_t j = 0;
    for (; j + 4 * W <= n; j += 4 * W)
#pragma GCC unroll 4
      for (std::size_t a = 0; a < 4; ++a) acc[a] += batch::load_unaligned(x + j + a * W);
    T total = xsimd::hadd((acc[0] + acc[1]) + (acc[2] + acc[3]));
    for (; j < n; ++j) total += x[j];
    return total;
  }

  static attn::flash::Microkernels<T> make(const char* isa) {
    return {isa, W, QK_MR, PW, PV_MR, &pack_k, &qk, &row_max, &exp2_sum, &pv, &qk_unpacked, &sum};
  }
};
