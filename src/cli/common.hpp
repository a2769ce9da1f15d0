#pragma once
// Helpers shared by the subcommands that read the tensor I/O contract (attend, mha).
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "attn/engine/attention/attention.hpp"
#include "attn/io/json_io.hpp"
#include "attn/io/numbers.hpp"
#include "attn/engine/attention/sdpa.hpp"

namespace attn::cli {

void warn(const std::string& message);

// Warns once per field of `in` that is not in `known` (a typo such as "casual" would
// otherwise be ignored silently).
void warn_unknown_fields(const Json& in, const std::vector<std::string>& known);

// The input must be a JSON object.
void require_object(const Json& in);

// A required field; InputError "field: required" when absent.
const Json& require_field(const Json& in, const char* field);

bool optional_bool(const Json& in, const char* field, bool fallback);
// Numbers through io/numbers.hpp: finite, in [lo, hi], the field named in the error.
std::optional<double> optional_number(const Json& in, const char* field, double lo = -kMaxFinite,
                                      double hi = kMaxFinite);
std::optional<std::size_t> optional_positive_int(const Json& in, const char* field);

// backend / block_size / precision (attention.hpp). "naive" is the float64 reference; "flash"
// the tiled kernel (float64 by default so the JSON stays reference-grade; "precision":
// "float32" runs the fast float32 kernel); "cuda" needs a CUDA device.
BackendOptions backend_from(const Json& in);

// Options shared by attend and mha: causal, scale, temperature.
SdpaOptions sdpa_options_from(const Json& in);

// Mask as [1, Lq, Lk] or [H, Lq, Lk] from a DenseArray of 0/1 (rank 2 or 3).
Mask3 mask_from(const DenseArray& a);

// Refuses up front (budget.hpp) a run whose [H, Lq, Lk] attention weights would not fit in
// memory: the naive kernel always forms them in float64, flash only when they are printed
// (`print`) or the naive backward pass needs them; printed, each also becomes JSON.
void require_weights_memory(std::size_t H, std::size_t Lq, std::size_t Lk, const BackendOptions& backend,
                            bool print, const char* no_weights_flag);

// Warns when some query rows have all keys masked.
void warn_fully_masked(const Tensor2& lse);

}  // namespace attn::cli
