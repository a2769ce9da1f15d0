#include "attn/engine/models/decoder_config.hpp"

#include <cmath>

#include "attn/engine/core/error.hpp"

namespace attn {

const char* decoder_family_name(DecoderFamily family) {
  switch (family) {
    case DecoderFamily::llama: return "llama";
    case DecoderFamily::mistral: return "mistral";
    case DecoderFamily::qwen2: return "qwen2";
  }
  return "?";
}

void check_decoder_config(const DecoderConfig& c) {
  const std::pair<const char*, std::size_t> sizes[] = {
      {"vocab_size", c.vocab}, {"hidden_size", c.hidden}, {"intermediate_size", c.intermediate},
      {"num_hidden_layers", c.layers}, {"num_attention_heads", c.heads}, {"num_key_value_heads", c.kv_heads},
      {"head_dim", c.head_dim}, {"max_position_embeddings", c.max_positions}};
  for (const auto& [name, value] : sizes)
    if (value == 0) throw InputError(std::string(name) + ": expected an integer >= 1, got 0");
  if (c.heads % c.kv_heads != 0)
    throw InputError("num_key_value_heads: " + std::to_string(c.kv_heads) + " does not divide num_attention_heads = " +
                     std::to_string(c.heads));
  if (!(std::isfinite(c.rms_eps) && c.rms_eps > 0)) throw InputError("rms_norm_eps: expected a finite number > 0");
  if (!(std::isfinite(c.rope_theta) && c.rope_theta > 0)) throw InputError("rope_theta: expected a finite number > 0");
  const RopeScaling& s = c.rope_scaling;
  if (!(std::isfinite(s.factor) && s.factor > 0)) throw InputError("rope_scaling.factor: expected a finite number > 0");
  if (s.type == "llama3" && !(s.original_max_positions > 0 && s.high_freq_factor > s.low_freq_factor &&
                              s.low_freq_factor > 0 && std::isfinite(s.high_freq_factor)))
    throw InputError("rope_scaling: llama3 needs original_max_position_embeddings >= 1 and "
                     "0 < low_freq_factor < high_freq_factor");
}

}  // namespace attn
