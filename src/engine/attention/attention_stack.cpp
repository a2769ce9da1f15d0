// A float64 stack of self-attention layers in four settings (attention_stack.hpp).
#include "attn/engine/attention/attention_stack.hpp"

#include <cmath>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/random.hpp"
#include "mha_parts.hpp"

namespace attn {
namespace {


Tensor2 random_matrix(Rng& rng, std::size_t out, std::size_t in) {
  Tensor2 w = Tensor2::from_shape({out, in});
  const double sd = 1.0 / std::sqrt(static_cast<double>(in));
  for (float& x : w) x = static_cast<float>(rng.normal() * sd);
  return w;
}

TensorD2 project(const TensorD2& x, const Tensor2& w) { return linear_f64(x, xt::cast<double>(w), nullptr); }

// SA(X) = concat_h(P_h V_h) W_o^T, x [n, D] -> [n, D].
TensorD2 self_attention(const TensorD2& x, const StackLayer& layer, std::size_t heads, bool causal) {
  SdpaOptions options;
  options.causal = causal;  // scale: the default 1/sqrt(D/H)
  const detail::SdpaF64 a = detail::attend_f64(
      split_heads(project(x, layer.w_q), heads), split_heads(project(x, layer.w_k), heads),
      split_heads(project(x, layer.w_v), heads), nullptr, options, BackendOptions{}, /*with_weights=*/false);
  return project(merge_heads(a.output), layer.w_o);
}

// MLP(X) = relu(X W_1^T) W_2^T, x [n, D] -> [n, D].
TensorD2 mlp(const TensorD2& x, const StackLayer& layer) {
  TensorD2 hidden = project(x, layer.w_1);
  for (double& h : hidden) h = h > 0 ? h : 0;
  return project(hidden, layer.w_2);
}

void check_layer(const StackLayer& layer, std::size_t D, bool needs_mlp, std::size_t index) {
  const std::string where = "layer " + std::to_string(index) + ": ";
  for (const Tensor2* w : {&layer.w_q, &layer.w_k, &layer.w_v, &layer.w_o}) {
    if (shape_of(*w) != Shape{D, D})
      throw InputError(where + "attention weights must be [" + std::to_string(D) + ", " + std::to_string(D) +
                       "], got " + shape_string(shape_of(*w)));
  }
  if (!needs_mlp) return;
  const std::size_t F = layer.w_1.shape(0);
  if (F == 0 || shape_of(layer.w_1) != Shape{F, D} || shape_of(layer.w_2) != Shape{D, F})
    throw InputError(where + "the MLP needs w_1 [F, " + std::to_string(D) + "] and w_2 [" + std::to_string(D) +
                     ", F], got " + shape_string(shape_of(layer.w_1)) + " and " + shape_string(shape_of(layer.w_2)));
}

}  // namespace

const char* stack_setting_name(StackSetting setting) {
  switch (setting) {
    case StackSetting::attention_only: return "attention_only";
    case StackSetting::skip: return "skip";
    case StackSetting::mlp: return "mlp";
    case StackSetting::skip_mlp: return "skip_mlp";
  }
  return "?";
}

std::vector<StackLayer> random_stack_layers(std::size_t layers, std::size_t d_model, std::size_t mlp_hidden,
                                            std::uint64_t seed) {
  Rng rng(seed);
  std::vector<StackLayer> out(layers);
  for (StackLayer& l : out) {  // drawn in a fixed order: w_q, w_k, w_v, w_o, w_1, w_2
    l.w_q = random_matrix(rng, d_model, d_model);
    l.w_k = random_matrix(rng, d_model, d_model);
    l.w_v = random_matrix(rng, d_model, d_model);
    l.w_o = random_matrix(rng, d_model, d_model);
    if (mlp_hidden > 0) {
      l.w_1 = random_matrix(rng, mlp_hidden, d_model);
      l.w_2 = random_matrix(rng, d_model, mlp_hidden);
    }
  }
  return out;
}

double relative_residual(const xt::xtensor<double, 2>& x) {
  const std::size_t n = x.shape(0), D = x.shape(1);
  double total = 0, residual = 0;
  for (std::size_t c = 0; c < D; ++c) {
    double mean = 0;
    for (std::size_t i = 0; i < n; ++i) mean += x(i, c);
    mean /= static_cast<double>(n);
    for (std::size_t i = 0; i < n; ++i) {
      total += x(i, c) * x(i, c);
      residual += (x(i, c) - mean) * (x(i, c) - mean);
    }
  }
  return total > 0 ? std::sqrt(residual / total) : 0.0;
}

std::vector<double> stack_residuals(const Tensor2& x0, const std::vector<StackLayer>& layers,
                                    StackSetting setting, std::size_t heads, bool causal) {
  const std::size_t D = x0.shape(1);
  if (heads == 0 || D % heads != 0)
    throw InputError("heads: d_model " + std::to_string(D) + " is not a multiple of " + std::to_string(heads));
  const bool has_skip = setting == StackSetting::skip || setting == StackSetting::skip_mlp;
  const bool has_mlp = setting == StackSetting::mlp || setting == StackSetting::skip_mlp;
  for (std::size_t l = 0; l < layers.size(); ++l) check_layer(layers[l], D, has_mlp, l);

  TensorD2 x = xt::cast<double>(x0);
  std::vector<double> r{relative_residual(x)};
  for (const StackLayer& layer : layers) {
    // Attention is the only step that mixes tokens: it averages rows (P is row-stochastic), which
    // is what pulls them together. The skip adds back the unmixed X; the MLP acts row by row.
    const TensorD2 a = self_attention(x, layer, heads, causal);
    x = has_skip ? TensorD2(x + a) : a;
    if (has_mlp) {
      const TensorD2 m = mlp(x, layer);
      x = has_skip ? TensorD2(x + m) : m;
    }
    r.push_back(relative_residual(x));
  }
  return r;
}

}  // namespace attn
