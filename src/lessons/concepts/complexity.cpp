#include "attn/lessons/concepts/complexity.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attn/engine/core/error.hpp"

namespace attn {
namespace {

using u64 = std::uint64_t;
using u128 = unsigned __int128;  // products are formed here, then checked to fit 64 bits

u64 fit64(u128 x, const char* what) {
  if (x > std::numeric_limits<u64>::max()) {
    throw InputError(std::string(what) + " does not fit in 64 bits: choose a smaller --n or --d-model");
  }
  return static_cast<u64>(x);
}

void check_sizes(std::size_t n, std::size_t d_model, std::size_t heads, std::size_t dtype_bytes) {
  if (n == 0) throw InputError("--n: every sequence length must be >= 1");
  if (d_model == 0 || heads == 0) throw InputError("--d-model and --heads must be >= 1");
  if (d_model % heads != 0) {
    throw InputError("--heads: " + std::to_string(heads) + " does not divide --d-model " +
                     std::to_string(d_model));
  }
  if (dtype_bytes == 0 || dtype_bytes > 8) throw InputError("--dtype-bytes: expected 1 to 8");
}

}  // namespace

std::string flops_convention() {
  return "FLOPs = 2 x multiply-adds, one self-attention layer, batch 1, biases not counted: "
         "qkv_proj = 6 n D^2, scores (Q K^T) = 2 n^2 D, weighted_sum (P V) = 2 n^2 D, out_proj = 2 n D^2. "
         "softmax IS counted: 3 FLOPs per score (exp, sum, divide; the 1/sqrt(d) scale folded in), "
         "3 H n^2, as in Hoffmann et al. 2022 (Chinchilla, arXiv 2203.15556, Appendix F). "
         "causal: scores and weighted_sum are halved (only the unmasked half is computed, "
         "FlashAttention's benchmark rule) and softmax counts the n(n+1)/2 unmasked scores per head. "
         "memory_bytes: scores_naive = H n^2 dtype_bytes (the full score matrix, causal or not); "
         "tiled_extra = 2 H n dtype_bytes (a running max and sum per query row, FlashAttention "
         "arXiv 2205.14135 Algorithm 1). D = d_model, H = heads.";
}

ComplexityRow count_attention(std::size_t n, std::size_t d_model, std::size_t heads, bool causal,
                              std::size_t dtype_bytes) {
  check_sizes(n, d_model, heads, dtype_bytes);
  const u128 N = n, D = d_model, H = heads, B = dtype_bytes;
  ComplexityRow r;
  r.n = n;
  r.d_model = d_model;
  r.heads = heads;
  r.causal = causal;
  r.dtype_bytes = dtype_bytes;
  r.attention_elements = fit64(H * N * N, "heads x n^2");
  AttentionFlops& f = r.flops;
  f.qkv_proj = fit64(6 * N * D * D, "qkv_proj");
  f.out_proj = fit64(2 * N * D * D, "out_proj");
  const u128 matmul = 2 * N * N * D;  // each of Q K^T and P V
  f.scores = fit64(causal ? matmul / 2 : matmul, "scores");
  f.weighted_sum = f.scores;
  f.softmax = fit64(causal ? 3 * H * (N * (N + 1) / 2) : 3 * H * N * N, "softmax");
  f.total = fit64(u128(f.qkv_proj) + f.scores + f.softmax + f.weighted_sum + f.out_proj, "total");
  r.scores_naive_bytes = fit64(H * N * N * B, "scores_naive");
  r.tiled_extra_bytes = fit64(2 * H * N * B, "tiled_extra");
  return r;
}

Crossover crossover_length(std::size_t d_model, std::size_t heads, bool causal) {
  // Non-causal counts are a n (projections) and b n^2 (scores, softmax, weighted sum): read a
  // and b at n = 1 and solve a n = b n^2. Causal softmax has an n term as well, so its b is the
  // n^2 coefficient, read from n = 2 and n = 1: f(2) - 2 f(1) = 2 b.
  const ComplexityRow one = count_attention(1, d_model, heads, causal, 1);
  const ComplexityRow two = count_attention(2, d_model, heads, causal, 1);
  const double linear = double(one.flops.qkv_proj) + double(one.flops.out_proj);
  const double quad_matmul = double(one.flops.scores) + double(one.flops.weighted_sum);
  const double quad_softmax = (double(two.flops.softmax) - 2.0 * double(one.flops.softmax)) / 2.0;
  return {linear / quad_matmul, double(one.flops.qkv_proj) / quad_matmul,
          linear / (quad_matmul + quad_softmax)};
}

namespace {

// Query i (0-based) of a causal row sees min(i + 1, w) keys of a window of w ending at itself;
// summed over the n queries.
double causal_window_pairs(double n, double w) {
  return n <= w ? n * (n + 1) / 2 : w * (w + 1) / 2 + (n - w) * w;
}

// Child et al.'s strided pattern with stride l, causal: query i sees its l latest keys (itself
// included) and every l-th key before them, i - l, i - 2l, ..., 0 <= j: floor(i / l) more.
double causal_strided_pairs(double n, double l) {
  const double q = std::floor(n / l), r = n - q * l;  // sum of floor(i / l) for i < n
  return causal_window_pairs(n, l) + l * q * (q - 1) / 2 + r * q;
}

}  // namespace

std::vector<MethodCost> method_table(const std::vector<std::size_t>& ns, std::size_t d_model,
                                     std::size_t heads, std::size_t window, std::size_t dtype_bytes, bool causal) {
  if (window == 0) throw InputError("--window: expected >= 1");
  const double D = double(d_model), H = double(heads), d = D / H, B = double(dtype_bytes);
  const std::string w = std::to_string(window);
  // Each method as the key-query pairs it computes, where that is what it changes: the core
  // then costs 4 D FLOPs per pair (Q K^T and P V) and H scores of memory per pair.
  std::vector<MethodCost> m = {
      {"standard", "O(n^2 d)", "O(n^2)", "every query reads every key; the n x n matrix is stored",
       "Vaswani et al. 2017, arXiv 1706.03762", {}},
      {"flash", "O(n^2 d)", "O(n)", "exact attention in tiles with an online softmax: same FLOPs, "
       "the n x n matrix never leaves on-chip memory", "Dao et al. 2022, arXiv 2205.14135", {}},
      {"sparse (strided)", "O(n sqrt(n) d)", "O(n sqrt(n))",
       causal ? "each query reads its sqrt(n) latest keys and every sqrt(n)-th key before them"
              : "each query reads a local window of sqrt(n) keys and every sqrt(n)-th key: 2 sqrt(n) keys",
       "Child et al. 2019, arXiv 1904.10509", {}},
      {"linear", "O(n d^2)", "O(d^2) per head",
       causal ? "softmax replaced by a kernel phi; causal: running sums of phi(k_j)^T v_j, a d x d state per head"
              : "softmax replaced by a kernel phi: phi(Q) (phi(K)^T V), a d x d state per head",
       "Katharopoulos et al. 2020, arXiv 2006.16236", {}},
      {"sliding window", "O(n w d)", "O(n w)",
       causal ? "each query reads the w = " + w + " latest keys, itself included (Mistral 7B v0.1: w = 4096)"
              : "each query reads the w = " + w + " keys around it (Mistral 7B v0.1, causal: w = 4096)",
       "Beltagy et al. 2020 (Longformer), arXiv 2004.05150", {}},
  };
  for (std::size_t n_int : ns) {
    check_sizes(n_int, d_model, heads, dtype_bytes);
    const double n = double(n_int), l = std::ceil(std::sqrt(n));
    const double full = causal ? n * n / 2 : n * n;
    const double sparse = causal ? causal_strided_pairs(n, l) : n * std::min(n, 2 * l);
    const double local = causal ? causal_window_pairs(n, double(window)) : n * std::min(n, double(window));
    m[0].at.push_back({n_int, 4 * full * D, H * n * n * B});  // the whole matrix is stored, causal or not
    m[1].at.push_back({n_int, 4 * full * D, 2 * H * n * B});
    m[2].at.push_back({n_int, 4 * sparse * D, H * sparse * B});
    // phi(K)^T V: [d, n] x [n, d] and phi(Q) S: [n, d] x [d, d], 2 n d^2 FLOPs each, per head.
    m[3].at.push_back({n_int, H * 4 * n * d * d, H * d * d * B});
    m[4].at.push_back({n_int, 4 * local * D, H * local * B});
  }
  return m;
}

const std::vector<KvModel>& kv_presets() {
  // Layers, key/value heads and head dim from each model's paper or released config.json.
  static const std::vector<KvModel> presets = {
      {"gpt2-small", 12, 12, 64, "Radford et al. 2019; HF gpt2 config: n_layer 12, n_head 12, n_embd 768"},
      {"gpt2-medium", 24, 16, 64, "HF gpt2-medium config: n_layer 24, n_head 16, n_embd 1024"},
      {"llama-7b", 32, 32, 128, "Touvron et al. 2023, arXiv 2302.13971, Table 2: 32 layers, 32 heads, dim 4096"},
      {"llama-2-7b", 32, 32, 128, "Touvron et al. 2023, arXiv 2307.09288; HF config: 32 layers, 32 heads, hidden 4096"},
      {"llama-3-8b", 32, 8, 128, "Meta Llama 3 8B config: 32 layers, 32 heads, num_key_value_heads 8 (GQA), hidden 4096"},
      {"mistral-7b", 32, 8, 128,
       "Jiang et al. 2023, arXiv 2310.06825, Table 1: 32 layers, 32 heads, 8 kv heads, head_dim 128, window 4096. "
       "v0.1 keeps a rolling buffer of the last 4096 tokens (section 2); v0.2 and later have no sliding window "
       "(their release notes) and cache every token",
       4096},
  };
  return presets;
}

const KvModel& kv_preset(const std::string& name) {
  std::string names;
  for (const KvModel& m : kv_presets()) {
    if (m.name == name) return m;
    names += (names.empty() ? "" : ", ") + m.name;
  }
  throw InputError("--model: unknown model '" + name + "' (known: " + names + ")");
}

std::uint64_t kv_cache_bytes(const KvModel& m, std::size_t tokens, std::size_t dtype_bytes) {
  if (m.layers == 0 || m.kv_heads == 0 || m.head_dim == 0 || tokens == 0) {
    throw InputError("KV cache: layers, kv heads, head dim and tokens must be >= 1");
  }
  return fit64(u128(2) * m.layers * m.kv_heads * m.head_dim * tokens * dtype_bytes, "KV cache bytes");
}

std::uint64_t kv_rolling_buffer_bytes(const KvModel& m, std::size_t tokens, std::size_t dtype_bytes) {
  if (m.window == 0) throw InputError("KV cache: a rolling buffer needs a window >= 1");
  return kv_cache_bytes(m, std::min(tokens, m.window), dtype_bytes);
}

KvClaimCheck tutorial_kv_claim_check() {
  KvClaimCheck c;
  c.actual = kv_preset("llama-7b");
  c.claimed = c.actual;
  c.claimed.layers = 24;  // the tutorial's "24 层，32 头，d_head=128，seq_len=2048"
  c.claimed.source = "a widely shared KV-cache tutorial's LLaMA-7B example (\"24 层，32 头，d_head=128\")";
  c.tokens = 2048;
  c.dtype_bytes = 2;
  c.claimed_bytes = kv_cache_bytes(c.claimed, c.tokens, c.dtype_bytes);
  c.actual_bytes = kv_cache_bytes(c.actual, c.tokens, c.dtype_bytes);
  return c;
}

std::vector<LayerTypeRow> layer_type_table(std::size_t n, std::size_t d, std::size_t k, std::size_t r) {
  const double N = double(n), D = double(d), K = double(std::max<std::size_t>(k, 2)), R = double(std::max<std::size_t>(r, 1));
  // The smallest whole number of dilated layers whose receptive field k^L covers n positions.
  double dilated = 0;
  for (double field = 1; field < N; field *= K) ++dilated;
  return {{"self-attention", "O(n^2 d)", "1", N * N * D, 1, 1},
          {"recurrent", "O(n d^2)", "n", N * D * D, N, N},
          {"convolutional, contiguous", "O(k n d^2)", "n / k", double(k) * N * D * D, 1, std::ceil(N / K)},
          {"convolutional, dilated", "O(k n d^2)", "log_k n", double(k) * N * D * D, 1, dilated},
          {"self-attention, restricted to r", "O(r n d)", "n / r", R * N * D, 1, std::ceil(N / R)}};
}

ComplexityReport run_complexity(const ComplexityConfig& config) {
  if (config.ns.empty()) throw InputError("--n: expected at least one sequence length");
  ComplexityReport r;
  r.config = config;
  for (std::size_t n : config.ns)
    r.rows.push_back(count_attention(n, config.d_model, config.heads, config.causal, config.dtype_bytes));
  r.crossover = crossover_length(config.d_model, config.heads, config.causal);
  r.layer_types = layer_type_table(config.ns.back(), config.d_model, config.kernel, config.window);
  r.methods = method_table(config.ns, config.d_model, config.heads, config.window, config.dtype_bytes, config.causal);
  std::vector<KvModel> models;
  if (config.models.empty()) {
    if (config.list_presets) models = kv_presets();
  } else {
    for (const std::string& name : config.models) models.push_back(kv_preset(name));
  }
  models.insert(models.end(), config.custom.begin(), config.custom.end());
  for (const KvModel& m : models) r.kv_cache.emplace_back(m, kv_cache_bytes(m, config.tokens, config.dtype_bytes));
  r.kv_claim = tutorial_kv_claim_check();
  return r;
}

Json complexity_json(const ComplexityReport& r) {
  Json rows = Json::array();
  for (const ComplexityRow& x : r.rows) {
    const AttentionFlops& f = x.flops;
    rows.push_back({{"n", x.n},
                    {"d_model", x.d_model},
                    {"heads", x.heads},
                    {"causal", x.causal},
                    {"attention_elements", x.attention_elements},
                    {"flops",
                     {{"qkv_proj", f.qkv_proj}, {"scores", f.scores}, {"softmax", f.softmax},
                      {"weighted_sum", f.weighted_sum}, {"out_proj", f.out_proj}, {"total", f.total}}},
                    {"memory_bytes", {{"scores_naive", x.scores_naive_bytes}, {"tiled_extra", x.tiled_extra_bytes}}},
                    {"dtype_bytes", x.dtype_bytes}});
  }
  Json kv = Json::array();
  for (const auto& [m, bytes] : r.kv_cache) {
    kv.push_back({{"model", m.name}, {"layers", m.layers}, {"kv_heads", m.kv_heads}, {"head_dim", m.head_dim},
                  {"tokens", r.config.tokens}, {"dtype_bytes", r.config.dtype_bytes}, {"bytes", bytes},
                  {"window", m.window ? Json(m.window) : Json(nullptr)},
                  {"rolling_buffer_bytes",
                   m.window ? Json(kv_rolling_buffer_bytes(m, r.config.tokens, r.config.dtype_bytes)) : Json(nullptr)},
                  {"source", m.source}});
  }
  Json methods = Json::array();
  for (const MethodCost& m : r.methods) {
    Json at = Json::array();
    for (const MethodAt& a : m.at) at.push_back({{"n", a.n}, {"flops", a.flops}, {"memory_bytes", a.memory_bytes}});
    methods.push_back({{"name", m.name}, {"time", m.time}, {"memory", m.memory}, {"idea", m.idea},
                       {"source", m.source}, {"at", at}});
  }
  Json layers = Json::array();
  for (const LayerTypeRow& l : r.layer_types)
    layers.push_back({{"layer", l.layer}, {"complexity", l.complexity}, {"operations", l.operations},
                      {"sequential", l.sequential}, {"max_path_length", l.max_path}, {"path_formula", l.path_formula}});
  const KvClaimCheck& c = r.kv_claim;
  return {
      {"layer_types",
       {{"source", "Vaswani et al. 2017, Table 1, computed for n = " + std::to_string(r.config.ns.back()) +
                       ", d = " + std::to_string(r.config.d_model) + ", k = " + std::to_string(r.config.kernel) +
                       ", r = " + std::to_string(r.config.window)},
        {"table", layers}}},
      {"convention", flops_convention()},
      {"rows", rows},
      {"kv_cache", kv},
      {"kv_cache_formula", "bytes = 2 (K and V) x layers x kv_heads x head_dim x tokens x dtype_bytes, batch 1; "
                           "rolling_buffer_bytes: the same with min(tokens, window) tokens"},
      {"crossover",
       {{"matmuls", r.crossover.matmuls},
        {"matmuls_without_out_proj", r.crossover.matmuls_without_out},
        {"with_softmax", r.crossover.with_softmax},
        {"meaning", "n at which the n^2 terms equal the n d_model^2 terms"}}},
      {"methods",
       {{"convention", "attention core only (Q K^T and P V FLOPs, score memory); projections excluded; "
                       "window = " + std::to_string(r.config.window) +
                       (r.config.causal ? "; causal: standard and flash halved, sparse and sliding window count "
                                          "the earlier keys each query sees"
                                        : "")},
        {"table", methods}}},
      {"kv_cache_claim_check",
       {{"claim", "a teaching note gives LLaMA-7B 24 layers"}, {"model", c.actual.name}, {"tokens", c.tokens}, {"dtype_bytes", c.dtype_bytes},
        {"claimed_layers", c.claimed.layers}, {"claimed_bytes", c.claimed_bytes},
        {"actual_layers", c.actual.layers}, {"actual_bytes", c.actual_bytes}}},
  };
}

}  // namespace attn
