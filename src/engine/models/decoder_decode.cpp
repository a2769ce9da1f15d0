// A Llama-family decoder through one KV cache per layer (decoder_decode.hpp).
#include "attn/engine/models/decoder_decode.hpp"

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/linear.hpp"
#include "core/finite_stream.hpp"
#include "decoder_parts.hpp"

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

// The keys (or values) a step attends to: what the cache holds, then the m new rows as the
// cache will store them (a bfloat16 cache's rounding) -- [Hkv, held + m, d].
Tensor3 with_cached(const KvCache& cache, const Tensor3& fresh, bool keys) {
  const std::size_t H = fresh.shape(0), held = cache.length(), m = fresh.shape(1), d = fresh.shape(2);
  Tensor3 out = Tensor3::from_shape({H, held + m, d});
  for (std::size_t h = 0; h < H; ++h) {
    const std::span<const double> rows = keys ? cache.keys(h) : cache.values(h);
    float* o = out.data() + h * (held + m) * d;
    for (std::size_t x = 0; x < held * d; ++x) o[x] = float(rows[x]);
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t c = 0; c < d; ++c) o[(held + i) * d + c] = float(kv_stored_value(cache.dtype(), fresh(h, i, c)));
  }
  return out;
}

// Mistral's rolling buffer: a layer under a sliding window of W keys (and no sinks, which would
// need the first keys forever) keeps only the last W tokens' K and V.
std::size_t cache_window(const DecoderConfig& c, std::size_t layer) {
  const bool windowed = c.sliding_window > 0 && layer >= c.window_first_layer && c.attention_sinks == 0;
  return windowed ? c.sliding_window : 0;
}

}  // namespace

CachedDecoder::CachedDecoder(const DecoderModel& model, KvDtype dtype)
    : model_(model), layer_(unfilled_decoder_vectors(model.config)) {
  for (std::size_t l = 0; l < model.config.layers; ++l)
    caches_.emplace_back(model.config.kv_heads, model.config.head_dim, cache_window(model.config, l), dtype);
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
  RopeOptions rope;
  rope.frequencies = decoder_rope_frequencies(c);
  Tensor2 x = decoder_embed(model_, ids);
  for (std::size_t l = 0; l < c.layers; ++l) {
    model_.stored->widen_layer_vectors(l, layer_);
    const DecoderProjections w(layer_, *model_.stored, l, 0);
    using P = DecoderProjections;
    const Tensor2 h = rms_norm(x, layer_.input_norm, c.rms_eps);
    const Tensor3 q = decoder_rotated_heads(w(h, P::q), c.heads, p, rope);
    const Tensor3 k_new = decoder_rotated_heads(w(h, P::k), c.kv_heads, p, rope);
    const Tensor3 v_new = split_heads(w(h, P::v), c.kv_heads);
    // Attend before appending: a rolling cache evicts as it takes the new rows, and a prompt's
    // first rows still need the keys the last ones push out. The window rule counts positions
    // from the right (p = i + Lk - Lq), so the keys a rolling cache dropped are simply absent.
    const Tensor3 k = with_cached(caches_[l], k_new, true), v = with_cached(caches_[l], v_new, false);
    const SdpaResult r =
        attention(q, k, v, nullptr, decoder_attention_options(c, l), decoder_backend(0), /*with_weights=*/false);
    append(caches_[l], k_new, v_new);
    x += w(merge_heads(r.output), P::o);
    x += decoder_mlp(w, rms_norm(x, layer_.post_norm, c.rms_eps));
    require_finite_stream(x, "layer " + std::to_string(l));
  }
  length_ += m;
  const Tensor2 last = rms_norm(x, model_.norm, c.rms_eps);
  Tensor2 logits = decoder_unembed(model_, last, 0);
  require_finite_stream(logits, "the unembedding (the logits)");
  return logits;
}

}  // namespace attn
