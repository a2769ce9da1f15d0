#pragma once
// A stack of L self-attention layers run in float64, in the four settings of Dong, Cordonnier &
// Loukas 2021 ("Attention is not all you need: pure attention loses rank doubly exponentially
// with depth", arXiv 2103.03404), for the rank-collapse lesson:
//
//   attention_only  X <- SA(X)                        the paper's "pure attention" (SAN)
//   skip            X <- X + SA(X)                    skip connections
//   mlp             X <- MLP(SA(X))                   an MLP after each attention layer
//   skip_mlp        X <- X + SA(X);  X <- X + MLP(X)  both: a transformer block without LayerNorm
//
// SA(X) = concat_h(P_h X W_v,h) W_o^T with P_h = softmax(X W_q,h (X W_k,h)^T / sqrt(D/H)), the
// engine's one attention door (attention.hpp) in float64; MLP(X) = relu(X W_1^T) W_2^T. No bias,
// no LayerNorm: the paper's analysis, and the toy model's architecture (toy_model.hpp), which is
// `skip` with causal attention.
//
// The measure is the relative residual r(X) = ||X - 1 xbar^T||_F / ||X||_F with xbar the column
// means (the row that makes ||X - 1 x^T||_F smallest): 0 exactly when every token's row is the
// same, i.e. X has collapsed to rank one.
#include <vector>

#include "attn/engine/core/tensor.hpp"

namespace attn {

enum class StackSetting { attention_only, skip, mlp, skip_mlp };

// "attention_only", "skip", "mlp", "skip_mlp" (docs/contracts.md's rank-collapse JSON keys).
const char* stack_setting_name(StackSetting setting);
inline constexpr StackSetting kStackSettings[] = {StackSetting::attention_only, StackSetting::skip,
                                                  StackSetting::mlp, StackSetting::skip_mlp};

// One layer, y = x W^T (torch.nn.Linear): w_q, w_k, w_v, w_o [D, D]; w_1 [F, D], w_2 [D, F]
// (empty when the stack has no MLP).
struct StackLayer {
  Tensor2 w_q, w_k, w_v, w_o, w_1, w_2;
};

// Seeded random layers: every entry N(0, 1/fan_in), so that each map keeps the size of its input
// on average (a standard-normal X stays about standard normal) and the attention scores have
// variance about 1. mlp_hidden = 0: no MLP weights.
std::vector<StackLayer> random_stack_layers(std::size_t layers, std::size_t d_model, std::size_t mlp_hidden,
                                            std::uint64_t seed);

// r(X) = ||X - 1 xbar^T||_F / ||X||_F in float64 (0 for an all-zero X). x [n, D].
double relative_residual(const xt::xtensor<double, 2>& x);

// r_0 (of x0) then r_l after each layer l = 1..L: x0 [n, D] widened to float64, every layer run
// in float64. InputError for shapes that do not fit (D % heads, an MLP setting without w_1/w_2).
std::vector<double> stack_residuals(const Tensor2& x0, const std::vector<StackLayer>& layers,
                                    StackSetting setting, std::size_t heads, bool causal);

}  // namespace attn
