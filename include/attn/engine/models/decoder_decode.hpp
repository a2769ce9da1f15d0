#pragma once
// A Llama-family decoder (decoder_model.hpp) generating through one KV cache per layer
// (kv_cache.hpp), each holding the model's Hkv key/value heads -- grouped-query attention's saving,
// H / Hkv times less than multi-head attention would keep -- with the keys stored already rotated
// to their positions, so that a new token is embedded, normalised, projected and pushed through
// the MLPs alone and only its attention reads the prefix:
//
//   feed(ids) at positions p .. p+m-1:  per layer: q, k, v of the m tokens; k, v appended to
//   the layer's cache; the m queries attend, causally (and under the layer's sliding window),
//   to every cached key through attention() (the flash kernel; one query is its decode path)
//
// The prompt is fed at once (prefill), then each generated token alone. The logits equal
// decoder_forward's on the whole prefix to float rounding (and, with a bfloat16 cache, to its
// rounding). Every token is kept: a sliding window is applied as a mask, so the cache is the
// bytes a full-attention cache of Hkv heads would hold.
#include <cstdint>
#include <vector>

#include "attn/engine/attention/kv_cache.hpp"
#include "attn/engine/models/decoder_model.hpp"

namespace attn {

class CachedDecoder {
 public:
  // Keeps a reference: the model must outlive it. dtype: what the caches store.
  explicit CachedDecoder(const DecoderModel& model, KvDtype dtype = KvDtype::float64);
  // Feeds the next ids; returns their logits [ids.size(), vocab]. InputError for no ids, an id
  // outside the vocabulary, or more tokens in all than max_position_embeddings.
  Tensor2 feed(const std::vector<std::int32_t>& ids);
  std::size_t length() const { return length_; }
  const std::vector<KvCache>& caches() const { return caches_; }
  std::size_t cache_bytes() const;  // K and V of every layer, as stored

 private:
  const DecoderModel& model_;
  DecoderLayer layer_;  // the norms and biases of the layer being run (its matrices stay in the files)
  std::vector<KvCache> caches_;
  std::size_t length_ = 0;
};

}  // namespace attn
