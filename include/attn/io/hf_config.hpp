#pragma once
// A Hugging Face Llama, Mistral or Qwen2 folder's config.json, read into the engine's
// DecoderConfig (engine/models/decoder_config.hpp), with Hugging Face's defaults for the fields
// it leaves out (num_key_value_heads = num_attention_heads, head_dim = hidden_size /
// num_attention_heads, rope_theta 10000, no scaling, untied embeddings). Anything that would
// change the computation without attn-cli implementing it is refused, naming the file and the
// field: another model_type, an activation other than SiLU, MLP biases, a RoPE scaling other
// than default, linear or llama3.
#include <string>

#include "attn/engine/models/decoder_config.hpp"

namespace attn {

// Whether DIR/config.json names a Llama-family model_type (llama, mistral, qwen2).
bool is_decoder_folder(const std::string& dir);

// InputError "DIR/config.json: ..." for a missing or unreadable file and every refusal above.
DecoderConfig read_decoder_config(const std::string& dir);

}  // namespace attn
