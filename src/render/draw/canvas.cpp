#include "attn/render/draw/canvas.hpp"

#include <cairo-svg.h>
#include <cairo.h>
#include <pango/pangocairo.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <cstring>
#include <numbers>

#include "attn/engine/core/error.hpp"
#include "attn/io/file_io.hpp"

namespace attn {
namespace {

// "Sans" lets fontconfig choose per script: DejaVu Sans for Latin, WenQuanYi Micro Hei for
// Chinese (fonts-wqy-microhei). Naming one family would turn other scripts into boxes.
constexpr const char* kFontFamily = "Sans";

cairo_status_t append_bytes(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

void check(cairo_status_t status, const char* what) {
  if (status != CAIRO_STATUS_SUCCESS) {
    throw RuntimeError(std::string(what) + ": " + cairo_status_to_string(status));
  }
}

using SurfacePtr = std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)>;
using ContextPtr = std::unique_ptr<cairo_t, decltype(&cairo_destroy)>;

void draw_on(cairo_surface_t* surface, const Figure& figure, double scale) {
  ContextPtr cr(cairo_create(surface), cairo_destroy);
  cairo_scale(cr.get(), scale, scale);
  cairo_set_source_rgb(cr.get(), 1, 1, 1);  // an opaque white page, also in dark viewers
  cairo_paint(cr.get());
  {
    Canvas canvas(cr.get());
    figure.draw(canvas);
  }
  check(cairo_status(cr.get()), "drawing the figure");
}

// What a test reads back of one text() call: its lines, with the no-break spaces and word
// joiners of keep_expressions_whole read as a space and nothing, and the box it covers.
DrawnText drawn_text(const std::string& text, std::vector<std::string> lines, double x, double y, double w,
                     double h, double anchor_x, double anchor_y, double angle) {
  DrawnText d{text, {}, 0, 0, 0, 0, angle};
  for (std::string& line : lines) {
    std::string plain;
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (line.compare(i, 2, "\u00a0") == 0) {
        plain += ' ';
        ++i;
      } else if (line.compare(i, 3, "\u2060") == 0) {
        i += 2;
      } else {
        plain += line[i];
      }
    }
    d.lines.push_back(std::move(plain));
  }
  // The corners of the text's box, turned by angle (counter-clockwise, y down) about (x, y).
  const double a = angle * std::numbers::pi / 180.0, c = std::cos(a), s = std::sin(a);
  double x0 = 1e300, y0 = 1e300, x1 = -1e300, y1 = -1e300;
  for (double u : {-anchor_x * w, (1 - anchor_x) * w}) {
    for (double v : {-anchor_y * h, (1 - anchor_y) * h}) {
      const double px = x + u * c + v * s, py = y - u * s + v * c;
      x0 = std::min(x0, px), y0 = std::min(y0, py), x1 = std::max(x1, px), y1 = std::max(y1, py);
    }
  }
  d.x = x0, d.y = y0, d.width = x1 - x0, d.height = y1 - y0;
  return d;
}

}  // namespace

std::vector<ImageFormat> parse_image_formats(const std::string& text) {
  if (text == "png") return {ImageFormat::png};
  if (text == "svg") return {ImageFormat::svg};
  if (text == "both") return {ImageFormat::png, ImageFormat::svg};
  throw InputError("--format: expected png, svg or both, got \"" + text + "\"");
}

const char* extension(ImageFormat format) { return format == ImageFormat::png ? "png" : "svg"; }

Canvas::Canvas(cairo_t* cr) : Canvas(cr, false) {}

Canvas::Canvas(cairo_t* cr, bool owns_cr)
    : cr_(cr), layout_(pango_cairo_create_layout(cr)), owns_cr_(owns_cr) {
  // No hinting and unrounded glyph positions: text measures the same on every surface and at
  // every scale, so the layout computed once fits both the PNG and the SVG.
  cairo_font_options_t* fo = cairo_font_options_create();
  cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_NONE);
  cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF);
  cairo_font_options_set_antialias(fo, CAIRO_ANTIALIAS_GRAY);
  PangoContext* ctx = pango_layout_get_context(layout_);
  pango_cairo_context_set_font_options(ctx, fo);
  pango_context_set_round_glyph_positions(ctx, FALSE);
  cairo_font_options_destroy(fo);
  pango_layout_context_changed(layout_);
}

