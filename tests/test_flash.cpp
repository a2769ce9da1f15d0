// The flash kernel against the naive oracle (STYLE.md habit 3): same inputs, FlashAttention's
// tolerance rule, over the shapes that break tiled kernels.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/flash.hpp"
#include "attn/engine/attention/mask.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/engine/attention/tile_math.hpp"
#include "attn/engine/attention/softmax.hpp"
#include "engine/attention/flash/microkernels.hpp"  // the private micro-kernels, tested directly
#include "engine/attention/sdpa_f64.hpp"  // private: the float64 door
#include "fa_check.hpp"
#include "fa_rule.hpp"
#include "support.hpp"

using namespace attn;
using test::randn;

namespace {

struct Case {
  std::size_t H, Hkv, Lq, Lk, d, dv;
  bool causal = false;
  double magnitude = 1.0;
  std::size_t block_q = 0, block_k = 0;
  bool mask = false;
};

void check_case(const Case& c, std::uint64_t seed) {
  CAPTURE(c.H);
  CAPTURE(c.Lq);
  CAPTURE(c.Lk);
  CAPTURE(c.d);
  CAPTURE(c.dv);
  CAPTURE(c.causal);
  CAPTURE(c.block_q);
  CAPTURE(c.block_k);
  Rng rng(seed);
  const Tensor3 q = randn(rng, c.H, c.Lq, c.d, c.magnitude), k = randn(rng, c.Hkv, c.Lk, c.d, c.magnitude),
                v = randn(rng, c.Hkv, c.Lk, c.dv);
  Mask3 mask;
  if (c.mask) {
    mask = Mask3::from_shape({c.H, c.Lq, c.Lk});
    for (bool& b : mask) b = rng.uniform() < 0.7;
    for (std::size_t j = 0; j < c.Lk; ++j) mask(0, c.Lq / 2, j) = false;  // one fully masked row
  }
  const Mask3* allowed = c.mask ? &mask : nullptr;
  SdpaOptions so;
  so.causal = c.causal;
  const SdpaResult ref = sdpa(q, k, v, allowed, so);  // float64 inside: the reference
  FlashOptions fo;
  fo.causal = c.causal;
  fo.block_q = c.block_q;
  fo.block_k = c.block_k;
  fo.threads = 2;
  DecodeTuning share;  // a second thread whatever the size: items from several heads at once
  share.prefill_thread_work = 1;
  fo.decode_tuning = &share;
  const FlashResult f = flash_attention(q, k, v, allowed, fo);
  const Tensor3 plain = test::plain_float32_output(q, k, v, allowed, c.causal, 1.0f / std::sqrt(float(c.d)));
  test::check_fa_rule(f.output, f.lse, ref, plain);
}

}  // namespace

TEST_CASE("flash: odd shapes match the naive oracle under FlashAttention's 2x rule") {
  const Case cases[] = {
      {1, 1, 1, 1, 1, 1},                      // d = 1, a single key
      {2, 2, 7, 13, 5, 3},                      // nothing a multiple of anything
      {3, 3, 100, 37, 64, 64, true},            // causal, Lq > Lk: the first rows see no key
      {2, 2, 33, 300, 64, 64, true},            // causal, Lq < Lk: bottom-right aligned
      {4, 2, 65, 65, 17, 33, true},             // GQA, odd d and dv
      {4, 1, 50, 70, 16, 16},                   // MQA
      {2, 2, 40, 90, 8, 24, false, 30.0},       // scores in the thousands
      {2, 2, 40, 90, 8, 24, false, 1.0, 0, 0, true},   // explicit mask with a fully masked row
      {2, 2, 300, 300, 32, 48, true, 1.0, 24, 32},     // small explicit tiles: many tiles per row
      {1, 1, 257, 513, 64, 64, true, 1.0, 200, 100},   // tiles that do not divide the sizes
      {2, 2, 300, 300, 64, 80, true, 1.0, 0, 0, true}, // causal and a mask together
      {6, 3, 130, 140, 16, 16, true, 1.0, 24, 32},     // GQA, 3 KV heads on 2 threads: a set of 2, then 1
      // Heads packed in pieces of 256 keys by both threads: V copied into padded rows (d_v 33
      // everywhere, 36 on AVX-512 and AVX2), or read in place (64), and a last piece of 1 key.
      {2, 2, 70, 600, 24, 36},
      {4, 2, 64, 700, 16, 33, true},
      {2, 1, 40, 513, 64, 64, false, 1.0, 0, 0, true},
  };
  std::uint64_t seed = 1;
  for (const Case& c : cases) check_case(c, seed++);
}

