// The split-KV merge as one picture (split_kv_picture.hpp): the cache cut into chunks, each
// chunk's partial and rescale factor, the merged row beside the one-pass row. Every number on
// it is the lesson's; the picture only formats them.
#include "attn/render/split_kv_picture.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "attn/lessons/number_format.hpp"
#include "figure_parts.hpp"

namespace attn {
namespace {

const Rgb kInk = rgb_from_hex(0x1a1a1a);
const Rgb kAxisInk = rgb_from_hex(0x404040);
const Rgb kRule = rgb_from_hex(0xbdbdbd);
const Rgb kEmpty = rgb_from_hex(0xf0f0f0);
// One colour per chunk (matplotlib's tab10), repeated past 10 chunks: neighbours always differ.
const unsigned kChunkColours[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                  0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};
Rgb chunk_colour(std::size_t c) { return rgb_from_hex(kChunkColours[c % 10]); }

// Fixed decimals with a typographic minus; "−∞" for -inf; no "−0.000".
std::string signed_fixed(double v, int decimals) {
  if (v == -INFINITY) return "−∞";
  std::string s = format_fixed(v, decimals);
  if (s[0] != '-') return s;
  return s.find_first_not_of("-0.") == std::string::npos ? s.substr(1) : "−" + s.substr(1);
}

std::string factor_text(double f) { return f == 0 ? "0" : format_g(f, 3); }

std::string key_span(std::size_t first, std::size_t end) {
  return end - first == 1 ? std::to_string(first) : std::to_string(first) + "–" + std::to_string(end - 1);
}

double abs_max(const std::vector<double>& v, double m = 0) {
  for (double x : v)
    if (std::isfinite(x)) m = std::max(m, std::fabs(x));
  return m;
}

// One strip of values on a red-blue scale centred on 0 (±vmax), values written when decimals >= 0.
void draw_strip(Canvas& cv, const Colormap& cmap, const std::vector<double>& values, double x, double y, double w,
                double h, double vmax, int decimals, double text_size) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    const Rgb fill = cmap.at(0.5 + 0.5 * values[i] / vmax);
    const double cx = x + double(i) * w;
    cv.fill_rect(cx, y, w, h, fill);
    cv.stroke_rect(cx, y, w, h, rgb_from_hex(0xffffff), 0.5);
    if (decimals >= 0)
      cv.text(signed_fixed(values[i], decimals), cx + w / 2, y + h / 2, {text_size, false, readable_text_on(fill)}, 0.5, 0.5);
  }
}

}  // namespace

