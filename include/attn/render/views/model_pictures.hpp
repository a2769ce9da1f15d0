#pragma once
// A model's attention on one text, as BertViz shows it but as still pictures, both drawn by the
// head grid (head_grid.hpp) on one colour scale per picture:
//   model view  every layer x head, one row per layer, small panels; each titled with its layer,
//               head and (given a summary) the kind head_summary.hpp measured;
//   head view   the heads of one layer, larger, with their mean as the last panel.
// Long texts keep readable labels: the head grid labels every k-th token and says so.
#include <string>
#include <vector>

#include "attn/engine/core/tensor.hpp"
#include "attn/lessons/models/head_summary.hpp"
#include "attn/render/draw/canvas.hpp"

namespace attn {

struct ModelViewSpec {
  std::vector<Tensor3> attention;  // [layers] of [H, n, n], causal
  std::vector<std::string> tokens;  // n labels
  const HeadSummary* summary = nullptr;  // kinds in the panel titles when given
  std::string title, subtitle;
  std::string colormap = "Blues";
  bool fixed_scale = false;  // weights 0..1 on a linear scale (train's pictures compare moments)
  // [layers] of [n, n]: the keys each layer's queries may see (a sliding window's band), the rest
  // hatched. Empty: causal.
  std::vector<Mask2> visible;
};

Figure model_view_figure(const ModelViewSpec& spec);

// Labels for tokens that are only whitespace (GPT-2 has " ", "\n", "  "): each space drawn as
// "␣", a newline as "↵", a tab as "⇥", so no label is blank. Other tokens are kept as they are.
std::vector<std::string> visible_token_labels(const std::vector<std::string>& tokens);
// spec.attention[layer]'s heads; InputError for a layer out of range.
Figure head_view_figure(const ModelViewSpec& spec, std::size_t layer);

}  // namespace attn
