#pragma once
// What one self-attention layer costs, counted in closed form (the textbook
// O(n d^2 + n^2 d), made exact), the usual table of long-sequence methods evaluated, and the
// KV cache of real models. Letters: n tokens, D = d_model, H heads, d = D / H.
//
//   step            FLOPs (= 2 x multiply-adds)      why
//   qkv_proj        6 n D^2        three [n, D] x [D, D] products
//   scores          2 n^2 D        Q K^T, H heads of [n, d] x [d, n]
//   softmax         3 H n^2        exp, sum, divide per score (Hoffmann et al. 2022, "Chinchilla",
//                                  arXiv 2203.15556, Appendix F); the 1/sqrt(d) scale folded in
//   weighted_sum    2 n^2 D        P V, H heads of [n, n] x [n, d]
//   out_proj        2 n D^2        [n, D] x [D, D]
// Causal: scores and weighted_sum are halved (FlashAttention's benchmark rule: only the
// unmasked half is computed); softmax counts the n (n + 1) / 2 unmasked scores per head exactly.
// Memory: the naive kernel materialises H n^2 scores; a tiled kernel (FlashAttention, arXiv
// 2205.14135, Algorithm 1) keeps only a running max m and sum l per query row, 2 H n numbers.
#include <cstdint>
#include <string>
#include <vector>

#include "attn/io/json_io.hpp"

namespace attn {

struct AttentionFlops {
  std::uint64_t qkv_proj = 0, scores = 0, softmax = 0, weighted_sum = 0, out_proj = 0, total = 0;
};

struct ComplexityRow {
  std::size_t n = 0, d_model = 0, heads = 0, dtype_bytes = 4;
  bool causal = false;
  std::uint64_t attention_elements = 0;  // H n^2 entries of the score matrices
  AttentionFlops flops;
  std::uint64_t scores_naive_bytes = 0, tiled_extra_bytes = 0;
};

// The convention string of the JSON contract: what is counted and how.
std::string flops_convention();

// Throws InputError when d_model % heads != 0, a size is 0, or a count would overflow 64 bits.
ComplexityRow count_attention(std::size_t n, std::size_t d_model, std::size_t heads, bool causal,
                              std::size_t dtype_bytes);

// Sequence length n* at which the n^2 terms equal the n D^2 terms (the textbook "when n > d the
// n^2 d term becomes the bottleneck"). Every count is a monomial in n, so n* is a ratio of
// coefficients read off count_attention(1, ...).
struct Crossover {
  double matmuls = 0;                // scores + weighted_sum vs qkv_proj + out_proj
  double matmuls_without_out = 0;    // the four steps textbooks count: no output projection
  double with_softmax = 0;           // scores + softmax + weighted_sum vs the projections
};
Crossover crossover_length(std::size_t d_model, std::size_t heads, bool causal);

// The usual table of long-sequence methods, evaluated: the attention core
// (scores + weighted sum, projections excluded: every method keeps them) at each n.
struct MethodAt {
  std::size_t n = 0;
  double flops = 0, memory_bytes = 0;
};
struct MethodCost {
  std::string name, time, memory, idea, source;
  std::vector<MethodAt> at;  // one per n
};
// causal: standard and flash are halved as count_attention halves them (FlashAttention's rule);
// sparse and sliding window count exactly the keys each query may see, earlier ones only; linear
// attention's causal form (running prefix sums of phi(K)^T V) costs what the full one does.
std::vector<MethodCost> method_table(const std::vector<std::size_t>& ns, std::size_t d_model,
                                     std::size_t heads, std::size_t window, std::size_t dtype_bytes,
                                     bool causal = false);

// KV cache = 2 (K and V) x layers x kv_heads x head_dim x tokens x dtype_bytes, batch 1. A model
// with sliding-window attention can keep only the last `window` tokens instead (Mistral 7B
// v0.1's rolling buffer cache, Jiang et al. 2023, arXiv 2310.06825, section 2).
struct KvModel {
  std::string name;
  std::size_t layers = 0, kv_heads = 0, head_dim = 0;
  std::string source;
  std::size_t window = 0;  // 0 = no sliding window
};
const std::vector<KvModel>& kv_presets();
const KvModel& kv_preset(const std::string& name);  // InputError naming the presets when unknown
std::uint64_t kv_cache_bytes(const KvModel& model, std::size_t tokens, std::size_t dtype_bytes);
// The rolling buffer's bytes: the same formula with min(tokens, window) tokens (window > 0).
std::uint64_t kv_rolling_buffer_bytes(const KvModel& model, std::size_t tokens, std::size_t dtype_bytes);

struct ComplexityConfig {
  std::vector<std::size_t> ns = {128, 256, 512, 1024, 2048, 4096, 8192};
  std::size_t d_model = 512, heads = 8, dtype_bytes = 4;  // the usual table's 512, 8, FP32
  bool causal = false;
  std::size_t window = 512;         // sliding window (Longformer, arXiv 2004.05150)
  std::size_t tokens = 2048;        // KV cache length (the tutorial's example)
  std::vector<std::string> models;  // presets to list; empty = all (unless list_presets is false)
  bool list_presets = true;          // false: no preset when `models` is empty (a folder was asked for)
  std::vector<KvModel> custom;      // further models given by the user
  std::size_t kernel = 3;           // convolution kernel k of the layer-type table
};

// Vaswani et al. 2017, Table 1, computed for one n, representation size d, kernel k and
// restricted neighbourhood r: per-layer operations (n^2 d, n d^2, k n d^2, r n d), sequential
// operations (1, n, 1, 1) and the maximum path length between any two positions (1, n,
// log_k n for dilated convolutions or n / k for contiguous ones, n / r), rounded up.
struct LayerTypeRow {
  std::string layer, complexity, path_formula;
  double operations = 0, sequential = 0, max_path = 0;
};
std::vector<LayerTypeRow> layer_type_table(std::size_t n, std::size_t d, std::size_t k, std::size_t r);

// A widely shared tutorial computes LLaMA-7B's KV cache with 24 layers; it has 32 (Touvron et al. 2023,
// arXiv 2302.13971, Table 2). Both, at its 2048 tokens and FP16, from kv_cache_bytes.
struct KvClaimCheck {
  KvModel claimed, actual;
  std::size_t tokens = 0, dtype_bytes = 0;
  std::uint64_t claimed_bytes = 0, actual_bytes = 0;
};
KvClaimCheck tutorial_kv_claim_check();

struct ComplexityReport {
  ComplexityConfig config;
  std::vector<ComplexityRow> rows;
  Crossover crossover;
  std::vector<MethodCost> methods;
  std::vector<std::pair<KvModel, std::uint64_t>> kv_cache;  // model, bytes
  KvClaimCheck kv_claim;
  std::vector<LayerTypeRow> layer_types;  // at the largest n, d = d_model, k = kernel, r = window
};

ComplexityReport run_complexity(const ComplexityConfig& config);

// docs/contracts.md's contract: {"convention", "rows", "kv_cache"}, then "crossover", "methods" and
// "kv_cache_claim_check".
Json complexity_json(const ComplexityReport& report);

}  // namespace attn
