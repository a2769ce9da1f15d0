// A Llama-family decoder through one KV cache per layer (decoder_decode.hpp).
#include "attn/engine/models/decoder_decode.hpp"

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/linear.hpp"
#include "core/finite_stream.hpp"
#include "decoder_parts.hpp"
#include "gpt2_parts.hpp"

namespace attn {
namespace {

// Appends the m new tokens' k, v ([Hkv, m, d]) to the cache, token by token.
void append(KvCache& cache, const Tensor3& k, const Tensor3& v) {
  const std::size_t H = k.shape(0), m = k.shape(1), d = k.shape(2);
  std::vector<double> kt(H * d), vt(H * d);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t c = 0; c < d; ++c) kt[h * d + c] = k(h, i, c), vt[h * d + c] = v(h, i, c);
    cache.append(kt, vt);
  }
}

}  // namespace

CachedDecoder::CachedDecoder(const DecoderModel& model, KvDtype dtype)
    : model_(model), layer_(unfilled_decoder_layer(model.config)) {
  for (std::size_t l = 0; l < model.config.layers; ++l)
    caches_.emplace_back(model.config.kv_heads, model.config.head_dim, 0, dtype);
}

std::size_t CachedDecoder::cache_bytes() const {
  std::size_t bytes = 0;
  for (const KvCache& c : caches_) bytes += c.bytes();
  return bytes;
}

Tensor2 CachedDecoder::feed(const std::vector<std::int32_t>& ids) {
  using namespace detail;
  const DecoderConfig& c = model_.config;
  const std::size_t m = ids.size(), p = length_;
  if (m == 0) throw InputError("tokens: expected at least one token to feed");
  if (m > c.max_positions - p)
    throw InputError("tokens: " + std::to_string(p + m) + " in all is more than the model's max_position_embeddings " +
                     std::to_string(c.max_positions));
  const OneBlasThread one_blas_thread;  // the GEMMs are split across threads here
  RopeOptions rope;
  rope.frequencies = decoder_rope_frequencies(c);
  Tensor2 x = decoder_embed(model_, ids);
  for (std::size_t l = 0; l < c.layers; ++l) {
    model_.stored->widen_layer(l, layer_);
    const DecoderLayer& w = layer_;
    const Tensor2 h = decoder_rms_norm(x, w.input_norm, c.rms_eps);
    const Tensor3 q = decoder_rotated_heads(decoder_project(h, w.w_q, w.b_q, 0), c.heads, p, rope);
    append(caches_[l], decoder_rotated_heads(decoder_project(h, w.w_k, w.b_k, 0), c.kv_heads, p, rope),
           split_heads(decoder_project(h, w.w_v, w.b_v, 0), c.kv_heads));
    const Tensor3 k = xt::cast<float>(caches_[l].keys_tensor()), v = xt::cast<float>(caches_[l].values_tensor());
    const SdpaResult r =
        attention(q, k, v, nullptr, decoder_attention_options(c, l), decoder_backend(0), /*with_weights=*/false);
    x += decoder_project(merge_heads(r.output), w.w_o, Tensor1{}, 0);
    x += decoder_mlp(w, decoder_rms_norm(x, w.post_norm, c.rms_eps), 0);
    require_finite_stream(x, "layer " + std::to_string(l));
  }
  length_ += m;
  Tensor2 logits = decoder_unembed(model_, decoder_rms_norm(x, model_.norm, c.rms_eps), 0);
  require_finite_stream(logits, "the unembedding (the logits)");
  return logits;
}

}  // namespace attn