Figure split_kv_figure(const SplitKvLesson& s, const std::vector<std::string>& key_labels, const std::string& query_label) {
  render::check_labels(key_labels, s.keys, "key_labels");
  const std::size_t n = s.keys, C = s.chunks.size(), dv = s.merged.size();
  auto labels = std::make_shared<std::vector<std::string>>(key_labels);
  if (labels->empty())
    for (std::size_t j = 0; j < n; ++j) labels->push_back(std::to_string(j));
  Canvas m = Canvas::measuring();
  const TextStyle head{10.5, true, kInk}, cell_text{9, false, kInk}, note{9.5, false, kAxisInk};

  // 1. The cache: one cell per key, token labels above (turned upright when wider than a cell;
  // Chinese ones stacked, a character per line, never on their side).
  const double cw = std::clamp(std::floor(600.0 / double(n)), 9.0, 44.0), cache_h = 24;
  const TextStyle token_style{std::min(10.0, cw - 1), false, kInk, 80};
  double label_w = 0;
  for (const std::string& t : *labels) label_w = std::max(label_w, m.measure(t, token_style).width);
  const bool upright = label_w + 3 > cw, stacked = upright && render::stack_column_labels(*labels);
  const double line_h = m.measure("我", token_style).height;
  auto stacks = std::make_shared<std::vector<std::vector<std::string>>>();
  std::size_t tallest = 0;
  for (const std::string& t : *labels) {
    stacks->push_back(render::stacked_characters(t, static_cast<std::size_t>(std::max(1.0, std::floor(80 / line_h)))));
    tallest = std::max(tallest, stacks->back().size());
  }
  const double label_h = stacked ? line_h * double(tallest) + 4 : upright ? label_w + 4 : 16;
  const bool score_text = cw >= m.measure("−0.00", {8.5}).width + 4;
  // Chunk numbers under the brackets; when a chunk is too narrow for its number, every step-th.
  double narrowest = cw * double(n);
  for (const SplitKvChunk& k : s.chunks) narrowest = std::min(narrowest, cw * double(k.end - k.first));
  const std::size_t chunk_step = std::size_t(std::ceil((m.measure(std::to_string(C - 1), {8.5}).width + 3) / narrowest));
  const std::string cache_head = "The KV cache: " + count_of(n, "key") + " in " + count_of(C, "chunk") +
                                 (C > 1 ? " (one per thread)" : "") + ", coloured by the scaled score q·kⱼ/√d";
  const double head_h = m.measure(cache_head, head).height + 6;
  const double cache_w = cw * double(n), cache_block_h = head_h + label_h + cache_h + 22;

  // 2. The table: one row per chunk, then the merged row.
  const double ow = dv <= 6 ? 46 : std::clamp(std::floor(280.0 / double(dv)), 4.0, 16.0);
  const bool o_text = dv <= 6;
  const double rh = 18, bar_max = 70;
  // "key" over a column where every chunk holds one key (one token: "key 0", not "keys 0").
  const bool one_key_each = std::all_of(s.chunks.begin(), s.chunks.end(),
                                        [](const SplitKvChunk& k) { return k.end - k.first == 1; });
  const std::vector<std::string> headers = {"chunk", one_key_each ? "key" : "keys", "mᵢ", "ℓᵢ",
                                            "oᵢ = Σ exp(s − mᵢ) v", "exp(mᵢ − m)"};
  std::vector<std::vector<std::string>> rows;
  for (std::size_t c = 0; c < C; ++c) {
    const SplitKvChunk& k = s.chunks[c];
    const std::size_t size = k.end - k.first;
    std::string keys = key_span(k.first, k.end);
    if (k.visible < size) keys += " (" + std::to_string(k.visible) + " visible)";
    rows.push_back({std::to_string(c), keys, k.visible ? signed_fixed(k.m, 3) : "−∞", k.visible ? signed_fixed(k.l, 3) : "0", "",
                    factor_text(k.factor) + (k.visible ? "" : "  (no visible key; not NaN)")});
  }
  rows.push_back({"merged", n == 1 ? "0" : "all " + std::to_string(n), signed_fixed(s.m, 3), signed_fixed(s.l, 3), "", ""});
  std::vector<double> col_w(headers.size());
  for (std::size_t i = 0; i < headers.size(); ++i) {
    col_w[i] = m.measure(headers[i], {9.5, true}).width + 14;
    for (const auto& r : rows) col_w[i] = std::max(col_w[i], m.measure(r[i], cell_text).width + 14);
  }
  col_w[0] += 14;  // the swatch
  col_w[4] = std::max(col_w[4], ow * double(dv) + 14);
  double factor_text_w = 0;
  for (const SplitKvChunk& k : s.chunks) factor_text_w = std::max(factor_text_w, m.measure(factor_text(k.factor), cell_text).width);
  col_w[5] = std::max(col_w[5], factor_text_w + bar_max + 20);
  for (const auto& r : rows) col_w[5] = std::max(col_w[5], m.measure(r[5], cell_text).width + 14);
  double table_w = 0;
  for (double w : col_w) table_w += w;
  const std::string table_head = "Each chunk alone, then the merge: m = max mᵢ, chunk i rescaled by exp(mᵢ − m)";
  const std::string merge_note = "merged: ℓ = Σ exp(mᵢ − m) ℓᵢ,  o = Σ exp(mᵢ − m) oᵢ  (the engine's tile::row_merge, float32)";
  const double table_h = head_h + rh * double(C + 2) + 6 + m.measure(merge_note, note).height + 8;

  // 3. The two output rows.
  const bool out_text = dv <= 8;
  const double oc = out_text ? 58 : std::clamp(std::floor(440.0 / double(dv)), 5.0, 24.0);
  const std::string merged_label = "merged: o / ℓ", one_label = "one pass: softmax(q Kᵀ · scale) V";
  const double out_label_w = std::max(m.measure(merged_label, cell_text).width, m.measure(one_label, cell_text).width) + 10;
  const double out_w = out_label_w + oc * double(dv);
  bool same = true;
  for (std::size_t x = 0; x < dv; ++x) same = same && signed_fixed(s.merged[x], 4) == signed_fixed(s.one_pass[x], 4);
  // Checked on the numbers themselves: every value of the two rows written at 4 decimals.
  const std::string verdict =
      "max |merged − one pass| = " + format_g(s.max_abs_diff, 2) +
      (!same ? ": they differ at 4 decimals"
       : out_text ? ": the same to the 4 decimals printed"
                  : ": all " + std::to_string(dv) + " values the same to 4 decimals (each one: the JSON)");
  const std::string out_head = "The merged row against softmax·V in one pass (the naive kernel)";
  const double out_h = head_h + 2 * 22 + 8 + m.measure(verdict, {10, true}).height + 6;

  bool any_masked = false;
  for (double x : s.scores) any_masked = any_masked || x == -INFINITY;
  const double legend_h = any_masked ? render::masked_legend_size(m).height + 8 : 0;
  double o_max = abs_max(s.o);
  for (const SplitKvChunk& k : s.chunks) o_max = abs_max(k.o, o_max);
  const double score_max = abs_max(s.scores), out_max = abs_max(s.one_pass, abs_max(s.merged));
  const std::string colours = "Colours: red > 0 > blue, each part on its own scale: scores ±" + format_g(score_max, 3) +
                              ", oᵢ ±" + format_g(o_max, 3) + ", outputs ±" + format_g(out_max, 3);
  const double verdict_h = m.measure(verdict, {10, true}).height;
  const double legend_w = any_masked ? render::masked_legend_size(m).width : 0;

  std::size_t visible = 0;
  for (const SplitKvChunk& k : s.chunks) visible += k.visible;
  const std::string visible_note = visible < n ? " (" + std::to_string(visible) + " visible, the rest masked)" : "";
  render::FigureFrame frame = render::frame_figure(
      m, "Split-KV (Flash-Decoding): the KV cache in " + count_of(C, "chunk") + ", merged exactly",
      "Query " + query_label + " against " + count_of(n, "key") + visible_note + ". A chunk keeps only its max mᵢ, its sum ℓᵢ and its "
      "unnormalised output oᵢ; rescaling each to the common max m makes the merge exact.",
      {cache_w, table_w, out_w, m.measure(colours, note).width, m.measure(cache_head, head).width,
       m.measure(table_head, head).width, m.measure(out_head, head).width, m.measure(merge_note, note).width});
  Figure f;
  f.width = frame.width();
  f.height = frame.body_y() + cache_block_h + 10 + table_h + 10 + out_h + legend_h + m.measure(colours, note).height + 16;
  const double cache_x = frame.centred_x(cache_w), cache_y = frame.body_y() + head_h + label_h;
  const double table_x = frame.centred_x(table_w), table_y = frame.body_y() + cache_block_h + 10;
  const double out_x = frame.centred_x(out_w), out_y = table_y + table_h + 10;
  double o_x = table_x;
  for (std::size_t i = 0; i < 4; ++i) o_x += col_w[i];
  o_x += 7;
  f.grids.push_back({cache_x, cache_y, cw, cache_h, 1, n});
  f.grids.push_back({o_x, table_y + head_h + rh + 2, ow, rh, C, dv});  // each strip rh - 4 tall, rows rh apart
  f.grids.push_back({out_x + out_label_w, out_y + head_h, oc, 22, 2, dv});

  f.draw = [=, lesson = s, cols = col_w](Canvas& cv) {
    const Colormap cmap = Colormap::by_name("RdBu_r");
    frame.draw_title(cv);
    // 1. The cache.
    cv.text(cache_head, frame.width() / 2, frame.body_y(), head, 0.5, 0);
    for (std::size_t j = 0; j < n; ++j) {
      const double x = cache_x + double(j) * cw;
      if (stacked) render::draw_stacked_label(cv, (*stacks)[j], x + cw / 2, cache_y - 3, token_style, line_h);
      else if (upright) cv.text((*labels)[j], x + cw / 2, cache_y - 3, token_style, 0, 0.5, 90);
      else cv.text((*labels)[j], x + cw / 2, cache_y - 3, token_style, 0.5, 1);
      if (lesson.scores[j] == -INFINITY) {
        cv.hatch_rect(x, cache_y, cw, cache_h);
      } else {
        const Rgb fill = cmap.at(0.5 + 0.5 * lesson.scores[j] / std::max(score_max, 1e-12));
        cv.fill_rect(x, cache_y, cw, cache_h, fill);
        if (score_text)
          cv.text(signed_fixed(lesson.scores[j], 2), x + cw / 2, cache_y + cache_h / 2, {8.5, false, readable_text_on(fill)}, 0.5, 0.5);
      }
      cv.stroke_rect(x, cache_y, cw, cache_h, rgb_from_hex(0xffffff), 0.5);
    }
    for (std::size_t c = 0; c < C; ++c) {
      const SplitKvChunk& k = lesson.chunks[c];
      const double x0 = cache_x + double(k.first) * cw, x1 = cache_x + double(k.end) * cw;
      cv.stroke_rect(x0 + 0.75, cache_y - 0.75, x1 - x0 - 1.5, cache_h + 1.5, chunk_colour(c), 1.5);
      cv.fill_rect(x0 + 1, cache_y + cache_h + 3, x1 - x0 - 2, 4, chunk_colour(c));
      if (c % chunk_step == 0 || c + 1 == C)
        cv.text(std::to_string(c), (x0 + x1) / 2, cache_y + cache_h + 9, {8.5, false, chunk_colour(c)}, 0.5, 0);
    }
    // 2. The table.
    cv.text(table_head, frame.width() / 2, table_y, head, 0.5, 0);
    double y = table_y + head_h;
    double x = table_x;
    for (std::size_t i = 0; i < headers.size(); ++i) {
      cv.text(headers[i], x + 7, y + rh / 2, {9.5, true, kInk}, 0, 0.5);
      x += cols[i];
    }
    y += rh;
    cv.polyline({{table_x, y}, {table_x + table_w, y}}, kRule, 0.8);
    for (std::size_t r = 0; r <= C; ++r) {
      const bool merged_row = r == C;
      const double ry = y + 2 + double(r) * rh + (merged_row ? 4 : 0);
      if (merged_row) cv.polyline({{table_x, ry - 3}, {table_x + table_w, ry - 3}}, kRule, 0.8);
      x = table_x;
      for (std::size_t i = 0; i < 4; ++i) {
        double tx = x + 7;
        if (i == 0 && !merged_row) {
          cv.fill_rect(tx, ry + rh / 2 - 6, 10, 10, chunk_colour(r));
          tx += 14;
        }
        cv.text(rows[r][i], tx, ry + rh / 2 - 1, {9, merged_row, kInk}, 0, 0.5);
        x += cols[i];
      }
      const std::vector<double>& o = merged_row ? lesson.o : lesson.chunks[r].o;
      if (!merged_row && lesson.chunks[r].visible == 0) {
        cv.fill_rect(x + 7, ry, ow * double(dv), rh - 4, kEmpty);
        cv.text("0 (empty)", x + 7 + ow * double(dv) / 2, ry + rh / 2 - 2, {8.5, false, kAxisInk}, 0.5, 0.5);
      } else {
        draw_strip(cv, cmap, o, x + 7, ry, ow, rh - 4, std::max(o_max, 1e-12), o_text ? 2 : -1, 8.5);
      }
      x += cols[4];
      if (!merged_row) {
        const SplitKvChunk& k = lesson.chunks[r];
        cv.text(rows[r][5], x + 7, ry + rh / 2 - 1, {9, false, kInk}, 0, 0.5);
        if (k.visible) cv.fill_rect(x + 7 + factor_text_w + 6, ry + 3, bar_max * k.factor, rh - 10, chunk_colour(r));
      }
    }
    const double note_y = y + 2 + double(C + 1) * rh + 8;
    cv.text(merge_note, frame.width() / 2, note_y, note, 0.5, 0);
    // 3. The outputs.
    cv.text(out_head, frame.width() / 2, out_y, head, 0.5, 0);
    const double oy = out_y + head_h;
    cv.text(merged_label, out_x + out_label_w - 8, oy + 11, {9, true, kInk}, 1, 0.5);
    draw_strip(cv, cmap, lesson.merged, out_x + out_label_w, oy, oc, 20, std::max(out_max, 1e-12), out_text ? 4 : -1, 9);
    cv.text(one_label, out_x + out_label_w - 8, oy + 33, {9, true, kInk}, 1, 0.5);
    draw_strip(cv, cmap, lesson.one_pass, out_x + out_label_w, oy + 22, oc, 20, std::max(out_max, 1e-12), out_text ? 4 : -1, 9);
    double by = oy + 2 * 22 + 8;
    cv.text(verdict, frame.width() / 2, by, {10, true, kInk}, 0.5, 0);
    by += verdict_h + 6;
    if (any_masked) {
      render::draw_masked_legend(cv, frame.centred_x(legend_w), by);
      by += legend_h;
    }
    cv.text(colours, frame.width() / 2, by, note, 0.5, 0);
  };
  return f;
}

}  // namespace attn
