#pragma once
// The picture of `attn-cli generate`: the KV cache growing row by row. Row t is the attention
// row of token t when it was fed (averaged over heads), so the rows stack into the causal lower
// triangle one step at a time; the prefill block (P prompt tokens in one step) is outlined, keys
// not in the cache yet are left blank, masked keys are hatched (causal inside the prefill,
// outside a sliding window), and a bar beside each step shows the cache length and its bytes.
#include "attn/render/draw/canvas.hpp"
#include "attn/lessons/models/generate.hpp"

namespace attn {

// grids[0]: the (token, key) cells.
Figure kv_cache_figure(const GenerateResult& result);

}  // namespace attn
