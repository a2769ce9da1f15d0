#pragma once
// The tiny attention-only transformer of Elhage et al. 2021 ("A mathematical framework for
// transformer circuits") and Olsson et al. 2022 ("In-context learning and induction heads"):
//
//   x = embed[t_i] + pos[i]                        [L, D]   (token + learned position)
//   per layer l:  x += MHA_l(x)                    causal, scale 1/sqrt(D/H), no bias
//   logits = x unembed^T                           [L, vocab]
//
// No LayerNorm and no MLP: every computation is one attn-cli already teaches, and the residual
// stream is a sum of what each head wrote into it, which is what makes the circuits readable.
// Linear maps follow torch.nn.Linear (y = x W^T, W [out, in]).
#include <cstdint>
#include <string>
#include <vector>

#include "attn/engine/core/tensor.hpp"

namespace attn {

struct ToyConfig {
  std::size_t vocab = 64;
  std::size_t d_model = 64;
  std::size_t heads = 4;
  std::size_t layers = 2;
  std::size_t context = 32;  // the longest sequence the positional table covers
};

struct ToyLayer {
  Tensor2 w_q, w_k, w_v, w_o;  // [D, D] each
};

struct ToyModel {
  ToyConfig config;
  Tensor2 embed;    // [vocab, D]
  Tensor2 pos;      // [context, D]
  std::vector<ToyLayer> layers;
  Tensor2 unembed;  // [vocab, D]
};

// InputError unless every size is >= 1, d_model % heads == 0, and the model stays small
// enough for a CPU (vocab, context <= 65536, d_model <= 4096, layers <= 64).
void check_toy_config(const ToyConfig& config);

// A model of this config with every tensor zero (also the shape of its gradients).
ToyModel zero_toy_model(const ToyConfig& config);

// Seeded initialisation as PyTorch's defaults for the same modules: nn.Embedding N(0, 1) for
// embed and pos, nn.Linear U(-1/sqrt(D), 1/sqrt(D)) for the projections and the unembedding.
ToyModel init_toy_model(const ToyConfig& config, std::uint64_t seed);

// Every tensor with its safetensors name, in a fixed order: embed, pos,
// layers.{l}.w_q|w_k|w_v|w_o, unembed. The pointers point into `model`.
struct NamedTensor {
  std::string name;
  Tensor2* tensor;
};
std::vector<NamedTensor> toy_parameters(ToyModel& model);
std::size_t toy_parameter_count(const ToyConfig& config);

}  // namespace attn
