// The toy model embedded in attn-cli (shipped_model.hpp).
#include "attn/io/shipped_model.hpp"

#include <string_view>

#include "attn/io/toy_model_file.hpp"

namespace attn {
namespace detail {
extern const std::string_view kShippedModelConfig, kShippedModelWeights;
}  // namespace detail

ToyModel shipped_toy_model() {
  return parse_toy_model(detail::kShippedModelConfig, detail::kShippedModelWeights, "data/models/induction");
}

}  // namespace attn
