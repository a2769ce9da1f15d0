#include "common.hpp"

#include <cmath>
#include <iostream>

#include "attn/engine/cuda.hpp"
#include "attn/engine/error.hpp"

namespace attn::cli {

void warn(const std::string& message) { std::cerr << "warning: " << message << "\n"; }

void warn_unknown_fields(const Json& in, std::initializer_list<const char*> known) {
  for (const auto& [key, value] : in.items()) {
    bool found = false;
    for (const char* k : known) found = found || key == k;
    if (!found) warn("ignoring unknown field \"" + key + "\"");
  }
}

void require_object(const Json& in) {
  if (!in.is_object()) {
    throw InputError(std::string("input: expected a JSON object, got ") + in.type_name());
  }
}

const Json& require_field(const Json& in, const char* field) {
  if (!in.contains(field)) throw InputError(std::string(field) + ": required field is missing");
  return in.at(field);
}

bool optional_bool(const Json& in, const char* field, bool fallback) {
  if (!in.contains(field)) return fallback;
  const Json& v = in.at(field);
  if (!v.is_boolean()) {
    throw InputError(std::string(field) + ": expected true or false, got " + v.dump());
  }
  return v.get<bool>();
}

std::optional<double> optional_number(const Json& in, const char* field) {
  if (!in.contains(field) || in.at(field).is_null()) return std::nullopt;
  const Json& v = in.at(field);
  if (!v.is_number() || !std::isfinite(v.get<double>())) {
    throw InputError(std::string(field) + ": expected a number, got " + v.dump());
  }
  return v.get<double>();
}

std::optional<std::size_t> optional_positive_int(const Json& in, const char* field) {
  if (!in.contains(field) || in.at(field).is_null()) return std::nullopt;
  const Json& v = in.at(field);
  if (!v.is_number_integer() || v.get<long long>() < 1) {
    throw InputError(std::string(field) + ": expected an integer >= 1, got " + v.dump());
  }
  return static_cast<std::size_t>(v.get<long long>());
}

BackendOptions backend_from(const Json& in) {
  BackendOptions b;
  if (in.contains("backend") && !in.at("backend").is_null()) {
    const Json& v = in.at("backend");
    if (!v.is_string()) throw InputError("backend: expected a string, got " + v.dump());
    b.backend = parse_backend(v.get<std::string>());
  }
  const std::string name = backend_name(b.backend);
  std::string why;
  if (b.backend == Backend::cuda && !cuda_usable(&why)) throw InputError("backend: \"cuda\": " + why);
  if (auto size = optional_positive_int(in, "block_size")) {
    if (b.backend != Backend::flash) throw InputError("block_size: applies to backend \"flash\" only, not \"" + name + "\"");
    if (*size > 65536) throw InputError("block_size: expected at most 65536, got " + std::to_string(*size));
    b.block_q = b.block_k = *size;
  }
  if (in.contains("precision") && !in.at("precision").is_null()) {
    const Json& v = in.at("precision");
    if (b.backend != Backend::flash) throw InputError("precision: applies to backend \"flash\" only");
    if (v == "float32") {
      b.precision = FlashPrecision::float32;
    } else if (v != "float64") {
      throw InputError("precision: expected \"float64\" or \"float32\", got " + v.dump());
    }
  }
  return b;
}

SdpaOptions sdpa_options_from(const Json& in) {
  SdpaOptions o;
  o.causal = optional_bool(in, "causal", false);
  o.scale = optional_number(in, "scale");
  if (auto t = optional_number(in, "temperature")) o.temperature = *t;
  check_sdpa_options(o);
  return o;
}

Mask3 mask_from(const DenseArray& a) {
  Mask3 m = Mask3::from_shape({a.shape.size() == 3 ? a.shape[0] : 1, a.shape[a.shape.size() - 2],
                               a.shape.back()});
  std::transform(a.data.begin(), a.data.end(), m.begin(), [](float x) { return x != 0.0f; });
  return m;
}

void warn_fully_masked(const Tensor2& lse) {
  if (const std::size_t n = count_fully_masked_rows(lse)) {
    warn(std::to_string(n) + " query row(s) have every key masked: their weights and output are "
         "all 0 and their lse is null");
  }
}

}  // namespace attn::cli
