// GPT-2's forward pass (gpt2_model.hpp), top-down: embed, blocks, final LayerNorm, logits.
#include "attn/engine/models/gpt2_model.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "attn/engine/attention/attention.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/core/linear.hpp"
#include "core/finite_stream.hpp"
#include "gpt2_parts.hpp"

namespace attn {
namespace {

void check_size(const char* field, std::size_t value, std::size_t max) {
  if (value < 1 || value > max) {
    throw InputError(std::string(field) + ": expected 1.." + std::to_string(max) + ", got " +
                     std::to_string(value));
  }
}

// qkv [L, 3D] -> q, k, v [H, L, d]: head h of q is columns h*d.., of k D + h*d.., of v 2D + h*d...
void split_qkv(const Tensor2& qkv, std::size_t H, Tensor3& q, Tensor3& k, Tensor3& v) {
  const std::size_t L = qkv.shape(0), D = qkv.shape(1) / 3, d = D / H;
  Tensor3* parts[3] = {&q, &k, &v};
  for (std::size_t part = 0; part < 3; ++part) {
    *parts[part] = Tensor3::from_shape({H, L, d});
    split_heads(qkv.data() + part * D, 3 * D, L, H, d, parts[part]->data());
  }
}

// Attention is the only part of a block that mixes information across positions.
Tensor2 attention_branch(const detail::Gpt2PassBlock& b, const Tensor2& x, std::size_t H, std::size_t threads,
                         Tensor3& weights, Tensor3& q, Tensor3& k, Tensor3& v) {
  split_qkv(detail::gpt2_conv1d(x, b, &Gpt2BlockMatrices::attn, b.vectors.attn_bias, threads), H, q, k, v);
  SdpaOptions so;
  so.causal = true;  // scale 1/sqrt(d), the default
  BackendOptions bo;
  bo.backend = Backend::flash;
  bo.precision = FlashPrecision::float32;
  bo.threads = threads;
  SdpaResult r = attention(q, k, v, nullptr, so, bo, /*with_weights=*/true);
  weights = std::move(r.weights);
  return detail::gpt2_conv1d(merge_heads(r.output), b, &Gpt2BlockMatrices::attn_proj, b.vectors.attn_proj_bias,
                             threads);
}

// A held float32 matrix as the stored kind stored_gemm reads.
StoredMatrix held(const Tensor2& w) { return {w.data(), StoredType::f32, w.shape(0), w.shape(1)}; }

// The parameter name of block matrix `which` ("attn.c_attn.weight", ...).
const char* matrix_name(StoredMatrix Gpt2BlockMatrices::*which) {
  if (which == &Gpt2BlockMatrices::attn) return "attn.c_attn.weight";
  if (which == &Gpt2BlockMatrices::attn_proj) return "attn.c_proj.weight";
  if (which == &Gpt2BlockMatrices::fc) return "mlp.c_fc.weight";
  return "mlp.c_proj.weight";
}

}  // namespace

void check_gpt2_config(const Gpt2Config& c) {
  check_size("n_layer", c.n_layer, 256);
  check_size("n_embd", c.n_embd, 16384);
  check_size("n_head", c.n_head, c.n_embd);
  check_size("vocab_size", c.vocab_size, 1'000'000);
  check_size("n_positions", c.n_positions, 131072);
  if (c.n_embd % c.n_head) {
    throw InputError("n_embd: expected a multiple of n_head (" + std::to_string(c.n_head) + "), got " +
                     std::to_string(c.n_embd));
  }
  if (!std::isfinite(c.layer_norm_epsilon) || c.layer_norm_epsilon <= 0 || c.layer_norm_epsilon >= 1)
    throw InputError("layer_norm_epsilon: expected a number in (0, 1), got " + std::to_string(c.layer_norm_epsilon));
}

namespace detail {

Gpt2PassBlock gpt2_pass_block(const Gpt2Model& model, std::size_t layer, Gpt2Block& scratch) {
  if (!model.stored) {
    const Gpt2Block& b = model.blocks.at(layer);
    return {b, {held(b.attn_weight), held(b.attn_proj_weight), held(b.fc_weight), held(b.mlp_proj_weight)}, layer,
            nullptr};
  }
  // The vectors only: the matrices stay in the file.
  if (scratch.ln_1_weight.size() != model.config.n_embd) scratch = gpt2_block_vectors(model.config.n_embd);
  return {scratch, model.stored->block_matrices(layer, scratch), layer, model.stored.get()};
}

Tensor2 gpt2_conv1d(const Tensor2& x, const Gpt2PassBlock& b, StoredMatrix Gpt2BlockMatrices::*which,
                    const Tensor1& bias, std::size_t threads, Activation activation) {
  const StoredMatrix& w = b.matrices.*which;
  Tensor2 y = Tensor2::from_shape({x.shape(0), w.cols});
  if (!stored_gemm(x.data(), x.shape(0), w, StoredLayout::in_out, bias.data(), y.data(), w.cols, threads, activation)) {
    const std::string name = "h." + std::to_string(b.layer) + "." + matrix_name(which);
    if (b.store) b.store->non_finite(name);
    throw InputError("tensor \"" + name + "\" holds a non-finite value");
  }
  return y;
}

// The MLP works on each position alone: widen to 4D, GELU, project back.
Tensor2 gpt2_mlp_branch(const Gpt2PassBlock& b, const Tensor2& x, std::size_t threads) {
  const Tensor2 hidden = gpt2_conv1d(x, b, &Gpt2BlockMatrices::fc, b.vectors.fc_bias, threads, gelu_tanh);
  return gpt2_conv1d(hidden, b, &Gpt2BlockMatrices::mlp_proj, b.vectors.mlp_proj_bias, threads);
}

}  // namespace detail

Gpt2Block gpt2_block_vectors(std::size_t D) {
  Gpt2Block b;
  for (Tensor1* t : {&b.ln_1_weight, &b.ln_1_bias, &b.attn_proj_bias, &b.ln_2_weight, &b.ln_2_bias, &b.mlp_proj_bias})
    *t = Tensor1::from_shape({D});
  b.attn_bias = Tensor1::from_shape({3 * D});
  b.fc_bias = Tensor1::from_shape({4 * D});
  return b;
}

Gpt2Block unfilled_gpt2_block(std::size_t D) {
  Gpt2Block b = gpt2_block_vectors(D);
  b.attn_weight = Tensor2::from_shape({D, 3 * D});
  b.attn_proj_weight = Tensor2::from_shape({D, D});
  b.fc_weight = Tensor2::from_shape({D, 4 * D});
  b.mlp_proj_weight = Tensor2::from_shape({4 * D, D});
  return b;
}

Gpt2Model unfilled_gpt2_model(const Gpt2Config& c) {
  check_gpt2_config(c);
  const std::size_t D = c.n_embd;
  Gpt2Model m;
  m.config = c;
  m.wte = Tensor2::from_shape({c.vocab_size, D});
  m.wpe = Tensor2::from_shape({c.n_positions, D});
  m.blocks.reserve(c.n_layer);
  for (std::size_t l = 0; l < c.n_layer; ++l) m.blocks.push_back(unfilled_gpt2_block(D));
  m.ln_f_weight = Tensor1::from_shape({D});
  m.ln_f_bias = Tensor1::from_shape({D});
  return m;
}

const Gpt2Block& gpt2_block(const Gpt2Model& model, std::size_t layer, Gpt2Block& scratch) {
  if (!model.stored) return model.blocks.at(layer);
  if (scratch.attn_weight.shape(0) != model.config.n_embd) scratch = unfilled_gpt2_block(model.config.n_embd);
  model.stored->widen_block(layer, scratch);
  return scratch;
}

Tensor2 gpt2_embed(const Gpt2Model& model, const std::vector<std::int32_t>& ids, std::size_t first_position) {
  const Gpt2Config& c = model.config;
  const std::size_t L = ids.size(), D = c.n_embd;
  if (first_position + L > c.n_positions) {
    throw InputError("tokens: " + std::to_string(first_position + L) + " tokens exceed the model's n_positions of " +
                     std::to_string(c.n_positions));
  }
  Tensor2 x = Tensor2::from_shape({L, D});
  for (std::size_t i = 0; i < L; ++i) {
    if (ids[i] < 0 || std::size_t(ids[i]) >= c.vocab_size) {
      throw InputError("tokens: id " + std::to_string(ids[i]) + " out of range [0, " + std::to_string(c.vocab_size) +
                       ")");
    }
    float* row = x.data() + i * D;
    if (model.stored)
      model.stored->widen_wte_rows(std::size_t(ids[i]), 1, row);
    else
      std::copy_n(model.wte.data() + std::size_t(ids[i]) * D, D, row);
    const float* position = model.wpe.data() + (first_position + i) * D;
    for (std::size_t j = 0; j < D; ++j) row[j] += position[j];
  }
  return x;
}

Tensor2 gpt2_unembed(const Gpt2Model& model, const Tensor2& x, std::size_t threads) {
  const std::size_t L = x.shape(0), V = model.config.vocab_size;
  const StoredMatrix wte = model.stored ? model.stored->stored_wte() : held(model.wte);
  Tensor2 logits = Tensor2::from_shape({L, V});
  if (L > kStoredMatmulRows) {
    if (!stored_gemm(x.data(), L, wte, StoredLayout::out_in, nullptr, logits.data(), V, threads)) {
      if (model.stored) model.stored->non_finite("wte.weight");
      throw InputError("tensor \"wte.weight\" holds a non-finite value");
    }
    return logits;
  }
  // A decode step's few rows read wte once, row by row (stored_matmul), which does not look at
  // the values; x is finite, so a weight that is not finite shows as a logit that is not, and
  // only then is wte read again to name it.
  stored_matmul(x.data(), L, wte, nullptr, logits.data(), V, threads);
  if (std::all_of(logits.begin(), logits.end(), [](float v) { return std::isfinite(v); })) return logits;
  if (!model.stored) {
    if (!std::all_of(model.wte.begin(), model.wte.end(), [](float v) { return std::isfinite(v); }))
      throw InputError("tensor \"wte.weight\" holds a non-finite value");
    return logits;
  }
  constexpr std::size_t kRows = 512;
  const std::size_t D = model.config.n_embd;
  std::vector<float> rows(kRows * D);
  for (std::size_t first = 0; first < V; first += kRows)  // throws naming wte at a non-finite value
    model.stored->widen_wte_rows(first, std::min(kRows, V - first), rows.data());
  return logits;  // finite weights: the logits overflowed, which the caller reports
}

Gpt2Model zero_gpt2_model(const Gpt2Config& c) {
  Gpt2Model m = unfilled_gpt2_model(c);
  for (const Gpt2Parameter& p : gpt2_parameters(m)) {
    std::size_t count = 1;
    for (std::size_t n : p.shape) count *= n;
    std::fill_n(p.data, count, 0.0f);
  }
  return m;
}

std::vector<Gpt2Parameter> gpt2_block_parameters(Gpt2Block& b, std::size_t layer) {
  std::vector<Gpt2Parameter> out;
  const std::string h = "h." + std::to_string(layer) + ".";
  auto add = [&](const char* name, auto& t) { out.push_back({h + name, shape_of(t), t.data()}); };
  add("ln_1.weight", b.ln_1_weight);
  add("ln_1.bias", b.ln_1_bias);
  add("attn.c_attn.weight", b.attn_weight);
  add("attn.c_attn.bias", b.attn_bias);
  add("attn.c_proj.weight", b.attn_proj_weight);
  add("attn.c_proj.bias", b.attn_proj_bias);
  add("ln_2.weight", b.ln_2_weight);
  add("ln_2.bias", b.ln_2_bias);
  add("mlp.c_fc.weight", b.fc_weight);
  add("mlp.c_fc.bias", b.fc_bias);
  add("mlp.c_proj.weight", b.mlp_proj_weight);
  add("mlp.c_proj.bias", b.mlp_proj_bias);
  return out;
}

std::vector<Gpt2Parameter> gpt2_parameters(Gpt2Model& m) {
  std::vector<Gpt2Parameter> out;
  auto add = [&out](std::string name, auto& t) { out.push_back({std::move(name), shape_of(t), t.data()}); };
  add("wte.weight", m.wte);
  add("wpe.weight", m.wpe);
  for (std::size_t l = 0; l < m.blocks.size(); ++l) {
    const std::vector<Gpt2Parameter> block = gpt2_block_parameters(m.blocks[l], l);
    out.insert(out.end(), block.begin(), block.end());
  }
  add("ln_f.weight", m.ln_f_weight);
  add("ln_f.bias", m.ln_f_bias);
  return out;
}

Tensor2 layer_norm(const Tensor2& x, const Tensor1& gamma, const Tensor1& beta, double eps) {
  const std::size_t L = x.shape(0), D = x.shape(1);
  Tensor2 y = Tensor2::from_shape({L, D});
  for (std::size_t i = 0; i < L; ++i) {
    const float* row = x.data() + i * D;
    double mean = 0, var = 0;  // float64 sums: the rows of GPT-2's residual stream grow large
    for (std::size_t j = 0; j < D; ++j) mean += row[j];
    mean /= double(D);
    for (std::size_t j = 0; j < D; ++j) var += (row[j] - mean) * (row[j] - mean);
    const double inv = 1.0 / std::sqrt(var / double(D) + eps);
    for (std::size_t j = 0; j < D; ++j) y(i, j) = float((row[j] - mean) * inv * gamma(j) + beta(j));
  }
  return y;
}

float gelu_new(float x) {
  gelu_tanh(&x, 1);  // in float: a few units in the last place (core/activation.hpp)
  return x;
}

Gpt2Forward gpt2_forward(const Gpt2Model& model, const std::vector<std::int32_t>& ids, std::size_t threads) {
  const Gpt2Config& c = model.config;
  if (ids.empty()) throw InputError("tokens: expected at least one token");
  Tensor2 x = gpt2_embed(model, ids, 0);
  Gpt2Forward out;
  out.embedded = x;
  out.attention.resize(c.n_layer);
  out.q.resize(c.n_layer);
  out.k.resize(c.n_layer);
  out.v.resize(c.n_layer);
  Gpt2Block scratch;
  for (std::size_t l = 0; l < c.n_layer; ++l) {
    const detail::Gpt2PassBlock b = detail::gpt2_pass_block(model, l, scratch);
    const Gpt2Block& v = b.vectors;
    x += attention_branch(b, layer_norm(x, v.ln_1_weight, v.ln_1_bias, c.layer_norm_epsilon), c.n_head, threads,
                          out.attention[l], out.q[l], out.k[l], out.v[l]);
    x += detail::gpt2_mlp_branch(b, layer_norm(x, v.ln_2_weight, v.ln_2_bias, c.layer_norm_epsilon), threads);
    detail::require_finite_stream(x, "layer " + std::to_string(l));
  }
  out.logits = gpt2_unembed(model, layer_norm(x, model.ln_f_weight, model.ln_f_bias, c.layer_norm_epsilon), threads);
  detail::require_finite_stream(out.logits, "the unembedding (the logits)");
  return out;
}

}  // namespace attn