TEST_CASE("flash: every instruction set this CPU runs, in float32 and float64, matches the oracle") {
  // best_microkernels() is what users get; the others are what other CPUs get.
  const Case c{3, 1, 70, 90, 20, 36, true, 1.0, 24, 32, true};
  for (const char* isa : {"generic", "avx2", "avx512"}) {
    for (FlashPrecision precision : {FlashPrecision::float32, FlashPrecision::float64}) {
      CAPTURE(isa);
      CAPTURE(int(precision));
      Rng rng(17);
      const Tensor3 q = randn(rng, c.H, c.Lq, c.d), k = randn(rng, c.Hkv, c.Lk, c.d), v = randn(rng, c.Hkv, c.Lk, c.dv);
      FlashOptions fo;
      fo.causal = true;
      fo.isa = isa;
      fo.precision = precision;
      fo.block_q = 24;
      fo.block_k = 32;
      if (!flash::microkernels_named<float>(isa)) {
        CHECK_THROWS_AS(flash_attention(q, k, v, nullptr, fo), InputError);
        continue;
      }
      SdpaOptions so;
      so.causal = true;
      const SdpaResult ref = sdpa(q, k, v, nullptr, so);
      const FlashResult f = flash_attention(q, k, v, nullptr, fo);
      const double err = test::max_abs_diff(test::flat_tensor(f.output), test::flat_tensor(ref.output));
      // float64: only the final rounding to float32 is left.
      CHECK(err <= (precision == FlashPrecision::float64 ? 5e-7 : 5e-6));
    }
  }
  const std::string isa = flash_isa();
  CHECK((isa == "avx512" || isa == "avx2" || isa == "generic"));
}

TEST_CASE("flash: exp2_sum turns masked (-inf) and tiny scores into exactly 0 in both precisions") {
  // The float64 path once fed -inf to xsimd::exp2, which casts round(x) to an integer: undefined
  // behaviour that clang's -fsanitize=float-cast-overflow reports (scripts/sanitize.sh).
  auto check = [](const auto* kernels, auto zero) {
    using T = decltype(zero);
    if (!kernels) return;
    CAPTURE(kernels->isa);
    std::vector<T> s(37);
    for (std::size_t j = 0; j < s.size(); ++j)
      s[j] = j % 3 == 0 ? -std::numeric_limits<T>::infinity() : j % 3 == 1 ? T(-5000) : T(-1);
    const T total = kernels->exp2_sum(s.data(), s.size(), T(0));
    for (std::size_t j = 0; j < s.size(); ++j) {
      if (j % 3 == 2) CHECK(double(s[j]) == doctest::Approx(0.5).epsilon(1e-7));
      else CHECK(s[j] == T(0));
    }
    CHECK(double(total) == doctest::Approx(6.0).epsilon(1e-7));
    if constexpr (std::is_same_v<T, float>) {  // the float flush: below 2^-126, exactly 0
      std::vector<T> edge(20, T(-126.5));
      edge[3] = T(-126), edge[17] = T(-126.0001);
      kernels->exp2_sum(edge.data(), edge.size(), T(0));
      for (std::size_t j = 0; j < edge.size(); ++j) CHECK(edge[j] == (j == 3 ? T(0x1p-126) : T(0)));
    }
  };
  for (const char* isa : {"generic", "avx2", "avx512"}) {
    check(flash::microkernels_named<float>(isa), 0.0f);
    check(flash::microkernels_named<double>(isa), 0.0);
  }
}

TEST_CASE("flash: every ISA's float32 exp2 is within 2 roundings of float64 from -126 to 0") {
  // The split x = floor(x) + f and the polynomial on [0, 1] (scripts/fit_exp2.py: 7.3e-9 before
  // float32's rounding) must agree: the old coefficients, fitted on [-1/2, 1/2], are off by
  // 5.6e-6 at f = 1. Steps of 1/64 plus offsets put f all over [0, 1), integers included.
  std::vector<float> x;
  for (int i = 0; i <= 126 * 64; ++i) x.push_back(-float(i) / 64.0f);
  for (int i = 1; i < 4000; ++i) x.push_back(-126.0f * float(i) / 4000.0f - 1e-3f * float(i % 7));
  x.push_back(-0.0f);
  for (const char* isa : {"generic", "avx2", "avx512"}) {
    const auto* kernels = flash::microkernels_named<float>(isa);
    if (!kernels) continue;
    CAPTURE(std::string(isa));
    std::vector<float> e = x;
    const float total = kernels->exp2_sum(e.data(), e.size(), 0.0f);
    double worst = 0, sum = 0;
    for (std::size_t j = 0; j < x.size(); ++j) {
      const double want = std::exp2(double(x[j]));
      sum += want;
      worst = std::max(worst, std::abs(double(e[j]) - want) / want);
    }
    CHECK(worst <= 2 * 0x1p-24 + 7.3e-9);  // 2 roundings' worth (measured: 6.0e-8 to 7.1e-8)
    CHECK(double(total) == doctest::Approx(sum).epsilon(1e-6));
    CHECK(e.back() == 1.0f);  // 2^0 exactly: p(0) = 1
  }
}

