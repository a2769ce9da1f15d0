// The decode path (a few queries against a long KV cache, split into chunks and merged) against
// the float64 oracle under FlashAttention's 2x rule, over the shapes that break a split: Lk not
// a multiple of any chunk, chunks whose keys are all masked, GQA/MQA, 1-4 threads.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/flash.hpp"
#include "attn/engine/attention/mask.hpp"
#include "attn/engine/attention/tile_math.hpp"
#include "engine/attention/flash/flash_decode.hpp"  // private: called directly to reach every Lk
#include "engine/attention/flash/microkernels.hpp"
#include "fa_check.hpp"
#include "fa_rule.hpp"
#include "support.hpp"

using namespace attn;
using test::randn;

namespace {

enum class MaskKind { none, causal, random, window, first_half_hidden };

struct DecodeCase {
  std::size_t H, Hkv, Lq, Lk;
  MaskKind mask = MaskKind::none;
  std::size_t threads = 2;
  std::size_t d = 64, dv = 64;
};

Mask3 make_mask(const DecodeCase& c, Rng& rng) {
  Mask3 m = xt::ones<bool>({c.H, c.Lq, c.Lk});
  if (c.mask == MaskKind::random) {
    for (bool& b : m) b = rng.uniform() < 0.6;
    for (std::size_t j = 0; j < c.Lk; ++j) m(0, c.Lq - 1, j) = false;  // one fully masked row
  } else if (c.mask == MaskKind::window) {
    const Mask2 w = sliding_window_allowed(c.Lq, c.Lk, 300, 0);
    for (std::size_t h = 0; h < c.H; ++h) xt::view(m, h) = w;
  } else if (c.mask == MaskKind::first_half_hidden) {  // whole chunks of keys masked for every row
    for (std::size_t h = 0; h < c.H; ++h)
      for (std::size_t i = 0; i < c.Lq; ++i)
        for (std::size_t j = 0; j < c.Lk / 2; ++j) m(h, i, j) = false;
  }
  return m;
}

template <class T>
void run_decode(const DecodeCase& c, const Tensor3& q, const Tensor3& k, const Tensor3& v, const Mask3* allowed,
                Tensor3& out, Tensor2& lse, const flash::Microkernels<T>& mk) {
  const flash::DecodeProblem p{c.H,    c.Lq, c.d, c.Hkv, c.Lk, c.dv, 1.0 / std::sqrt(double(c.d)),
                               c.mask == MaskKind::causal, allowed, c.threads};
  const xt::xtensor<T, 3> qt = xt::cast<T>(q), kt = xt::cast<T>(k), vt = xt::cast<T>(v);
  xt::xtensor<T, 3> o = xt::zeros<T>({c.H, c.Lq, c.dv});
  xt::xtensor<T, 2> l = xt::zeros<T>({c.H, c.Lq});
  flash::flash_decode<T>(mk, p, qt.data(), kt.data(), vt.data(), o.data(), l.data());
  out = xt::cast<float>(o);
  lse = xt::cast<float>(l);
}

template <class T>
void check_decode(const DecodeCase& c, std::uint64_t seed,
                  const flash::Microkernels<T>& mk = flash::best_microkernels<T>()) {
  CAPTURE(mk.isa);
  CAPTURE(c.H);
  CAPTURE(c.Hkv);
  CAPTURE(c.Lq);
  CAPTURE(c.Lk);
  CAPTURE(int(c.mask));
  CAPTURE(c.threads);
  Rng rng(seed);
  const Tensor3 q = randn(rng, c.H, c.Lq, c.d), k = randn(rng, c.Hkv, c.Lk, c.d), v = randn(rng, c.Hkv, c.Lk, c.dv);
  const bool explicit_mask = c.mask != MaskKind::none && c.mask != MaskKind::causal;
  const Mask3 mask = explicit_mask ? make_mask(c, rng) : Mask3{};
  const Mask3* allowed = explicit_mask ? &mask : nullptr;
  SdpaOptions so;
  so.causal = c.mask == MaskKind::causal;
  const SdpaResult ref = sdpa(q, k, v, allowed, so);  // float64 inside
  Tensor3 out;
  Tensor2 lse;
  run_decode<T>(c, q, k, v, allowed, out, lse, mk);
  const Tensor3 plain = test::plain_float32_output(q, k, v, allowed, so.causal, 1.0f / std::sqrt(float(c.d)));
  test::check_fa_rule(out, lse, ref, plain);
}

}  // namespace

