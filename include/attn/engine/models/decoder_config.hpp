#pragma once
// The shape of a Llama-family decoder -- Llama 2 and 3, Mistral, Qwen2 (SmolLM and TinyLlama are
// Llama): what a Hugging Face folder's config.json says of it (io/hf_config.hpp reads it), in
// the engine's words. Each layer: RMSNorm, attention with grouped-query heads (query head h
// reads key/value head h / (heads / kv_heads)) and rotate-half RoPE, RMSNorm, a SwiGLU MLP.
#include <cstddef>
#include <string>

namespace attn {

enum class DecoderFamily { llama, mistral, qwen2 };
const char* decoder_family_name(DecoderFamily family);  // config.json's model_type

// RoPE's frequencies: "default" (theta^(-2i/d)), "linear" (positions divided by factor), or
// Llama 3's "llama3" (low frequencies divided by factor, high ones kept, a smooth ramp between,
// set by low_freq_factor, high_freq_factor and original_max_positions).
struct RopeScaling {
  std::string type = "default";
  double factor = 1, low_freq_factor = 1, high_freq_factor = 4;
  std::size_t original_max_positions = 0;
};

struct DecoderConfig {
  DecoderFamily family = DecoderFamily::llama;
  std::size_t vocab = 0, hidden = 0, intermediate = 0, layers = 0;
  std::size_t heads = 0, kv_heads = 0, head_dim = 0;  // head_dim: hidden / heads unless the config says
  std::size_t max_positions = 0;
  double rms_eps = 1e-6, rope_theta = 10000;
  RopeScaling rope_scaling;
  bool tie_embeddings = false;
  std::size_t sliding_window = 0;  // 0 = none; Mistral's, or Qwen2's with use_sliding_window
  std::size_t window_first_layer = 0;  // the window applies to layers >= this (Qwen2's max_window_layers)
  bool qkv_bias = false;           // Qwen2 always; Llama with attention_bias
  // Not in config.json, an experiment's: under the sliding window, keys j < attention_sinks stay
  // visible to every query (StreamingLLM's attention sinks, Xiao et al. 2023).
  std::size_t attention_sinks = 0;
};

// InputError naming the field for a shape that cannot run: a size of 0, kv_heads not dividing
// heads, an eps or theta that is not finite and > 0, a llama3 scaling without its fields.
void check_decoder_config(const DecoderConfig& config);

}  // namespace attn
