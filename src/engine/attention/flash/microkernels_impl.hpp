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

  // a * b + c, rounded once. xsimd 8 has no AVX-512 fused multiply-add of its own: its generic
  // one is a * b + c, which GCC contracts into one instruction and clang does not, so the same
  // source gave other bits under clang (the sanitizer build). The AVX-512 set calls the
  // instruction by name; xsimd's AVX2 set (fma3) already does.
  static batch fused(batch a, batch b, batch c) {
#if defined(__AVX512F__)
    if constexpr (std::is_same_v<Arch, xsimd::avx512f> && std::is_same_v<T, float>) return _mm512_fmadd_ps(a, b, c);
    if constexpr (std::is_same_v<Arch, xsimd::avx512f> && std::is_same_v<T, double>) return _mm512_fmadd_pd(a, b, c);
#endif
    return xsimd::fma(a, b, c);
  }

  static void pack_k(const T* k, std::size_t ldk, std::size_t keys, std::size_t d,
                     T* panels) {
    const std::size_t npanels = (keys + PW - 1) / PW;
    for (std::size_t p = 0; p < npanels; ++p)
      for (std::size_t t0 = 0; t0 < PW; t0 += W) {  // W keys at a time: one register's width
        const std::size_t key0 = p * PW + t0;
        T* out = panels + p * d * PW + t0;
        const std::size_t done = key0 + W <= keys ? transpose_keys(k + key0 * ldk, ldk, d, out) : 0;
        for (std::size_t c = done; c < d; ++c)
          for (std::size_t t = 0; t < W; ++t) out[c * PW + t] = key0 + t < keys ? k[(key0 + t) * ldk + c] : T(0);
      }
  }

  // Dims [0, done) of W keys (rows of k) into their place in a panel, out[c * PW + t] = k[t][c],
  // a W x W block at a time, transposed in registers where this set has the shuffles (float on
  // AVX-512 and AVX2); returns done, a multiple of W (0 elsewhere: pack_k's scalar loop does
  // all). Element by element, strided, the packing of a head at n = 4096 took as long as 2 % of
  // its products.
  static std::size_t transpose_keys([[maybe_unused]] const T* k, [[maybe_unused]] std::size_t ldk,
                                    [[maybe_unused]] std::size_t d,
                                    [[maybe_unused]] T* out) {
    std::size_t c0 = 0;
#if defined(__AVX512F__)
    if constexpr (std::is_same_v<T, float> && W == 16) {
      for (; c0 + 16 <= d; c0 += 16) {
        __m512 r[16];
        for (std::size_t t = 0; t < 16; ++t) r[t] = _mm512_loadu_ps(k + t * ldk + c0);
        attn::detail::transpose16(r);
        for (std::size_t c = 0; c < 16; ++c) _mm512_storeu_ps(out + (c0 + c) * PW, r[c]);
      }
    }
#endif
#if defined(__AVX2__)
    if constexpr (std::is_same_v<T, float> && W == 8) {
      for (; c0 + 8 <= d; c0 += 8) {
        __m256 r[8];
        for (std::size_t t = 0; t < 8; ++t) r[t] = _mm256_loadu_ps(k + t * ldk + c0);
        attn::detail::transpose8(r);
        for (std::size_t c = 0; c < 8; ++c) _mm256_storeu_ps(out + (c0 + c) * PW, r[c]);
      }
    }
#endif
    return c0;
  }

  // The Q K^T kernel as a general product (the toy transformer's linear layers run on it too):
  //   C[r, 0..npanels*PW) (+)= sum_c A(r, c) B[c, ..]   r < rows (a multiple of QK_MR), c < depth
  // A(r, c) = a[r * ars + c * acs]; B is packed as pack_k's panels [npanels][depth][PW]. Each
  // output sums its terms in c order, whatever the ISA.
  static void gemm(const T* a, std::size_t ars, std::size_t acs, std::size_t depth, std::size_t rows,
                   const T* panels, std::size_t npanels, T* out, std::size_t ldo, bool accumulate) {
    gemm_with<false, false>(a, ars, acs, depth, rows, panels, npanels, out, ldo, accumulate, nullptr);
  }

  // gemm, and with LaneMax each output row's running maximum per lane (qk's lane_max). With
  // AskAhead, the next panel asked into L2 (below ask_into): qk's panels are a head's K, packed
  // once and read again by every query tile, gone from L2 in between; gemm's callers pack B just
  // before the product, so it is still there.
  template <bool LaneMax, bool AskAhead>
  static void gemm_with(const T* a, std::size_t ars, std::size_t acs, std::size_t depth, std::size_t rows,
                        const T* panels, std::size_t npanels, T* out, std::size_t ldo, bool accumulate,
                        T* lane_max) {
    const std::size_t blocks = rows / QK_MR;
    for (std::size_t p = 0; p < npanels; ++p) {
      const T* kp = panels + p * depth * PW;
      for (std::size_t i0 = 0; i0 < rows; i0 += QK_MR) {
        if (AskAhead && p + 1 < npanels && blocks > 1) {  // the next panel, a share of it per row block
          const attn::flash::Share lines = attn::flash::share_of(depth * PW * sizeof(T) / 64, i0 / QK_MR, blocks);
          ask_into<2>(kp + depth * PW, lines.first * 64, lines.end * 64);
        }
        T* o = out + i0 * ldo + p * PW;
        batch acc[QK_MR][QK_NR];
#pragma GCC unroll 8
        for (std::size_t r = 0; r < QK_MR; ++r)
#pragma GCC unroll 4
          for (std::size_t v = 0; v < QK_NR; ++v)
            acc[r][v] = accumulate ? batch::load_unaligned(o + r * ldo + v * W) : batch(T(0));
        const T* ar = a + i0 * ars;
        // Unrolled: at d = 64 a block is 64 steps of 12 FMAs, and GCC kept one step a turn (a
        // compare and branch every 12 FMAs, a loop exit every 64 steps). Alternated in one process
        // on a Zen 3 EPYC (a 96 x 768 tile, 31 rounds), 1.04-1.15x the speed (seven runs' medians
        // of the rounds' ratios), the gain in the machine's slow moments; the fastest rounds ran
        // as fast either way. Not timed on AVX-512. The same sums in the same order.
#pragma GCC unroll 8
        for (std::size_t c = 0; c < depth; ++c) {
          batch kb[QK_NR];
#pragma GCC unroll 4
          for (std::size_t v = 0; v < QK_NR; ++v) kb[v] = batch::load_unaligned(kp + c * PW + v * W);
#pragma GCC unroll 8
          for (std::size_t r = 0; r < QK_MR; ++r) {
            const batch qb(ar[r * ars + c * acs]);
#pragma GCC unroll 4
            for (std::size_t v = 0; v < QK_NR; ++v) acc[r][v] = fused(qb, kb[v], acc[r][v]);
          }
        }
#pragma GCC unroll 8
        for (std::size_t r = 0; r < QK_MR; ++r)
#pragma GCC unroll 4
          for (std::size_t v = 0; v < QK_NR; ++v) acc[r][v].store_unaligned(o + r * ldo + v * W);
        if constexpr (LaneMax) {
          // A few vmaxps on registers already loaded: row_max's pass read S back from L2 (a
          // 192 x 768 tile is 576 KiB), 4 % of a float32 flash run on an Emerald Rapids Xeon.
#pragma GCC unroll 8
          for (std::size_t r = 0; r < QK_MR; ++r) {
            batch m = acc[r][0];
#pragma GCC unroll 4
            for (std::size_t v = 1; v < QK_NR; ++v) m = xsimd::max(m, acc[r][v]);
            T* lm = lane_max + (i0 + r) * W;
            if (p > 0) m = xsimd::max(batch::load_unaligned(lm), m);
            m.store_unaligned(lm);
          }
        }
      }
    }
  }

  static void qk(const T* q, std::size_t d, std::size_t rows, const T* panels,
                 std::size_t npanels, T* s, std::size_t lds, T* lane_max) {
    if (lane_max) gemm_with<true, true>(q, d, 1, d, rows, panels, npanels, s, lds, false, lane_max);
    else gemm_with<false, true>(q, d, 1, d, rows, panels, npanels, s, lds, false, nullptr);
  }

  // The max of W lanes (qk's lane_max of one row; row_max's running maxima).
  static T lane_max_of(const T* lanes) {
    T r = -INFINITY;
    for (std::size_t t = 0; t < W; ++t) r = std::max(r, lanes[t]);
    return r;
  }

  static T row_max(const T* s, std::size_t n) {
    // Four running maxima: with one, each register waited for the last max (vmaxps's latency,
    // 4 cycles): 4 % of a float32 flash run on an Emerald Rapids Xeon. The max is exact, so
    // any order gives the same value (NaN scores aside: vmaxps keeps or drops a NaN by the
    // operand it is in, so there the order decides, as it did with one running maximum).
    batch m(-INFINITY), m1 = m, m2 = m, m3 = m;
    std::size_t j = 0;
    for (; j + 4 * W <= n; j += 4 * W) {
      m = xsimd::max(m, batch::load_unaligned(s + j));
      m1 = xsimd::max(m1, batch::load_unaligned(s + j + W));
      m2 = xsimd::max(m2, batch::load_unaligned(s + j + 2 * W));
      m3 = xsimd::max(m3, batch::load_unaligned(s + j + 3 * W));
    }
    m = xsimd::max(xsimd::max(m, m1), xsimd::max(m2, m3));
    for (; j + W <= n; j += W) m = xsimd::max(m, batch::load_unaligned(s + j));
    alignas(64) T lanes[W];
    m.store_aligned(lanes);
    T r = lane_max_of(lanes);
    for (; j < n; ++j) r = std::max(r, s[j]);
    return r;
  }

  // 2^x for x <= 0 (x = -inf allowed). In float: split x = n + f with n = floor(x), 0 <= f <= 1
  // (f is 1 only where x - floor(x) rounds up, for x just under 0); 2^f is a degree-6
  // polynomial fitted by scripts/fit_exp2.py (relative error 7.3e-9, below float32 rounding),
  // and 2^n goes into the exponent. Results below 2^-126 are flushed to exactly 0:
  // masked (-inf) scores get zero weight, and no subnormal ever reaches the P V FMAs (where
  // it would cost a microcode assist).
  static batch exp2_nonpositive(batch x) {
    batch xs[1] = {x};
    exp2_nonpositive_each(xs);
    return xs[0];
  }

  // exp2_nonpositive on K registers in place. The float split without AVX512DQ runs each step
  // across all K, so that K independent chains are in flight (exp2_sum says what that bought);
  // the other paths take one register at a time.
  template <std::size_t K>
  static void exp2_nonpositive_each(batch (&x)[K]) {
    if constexpr (std::is_same_v<T, double>) {
      // The float64 kernel serves reference-grade output, not speed: xsimd's own exp2 is
      // accurate to double precision. It converts round(x) to an integer inside, though, and
      // -inf (a masked score) has no integer value: that cast is undefined behaviour. Clamp
      // first (2^-1100 already rounds to 0, below the smallest subnormal 2^-1074) and give
      // masked lanes exactly 0 by select, so the -inf trap never reaches the cast.
      const batch floor(T(-1100));
      for (std::size_t k = 0; k < K; ++k)
        x[k] = xsimd::select(x[k] < floor, batch(T(0)), xsimd::exp2(xsimd::max(x[k], floor)));
    }
#if defined(__AVX512F__) && defined(__AVX512DQ__)  // vreduceps is AVX512DQ
    else if constexpr (std::is_same_v<Arch, xsimd::avx512f>) {
      // f = x - floor(x) is one vreduceps, and scalef multiplies by 2^floor(x) itself, so n is
      // never made: 2 instructions fewer than rounding and subtracting (vrndscaleps is 2 uops
      // on Intel's cores), which the P V FMAs need on Intel's 2 vector ports. "Exactly 0 where
      // x < -126": a compare into a mask register and a zero-masked scalef (for x = -inf that
      // lane is masked, whatever f is).
      for (std::size_t k = 0; k < K; ++k) {
        const batch f[1] = {_mm512_reduce_ps(x[k], _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)};
        const __mmask16 keep = _mm512_cmp_ps_mask(x[k], _mm512_set1_ps(-126.0f), _CMP_GE_OQ);
        batch p[1];
        exp2_poly_each(f, p);
        x[k] = _mm512_maskz_scalef_ps(keep, p[0], x[k]);
      }
    }
#endif
    else {
      // 2^n from the float n in [-127, 0] without a conversion: n + (2^23 + 127) is exact, with
      // n + 127 in its low mantissa bits; a shift by 23 moves those into the exponent field and
      // pushes the sum's own exponent out. For n = -127 (x < -126) the field is 0: the scale is
      // +0, and so is the result, as "exactly 0 below 2^-126" asks, with no compare and select.
      // Otherwise p (in [1, 2]) times 2^n is normal, so exact. Against a conversion, an integer
      // add and a select on the result, the same bits in 3 instructions fewer, and a shorter
      // chain from x to the result: on a Zen 3 EPYC the loop waits on that chain (its FP
      // scheduler holds too few iterations to cover it), and exp2_sum, in a loop of its own, took
      // 0.80-0.84 of the time (two runs, alternated in one process).
      using ibatch = xsimd::batch<std::int32_t, Arch>;
      batch n[K], f[K], p[K];
#pragma GCC unroll 8
      for (std::size_t k = 0; k < K; ++k) {
        const batch xc = xsimd::max(x[k], batch(T(-127)));  // keeps f finite for x = -inf
        n[k] = xsimd::floor(xc);
        f[k] = xc - n[k];
      }
      exp2_poly_each(f, p);
#pragma GCC unroll 8
      for (std::size_t k = 0; k < K; ++k) {
        const ibatch bits = xsimd::bitwise_cast<ibatch>(n[k] + batch(T(8388608 + 127))) << 23;
        x[k] = p[k] * xsimd::bitwise_cast<batch>(bits);
      }
    }
  }

  // Horner's steps for 2^f (exp2_nonpositive), each step across K registers.
  template <std::size_t K>
  static void exp2_poly_each(const batch (&f)[K], batch (&p)[K]) {
    constexpr double c[] = {1.243968843e-03, 9.678840637e-03, 5.548334122e-02, 2.402298301e-01, 6.931470037e-01, 1};
#pragma GCC unroll 8
    for (std::size_t k = 0; k < K; ++k) p[k] = batch(T(2.170225489e-04));
#pragma GCC unroll 8
    for (double ci : c)
#pragma GCC unroll 8
      for (std::size_t k = 0; k < K; ++k) p[k] = fused(p[k], f[k], batch(T(ci)));
  }

  static T exp2_sum(T* s, std::size_t n, T m) {
    const batch mb(m);
    batch sum(0.0f);
    std::size_t j = 0;
    // Four registers a step (exp2_nonpositive_each), summed in the order one at a time would:
    // the same bits. On a Zen 3 EPYC, alternated in one process on rows in L1, a register took
    // 5.7 cycles against 6.2 one at a time (2, 6 and 8 a step: 5.8, 6.0, 6.4); in flash,
    // bench --parts put a score's softmax at 12.3-12.5 multiply-adds against 12.9-13.1.
    constexpr std::size_t K = 4;
    for (; j + K * W <= n; j += K * W) {
      batch e[K];
#pragma GCC unroll 8
      for (std::size_t k = 0; k < K; ++k) e[k] = batch::load_unaligned(s + j + k * W) - mb;
      exp2_nonpositive_each(e);
#pragma GCC unroll 8
      for (std::size_t k = 0; k < K; ++k) {
        e[k].store_unaligned(s + j + k * W);
        sum += e[k];
      }
    }
    for (; j + W <= n; j += W) {
      const batch e = exp2_nonpositive(batch::load_unaligned(s + j) - mb);
      e.store_unaligned(s + j);
      sum += e;
    }
    if (j < n) {  // the last n - j values, in one register padded with -inf (exp2 gives 0 there)
      alignas(64) T tail[W];
      for (std::size_t t = 0; t < W; ++t) tail[t] = j + t < n ? s[j + t] : -T(INFINITY);
      const batch e = exp2_nonpositive(batch::load_aligned(tail) - mb);
      e.store_aligned(tail);
      std::copy(tail, tail + (n - j), s + j);
      sum += e;
    }
    alignas(64) T lanes[W];
    sum.store_aligned(lanes);
    T total = 0;
    for (std::size_t t = 0; t < W; ++t) total += lanes[t];
    return total;
  }

  template <std::size_t MR, std::size_t NV, class VT>
  static void pv_columns(const T* p, std::size_t ldp, std::size_t rows, std::size_t keys,
                         const VT* v, std::size_t ldv, const T* alpha, T* o,
                         std::size_t ldo, attn::flash::NearPrefetch near) {
    // Keys per pass (kPvSliceBytes): a slice of V's NV registers of columns that stays in L1.
    constexpr std::size_t PV_KEYS =
        std::max(attn::flash::kPvSliceKeys, attn::flash::kPvSliceBytes / (NV * W * sizeof(VT)));
    const std::size_t blocks = rows / MR;
    for (std::size_t k0 = 0; k0 < keys; k0 += PV_KEYS) {
      const std::size_t k1 = std::min(keys, k0 + PV_KEYS), next = std::min(keys, k1 + PV_KEYS) - k1;
      for (std::size_t i0 = 0; i0 < rows; i0 += MR) {
        if (next && blocks > 1) {  // the next slice's rows of V, a share of them per row block
          const attn::flash::Share ahead = attn::flash::share_of(next, i0 / MR, blocks);
          for (std::size_t k = k1 + ahead.first; k < k1 + ahead.end; ++k)
            ask_into<2>(v + k * ldv, 0, NV * W * sizeof(VT));
        }
        batch acc[MR][NV];
#pragma GCC unroll 8
        for (std::size_t r = 0; r < MR; ++r) {
          // The rescale of line 12, folded into the accumulator load of the first slice.
          const batch a(k0 == 0 ? alpha[i0 + r] : T(1));
#pragma GCC unroll 8
          for (std::size_t c = 0; c < NV; ++c)
            acc[r][c] = batch::load_unaligned(o + (i0 + r) * ldo + c * W) * a;
        }
        // Unrolled for the same reason as qk's steps (a compare and branch every 12 FMAs at 6 x 2):
        // P V alone (96 x 768 P, d_v = 64, alternated in one process on a Zen 3 EPYC) 1.08-1.10x
        // the speed in the machine's slow moments, as fast in its quick ones; 8 steps a turn,
        // 1.06-1.12x, no clearer a gain for twice the code. The same sums in the same order.
#pragma GCC unroll 4
        for (std::size_t k = k0; k < k1; ++k) {
          if constexpr (std::is_same_v<VT, std::uint16_t>)  // by the first block of rows only
            if (i0 == 0 && near.keys && near.keys < near.readable && k < near.readable - near.keys)
              ask_into<3>(v + (k + near.keys) * ldv, 0, NV * W * sizeof(VT));
          batch vb[NV];
#pragma GCC unroll 8
          for (std::size_t c = 0; c < NV; ++c) vb[c] = load_k(v + k * ldv + c * W);
#pragma GCC unroll 8
          for (std::size_t r = 0; r < MR; ++r) {
            const batch pb(p[(i0 + r) * ldp + k]);
#pragma GCC unroll 8
            for (std::size_t c = 0; c < NV; ++c) acc[r][c] = fused(pb, vb[c], acc[r][c]);
          }
        }
#pragma GCC unroll 8
        for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 8
          for (std::size_t c = 0; c < NV; ++c) acc[r][c].store_unaligned(o + (i0 + r) * ldo + c * W);
      }
    }
  }

  // rows (a multiple of MR) in blocks of MR: pv_any gives a decode step's one to few rows
  // blocks of their own size, so that no FMA is spent on padding rows. One or two rows take
  // panels of up to 8 / MR registers (8 accumulators), where the set's PV_NR would give one row
  // only PV_NR chains of FMAs, each waiting on its last: on AVX2 (PV_NR = 2) a decode step's one
  // row then spent 4 cycles a key on each 16-column panel, and read V a panel at a time. The
  // same sums in the same order either way: only which columns share a pass changes.
  template <std::size_t MR, class VT>
  static void pv_block(const T* p, std::size_t ldp, std::size_t rows, std::size_t keys, const VT* v,
                       std::size_t ldv, std::size_t dvp, const T* alpha, T* o, std::size_t ldo,
                       attn::flash::NearPrefetch near) {
    constexpr std::size_t WIDE = std::max<std::size_t>(PV_NR, 8 / MR);
    std::size_t c0 = 0;
    if constexpr (WIDE > PV_NR)
      for (; c0 + WIDE * W <= dvp; c0 += WIDE * W)
        pv_columns<MR, WIDE>(p, ldp, rows, keys, v + c0, ldv, alpha, o + c0, ldo, near);
    for (; c0 + PV_NR * W <= dvp; c0 += PV_NR * W)
      pv_columns<MR, PV_NR>(p, ldp, rows, keys, v + c0, ldv, alpha, o + c0, ldo, near);
    // Narrower tails for d_v not a multiple of PV_NR registers (d_v is padded to W).
    for (; c0 < dvp; c0 += W) pv_columns<MR, 1>(p, ldp, rows, keys, v + c0, ldv, alpha, o + c0, ldo, near);
  }

  template <class VT>
  static void pv_any(const T* p, std::size_t ldp, std::size_t rows, std::size_t keys, const VT* v,
                     std::size_t ldv, std::size_t dvp, const T* alpha, T* o, std::size_t ldo,
                     attn::flash::NearPrefetch near = {}) {
    std::size_t full = rows / PV_MR * PV_MR;
    // The rows left over go in blocks of 2 to 4, never one alone where there is a choice: one
    // row's outputs are NV chains of FMAs, each waiting on its last (4 cycles), where a block of
    // two or more keeps both FMA units busy. A decode step's GQA rows are such leftovers (8 query
    // heads to a KV head: 6 + 2, not 6 + 1 + 1; 3 heads: one block of 3, not 3 x 1).
    if (rows - full == 1 && full >= PV_MR && PV_MR > 1) full -= PV_MR;
    if (full > 0) pv_block<PV_MR>(p, ldp, full, keys, v, ldv, dvp, alpha, o, ldo, near);
    for (std::size_t r0 = full; r0 < rows;) {
      const std::size_t left = rows - r0, n = left == 5 ? 3 : std::min<std::size_t>(left, 4);
      const T* pr = p + r0 * ldp;
      T* orow = o + r0 * ldo;
      const Near ask = r0 == 0 ? near : Near{};  // V's rows asked for once, by the first rows
      switch (n) {
        case 4: pv_block<4>(pr, ldp, n, keys, v, ldv, dvp, alpha + r0, orow, ldo, ask); break;
        case 3: pv_block<3>(pr, ldp, n, keys, v, ldv, dvp, alpha + r0, orow, ldo, ask); break;
        case 2: pv_block<2>(pr, ldp, n, keys, v, ldv, dvp, alpha + r0, orow, ldo, ask); break;
        default: pv_block<1>(pr, ldp, n, keys, v, ldv, dvp, alpha + r0, orow, ldo, ask); break;
      }
      r0 += n;
    }
  }

  // pv on V packed in panels of PV_NR registers (Microkernels::pv_panels): each pass of
  // pv_columns reads its panel's rows one after another, where rows of dvp put one pass's
  // 64 bytes of a key a row apart. Alternated in one process on a Zen 3 EPYC (192 x 768 P, d_v =
  // 64, AVX2's 16-column passes): 1.05-1.33x the speed of rows at a stride of 80. A d_v that is
  // not whole panels ends in one-register passes over the last panel.
  static void pv_panels(const T* p, std::size_t ldp, std::size_t rows, std::size_t keys, const T* v,
                        std::size_t panel_stride, std::size_t dvp, const T* alpha, T* o, std::size_t ldo) {
    constexpr std::size_t PC = PV_NR * W;
    std::size_t c0 = 0;
    for (; c0 + PC <= dvp; c0 += PC)
      pv_columns<PV_MR, PV_NR>(p, ldp, rows, keys, v + c0 / PC * panel_stride, PC, alpha, o + c0, ldo, Near{});
    for (; c0 < dvp; c0 += W)
      pv_columns<PV_MR, 1>(p, ldp, rows, keys, v + c0 / PC * panel_stride + c0 % PC, PC, alpha, o + c0, ldo, Near{});
  }

  // This set's products as blockings offered to `attn-cli tune` (microkernels.hpp).
  static attn::flash::QkBlocking<T> qk_blocking() {
    return {std::to_string(QK_MR) + "x" + std::to_string(QK_NR), QK_MR, PW, &pack_k, &qk, &gemm};
  }
  static attn::flash::PvBlocking<T> pv_blocking() {
    return {std::to_string(PV_MR) + "x" + std::to_string(PV_NR), PV_MR, PV_NR * W, &pv, &pv_bf16, &pv_panels};
  }
  static const attn::flash::Blockings<T>* own_blockings() {
    static const attn::flash::Blockings<T> own{{qk_blocking()}, {pv_blocking()}};
    return &own;
  }

  static void pv(const T* p, std::size_t ldp, std::size_t rows, std::size_t keys, const T* v,
                 std::size_t ldv, std::size_t dvp, const T* alpha, T* o, std::size_t ldo) {
    pv_any(p, ldp, rows, keys, v, ldv, dvp, alpha, o, ldo);
  }
  static void pv_bf16(const T* p, std::size_t ldp, std::size_t rows, std::size_t keys, const std::uint16_t* v,
                      std::size_t ldv, std::size_t dvp, const T* alpha, T* o, std::size_t ldo,
                      attn::flash::NearPrefetch near) {
    pv_any(p, ldp, rows, keys, v, ldv, dvp, alpha, o, ldo, near);
  }

  // The prefill's prefetch (qk's gemm_with and pv_columns). What the first row block of a K panel or
  // a slice of V reads comes from L3 otherwise: a query tile's scores (576 KiB at 192 x 768) and
  // the head's K and V (2 MiB at n = 4096, d = 64) do not all stay in a 2 MiB L2 from one query
  // tile to the next. So while the row blocks walk one panel (slice), each asks its share
  // (share_of) of the next into L2; L1's own prefetcher takes it from there. Only where there are
  // several row blocks to share it. A decode step never runs it: its Q K^T reads K in place
  // (qk_unpacked), and its P V calls are one slice long (kBlockKeys = kPvSliceKeys), with a
  // prefetch of their own (flash_decode.cpp). Alternated in one process at n = 4096, H = 8, d = 64
  // on an Emerald Rapids Xeon: 1.014-1.019x the speed without it on 1 thread, 1.015-1.020x on 2
  // (two runs of 12-16 rounds each); the panel's part alone 1.010. The same bits: only hints.
  //
  // ask_into: bytes [from, to) of p, a line at a time, asked into L1 (Locality 3: a row a decode step
  // reads soon) or L2 (2): read hints, never a fault. A row that does not start on a line leaves
  // its last line to the next row's first.
  template <int Locality, class E>
  [[gnu::always_inline]] static void ask_into(const E* p, std::size_t from, std::size_t to) {
    const char* b = reinterpret_cast<const char*>(p);
    for (std::size_t off = from; off < to; off += 64) __builtin_prefetch(b + off, 0, Locality);
  }

  using Near = attn::flash::NearPrefetch;  // Near{}: none

  // out[t] = the sum of acc[t]'s lanes, t < W. Where the instruction set has the shuffles (float
  // on AVX-512 and AVX2), as one transpose-and-add tree: each level adds pairs of vectors after
  // interleaving them, halving the vectors and doubling the keys per vector, until one vector
  // holds the W sums in key order: 3 (W - 1) instructions for all W sums, where W separate
  // horizontal sums take about 8 each (and were what bounded the one-row decode kernel).
  // Elsewhere, W horizontal sums. (xsimd 8.1's haddp, which would do this, gives wrong lanes for
  // AVX-512 floats: the tests caught it.)
  static void lane_sums(const batch* acc, T* out) {
#if defined(__AVX512F__)
    if constexpr (std::is_same_v<T, float> && W == 16) {
      // Level 1, keys (2i, 2i+1): in each 128-bit lane [a0+a2, b0+b2, a1+a3, b1+b3].
      __m512 l1[8];
      for (std::size_t i = 0; i < 8; ++i) {
        const __m512 a = acc[2 * i], b = acc[2 * i + 1];
        l1[i] = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
      }
      // Level 2, keys 4i .. 4i+3: each 128-bit lane holds one partial sum of each, in order.
      __m512 l2[4];
      for (std::size_t i = 0; i < 4; ++i) {
        const __m512d x = _mm512_castps_pd(l1[2 * i]), y = _mm512_castps_pd(l1[2 * i + 1]);
        l2[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
      }
      // Levels 3 and 4 add 128-bit lanes: [u.L0 + u.L1, u.L2 + u.L3, v.L0 + v.L1, v.L2 + v.L3].
      auto add_lane_pairs = [](__m512 u, __m512 v) {
        return _mm512_add_ps(_mm512_shuffle_f32x4(u, v, _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(u, v, _MM_SHUFFLE(3, 1, 3, 1)));
      };
      const __m512 keys0_7 = add_lane_pairs(l2[0], l2[1]), keys8_15 = add_lane_pairs(l2[2], l2[3]);
      _mm512_storeu_ps(out, add_lane_pairs(keys0_7, keys8_15));
      return;
    }
#endif
#if defined(__AVX2__)
    if constexpr (std::is_same_v<T, float> && W == 8) {
      const __m256 l2[2] = {levels_1_2(acc), levels_1_2(acc + 4)};
      _mm256_storeu_ps(out, _mm256_add_ps(_mm256_permute2f128_ps(l2[0], l2[1], 0x20),
                                          _mm256_permute2f128_ps(l2[0], l2[1], 0x31)));
      return;
    }
#endif
    for (std::size_t t = 0; t < W; ++t) out[t] = xsimd::hadd(acc[t]);
  }

#if defined(__AVX2__)
  // lane_sums' first two levels on AVX2 for 4 accumulators: within each 128-bit lane, one partial
  // sum of each, in order. A template, so that only the float sets that call it compile its body.
  template <std::size_t = 0>
  static __m256 levels_1_2(const batch* acc) {
    __m256 l1[2];
    for (std::size_t i = 0; i < 2; ++i) {
      const __m256 a = acc[2 * i], b = acc[2 * i + 1];
      l1[i] = _mm256_add_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b));
    }
    const __m256d x = _mm256_castps_pd(l1[0]), y = _mm256_castps_pd(l1[1]);
    return _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(x, y)), _mm256_castpd_ps(_mm256_unpackhi_pd(x, y)));
  }
