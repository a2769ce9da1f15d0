#pragma once
// The drawing surface behind every attn-cli picture: cairo draws the shapes, pango lays out
// the text (with fontconfig fallback, so "Sans" covers Latin with DejaVu and Chinese with
// WenQuanYi Micro Hei), and a Figure is saved as PNG and/or SVG through write_file_atomically.
//
// Units are points (1/72 inch) everywhere; --scale only changes how many pixels a PNG spends
// on one point. Text is laid out with hinting off, so a figure measures the same on the PNG
// and the SVG surface, and at every scale.
#include <functional>
#include <string>
#include <vector>

#include "attn/render/draw/colormap.hpp"
#include "attn/render/draw/text_rules.hpp"

typedef struct _cairo cairo_t;
typedef struct _PangoLayout PangoLayout;

namespace attn {

enum class ImageFormat { png, svg };

struct ImageOptions {
  std::vector<ImageFormat> formats{ImageFormat::png};
  double scale = 2.0;  // PNG pixels per point: 2 = crisp on HiDPI screens and in slides
};

// "png", "svg" or "both"; InputError otherwise.
std::vector<ImageFormat> parse_image_formats(const std::string& text);
const char* extension(ImageFormat format);  // "png" / "svg"

struct TextStyle {
  double size = 10;  // points
  bool bold = false;
  Rgb color{0.1, 0.1, 0.1};
  double max_width = 0;  // > 0: longer text is cut with an ellipsis...
  bool wrap = false;     // ...or, with wrap, broken into centred lines at word boundaries
};

// One string Canvas::text drew, as a test reads it back: a PNG's text cannot be.
struct DrawnText {
  std::string text;                // as given to text()
  std::vector<std::string> lines;  // the lines it was laid out in (no-break spaces read as spaces)
  double x = 0, y = 0, width = 0, height = 0;  // the box it covers in figure points, turned by angle
  double angle = 0;                // degrees counter-clockwise; 0 = upright
};

struct TextSize {
  double width = 0, height = 0;
};

class Canvas {
 public:
  explicit Canvas(cairo_t* cr);  // draws on cr, which the caller owns
  ~Canvas();
  Canvas(const Canvas&) = delete;
  Canvas& operator=(const Canvas&) = delete;

  // A canvas that only measures text (a 1x1 surface): layouts are computed before the
  // figure's size, and so its surface, is known.
  static Canvas measuring();

  TextSize measure(const std::string& text, const TextStyle& style);
  // Glyphs pango could not find in any installed font (drawn as boxes): 0 means readable.
  int unknown_glyphs(const std::string& text, const TextStyle& style);

  // Draws text so that the point (anchor_x, anchor_y) of its box, each in [0, 1] (0, 0 = top
  // left, 0.5, 0.5 = centre), lands on (x, y); angle in degrees, counter-clockwise.
  void text(const std::string& text, double x, double y, const TextStyle& style,
            double anchor_x = 0, double anchor_y = 0, double angle = 0);

  void fill_rect(double x, double y, double w, double h, const Rgb& color);
  void stroke_rect(double x, double y, double w, double h, const Rgb& color, double line_width);
  // Light grey with diagonal stripes: the one look of "masked" in every picture.
  void hatch_rect(double x, double y, double w, double h);
  // A vertical colour ramp, t = 1 at the top (a colorbar).
  void vertical_gradient(double x, double y, double w, double h, const Colormap& cmap);

  // Lines and shapes (plots, arrows): widths in points; dashed = 4 on, 3 off, scaled by width.
  struct Point {
    double x = 0, y = 0;
  };
  void polyline(const std::vector<Point>& points, const Rgb& color, double line_width,
                bool dashed = false);
  // A closed polygon, filled with color at opacity alpha (1 = opaque).
  void fill_polygon(const std::vector<Point>& points, const Rgb& color, double alpha = 1);
  void fill_circle(double cx, double cy, double r, const Rgb& color);
  void stroke_circle(double cx, double cy, double r, const Rgb& color, double line_width);
  // Drawing outside the rectangle is cut off until the matching pop_clip().
  void push_clip(double x, double y, double w, double h);
  void pop_clip();

  cairo_t* cr() { return cr_; }

  // Every string text() draws from now on is appended to *log (nullptr: stop). Tests read a
  // picture's words this way: a PNG's text cannot be read back.
  void record_text(std::vector<std::string>* log) { text_log_ = log; }
  // The same with each string's lines and box (nullptr: stop).
  void record_drawn(std::vector<DrawnText>* log) { drawn_log_ = log; }

 private:
  Canvas(cairo_t* cr, bool owns_cr);
  void set_style(const std::string& text, const TextStyle& style);
  void keep_last_line_long(std::string shown, double max_width);
  std::vector<std::string> laid_out_lines() const;
  cairo_t* cr_;
  PangoLayout* layout_;
  bool owns_cr_;
  std::vector<std::string>* text_log_ = nullptr;
  std::vector<DrawnText>* drawn_log_ = nullptr;
};

// Where a grid of cells lies inside a figure (points): tests and callers can find cell (i, j).
struct CellGrid {
  double x = 0, y = 0, cell_w = 0, cell_h = 0;
  std::size_t rows = 0, cols = 0;
  double cell_x(std::size_t j) const { return x + static_cast<double>(j) * cell_w; }
  double cell_y(std::size_t i) const { return y + static_cast<double>(i) * cell_h; }
};

// Where a plot's data area lies inside a figure (points): its axis limits map onto its edges.
struct PlotRect {
  double x = 0, y = 0, width = 0, height = 0;
};

// A picture ready to be drawn on any surface: its size, its cell grids and plot areas, and how
// to draw it.
struct Figure {
  double width = 0, height = 0;  // points
  std::vector<CellGrid> grids;
  std::vector<PlotRect> plots;
  std::function<void(Canvas&)> draw;
  // What the picture says in its subtitle about values it could not show as they are (cells
  // outside the colour scale, drawn in its end colour): a command prints these as warnings too.
  std::vector<std::string> notes{};
  // The title block's text as drawn, before typographic_minus (tests read it: a PNG's text
  // cannot be read back).
  std::string title{}, subtitle{};
};

// Encoded image bytes (deterministic: no timestamps, no file names inside).
std::string render_png(const Figure& figure, double scale);
std::string render_svg(const Figure& figure);

// Writes stem.png and/or stem.svg, each through a temporary file and a rename, and returns
// the paths written. I/O failure -> RuntimeError.
std::vector<std::string> save_figure(const Figure& figure, const std::string& stem,
                                     const ImageOptions& options);

}  // namespace attn
