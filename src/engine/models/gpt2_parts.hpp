#pragma once
// Private to the engine: the pieces of GPT-2's forward (gpt2_model.cpp) that the cached decoder
// (gpt2_decode.cpp) runs on its new tokens only.
#include <functional>

#include "attn/engine/models/gpt2_model.hpp"

namespace attn::detail {

// Calls slice(first, count) for column ranges that cover [0, columns), on up to `threads`
// threads (0 = every hardware thread), each range a multiple of 16 wide but the last.
void column_slices(std::size_t columns, std::size_t threads,
                   const std::function<void(std::size_t first, std::size_t count)>& slice);
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
                    const Tensor1& bias, std::size_t threads, float (*activation)(float) = nullptr);
// The MLP of one block on x [L, D] (already ln_2-normalised): widen to 4D, GELU, project back.
Tensor2 gpt2_mlp_branch(const Gpt2PassBlock& b, const Tensor2& x, std::size_t threads);

// OpenBLAS on one thread for this object's life, as the GPT-2 passes split their GEMMs across
// threads themselves. Its own workers would otherwise spin in sched_yield while ours run
// attention, LayerNorm and GELU (on 2 cores, a third of a 12-layer pass went there).
class OneBlasThread {
 public:
  OneBlasThread();
  ~OneBlasThread();
  OneBlasThread(const OneBlasThread&) = delete;
  OneBlasThread& operator=(const OneBlasThread&) = delete;

 private:
  int before_;
};

}  // namespace attn::detail
