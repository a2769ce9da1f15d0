#pragma once
// A Hugging Face Llama, Mistral or Qwen2 folder read into a DecoderModel
// (engine/models/decoder_model.hpp), as `save_pretrained` writes it:
//
//   config.json                     read by hf_config.hpp
//   model.safetensors               the weights, F32, BF16 or F16, Hugging Face's names
//   or model.safetensors.index.json {"weight_map": {tensor: shard file}} and the shards
//
// Tensor names: model.embed_tokens.weight, model.layers.{l}.input_layernorm.weight,
// .self_attn.{q,k,v,o}_proj.weight (and q, k, v .bias with qkv_bias),
// .post_attention_layernorm.weight, .mlp.{gate,up,down}_proj.weight, model.norm.weight, and
// lm_head.weight unless tie_word_embeddings. The files stay memory-mapped; a pass widens one
// layer at a time. Refused, naming the file and what: a missing tensor or shard, a shard named
// outside the folder, a tensor whose shape contradicts config.json, a dtype other than F32,
// BF16 and F16, and a folder with only PyTorch's pickle.
#include <string>

#include "attn/engine/models/decoder_model.hpp"

namespace attn {

// InputError "DIR/...: ..." for every refusal above (and read_decoder_config's).
DecoderModel read_decoder_model(const std::string& dir);

}  // namespace attn
