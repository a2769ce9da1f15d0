#pragma once
// The KV cache of autoregressive decoding (in the spirit of gemma.cpp's gemma/kv_cache.h).
//
// A causal decoder's token t attends to keys 0..t, and the keys and values of earlier tokens
// never change once computed (with RoPE they are stored already rotated). So instead of
// re-projecting the whole prefix for every new token, decoding keeps them:
//   prefill  P prompt tokens: project all P at once, attend causally, append their K, V
//   step t:  project token t only, append its K, V, attend its one query to the cache
// What that costs, per head of dim d:
//   prefill of P tokens   O(P^2 d)   (causal attention among the prompt tokens)
//   step t                O(t d)     (one query against t + 1 cached keys; K, V of token t
//                                     projected once, O(D^2) for all heads together)
// Recomputing everything at step t would be O(t^2 d), so the cache turns a step from O(t^2)
// into O(t) -- but generating n tokens still costs O(n^2 d) in total, and the cache grows as
// O(n). The tutorial count "O(n) + O(t) = O(t)" counts only the new token's projections and forgets
// that its query must read every cached key.
//
// Grouped-query attention shrinks it: the cache holds num_kv_heads heads, not num_heads.
// A sliding window (Mistral's rolling buffer) bounds it: only the last `window` tokens are
// kept, because no later query can see further back.
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "attn/engine/core/tensor.hpp"

namespace attn {

// What the cache stores. float64: the reference. bfloat16: each value rounded to bfloat16 as it
// is appended (via float32, as a model's activations would be; then to nearest even, bf16.hpp),
// 2 bytes a value: half a float32 cache. Attention reads the rounded values, so a bfloat16
// cache's outputs differ from the full recomputation by its rounding, and only by that.
enum class KvDtype { float64, bfloat16 };
KvDtype parse_kv_dtype(std::string_view name);  // "f64" | "bf16"; InputError otherwise
const char* kv_dtype_name(KvDtype dtype);        // "f64" | "bf16"
std::size_t kv_dtype_bytes(KvDtype dtype);       // 8 | 2
double kv_stored_value(KvDtype dtype, double x);  // x as a cache of that dtype holds it

class KvCache {
 public:
  // window = 0 keeps every token; window = w keeps the last w.
  KvCache(std::size_t num_kv_heads, std::size_t head_dim, std::size_t window = 0,
          KvDtype dtype = KvDtype::float64);

  // Appends one token: k and v are [Hkv, d] row-major (head-major, like split heads).
  // When the window is full, the oldest token is dropped first.
  void append(std::span<const double> k, std::span<const double> v);

  std::size_t num_kv_heads() const { return num_kv_heads_; }
  std::size_t head_dim() const { return head_dim_; }
  std::size_t window() const { return window_; }
  KvDtype dtype() const { return dtype_; }
  std::size_t length() const { return length_; }            // tokens held now
  std::size_t tokens_seen() const { return tokens_seen_; }  // tokens ever appended
  // Absolute position (0-based index in the sequence) of the oldest token held.
  std::size_t first_position() const { return tokens_seen_ - length_; }

  // One kv head's keys / values, [length, d], oldest first.
  std::span<const double> keys(std::size_t kv_head) const;
  std::span<const double> values(std::size_t kv_head) const;
  // Every head's keys or values as one [Hkv, length, d] tensor, the layout attention() reads. A
  // production kernel reads the cache in place; this copy is O(length d), the order of the
  // step's attention itself.
  TensorD3 keys_tensor() const { return as_tensor(true); }
  TensorD3 values_tensor() const { return as_tensor(false); }

  // Bytes of K and V held: 2 * Hkv * length * d * bytes_per_value; 0 = the cache's own dtype
  // (8 for float64, 2 for bfloat16). Pass 2 for what an fp16 model would hold for the same tokens.
  std::size_t bytes(std::size_t bytes_per_value = 0) const;

 private:
  TensorD3 as_tensor(bool keys) const;
  std::size_t num_kv_heads_, head_dim_, window_;
  KvDtype dtype_;
  std::size_t length_ = 0, tokens_seen_ = 0;
  // Per kv head, [length, d] contiguous. A production cache is a preallocated ring buffer;
  // this one erases the oldest row so that keys(h) stays in sequence order for reading.
  std::vector<std::vector<double>> k_, v_;
};

}  // namespace attn
