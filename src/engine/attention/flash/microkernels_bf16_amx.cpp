// The bfloat16 products of the flash kernel on AMX tiles (Intel Xeon since Sapphire Rapids;
// compiled with -mamx-tile -mamx-bf16 where the compiler takes them: CMakeLists.txt). One
// tdpbf16ps multiplies a 16 x 32 tile of bfloat16 by a 32 x 16 one into 16 x 16 float32
// accumulators: 8,192 products, where vdpbf16ps does 32. On an Emerald Rapids Xeon, measured:
// vdpbf16ps issues at a quarter of the float32 FMA rate (half its products), so the AVX-512
// bfloat16 kernels ran at 0.57 of float32 flash; these tiles do ~1.1 TFLOP/s on one core.
//
// The layouts are microkernels_bf16.hpp's, which are already the tiles' (AMX's B operand holds
// pairs of the reduced dimension, as vdpbf16ps's does):
//   Q K^T: A = 16 rows of Q x 16 dim pairs (row stride dp), B = 16 dim pairs x 16 keys of a
//          K panel (row stride 64 keys' pairs), C = 16 rows x 16 keys of S.
//   P V:   A = 16 rows of P x 16 key pairs (row stride ldp), B = 16 key pairs x 16 columns of
//          V (row stride dvp's pairs), C = 16 rows x 16 columns of O.
// C is 2 x 2 tiles (32 rows x 32 keys or columns); tiles 0-3 hold it, 4-5 A, 6-7 B. Edges that
// are not whole tiles (rows past the last block, a last partial step of key pairs, dv's last 16
// columns) go through zero-padded copies, so a tile never reads past what the caller owns. A
// head dim that is not a multiple of 32 (a partial step of Q K^T) runs the vdpbf16ps kernels.
//
// The sums are float32 sums of exact products, as the other kernels'; the tiles add a step's 32
// products in their own order, so the bits may differ from vdpbf16ps's in the last places
// (tests/test_flash_bf16.cpp bounds the difference and checks both against float64).
#include "microkernels_bf16.hpp"

