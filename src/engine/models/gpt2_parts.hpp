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
// y [L, Out] = activation(x [L, In] W [In, Out] + b [Out]): Hugging Face's Conv1D, its columns
// split across threads (call under OneBlasThread). No activation when it is null.
Tensor2 gpt2_conv1d(const Tensor2& x, const Tensor2& w, const Tensor1& b, std::size_t threads,
                    float (*activation)(float) = nullptr);
// The MLP of one block on x [L, D] (already ln_2-normalised): widen to 4D, GELU, project back.
Tensor2 gpt2_mlp_branch(const Gpt2Block& b, const Tensor2& x, std::size_t threads);

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
