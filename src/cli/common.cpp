#include "common.hpp"

#include <cmath>
#include <iostream>

#include "attn/engine/attention/cuda.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/text/printable_text.hpp"
#include "attn/io/numbers.hpp"
#include "budget.hpp"

namespace attn::cli {

void warn(const std::string& message) { std::cerr << "warning: " << printable_text(message) << "\n"; }

void warn_unknown_fields(const Json& in, const std::vector<std::string>& known) {
  for (const auto& [key, value] : in.items()) {
    bool found = false;
    for (const std::string& k : known) found = found || key == k;
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

std::optional<double> optional_number(const Json& in, const char* field, double lo, double hi) {
  if (!in.contains(field) || in.at(field).is_null()) return std::nullopt;
  return number_field(in.at(field), field, lo, hi);
}

std::optional<std::size_t> optional_positive_int(const Json& in, const char* field) {
  if (!in.contains(field) || in.at(field).is_null()) return std::nullopt;
  return count_field(in.at(field), field, 1);
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

void require_weights_memory(std::size_t H, std::size_t Lq, std::size_t Lk, const BackendOptions& backend,
                            bool print, const char* no_weights_flag) {
  const bool naive = backend.backend == Backend::naive;
  if (!naive && !print) return;  // the tiled kernels hold one tile of scores per thread
  // float64 in the kernel and float32 in the result; printed: a JSON value (16 bytes) and its
  // text (about 12 characters).
  const double per_weight = 12.0 + (print ? 28.0 : 0.0);
  const double n = static_cast<double>(H) * static_cast<double>(Lq) * static_cast<double>(Lk);
  const std::string what = "the attention weights [" + std::to_string(H) + ", " + std::to_string(Lq) + ", " +
                           std::to_string(Lk) + "]";
  const std::string hint = naive ? std::string("try \"backend\": \"flash\" with ") + no_weights_flag
                                 : std::string("try ") + no_weights_flag;
  require_memory(n * per_weight, what, hint);
}

void warn_fully_masked(const Tensor2& lse) {
  if (const std::size_t n = count_fully_masked_rows(lse)) {
    warn(std::to_string(n) + " query row(s) have every key masked: their weights and output are "
         "all 0 and their lse is null");
  }
}

}  // namespace attn::cli