TEST_CASE("flash: every ISA's float32 exp2 gives the bits of its scalar definition, flush included, and sums in key order") {
  // The definition (microkernels_impl.hpp's exp2_nonpositive): x clamped at -127, split into
  // n = floor(x) and f = x - n, 2^f by the degree-6 polynomial of scripts/fit_exp2.py in Horner
  // form, times 2^n exactly; 0 below 2^-126. Written here with ldexp for 2^n, so that a faster
  // way of building 2^n in any ISA's kernel must keep the bits. Horner's steps are fused
  // multiply-adds where the ISA has them (AVX2, AVX-512); the generic kernel, compiled for
  // baseline x86-64, rounds the product and the sum apart (volatile keeps this file's compiler
  // from fusing them either way).
  auto defined = [](float x, bool fused) {
    const float xc = std::max(x, -127.0f), n = std::floor(xc), f = xc - n;
    float p = 2.170225489e-04f;
    for (float c : {1.243968843e-03f, 9.678840637e-03f, 5.548334122e-02f, 2.402298301e-01f, 6.931470037e-01f, 1.0f}) {
      volatile float product = p * f;
      p = fused ? std::fma(p, f, c) : product + c;
    }
    return xc < -126.0f ? 0.0f : p * std::ldexp(1.0f, int(n));
  };
  std::vector<float> x{-0.0f, -1e-30f, -0x1p-149f, -126.0f, std::nextafter(-126.0f, -200.0f), -126.5f,
                       std::nextafter(-127.0f, 0.0f), -127.0f, -127.5f, -300.0f, -1e30f,
                       -std::numeric_limits<float>::infinity(), std::nextafter(-1.0f, 0.0f)};
  Rng rng(11);
  for (int i = 0; i < 20000; ++i) x.push_back(-float(std::abs(rng.normal())) * (i % 2 ? 4.0f : 60.0f));
  for (const char* isa : {"generic", "avx2", "avx512"}) {
    const auto* kernels = flash::microkernels_named<float>(isa);
    if (!kernels) continue;
    CAPTURE(std::string(isa));
    std::vector<float> e = x;
    kernels->exp2_sum(e.data(), e.size(), 0.0f);
    std::size_t differ = 0;
    for (std::size_t j = 0; j < x.size(); ++j) {
      const float want = defined(x[j], std::string(isa) != "generic");
      differ += std::bit_cast<std::uint32_t>(e[j]) != std::bit_cast<std::uint32_t>(want);
    }
    CHECK(differ == 0);
    // The sum, as one register at a time takes it: lane by lane in key order, then the lanes.
    // One register of 2^0, then only 2^-24: in key order each lane stays at exactly 1 (1 + 2^-24
    // is a tie, rounded to 1); an order that adds any of the 2^-24 together before adding them
    // to the lane's sum (reversed, or a step's registers summed first) ends above it.
    std::vector<float> runs(9 * kernels->lanes + 3), lane(kernels->lanes, 0.0f);
    for (std::size_t j = 0; j < runs.size(); ++j) {
      runs[j] = j < kernels->lanes ? 0.0f : -24.0f;
      lane[j % lane.size()] += std::exp2(runs[j]);
    }
    float want_total = 0;
    for (float l : lane) want_total += l;
    const float total = kernels->exp2_sum(runs.data(), runs.size(), 0.0f);
    CHECK(std::bit_cast<std::uint32_t>(total) == std::bit_cast<std::uint32_t>(want_total));
  }
}

namespace {

// For one ISA's kernels at every Q K^T blocking: qk's lane maxima reduce to row_max's value
// (bit for bit, +-inf included), and asking for them leaves the scores' bytes as they were.
template <class T>
void check_lane_max(const flash::Microkernels<T>& base) {
  Rng rng(77);
  const T huge = std::numeric_limits<T>::max() / T(1.5);
  for (std::size_t b = 0; b < base.blockings->qk.size(); ++b) {
    const flash::Microkernels<T> mk = flash::with_blockings(base, b, 0);
    CAPTURE(base.blockings->qk[b].name);
    const std::size_t rows = 3 * mk.qk_rows, d = 19, npanels = 3, keys = npanels * mk.key_panel;
    std::vector<T> q(rows * d), k(keys * d), panels(keys * d);
    for (T& x : q) x = T(rng.normal());
    for (T& x : k) x = T(rng.normal());
    // Row 1 scores +inf where K's first column is 2, -inf where it is -2 (one nonzero term, so
    // no inf - inf); row 2 is minus K's second column, its max on the last key (last panel);
    // row 3 scores -inf everywhere (K's third column is 3).
    std::fill(q.begin() + d, q.begin() + 4 * d, T(0));
    q[d] = huge;
    q[2 * d + 1] = T(-1);
    q[3 * d + 2] = -huge;
    for (std::size_t j = 0; j < keys; ++j) {
      k[j * d] = j % 5 == 1 ? T(2) : j % 5 == 3 ? T(-2) : T(0.25);
      k[j * d + 2] = T(3);
    }
    k[(keys - 1) * d + 1] = T(-100);
    mk.pack_k(k.data(), d, keys, d, panels.data());
    std::vector<T> plain(rows * keys), with(rows * keys), lanes(rows * mk.lanes, T(7));
    mk.qk(q.data(), d, rows, panels.data(), npanels, plain.data(), keys, nullptr);
    mk.qk(q.data(), d, rows, panels.data(), npanels, with.data(), keys, lanes.data());
    CHECK(std::memcmp(plain.data(), with.data(), plain.size() * sizeof(T)) == 0);
    for (std::size_t r = 0; r < rows; ++r) {
      CAPTURE(r);
      const T want = mk.row_max(plain.data() + r * keys, keys), got = mk.lane_max_of(lanes.data() + r * mk.lanes);
      CHECK(std::memcmp(&want, &got, sizeof(T)) == 0);
    }
    CHECK(mk.lane_max_of(lanes.data() + mk.lanes) == std::numeric_limits<T>::infinity());
    CHECK(mk.lane_max_of(lanes.data() + 2 * mk.lanes) == T(100));
    CHECK(mk.lane_max_of(lanes.data() + 3 * mk.lanes) == -std::numeric_limits<T>::infinity());
  }
}

}  // namespace

