#pragma once
// The demo folder's pictures (docs/contracts.md): what run_demo computed, drawn.
#include <string>
#include <vector>

#include "attn/lessons/demo/demo_result.hpp"
#include "attn/render/views/demo_view.hpp"

namespace attn {

// Writes the single-head heatmap, the causal heatmap, the causal mask diagram, the head grid,
// the flash tile grid, (with RoPE) the RoPE causal heatmap, the efficient-attention panels, the
// variance plot and the complexity plot into dir (each atomically) and returns them as manifest artifacts, in that
// order.
std::vector<Artifact> write_demo_pictures(const DemoResult& result, const std::string& dir,
                                          const DemoPictureOptions& options);
}  // namespace attn
