// The float32 kernel's register blockings and query tile (FlashTuning): every choice `attn-cli
// tune` may make gives the bits of the built-in one, and a choice set once is what later calls
// run.
#include <doctest/doctest.h>

#include <algorithm>

#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/flash.hpp"
#include "attn/engine/core/random.hpp"
#include "support.hpp"

using namespace attn;
using test::randn;
using test::same_bytes;

namespace {

// The ISAs this CPU runs (each has its own blockings).
std::vector<std::string> runnable_isas() {
  std::vector<std::string> isas;
  for (const char* isa : {"avx512", "avx2", "generic"}) {
    try {
      flash_blockings(isa);
      isas.push_back(isa);
    } catch (const InputError&) {
    }
  }
  return isas;
}

// Restores the built-in choice when a test ends, whatever it set.
struct ResetTuning {
  ~ResetTuning() { set_flash_tuning({}); }
};

}  // namespace

TEST_CASE("flash tuning: every register blocking and query tile gives the bits of the built-in kernel") {
  // Several key tiles (1500 keys > 768) and one (150); rows not a multiple of any blocking;
  // d and dv not multiples of a register; GQA; causal with Lq < Lk; a mask; 2 threads.
  Rng rng(31);
  struct Case {
    std::size_t H, Hkv, Lq, Lk, d, dv;
    bool causal, masked;
  };
  for (const Case& c : {Case{4, 2, 100, 1500, 20, 19, true, false}, Case{2, 2, 37, 150, 64, 64, false, true},
                        Case{2, 1, 300, 900, 64, 64, true, true}}) {
    const Tensor3 q = randn(rng, c.H, c.Lq, c.d), k = randn(rng, c.Hkv, c.Lk, c.d), v = randn(rng, c.Hkv, c.Lk, c.dv);
    Mask3 mask = Mask3::from_shape({c.H, c.Lq, c.Lk});
    for (bool& b : mask) b = rng.uniform() < 0.85;
    for (const std::string& isa : runnable_isas()) {
      FlashOptions fo;
      fo.isa = isa;
      fo.causal = c.causal;
      fo.threads = 2;
      const Mask3* m = c.masked ? &mask : nullptr;
      const FlashResult builtin = flash_attention(q, k, v, m, fo);
      const FlashBlockings offered = flash_blockings(isa);
      REQUIRE(!offered.qk.empty());
      REQUIRE(!offered.pv.empty());
      for (const std::string& qk : offered.qk) {
        for (const std::string& pv : offered.pv) {
          for (std::size_t block_q : {std::size_t(0), std::size_t(48), std::size_t(96)}) {
            CAPTURE(isa);
            CAPTURE(qk);
            CAPTURE(pv);
            CAPTURE(block_q);
            CAPTURE(c.Lq);
            fo.qk_kernel = qk, fo.pv_kernel = pv, fo.block_q = block_q;
            const FlashTiling tiling = flash_tiling(c.Lq, c.Lk, fo);
            CHECK(tiling.pv_kernel == pv);  // the blockings asked for are the ones that run
            if (c.Lk > 768) CHECK(tiling.qk_kernel == qk);  // 768-key tiles: every panel divides them
            const FlashResult tuned = flash_attention(q, k, v, m, fo);
            CHECK(same_bytes(tuned.output, builtin.output));
            CHECK(same_bytes(tuned.lse, builtin.lse));
          }
        }
      }
    }
  }
}

TEST_CASE("flash tuning: a Q K^T blocking whose key panel does not divide the key tile gives way to the built-in") {
  const FlashBlockings offered = flash_blockings();
  FlashOptions fo;
  for (const std::string& qk : offered.qk) {
    CAPTURE(qk);
    fo.qk_kernel = qk;
    fo.block_k = 0;
    CHECK(flash_tiling(1000, 1000, fo).qk_kernel == qk);  // 768-key tiles: every panel divides them
    // The built-in panel's width: the smallest key tile there is.
    fo.block_k = 1;
    const std::size_t panel = flash_tiling(1000, 1000, fo).block_k;
    fo.block_k = panel;
    const FlashTiling t = flash_tiling(1000, 1000, fo);
    CHECK(t.block_k == panel);  // the tiles never change with the blocking
    CHECK((t.qk_kernel == qk || t.qk_kernel == offered.qk.front()));  // its own, or the built-in
  }
  // On AVX-512, 8 x 3's 48-key panels do not divide the built-in 64: the built-in runs.
  if (offered.isa == "avx512") {
    fo.qk_kernel = "8x3";
    fo.block_k = 64;
    CHECK(flash_tiling(1000, 1000, fo).qk_kernel == "6x4");
  }
}

