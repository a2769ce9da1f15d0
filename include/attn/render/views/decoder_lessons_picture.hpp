#pragma once
// The attention-sink and grouped-query lessons (lessons/models/decoder_lessons.hpp), drawn from
// their numbers and nothing else.
//
//   sinks_figure  [layer x query head] cells: each head's mean weight on token 0, on one scale
//                 from 0 to 1; the subtitle gives what an even head would put there and the
//                 sliding-window experiment's two KL divergences
//   gqa_figure    per layer (at most 4, spread over the depth), [query head x query head]: how
//                 alike two heads' attention is, 1 - JS / ln 2, the pairs that share a key/value
//                 head outlined
#include <string>

#include "attn/lessons/models/decoder_lessons.hpp"
#include "attn/render/draw/canvas.hpp"

namespace attn {

Figure sinks_figure(const SinkLesson& lesson, const std::string& model, const std::string& colormap = "Blues");
Figure gqa_figure(const GqaLesson& lesson, const std::string& model, const std::string& colormap = "Blues");

}  // namespace attn