Canvas::~Canvas() {
  g_object_unref(layout_);
  if (owns_cr_) cairo_destroy(cr_);
}

Canvas Canvas::measuring() {
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1);
  cairo_t* cr = cairo_create(surface);
  cairo_surface_destroy(surface);  // cr holds its own reference
  return Canvas(cr, /*owns_cr=*/true);
}

void Canvas::set_style(const std::string& text, const TextStyle& style) {
  PangoFontDescription* font = pango_font_description_new();
  pango_font_description_set_family(font, kFontFamily);
  pango_font_description_set_weight(font, style.bold ? PANGO_WEIGHT_BOLD : PANGO_WEIGHT_NORMAL);
  // Absolute size: points are the user units here, whatever resolution pango assumes.
  pango_font_description_set_absolute_size(font, style.size * PANGO_SCALE);
  pango_layout_set_font_description(layout_, font);
  pango_font_description_free(font);
  if (style.max_width > 0) {
    pango_layout_set_width(layout_, static_cast<int>(style.max_width * PANGO_SCALE));
    pango_layout_set_ellipsize(layout_, style.wrap ? PANGO_ELLIPSIZE_NONE : PANGO_ELLIPSIZE_END);
    pango_layout_set_wrap(layout_, PANGO_WRAP_WORD_CHAR);
    pango_layout_set_alignment(layout_, style.wrap ? PANGO_ALIGN_CENTER : PANGO_ALIGN_LEFT);
  } else {
    pango_layout_set_width(layout_, -1);
    pango_layout_set_ellipsize(layout_, PANGO_ELLIPSIZE_NONE);
  }
  // Measured as drawn: with the typographic minus, a little wider than a hyphen.
  const std::string minus = typographic_minus(text);
  const bool wrapped = style.max_width > 0 && style.wrap;
  const std::string shown = wrapped ? keep_expressions_whole(minus) : minus;
  pango_layout_set_text(layout_, shown.c_str(), static_cast<int>(shown.size()));
  if (wrapped) keep_last_line_long(shown, style.max_width);
}

// A wrapped text's last line shorter than kShortestLastLine characters is a widow ("1" alone
// under a full line): the space before it becomes a no-break space, so the last word of the
// line above comes down, as often as needed, while the joined words take at most half a line
// (longer, pango would have to break inside a word).
void Canvas::keep_last_line_long(std::string shown, double max_width) {
  constexpr std::size_t kShortestLastLine = 12;
  const auto characters = [](const std::string& s) {
    return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xc0) != 0x80; }));
  };
  for (int joins = 0; joins < 6; ++joins) {
    const std::vector<std::string> lines = laid_out_lines();
    std::string last = lines.empty() ? "" : lines.back();
    while (!last.empty() && last.back() == ' ') last.pop_back();
    if (lines.size() < 2 || characters(last) >= kShortestLastLine) return;
    const int count = pango_layout_get_line_count(layout_);
    const std::size_t start = static_cast<std::size_t>(pango_layout_get_line_readonly(layout_, count - 1)->start_index);
    const std::size_t space = start == 0 ? std::string::npos : shown.rfind(' ', start - 1);
    if (space == std::string::npos) return;
    std::string joined = shown;
    joined.replace(space, 1, "\u00a0");
    const std::size_t tail_start = shown.rfind(' ', space == 0 ? 0 : space - 1);
    const std::string tail = joined.substr(tail_start == std::string::npos ? 0 : tail_start + 1);
    PangoLayout* probe = pango_layout_copy(layout_);
    pango_layout_set_width(probe, -1);
    pango_layout_set_text(probe, tail.c_str(), static_cast<int>(tail.size()));
    PangoRectangle logical;
    pango_layout_get_extents(probe, nullptr, &logical);
    g_object_unref(probe);
    if (static_cast<double>(logical.width) / PANGO_SCALE > max_width / 2) return;
    shown = std::move(joined);
    pango_layout_set_text(layout_, shown.c_str(), static_cast<int>(shown.size()));
  }
}

std::vector<std::string> Canvas::laid_out_lines() const {
  const char* text = pango_layout_get_text(layout_);
  std::vector<std::string> lines;
  for (GSList* l = pango_layout_get_lines_readonly(layout_); l != nullptr; l = l->next) {
    const auto* line = static_cast<const PangoLayoutLine*>(l->data);
    lines.emplace_back(text + line->start_index, static_cast<std::size_t>(line->length));
  }
  return lines;
}

