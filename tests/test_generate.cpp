// The generate lesson's numbers that are not attention itself: the FLOPs a step costs with and
// without the KV cache, and what the window evicts. Expected values are derived by hand below.
#include <doctest/doctest.h>

#include "attn/lessons/models/generate.hpp"

using namespace attn;

namespace {

GenerateConfig three_tokens() {
  GenerateConfig c;
  c.sentence = "a b c";
  c.d_model = 4;
  c.num_heads = 2;  // head dim 2
  c.prefill = 1;
  return c;
}

}  // namespace

TEST_CASE("generate: FLOPs with the cache and recomputing, derived by hand for 3 tokens") {
  // Per token, projections: W_q and W_o 2*4*4 each, W_k and W_v 2*4*4 each (4 kv dims) = 128.
  // Per visible (query, key) pair and head: 2*2 (q.k) + 3 (softmax) + 2*2 (x V) = 11; 2 heads: 22.
  const GenerateResult r = run_generate(three_tokens());
  REQUIRE(r.steps.size() == 3);
  // prefill of token 0: one token, one pair; the prefix is the same token.
  CHECK(r.steps[0].with_cache.projections == 128);
  CHECK(r.steps[0].with_cache.attention == 22);
  CHECK(r.steps[0].recompute.total() == 150);
  // token 1: its own row sees 2 keys; recomputing runs 2 tokens and 1 + 2 pairs.
  CHECK(r.steps[1].with_cache.projections == 128);
  CHECK(r.steps[1].with_cache.attention == 44);
  CHECK(r.steps[1].recompute.projections == 256);
  CHECK(r.steps[1].recompute.attention == 66);
  // token 2: 3 keys; recomputing 3 tokens and 1 + 2 + 3 pairs.
  CHECK(r.steps[2].with_cache.attention == 66);
  CHECK(r.steps[2].recompute.projections == 384);
  CHECK(r.steps[2].recompute.attention == 132);
  CHECK(r.total_with_cache.total() == 3 * 128 + 22 + 44 + 66);
  CHECK(r.total_recompute.total() == 128 + 256 + 384 + 22 + 66 + 132);
  for (const GenerateStep& s : r.steps) CHECK(s.evicted == 0);

  const Json j = generate_json(r);
  CHECK(j["flops"]["with_cache"]["total"] == 516);
  CHECK(j["steps"][2]["flops"]["recompute"]["attention"] == 132);
}

TEST_CASE("generate: a window caps a step's attention and counts the evicted tokens") {
  GenerateConfig c = three_tokens();
  c.sentence = "a b c d";
  c.window = 2;
  const GenerateResult r = run_generate(c);
  REQUIRE(r.steps.size() == 4);
  // Token 3 sees keys 2 and 3 only: 2 pairs; tokens 0 and 1 have left the cache.
  CHECK(r.steps[3].with_cache.attention == 44);
  CHECK(r.steps[3].evicted == 2);
  CHECK(r.steps[3].cache_len == 2);
  CHECK(r.steps[1].evicted == 0);
  // Recomputing the prefix under the same window: rows 0..3 see 1, 2, 2, 2 keys.
  CHECK(r.steps[3].recompute.attention == 7 * 22);
}
