#pragma once
// Private to the engine: the pieces of the Llama-family forward (decoder_model.cpp) that the
// cached decoder (decoder_decode.cpp) runs on its new tokens only.
#include <cstdint>
#include <vector>

#include "attn/engine/attention/attention.hpp"
#include "attn/engine/core/activation.hpp"
#include "attn/engine/models/decoder_model.hpp"
#include "attn/engine/positions/rope.hpp"

namespace attn::detail {

// q or k heads [heads, L, d], row i rotated to position first_position + i.
Tensor3 decoder_rotated(const Tensor3& heads, std::size_t first_position, const RopeOptions& rope);
// q or k [L, heads d] -> [heads, L, d], row i rotated to position first_position + i.
Tensor3 decoder_rotated_heads(const Tensor2& x, std::size_t heads, std::size_t first_position,
                              const RopeOptions& rope);
// Causal (bottom-right), with the layer's sliding window as a mask descriptor.
SdpaOptions decoder_attention_options(const DecoderConfig& config, std::size_t layer);
// The float32 flash kernel on `threads` threads.
BackendOptions decoder_backend(std::size_t threads);
// A layer's seven matrices for one pass, read where they are stored; norms and biases come
// from `vectors`. A weight that is not finite is an InputError naming its matrix (store.non_finite).
class DecoderProjections {
 public:
  enum Matrix { q, k, v, o, gate, up, down };  // DecoderStoredLayer's order
  DecoderProjections(const DecoderLayer& vectors, const DecoderStoredWeights& store, std::size_t layer,
                     std::size_t threads)
      : w_(vectors), store_(store), stored_(store.stored_layer(layer)), layer_(layer), threads_(threads) {}
  // activation(x [L, In] W^T + the bias of q, k and v when the model has them); no activation
  // when it is null.
  Tensor2 operator()(const Tensor2& x, Matrix which, Activation activation = nullptr) const;
  const DecoderLayer& vectors() const { return w_; }

 private:
  const DecoderLayer& w_;
  const DecoderStoredWeights& store_;
  DecoderStoredLayer stored_;
  std::size_t layer_, threads_;
};

// y [L, m.rows] = activation(x [L, m.cols] m^T + bias): stored_matmul for up to kStoredMatmulRows
// rows (after the store's check_finite of `layer`), stored_gemm beyond (which checks as it
// widens; then the store's non_finite names matrix `which`).
Tensor2 decoder_product(const Tensor2& x, const StoredMatrix& m, const float* bias, const DecoderStoredWeights& store,
                        std::size_t layer, std::size_t which, std::size_t threads,
                        Activation activation = nullptr);

// SwiGLU on h = rms_norm(x) * post_attention_layernorm.
Tensor2 decoder_mlp(const DecoderProjections& w, const Tensor2& h);
// x [L, D] = the embedding rows of ids; InputError for an id outside the vocabulary.
Tensor2 decoder_embed(const DecoderModel& model, const std::vector<std::int32_t>& ids);
// logits [L, vocab] = x lm_head^T, lm_head read where it is stored.
Tensor2 decoder_unembed(const DecoderModel& model, const Tensor2& x, std::size_t threads);

}  // namespace attn::detail