TextSize Canvas::measure(const std::string& text, const TextStyle& style) {
  set_style(text, style);
  PangoRectangle logical;
  pango_layout_get_extents(layout_, nullptr, &logical);
  return {static_cast<double>(logical.width) / PANGO_SCALE,
          static_cast<double>(logical.height) / PANGO_SCALE};
}

int Canvas::unknown_glyphs(const std::string& text, const TextStyle& style) {
  set_style(text, style);
  return pango_layout_get_unknown_glyphs_count(layout_);
}

void Canvas::text(const std::string& text, double x, double y, const TextStyle& style,
                  double anchor_x, double anchor_y, double angle) {
  if (text.empty()) return;
  if (text_log_) text_log_->push_back(typographic_minus(text));
  set_style(text, style);
  PangoRectangle ink_unused, logical;
  pango_layout_get_extents(layout_, &ink_unused, &logical);
  // A centred, wrapped layout starts its lines to the right of x = 0: undo that offset.
  const double w = static_cast<double>(logical.width) / PANGO_SCALE;
  const double h = static_cast<double>(logical.height) / PANGO_SCALE;
  const double x_offset = static_cast<double>(logical.x) / PANGO_SCALE;
  if (drawn_log_) drawn_log_->push_back(drawn_text(text, laid_out_lines(), x, y, w, h, anchor_x, anchor_y, angle));
  cairo_save(cr_);
  cairo_translate(cr_, x, y);
  cairo_rotate(cr_, -angle * std::numbers::pi / 180.0);
  cairo_move_to(cr_, -anchor_x * w - x_offset, -anchor_y * h);
  cairo_set_source_rgb(cr_, style.color.r, style.color.g, style.color.b);
  pango_cairo_update_layout(cr_, layout_);
  pango_cairo_show_layout(cr_, layout_);
  cairo_restore(cr_);
}

void Canvas::fill_rect(double x, double y, double w, double h, const Rgb& color) {
  cairo_set_source_rgb(cr_, color.r, color.g, color.b);
  cairo_rectangle(cr_, x, y, w, h);
  cairo_fill(cr_);
}

void Canvas::stroke_rect(double x, double y, double w, double h, const Rgb& color,
                         double line_width) {
  cairo_set_source_rgb(cr_, color.r, color.g, color.b);
  cairo_set_line_width(cr_, line_width);
  cairo_rectangle(cr_, x, y, w, h);
  cairo_stroke(cr_);
}

void Canvas::hatch_rect(double x, double y, double w, double h) {
  fill_rect(x, y, w, h, rgb_from_hex(0xdcdcdc));
  cairo_save(cr_);
  cairo_rectangle(cr_, x, y, w, h);
  cairo_clip(cr_);
  const Rgb stripe = rgb_from_hex(0x9e9e9e);
  cairo_set_source_rgb(cr_, stripe.r, stripe.g, stripe.b);
  cairo_set_line_width(cr_, 1.0);
  const double step = 5.0;
  for (double s = -h; s < w; s += step) {  // lines of slope -1, "/" when y grows downwards
    cairo_move_to(cr_, x + s, y + h);
    cairo_line_to(cr_, x + s + h, y);
  }
  cairo_stroke(cr_);
  cairo_restore(cr_);
}

void Canvas::vertical_gradient(double x, double y, double w, double h, const Colormap& cmap) {
  cairo_pattern_t* p = cairo_pattern_create_linear(0, y + h, 0, y);
  const auto& anchors = cmap.anchors();
  for (std::size_t i = 0; i < anchors.size(); ++i) {
    const double t = static_cast<double>(i) / static_cast<double>(anchors.size() - 1);
    cairo_pattern_add_color_stop_rgb(p, t, anchors[i].r, anchors[i].g, anchors[i].b);
  }
  cairo_set_source(cr_, p);
  cairo_rectangle(cr_, x, y, w, h);
  cairo_fill(cr_);
  cairo_pattern_destroy(p);
}