TEST_CASE("decode: every Lq, Lk and mask kind against the float64 oracle (2x rule)") {
  std::uint64_t seed = 1;
  for (std::size_t Lq : {1, 2, 7})
    for (std::size_t Lk : {std::size_t(1), Lq, std::size_t(127), std::size_t(129), std::size_t(1000), std::size_t(3333)})
      for (MaskKind mask : {MaskKind::none, MaskKind::causal, MaskKind::random, MaskKind::window}) {
        if (Lk < Lq) continue;
        check_decode<float>({4, 2, Lq, Lk, mask, 1 + seed % 4}, ++seed);
      }
}

TEST_CASE("decode: GQA 8:1 and 8:2, MQA, and threads 1-4 split the cache into merged chunks") {
  std::uint64_t seed = 100;
  for (std::size_t Hkv : {1, 2, 8})
    for (std::size_t threads : {1, 2, 3, 4}) check_decode<float>({8, Hkv, 1, 5000, MaskKind::none, threads}, ++seed);
  check_decode<float>({8, 1, 2, 20000, MaskKind::causal, 4}, ++seed);
  check_decode<float>({4, 1, 7, 20000, MaskKind::window, 3}, ++seed);
  // 32 query heads x 8 queries = 256 rows on one KV head: runs of one block (flash_decode.cpp)
  check_decode<float>({32, 1, 8, 2000, MaskKind::causal, 2}, ++seed);
}

TEST_CASE("decode: a chunk whose keys are all masked merges without NaN") {
  // Lk = 4096 on 4 threads, one KV head: 4 chunks of 1024 keys; the first two see nothing.
  check_decode<float>({2, 1, 1, 4096, MaskKind::first_half_hidden, 4}, 7);
  check_decode<float>({2, 1, 3, 4096, MaskKind::random, 4}, 8);
  const flash::DecodeSplit split = flash::decode_split(1, 4096, 2, 4);
  CHECK(split.chunks >= 3);  // so the test above really merged masked chunks
}

TEST_CASE("decode: every instruction set this CPU runs, d and d_v not multiples of a register") {
  for (const char* isa : {"avx512", "avx2", "generic"}) {
    if (const auto* mk = flash::microkernels_named<float>(isa)) {
      check_decode<float>({4, 2, 2, 2000, MaskKind::random, 2, 40, 24}, 31, *mk);
      check_decode<float>({2, 1, 1, 1500, MaskKind::causal, 3, 67, 19}, 32, *mk);
      // 8 query heads on one KV head: rows in blocks that share each K load, d past the last
      // whole register, and a last block of 21 keys (1301 = 10 x 128 + 21) that no key group fills.
      check_decode<float>({8, 1, 1, 1301, MaskKind::causal, 2, 67, 19}, 34, *mk);
    }
    if (const auto* mk = flash::microkernels_named<double>(isa)) {
      check_decode<double>({2, 2, 3, 900, MaskKind::none, 2}, 33, *mk);
      // 6 rows: a block of 4 and 2 rows one at a time (AVX2, AVX-512), or three blocks of 2
      // (the generic double kernel, 2 lanes).
      check_decode<double>({6, 1, 1, 901, MaskKind::random, 2, 37, 64}, 35, *mk);
    }
  }
}