TEST_CASE("flash: the Q K^T kernel's lane maxima are row_max's, and leave the scores as they were") {
  for (const char* isa : {"generic", "avx2", "avx512"}) {
    CAPTURE(std::string(isa));
    if (const auto* mk = flash::microkernels_named<float>(isa)) check_lane_max(*mk);
    if (const auto* mk = flash::microkernels_named<double>(isa)) check_lane_max(*mk);
  }
}

namespace {

// pack_k's panels element by element from their definition: panel p holds dim c of key
// p * PW + t at (p * d + c) * PW + t, zero past the last key.
template <class T>
void check_pack_k(const flash::Microkernels<T>& mk) {
  const std::string isa = mk.isa;
  CAPTURE(isa);
  const std::size_t PW = mk.key_panel;
  // Whole and partial registers of keys and of dims, and K rows longer than d (ldk > d).
  for (const std::array<std::size_t, 3>& shape : {std::array<std::size_t, 3>{PW, 16, 16}, {3 * PW + 5, 20, 20},
                                                  {2 * PW - 1, 64, 67}, {7, 67, 67}, {PW + 16, 8, 9}, {1, 1, 1}}) {
    // Plain locals, not a structured binding: clang 14's CAPTURE cannot capture one.
    const std::size_t keys = shape[0], d = shape[1], ldk = shape[2];
    CAPTURE(keys);
    CAPTURE(d);
    CAPTURE(ldk);
    std::vector<T> k(keys * ldk);
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = T(i % 1000) + T(0.5);  // every element tells where it came from
    const std::size_t npanels = (keys + PW - 1) / PW;
    std::vector<T> panels(npanels * d * PW, T(-1));
    mk.pack_k(k.data(), ldk, keys, d, panels.data());
    std::size_t wrong = 0;
    for (std::size_t p = 0; p < npanels; ++p)
      for (std::size_t c = 0; c < d; ++c)
        for (std::size_t t = 0; t < PW; ++t) {
          const std::size_t key = p * PW + t;
          wrong += panels[(p * d + c) * PW + t] != (key < keys ? k[key * ldk + c] : T(0));
        }
    CHECK(wrong == 0);
  }
}

}  // namespace

namespace {

// P V for `rows` rows at once against the same rows one call each: the row blocks pv chooses
// (whole blockings, then blocks of 2 to 4) must not change any output's bits.
template <class T>
void check_pv_rows(const flash::Microkernels<T>& mk) {
  const std::string isa = mk.isa;
  CAPTURE(isa);
  // 11 registers of columns: one or two rows take panels of 8 / rows registers, the set's own
  // blocks of rows panels of PV_NR, and the rest narrower tails; all must agree.
  for (const std::size_t dvp : {2 * mk.lanes, 11 * mk.lanes}) {
    CAPTURE(dvp);
    const std::size_t keys = 37, ldp = 40;
    Rng rng(5);
    std::vector<T> v(keys * dvp), p(16 * ldp), alpha(16), o0(16 * dvp);
    for (T& x : v) x = T(rng.normal());
    for (T& x : p) x = T(rng.uniform());
    for (T& x : alpha) x = T(0.5 + rng.uniform());
    for (T& x : o0) x = T(rng.normal());
    for (std::size_t rows = 1; rows <= 16; ++rows) {
      CAPTURE(rows);
      std::vector<T> together = o0, alone = o0;
      mk.pv(p.data(), ldp, rows, keys, v.data(), dvp, dvp, alpha.data(), together.data(), dvp);
      for (std::size_t r = 0; r < rows; ++r)
        mk.pv(p.data() + r * ldp, ldp, 1, keys, v.data(), dvp, dvp, alpha.data() + r, alone.data() + r * dvp, dvp);
      CHECK(std::memcmp(together.data(), alone.data(), together.size() * sizeof(T)) == 0);
      double worst = 0;  // and the values themselves, against float64
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < dvp; ++c) {
          double want = double(o0[r * dvp + c]) * double(alpha[r]);
          for (std::size_t k = 0; k < keys; ++k) want += double(p[r * ldp + k]) * double(v[k * dvp + c]);
          worst = std::max(worst, std::abs(want - double(together[r * dvp + c])));
        }
      CHECK(worst < 1e-4);
    }
  }
}

}  // namespace

