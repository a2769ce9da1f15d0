#pragma once
// A Llama-family decoder (decoder_config.hpp) -- Llama 2 and 3, Mistral, Qwen2, SmolLM,
// TinyLlama -- computed as Hugging Face's LlamaForCausalLM, MistralForCausalLM and
// Qwen2ForCausalLM compute it:
//
//   x = embed[t_i]                                                   [L, D]
//   per layer:  h = rms_norm(x) * input_layernorm
//               q = h Wq^T (+ bq), k = h Wk^T (+ bk), v = h Wv^T (+ bv)  H, Hkv heads of d
//               q, k rotated by rotate-half RoPE at positions 0 .. L-1 (its frequencies
//                 scaled when the config says: linear, llama3)
//               x += attention(q, k, v) Wo^T      causal (and the sliding window), scale
//                                                 1/sqrt(d); query head h reads KV head
//                                                 h / (H / Hkv)
//               h = rms_norm(x) * post_attention_layernorm
//               x += (silu(h Wgate^T) * h Wup^T) Wdown^T                SwiGLU
//   logits = (rms_norm(x) * norm) lm_head^T        lm_head = embed when tied
//
// rms_norm(x) = x / sqrt(mean(x^2) + eps) per row. Linear maps are torch.nn.Linear's (W [out,
// in]). Float32 activations; the mask and RoPE are the engine's descriptors (variant.hpp's
// window, rope.hpp), not branches of this file.
#include <cstdint>
#include <memory>
#include <vector>

#include "attn/engine/core/stored_matrix.hpp"
#include "attn/engine/core/tensor.hpp"
#include "attn/engine/models/decoder_config.hpp"

namespace attn {

struct DecoderLayer {
  Tensor1 input_norm, post_norm;     // [D]
  Tensor2 w_q, w_k, w_v, w_o;        // [H d, D], [Hkv d, D], [Hkv d, D], [D, H d]
  Tensor1 b_q, b_k, b_v;             // [H d], [Hkv d], [Hkv d]; empty without qkv_bias
  Tensor2 w_gate, w_up, w_down;      // [I, D], [I, D], [D, I]
};

// A layer's matrices as they are stored, for a decode step that reads them in place.
struct DecoderStoredLayer {
  StoredMatrix w_q, w_k, w_v, w_o, w_gate, w_up, w_down;
};

// The weights a model leaves in its files: widened to float32 when a pass reaches them, into
// tensors the caller owns and reuses (already shaped), or handed out in place. InputError
// naming the tensor when a value is not finite.
class DecoderStoredWeights {
 public:
  virtual ~DecoderStoredWeights() = default;
  virtual void widen_layer(std::size_t layer, DecoderLayer& out) const = 0;
  // The layer's norms and biases only (its matrices left unset).
  virtual void widen_layer_vectors(std::size_t layer, DecoderLayer& out) const = 0;
  virtual void widen_embed_rows(std::size_t first, std::size_t count, float* out) const = 0;
  // The matrices in place, as stored: not yet checked for non-finite values. stored_gemm checks
  // each weight as it widens it (then non_finite names the matrix); stored_matmul does not, so
  // its callers ask check_finite first.
  virtual DecoderStoredLayer stored_layer(std::size_t layer) const = 0;
  virtual StoredMatrix stored_lm_head() const = 0;
  // InputError naming the first matrix of `layer` (layer == layers: lm_head) that holds a
  // non-finite value; each layer is read once, the first time it is asked for.
  virtual void check_finite(std::size_t layer) const = 0;
  // The InputError naming matrix `which` (DecoderStoredLayer's order: q, k, v, o, gate, up, down)
  // of `layer`, or lm_head for layer == layers, that a pass found not finite.
  [[noreturn]] virtual void non_finite(std::size_t layer, std::size_t which) const = 0;
};

struct DecoderModel {
  DecoderConfig config;
  Tensor1 norm;  // [D], the final RMSNorm's weight
  // The rest stays in the files (stored): a pass reads each matrix where it is stored
  // (stored_gemm, stored_matmul) and widens a layer's norms and biases into a buffer it reuses,
  // and the embedding rows it looks up.
  std::shared_ptr<const DecoderStoredWeights> stored;
};

// A layer of this shape with every tensor shaped and its values unset.
DecoderLayer unfilled_decoder_layer(const DecoderConfig& config);
// The same with only its norms and biases shaped (a pass reads the matrices where they are stored).
DecoderLayer unfilled_decoder_vectors(const DecoderConfig& config);

// theta_i (i < head_dim / 2) of the config's RoPE: theta^(-2i/d), then scaled: "linear" divides
// each by factor; "llama3" divides those of wavelength past original_max / low_freq_factor by
// factor, keeps those under original_max / high_freq_factor, and blends between (Hugging Face's
// _compute_llama3_parameters).
std::vector<double> decoder_rope_frequencies(const DecoderConfig& config);

struct DecoderForward {
  std::vector<Tensor3> attention;  // [layers] of [H, L, L], over query heads
  Tensor2 logits;                  // [L, vocab]
  // With keep_qkv: [layers] of [H, L, d] each, q and k rotated to their positions, k and v of
  // key/value head h / (H / Hkv) repeated for query head h (what each query head attends with).
  std::vector<Tensor3> q, k, v;
  std::vector<Tensor3> q_raw, k_raw;  // the same before RoPE's rotation
};

// FLOPs (2 x multiply-adds) of decoder_forward on n tokens: per layer and token the q, k, v, o
// projections 2 D (2 H d + 2 Hkv d) and the MLP 2 x 3 D I; the logits 2 D vocab a token; and
// the causal attention's Q K^T and P V over the n (n + 1) / 2 visible pairs, 4 H d each (a
// window's hidden pairs counted too: the figure is for timing, an upper bound there).
double decoder_forward_flops(const DecoderConfig& config, std::size_t n);

// x / sqrt(mean(x^2) + eps) * weight, row by row (Hugging Face's LlamaRMSNorm; the mean in
// float64): the normalisation before each attention and MLP, and before the logits.
Tensor2 rms_norm(const Tensor2& x, const Tensor1& weight, double eps);

// [n, n], true where layer `layer`'s query i may see key j: causal, and within the sliding window
// (and its attention sinks) on the layers the config gives one.
Mask2 decoder_visible(const DecoderConfig& config, std::size_t layer, std::size_t n);

// ids: token ids in [0, vocab), at most max_positions of them. InputError otherwise, or when the
// activations overflow float32. threads: 0 = every hardware thread.
DecoderForward decoder_forward(const DecoderModel& model, const std::vector<std::int32_t>& ids,
                               std::size_t threads = 0, bool keep_qkv = false);

}  // namespace attn