// The scores of rows q[0..rows) against `keys` keys through the kernel set's qk_unpacked (float
// K) or qk_unpacked_bf16 (bfloat16 K), one row of `keys` scores each.
template <class T>
std::vector<T> unpacked_scores(const flash::Microkernels<T>& mk, const std::vector<T>& q, std::size_t rows,
                               std::size_t d, const std::vector<T>& k, const std::vector<std::uint16_t>* k16,
                               std::size_t keys) {
  std::vector<T> s(rows * keys, T(-1));
  if constexpr (std::is_same_v<T, float>)
    if (k16) {
      mk.qk_unpacked_bf16(q.data(), rows, d, k16->data(), d, keys, s.data(), keys, {8, keys});  // asks ahead too
      return s;
    }
  mk.qk_unpacked(q.data(), rows, d, k.data(), d, keys, s.data(), keys);
  return s;
}

// One query row's scores (the decode step's usual case, which reads each key's row whole with up
// to 8 of Q's vectors in registers, the rest reloaded) are, bit for bit, those of the same row
// inside a block of rows that share each K load (for the keys in whole groups): the same products
// in the same order, whichever keys share a block (AVX2's blocks of 3 keys, then single keys)
// and whether the rows go over K in passes (more rows than a block, more keys than a pass). And
// they are dot products: against float64 sums.
template <class T>
void check_one_row_scores(const flash::Microkernels<T>& mk, std::size_t d, bool bf16_k, std::size_t copies,
                          std::size_t keys, Rng& rng) {
  std::vector<T> row(d), k(keys * d);
  for (T& x : row) x = T(rng.normal());
  for (T& x : k) x = T(rng.normal());
  std::vector<std::uint16_t> k16;
  if (bf16_k)  // K cut to a bfloat16's 8 bits of mantissa: exactly what its bits hold
    for (T& x : k) {
      k16.push_back(std::uint16_t(std::bit_cast<std::uint32_t>(float(x)) >> 16));
      x = T(std::bit_cast<float>(std::uint32_t(k16.back()) << 16));
    }
  const std::vector<std::uint16_t>* kb = bf16_k ? &k16 : nullptr;
  const std::vector<T> one = unpacked_scores(mk, row, 1, d, k, kb, keys);
  std::vector<T> rows;  // copies of the row: blocks of rows that share each K load, and any rest one at a time
  for (std::size_t r = 0; r < copies; ++r) rows.insert(rows.end(), row.begin(), row.end());
  const std::vector<T> block = unpacked_scores(mk, rows, copies, d, k, kb, keys);
  for (std::size_t j = 0; j < keys; ++j) {
    CAPTURE(j);
    using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    // The bits where both sides are vector sums: not the last keys, fewer than a group (a d that
    // is not whole vectors ends in the same scalar FMAs on both sides).
    if (j < keys / mk.lanes * mk.lanes)
      for (std::size_t r = 0; r < copies; ++r) CHECK(std::bit_cast<Bits>(one[j]) == std::bit_cast<Bits>(block[r * keys + j]));
    // Against float64, within the bound on any order of the d - 1 additions and d products (rounded
    // where the ISA has no FMA): (2d + W) unit roundoffs of the sum of the terms' magnitudes.
    double dot = 0, magnitude = 0;
    for (std::size_t c = 0; c < d; ++c) {
      dot += double(row[c]) * double(k[j * d + c]);
      magnitude += std::abs(double(row[c]) * double(k[j * d + c]));
    }
    const double unit = sizeof(T) == 4 ? 0x1.0p-24 : 0x1.0p-53;
    CHECK(std::abs(double(one[j]) - dot) <= double(2 * d + mk.lanes) * unit * magnitude);
  }
}