namespace {

// P V on V packed in panels of the blocking's pass width (pv_panels) against V as rows (pv):
// the same bits, for d_v of whole panels, of a part panel (padded with zeros) read in one or
// two one-register passes, and of one register, with keys past a slice of every ISA
// (kPvSliceBytes).
template <class T>
void check_pv_panels(const flash::Microkernels<T>& mk) {
  const std::string isa = mk.isa;
  CAPTURE(isa);
  CAPTURE(mk.pv_columns);
  const std::size_t rows = 2 * mk.pv_rows, keys = 700, ldp = 703, width = mk.pv_columns;
  for (const std::size_t dvp : {mk.lanes, width + 2 * mk.lanes, 2 * width + mk.lanes, 3 * width}) {
    CAPTURE(dvp);
    Rng rng(21);
    std::vector<T> v(keys * dvp), p(rows * ldp), alpha(rows), o0(rows * dvp);
    for (T& x : v) x = T(rng.normal());
    for (T& x : p) x = T(rng.uniform());
    for (T& x : alpha) x = T(0.5 + rng.uniform());
    for (T& x : o0) x = T(rng.normal());
    const std::size_t panels = (dvp + width - 1) / width;
    std::vector<T> packed(panels * keys * width, T(-7));  // padding columns: zero after packing
    for (std::size_t c = 0; c < panels; ++c)
      for (std::size_t j = 0; j < keys; ++j)
        for (std::size_t t = 0; t < width; ++t)
          packed[(c * keys + j) * width + t] = c * width + t < dvp ? v[j * dvp + c * width + t] : T(0);
    std::vector<T> rows_out = o0, panels_out = o0;
    mk.pv(p.data(), ldp, rows, keys, v.data(), dvp, dvp, alpha.data(), rows_out.data(), dvp);
    mk.pv_panels(p.data(), ldp, rows, keys, packed.data(), keys * width, dvp, alpha.data(), panels_out.data(), dvp);
    CHECK(std::memcmp(rows_out.data(), panels_out.data(), rows_out.size() * sizeof(T)) == 0);
  }
}

}  // namespace

TEST_CASE("flash: P V on V in panels gives the bits of V as rows, on every ISA and blocking") {
  for (const char* isa : {"generic", "avx2", "avx512"}) {
    if (const auto* mk = flash::microkernels_named<float>(isa))
      for (std::size_t b = 0; b < mk->blockings->pv.size(); ++b) {
        CAPTURE(mk->blockings->pv[b].name);
        check_pv_panels(flash::with_blockings(*mk, 0, b));
      }
    if (const auto* mk = flash::microkernels_named<double>(isa)) check_pv_panels(*mk);
  }
}

TEST_CASE("flash: P V gives each row the same bits in any block of rows, on every ISA and blocking") {
  for (const char* isa : {"generic", "avx2", "avx512"}) {
    if (const auto* mk = flash::microkernels_named<float>(isa)) {
      for (std::size_t b = 0; b < mk->blockings->pv.size(); ++b) {  // those `attn-cli tune` offers too
        CAPTURE(mk->blockings->pv[b].name);
        check_pv_rows(flash::with_blockings(*mk, 0, b));
      }
    }
    if (const auto* mk = flash::microkernels_named<double>(isa)) check_pv_rows(*mk);
  }
}

TEST_CASE("flash: pack_k lays every key's dims into its panel column, zero past the last key, on every ISA") {
  for (const char* isa : {"generic", "avx2", "avx512"}) {
    if (const auto* mk = flash::microkernels_named<float>(isa)) check_pack_k(*mk);
    if (const auto* mk = flash::microkernels_named<double>(isa)) check_pack_k(*mk);
  }
}

TEST_CASE("flash: a key hidden from a row never sets its max: mask, causal diagonal, score modifier") {
  // The last key scores about 2800 for every query. Where a row may not see it (causal: all but
  // the last, in a diagonal tile whose last row group sees all 64 keys) or sees it capped,
  // a tile max that counted it would turn every weight the row has into exp2(s - 2800) = 0:
  // output 0 and a wrong lse, far outside the 2x rule. Tiles of 64 keys are whole panels on
  // every ISA, the case that takes the max from the Q K^T kernel's registers.
  Rng rng(12);
  Tensor3 q = randn(rng, 2, 128, 8), k = randn(rng, 2, 128, 8);
  const Tensor3 v = randn(rng, 2, 128, 8);
  for (std::size_t h = 0; h < 2; ++h) {
    for (std::size_t i = 0; i < 128; ++i) q(h, i, 0) = 1;
    k(h, 127, 0) = 8000;
  }
  Mask3 hide = xt::ones<bool>({std::size_t(2), std::size_t(128), std::size_t(128)});
  for (std::size_t h = 0; h < 2; ++h)
    for (std::size_t i = 0; i < 128; ++i) hide(h, i, 127) = false;
  ScoreMod cap;
  cap.softcap = variants::SoftCap{5.0};
  struct Run {
    const char* name;
    const Mask3* mask;
    bool causal;
    const ScoreMod* mod;
  };
  for (const Run& run : {Run{"mask", &hide, false, nullptr}, Run{"causal", nullptr, true, nullptr},
                         Run{"softcap", nullptr, false, &cap}}) {
    CAPTURE(std::string(run.name));
    SdpaOptions so;
    so.causal = run.causal;
    if (run.mod) so.score_mod = *run.mod;
    const SdpaResult ref = sdpa(q, k, v, run.mask, so);
    FlashOptions fo;
    fo.causal = run.causal;
    fo.score_mod = run.mod;
    fo.block_q = fo.block_k = 64;
    const FlashResult f = flash_attention(q, k, v, run.mask, fo);
    CHECK(test::max_abs_diff(test::flat_tensor(f.output), test::flat_tensor(ref.output)) <= 1e-5);
  }
}

