#pragma once
// The pictures of `attn-cli linear-attention` (linear_rnn.hpp), drawn from its result alone:
//   linear_attention         softmax's causal weights P beside linear attention's A on the
//                            same sentence (one colour scale, 0..1, masked cells hatched), and
//                            A − P on a diverging scale symmetric about 0; the titles give the
//                            lesson's max |A − P| and max |A V − P V|.
//   linear_attention_memory  bytes one decoding step carries against t on log-log axes: the
//                            KV cache, t (d + dv) numbers, against the state S, z, d dv + d,
//                            with the first t whose cache is larger marked.
#include "attn/lessons/concepts/linear_rnn.hpp"
#include "attn/render/draw/canvas.hpp"

namespace attn {

// grids[0] is P, grids[1] A, grids[2] A − P (cell (i, j) = query i, key j).
Figure linear_attention_figure(const LinearRnnResult& result);
// plots[0] is the plot area (log10 t across, log10 bytes up).
Figure linear_attention_memory_figure(const LinearRnnResult& result);

}  // namespace attn
