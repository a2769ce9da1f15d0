#pragma once
// attend's variant fields (docs/contracts.md: window, sinks, softcap, alibi, segments, prefix)
// into the engine's descriptors (engine/attention/variant.hpp).
#include <string>
#include <vector>

#include "attn/engine/attention/sdpa.hpp"
#include "attn/io/json_io.hpp"

namespace attn::cli {

// Sets options.mask_mod and options.score_mod from the fields present; num_heads is the query
// heads (alibi: true gives the paper's slopes for them). InputError naming the field otherwise.
void variants_from(const Json& in, std::size_t num_heads, SdpaOptions& options);

// The JSON fields variants_from reads (attend's list of known fields takes them from here).
const std::vector<std::string>& variant_fields();

}  // namespace attn::cli
