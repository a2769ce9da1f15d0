#pragma once
// JSON <-> tensors for the tensor I/O contract (docs/contracts.md).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/engine/core/tensor.hpp"
#include "attn/io/file_io.hpp"

namespace attn {

using Json = nlohmann::json;

// Limits of read_json: the largest input it reads (far above any tensor JSON a run could
// compute with in memory) and the deepest nesting (tensors need 3 levels, mha's rope 3).
inline constexpr std::size_t kMaxJsonBytes = std::size_t{256} << 20;
inline constexpr std::size_t kMaxJsonDepth = 64;

// Reads one JSON value from a file, or from stdin when path is "-". Malformed JSON, a number
// out of double range, bytes after the value, a missing or unreadable file, an input past
// kMaxJsonBytes or nested past kMaxJsonDepth -> InputError naming the file; a read that fails
// part-way -> RuntimeError.
Json read_json(const std::string& path);

// A nested JSON array of numbers, flattened row-major, with its shape.
struct DenseArray {
  Shape shape;
  std::vector<float> data;
};

// Parses a rectangular nested array of finite numbers (or, with booleans = true, of
// true/false/0/1). Errors name the field: "q: ragged array at q[1]: expected 4 items, got 3".
DenseArray parse_array(const Json& value, const std::string& field, bool booleans = false);

template <std::size_t N>
xt::xtensor<float, N> to_tensor(const DenseArray& a) {
  typename xt::xtensor<float, N>::shape_type shape;
  std::copy(a.shape.begin(), a.shape.end(), shape.begin());
  xt::xtensor<float, N> t = xt::xtensor<float, N>::from_shape(shape);
  std::copy(a.data.begin(), a.data.end(), t.begin());
  return t;
}

// How a float32 is written. exact: its exact value (0.1f -> 0.10000000149011612), so a float64
// reader sees exactly what was computed: the tensor I/O contract. shortest: the shortest
// decimal that reads back as the same float32 (0.1f -> 0.1): for files people read, such as
// the demo's manifest, where it halves the size.
enum class FloatText { exact, shortest };

// A tensor as nested JSON arrays; non-finite values are an InputError (JSON has neither inf
// nor NaN).
Json to_json(const Tensor1& t, FloatText text = FloatText::exact);
Json to_json(const Tensor2& t, FloatText text = FloatText::exact);
Json to_json(const Tensor3& t, FloatText text = FloatText::exact);
// A float64 matrix as nested rows of JSON doubles (the lessons' float64 results).
Json to_json(const xt::xtensor<double, 2>& m);

// Like to_json, but -inf (a fully masked row's log-sum-exp) becomes null: JSON has no -inf.
Json lse_to_json(const Tensor1& lse);
Json lse_to_json(const Tensor2& lse);

// A float32 as the double JSON will print (see FloatText).
double json_float(float x, FloatText text = FloatText::exact);

}  // namespace attn