TEST_CASE("flash: weights recomputed from the kernel's lse equal the naive weights") {
  Rng rng(9);
  const Tensor3 q = randn(rng, 2, 9, 8), k = randn(rng, 2, 11, 8), v = randn(rng, 2, 11, 4);
  FlashOptions fo;
  fo.causal = true;
  const FlashResult f = flash_attention(q, k, v, nullptr, fo);
  SdpaOptions so;
  so.causal = true;
  const SdpaResult ref = sdpa(q, k, v, nullptr, so);
  CHECK(xt::allclose(recompute_weights(q, k, xt::cast<double>(f.lse), nullptr, true, std::nullopt), ref.weights, 1e-5, 1e-6));
}

TEST_CASE("flash: recomputed weights are the same bits on 1 and 3 threads, with GQA, a mask and a score modifier") {
  Rng rng(10);
  const Tensor3 q = randn(rng, 6, 9, 8), k = randn(rng, 2, 11, 8);
  Mask3 allowed = xt::ones<bool>({std::size_t(1), std::size_t(9), std::size_t(11)});
  allowed(0, 4, 2) = false;
  ScoreMod mod;
  mod.softcap = variants::SoftCap{5.0};
  xt::xtensor<double, 2> lse = xt::zeros<double>({std::size_t(6), std::size_t(9)});
  lse(3, 1) = -INFINITY;  // a row the kernel found fully masked stays zero
  const Tensor3 one = recompute_weights(q, k, lse, &allowed, true, std::nullopt, &mod, 0.7, 1);
  const Tensor3 three = recompute_weights(q, k, lse, &allowed, true, std::nullopt, &mod, 0.7, 3);
  CHECK(one == three);
  CHECK(xt::sum(xt::view(one, 3, 1))() == 0.0f);
  CHECK(one(0, 4, 2) == 0.0f);
  CHECK(double(xt::sum(xt::view(one, 5, 8))()) == doctest::Approx(1.0).epsilon(1e-6));
}

TEST_CASE("flash: recomputed weights are softmax of scale q.k in four partial sums, bit for bit, keys four at a time or alone") {
  // The definition, written out: q.k in float64 as four partial sums (c mod 4) added pairwise.
  // The engine takes runs of four visible keys together and the rest alone, in blocks of 256
  // keys; the mask's holes and the causal edge split the runs, d covers partial groups of 4, and
  // ALiBi's bias (which depends on j) with a temperature checks each score reaches its own key.
  Rng rng(11);
  for (const auto& shape : {std::array<std::size_t, 3>{7, 13, 1}, {7, 13, 2}, {7, 13, 3}, {7, 13, 4}, {7, 13, 5},
                            {7, 13, 8}, {7, 13, 67}, {3, 300, 5}})
    for (bool modded : {false, true}) {
      const std::size_t H = 4, Lq = shape[0], Lk = shape[1], d = shape[2];
      CAPTURE(Lk);
      CAPTURE(d);
      CAPTURE(modded);
      const Tensor3 q = randn(rng, H, Lq, d), k = randn(rng, 2, Lk, d);
      Mask3 allowed = xt::ones<bool>({std::size_t(1), Lq, Lk});
      for (std::size_t hole : {5, 30, 64, 100, 111, 261, 299}) allowed(0, hole % Lq, hole % Lk) = false;
      xt::xtensor<double, 2> lse = xt::zeros<double>({H, Lq});
      lse(1, Lq - 2) = -INFINITY;  // a row the kernel found fully masked stays zero
      ScoreMod mod;
      mod.alibi = variants::AlibiBias{{0.5, 0.25, 0.125, 1.0}};
      const double scale = 1.0 / std::sqrt(double(d)), temperature = modded ? 0.7 : 1.0;
      TensorD3 expected = xt::zeros<double>({H, Lq, Lk});
      for (std::size_t h = 0; h < H; ++h)
        for (std::size_t i = 0; i < Lq; ++i) {
          if (lse(h, i) == -INFINITY) continue;
          std::vector<double> row(Lk);
          for (std::size_t j = 0; j < Lk; ++j) {
            if (j > i + (Lk - Lq) || !allowed(0, i, j)) {  // causal, bottom-right aligned
              row[j] = -INFINITY;
              continue;
            }
            double part[4] = {0, 0, 0, 0};
            for (std::size_t c = 0; c < d; ++c) part[c % 4] += double(q(h, i, c)) * double(k(h / 2, j, c));
            const double s = (part[0] + part[1]) + (part[2] + part[3]);
            row[j] = modded ? mod.apply(s * scale * temperature, h, long(i + Lk - Lq), long(j)) / temperature : s * scale;
          }
          softmax_row_inplace(row.data(), Lk);
          std::copy(row.begin(), row.end(), &expected(h, i, 0));
        }
      const ScoreMod* m = modded ? &mod : nullptr;
      const TensorD3 f64 = detail::recompute_weights_f64(xt::cast<double>(q), xt::cast<double>(k), lse, &allowed,
                                                         true, scale, m, temperature);
      CHECK(f64 == expected);
      const Tensor3 f32 = recompute_weights(q, k, lse, &allowed, true, scale, m, temperature, 2);
      CHECK(f32 == Tensor3(xt::cast<float>(expected)));
    }
}

