// FlashPrecision::bfloat16 against the float64 oracle, under FlashAttention's rule with the
// plain bfloat16 computation (sdpa_bf16_reference) as the baseline: the kernel's error at most
// 2x the plain one's. Over the shapes that break tiled kernels, on the best kernels this CPU has
// (AMX tiles, else AVX512_BF16) and on the portable ones everywhere.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "attn/engine/attention/flash.hpp"
#include "attn/engine/attention/variant.hpp"
#include "attn/engine/core/random.hpp"
#include "engine/attention/flash/microkernels_bf16.hpp"  // the private kernels, tested directly
#include "support.hpp"

using namespace attn;
using test::randn;

namespace {

struct Bf16Case {
  std::size_t H, Hkv, Lq, Lk, d, dv;
  bool causal = false;
  std::size_t block_q = 0, block_k = 0;
  bool mask = false;    // an explicit random mask with a fully masked row
  bool window = false;  // a sliding window (the variant rule, read by index in the tile loop)
};

// The rule's two errors for one case on one set of kernels ("" = the best, "generic" = portable).
struct Bf16Errors {
  double kernel, plain;
};

Bf16Errors bf16_errors(const Bf16Case& c, const char* isa, std::uint64_t seed, bool swap_q_pairs = false) {
  Rng rng(seed);
  Tensor3 q = randn(rng, c.H, c.Lq, c.d);
  const Tensor3 k = randn(rng, c.Hkv, c.Lk, c.d), v = randn(rng, c.Hkv, c.Lk, c.dv);
  Mask3 mask;
  if (c.mask) {
    mask = Mask3::from_shape({c.H, c.Lq, c.Lk});
    for (bool& b : mask) b = rng.uniform() < 0.7;
    for (std::size_t j = 0; j < c.Lk; ++j) mask(0, c.Lq / 2, j) = false;  // one fully masked row
  }
  AttentionMask rule;
  if (c.window) rule.window = variants::SlidingWindow{20, 5};
  if (c.window) {  // the reference gets the rule as the bitmap it stands for
    const Mask2 bitmap = rule.allowed(c.Lq, c.Lk);
    mask = Mask3::from_shape({1, c.Lq, c.Lk});
    std::copy(bitmap.begin(), bitmap.end(), mask.begin());
  }
  const Mask3* allowed = c.mask || c.window ? &mask : nullptr;
  SdpaOptions so;
  so.causal = c.causal;
  const SdpaResult ref = sdpa(q, k, v, allowed, so);  // float64 inside
  const Tensor3 plain = sdpa_bf16_reference(q, k, v, allowed, c.causal);
  FlashOptions fo;
  fo.causal = c.causal;
  fo.precision = FlashPrecision::bfloat16;
  fo.isa = isa;
  fo.block_q = c.block_q;
  fo.block_k = c.block_k;
  fo.threads = 2;
  if (c.window) fo.mask_rule = &rule;
  if (swap_q_pairs)  // a deliberate bug: each pair of dims of Q swapped, as a wrong packing would
    for (std::size_t h = 0; h < c.H; ++h)
      for (std::size_t i = 0; i < c.Lq; ++i)
        for (std::size_t x = 0; x + 1 < c.d; x += 2) std::swap(q(h, i, x), q(h, i, x + 1));
  const FlashResult f = flash_attention(q, k, v, c.window ? nullptr : allowed, fo);
  for (std::size_t i = 0; i < (swap_q_pairs ? 0 : f.lse.size()); ++i) {  // fully masked rows: -inf, as the oracle
    const float a = f.lse.data()[i], b = ref.lse.data()[i];
    if (std::isinf(b)) CHECK(a == b);
    else CHECK(std::fabs(a - b) <= 2e-2 * std::max(1.0f, std::fabs(b)));  // bfloat16 inputs move the scores
  }
  return {test::max_abs_diff(test::flat_tensor(f.output), test::flat_tensor(ref.output)),
          test::max_abs_diff(test::flat_tensor(plain), test::flat_tensor(ref.output))};
}

const Bf16Case kBf16Cases[] = {
    {1, 1, 1, 1, 1, 1},                                  // d = 1 (odd: a padded pair), one key
    {2, 2, 7, 13, 5, 3},                                 // nothing a multiple of anything
    {3, 3, 100, 37, 64, 64, true},                       // causal, Lq > Lk: the first rows see no key
    {2, 2, 33, 300, 24, 24, true},                       // causal, Lq < Lk, d = 24
    {4, 2, 65, 129, 80, 80, true},                       // GQA, d = 80 (5 registers of output columns)
    {4, 1, 50, 70, 64, 40},                              // MQA, dv not a multiple of 16
    {2, 2, 40, 90, 64, 64, false, 0, 0, true},           // explicit mask with a fully masked row
    {2, 2, 200, 333, 64, 64, false, 0, 0, false, true},  // a sliding window (variant rule)
    {2, 2, 300, 300, 64, 64, true, 24, 64},              // many tiles per row; keys odd at the diagonal
    {1, 1, 257, 513, 24, 24, true, 200, 100},            // tiles that divide nothing (key tile -> 128)
    {2, 2, 70, 150, 128, 80, true},                      // d = 128 (AMX: 4 steps), dv = 80 (a 16-column edge)
    {2, 1, 37, 95, 32, 32, false, 0, 0, true},           // d = 32 (AMX: one step), a mask, odd keys
};

}  // namespace

