#pragma once
// Private to the engine: the pieces of the Llama-family forward (decoder_model.cpp) that the
// cached decoder (decoder_decode.cpp) runs on its new tokens only.
#include <cstdint>
#include <vector>

#include "attn/engine/attention/attention.hpp"
#include "attn/engine/models/decoder_model.hpp"
#include "attn/engine/positions/rope.hpp"

namespace attn::detail {

// y [L, Out] = x [L, In] W^T (+ b): torch.nn.Linear with W [Out, In], columns split across
// threads (under OneBlasThread). b empty: no bias.
Tensor2 decoder_project(const Tensor2& x, const Tensor2& w, const Tensor1& b, std::size_t threads);
// q or k heads [heads, L, d], row i rotated to position first_position + i.
Tensor3 decoder_rotated(const Tensor3& heads, std::size_t first_position, const RopeOptions& rope);
// q or k [L, heads d] -> [heads, L, d], row i rotated to position first_position + i.
Tensor3 decoder_rotated_heads(const Tensor2& x, std::size_t heads, std::size_t first_position,
                              const RopeOptions& rope);
// Causal (bottom-right), with the layer's sliding window as a mask descriptor.
SdpaOptions decoder_attention_options(const DecoderConfig& config, std::size_t layer);
// The float32 flash kernel on `threads` threads.
BackendOptions decoder_backend(std::size_t threads);
// A layer's seven matrices for one pass: widened float32 tensors multiplied by sgemm (a prompt's
// many rows), or the stored matrices read in place by stored_matmul (a decode step's few rows,
// where the step is the time it takes to read the weights once). Norms and biases come from
// `vectors` either way.
class DecoderProjections {
 public:
  enum Matrix { q, k, v, o, gate, up, down };
  DecoderProjections(const DecoderLayer& widened, std::size_t threads) : w_(widened), threads_(threads) {}
  DecoderProjections(const DecoderLayer& vectors, const DecoderStoredLayer& stored, std::size_t threads)
      : w_(vectors), stored_(&stored), threads_(threads) {}
  // x [L, In] W^T, plus the bias of q, k and v when the model has them.
  Tensor2 operator()(const Tensor2& x, Matrix which) const;
  const DecoderLayer& vectors() const { return w_; }

 private:
  const DecoderLayer& w_;
  const DecoderStoredLayer* stored_ = nullptr;
  std::size_t threads_;
};

// SwiGLU on h = rms_norm(x) * post_attention_layernorm.
Tensor2 decoder_mlp(const DecoderProjections& w, const Tensor2& h);
// x [L, D] = the embedding rows of ids; InputError for an id outside the vocabulary.
Tensor2 decoder_embed(const DecoderModel& model, const std::vector<std::int32_t>& ids);
// logits [L, vocab] = x lm_head^T, a block of lm_head's rows at a time on each thread.
Tensor2 decoder_unembed(const DecoderModel& model, const Tensor2& x, std::size_t threads);

}  // namespace attn::detail
