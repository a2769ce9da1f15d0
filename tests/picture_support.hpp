#pragma once
// Shared by the picture tests: decode a PNG with cairo and read pixels by point coordinates,
// and check that an SVG is well-formed XML with expat (a real parser, from libexpat1-dev).
#include <cairo.h>
#include <expat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/render/draw/canvas.hpp"
#include "attn/render/draw/colormap.hpp"
#include "support.hpp"

namespace attn::test {

struct Rgb8 {
  int r = 0, g = 0, b = 0;
  bool operator==(const Rgb8&) const = default;
};

inline Rgb8 to_rgb8(const Rgb& c) {
  return {static_cast<int>(std::lround(c.r * 255)), static_cast<int>(std::lround(c.g * 255)),
          static_cast<int>(std::lround(c.b * 255))};
}

inline bool near(const Rgb8& a, const Rgb8& b, int tolerance = 2) {
  return std::abs(a.r - b.r) <= tolerance && std::abs(a.g - b.g) <= tolerance && std::abs(a.b - b.b) <= tolerance;
}

inline std::ostream& operator<<(std::ostream& os, const Rgb8& c) {
  return os << "rgb(" << c.r << ", " << c.g << ", " << c.b << ")";
}

// A decoded PNG; pixel() takes coordinates in points, as the figure's CellGrid gives them.
class DecodedPng {
 public:
  static DecodedPng from_file(const std::string& path) {
    return DecodedPng(cairo_image_surface_create_from_png(path.c_str()));
  }
  static DecodedPng from_bytes(const std::string& bytes) {
    struct Reader {
      const std::string* bytes;
      std::size_t at = 0;
    } reader{&bytes};
    auto read = [](void* closure, unsigned char* data, unsigned int length) {
      auto* r = static_cast<Reader*>(closure);
      if (r->at + length > r->bytes->size()) return CAIRO_STATUS_READ_ERROR;
      std::copy_n(r->bytes->data() + r->at, length, data);
      r->at += length;
      return CAIRO_STATUS_SUCCESS;
    };
    return DecodedPng(cairo_image_surface_create_from_png_stream(read, &reader));
  }

  bool ok() const { return cairo_surface_status(surface_.get()) == CAIRO_STATUS_SUCCESS; }
  int width() const { return cairo_image_surface_get_width(surface_.get()); }
  int height() const { return cairo_image_surface_get_height(surface_.get()); }

  Rgb8 pixel(double x_pt, double y_pt, double scale) const {
    const int x = static_cast<int>(x_pt * scale), y = static_cast<int>(y_pt * scale);
    if (x < 0 || y < 0 || x >= width() || y >= height()) throw std::out_of_range("pixel outside the image");
    cairo_surface_flush(surface_.get());
    const unsigned char* row = cairo_image_surface_get_data(surface_.get()) +
                               static_cast<std::ptrdiff_t>(y) * cairo_image_surface_get_stride(surface_.get());
    std::uint32_t p;  // native-endian 0xAARRGGBB (opaque: no premultiplication to undo)
    std::memcpy(&p, row + 4 * x, 4);
    return {static_cast<int>((p >> 16) & 0xff), static_cast<int>((p >> 8) & 0xff), static_cast<int>(p & 0xff)};
  }

  // Mean colour over the middle `fraction` of a cell (avoids its separators).
  Rgb8 cell_mean(const CellGrid& g, std::size_t i, std::size_t j, double scale, double fraction = 0.6) const {
    double r = 0, gr = 0, b = 0;
    int n = 0;
    const double x0 = g.cell_x(j) + g.cell_w * (1 - fraction) / 2, y0 = g.cell_y(i) + g.cell_h * (1 - fraction) / 2;
    for (double y = y0; y < y0 + g.cell_h * fraction; y += 1 / scale) {
      for (double x = x0; x < x0 + g.cell_w * fraction; x += 1 / scale) {
        const Rgb8 p = pixel(x, y, scale);
        r += p.r;
        gr += p.g;
        b += p.b;
        ++n;
      }
    }
    return {static_cast<int>(std::lround(r / n)), static_cast<int>(std::lround(gr / n)),
            static_cast<int>(std::lround(b / n))};
  }

  // A point near the top-left corner of cell (i, j): inside the cell, clear of separators
  // and of the value written at its centre.
  // Pixels within `ring` pixels of the image's edges that are not the white background: ink
  // there is a label, legend or title running off the picture.
  int ink_on_border(int ring) const {
    cairo_surface_flush(surface_.get());
    int ink = 0;
    for (int y = 0; y < height(); ++y) {
      const unsigned char* row = cairo_image_surface_get_data(surface_.get()) +
                                 static_cast<std::ptrdiff_t>(y) * cairo_image_surface_get_stride(surface_.get());
      for (int x = 0; x < width(); ++x) {
        if (x >= ring && x < width() - ring && y >= ring && y < height() - ring) continue;
        std::uint32_t p;
        std::memcpy(&p, row + 4 * x, 4);
        if ((p & 0xffffff) != 0xffffff) ++ink;
      }
    }
    return ink;
  }

  Rgb8 cell_corner(const CellGrid& g, std::size_t i, std::size_t j, double scale) const {
    return pixel(g.cell_x(j) + 0.15 * g.cell_w, g.cell_y(i) + 0.15 * g.cell_h, scale);
  }

 private:
  explicit DecodedPng(cairo_surface_t* s) : surface_(s, cairo_surface_destroy) {}
  std::shared_ptr<cairo_surface_t> surface_;
};

// How many entries a folder holds (a test's check that no temporary file was left behind).
inline std::size_t files_in(const std::filesystem::path& dir) {
  return static_cast<std::size_t>(
      std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator{}));
}

// Every string a figure draws, in drawing order (Canvas::record_text): the words inside a
// picture, beyond the title and subtitle Figure keeps.
inline std::vector<std::string> drawn_texts(const Figure& figure) {
  Canvas canvas = Canvas::measuring();
  std::vector<std::string> log;
  canvas.record_text(&log);
  figure.draw(canvas);
  return log;
}

// The same with each string's lines and box (Canvas::record_drawn).
inline std::vector<DrawnText> drawn_boxes(const Figure& figure) {
  Canvas canvas = Canvas::measuring();
  std::vector<DrawnText> log;
  canvas.record_drawn(&log);
  figure.draw(canvas);
  return log;
}

// Characters (code points) in a UTF-8 string, trailing spaces left out.
inline std::size_t characters(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xc0) != 0x80; }));
}

// Text as a reader sees it: no-break spaces as spaces, word joiners (text_rules.hpp) dropped.
// A figure's title keeps them, so a test can look for "max |A − P| = 0.1" in it.
inline std::string read_as_plain(std::string s) {
  for (std::size_t at; (at = s.find("\u00a0")) != std::string::npos;) s.replace(at, 2, " ");
  for (std::size_t at; (at = s.find("\u2060")) != std::string::npos;) s.erase(at, 3);
  return s;
}

// Whether any drawn string contains `part`.
inline bool draws_text(const Figure& figure, const std::string& part) {
  for (const std::string& t : drawn_texts(figure))
    if (t.find(part) != std::string::npos) return true;
  return false;
}

// True when text is one well-formed XML document.
inline bool well_formed_xml(const std::string& text) {
  std::unique_ptr<std::remove_pointer_t<XML_Parser>, decltype(&XML_ParserFree)> parser(
      XML_ParserCreate(nullptr), XML_ParserFree);
  return XML_Parse(parser.get(), text.data(), static_cast<int>(text.size()), /*isFinal=*/1) ==
         XML_STATUS_OK;
}

}  // namespace attn::test