TEST_CASE("decode: one query row's scores are the bits of that row in a block of rows, on every instruction set") {
  Rng rng(41);
  for (const std::string isa : {"avx512", "avx2", "generic"})
    for (std::size_t d : {8, 16, 32, 48, 64, 67, 96, 128}) {  // all of Q in registers, or part, or none
      CAPTURE(isa);
      CAPTURE(d);
      // 45 and 57 keys: not a multiple of any ISA's keys per group, so a tail of keys too; 4
      // rows: one block (on AVX2, 57 keys end in blocks of one key at keys 54 and 55, inside the
      // keys compared). 301 keys on 6 and 8 rows: passes of 128 keys, a block and two single
      // rows, or two blocks (GQA's 8 query heads on one KV head).
      for (const auto& shape :
           {std::pair<std::size_t, std::size_t>{4, 45}, {4, 57}, {6, 301}, {8, 301}}) {
        const std::size_t copies = shape.first, keys = shape.second;  // not a structured binding: clang 14's CAPTURE
        CAPTURE(copies);
        CAPTURE(keys);
        if (const auto* mk = flash::microkernels_named<float>(isa)) {
          check_one_row_scores<float>(*mk, d, false, copies, keys, rng);
          check_one_row_scores<float>(*mk, d, true, copies, keys, rng);
        }
        if (const auto* mk = flash::microkernels_named<double>(isa))
          check_one_row_scores<double>(*mk, d, false, copies, keys, rng);
      }
    }
}

TEST_CASE("decode: float64 instantiation is reference-grade") {
  check_decode<double>({4, 2, 2, 3000, MaskKind::random, 2}, 21);
  check_decode<double>({4, 4, 1, 2500, MaskKind::causal, 3}, 22);
}

TEST_CASE("decode: flash_attention takes the decode path by itself for one query and a long cache") {
  CHECK(flash::decode_path_applies(1, 4096, 0, 0));
  CHECK_FALSE(flash::decode_path_applies(64, 4096, 0, 0));  // prefill: tiled
  CHECK_FALSE(flash::decode_path_applies(1, 4096, 1, 64));  // explicit tiles: the tiled kernel
  CHECK_FALSE(flash::decode_path_applies(1, 16, 0, 0));     // a short sentence: tiled, as pictured
  Rng rng(5);
  const Tensor3 q = randn(rng, 8, 1, 64), k = randn(rng, 2, 6000, 64), v = randn(rng, 2, 6000, 64);
  FlashOptions fo;
  fo.threads = 2;
  const FlashResult f = flash_attention(q, k, v, nullptr, fo);
  const SdpaResult ref = sdpa(q, k, v, nullptr, {});
  const Tensor3 plain = test::plain_float32_output(q, k, v, nullptr, false, 0.125f);
  CHECK(test::max_abs_diff(test::flat_tensor(f.output), test::flat_tensor(ref.output)) <=
        2 * test::max_abs_diff(test::flat_tensor(plain), test::flat_tensor(ref.output)) + 1e-6);
}

TEST_CASE("decode: chunks and threads come from the work size") {
  for (std::size_t Lk : {256, 1000, 1024, 4096, 16384, 100000})
    for (std::size_t threads : {1, 2, 4, 16}) {
      CAPTURE(Lk);
      CAPTURE(threads);
      const flash::DecodeSplit s = flash::decode_split(8, Lk, 1, threads);
      CHECK(s.chunks * s.chunk_keys >= Lk);
      CHECK((s.chunks - 1) * s.chunk_keys < Lk);  // no empty chunk
      CHECK(s.threads >= 1);
      CHECK(s.threads <= threads);
      CHECK(s.threads <= 8 * s.chunks);
    }
  CHECK(flash::decode_split(1, 500, 1, 4).threads == 1);  // too little to share
  CHECK(flash::decode_split(8, 256, 1, 2).threads == 1);   // 1 MiB: one thread is as fast
  CHECK(flash::decode_split(8, 1024, 1, 2).threads == 2);  // 4 MiB: two threads are faster (a kept pool)
}

