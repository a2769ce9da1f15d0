// Attention sinks and grouped-query heads measured on a Llama-family model (decoder_lessons.hpp).
#include "attn/lessons/models/decoder_lessons.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attn/engine/core/error.hpp"

namespace attn {
namespace {

// softmax of the last row of logits, in float64.
std::vector<double> last_distribution(const Tensor2& logits) {
  const std::size_t last = logits.shape(0) - 1, V = logits.shape(1);
  double top = -std::numeric_limits<double>::infinity();
  for (std::size_t v = 0; v < V; ++v) top = std::max(top, double(logits(last, v)));
  std::vector<double> p(V);
  double sum = 0;
  for (std::size_t v = 0; v < V; ++v) sum += (p[v] = std::exp(double(logits(last, v)) - top));
  for (double& x : p) x /= sum;
  return p;
}

// KL(p || q) in nats; terms with p = 0 are 0.
double kl(const std::vector<double>& p, const std::vector<double>& q) {
  double d = 0;
  for (std::size_t v = 0; v < p.size(); ++v)
    if (p[v] > 0) d += p[v] * std::log(p[v] / q[v]);
  return std::max(d, 0.0);
}

// The last position's distribution with every layer under a window of `window` keys, the first
// `sinks` keys kept visible.
std::vector<double> windowed(const DecoderModel& model, const std::vector<std::int32_t>& ids, std::size_t window,
                             std::size_t sinks) {
  DecoderModel m = model;
  m.config.sliding_window = window;
  m.config.window_first_layer = 0;
  m.config.attention_sinks = sinks;
  return last_distribution(decoder_forward(m, ids).logits);
}

// Jensen-Shannon divergence of rows a and b (each sums to 1 over n entries), in nats.
double js(const float* a, const float* b, std::size_t n) {
  double d = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const double p = a[j], q = b[j], m = (p + q) / 2;
    if (p > 0) d += 0.5 * p * std::log(p / m);
    if (q > 0) d += 0.5 * q * std::log(q / m);
  }
  return std::max(d, 0.0);
}

}  // namespace

SinkLesson sink_lesson(const DecoderModel& model, const std::vector<std::int32_t>& ids, const DecoderForward& full,
                       std::size_t window) {
  const std::size_t n = ids.size();
  if (n < 3) throw InputError("attention sinks: need at least 3 tokens (a query past the first, a key to evict)");
  SinkLesson s;
  s.tokens = n;
  for (const Tensor3& a : full.attention) {
    std::vector<double> heads(a.shape(0), 0.0);
    for (std::size_t h = 0; h < a.shape(0); ++h) {
      for (std::size_t i = 1; i < n; ++i) heads[h] += a(h, i, 0);
      heads[h] /= double(n - 1);
    }
    s.first_token.push_back(heads);
  }
  for (std::size_t i = 1; i < n; ++i) s.uniform += 1.0 / double(i + 1) / double(n - 1);
  s.window = window ? window : std::max<std::size_t>(2, (n + 3) / 4);
  s.window = std::min(s.window, n - 1);  // the last query must lose key 0
  const std::vector<double> p = last_distribution(full.logits);
  s.kl_evicted = kl(p, windowed(model, ids, s.window, 0));
  s.kl_kept = kl(p, windowed(model, ids, s.window, 1));
  return s;
}

constexpr std::size_t kGqaRows = 64;

GqaLesson gqa_lesson(const DecoderConfig& c, const DecoderForward& full) {
  if (full.attention.empty() || full.attention[0].shape(1) < 2)
    throw InputError("grouped-query heads: need at least 2 tokens to compare attention rows");
  GqaLesson g;
  g.heads = c.heads, g.kv_heads = c.kv_heads, g.layers = c.layers, g.head_dim = c.head_dim;
  const std::size_t H = c.heads, group = c.heads / c.kv_heads, n = full.attention[0].shape(1);
  // Every query row up to kGqaRows, else kGqaRows rows evenly spread: H^2 / 2 pairs of rows of up
  // to n keys each per layer would otherwise take minutes on a 32-head model at n = 512.
  std::vector<std::size_t> rows;
  for (std::size_t r = 0; r < std::min(n, kGqaRows); ++r) rows.push_back(n <= kGqaRows ? r : r * (n - 1) / (kGqaRows - 1));
  double within = 0, across = 0;
  std::size_t n_within = 0, n_across = 0;
  for (const Tensor3& a : full.attention) {
    std::vector<std::vector<double>> d(H, std::vector<double>(H, 0.0));
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t k = h + 1; k < H; ++k) {
        for (std::size_t i : rows) d[h][k] += js(&a(h, i, 0), &a(k, i, 0), i + 1) / double(rows.size());
        d[k][h] = d[h][k];
        (h / group == k / group ? within : across) += d[h][k];
        ++(h / group == k / group ? n_within : n_across);
      }
    g.divergence.push_back(d);
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  g.within = n_within ? within / double(n_within) : nan;
  g.across = n_across ? across / double(n_across) : nan;
  const std::size_t per_head = 2 * c.layers * c.head_dim * 2;
  g.bytes_mha = per_head * c.heads, g.bytes_gqa = per_head * c.kv_heads, g.bytes_mqa = per_head;
  return g;
}

