#pragma once
// The attention-sink and grouped-query lessons (lessons/models/decoder_lessons.hpp), drawn from
// their numbers and nothing else.
//
//   sinks_figure  [layer x query head] cells: each head's mean weight on token 0, on one scale
//                 from 0 to 1; the subtitle gives what an even head would put there and the
//                 sliding-window experiment's two KL divergences
//   rope_bands_figure     [layer head x frequency pair] cells: each head's share of q and k
//                         length in each rotate-half pair, fastest pair first
//   rope_distance_figure  the mean q.k by distance, with and without the rotation, for the
//                         heads the rotation changes most and least
//   gqa_figure    per layer (at most 4, spread over the depth), [query head x query head]: how
//                 alike two heads' attention is, 1 - JS / ln 2, the pairs that share a key/value
//                 head outlined
#include <string>

#include "attn/lessons/models/decoder_lessons.hpp"
#include "attn/render/draw/canvas.hpp"

namespace attn {

Figure sinks_figure(const SinkLesson& lesson, const std::string& model, const std::string& colormap = "Blues");
Figure rope_bands_figure(const ModelRopeLesson& lesson, const std::string& model, const std::string& colormap = "Blues");
Figure rope_distance_figure(const ModelRopeLesson& lesson, const std::string& model);
Figure gqa_figure(const GqaLesson& lesson, const std::string& model, const std::string& colormap = "Blues");

}  // namespace attn