TEST_CASE("tile::row_merge: two halves of a row merge into the one-pass softmax (hand-derived)") {
  // Scores (base 2) {1, 3} in part A, {2} in part B; values v = {10, 20, 30}.
  tile::RowState<double> a{3, std::exp2(1 - 3.0) + 1};  // m = 3, l = 2^-2 + 2^0 = 1.25
  const double oa = std::exp2(-2.0) * 10 + 20;           // O relative to m = 3
  const tile::RowState<double> b{2, 1};
  const double ob = 30;
  const tile::MergeFactors<double> f = tile::row_merge(a, b);
  CHECK(a.m == 3);
  CHECK(f.a == 1);
  CHECK(f.b == doctest::Approx(0.5));  // 2^(2 - 3)
  CHECK(a.l == doctest::Approx(1.75));
  // One pass: weights 2^1, 2^3, 2^2 over 14 -> (2*10 + 8*20 + 4*30) / 14 = 300 / 14.
  CHECK((oa * f.a + ob * f.b) / a.l == doctest::Approx(300.0 / 14));

  tile::RowState<double> masked = tile::row_start<double>();
  const tile::MergeFactors<double> g = tile::row_merge(masked, tile::row_start<double>());
  CHECK(g.a == 0);
  CHECK(g.b == 0);
  CHECK(tile::row_lse(masked) == -INFINITY);
  CHECK(tile::row_output_scale(masked) == 0);
}

namespace {

// The bfloat16 cache: the kernel against the float64 oracle on the same bf16-rounded K and V
// (2x rule), so what is checked is the kernel's arithmetic, not the rounding of the cache.
void check_decode_bf16(const DecodeCase& c, std::uint64_t seed, const std::string& isa = "") {
  CAPTURE(isa);
  CAPTURE(c.H);
  CAPTURE(c.Hkv);
  CAPTURE(c.Lq);
  CAPTURE(c.Lk);
  CAPTURE(int(c.mask));
  CAPTURE(c.threads);
  Rng rng(seed);
  const Tensor3 q = randn(rng, c.H, c.Lq, c.d);
  const Bf16Tensor3 kb = to_bf16(randn(rng, c.Hkv, c.Lk, c.d)), vb = to_bf16(randn(rng, c.Hkv, c.Lk, c.dv));
  const Tensor3 k = from_bf16(kb), v = from_bf16(vb);
  const bool explicit_mask = c.mask != MaskKind::none && c.mask != MaskKind::causal;
  const Mask3 mask = explicit_mask ? make_mask(c, rng) : Mask3{};
  const Mask3* allowed = explicit_mask ? &mask : nullptr;
  SdpaOptions so;
  so.causal = c.mask == MaskKind::causal;
  const SdpaResult ref = sdpa(q, k, v, allowed, so);
  FlashOptions fo;
  fo.causal = so.causal;
  fo.threads = c.threads;
  fo.isa = isa;
  const FlashResult f = flash_decode_bf16(q, kb, vb, allowed, fo);
  const Tensor3 plain = test::plain_float32_output(q, k, v, allowed, so.causal, 1.0f / std::sqrt(float(c.d)));
  test::check_fa_rule(f.output, f.lse, ref, plain);
}

std::uint16_t bf16_of(float x, Bf16Rounding how) {
  std::uint16_t out;
  round_to_bf16(&x, 1, &out, how);
  return out;
}

}  // namespace

TEST_CASE("bf16: rounding to nearest even by hand, denormals to signed zero, NaN kept, overflow to inf") {
  for (Bf16Rounding how : {Bf16Rounding::portable, Bf16Rounding::best}) {
    CHECK(bf16_of(1.0f, how) == 0x3f80);
    CHECK(bf16_of(-2.5f, how) == 0xc020);
    CHECK(bf16_of(1.0f + 0x1p-8f, how) == 0x3f80);                // a tie: stays on the even 0x3f80
    CHECK(bf16_of(1.0f + 3 * 0x1p-8f, how) == 0x3f82);            // a tie: up to the even 0x3f82
    CHECK(bf16_of(1.0f + 0x1p-8f + 0x1p-20f, how) == 0x3f81);     // past the tie: up
    CHECK(bf16_of(1.0f + 0x1p-8f - 0x1p-20f, how) == 0x3f80);     // short of it: down
    CHECK(bf16_of(3.4028235e38f, how) == 0x7f80);                 // FLT_MAX rounds past bf16's largest
    CHECK(bf16_of(1e-40f, how) == 0x0000);
    CHECK(bf16_of(-1e-40f, how) == 0x8000);
    CHECK(bf16_of(INFINITY, how) == 0x7f80);
    const std::uint16_t nan = bf16_of(NAN, how);
    CHECK((nan & 0x7f80) == 0x7f80);
    CHECK((nan & 0x007f) != 0);
  }
}

