#pragma once
// GPT-2 decoding with a KV cache (kv_cache.hpp), one cache per layer: the tokens fed so far
// keep their keys and values, so a new token is embedded, normalised, projected and pushed
// through the MLPs alone, and only its attention reads the whole prefix.
//
//   feed(ids) at positions p .. p+m-1 (m = ids.size()):
//     x = wte[id] + wpe[p+i]                                          [m, D]
//     per block:  qkv = c_attn(ln_1(x)); append k, v of the m tokens to the layer's cache
//                 query i attends, causally, to cached keys 0 .. p+i   (float64, scale 1/sqrt(d))
//                 x += c_proj(heads merged);  x += mlp(ln_2(x))
//     logits = ln_f(x) wte^T                                          [m, vocab]
//
// A prompt is fed at once (prefill), then each generated token alone. The logits must equal
// those of gpt2_forward on the whole prefix (gpt2_model.hpp) to float rounding: the cache only
// saves recomputing what cannot have changed.
#include <cstdint>
#include <vector>

#include "attn/engine/models/gpt2_model.hpp"
#include "attn/engine/attention/kv_cache.hpp"

namespace attn {

class Gpt2Decoder {
 public:
  // Keeps a reference: the model must outlive it. dtype: what the caches store (kv_cache.hpp).
  explicit Gpt2Decoder(const Gpt2Model& model, KvDtype dtype = KvDtype::float64);

  // Feeds the next ids; returns their logits [ids.size(), vocab]. InputError for no ids, an id
  // outside the vocabulary, or more tokens in all than n_positions.
  Tensor2 feed(const std::vector<std::int32_t>& ids);

  std::size_t length() const { return length_; }  // tokens fed so far
  const std::vector<KvCache>& caches() const { return caches_; }  // one per layer
  std::size_t cache_bytes() const;  // K and V of every layer, as stored (8 or 2 bytes a value)

 private:
  const Gpt2Model& model_;
  Gpt2Block scratch_;  // the block being run, when the model leaves its blocks in their file
  std::vector<KvCache> caches_;
  std::size_t length_ = 0;
};

}  // namespace attn
