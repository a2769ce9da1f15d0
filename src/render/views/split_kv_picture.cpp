// The split-KV merge as one picture (split_kv_picture.hpp): the cache cut into chunks, each
// chunk's partial and rescale factor, the merged row beside the one-pass row. Every number on
// it is the lesson's; the picture only formats them.
#include "attn/render/views/split_kv_picture.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "attn/io/number_format.hpp"
#include "draw/figure_parts.hpp"

namespace attn {
namespace {

const Rgb kInk = rgb_from_hex(0x1a1a1a);
const Rgb kAxisInk = rgb_from_hex(0x404040);
const Rgb kRule = rgb_from_hex(0xbdbdbd);
const Rgb kEmpty = rgb_from_hex(0xf0f0f0);
const TextStyle kHead{10.5, true, kInk}, kCellText{9, false, kInk}, kNote{9.5, false, kAxisInk};
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

// 1. The cache: one cell per key, token labels above (turned upright when wider than a cell;
// Chinese ones stacked, a character per line, never on their side), the chunks bracketed under it.
struct CacheStrip {
  std::vector<std::string> labels;
  std::vector<std::vector<std::string>> stacks;
  TextStyle token_style;
  double cw = 0, cell_h = 24, line_h = 0, label_h = 0;
  bool upright = false, stacked = false, score_text = false;
  std::size_t chunk_step = 1;  // chunk numbers under every step-th bracket
  std::string head;
  double head_h = 0, width = 0, block_h = 0;
};

CacheStrip layout_cache(Canvas& m, const SplitKvLesson& s, const std::vector<std::string>& key_labels) {
  const std::size_t n = s.keys, C = s.chunks.size();
  CacheStrip k;
  k.labels = key_labels;
  if (k.labels.empty())
    for (std::size_t j = 0; j < n; ++j) k.labels.push_back(std::to_string(j));
  k.cw = std::clamp(std::floor(600.0 / double(n)), 9.0, 44.0);
  k.token_style = {std::min(10.0, k.cw - 1), false, kInk, 80};
  double label_w = 0;
  for (const std::string& t : k.labels) label_w = std::max(label_w, m.measure(t, k.token_style).width);
  k.upright = label_w + 3 > k.cw;
  k.stacked = k.upright && render::stack_column_labels(k.labels);
  k.line_h = m.measure("我", k.token_style).height;
  std::size_t tallest = 0;
  for (const std::string& t : k.labels) {
    k.stacks.push_back(render::stacked_characters(t, static_cast<std::size_t>(std::max(1.0, std::floor(80 / k.line_h)))));
    tallest = std::max(tallest, k.stacks.back().size());
  }
  k.label_h = k.stacked ? k.line_h * double(tallest) + 4 : k.upright ? label_w + 4 : 16;
  k.score_text = k.cw >= m.measure("−0.00", {8.5}).width + 4;
  // Chunk numbers under the brackets; when a chunk is too narrow for its number, every step-th.
  double narrowest = k.cw * double(n);
  for (const SplitKvChunk& c : s.chunks) narrowest = std::min(narrowest, k.cw * double(c.end - c.first));
  k.chunk_step = std::size_t(std::ceil((m.measure(std::to_string(C - 1), {8.5}).width + 3) / narrowest));
  k.head = "The KV cache: " + count_of(n, "key") + " in " + count_of(C, "chunk") + (C > 1 ? " (one per thread)" : "") +
           ", coloured by the scaled score q·kⱼ/√d";
  k.head_h = m.measure(k.head, kHead).height + 6;
  k.width = k.cw * double(n);
  k.block_h = k.head_h + k.label_h + k.cell_h + 22;
  return k;
}

// The cells' top-left corner is (x, y); the heading is centred on cx at head_y.
void draw_cache(Canvas& cv, const Colormap& cmap, const SplitKvLesson& lesson, const CacheStrip& k, double x0, double y,
                double cx, double head_y, double score_max) {
  cv.text(k.head, cx, head_y, kHead, 0.5, 0);
  const double cw = k.cw, cache_h = k.cell_h;
  for (std::size_t j = 0; j < lesson.keys; ++j) {
    const double x = x0 + double(j) * cw;
    if (k.stacked) render::draw_stacked_label(cv, k.stacks[j], x + cw / 2, y - 3, k.token_style, k.line_h);
    else if (k.upright) cv.text(k.labels[j], x + cw / 2, y - 3, k.token_style, 0, 0.5, 90);
    else cv.text(k.labels[j], x + cw / 2, y - 3, k.token_style, 0.5, 1);
    if (lesson.scores[j] == -INFINITY) {
      cv.hatch_rect(x, y, cw, cache_h);
    } else {
      const Rgb fill = cmap.at(0.5 + 0.5 * lesson.scores[j] / std::max(score_max, 1e-12));
      cv.fill_rect(x, y, cw, cache_h, fill);
      if (k.score_text)
        cv.text(signed_fixed(lesson.scores[j], 2), x + cw / 2, y + cache_h / 2, {8.5, false, readable_text_on(fill)}, 0.5, 0.5);
    }
    cv.stroke_rect(x, y, cw, cache_h, rgb_from_hex(0xffffff), 0.5);
  }
  const std::size_t C = lesson.chunks.size();
  for (std::size_t c = 0; c < C; ++c) {
    const SplitKvChunk& chunk = lesson.chunks[c];
    const double xa = x0 + double(chunk.first) * cw, xb = x0 + double(chunk.end) * cw;
    cv.stroke_rect(xa + 0.75, y - 0.75, xb - xa - 1.5, cache_h + 1.5, chunk_colour(c), 1.5);
    cv.fill_rect(xa + 1, y + cache_h + 3, xb - xa - 2, 4, chunk_colour(c));
    if (c % k.chunk_step == 0 || c + 1 == C)
      cv.text(std::to_string(c), (xa + xb) / 2, y + cache_h + 9, {8.5, false, chunk_colour(c)}, 0.5, 0);
  }
}

// 2. The table: one row per chunk, then the merged row.
struct ChunkTable {
  std::vector<std::string> headers;
  std::vector<std::vector<std::string>> rows;
  std::vector<double> col_w;
  double ow = 0;       // one cell of a chunk's oᵢ strip
  bool o_text = false;  // oᵢ's values written in its cells
  double rh = 18, bar_max = 70, factor_text_w = 0, width = 0, height = 0;
  std::string head, merge_note;
};

std::vector<std::vector<std::string>> chunk_rows(const SplitKvLesson& s) {
  std::vector<std::vector<std::string>> rows;
  for (std::size_t c = 0; c < s.chunks.size(); ++c) {
    const SplitKvChunk& k = s.chunks[c];
    const std::size_t size = k.end - k.first;
    std::string keys = key_span(k.first, k.end);
    if (k.visible < size) keys += " (" + std::to_string(k.visible) + " visible)";
    rows.push_back({std::to_string(c), keys, k.visible ? signed_fixed(k.m, 3) : "−∞", k.visible ? signed_fixed(k.l, 3) : "0", "",
                    factor_text(k.factor) + (k.visible ? "" : "  (no visible key; not NaN)")});
  }
  const std::size_t n = s.keys;
  rows.push_back({"merged", n == 1 ? "0" : "all " + std::to_string(n), signed_fixed(s.m, 3), signed_fixed(s.l, 3), "", ""});
  return rows;
}

ChunkTable layout_table(Canvas& m, const SplitKvLesson& s, double head_h) {
  const std::size_t C = s.chunks.size(), dv = s.merged.size();
  ChunkTable t;
  t.ow = dv <= 6 ? 46 : std::clamp(std::floor(280.0 / double(dv)), 4.0, 16.0);
  t.o_text = dv <= 6;
  // "key" over a column where every chunk holds one key (one token: "key 0", not "keys 0").
  const bool one_key_each = std::all_of(s.chunks.begin(), s.chunks.end(),
                                        [](const SplitKvChunk& k) { return k.end - k.first == 1; });
  t.headers = {"chunk", one_key_each ? "key" : "keys", "mᵢ", "ℓᵢ", "oᵢ = Σ exp(s − mᵢ) v", "exp(mᵢ − m)"};
  t.rows = chunk_rows(s);
  t.col_w.resize(t.headers.size());
  for (std::size_t i = 0; i < t.headers.size(); ++i) {
    t.col_w[i] = m.measure(t.headers[i], {9.5, true}).width + 14;
    for (const auto& r : t.rows) t.col_w[i] = std::max(t.col_w[i], m.measure(r[i], kCellText).width + 14);
  }
  t.col_w[0] += 14;  // the swatch
  t.col_w[4] = std::max(t.col_w[4], t.ow * double(dv) + 14);
  for (const SplitKvChunk& k : s.chunks) t.factor_text_w = std::max(t.factor_text_w, m.measure(factor_text(k.factor), kCellText).width);
  t.col_w[5] = std::max(t.col_w[5], t.factor_text_w + t.bar_max + 20);
  for (const auto& r : t.rows) t.col_w[5] = std::max(t.col_w[5], m.measure(r[5], kCellText).width + 14);
  for (double w : t.col_w) t.width += w;
  t.head = "Each chunk alone, then the merge: m = max mᵢ, chunk i rescaled by exp(mᵢ − m)";
  t.merge_note = "merged: ℓ = Σ exp(mᵢ − m) ℓᵢ,  o = Σ exp(mᵢ − m) oᵢ  (the engine's tile::row_merge, float32)";
  t.height = head_h + t.rh * double(C + 2) + 6 + m.measure(t.merge_note, kNote).height + 8;
  return t;
}

// Where the oᵢ strips start when the table's left edge is at table_x.
double strips_x(const ChunkTable& t, double table_x) {
  double x = table_x;
  for (std::size_t i = 0; i < 4; ++i) x += t.col_w[i];
  return x + 7;
}

// One table row at ry: chunk r's, or the merged one when r is the number of chunks.
void draw_table_row(Canvas& cv, const Colormap& cmap, const SplitKvLesson& lesson, const ChunkTable& t, std::size_t r,
                    double table_x, double ry, double o_max) {
  const std::size_t dv = lesson.merged.size();
  const double rh = t.rh, ow = t.ow;
  const bool merged_row = r == lesson.chunks.size();
  double x = table_x;
  for (std::size_t i = 0; i < 4; ++i) {
    double tx = x + 7;
    if (i == 0 && !merged_row) {
      cv.fill_rect(tx, ry + rh / 2 - 6, 10, 10, chunk_colour(r));
      tx += 14;
    }
    cv.text(t.rows[r][i], tx, ry + rh / 2 - 1, {9, merged_row, kInk}, 0, 0.5);
    x += t.col_w[i];
  }
  const std::vector<double>& o = merged_row ? lesson.o : lesson.chunks[r].o;
  if (!merged_row && lesson.chunks[r].visible == 0) {
    cv.fill_rect(x + 7, ry, ow * double(dv), rh - 4, kEmpty);
    cv.text("0 (empty)", x + 7 + ow * double(dv) / 2, ry + rh / 2 - 2, {8.5, false, kAxisInk}, 0.5, 0.5);
  } else {
    draw_strip(cv, cmap, o, x + 7, ry, ow, rh - 4, std::max(o_max, 1e-12), t.o_text ? 2 : -1, 8.5);
  }
  x += t.col_w[4];
  if (!merged_row) {
    const SplitKvChunk& k = lesson.chunks[r];
    cv.text(t.rows[r][5], x + 7, ry + rh / 2 - 1, {9, false, kInk}, 0, 0.5);
    if (k.visible) cv.fill_rect(x + 7 + t.factor_text_w + 6, ry + 3, t.bar_max * k.factor, rh - 10, chunk_colour(r));
  }
}

// The heading centred on cx at table_y, the table under it from table_x.
void draw_table(Canvas& cv, const Colormap& cmap, const SplitKvLesson& lesson, const ChunkTable& t, double table_x,
                double table_y, double head_h, double cx, double o_max) {
  const std::size_t C = lesson.chunks.size();
  const double rh = t.rh;
  cv.text(t.head, cx, table_y, kHead, 0.5, 0);
  double y = table_y + head_h;
  double x = table_x;
  for (std::size_t i = 0; i < t.headers.size(); ++i) {
    cv.text(t.headers[i], x + 7, y + rh / 2, {9.5, true, kInk}, 0, 0.5);
    x += t.col_w[i];
  }
  y += rh;
  cv.polyline({{table_x, y}, {table_x + t.width, y}}, kRule, 0.8);
  for (std::size_t r = 0; r <= C; ++r) {
    const bool merged_row = r == C;
    const double ry = y + 2 + double(r) * rh + (merged_row ? 4 : 0);
    if (merged_row) cv.polyline({{table_x, ry - 3}, {table_x + t.width, ry - 3}}, kRule, 0.8);
    draw_table_row(cv, cmap, lesson, t, r, table_x, ry, o_max);
  }
  const double note_y = y + 2 + double(C + 1) * rh + 8;
  cv.text(t.merge_note, cx, note_y, kNote, 0.5, 0);
}

// 3. The two output rows, merged and one-pass, and the verdict on them.
struct OutputRows {
  bool out_text = false;  // values written in the cells
  double oc = 0, label_w = 0, width = 0, height = 0, verdict_h = 0;
  std::string merged_label = "merged: o / ℓ", one_label = "one pass: softmax(q Kᵀ · scale) V";
  std::string verdict, head = "The merged row against softmax·V in one pass (the naive kernel)";
};

OutputRows layout_outputs(Canvas& m, const SplitKvLesson& s, double head_h) {
  const std::size_t dv = s.merged.size();
  OutputRows o;
  o.out_text = dv <= 8;
  o.oc = o.out_text ? 58 : std::clamp(std::floor(440.0 / double(dv)), 5.0, 24.0);
  o.label_w = std::max(m.measure(o.merged_label, kCellText).width, m.measure(o.one_label, kCellText).width) + 10;
  o.width = o.label_w + o.oc * double(dv);
  bool same = true;
  for (std::size_t x = 0; x < dv; ++x) same = same && signed_fixed(s.merged[x], 4) == signed_fixed(s.one_pass[x], 4);
  // Checked on the numbers themselves: every value of the two rows written at 4 decimals.
  o.verdict = "max |merged − one pass| = " + format_g(s.max_abs_diff, 2) +
              (!same       ? ": they differ at 4 decimals"
               : o.out_text ? ": the same to the 4 decimals printed"
                            : ": all " + std::to_string(dv) + " values the same to 4 decimals (each one: the JSON)");
  o.height = head_h + 2 * 22 + 8 + m.measure(o.verdict, {10, true}).height + 6;
  o.verdict_h = m.measure(o.verdict, {10, true}).height;
  return o;
}

// The heading centred on cx at out_y, the rows from out_x; returns the y under the verdict.
double draw_outputs(Canvas& cv, const Colormap& cmap, const SplitKvLesson& lesson, const OutputRows& o, double out_x,
                    double out_y, double head_h, double cx, double out_max) {
  cv.text(o.head, cx, out_y, kHead, 0.5, 0);
  const double oy = out_y + head_h;
  cv.text(o.merged_label, out_x + o.label_w - 8, oy + 11, {9, true, kInk}, 1, 0.5);
  draw_strip(cv, cmap, lesson.merged, out_x + o.label_w, oy, o.oc, 20, std::max(out_max, 1e-12), o.out_text ? 4 : -1, 9);
  cv.text(o.one_label, out_x + o.label_w - 8, oy + 33, {9, true, kInk}, 1, 0.5);
  draw_strip(cv, cmap, lesson.one_pass, out_x + o.label_w, oy + 22, o.oc, 20, std::max(out_max, 1e-12), o.out_text ? 4 : -1, 9);
  const double by = oy + 2 * 22 + 8;
  cv.text(o.verdict, cx, by, {10, true, kInk}, 0.5, 0);
  return by + o.verdict_h + 6;
}

// The three colour scales, each part on its own, and the line that states them.
struct Scales {
  double score_max = 0, o_max = 0, out_max = 0;
  std::string note;
};

Scales colour_scales(const SplitKvLesson& s) {
  Scales c;
  c.o_max = abs_max(s.o);
  for (const SplitKvChunk& k : s.chunks) c.o_max = abs_max(k.o, c.o_max);
  c.score_max = abs_max(s.scores);
  c.out_max = abs_max(s.one_pass, abs_max(s.merged));
  c.note = "Colours: red > 0 > blue, each part on its own scale: scores ±" + format_g(c.score_max, 3) + ", oᵢ ±" +
           format_g(c.o_max, 3) + ", outputs ±" + format_g(c.out_max, 3);
  return c;
}

std::string visible_note(const SplitKvLesson& s) {
  std::size_t visible = 0;
  for (const SplitKvChunk& k : s.chunks) visible += k.visible;
  return visible < s.keys ? " (" + std::to_string(visible) + " visible, the rest masked)" : "";
}

}  // namespace

Figure split_kv_figure(const SplitKvLesson& s, const std::vector<std::string>& key_labels, const std::string& query_label) {
  render::check_labels(key_labels, s.keys, "key_labels");
  const std::size_t n = s.keys, C = s.chunks.size(), dv = s.merged.size();
  Canvas m = Canvas::measuring();
  const CacheStrip cache = layout_cache(m, s, key_labels);
  const double head_h = cache.head_h;
  const ChunkTable table = layout_table(m, s, head_h);
  const OutputRows out = layout_outputs(m, s, head_h);
  const Scales scales = colour_scales(s);
  const bool any_masked = std::any_of(s.scores.begin(), s.scores.end(), [](double x) { return x == -INFINITY; });
  const double legend_h = any_masked ? render::masked_legend_size(m).height + 8 : 0;
  const double legend_w = any_masked ? render::masked_legend_size(m).width : 0;

  const render::FigureFrame frame = render::frame_figure(
      m, "Split-KV (Flash-Decoding): the KV cache in " + count_of(C, "chunk") + ", merged exactly",
      "Query " + query_label + " against " + count_of(n, "key") + visible_note(s) + ". A chunk keeps only its max mᵢ, its sum ℓᵢ and its "
      "unnormalised output oᵢ; rescaling each to the common max m makes the merge exact.",
      {cache.width, table.width, out.width, m.measure(scales.note, kNote).width, m.measure(cache.head, kHead).width,
       m.measure(table.head, kHead).width, m.measure(out.head, kHead).width, m.measure(table.merge_note, kNote).width});
  Figure f;
  f.width = frame.width();
  f.height = frame.body_y() + cache.block_h + 10 + table.height + 10 + out.height + legend_h +
             m.measure(scales.note, kNote).height + 16;
  const double cache_x = frame.centred_x(cache.width), cache_y = frame.body_y() + head_h + cache.label_h;
  const double table_x = frame.centred_x(table.width), table_y = frame.body_y() + cache.block_h + 10;
  const double out_x = frame.centred_x(out.width), out_y = table_y + table.height + 10;
  f.grids.push_back({cache_x, cache_y, cache.cw, cache.cell_h, 1, n});
  f.grids.push_back({strips_x(table, table_x), table_y + head_h + table.rh + 2, table.ow, table.rh, C, dv});  // each strip rh - 4 tall, rows rh apart
  f.grids.push_back({out_x + out.label_w, out_y + head_h, out.oc, 22, 2, dv});

  f.draw = [=, lesson = s](Canvas& cv) {
    const Colormap cmap = Colormap::by_name("RdBu_r");
    const double cx = frame.width() / 2;
    frame.draw_title(cv);
    draw_cache(cv, cmap, lesson, cache, cache_x, cache_y, cx, frame.body_y(), scales.score_max);
    draw_table(cv, cmap, lesson, table, table_x, table_y, head_h, cx, scales.o_max);
    double by = draw_outputs(cv, cmap, lesson, out, out_x, out_y, head_h, cx, scales.out_max);
    if (any_masked) {
      render::draw_masked_legend(cv, frame.centred_x(legend_w), by);
      by += legend_h;
    }
    cv.text(scales.note, cx, by, kNote, 0.5, 0);
  };
  return f;
}

}  // namespace attn
