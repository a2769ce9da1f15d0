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
// x / sqrt(mean(x^2) + eps) * weight, row by row (Hugging Face's LlamaRMSNorm).
Tensor2 decoder_rms_norm(const Tensor2& x, const Tensor1& weight, double eps);
// q or k [L, heads d] -> [heads, L, d], row i rotated to position first_position + i.
Tensor3 decoder_rotated_heads(const Tensor2& x, std::size_t heads, std::size_t first_position,
                              const RopeOptions& rope);
// Causal (bottom-right), with the layer's sliding window as a mask descriptor.
SdpaOptions decoder_attention_options(const DecoderConfig& config, std::size_t layer);
// The float32 flash kernel on `threads` threads.
BackendOptions decoder_backend(std::size_t threads);
// SwiGLU on h = rms_norm(x) * post_attention_layernorm.
Tensor2 decoder_mlp(const DecoderLayer& w, const Tensor2& h, std::size_t threads);
// x [L, D] = the embedding rows of ids; InputError for an id outside the vocabulary.
Tensor2 decoder_embed(const DecoderModel& model, const std::vector<std::int32_t>& ids);
// logits [L, vocab] = x lm_head^T, a block of lm_head's rows at a time on each thread.
Tensor2 decoder_unembed(const DecoderModel& model, const Tensor2& x, std::size_t threads);

}  // namespace attn::detail
