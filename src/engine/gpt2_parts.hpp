#pragma once
// Private to the engine: the pieces of GPT-2's forward (gpt2_model.cpp) that the cached decoder
// (gpt2_decode.cpp) runs on its new tokens only.
#include "attn/engine/gpt2_model.hpp"

namespace attn::detail {

// y [L, Out] = x [L, In] W [In, Out] + b [Out]: Hugging Face's Conv1D.
Tensor2 gpt2_conv1d(const Tensor2& x, const Tensor2& w, const Tensor1& b);
// The MLP of one block on x [L, D] (already ln_2-normalised): widen to 4D, GELU, project back.
Tensor2 gpt2_mlp_branch(const Gpt2Block& b, const Tensor2& x);

}  // namespace attn::detail