#endif

  // lane_sums of N accumulators, each sum by the same tree as lane_sums gives it (so a score's
  // bits do not depend on how many are summed beside it): W at a time, and on AVX2's floats a
  // last 4 by the tree's first two levels and then its last (the two 128-bit halves added).
  template <std::size_t N>
  static void lane_sums_n(const batch* acc, T* out) {
    for (std::size_t i = 0; i + W <= N; i += W) lane_sums(acc + i, out + i);
    if constexpr (N % W != 0) {
#if defined(__AVX2__)
      if constexpr (std::is_same_v<T, float> && W == 8) {
        static_assert(N % W == 4);
        const __m256 l2 = levels_1_2(acc + N - 4);
        _mm_storeu_ps(out + N - 4, _mm_add_ps(_mm256_castps256_ps128(l2), _mm256_extractf128_ps(l2, 1)));
      } else
#endif
      {
        // lane_sums' own horizontal sums (AVX-512's floats have a tree of their own: not here)
        static_assert(!(std::is_same_v<T, float> && W == 16));
        for (std::size_t t = N / W * W; t < N; ++t) out[t] = xsimd::hadd(acc[t]);
      }
    }
  }

  // One K element as T: itself, or the float whose high half a bfloat16's bits are.
  static T widen_one(T x) { return x; }
  static T widen_one(std::uint16_t bits) { return T(std::bit_cast<float>(std::uint32_t(bits) << 16)); }

  // W consecutive K elements as a vector: loaded, or for bfloat16 bits widened in registers (each
  // 16-bit value moved to the high half of a 32-bit lane, the low half zero), so no widened copy
  // of K is written and read back.
  static batch load_k(const T* p) { return batch::load_unaligned(p); }
  static batch load_k(const std::uint16_t* p) {
#if defined(__AVX512BW__)
    if constexpr (std::is_same_v<T, float> && W == 16) {
      // One vpermw with a zeroing mask: word 2i + 1 takes bfloat16 i, word 2i is zeroed. Zero-
      // extending then shifting takes a second instruction, on a port the FMAs also need: one
      // row's P V spent 6 cycles a key where it now spends 4 (on an Emerald Rapids Xeon, a
      // bfloat16 decode step on 2 threads went from 0.62-0.70 of a streaming read to 0.68-0.79).
      const __m512i to_high = _mm512_set_epi16(15, 0, 14, 0, 13, 0, 12, 0, 11, 0, 10, 0, 9, 0, 8, 0, 7, 0, 6, 0, 5,
                                               0, 4, 0, 3, 0, 2, 0, 1, 0, 0, 0);
      const __m512i x = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
      return batch(_mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xAAAAAAAAu, to_high, x)));
    }