TEST_CASE("flash bf16: odd shapes keep within 2x the plain bfloat16 error against float64") {
  std::uint64_t seed = 100;
  for (const Bf16Case& c : kBf16Cases) {
    ++seed;
    for (const std::string isa : {"", "generic"}) {
      CAPTURE(isa);
      CAPTURE(c.Lq);
      CAPTURE(c.Lk);
      CAPTURE(c.d);
      CAPTURE(c.causal);
      const Bf16Errors e = bf16_errors(c, isa.c_str(), seed);
      CAPTURE(e.kernel);
      CAPTURE(e.plain);
      CHECK(e.kernel <= 2 * e.plain + 1e-6);
      CHECK(e.plain > 0);  // d = 1 too: one key, but bfloat16 V rounds
    }
  }
}

TEST_CASE("flash bf16: the 2x rule fails a kernel with a pair of dims swapped") {
  // The check above can fail: the same kernel on Q with each pair of dims swapped (what a packing
  // that swapped a pair would compute) is far outside it.
  const Bf16Case c{2, 2, 64, 96, 64, 64, true};
  const Bf16Errors good = bf16_errors(c, "", 7), broken = bf16_errors(c, "", 7, /*swap_q_pairs=*/true);
  CAPTURE(good.kernel);
  CAPTURE(broken.kernel);
  CHECK(good.kernel <= 2 * good.plain + 1e-6);
  CHECK(broken.kernel > 10 * broken.plain);
}

TEST_CASE("flash bf16: the plain bfloat16 reference rounds the inputs and P") {
  // With one visible key per row, P = 1 exactly: the reference is V rounded to bfloat16.
  Rng rng(3);
  const Tensor3 q = randn(rng, 1, 5, 8), k = randn(rng, 1, 5, 8), v = randn(rng, 1, 5, 8);
  Mask3 diagonal = xt::zeros<bool>({1, 5, 5});
  for (std::size_t i = 0; i < 5; ++i) diagonal(0, i, i) = true;
  const Tensor3 out = sdpa_bf16_reference(q, k, v, &diagonal, false);
  const Tensor3 vb = from_bf16(to_bf16(v));
  CHECK(test::max_abs_diff(test::flat_tensor(out), test::flat_tensor(vb)) == 0.0);
  // Three keys of equal score: P = 1/3, which bfloat16 rounds (to 0x3eab = 0.333984375), times
  // V rounded, summed in float64.
  const Tensor3 k3 = xt::zeros<float>({1, 3, 8}), v3 = randn(rng, 1, 3, 8), q3 = randn(rng, 1, 1, 8);
  const Tensor3 third = sdpa_bf16_reference(q3, k3, v3, nullptr, false);
  const Tensor3 v3b = from_bf16(to_bf16(v3));
  const double p = std::bit_cast<float>(std::uint32_t(0x3eab) << 16);
  for (std::size_t c = 0; c < 8; ++c) {
    double expected = 0;
    for (std::size_t j = 0; j < 3; ++j) expected += p * double(v3b(0, j, c));
    CHECK(third(0, 0, c) == float(expected));
  }
}

