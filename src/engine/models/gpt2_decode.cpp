// GPT-2 decoding through one KV cache per layer (gpt2_decode.hpp).
#include "attn/engine/models/gpt2_decode.hpp"

#include <cmath>

#include "attn/engine/core/error.hpp"
#include "core/finite_stream.hpp"
#include "gpt2_parts.hpp"

namespace attn {
namespace {

// The new tokens' attention: qkv [m, 3D] of the tokens at positions p .. p+m-1, whose k and v
// are already in the cache; returns the heads merged, [m, D]. Query i sees keys 0 .. p+i.
Tensor2 cached_attention(const Tensor2& qkv, const KvCache& cache, std::size_t p, std::size_t H) {
  const std::size_t m = qkv.shape(0), D = qkv.shape(1) / 3, d = D / H;
  const double scale = 1.0 / std::sqrt(double(d));
  Tensor2 out = Tensor2::from_shape({m, D});
  std::vector<double> w;
  for (std::size_t h = 0; h < H; ++h) {
    const std::span<const double> K = cache.keys(h), V = cache.values(h);  // [p + m, d]
    for (std::size_t i = 0; i < m; ++i) {
      const float* q = qkv.data() + i * 3 * D + h * d;
      const std::size_t seen = p + i + 1;
      w.assign(seen, 0.0);
      double top = -INFINITY, sum = 0;
      for (std::size_t j = 0; j < seen; ++j) {
        double s = 0;
        for (std::size_t c = 0; c < d; ++c) s += double(q[c]) * K[j * d + c];
        w[j] = s * scale;
        top = std::max(top, w[j]);
      }
      for (double& x : w) sum += (x = std::exp(x - top));  // softmax, shifted by the row's max
      for (std::size_t c = 0; c < d; ++c) {
        double acc = 0;
        for (std::size_t j = 0; j < seen; ++j) acc += w[j] * V[j * d + c];
        out(i, h * d + c) = float(acc / sum);
      }
    }
  }
  return out;
}

}  // namespace

Gpt2Decoder::Gpt2Decoder(const Gpt2Model& model, KvDtype dtype) : model_(model) {
  const Gpt2Config& c = model.config;
  for (std::size_t l = 0; l < c.n_layer; ++l) caches_.emplace_back(c.n_head, c.n_embd / c.n_head, 0, dtype);
}

std::size_t Gpt2Decoder::cache_bytes() const {
  std::size_t bytes = 0;
  for (const KvCache& c : caches_) bytes += c.bytes();
  return bytes;
}

Tensor2 Gpt2Decoder::feed(const std::vector<std::int32_t>& ids) {
  const Gpt2Config& c = model_.config;
  const std::size_t m = ids.size(), D = c.n_embd, H = c.n_head, p = length_;
  if (m == 0) throw InputError("tokens: expected at least one token to feed");
  Tensor2 x = gpt2_embed(model_, ids, p);
  std::vector<double> k(D), v(D);  // one token's [H, d] keys and values, head-major as the cache wants
  for (std::size_t l = 0; l < c.n_layer; ++l) {
    const detail::Gpt2PassBlock b = detail::gpt2_pass_block(model_, l, scratch_);
    const Gpt2Block& vb = b.vectors;
    const Tensor2 qkv = detail::gpt2_conv1d(layer_norm(x, vb.ln_1_weight, vb.ln_1_bias, c.layer_norm_epsilon), b,
                                            &Gpt2BlockMatrices::attn, vb.attn_bias, /*threads=*/0);
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < D; ++j) {  // head h owns columns h*d .. h*d + d of the k and v parts
        k[j] = qkv(i, D + j);
        v[j] = qkv(i, 2 * D + j);
      }
      caches_[l].append(k, v);
    }
    x += detail::gpt2_conv1d(cached_attention(qkv, caches_[l], p, H), b, &Gpt2BlockMatrices::attn_proj,
                             vb.attn_proj_bias, 0);
    x += detail::gpt2_mlp_branch(b, layer_norm(x, vb.ln_2_weight, vb.ln_2_bias, c.layer_norm_epsilon), 0);
    detail::require_finite_stream(x, "layer " + std::to_string(l));
  }
  length_ += m;
  Tensor2 logits = gpt2_unembed(model_, layer_norm(x, model_.ln_f_weight, model_.ln_f_bias, c.layer_norm_epsilon));
  detail::require_finite_stream(logits, "the unembedding (the logits)");
  return logits;
}

}  // namespace attn
