#pragma once
// Private to the engine: the pieces of GPT-2's forward (gpt2_model.cpp) that the cached decoder
// (gpt2_decode.cpp) runs on its new tokens only.
#include "attn/engine/core/activation.hpp"
#include "attn/engine/models/gpt2_model.hpp"

namespace attn::detail {

// One block as a pass reads it: its LayerNorms and biases as float32, its matrices where they
// are (the held block's tensors, or the stored ones), and the store that names a weight found
// not finite (null for a held model).
struct Gpt2PassBlock {
  const Gpt2Block& vectors;
  Gpt2BlockMatrices matrices;
  std::size_t layer;
  const Gpt2StoredWeights* store;
};
// Block `layer` of `model`; a stored model's vectors are widened into scratch (shaped on first
// use), its matrices stay in the file.
Gpt2PassBlock gpt2_pass_block(const Gpt2Model& model, std::size_t layer, Gpt2Block& scratch);

// y [L, Out] = activation(x [L, In] W [In, Out] + bias [Out]): Hugging Face's Conv1D on block
// matrix `which` (stored_gemm: its columns split across threads, the same bits whatever L and
// the threads). No activation when it is null. InputError naming the matrix when one of its
// weights is not finite.
Tensor2 gpt2_conv1d(const Tensor2& x, const Gpt2PassBlock& b, StoredMatrix Gpt2BlockMatrices::*which,
                    const Tensor1& bias, std::size_t threads, Activation activation = nullptr);
// The MLP of one block on x [L, D] (already ln_2-normalised): widen to 4D, GELU, project back.
Tensor2 gpt2_mlp_branch(const Gpt2PassBlock& b, const Tensor2& x, std::size_t threads);

}  // namespace attn::detail