namespace {

// [H, n, n'] mean by distance: out[h][r] = mean over i >= r of q_i . k_{i-r} * scale.
std::vector<std::vector<double>> by_distance(const Tensor3& q, const Tensor3& k, double scale) {
  const std::size_t H = q.shape(0), n = q.shape(1), d = q.shape(2);
  std::vector<std::vector<double>> out(H, std::vector<double>(n, 0.0));
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t r = 0; r < n; ++r) {
      for (std::size_t i = r; i < n; ++i) {
        double dot = 0;
        for (std::size_t c = 0; c < d; ++c) dot += double(q(h, i, c)) * k(h, i - r, c);
        out[h][r] += dot * scale;
      }
      out[h][r] /= double(n - r);
    }
  return out;
}

// Mean over tokens of each rotate-half pair's length (dims f and f + d/2): [H][d/2].
std::vector<std::vector<double>> pair_lengths(const Tensor3& x) {
  const std::size_t H = x.shape(0), n = x.shape(1), half = x.shape(2) / 2;
  std::vector<std::vector<double>> out(H, std::vector<double>(half, 0.0));
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t f = 0; f < half; ++f) {
      for (std::size_t i = 0; i < n; ++i) out[h][f] += std::hypot(double(x(h, i, f)), double(x(h, i, f + half)));
      out[h][f] /= double(n);
    }
  return out;
}

}  // namespace

ModelRopeLesson model_rope_lesson(const DecoderConfig& c, const DecoderForward& full) {
  if (full.q_raw.size() != c.layers || full.q.size() != c.layers)
    throw InputError("RoPE lesson: the forward pass kept no q and k (decoder_forward with keep_qkv)");
  ModelRopeLesson r;
  r.frequencies = decoder_rope_frequencies(c);
  r.tokens = full.q[0].shape(1);
  const double scale = 1 / std::sqrt(double(c.head_dim));
  for (std::size_t l = 0; l < c.layers; ++l) {
    r.score_rotated.push_back(by_distance(full.q[l], full.k[l], scale));
    r.score_raw.push_back(by_distance(full.q_raw[l], full.k_raw[l], scale));
    const std::vector<std::vector<double>> q = pair_lengths(full.q_raw[l]), k = pair_lengths(full.k_raw[l]);
    std::vector<std::vector<double>> share(q.size());
    for (std::size_t h = 0; h < q.size(); ++h) {
      double sum = 0;
      for (std::size_t f = 0; f < q[h].size(); ++f) sum += q[h][f] * k[h][f];
      for (std::size_t f = 0; f < q[h].size(); ++f) share[h].push_back(sum > 0 ? q[h][f] * k[h][f] / sum : 0.0);
    }
    r.band_share.push_back(share);
  }
  return r;
}

Json model_rope_lesson_json(const ModelRopeLesson& r) {
  return {{"source", "Su et al. 2021, RoFormer (rotate-half pairs); Barbero et al. 2024, arXiv 2410.06205"},
          {"frequencies", r.frequencies},
          {"frequencies_meaning", "theta_f, radians per position, of pair f = dims (f, f + d/2)"},
          {"score_by_distance", r.score_rotated},
          {"score_by_distance_without_rope", r.score_raw},
          {"score_meaning", "[layer][head][r]: mean over queries i >= r of q_i . k_(i-r) / sqrt(d)"},
          {"band_share", r.band_share},
          {"band_share_meaning", "[layer][head][f]: mean |q_f| x mean |k_f| of pair f over its sum over f"}};
}

Json sink_lesson_json(const SinkLesson& s) {
  return {{"source", "Xiao et al. 2023, Efficient Streaming Language Models with Attention Sinks, arXiv 2309.17453"},
          {"tokens", s.tokens},
          {"first_token_weight", s.first_token},
          {"first_token_weight_meaning", "[layer][head]: mean over queries 1..n-1 of the attention weight on token 0"},
          {"uniform_head_weight", s.uniform},
          {"window", s.window},
          {"kl_full_vs_window_evicted", s.kl_evicted},
          {"kl_full_vs_window_with_sink", s.kl_kept},
          {"kl_meaning", "KL(full || windowed) of the last position's next-token distribution, nats; every layer under "
                         "a sliding window of `window` keys, token 0 evicted or kept visible as a sink"}};
}

Json gqa_lesson_json(const GqaLesson& g) {
  auto number_or_null = [](double x) { return std::isnan(x) ? Json(nullptr) : Json(x); };
  return {{"heads", g.heads},
          {"kv_heads", g.kv_heads},
          {"query_heads_per_kv_head", g.heads / g.kv_heads},
          {"js_divergence", g.divergence},
          {"js_divergence_meaning", "[layer][h][g]: mean over query rows of the Jensen-Shannon divergence (nats) "
                                    "between query heads h and g's attention rows"},
          {"mean_js_sharing_a_kv_head", number_or_null(g.within)},
          {"mean_js_not_sharing", number_or_null(g.across)},
          {"kv_cache_bytes_per_token_bf16", {{"mha", g.bytes_mha}, {"this_model", g.bytes_gqa}, {"mqa", g.bytes_mqa}}}};
}

}  // namespace attn
