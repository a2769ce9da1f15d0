// The demo's checks (demo_checks.hpp): flash against naive, split-KV against one pass, the KV
// cache against the one-shot run, and their JSON.
#include "attn/lessons/demo/demo_checks.hpp"

#include <algorithm>

#include "attn/engine/attention/attention.hpp"
#include "concepts/max_difference.hpp"

namespace attn {
namespace {

// The flash kernel with options o on the single head, non-causal and causal, against the naive
// sdpa's results on the same Q, K, V.
DemoFlashRun run_flash(const Tensor3& q, const Tensor3& k, const Tensor3& v, FlashOptions o,
                       const SdpaResult& naive, const SdpaResult& naive_causal) {
  DemoFlashRun run;
  run.tiling = flash_tiling(q.shape(1), k.shape(1), o);
  BackendOptions flash;
  flash.backend = Backend::flash;
  flash.block_q = o.block_q, flash.block_k = o.block_k, flash.threads = o.threads;
  flash.precision = o.precision, flash.isa = o.isa;
  for (bool causal : {false, true}) {
    SdpaOptions attention;
    attention.causal = causal;
    const SdpaResult f = attn::attention(q, k, v, nullptr, attention, flash, /*with_weights=*/false);
    const SdpaResult& n = causal ? naive_causal : naive;
    (causal ? run.causal : run.plain) = {max_abs_difference(f.output, n.output), max_abs_difference(f.lse, n.lse)};
  }
  o.causal = false;
  run.options = o;
  return run;
}

DemoFlashCheck flash_check(const Tensor3& q, const Tensor3& k, const Tensor3& v, const SdpaResult& naive,
                           const SdpaResult& naive_causal) {
  DemoFlashCheck check;
  FlashOptions fast;
  fast.threads = 1;  // one head of a few tokens is one work item: no thread would get another
  check.fast = run_flash(q, k, v, fast, naive, naive_causal);

  // Tiles of 2 x 2 up to 16 tokens (the generic float64 micro-kernel's key panel is 2 keys,
  // so even a 4-token sentence spans a grid), then about 8 tiles a side: a 500-token sentence
  // in 2 x 2 tiles would be 62,500 tiles, unreadable in a picture and megabytes of JSON.
  const std::size_t L = q.shape(1);
  const std::size_t block = teaching_block(L);
  FlashOptions teaching = fast;
  teaching.isa = "generic";
  teaching.precision = FlashPrecision::float64;
  teaching.block_q = check.requested_block_q = block;
  teaching.block_k = check.requested_block_k = block;
  check.teaching = run_flash(q, k, v, teaching, naive, naive_causal);
  check.tiles = flash_tiles(L, L, teaching);
  teaching.causal = true;
  check.causal_tiles = flash_tiles(L, L, teaching);
  return check;
}

Json flash_run_json(const DemoFlashRun& run) {
  auto diff = [](const FlashDifference& d) {
    return Json{{"max_abs_diff_output", d.output}, {"max_abs_diff_lse", d.lse}};
  };
  return {{"precision", run.options.precision == FlashPrecision::float32 ? "float32" : "float64"},
          {"isa", run.tiling.isa},
          {"block_q", run.tiling.block_q},
          {"block_k", run.tiling.block_k},
          {"non_causal", diff(run.plain)},
          {"causal", diff(run.causal)}};
}

Json tiles_json(const std::vector<FlashTile>& tiles) {
  const TileCounts n = count_tiles(tiles);
  Json list = Json::array();
  for (const FlashTile& t : tiles) {
    const char* kind = t.kind == FlashTile::Kind::full       ? "full"
                       : t.kind == FlashTile::Kind::diagonal ? "diagonal"
                                                             : "skipped";
    list.push_back({{"rows", {t.i0, t.i0 + t.rows}}, {"keys", {t.j0, t.j0 + t.cols}}, {"kind", kind}});
  }
  return {{"total", n.total()}, {"full", n.full}, {"diagonal", n.diagonal}, {"skipped", n.skipped}, {"tiles", list}};
}

}  // namespace

TileCounts count_tiles(const std::vector<FlashTile>& tiles) {
  TileCounts c;
  for (const FlashTile& t : tiles) {
    switch (t.kind) {
      case FlashTile::Kind::full: ++c.full; break;
      case FlashTile::Kind::diagonal: ++c.diagonal; break;
      case FlashTile::Kind::skipped: ++c.skipped; break;
    }
  }
  return c;
}

DemoFlashCheck demo_flash_check(const Tensor3& q, const Tensor3& k, const Tensor3& v, const SdpaResult& naive,
                                const SdpaResult& naive_causal, const std::vector<std::string>& tokens) {
  DemoFlashCheck check = flash_check(q, k, v, naive, naive_causal);
  const std::size_t L = q.shape(1);
  check.replay = replay_flash(q, k, v, tokens, {teaching_block(L), teaching_block(L), true});
  return check;
}

Json demo_flash_json(const DemoFlashCheck& f) {
  Json teaching = flash_run_json(f.teaching);
  teaching["replay"] = flash_replay_json(f.replay);
  teaching["requested_block_q"] = f.requested_block_q;
  teaching["requested_block_k"] = f.requested_block_k;
  teaching["tiles"] = {{"non_causal", tiles_json(f.tiles)}, {"causal", tiles_json(f.causal_tiles)}};
  // The fast float32 run's ISA, tiles and rounding differ from CPU to CPU, so it is printed
  // on the terminal only: manifest.json stays byte-identical on every machine (docs/contracts.md).
  return {{"reference", "naive sdpa on the same single-head Q, K, V (float64 inside)"},
          {"teaching", teaching}};
}

// Split-KV on one head q, k, v [1, L, d]: the last query, which sees every key (causal or not),
// against the cache cut into min(3, L) chunks.
SplitKvLesson last_query_split_kv(const Tensor3& q, const Tensor3& k, const Tensor3& v, double scale) {
  const std::size_t L = q.shape(1);
  return split_kv_merge(Tensor1(xt::view(q, 0, L - 1, xt::all())), Tensor2(xt::view(k, 0, xt::all(), xt::all())),
                        Tensor2(xt::view(v, 0, xt::all(), xt::all())), std::vector<bool>(L, true), scale,
                        std::min<std::size_t>(3, L));
}

// The decode check on any multi-head layer: the causal run through a KV cache, the first half
// of the sentence as the prompt, then one token at a time; it must equal the one-shot causal run.
DemoDecodeCheck demo_decode_check(const Tensor2& x, const MhaWeights& w, MhaOptions mo) {
  mo.attention.causal = true;
  const MhaResult one_shot = mha(x, x, x, w, nullptr, mo);
  const std::size_t prefill = (x.shape(0) + 1) / 2;
  const MhaDecodeResult dec = mha_decode(x, w, nullptr, mo, prefill);
  return {prefill, dec.steps.size(), dec.kv_cache_len, max_abs_difference(dec.result.output, one_shot.output),
          max_abs_difference(dec.result.weights, one_shot.weights)};
}

}  // namespace attn