namespace {

// The largest difference between a kernel set's products and the portable kernels' on one
// shape: Q K^T over `rows` rows, d dims and `keys` keys (packed into whole panels), then P V
// over pk keys and dv columns, onto an O with a rescale. Past what the caller owns nothing may
// be written: S and O carry sentinel rows, and P past its keys (and the zero after an odd
// count) holds NaN, which a kernel reading it would spread.
double products_gap(const flash::Bf16Kernels& fast, std::size_t rows, std::size_t d, std::size_t keys,
                    std::size_t pk, std::size_t dv, std::uint64_t seed) {
  const flash::Bf16Kernels& portable = flash::bf16_kernels_portable();
  Rng rng(seed);
  auto bits = [&](std::size_t n) {  // n random bfloat16 values
    std::vector<float> x(n);
    for (float& f : x) f = float(rng.normal());
    std::vector<std::uint16_t> b(n);
    round_to_bf16(x.data(), n, b.data());
    return b;
  };
  const std::size_t dp = flash::bf16_even(d), npanels = (keys + 63) / 64, lds = npanels * 64 + 3;
  const std::vector<std::uint16_t> q = bits(rows * dp), k = bits(keys * d);
  std::vector<std::uint16_t> panels(npanels * 64 * dp);
  flash::pack_k_bf16(k.data(), keys, d, panels.data());
  const float sentinel = 12345.0f;
  std::vector<float> s1((rows + 1) * lds, sentinel), s2 = s1;
  fast.qk(q.data(), dp, rows, panels.data(), npanels, 0.125f, s1.data(), lds);
  portable.qk(q.data(), dp, rows, panels.data(), npanels, 0.125f, s2.data(), lds);
  double worst = 0;
  for (std::size_t i = 0; i < s1.size(); ++i) worst = std::max(worst, double(std::fabs(s1[i] - s2[i])));
  for (std::size_t j = 0; j < lds; ++j) CHECK(s1[rows * lds + j] == sentinel);

  const std::size_t dvp = (dv + 15) / 16 * 16, ldp = flash::bf16_even(pk) + 40;
  std::vector<std::uint16_t> p = bits(rows * ldp), v = bits(pk * dv), vp(flash::bf16_even(pk) * dvp);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = pk; j < ldp; ++j) p[r * ldp + j] = j == pk && pk % 2 ? 0 : 0x7fc0;  // NaN past the keys
  flash::pack_v_bf16(v.data(), pk, dv, dvp, vp.data());
  std::vector<float> alpha(rows);
  for (std::size_t r = 0; r < rows; ++r) alpha[r] = float(r % 4) * 0.5f;  // 0 included
  std::vector<float> o1((rows + 1) * dvp, 1.0f), o2 = o1;
  for (std::size_t c = 0; c < dvp; ++c) o1[rows * dvp + c] = o2[rows * dvp + c] = sentinel;
  fast.pv(p.data(), ldp, rows, pk, vp.data(), dvp, alpha.data(), o1.data(), dvp);
  portable.pv(p.data(), ldp, rows, pk, vp.data(), dvp, alpha.data(), o2.data(), dvp);
  for (std::size_t i = 0; i < o1.size(); ++i) {
    CHECK(std::isfinite(o1[i]));
    worst = std::max(worst, double(std::fabs(o1[i] - o2[i])));
  }
  for (std::size_t c = 0; c < dvp; ++c) CHECK(o1[rows * dvp + c] == sentinel);
  return worst;
}

}  // namespace

TEST_CASE("flash bf16: the AVX512_BF16, AMX and AVX2 kernels compute the portable ones' sums") {
  // The same exact products summed in float32: equal but for the order the hardware adds them
  // in (sums of up to 128 products of size ~1: a few float32 ulps). On a Zen 5 EPYC vdpbf16ps
  // and the portable kernels are bitwise equal (it adds the odd product first, as Intel
  // documents); AMX adds a step's 32 products in its own order. The AVX2 kernels add each
  // product by an FMA in the portable kernels' order (microkernels_bf16_avx2.cpp): bit for bit
  // on these values, whose products stay normal.
  struct Shape {
    std::size_t rows, d, keys, pk, dv;
  };
  const Shape shapes[] = {
      {12, 80, 100, 99, 80},    // d = 80: Q K^T not whole steps of the tiles; dv = 80: a 16-column edge
      {6, 64, 64, 1, 16},       // fewer rows than a tile; one key; one column of tiles
      {36, 64, 130, 33, 64},    // a whole 32-row block and 4 rows; a partial step of key pairs
      {198, 128, 192, 192, 128},  // d = 128; many blocks; whole steps of key pairs
      {96, 32, 64, 96, 48},     // d = 32: one step; dv = 48: one block and an edge
      {6, 2, 64, 3, 16},        // d = 2: one pair of dims
      {12, 64, 64, 300, 64},    // 150 key pairs: past AVX2's and AVX-512's 128-pair slices
  };
  int sets = 0;
  for (const flash::Bf16Kernels* fast :
       {flash::bf16_kernels_avx512(), flash::bf16_kernels_amx(), flash::bf16_kernels_avx2()}) {
    if (!fast) continue;  // this CPU or build lacks them: the portable kernels stand in
    ++sets;
    std::uint64_t seed = 5;
    for (const Shape& sh : shapes) {
      const std::string isa = fast->isa;
      CAPTURE(isa);
      CAPTURE(sh.rows);
      CAPTURE(sh.d);
      CAPTURE(sh.pk);
      CAPTURE(sh.dv);
      const double bound = isa == "avx2" ? 0.0 : 1e-5 * std::sqrt(double(sh.d + sh.pk));
      CHECK(products_gap(*fast, sh.rows, sh.d, sh.keys, sh.pk, sh.dv, ++seed) <= bound);
    }
  }
  MESSAGE("kernel sets compared with the portable ones here: " << sets);
  if (flash::bf16_kernels_avx2()) CHECK(std::string(flash::bf16_kernels_for("avx2").isa) == "avx2");
  CHECK(std::string(flash::bf16_kernels_for("generic").isa) == "portable");
}