TEST_CASE("bf16: the CPU's conversion and the portable one agree on every kind of float") {
  INFO("AVX512_BF16 on this CPU: " << cpu_has_avx512_bf16());
  Rng rng(9);
  std::vector<float> x(1 << 18);
  for (float& f : x) {  // random bit patterns: every exponent, denormals, NaNs and infinities
    const std::uint32_t bits = std::uint32_t(rng.uniform() * 4294967296.0);
    f = std::bit_cast<float>(bits);
  }
  std::vector<std::uint16_t> best(x.size()), portable(x.size());
  round_to_bf16(x.data(), x.size(), best.data(), Bf16Rounding::best);
  round_to_bf16(x.data(), x.size(), portable.data(), Bf16Rounding::portable);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < x.size(); ++i) differ += best[i] != portable[i];
  CHECK(differ == 0);
  // Half a unit in the 8th significant bit: within 2^-8 relative; widening back is exact.
  const Tensor3 t = randn(rng, 2, 100, 64);
  const Tensor3 back = from_bf16(to_bf16(t));
  for (std::size_t i = 0; i < t.size(); ++i)
    REQUIRE(std::fabs(back.data()[i] - t.data()[i]) <= std::ldexp(std::fabs(t.data()[i]), -8));
  CHECK(from_bf16(to_bf16(back)) == back);
}

TEST_CASE("decode bf16: every instruction set this CPU runs widens K and V in registers alike (2x rule)") {
  std::uint64_t seed = 900;
  for (const char* isa : {"avx512", "avx2", "generic"}) {
    if (!flash::microkernels_named<float>(isa)) continue;
    check_decode_bf16({4, 2, 1, 3000, MaskKind::none, 2}, ++seed, isa);
    check_decode_bf16({8, 8, 2, 1500, MaskKind::causal, 3}, ++seed, isa);
    check_decode_bf16({4, 1, 7, 2000, MaskKind::random, 1, 40, 24}, ++seed, isa);  // V through the padded copy
    // GQA 8:1 on a bfloat16 cache: rows in blocks of 4 sharing each widened K load, d past the
    // last whole register, and a last block of 21 keys (1301 = 10 x 128 + 21) no key group fills.
    check_decode_bf16({8, 1, 1, 1301, MaskKind::causal, 2, 67, 64}, ++seed, isa);
  }
}

TEST_CASE("decode bf16: every Lq, Lk and mask kind, GQA, MQA and threads 1-4 against float64 (2x rule)") {
  std::uint64_t seed = 500;
  for (std::size_t Lq : {1, 2, 7})
    for (std::size_t Lk : {std::size_t(1), std::size_t(129), std::size_t(1000), std::size_t(5001)})
      for (MaskKind mask : {MaskKind::none, MaskKind::causal, MaskKind::random, MaskKind::first_half_hidden}) {
        if (Lk < Lq) continue;
        check_decode_bf16({4, 2, Lq, Lk, mask, 1 + seed % 4}, ++seed);
      }
  for (std::size_t Hkv : {1, 2, 8}) check_decode_bf16({8, Hkv, 1, 20000, MaskKind::none, 2 + Hkv % 3}, ++seed);
  check_decode_bf16({4, 1, 3, 3000, MaskKind::causal, 1, 40, 24}, ++seed);  // d, dv not multiples of a register
  Rng rng(1);
  const Tensor3 q = randn(rng, 2, 1, 8);
  Bf16Tensor3 k = to_bf16(randn(rng, 1, 10, 8));
  k.bits.pop_back();  // a cache that lies about its shape
  CHECK_THROWS_AS(flash_decode_bf16(q, k, to_bf16(randn(rng, 1, 10, 8)), nullptr, {}), InputError);
}
