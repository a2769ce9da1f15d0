#pragma once
// The pictures of `attn-cli attention-conv` (attention_conv.hpp), drawn from its result alone:
//   attention_conv_heads    the 1-D case's K heads, each one's [L, L] weights as the attention
//                           door returned them: one-hot rows on the head's offset;
//   attention_conv_outputs  the attention output beside the convolution's, [positions x output
//                           channels] on one diverging scale, titled with their max difference;
//   attention_conv_trained  the trained toy model's head on a sentence twice, each query's largest
//                           weight outlined: its offset changes with content, a kernel's does not.
#include "attn/lessons/concepts/attention_conv.hpp"
#include "attn/render/draw/canvas.hpp"

namespace attn {

// grids[h] is head h's cells. InputError when the lesson ran without keep_head_weights.
Figure conv_heads_figure(const ConvLesson& lesson);
// grids[0] is the attention output, grids[1] the convolution's (cell (i, o) = position i, channel o).
Figure conv_outputs_figure(const ConvLesson& lesson);
// grids[0] is the head's (query, key) cells.
Figure conv_trained_figure(const TrainedOffsets& trained);

}  // namespace attn