TEST_CASE("flash bf16: the kernels' comparison fails a kernel that drops a partial step") {
  // products_gap can fail: a kernel that skips the last key pair (as a tile loop that forgot
  // its partial step would) is far from the portable sums.
  static const flash::Bf16Kernels& portable = flash::bf16_kernels_portable();
  static const flash::Bf16Kernels short_pv{
      "broken", portable.blocking, portable.qk,
      [](const std::uint16_t* p, std::size_t ldp, std::size_t rows, std::size_t keys, const std::uint16_t* v,
         std::size_t dvp, const float* alpha, float* o, std::size_t ldo) {
        portable.pv(p, ldp, rows, keys > 2 ? keys - 2 : keys, v, dvp, alpha, o, ldo);
      }};
  CHECK(products_gap(short_pv, 36, 64, 130, 33, 64, 9) > 0.01);
}

TEST_CASE("flash bf16: the packings put each pair where vdpbf16ps reads it") {
  // K [3 keys, d = 3] -> panel [2 pairs][64 keys][2]: key t's dims (0, 1) then (2, pad 0).
  const std::vector<std::uint16_t> k{1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<std::uint16_t> panels(64 * 4, 99);
  flash::pack_k_bf16(k.data(), 3, 3, panels.data());
  CHECK(panels[0] == 1);
  CHECK(panels[1] == 2);
  CHECK(panels[2] == 4);  // key 1's first pair
  CHECK(panels[128] == 3);
  CHECK(panels[129] == 0);  // the padding dim
  CHECK(panels[6] == 0);    // key 3 does not exist
  // V [3 keys, dv = 2], dvp = 16 -> [2 key pairs][16][2]: (key 0, key 1) of each column.
  const std::vector<std::uint16_t> v{1, 2, 3, 4, 5, 6};
  std::vector<std::uint16_t> pairs(2 * 16 * 2, 99);
  flash::pack_v_bf16(v.data(), 3, 2, 16, pairs.data());
  CHECK(pairs[0] == 1);
  CHECK(pairs[1] == 3);
  CHECK(pairs[2] == 2);
  CHECK(pairs[3] == 4);
  CHECK(pairs[4] == 0);  // column 2 is padding
  CHECK(pairs[32] == 5);
  CHECK(pairs[33] == 0);  // key 3 does not exist
}

TEST_CASE("flash bf16: tiling names its kernels, and precision bf16 refuses nothing float32 takes") {
  FlashOptions fo;
  fo.precision = FlashPrecision::bfloat16;
  const FlashTiling t = flash_tiling(1000, 1000, fo);
  CHECK(t.block_k % 64 == 0);
  // Each ISA's kernels under the name of their own blocking (rows x accumulator registers), not
  // one name for all: AVX2's 16 registers hold 6 rows x 2 registers of 8 floats, where AVX-512's
  // 32 hold 6 x 4 registers of 16.
  const std::map<std::string, std::string> blocking{
      {"amx-bf16", "32x32"}, {"avx512bf16", "6x4"}, {"avx2", "6x2"}, {"portable", "1x64"}};
  REQUIRE(blocking.count(t.isa) == 1);
  CHECK(t.qk_kernel == blocking.at(t.isa));
  CHECK(t.pv_kernel == blocking.at(t.isa));
  fo.isa = "generic";
  CHECK(flash_tiling(10, 10, fo).isa == std::string("portable"));
  CHECK(flash_tiling(10, 10, fo).qk_kernel == "1x64");
  if (flash::bf16_kernels_avx2()) {  // this CPU has AVX2 and FMA: "avx2" picks those kernels
    fo.isa = "avx2";
    CHECK(flash_tiling(10, 10, fo).qk_kernel == "6x2");
  }
  CHECK(flash_tiling(10, 10, fo).block_k == 64);
}
