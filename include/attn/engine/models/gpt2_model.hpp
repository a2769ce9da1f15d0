#pragma once
// GPT-2 (Radford et al. 2019, "Language Models are Unsupervised Multitask Learners"): the
// decoder-only transformer of Vaswani et al. 2017 with LayerNorm moved to the input of each
// block (section 2.3 of the paper) and one more LayerNorm after the last block.
//
//   x = wte[t_i] + wpe[i]                                   [L, D]
//   per block:  x += c_proj(attn(c_attn(ln_1(x))))          causal, H heads of d = D/H
//               x += mlp_proj(gelu_new(c_fc(ln_2(x))))      hidden width 4D
//   logits = ln_f(x) wte^T                                  [L, vocab] (tied unembedding)
//
// The projections are Hugging Face's Conv1D: y = x W + b with W stored [in, out] (the
// transpose of torch.nn.Linear's [out, in]); c_attn's output columns are q | k | v, each D
// wide, head h owning columns h*d .. h*d + d of each. Float32 throughout.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attn/engine/core/stored_matrix.hpp"
#include "attn/engine/core/tensor.hpp"

namespace attn {

struct Gpt2Config {
  std::size_t n_layer = 12, n_head = 12, n_embd = 768;
  std::size_t vocab_size = 50257, n_positions = 1024;
  double layer_norm_epsilon = 1e-5;
};

struct Gpt2Block {
  Tensor1 ln_1_weight, ln_1_bias;  // [D]
  Tensor2 attn_weight;  // attn.c_attn.weight [D, 3D]
  Tensor1 attn_bias;  // attn.c_attn.bias [3D]
  Tensor2 attn_proj_weight;  // attn.c_proj.weight [D, D]
  Tensor1 attn_proj_bias;  // attn.c_proj.bias [D]
  Tensor1 ln_2_weight, ln_2_bias;  // [D]
  Tensor2 fc_weight;  // mlp.c_fc.weight [D, 4D]
  Tensor1 fc_bias;  // mlp.c_fc.bias [4D]
  Tensor2 mlp_proj_weight;  // mlp.c_proj.weight [4D, D]
  Tensor1 mlp_proj_bias;  // mlp.c_proj.bias [D]
};

// A block's four matrices as they are stored, [in, out], read in place by a pass
// (stored_gemm widens them a panel at a time).
struct Gpt2BlockMatrices {
  StoredMatrix attn, attn_proj, fc, mlp_proj;  // c_attn, attn's c_proj, c_fc, mlp's c_proj
};

// The weights a model leaves in its file: each block, and wte's rows, widened to float32 when a
// pass reaches them, into tensors the caller owns and reuses (already shaped). InputError
// naming the tensor when a value is not finite.
class Gpt2StoredWeights {
 public:
  virtual ~Gpt2StoredWeights() = default;
  // The whole block, matrices included.
  virtual void widen_block(std::size_t layer, Gpt2Block& out) const = 0;
  // The block's LayerNorms and biases widened into `vectors` (those tensors already shaped;
  // its matrices are left alone), and its matrices where they are stored.
  virtual Gpt2BlockMatrices block_matrices(std::size_t layer, Gpt2Block& vectors) const = 0;
  virtual void widen_wte_rows(std::size_t first, std::size_t count, float* out) const = 0;
  // wte where it is stored, [vocab, D] (the unembedding reads it in place).
  virtual StoredMatrix stored_wte() const = 0;
  // The InputError for a stored parameter ("h.3.mlp.c_fc.weight") that a pass found not
  // finite, naming it as it is stored.
  [[noreturn]] virtual void non_finite(const std::string& parameter) const = 0;
};

struct Gpt2Model {
  Gpt2Config config;
  Tensor2 wte;  // [vocab, D]
  Tensor2 wpe;  // [n_positions, D]
  std::vector<Gpt2Block> blocks;
  Tensor1 ln_f_weight, ln_f_bias;  // [D]
  // Set when the blocks and wte stay in their file (blocks and wte are then empty): a pass
  // reads each matrix where it is stored (stored_gemm widens a panel at a time into the core's
  // cache) and widens only a block's LayerNorms and biases, into a buffer it reuses. A float16
  // GPT-2 small then needs no float32 copy of its 500 MB, and fresh memory is slow to come by
  // (the kernel zeroes every page: on this project's machine that took longer than the whole
  // forward pass).
  std::shared_ptr<const Gpt2StoredWeights> stored;
};

// Block `layer`'s weights: the model's own, or widened from model.stored into scratch (shaped
// on first use, reused after) and returned from there.
const Gpt2Block& gpt2_block(const Gpt2Model& model, std::size_t layer, Gpt2Block& scratch);
// A block of width D with every tensor shaped and its values unset.
Gpt2Block unfilled_gpt2_block(std::size_t n_embd);
// The same with only its LayerNorms and biases shaped (its matrices empty): what
// Gpt2StoredWeights::block_matrices widens into.
Gpt2Block gpt2_block_vectors(std::size_t n_embd);
// x [L, D]: x[i] = wte[ids[i]] + wpe[first_position + i]. InputError for an id outside the
// vocabulary or a position past n_positions.
Tensor2 gpt2_embed(const Gpt2Model& model, const std::vector<std::int32_t>& ids, std::size_t first_position);
// logits [L, vocab] = x [L, D] wte^T: the unembedding is the token embedding, transposed. On up
// to `threads` threads (0 = every hardware thread), wte read where it is (stored_gemm).
// InputError naming wte when one of its values is not finite.
Tensor2 gpt2_unembed(const Gpt2Model& model, const Tensor2& x, std::size_t threads = 0);

// InputError naming the field unless every size is >= 1 and within what a CPU can hold
// (n_layer <= 256, n_embd <= 16384, vocab_size <= 1,000,000, n_positions <= 131072),
// n_embd % n_head == 0, and layer_norm_epsilon is finite and in (0, 1).
void check_gpt2_config(const Gpt2Config& config);

// A model of this config with every tensor zero.
Gpt2Model zero_gpt2_model(const Gpt2Config& config);
// The same shapes with the values unset, for a loader that writes every parameter (a GPT-2
// small is 500 MB of float: zeroing it first would cost a pass over all of it).
Gpt2Model unfilled_gpt2_model(const Gpt2Config& config);

// Every parameter with its Hugging Face name without the "transformer." prefix ("wte.weight",
// "h.0.ln_1.weight", "h.0.attn.c_attn.weight", ..., "ln_f.bias"), its shape and its storage
// (pointing into `model`).
struct Gpt2Parameter {
  std::string name;
  Shape shape;
  float* data;
};
std::vector<Gpt2Parameter> gpt2_parameters(Gpt2Model& model);
// Block `layer`'s twelve parameters ("h.{layer}.ln_1.weight", ...), in gpt2_parameters' order.
std::vector<Gpt2Parameter> gpt2_block_parameters(Gpt2Block& block, std::size_t layer);

// y[i] = (x[i] - mean_i) / sqrt(var_i + eps) * gamma + beta, row by row over x [L, D], with the
// biased variance (Ba et al. 2016, "Layer Normalization"; torch.nn.LayerNorm).
Tensor2 layer_norm(const Tensor2& x, const Tensor1& gamma, const Tensor1& beta, double eps);

// GELU in the tanh form GPT-2 was trained with (Hendrycks & Gimpel 2016, "Gaussian Error
// Linear Units", section 2): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). One value;
// the pass applies core/activation.hpp's gelu_tanh, the same function, to runs of them.
float gelu_new(float x);

struct Gpt2Forward {
  Tensor2 logits;  // [L, vocab]
  std::vector<Tensor3> attention;  // [n_layer] of [H, L, L], post-softmax
  std::vector<Tensor3> q, k, v;    // [n_layer] of [H, L, d]: what each layer's attention was given
  Tensor2 embedded;                // [L, D] wte[t_i] + wpe[i], the input of block 0
};

// One sequence of ids through the model. Attention runs through the engine's door
// (attention.hpp) on the float32 flash kernel; its weights, which flash never forms, are
// recomputed from q, k and the lse as FlashAttention's backward pass does. InputError for an
// empty sequence, more ids than n_positions, or an id outside the vocabulary.
Gpt2Forward gpt2_forward(const Gpt2Model& model, const std::vector<std::int32_t>& ids, std::size_t threads = 0);

}  // namespace attn