TEST_CASE("tile math: the online softmax over tiles equals one softmax over the row") {
  const float scores[] = {0.5f, -1.0f, 3.0f, 2.0f, -INFINITY, 7.0f, 1.0f};
  // Two tiles: [0, 3) and [3, 7), in base 2 as the kernels use.
  tile::RowState st = tile::row_start();
  double o = 0;  // unnormalised weighted sum of values v_j = j
  for (auto [a, b] : {std::pair{0, 3}, std::pair{3, 7}}) {
    float tmax = -INFINITY;
    for (int j = a; j < b; ++j) tmax = std::max(tmax, scores[j]);
    const float alpha = tile::row_rescale(st, tmax);
    o *= alpha;
    for (int j = a; j < b; ++j) {
      const double p = std::exp2(double(scores[j]) - st.m);
      st.l += float(p);
      o += p * j;
    }
  }
  double z = 0, expect = 0;
  for (int j = 0; j < 7; ++j) z += std::exp2(double(scores[j]));
  for (int j = 0; j < 7; ++j) expect += std::exp2(double(scores[j])) / z * j;
  CHECK(o * tile::row_output_scale(st) == doctest::Approx(expect).epsilon(1e-6));
  CHECK(tile::row_lse(st) == doctest::Approx(std::log(z)).epsilon(1e-6));
}

TEST_CASE("tile math: a row whose first tile is fully masked is not poisoned by NaN") {
  tile::RowState st = tile::row_start();
  CHECK(tile::row_rescale(st, -INFINITY) == 1.0f);  // -inf - (-inf) would be NaN
  CHECK(st.m == -INFINITY);
  CHECK(tile::row_output_scale(st) == 0.0f);
  CHECK(std::isinf(tile::row_lse(st)));
  tile::row_rescale(st, 2.0f);  // first visible key: nothing accumulated to rescale
  CHECK(st.m == 2.0f);
  CHECK(st.l == 0.0f);
  st.l += 1.0f;
  CHECK(tile::row_lse(st) == doctest::Approx(2.0 * std::log(2.0)));
}

TEST_CASE("tile math: causal tiles are skipped and tested by index, bottom-right aligned") {
  CHECK(tile::causal_key_end(1, 4, 4) == 1);   // first query row sees key 0 only
  CHECK(tile::causal_key_end(4, 4, 4) == 4);
  CHECK(tile::causal_key_end(1, 2, 5) == 4);   // Lq < Lk: query 0 is position 3
  CHECK(tile::causal_key_end(2, 6, 3) == 0);   // Lq > Lk: first rows see nothing
  CHECK(tile::causal_tile_full(8, 8, 16, 16));   // keys 0..7 all visible from row 8 on
  CHECK_FALSE(tile::causal_tile_full(8, 10, 16, 16));
}

TEST_CASE("flash_tiles: the tile grid a causal run uses, classified as the kernel treats it") {
  FlashOptions o;
  o.causal = true;
  o.isa = "generic";
  o.precision = FlashPrecision::float64;  // generic double: key panels of 4, so 4 x 4 tiles stay 4 x 4
  o.block_q = o.block_k = 4;
  const std::vector<FlashTile> tiles = flash_tiles(8, 8, o);
  REQUIRE(tiles.size() == 4);
  using K = FlashTile::Kind;
  CHECK(tiles[0].kind == K::diagonal);  // rows 0-3 x keys 0-3
  CHECK(tiles[1].kind == K::skipped);   // rows 0-3 x keys 4-7: all in the future
  CHECK(tiles[2].kind == K::full);      // rows 4-7 x keys 0-3: all in the past
  CHECK(tiles[3].kind == K::diagonal);
  // For any sizes: every cell is in exactly one tile; skipped tiles hold only invisible
  // cells, full tiles only visible ones.
  for (auto [Lq, Lk, bq, bk] : {std::array<std::size_t, 4>{7, 13, 3, 4}, {13, 7, 5, 4}, {9, 9, 2, 8}}) {
    o.block_q = bq;
    o.block_k = bk;
    std::vector<int> covered(Lq * Lk, 0);
    for (const FlashTile& t : flash_tiles(Lq, Lk, o))
      for (std::size_t i = t.i0; i < t.i0 + t.rows; ++i)
        for (std::size_t j = t.j0; j < t.j0 + t.cols; ++j) {
          ++covered[i * Lk + j];
          const bool visible = tile::causal_visible(long(i), long(j), long(Lq), long(Lk));
          if (t.kind == K::skipped) CHECK_FALSE(visible);
          if (t.kind == K::full) CHECK(visible);
        }
    for (int c : covered) CHECK(c == 1);
  }
}