TEST_CASE("flash tuning: set_flash_tuning is the default of later calls and refuses what this CPU lacks") {
  ResetTuning reset;
  const FlashBlockings offered = flash_blockings();
  CHECK(offered.block_q == flash_default_block_q());
  FlashTuning chosen{offered.qk.back(), offered.pv.back(), 96};
  set_flash_tuning(chosen);
  CHECK(flash_tuning().qk_kernel == chosen.qk_kernel);
  FlashOptions fo;
  FlashTiling t = flash_tiling(1000, 1000, fo);
  CHECK(t.qk_kernel == chosen.qk_kernel);
  CHECK(t.pv_kernel == chosen.pv_kernel);
  CHECK(t.block_q == 96);
  // The options' own choice comes first.
  fo.qk_kernel = offered.qk.front();
  fo.block_q = 64;
  t = flash_tiling(1000, 1000, fo);
  CHECK(t.qk_kernel == offered.qk.front());
  CHECK(t.pv_kernel == chosen.pv_kernel);
  CHECK(t.block_q == 64);
  // Another ISA keeps its built-in blockings; float64 its built-in tiles.
  FlashOptions generic;
  generic.isa = "generic";
  CHECK(flash_tiling(1000, 1000, generic).qk_kernel == flash_blockings("generic").qk.front());
  FlashOptions f64;
  f64.precision = FlashPrecision::float64;
  CHECK(flash_tiling(1000, 1000, f64).block_q == flash_default_block_q());

  CHECK_THROWS_AS(set_flash_tuning({"99x1", "", 0}), InputError);
  CHECK_THROWS_AS(set_flash_tuning({"", "0x0", 0}), InputError);
  CHECK_THROWS_AS(set_flash_tuning({"", "", 70000}), InputError);
  CHECK(flash_tuning().qk_kernel == chosen.qk_kernel);  // a refused choice changes nothing
  try {
    set_flash_tuning({"99x1", "", 0});
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find(offered.qk.front()) != std::string::npos);  // names what is offered
  }
  set_flash_tuning({});
  CHECK(flash_tiling(1000, 1000, FlashOptions{}).qk_kernel == offered.qk.front());
  CHECK(flash_tiling(1000, 1000, FlashOptions{}).block_q == flash_default_block_q());
}

TEST_CASE("flash tuning: V packed in panels gives the bits of V read as rows") {
  // With query tiles of one P V row block, V is read as rows; with the built-in tile, where a
  // P V pass reads part of a row (AVX2 at d_v = 40, 64 or 128; AVX-512 at 128), it is packed in
  // panels of a pass's columns (packed_v_panel, tile_products.hpp), the last one padded at d_v =
  // 40 on AVX2. Either way the same products in the same order. One row block: block_q = 1 pads
  // to the blockings' common row block, so the Q K^T and P V blockings of 4 rows (AVX2's 4x3 and
  // 4x2, where the built-in P V's 6 rows would make 12), else the built-in (AVX-512: 6 rows).
  Rng rng(37);
  for (std::size_t dv : {40, 64, 128}) {
    const Tensor3 q = randn(rng, 2, 200, 64), k = randn(rng, 2, 900, 64), v = randn(rng, 2, 900, dv);
    for (const std::string& isa : runnable_isas()) {
      CAPTURE(dv);
      CAPTURE(isa);
      FlashOptions fo;
      fo.isa = isa;
      const FlashResult wide = flash_attention(q, k, v, nullptr, fo);
      fo.block_q = 1;  // one block of P V rows a tile
      const FlashBlockings offered = flash_blockings(isa);
      if (std::find(offered.pv.begin(), offered.pv.end(), "4x2") != offered.pv.end()) fo.pv_kernel = "4x2";
      const FlashResult own = flash_attention(q, k, v, nullptr, fo);
      CHECK(same_bytes(wide.output, own.output));
      CHECK(same_bytes(wide.lse, own.lse));
    }
  }
}
