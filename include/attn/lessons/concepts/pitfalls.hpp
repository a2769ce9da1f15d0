#pragma once
// Common attention mistakes, each computed next to the right way on a tiny example, with the
// one-line lesson. Several are written in the seeds themselves (seen_in says where). The wrong
// ways are computed here on purpose; the right ways call the engine (sdpa.hpp) where it
// applies, so "right" means "what attn-cli's reference does".
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attn/io/json_io.hpp"
#include "attn/engine/core/tensor.hpp"

namespace attn {

// Two matrices of the same shape: what the mistake computes and what is right.
struct PitfallTable {
  std::string caption;
  std::vector<std::string> row_labels, col_labels;
  Tensor2 wrong, right;
  std::string wrong_title = "✗ wrong", right_title = "✓ right";  // the pictures' panel titles
  // The keys each way set to −∞ before softmax (false = masked; none = nothing masked): the
  // pictures hatch them as every heatmap does, so a masked key never reads as a weight of 0.
  std::optional<Mask2> wrong_allowed, right_allowed;
  // A value the right way keeps (1 for a length ratio a rotation preserves): the colour scale is
  // centred on it, so a small departure from it shows instead of hiding in a 0-to-1 scale.
  std::optional<double> reference;
};

// One number, wrong way vs right way.
struct PitfallFact {
  std::string name;
  double wrong = 0, right = 0;
};

struct Pitfall {
  std::string id, title, wrong_way, right_way, lesson, seen_in;
  std::vector<PitfallTable> tables;
  std::vector<PitfallFact> facts;
};

Pitfall pitfall_mask_polarity();
Pitfall pitfall_causal_alignment();
Pitfall pitfall_fully_masked_row();
Pitfall pitfall_eps_after_softmax();
Pitfall pitfall_missing_scale(std::uint64_t seed);
Pitfall pitfall_temperature_direction();
Pitfall pitfall_rope_half_width();
// Claims of tutorials and teaching notes that a computation corrects (pitfall_errata.cpp).
Pitfall pitfall_mask_value_float16();
Pitfall pitfall_float_mask_sdpa();
Pitfall pitfall_paper_dk();
Pitfall pitfall_softmax_cost();
Pitfall pitfall_mha_bias();
Pitfall pitfall_flash_memory();
Pitfall pitfall_mb_mib();

// All of the above, in that order.
std::vector<Pitfall> all_pitfalls(std::uint64_t seed);

// The pitfall whose id is `id` (InputError listing the ids when there is none).
Pitfall find_pitfall(const std::string& id, std::uint64_t seed);

Json pitfalls_json(const std::vector<Pitfall>& pitfalls);

}  // namespace attn