TEST_CASE("flash: oversized tiles are refused with an input error, not allocated") {
  const Tensor3 q = xt::zeros<float>({std::size_t{1}, std::size_t{5000}, std::size_t{1}});
  FlashOptions o;
  o.block_q = o.block_k = 5000;  // 25M scores per tile
  CHECK_THROWS_WITH_AS(flash_attention(q, q, q, nullptr, o), doctest::Contains("block_size"), InputError);
  o.block_q = o.block_k = 0;  // the defaults are fine at this size
  CHECK(flash_attention(q, q, q, nullptr, o).output.shape(1) == 5000);
}

TEST_CASE("flash: share_of cuts n items into near-equal shares, in order, each item in exactly one") {
  // What each row block of a prefill product asks ahead of the next K panel or slice of V: a
  // share that overlaps another asks twice, a gap leaves lines for L3, a share past n reads
  // outside the panel.
  for (std::size_t n : {0, 1, 7, 33, 64, 128, 256})
    for (std::size_t blocks : {1, 2, 3, 11, 32, 40}) {
      CAPTURE(n);
      CAPTURE(blocks);
      std::size_t next = 0, smallest = n, largest = 0;
      for (std::size_t b = 0; b < blocks; ++b) {
        const attn::flash::Share s = attn::flash::share_of(n, b, blocks);
        CHECK(s.first == next);
        CHECK(s.first <= s.end);
        CHECK(s.end <= n);
        smallest = std::min(smallest, s.end - s.first);
        largest = std::max(largest, s.end - s.first);
        next = s.end;
      }
      CHECK(next == n);
      CHECK(largest - smallest <= 1);
      const attn::flash::Share past = attn::flash::share_of(n, blocks, blocks);
      CHECK(past.first == past.end);
    }
}

TEST_CASE("flash tile parts: one tile's three parts, in turn, give flash_attention's output on that tile bit for bit") {
  for (const std::string isa : {"", "avx512", "avx2", "generic"}) {
    if (!isa.empty() && !flash::microkernels_named<float>(isa)) continue;  // not on this CPU
    FlashOptions o;
    o.isa = isa;
    // A run that is one tile: keys a multiple of every ISA's K panel (the lane maxima) or not
    // (row_max); then the first tile of runs of many tiles (V's panel stride is the run's).
    for (const auto& shape : {std::pair<std::size_t, std::size_t>{192, 64}, {50, 16}, {1000, 64}, {2000, 40}}) {
      const std::size_t n = shape.first, d = shape.second;  // not a structured binding: clang 14's CAPTURE
      CAPTURE(isa);
      CAPTURE(n);
      FlashTileParts t(n, d, o);
      const FlashTiling tiling = flash_tiling(n, n, o);
      CHECK(t.rows() == tiling.block_q);
      CHECK(t.keys() == std::min(tiling.block_k, n));
      REQUIRE(t.q().shape(1) == t.rows());
      REQUIRE(t.k().shape(1) == t.keys());
      t.restart();
      t.scores();
      t.softmax();
      t.accumulate();
      const std::vector<float> parts = t.output();
      // The same rows against the tile's keys alone: a run that is that one tile.
      const FlashResult whole = flash_attention(t.q(), t.k(), t.v(), nullptr, o);
      REQUIRE(whole.output.size() == parts.size());
      CHECK(std::memcmp(parts.data(), whole.output.data(), parts.size() * sizeof(float)) == 0);
      // A second pass from a restart gives the same bits again (restart resets every row).
      t.restart();
      t.scores();
      t.softmax();
      t.accumulate();
      const std::vector<float> again = t.output();
      CHECK(std::memcmp(again.data(), parts.data(), parts.size() * sizeof(float)) == 0);
    }
  }
  CHECK_THROWS_AS(FlashTileParts(0, 64, {}), InputError);
  // What a tile of a float32 run without mask would not do is refused, not silently dropped.
  FlashOptions causal, f64, big;
  causal.causal = true;
  f64.precision = FlashPrecision::float64;
  big.block_q = 70000;
  for (const FlashOptions& o : {causal, f64, big}) CHECK_THROWS_AS(FlashTileParts(100, 16, o), InputError);
}
