// The model view and the head view (model_pictures.hpp).
#include "attn/render/views/model_pictures.hpp"

#include <algorithm>

#include "attn/engine/core/error.hpp"
#include "attn/render/draw/head_grid.hpp"

namespace attn {
namespace {

Mask3 causal_mask(std::size_t n) {
  Mask3 causal = Mask3::from_shape({1, n, n});
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) causal(0, i, j) = j <= i;
  return causal;
}

std::string panel_title(const ModelViewSpec& s, std::size_t layer, std::size_t head, bool short_names) {
  std::string t = short_names ? "L" + std::to_string(layer) + " H" + std::to_string(head)
                              : "Layer " + std::to_string(layer) + " head " + std::to_string(head);
  if (s.summary) {
    for (const HeadScores& h : s.summary->heads)
      if (h.layer == layer && h.head == head) t += " · " + (short_names ? head_kind_short(h.kind) : h.kind);
  }
  return t;
}

HeadGridSpec grid_spec(const ModelViewSpec& s, std::size_t n) {
  HeadGridSpec g;
  g.allowed = causal_mask(n);
  g.query_tokens = g.key_tokens = visible_token_labels(s.tokens);
  g.title = s.title;
  g.subtitle = s.subtitle;
  g.colormap = s.colormap;
  if (s.fixed_scale) g.vmax = 1.0;
  else g.auto_log = true;
  return g;
}

}  // namespace

std::vector<std::string> visible_token_labels(const std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  for (const std::string& t : tokens) {
    if (t.find_first_not_of(" \t\n\r") != std::string::npos) {
      out.push_back(t);
      continue;
    }
    std::string label;
    for (char c : t) label += c == ' ' ? "␣" : c == '\n' ? "↵" : c == '\t' ? "⇥" : "␍";
    out.push_back(label.empty() ? "∅" : label);
  }
  return out;
}

Figure model_view_figure(const ModelViewSpec& s) {
  if (s.attention.empty()) throw InputError("model view: no layers");
  const std::size_t H = s.attention.front().shape(0), n = s.attention.front().shape(1);
  HeadGridSpec g = grid_spec(s, n);
  g.weights = Tensor3::from_shape({s.attention.size() * H, n, n});
  float* dst = g.weights.data();
  const bool many = s.attention.size() * H > 16;  // "L3 H5" keeps a 12 x 12 grid's titles within their panels
  for (std::size_t l = 0; l < s.attention.size(); ++l) {
    dst = std::copy(s.attention[l].begin(), s.attention[l].end(), dst);
    for (std::size_t h = 0; h < H; ++h) g.panel_titles.push_back(panel_title(s, l, h, many));
  }
  if (!s.visible.empty()) {  // one mask per panel: each layer's band
    Mask3 allowed = Mask3::from_shape({s.attention.size() * H, n, n});
    for (std::size_t l = 0; l < s.attention.size(); ++l)
      for (std::size_t h = 0; h < H; ++h) xt::view(allowed, l * H + h) = s.visible.at(l);
    g.allowed = std::move(allowed);
  }
  g.show_mean = false;
  g.columns = H;  // one row per layer
  g.panel_points = many ? 110 : 200;
  return head_grid_figure(g);
}

Figure head_view_figure(const ModelViewSpec& s, std::size_t layer) {
  if (layer >= s.attention.size()) {
    throw InputError("--layer: expected 0.." + std::to_string(s.attention.size() - 1) + ", got " +
                     std::to_string(layer));
  }
  const Tensor3& a = s.attention[layer];
  HeadGridSpec g = grid_spec(s, a.shape(1));
  g.weights = a;
  if (!s.visible.empty()) {
    Mask3 allowed = Mask3::from_shape({1, a.shape(1), a.shape(1)});
    xt::view(allowed, 0) = s.visible.at(layer);
    g.allowed = std::move(allowed);
  }
  for (std::size_t h = 0; h < a.shape(0); ++h) g.panel_titles.push_back(panel_title(s, layer, h, false));
  g.show_mean = true;
  // Large enough that every token keeps its label up to about 70 tokens (cells of 8 points).
  g.panel_points = std::clamp(8.0 * double(a.shape(1)), 260.0, 560.0);
  return head_grid_figure(g);
}

}  // namespace attn