#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__AVX512F__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace attn::flash {
namespace {

constexpr std::size_t kT = 16;       // rows of a tile; 16 float32 or 16 bfloat16 pairs a row
constexpr std::size_t kC = 2 * kT;   // rows and columns of C's 2 x 2 tiles
constexpr std::size_t kPW = Bf16Kernels::kKeyPanel;

// LDTILECFG's 64-byte operand: palette 1, eight tiles of 16 rows x 64 bytes.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1, start_row = 0, reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};

// Tile state is per thread: every call configures its own and releases it at the end.
struct Tiles {
  Tiles() {
    TileConfig c;
    for (int t = 0; t < 8; ++t) {
      c.colsb[t] = 64;
      c.rows[t] = 16;
    }
    _tile_loadconfig(&c);
  }
  ~Tiles() { _tile_release(); }
  Tiles(const Tiles&) = delete;
  Tiles& operator=(const Tiles&) = delete;
};

// A 2 x 2 block of C = A B over `steps` steps of 16 pairs. a0/a1 are the two A tiles' first
// rows at step 0 (each step moves a_step elements along them); b0/b1 the two B tiles' (each
// step moves b_step). With one_column, only the left column of C (tiles 0 and 2) is computed.
// The C tiles are loaded from and stored to c (float32, row stride ldc) when accumulate, else
// start at zero.
struct Block {
  const std::uint16_t *a0, *a1;
  std::size_t lda_bytes, a_step;
  const std::uint16_t *b0, *b1;
  std::size_t ldb_bytes, b_step;
  float* c;
  std::size_t ldc;
};

template <bool OneColumn>
void tile_block(const Block& k, std::size_t steps, bool accumulate) {
  const std::size_t ldc_bytes = k.ldc * sizeof(float);
  float* c1 = k.c + kT * k.ldc;  // the lower row of tiles
  if (accumulate) {
    _tile_loadd(0, k.c, ldc_bytes);
    _tile_loadd(2, c1, ldc_bytes);
    if constexpr (!OneColumn) {
      _tile_loadd(1, k.c + kT, ldc_bytes);
      _tile_loadd(3, c1 + kT, ldc_bytes);
    }
  } else {
    _tile_zero(0);
    _tile_zero(2);
    if constexpr (!OneColumn) {
      _tile_zero(1);
      _tile_zero(3);
    }
  }
  for (std::size_t s = 0; s < steps; ++s) {
    _tile_loadd(4, k.a0 + s * k.a_step, k.lda_bytes);
    _tile_loadd(5, k.a1 + s * k.a_step, k.lda_bytes);
    _tile_loadd(6, k.b0 + s * k.b_step, k.ldb_bytes);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(2, 5, 6);
    if constexpr (!OneColumn) {
      _tile_loadd(7, k.b1 + s * k.b_step, k.ldb_bytes);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  _tile_stored(0, k.c, ldc_bytes);
  _tile_stored(2, c1, ldc_bytes);
  if constexpr (!OneColumn) {
    _tile_stored(1, k.c + kT, ldc_bytes);
    _tile_stored(3, c1 + kT, ldc_bytes);
  }
}

// Per-thread zero-padded copies for the edges.
struct Edges {
  std::vector<std::uint16_t> a, tail, b;  // A's rows; a partial step's P columns and V pairs
  std::vector<float> c;             // C rows past the caller's last row
};
Edges& edges() {
  thread_local Edges e;
  return e;
}

// The rows of a 32-row block that exist, 0 < n <= 32, copied into a zeroed [32][width] block.
const std::uint16_t* padded_rows(std::vector<std::uint16_t>& buf, const std::uint16_t* from, std::size_t ld,
                                 std::size_t n, std::size_t width) {
  buf.assign(kC * width, 0);
  for (std::size_t r = 0; r < n; ++r) std::memcpy(buf.data() + r * width, from + r * ld, width * 2);
  return buf.data();
}

void qk_amx(const std::uint16_t* q, std::size_t dp, std::size_t rows, const std::uint16_t* panels,
            std::size_t npanels, float scale, float* s, std::size_t lds) {
  if (dp % kC != 0) return bf16_kernels_avx512()->qk(q, dp, rows, panels, npanels, scale, s, lds);
  const Tiles tiles;
  Edges& e = edges();
  const std::size_t full = rows / kC * kC, steps = dp / kC;
  const std::uint16_t* last = full < rows ? padded_rows(e.a, q + full * dp, dp, rows - full, dp) : nullptr;
  if (last) e.c.resize(kC * kPW);
  const __m512 sc = _mm512_set1_ps(scale);
  for (std::size_t p = 0; p < npanels; ++p)  // the panel (8 KiB at d = 64) stays in L1 while the rows pass
    for (std::size_t i0 = 0; i0 < rows; i0 += kC) {
      const std::size_t n = std::min(kC, rows - i0);
      const std::uint16_t* a = i0 < full ? q + i0 * dp : last;
      float* c = i0 < full ? s + i0 * lds + p * kPW : e.c.data();
      const std::size_t ldc = i0 < full ? lds : kPW;
      for (std::size_t j = 0; j < kPW; j += kC) {
        const std::uint16_t* b = panels + p * dp * kPW + 2 * j;
        tile_block<false>({a, a + kT * dp, dp * 2, kC, b, b + 2 * kT, kPW * 4, kT * kPW * 2, c + j, ldc}, steps,
                          false);
      }
      for (std::size_t r = 0; r < n; ++r) {
        float* to = s + (i0 + r) * lds + p * kPW;
        for (std::size_t j = 0; j < kPW; j += 16)
          _mm512_storeu_ps(to + j, _mm512_mul_ps(_mm512_loadu_ps(c + r * ldc + j), sc));
      }
    }
}

// A 32-row block of P as the tiles read it: its rows (row stride lda; zero-padded past the last
// row), and the last partial step's columns zero-padded to a whole step (when pairs % 16 != 0).
struct PRows {
  const std::uint16_t* a;
  std::size_t lda;
  const std::uint16_t* tail;
};

PRows p_rows(const std::uint16_t* p, std::size_t ldp, std::size_t n, std::size_t pairs, Edges& e) {
  PRows r{p, ldp, nullptr};
  if (n < kC) r = {padded_rows(e.a, p, ldp, n, 2 * pairs), 2 * pairs, nullptr};
  if (const std::size_t rest = pairs % kT) {
    e.tail.assign(kC * kC, 0);
    const std::size_t from = pairs / kT * kC;
    for (std::size_t i = 0; i < kC; ++i) std::memcpy(e.tail.data() + i * kC, r.a + i * r.lda + from, rest * 4);
    r.tail = e.tail.data();
  }
  return r;
}

// O's 32-row block [i0, i0 + n) and columns [c0, c0 + width) (width 32, or 16 for one column of
// tiles) += P V over `pairs` key pairs; its rows already carry alpha.
template <bool OneColumn>
void pv_block(const PRows& pr, std::size_t n, std::size_t pairs, const std::uint16_t* v, std::size_t dvp, float* o,
              std::size_t ldo, Edges& e) {
  const bool whole = n == kC;
  const std::uint16_t* a = pr.a;
  const std::size_t lda = pr.lda;
  const std::size_t width = OneColumn ? kT : kC;  // O's columns in this block
  float* c = o;
  std::size_t ldc = ldo;
  if (!whole) {  // C's rows past the block's last are scratch
    e.c.assign(kC * kC, 0.0f);
    for (std::size_t r = 0; r < n; ++r) std::memcpy(e.c.data() + r * kC, o + r * ldo, width * sizeof(float));
    c = e.c.data();
    ldc = kC;
  }
  const std::size_t steps = pairs / kT, rest = pairs % kT;
  const std::size_t ldv_bytes = dvp * 4, v_step = kT * dvp * 2;
  if (steps) tile_block<OneColumn>({a, a + kT * lda, lda * 2, kC, v, v + 2 * kT, ldv_bytes, v_step, c, ldc}, steps, true);
  if (rest) {  // the last partial step: its P columns (pr.tail) and V pairs, zero-padded to a whole step
    e.b.assign(kT * kC * 2, 0);
    const std::uint16_t* vr = v + steps * v_step;
    for (std::size_t k = 0; k < rest; ++k) std::memcpy(e.b.data() + k * kC * 2, vr + k * dvp * 2, width * 4);
    const std::uint16_t *pa = pr.tail, *vb = e.b.data();
    tile_block<OneColumn>({pa, pa + kT * kC, kC * 2, 0, vb, vb + 2 * kT, kC * 4, 0, c, ldc}, 1, true);
  }
  if (!whole)
    for (std::size_t r = 0; r < n; ++r) std::memcpy(o + r * ldo, e.c.data() + r * kC, width * sizeof(float));
}

void pv_amx(const std::uint16_t* p, std::size_t ldp, std::size_t rows, std::size_t keys, const std::uint16_t* v,
            std::size_t dvp, const float* alpha, float* o, std::size_t ldo) {
  // Algorithm 1, line 12's rescale first; the tiles then add to O as it is.
  for (std::size_t r = 0; r < rows; ++r) {
    const __m512 a = _mm512_set1_ps(alpha[r]);
    for (std::size_t c = 0; c < dvp; c += 16)
      _mm512_storeu_ps(o + r * ldo + c, _mm512_mul_ps(_mm512_loadu_ps(o + r * ldo + c), a));
  }
  const Tiles tiles;
  Edges& e = edges();
  const std::size_t pairs = bf16_even(keys) / 2;
  for (std::size_t i0 = 0; i0 < rows; i0 += kC) {
    const std::size_t n = std::min(kC, rows - i0);
    const PRows pr = p_rows(p + i0 * ldp, ldp, n, pairs, e);  // once for every column block
    std::size_t c0 = 0;
    for (; c0 + kC <= dvp; c0 += kC) pv_block<false>(pr, n, pairs, v + 2 * c0, dvp, o + i0 * ldo + c0, ldo, e);
    if (c0 < dvp) pv_block<true>(pr, n, pairs, v + 2 * c0, dvp, o + i0 * ldo + c0, ldo, e);
  }
}

// The CPU has AMX tiles with bfloat16 (CPUID leaf 7: EDX bits 22 and 24) and AVX512_BF16 (for
// head dims the tiles do not take), and Linux lets this process use the tiles' 8 KiB of state
// (arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA, Linux 5.16 on).
bool amx_usable() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  if (!(d & (1u << 22)) || !(d & (1u << 24)) || !bf16_kernels_avx512()) return false;
  constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
}

}  // namespace

const Bf16Kernels* bf16_kernels_amx() {
  static const Bf16Kernels set{"amx-bf16", "32x32", &qk_amx, &pv_amx};
  static const bool usable = amx_usable();
  return usable ? &set : nullptr;
}

}  // namespace attn::flash
#else
const attn::flash::Bf16Kernels* attn::flash::bf16_kernels_amx() { return nullptr; }
#endif
