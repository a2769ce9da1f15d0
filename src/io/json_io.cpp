#include "attn/io/json_io.hpp"

#include <unistd.h>

#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "attn/engine/core/error.hpp"
#include "attn/io/file_io.hpp"

namespace attn {
namespace {

// Depth-first walk that records the shape from the first element of each level and checks
// that every other element agrees with it.
void flatten(const Json& v, const std::string& where, std::size_t depth, DenseArray& out,
             bool booleans, const std::string& field) {
  if (v.is_array()) {
    if (depth == out.shape.size()) {
      if (!out.data.empty()) {
        throw InputError(field + ": ragged array at " + where + ": expected a number, got an array");
      }
      out.shape.push_back(v.size());
    } else if (out.shape[depth] != v.size()) {
      throw InputError(field + ": ragged array at " + where + ": expected " +
                       std::to_string(out.shape[depth]) + " items, got " +
                       std::to_string(v.size()));
    }
    if (v.empty()) throw InputError(field + ": empty array at " + where);
    for (std::size_t i = 0; i < v.size(); ++i)
      flatten(v[i], where + "[" + std::to_string(i) + "]", depth + 1, out, booleans, field);
    return;
  }
  if (depth != out.shape.size()) {
    throw InputError(field + ": ragged array at " + where + ": expected an array, got " +
                     v.type_name());
  }
  if (booleans) {
    if (v.is_boolean()) {
      out.data.push_back(v.get<bool>() ? 1.0f : 0.0f);
    } else if (v.is_number() && (v.get<double>() == 0.0 || v.get<double>() == 1.0)) {
      out.data.push_back(static_cast<float>(v.get<double>()));
    } else {
      throw InputError(field + ": expected 0/1 or true/false at " + where + ", got " + v.dump());
    }
    return;
  }
  if (!v.is_number()) {
    throw InputError(field + ": expected a number at " + where + ", got " + v.type_name());
  }
  const double x = v.get<double>();
  if (!std::isfinite(x) || std::fabs(x) > 3.4028234663852886e38) {
    throw InputError(field + ": number at " + where + " does not fit in float32");
  }
  out.data.push_back(static_cast<float>(x));
}

template <class T>
Json nested(const T& t, std::size_t dim, std::size_t offset, bool lse, FloatText text = FloatText::exact) {
  Json a = Json::array();
  const std::size_t n = t.shape(dim);
  std::size_t stride = 1;
  for (std::size_t k = dim + 1; k < t.dimension(); ++k) stride *= t.shape(k);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t at = offset + i * stride;
    if (dim + 1 < t.dimension()) {
      a.push_back(nested(t, dim + 1, at, lse, text));
    } else {
      const float x = t.data()[at];
      if (lse && std::isinf(x) && x < 0) {
        a.push_back(nullptr);
      } else if (!std::isfinite(x)) {
        // JSON has no inf or NaN (nlohmann would print null, which means "fully masked" in an
        // lse): an overflow must be an error, never a silent null.
        throw InputError("a result is " + std::string(std::isnan(x) ? "NaN" : "infinite") +
                         " in float32: the scores overflow; scale the inputs (or scale) down");
      } else {
        a.push_back(json_float(x, text));
      }
    }
  }
  return a;
}

}  // namespace

Json read_json(const std::string& path) {
  const std::string name = path == "-" ? std::string("stdin") : path;
  const std::string text = read_input(path, kMaxJsonBytes);
  // nlohmann's lexer stops at a NUL byte as if the input ended there, so '{...}\0garbage'
  // would pass as valid JSON: a NUL anywhere is refused (JSON text never contains one).
  if (const auto nul = text.find('\0'); nul != std::string::npos) {
    throw InputError("malformed JSON in " + name + ": a NUL byte at offset " + std::to_string(nul));
  }
  // The DOM is built without recursion, but everything that walks it (flatten, dump, the
  // destructor of a huge tree) recurses: refuse deep nesting while parsing.
  const Json::parser_callback_t depth_limit = [&name](int depth, Json::parse_event_t event, Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth >= static_cast<int>(kMaxJsonDepth)) {
      throw InputError("malformed JSON in " + name + ": nested deeper than " +
                       std::to_string(kMaxJsonDepth) + " levels");
    }
    return true;
  };
  try {
    return Json::parse(text, depth_limit);
  } catch (const Json::exception& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 5: ...", or
    // out_of_range.406 "number overflow parsing '1e400'": both are the input's fault.
    std::string what = e.what();
    const auto at = what.find("] ");
    throw InputError("malformed JSON in " + name + ": " +
                     (at == std::string::npos ? what : what.substr(at + 2)));
  }
}

DenseArray parse_array(const Json& value, const std::string& field, bool booleans) {
  DenseArray out;
  if (!value.is_array()) {
    throw InputError(field + ": expected a nested array of " +
                     (booleans ? std::string("0/1 or true/false") : std::string("numbers")) +
                     ", got " + value.type_name());
  }
  flatten(value, field, 0, out, booleans, field);
  return out;
}

double json_float(float x, FloatText text) {
  if (text == FloatText::shortest) {
    // The shortest decimal that reads back as this float, read as a double: nlohmann prints
    // that double's shortest form, which is the same short string.
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, x);
    return std::strtod(std::string(buf, r.ptr).c_str(), nullptr);
  }
  // The float's exact value. Its shortest round-trip decimal (0.1f -> "0.1") reads back as the
  // same float only in float32; a float64 reader (Python's json, a reference check) would see
  // an error of up to half a float32 ulp that the computation never made, and FlashAttention's
  // 2x rule fails on exactly the cases where float32 is exact. nlohmann prints this double in
  // its shortest form that round-trips as a double: 0.10000000149011612.
  return static_cast<double>(x);
}

Json to_json(const Tensor1& t, FloatText text) { return nested(t, 0, 0, false, text); }
Json to_json(const Tensor2& t, FloatText text) { return nested(t, 0, 0, false, text); }
Json to_json(const Tensor3& t, FloatText text) { return nested(t, 0, 0, false, text); }
Json to_json(const xt::xtensor<double, 2>& m) {
  Json rows = Json::array();
  for (std::size_t i = 0; i < m.shape(0); ++i) {
    Json row = Json::array();
    for (std::size_t j = 0; j < m.shape(1); ++j) row.push_back(m(i, j));
    rows.push_back(row);
  }
  return rows;
}
Json lse_to_json(const Tensor1& lse) { return nested(lse, 0, 0, true); }
Json lse_to_json(const Tensor2& lse) { return nested(lse, 0, 0, true); }

}  // namespace attn