void Canvas::polyline(const std::vector<Point>& points, const Rgb& color, double line_width,
                      bool dashed) {
  if (points.size() < 2) return;
  cairo_save(cr_);
  cairo_set_source_rgb(cr_, color.r, color.g, color.b);
  cairo_set_line_width(cr_, line_width);
  cairo_set_line_join(cr_, CAIRO_LINE_JOIN_ROUND);
  cairo_set_line_cap(cr_, dashed ? CAIRO_LINE_CAP_BUTT : CAIRO_LINE_CAP_ROUND);
  if (dashed) {
    const double pattern[] = {4 * std::max(line_width, 1.0) / 1.5, 3 * std::max(line_width, 1.0) / 1.5};
    cairo_set_dash(cr_, pattern, 2, 0);
  }
  cairo_move_to(cr_, points[0].x, points[0].y);
  for (std::size_t i = 1; i < points.size(); ++i) cairo_line_to(cr_, points[i].x, points[i].y);
  cairo_stroke(cr_);
  cairo_restore(cr_);
}

void Canvas::fill_polygon(const std::vector<Point>& points, const Rgb& color, double alpha) {
  if (points.size() < 3) return;
  cairo_set_source_rgba(cr_, color.r, color.g, color.b, alpha);
  cairo_move_to(cr_, points[0].x, points[0].y);
  for (std::size_t i = 1; i < points.size(); ++i) cairo_line_to(cr_, points[i].x, points[i].y);
  cairo_close_path(cr_);
  cairo_fill(cr_);
}

void Canvas::fill_circle(double cx, double cy, double r, const Rgb& color) {
  cairo_set_source_rgb(cr_, color.r, color.g, color.b);
  cairo_new_sub_path(cr_);
  cairo_arc(cr_, cx, cy, r, 0, 2 * std::numbers::pi);
  cairo_fill(cr_);
}

void Canvas::stroke_circle(double cx, double cy, double r, const Rgb& color, double line_width) {
  cairo_set_source_rgb(cr_, color.r, color.g, color.b);
  cairo_set_line_width(cr_, line_width);
  cairo_new_sub_path(cr_);
  cairo_arc(cr_, cx, cy, r, 0, 2 * std::numbers::pi);
  cairo_stroke(cr_);
}

void Canvas::push_clip(double x, double y, double w, double h) {
  cairo_save(cr_);
  cairo_rectangle(cr_, x, y, w, h);
  cairo_clip(cr_);
}

void Canvas::pop_clip() { cairo_restore(cr_); }

std::string render_png(const Figure& figure, double scale) {
  // cairo's image surfaces stop at 32767 pixels a side; past that it would only say "invalid value".
  constexpr double kMaxSide = 32767;
  const double width = std::ceil(figure.width * scale), height = std::ceil(figure.height * scale);
  const auto pixels = [](double v) { return v <= 1e15 ? std::to_string(static_cast<long long>(v)) : "too many"; };
  if (!(width <= kMaxSide && height <= kMaxSide))
    throw InputError("the picture would be " + pixels(width) + " x " + pixels(height) +
                     " pixels, more than the 32767 a side a PNG can be drawn at: fewer rows or "
                     "tokens, a smaller --scale, or --format svg");
  const int w = static_cast<int>(width), h = static_cast<int>(height);
  SurfacePtr surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h), cairo_surface_destroy);
  check(cairo_surface_status(surface.get()), "creating a PNG surface");
  draw_on(surface.get(), figure, scale);
  std::string bytes;
  check(cairo_surface_write_to_png_stream(surface.get(), append_bytes, &bytes), "encoding PNG");
  return bytes;
}

std::string render_svg(const Figure& figure) {
  std::string bytes;
  {
    SurfacePtr surface(cairo_svg_surface_create_for_stream(append_bytes, &bytes, figure.width,
                                                           figure.height),
                       cairo_surface_destroy);
    check(cairo_surface_status(surface.get()), "creating an SVG surface");
    draw_on(surface.get(), figure, 1.0);
    cairo_surface_finish(surface.get());
    check(cairo_surface_status(surface.get()), "encoding SVG");
  }
  return bytes;
}

std::vector<std::string> save_figure(const Figure& figure, const std::string& stem,
                                     const ImageOptions& options) {
  std::vector<std::string> written;
  for (ImageFormat format : options.formats) {
    const std::string path = stem + "." + extension(format);
    write_file_atomically(path, format == ImageFormat::png ? render_png(figure, options.scale)
                                                           : render_svg(figure));
    written.push_back(path);
  }
  return written;
}

}  // namespace attn