#elif defined(__AVX512F__)
    if constexpr (std::is_same_v<T, float> && W == 16) {
      const __m512i x = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
      return batch(_mm512_castsi512_ps(_mm512_slli_epi32(x, 16)));
    }
#endif
#if defined(__AVX2__)
    if constexpr (std::is_same_v<T, float> && W == 8) {
      const __m256i x = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
      return batch(_mm256_castsi256_ps(_mm256_slli_epi32(x, 16)));
    }
#endif
    alignas(64) T lanes[W];
    for (std::size_t i = 0; i < W; ++i) lanes[i] = widen_one(p[i]);
    return batch::load_aligned(lanes);
  }

  // Scores of rows read in place against keys read in place: BR rows x BT keys at a time, BR x
  // BT accumulators, each a vector over d, summed across lanes at the end by lane_sums_n (the
  // dot products come out in the order r * BT + t). One row takes W keys at a time (1 x W):
  // each K vector is loaded once. Several rows against the same keys (GQA's query heads of one
  // KV head, or a few queries) take QK_BR rows (qk_row_block): one load of a K vector serves
  // QK_BR rows and one load of a Q vector the block's keys, where one row at a time would load
  // every K vector once per row. KV is T, or std::uint16_t for a bfloat16 K, widened as it is
  // loaded.
  static constexpr std::size_t QK_BR = W >= 4 ? 4 : W, QK_BT = W / QK_BR;
  // Keys a block of QK_BR rows takes at a time. On AVX2's floats 3, not QK_BT = 2: 12
  // accumulators (with 3 K vectors and a Q vector, AVX2's 16 registers), 12 chains of FMAs side
  // by side where 8 left the FMA units waiting on the chains' latency and on each block's lane
  // sums. On a Zen 3 EPYC, alternated in one process: 4 rows against 2048 keys from L2, 37 -> 49
  // GFLOP/s; 8 rows (GQA 8:1) from memory, 1.36x (1.45x with the passes below). AVX-512's 4 x 4
  // already holds 16 accumulators.
  static constexpr std::size_t QK_BT_WIDE = std::is_same_v<T, float> && W == 8 ? 3 : QK_BT;
  // Keys per pass over K where there are more rows than one block (qk_rows), so that the rows
  // after the first block find the pass's K rows in L1 or L2 (a decode run holds up to 2048 keys:
  // 512 KiB at d = 64; 8 rows from memory, 1.07x as fast as whole runs). A multiple of W and
  // QK_BT: each key is in the same key group as in one pass, so the same bits.
  static constexpr std::size_t kQkPassKeys = 128;
  static_assert(kQkPassKeys % W == 0 && kQkPassKeys % QK_BT == 0);

  // A bfloat16 K's rows [j0 + near.keys, + n) asked into L1 while keys [j0, j0 + n) are read, where
  // they lie within the readable keys (NearPrefetch); a float K asks in flash_decode.cpp.
  template <class KV>
  [[gnu::always_inline]] static void ask_keys_ahead(const KV* k, std::size_t j0, std::size_t n, std::size_t ldk,
                                                    attn::flash::NearPrefetch near) {
    if constexpr (std::is_same_v<KV, std::uint16_t>)
      if (near.keys && near.keys < near.readable && j0 + n <= near.readable - near.keys)
        ask_into<3>(k + (j0 + near.keys) * ldk, 0, n * ldk * sizeof(KV));
  }

  // a * b + c for qk_block's last columns: rounded once where the target has FMAs, as the vector
  // sums are, else twice. Written as a * b + c, GCC contracted it into an FMA in one block size's
  // kernel and not in another's (tests/test_decode_tuning.cpp caught it: with asks, 16-key steps
  // put keys in 4 x 1 blocks that are otherwise in 4 x 3), so a score's bits depended on the keys
  // beside it.
  static T scalar_fused(T a, T b, T c) {
#if defined(__FMA__) || (defined(__FP_FAST_FMA) && defined(__FP_FAST_FMAF))
    return std::fma(a, b, c);
#else
    return a * b + c;  // no FMA instruction to contract it into
#endif
  }

  template <std::size_t BR, std::size_t BT, class KV>
  static void qk_block(const T* q, std::size_t d, const KV* k, std::size_t ldk, std::size_t keys, T* s,
                       std::size_t lds, attn::flash::NearPrefetch near) {
    constexpr std::size_t N = BR * BT;
    std::size_t j0 = 0;
    for (; j0 + BT <= keys; j0 += BT) {
      ask_keys_ahead(k, j0, BT, ldk, near);
      batch acc[N];
#pragma GCC unroll 16
      for (std::size_t t = 0; t < N; ++t) acc[t] = batch(T(0));
      const std::size_t c_end = d / W * W;
      for (std::size_t c = 0; c < c_end; c += W) {
        batch kb[BT];
#pragma GCC unroll 16
        for (std::size_t t = 0; t < BT; ++t) kb[t] = load_k(k + (j0 + t) * ldk + c);
#pragma GCC unroll 16
        for (std::size_t r = 0; r < BR; ++r) {
          const batch qb = batch::load_unaligned(q + r * d + c);
#pragma GCC unroll 16
          for (std::size_t t = 0; t < BT; ++t) acc[r * BT + t] = fused(qb, kb[t], acc[r * BT + t]);
        }
      }
      alignas(64) T dots[N];
      lane_sums_n<N>(acc, dots);
      for (std::size_t c = c_end; c < d; ++c)  // d not a multiple of W
        for (std::size_t r = 0; r < BR; ++r)
          for (std::size_t t = 0; t < BT; ++t)
            dots[r * BT + t] = scalar_fused(q[r * d + c], widen_one(k[(j0 + t) * ldk + c]), dots[r * BT + t]);
      for (std::size_t r = 0; r < BR; ++r) std::copy(dots + r * BT, dots + (r + 1) * BT, s + r * lds + j0);
    }
    for (; j0 < keys; ++j0)  // the last keys, fewer than BT
      for (std::size_t r = 0; r < BR; ++r) {
        T dot = 0;
        for (std::size_t c = 0; c < d; ++c) dot += q[r * d + c] * widen_one(k[j0 * ldk + c]);
        s[r * lds + j0] = dot;
      }
  }

  // One row against keys read in place, d whole vectors (at least NQ): each key's row read
  // start to end, the keys in order (as a streaming read goes), Q's first NQ vectors in registers
  // beside the W accumulators and the rest, if any, loaded again for each key (K is an operand of
  // the FMA). qk_block<1, W> instead takes vector c of W keys at a time (at d = 64 in float32: W
  // loads 256 bytes apart, then the next 32 bytes of each), W interleaved streams that Zen 3's
  // prefetchers follow worse. Alternated in one process on a Zen 3 EPYC (5-8 rounds, 8 heads,
  // medians of decode / stream, 1 thread; 2 threads): at d = 64, all of Q in registers, 0.62 ->
  // 0.76; 0.72 -> 0.83 at 1k keys, 0.73 -> 0.75; 0.70 -> 0.87 at 4k, 0.77 -> 0.83; 0.79 -> 0.89 at
  // 16k; at d = 128, half of Q in registers, 0.72 -> 0.64; 0.82 -> 0.78 at 1k keys (from L3, where
  // the reloads of Q cost) and 0.60 -> 0.72; 0.62 -> 0.75 at 16k (from memory, where a long
  // cache's time goes). Q's vectors in slabs of NQ, each slab's columns of the W keys in turn,
  // kept the loads down but not the order: 0.59 and 0.65 at 16k. The same FMAs into each
  // accumulator in the same order as qk_block<1, W>, the same lane_sums: the same bits.
  template <std::size_t NQ, class KV>
  static void qk_one_row(const T* q, std::size_t d, const KV* k, std::size_t ldk, std::size_t keys, T* s,
                         attn::flash::NearPrefetch near) {
    batch qv[NQ];
#pragma GCC unroll 16
    for (std::size_t c = 0; c < NQ; ++c) qv[c] = batch::load_unaligned(q + c * W);
    std::size_t j0 = 0;
    for (; j0 + W <= keys; j0 += W) {
      ask_keys_ahead(k, j0, W, ldk, near);
      batch acc[W];
#pragma GCC unroll 16
      for (std::size_t t = 0; t < W; ++t) {
        const KV* kt = k + (j0 + t) * ldk;
        acc[t] = batch(T(0));
#pragma GCC unroll 16
        for (std::size_t c = 0; c < NQ; ++c) acc[t] = fused(qv[c], load_k(kt + c * W), acc[t]);
        for (std::size_t c = NQ * W; c < d; c += W) acc[t] = fused(batch::load_unaligned(q + c), load_k(kt + c), acc[t]);
      }
      lane_sums(acc, s + j0);
    }
    if (j0 < keys) qk_block<1, W>(q, d, k + j0 * ldk, ldk, keys - j0, s + j0, 0, Near{});  // fewer than W
  }

  // The asks of `near` for the keys from key j on (NearPrefetch counts from the first key).
  static Near from_key(Near near, std::size_t j) { return {near.keys, near.readable > j ? near.readable - j : 0}; }

  // QK_BR rows against keys: the keys qk_block<QK_BR, QK_BT> takes in vectors (all but the last
  // keys % QK_BT) QK_BT_WIDE at a time, the few left over one at a time, and the last keys, fewer
  // than QK_BT, as scalar sums. Every vector score is its accumulator's lanes summed by the one
  // tree, whatever block it was in: the bits of qk_block<QK_BR, QK_BT> alone.
  template <class KV>
  static void qk_row_block(const T* q, std::size_t d, const KV* k, std::size_t ldk, std::size_t keys, T* s,
                           std::size_t lds, Near near) {
    const std::size_t vec = keys - keys % QK_BT, wide = vec / QK_BT_WIDE * QK_BT_WIDE;
    qk_block<QK_BR, QK_BT_WIDE>(q, d, k, ldk, wide, s, lds, near);
    if constexpr (QK_BT_WIDE != QK_BT)  // (else wide == vec)
      qk_block<QK_BR, 1>(q, d, k + wide * ldk, ldk, vec - wide, s + wide, lds, from_key(near, wide));
    qk_block<QK_BR, QK_BT>(q, d, k + vec * ldk, ldk, keys - vec, s + vec, lds, from_key(near, vec));
  }

  // Rows in blocks of QK_BR first, the rest one at a time; with more rows than one block, in
  // passes of kQkPassKeys keys.
  template <class KV>
  static void qk_rows(const T* q, std::size_t rows, std::size_t d, const KV* k, std::size_t ldk,
                      std::size_t keys, T* s, std::size_t lds, attn::flash::NearPrefetch near = {}) {
    if (rows > QK_BR && keys > kQkPassKeys) {
      for (std::size_t j = 0; j < keys; j += kQkPassKeys)
        qk_rows(q, rows, d, k + j * ldk, ldk, std::min(kQkPassKeys, keys - j), s + j, lds, from_key(near, j));
      return;
    }
    std::size_t r0 = 0;
    if constexpr (QK_BR > 1)
      for (; r0 + QK_BR <= rows; r0 += QK_BR)  // K's rows asked for once, with the first block of rows
        qk_row_block(q + r0 * d, d, k, ldk, keys, s + r0 * lds, lds, r0 == 0 ? near : Near{});
    for (; r0 < rows; ++r0) {
      const Near ask = r0 == 0 ? near : Near{};
      // As many of Q's vectors in registers as fit beside the accumulators (AVX2: 16 vector
      // registers, AVX-512: 32). A bfloat16 K's widened vector needs one more: on AVX2 at NQ = 8
      // one Q vector then lives in L1, which still beats reloading them all (a bfloat16 decode
      // step at 16k keys, d = 64: 0.79 -> 0.85 of a streaming read on 1 thread, alternated).
      constexpr std::size_t regs = W * sizeof(T) == 64 ? 32 : 16;
      T* sr = s + r0 * lds;
      const T* qr = q + r0 * d;
      const std::size_t vectors = d % W == 0 ? d / W : 0;
      if constexpr (8 + W <= regs)
        if (vectors >= 8) {
          qk_one_row<8>(qr, d, k, ldk, keys, sr, ask);
          continue;
        }
      if (vectors >= 4) qk_one_row<4>(qr, d, k, ldk, keys, sr, ask);
      else if (vectors >= 2) qk_one_row<2>(qr, d, k, ldk, keys, sr, ask);
      else if (vectors == 1) qk_one_row<1>(qr, d, k, ldk, keys, sr, ask);
      else qk_block<1, W>(qr, d, k, ldk, keys, sr, lds, ask);  // the last columns are scalar sums
    }
  }

  static void qk_unpacked(const T* q, std::size_t rows, std::size_t d, const T* k, std::size_t ldk,
                          std::size_t keys, T* s, std::size_t lds) {
    qk_rows(q, rows, d, k, ldk, keys, s, lds);
  }
  static void qk_unpacked_bf16(const T* q, std::size_t rows, std::size_t d, const std::uint16_t* k,
                               std::size_t ldk, std::size_t keys, T* s, std::size_t lds,
                               attn::flash::NearPrefetch near) {
    qk_rows(q, rows, d, k, ldk, keys, s, lds, near);
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

  // bfloat16 is the high half of a float32: widening is a 16-bit shift, exact, and the compiler
  // vectorises this loop at this file's instruction set (two zero-extending loads a register).
  static void widen_bf16(const std::uint16_t* in, std::size_t n, T* out) {
    for (std::size_t i = 0; i < n; ++i) out[i] = T(std::bit_cast<float>(std::uint32_t(in[i]) << 16));
  }

  // The score modifier on one row's first n scores, in place: S_ij (q.k) becomes the forward's
  // score, scaled and modified (FlexAttention's score_mod, differentiated: slope[c] is its
  // derivative, by which dS is multiplied after the softmax's backward). The same modifier,
  // positions and order as the forward; the caller then takes P with a scale of 1.
  static void modify_row(const BackwardProblem& p, std::size_t h, std::size_t i, std::size_t j0, std::size_t n,
                         T* pr, T* slope) {
    const double to_raw = p.scale * p.temperature;  // scale * q.k before the temperature
    const long pos = long(i) + long(p.Lk) - long(p.Lq);
    for (std::size_t c = 0; c < n; ++c) {
      const ScoreMod::Sloped m = p.score_mod->apply_with_slope(double(pr[c]) * to_raw, h, pos, long(j0 + c));
      slope[c] = T(m.slope);
      pr[c] = T(m.score / p.temperature);
    }
  }

  // FlashAttention-2's backward for one query head (Algorithm 2, lines 5-19). Its products are
  // small GEMMs of a tile (32 x 32 x 16 for the toy transformer's heads), too small to pack
  // for: block_gemm keeps MR output rows in registers and shares each load of B among them.
  //
  //   Y[r, 0..n) (+)= sum_t alpha A(r, t) B[t, 0..n)     r < R, t < count
  //
  // A(r, t) = a[r * ar + t * at] (strided both ways, so that P and dS serve untransposed and
  // transposed). Each output element sums its terms in t order, alpha applied per term.
  template <std::size_t MR>
  static void gemm_rows(std::size_t count, std::size_t n, const T* a, std::size_t ar, std::size_t at, T alpha,
                        const T* b, std::size_t ldb, T* y, std::size_t ldy, bool accumulate) {
    std::size_t c = 0;
    for (; c + W <= n; c += W) {
      batch acc[MR];
#pragma GCC unroll 8
      for (std::size_t r = 0; r < MR; ++r) acc[r] = accumulate ? batch::load_unaligned(y + r * ldy + c) : batch(T(0));
      for (std::size_t t = 0; t < count; ++t) {
        const batch bt = batch::load_unaligned(b + t * ldb + c);
#pragma GCC unroll 8
        for (std::size_t r = 0; r < MR; ++r) acc[r] = fused(batch(alpha * a[r * ar + t * at]), bt, acc[r]);
      }
#pragma GCC unroll 8
      for (std::size_t r = 0; r < MR; ++r) acc[r].store_unaligned(y + r * ldy + c);
    }
    for (; c < n; ++c)  // n not a multiple of W
      for (std::size_t r = 0; r < MR; ++r) {
        T s = accumulate ? y[r * ldy + c] : T(0);
        for (std::size_t t = 0; t < count; ++t) s += alpha * a[r * ar + t * at] * b[t * ldb + c];
        y[r * ldy + c] = s;
      }
  }

  static constexpr std::size_t GEMM_ROWS = 4;  // block_gemm's MR

  // Which part of the product a block of MR output rows [r, r + MR) needs: terms [t0, t1) of
  // the sum (terms outside are exact zeros, skipped), and output columns [0, n).
  struct Span {
    std::size_t t0, t1, n;
  };

  // Y = alpha A B over whole row blocks; span(r, rows) trims each block (see Span). A block
  // with no terms is still written (zero, or left as it was when accumulating).
  template <class SpanFn>
  static void block_gemm(std::size_t R, const T* a, std::size_t ar, std::size_t at, T alpha, const T* b,
                         std::size_t ldb, T* y, std::size_t ldy, bool accumulate, SpanFn span) {
    constexpr std::size_t MR = GEMM_ROWS;
    auto rows = [&]<std::size_t M>(std::size_t r) {
      const Span s = span(r, M);
      const std::size_t count = s.t1 > s.t0 ? s.t1 - s.t0 : 0;
      gemm_rows<M>(count, s.n, a + r * ar + s.t0 * at, ar, at, alpha, b + s.t0 * ldb, ldb, y + r * ldy, ldy,
                   accumulate);
    };
    std::size_t r = 0;
    for (; r + MR <= R; r += MR) rows.template operator()<MR>(r);
    for (; r < R; ++r) rows.template operator()<1>(r);
  }

  // Whether query i of head h may see key j by the explicit mask and the variant rule (causal
  // is a row's prefix, handled by the caller's visible count).
  static bool allowed(const BackwardProblem& p, std::size_t h, std::size_t i, std::size_t j) {
    return (!p.allowed || (*p.allowed)(p.allowed->shape(0) == 1 ? 0 : h, i, j)) &&
           (!p.rule || p.rule->visible(i, j, p.Lq, p.Lk));
  }

  // Line 11 for one row: P = exp(scale S - lse) on the row's first n keys (the causally visible
  // ones), 0 where the mask hides a key. Float: as exp2(log2(e) (scale S - lse)) on
  // exp2_nonpositive's vectors, over whole registers (S is computed that far; what lands past n
  // is junk that the caller zeroes where the products read); hidden keys are -inf there, and
  // come out exactly 0.
  // Float64: std::exp, the reference's own rounding on every CPU.
  static void softmax_row(const BackwardProblem& p, std::size_t h, std::size_t i, std::size_t j0, std::size_t n,
                          std::size_t cols, T lse, T* pr) {
    if constexpr (std::is_same_v<T, double>) {
      for (std::size_t c = 0; c < n; ++c) pr[c] = allowed(p, h, i, j0 + c) ? std::exp(p.scale * pr[c] - lse) : 0.0;
    } else {
      constexpr double kLog2e = 1.4426950408889634;
      const T a = T(p.scale * kLog2e), m = T(double(lse) * kLog2e);
      const std::size_t whole = std::min(cols, (n + W - 1) / W * W);
      const bool masked = p.allowed || p.rule;
      if (masked)
        for (std::size_t c = 0; c < n; ++c) pr[c] = allowed(p, h, i, j0 + c) ? a * pr[c] - m : -INFINITY;
      const batch ab(masked ? T(1) : a), mb(masked ? T(0) : m), zero(T(0));
      std::size_t c = 0;
      for (; c + W <= whole; c += W)
        exp2_nonpositive(xsimd::min(xsimd::fms(ab, batch::load_unaligned(pr + c), mb), zero)).store_unaligned(pr + c);
      for (; c < n; ++c) pr[c] = masked ? (pr[c] == -INFINITY ? T(0) : std::exp2(pr[c])) : std::exp2(a * pr[c] - m);
    }
  }

  // FlashAttention-2's backward for one query head (Algorithm 2, lines 5-19). Causal tiles on
  // the diagonal are trimmed at register-block granularity: query row r of the tile sees keys
  // [0, vis[r]), key c is seen by rows [first[c], rows), and each of the five products skips
  // the terms and columns where P and dS are zero by causality (the float64 reference too: a
  // skipped term adds an exact zero, so its sums are unchanged).
  static void backward_head(const BackwardProblem& p, std::size_t h, const T* q, const T* k, const T* v, const T* dO,
                            const T* lse, const T* D, T* dq, T* dk, T* dv, BackwardTiles<T>& t) {
    const std::size_t Bc = p.Bc;
    const T scale = T(p.scale);
    BackwardProblem modified = p;  // with a score modifier, S arrives at softmax_row already scaled
    modified.scale = 1.0;
    for (std::size_t j0 = 0; j0 < p.Lk; j0 += Bc) {  // line 5: for each key block K_j, V_j
      const std::size_t cols = std::min(Bc, p.Lk - j0);
      // Line 6: load K_j, V_j (transposed, so that S and dP below are rows along the keys).
      // Line 7: dK_j, dV_j are rows [j0, j0 + cols) of dk, dv, accumulated in place.
      for (std::size_t c = 0; c < cols; ++c) {
        for (std::size_t x = 0; x < p.d; ++x) t.kt[x * Bc + c] = k[(j0 + c) * p.d + x];
        for (std::size_t x = 0; x < p.dv; ++x) t.vt[x * Bc + c] = v[(j0 + c) * p.dv + x];
      }
      for (std::size_t i0 = 0; i0 < p.Lq; i0 += p.Br) {  // line 8: for each query block Q_i
        const std::size_t rows = std::min(p.Br, p.Lq - i0);
        // Causal: no row of this block sees key j0 or later, so the tile is above the diagonal
        // and is skipped without being read.
        if (p.causal && std::size_t(tile::causal_key_end(long(i0 + rows), long(p.Lq), long(p.Lk))) <= j0) continue;
        // The variant rule hides the whole tile (a window's, a document's): P = 0 there.
        if (p.rule && p.rule->cover(i0, rows, j0, cols, p.Lq, p.Lk) == tile::MaskCover::none) continue;
        std::size_t* vis = t.vis.data();
        std::size_t* first = t.first.data();
        for (std::size_t r = 0; r < rows; ++r) {
          const long end = p.causal ? tile::causal_key_end(long(i0 + r) + 1, long(p.Lq), long(p.Lk)) - long(j0) : long(cols);
          vis[r] = std::size_t(std::clamp(end, 0L, long(cols)));
        }
        for (std::size_t c = 0, r = 0; c < cols; ++c) {  // vis is non-decreasing in r
          while (r < rows && vis[r] <= c) ++r;
          first[c] = r;
        }
        // A block of query rows needs the keys its last row sees (S and dP: in whole registers);
        // a block of keys needs the query rows from its first key's first viewer on.
        auto query_keys = [&](std::size_t r, std::size_t mr) { return vis[r + mr - 1]; };
        auto score_columns = [&](std::size_t r, std::size_t mr) {
          return std::min(cols, (query_keys(r, mr) + W - 1) / W * W);
        };
        T* P = t.p.data();
        T* dS = t.ds.data();
        // Line 10: S_ij = Q_i K_j^T (the scale is applied inside softmax_row). Line 13: dP_ij = dO_i V_j^T.
        block_gemm(rows, q + i0 * p.d, p.d, 1, T(1), t.kt.data(), Bc, P, Bc, false,
                   [&](std::size_t r, std::size_t mr) { return Span{0, p.d, score_columns(r, mr)}; });
        block_gemm(rows, dO + i0 * p.dv, p.dv, 1, T(1), t.vt.data(), Bc, dS, Bc, false,
                   [&](std::size_t r, std::size_t mr) { return Span{0, p.dv, score_columns(r, mr)}; });
        for (std::size_t r = 0; r < rows; ++r) {
          const std::size_t i = i0 + r;
          T* pr = P + r * Bc;
          T* dsr = dS + r * Bc;
          // A fully masked row (lse = -inf) attends to nothing: P = 0 and no gradient. Testing
          // it here also avoids exp(-inf - (-inf)) = NaN.
          const std::size_t n = lse[i] == -INFINITY ? 0 : vis[r];
          if (p.score_mod) modify_row(p, h, i, j0, n, pr, t.slope.data());
          // Line 11: P_ij = exp(S_ij - L_i); masked keys have P = 0.
          softmax_row(p.score_mod ? modified : p, h, i, j0, n, cols, lse[i], pr);
          // Line 14: dS_ij = P_ij o (dP_ij - D_i), then through the modifier's slope.
          for (std::size_t c = 0; c < n; ++c) dsr[c] = pr[c] * (dsr[c] - D[i]);
          if (p.score_mod)
            for (std::size_t c = 0; c < n; ++c) dsr[c] *= t.slope[c];
          // Zeros where a trimmed block still reads: up to GEMM_ROWS - 1 keys past the row's
          // visible ones (a block of GEMM_ROWS rows or keys advances the bound by at most that).
          for (std::size_t c = n; c < std::min(cols, vis[r] + GEMM_ROWS - 1); ++c) pr[c] = dsr[c] = T(0);
        }
        // Line 12: dV_j += P_ij^T dO_i. Line 15: dQ_i += scale dS_ij K_j. Line 16: dK_j += scale dS_ij^T Q_i.
        block_gemm(cols, P, 1, Bc, T(1), dO + i0 * p.dv, p.dv, dv + j0 * p.dv, p.dv, true,
                   [&](std::size_t c, std::size_t) { return Span{first[c], rows, p.dv}; });
        block_gemm(rows, dS, Bc, 1, scale, k + j0 * p.d, p.d, dq + i0 * p.d, p.d, true,
                   [&](std::size_t r, std::size_t mr) { return Span{0, query_keys(r, mr), p.d}; });
        block_gemm(cols, dS, 1, Bc, scale, q + i0 * p.d, p.d, dk + j0 * p.d, p.d, true,
                   [&](std::size_t c, std::size_t) { return Span{first[c], rows, p.d}; });
      }
    }
  }

  static attn::flash::Microkernels<T> make(const char* isa) {
    return {isa, W, QK_MR, PW, PV_MR, PV_NR * W, &pack_k, &qk, &gemm, &row_max, &lane_max_of, &exp2_sum, &pv, &pv_bf16,
            &pv_panels, &qk_unpacked, &qk_unpacked_bf16, &sum, &widen_bf16, &backward_head, own_blockings()};
  }
};
