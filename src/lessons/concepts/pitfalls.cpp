#include "attn/lessons/concepts/pitfalls.hpp"

#include <cmath>

#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/mask.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/io/number_format.hpp"
#include "attn/engine/attention/attention.hpp"
#include "attn/engine/attention/softmax.hpp"
#include "attn/lessons/concepts/softmax_stats.hpp"
#include "attn/lessons/concepts/temperature.hpp"

namespace attn {
namespace {

// A one-wide head [1, n, 1] holding the values, so that with q = [[1]] and scale 1 the scores
// are exactly these numbers: the examples below can be read (and checked) by hand.
Tensor3 column(const std::vector<float>& values) {
  Tensor3 t = Tensor3::from_shape({1, values.size(), 1});
  std::copy(values.begin(), values.end(), t.begin());
  return t;
}

Mask3 mask_row(const std::vector<bool>& allowed) {
  Mask3 m = Mask3::from_shape({1, 1, allowed.size()});
  std::copy(allowed.begin(), allowed.end(), m.begin());
  return m;
}

// The engine's weights for one query (score = k_j) under a mask: the right way.
Tensor2 engine_weights(const std::vector<float>& scores, const Mask3& allowed) {
  SdpaOptions o;
  o.scale = 1.0;
  const SdpaResult r = attention(column({1.0f}), column(scores), column(scores), &allowed, o);
  return xt::view(r.weights, 0, xt::all(), xt::all());
}

Mask2 as_mask(const Mask3& one_head) { return xt::view(one_head, 0, xt::all(), xt::all()); }

Tensor2 as_row(const std::vector<double>& p) {
  Tensor2 t = Tensor2::from_shape({1, p.size()});
  for (std::size_t j = 0; j < p.size(); ++j) t(0, j) = static_cast<float>(p[j]);
  return t;
}

std::vector<std::string> key_labels(std::size_t n, std::size_t special = SIZE_MAX, const std::string& name = "") {
  std::vector<std::string> labels;
  for (std::size_t j = 0; j < n; ++j) {
    std::string label = "k";  // appended, not "k" + ...: g++ 12 -O3 warns falsely (-Wrestrict) on that
    label += std::to_string(j);
    labels.push_back(j == special ? name : label);
  }
  return labels;
}

}  // namespace

Pitfall pitfall_mask_polarity() {
  // Keys k0..k2 are words, k3 is padding. Scores [2, 1, 0.5, 3].
  const std::vector<float> scores = {2.0f, 1.0f, 0.5f, 3.0f};
  Pitfall p{"mask-polarity", "Mask polarity: 1 = attend or 1 = block?",
            "a key_padding_mask (1 = padding, nn.MultiheadAttention) passed where 1 = may attend is expected",
            "allowed = 1 for the words, 0 for the padding (PyTorch SDPA's boolean attn_mask)",
            "Check the polarity of every mask you pass: PyTorch SDPA's boolean attn_mask means True = take part, "
            "nn.MultiheadAttention's key_padding_mask and boolean attn_mask mean True = ignore.",
            "tutorials disagree: masked_fill(mask.bool(), -1e9) blocks where mask = 1, masked_fill(mask == 0, -1e9) where mask = 0",
            {}, {}};
  const Tensor2 wrong = engine_weights(scores, mask_row({false, false, false, true}));
  const Tensor2 right = engine_weights(scores, mask_row({true, true, true, false}));
  p.tables.push_back({"weights of one query", {"query"}, key_labels(4, 3, "pad"), wrong, right});
  p.tables.back().wrong_allowed = as_mask(mask_row({false, false, false, true}));
  p.tables.back().right_allowed = as_mask(mask_row({true, true, true, false}));
  p.facts.push_back({"weight on the padding key", wrong(0, 3), right(0, 3)});
  return p;
}

Pitfall pitfall_causal_alignment() {
  // Decoding with a KV cache: 2 new queries, 4 keys (2 cached + 2 new). Equal scores, so each
  // weight is 1 / (number of keys the query may see).
  const std::size_t Lq = 2, Lk = 4;
  Tensor3 q = xt::zeros<float>({std::size_t{1}, Lq, std::size_t{1}});
  const Tensor3 k = xt::zeros<float>({std::size_t{1}, Lk, std::size_t{1}});
  Mask3 top_left = Mask3::from_shape({1, Lq, Lk});
  for (std::size_t i = 0; i < Lq; ++i)
    for (std::size_t j = 0; j < Lk; ++j) top_left(0, i, j) = j <= i;  // torch.ones(Lq, Lk).tril()
  SdpaOptions causal;
  causal.causal = true;  // attn-cli: bottom-right, j <= i + Lk - Lq (mask.hpp)
  const SdpaResult wrong = attention(q, k, k, &top_left);
  const SdpaResult right = attention(q, k, k, nullptr, causal);
  Pitfall p{"causal-alignment", "Causal mask with Lq != Lk: top-left or bottom-right?",
            "top-left: query i sees keys j <= i (torch.ones(Lq, Lk).tril(), SDPA's is_causal=True)",
            "bottom-right: query i sees keys j <= i + Lk - Lq (FlashAttention >= 2.1, causal_lower_right)",
            "With a KV cache the queries are the LAST Lq positions: align the causal mask bottom-right, or the "
            "newest tokens cannot see themselves or the cache.",
            "the usual torch.triu(ones(L, L)) causal mask: square only, silent on Lq != Lk", {}, {}};
  p.tables.push_back({"weights, 2 new queries against 4 keys (2 cached)", {"q0 (pos 2)", "q1 (pos 3)"},
                      key_labels(4), xt::view(wrong.weights, 0, xt::all(), xt::all()),
                      xt::view(right.weights, 0, xt::all(), xt::all())});
  p.tables.back().wrong_allowed = as_mask(top_left);
  p.tables.back().right_allowed = causal_allowed(Lq, Lk);
  auto seen = [&](const SdpaResult& r, std::size_t i) {
    double n = 0;
    for (std::size_t j = 0; j < Lk; ++j) n += r.weights(0, i, j) > 0;
    return n;
  };
  p.facts.push_back({"keys seen by the last query", seen(wrong, 1), seen(right, 1)});
  p.facts.push_back({"keys seen by the first query", seen(wrong, 0), seen(right, 0)});
  return p;
}

Pitfall pitfall_fully_masked_row() {
  // A padding query whose keys are all blocked; values v0 = (1, 0), v1 = (0, 1), v2 = (3, 3).
  const std::vector<float> scores = {2.0f, 1.0f, 0.5f};
  const double v[3][2] = {{1, 0}, {0, 1}, {3, 3}};
  std::vector<double> fill(3, -1e9);  // masked_fill(mask, -1e9): every score replaced
  softmax_row_inplace(fill.data(), fill.size());
  const Tensor2 right = engine_weights(scores, mask_row({false, false, false}));  // exact -inf
  Tensor2 wrong_out = xt::zeros<float>({std::size_t{1}, std::size_t{2}});
  Tensor2 right_out = xt::zeros<float>({std::size_t{1}, std::size_t{2}});
  for (std::size_t c = 0; c < 2; ++c)
    for (std::size_t j = 0; j < 3; ++j) {
      wrong_out(0, c) += static_cast<float>(fill[j] * v[j][c]);
      right_out(0, c) += static_cast<float>(right(0, j) * v[j][c]);
    }
  // With at least one visible key, -1e9 and -inf agree: exp(-1e9 - m) underflows to exactly 0.
  std::vector<double> partial = {2.0, -1e9, 0.5};
  softmax_row_inplace(partial.data(), partial.size());
  const Tensor2 partial_right = engine_weights(scores, mask_row({true, false, true}));
  Pitfall p{"fully-masked-row", "-1e9 instead of -inf on a row whose keys are all masked",
            "masked_fill(mask, -1e9): the row becomes softmax([-1e9, -1e9, -1e9])",
            "exact -inf, and a fully masked row attends to nothing (zero weights, zero output)",
            "-1e9 only looks safe: on a fully masked row it gives uniform attention to the padding, averaging "
            "garbage into the output. Use -inf and handle the empty row (attn-cli: zeros, never NaN).",
            "tutorials' mask_value = -1e9 (\"避免使用 -inf\", avoid -inf) and masked_fill(mask == 0, -1e9)", {}, {}};
  p.tables.push_back({"weights of a padding query (every key masked)", {"query"}, key_labels(3), as_row(fill), right});
  p.tables.back().right_allowed = as_mask(mask_row({false, false, false}));  // -1e9 masks nothing exactly
  p.tables.push_back({"its output (v0 = (1, 0), v1 = (0, 1), v2 = (3, 3))", {"query"}, {"out0", "out1"},
                      wrong_out, right_out});
  p.facts.push_back({"sum of the row's weights", fill[0] + fill[1] + fill[2], double(xt::sum(right)())});
  p.facts.push_back({"partially masked row: weight on the masked key", partial[1], partial_right(0, 1)});
  return p;
}

Pitfall pitfall_eps_after_softmax() {
  // The first query of a causal row of 4 keys: only k0 is visible. The "robust" recipe's step:
  // weights = weights + eps; weights = weights / weights.sum().
  const double eps = 1e-8;
  const std::size_t n = 4;
  const Tensor2 right = engine_weights({0.5f, 1.0f, 2.0f, 3.0f}, mask_row({true, false, false, false}));
  std::vector<double> wrong(n);
  double sum = 0;
  for (std::size_t j = 0; j < n; ++j) sum += (wrong[j] = double(right(0, j)) + eps);
  for (double& w : wrong) w /= sum;
  Pitfall p{"eps-after-softmax", "Adding eps to the weights after softmax",
            "weights + eps, then renormalise (eps = 1e-8)",
            "nothing: softmax's largest term is exp(0) = 1, its sum is >= 1, there is nothing to guard",
            "eps after softmax gives every masked key weight eps / (1 + n eps): a causal model sees the future, "
            "a little, and gradients reach keys that must not matter.",
            "a \"robust attention\" recipe (attention_weights + eps)", {}, {}};
  p.tables.push_back({"weights of the first query of a causal row", {"query"}, key_labels(n), as_row(wrong), right});
  p.tables.back().right_allowed = as_mask(mask_row({true, false, false, false}));  // + eps unmasks them
  // At 3 decimals the wrong row reads 0.000 on the future keys: divided by eps, the leak shows.
  Tensor2 wrong_leak = Tensor2::from_shape({1, n - 1}), right_leak = Tensor2::from_shape({1, n - 1});
  std::vector<std::string> future = key_labels(n);
  future.erase(future.begin());
  for (std::size_t j = 1; j < n; ++j) {
    wrong_leak(0, j - 1) = static_cast<float>(wrong[j] / eps);
    right_leak(0, j - 1) = static_cast<float>(double(right(0, j)) / eps);
  }
  p.tables.push_back({"the future keys' weights divided by eps = 1e-8 (the wrong ones read 0.000 above)", {"query"},
                      future, wrong_leak, right_leak});
  p.facts.push_back({"weight on each masked (future) key", wrong[1], right(0, 1)});
  p.facts.push_back({"total weight on masked keys", wrong[1] + wrong[2] + wrong[3],
                     double(right(0, 1) + right(0, 2) + right(0, 3))});
  return p;
}

Pitfall pitfall_missing_scale(std::uint64_t seed) {
  // One query, 8 keys, d_k = 512, entries N(0,1): the scores have standard deviation sqrt(512).
  const std::size_t d = 512, n = 8;
  Rng rng(hash_with_seed("pitfall missing-scale", seed));
  std::vector<double> q(d), scores(n);
  for (double& x : q) x = rng.normal();
  for (double& s : scores) {
    s = 0;
    for (std::size_t c = 0; c < d; ++c) s += q[c] * rng.normal();
  }
  const std::vector<double> wrong = softmax_of(scores), right = softmax_of(scores, 1.0 / std::sqrt(double(d)));
  Pitfall p{"missing-scale", "Forgetting the 1/sqrt(d_k) scale",
            "softmax(q.k) with d_k = 512", "softmax(q.k / sqrt(d_k))",
            "Without 1/sqrt(d_k) the scores spread like sqrt(d_k) (about " + std::to_string(int(std::lround(std::sqrt(double(d))))) +
                " here): softmax saturates on one key and its Jacobian, the gradient's only path, vanishes "
                "(see attn-cli variance).",
            "Vaswani et al. 2017, section 3.2.1 and its footnote 4 (the argument; this is the measurement)", {}, {}};
  p.tables.push_back({"weights of one query, 8 random keys, d_k = 512", {"query"}, key_labels(n), as_row(wrong), as_row(right)});
  p.facts.push_back({"max weight", max_weight(wrong), max_weight(right)});
  p.facts.push_back({"entropy (nats)", entropy_nats(wrong), entropy_nats(right)});
  // From the scores, not the weights: the wrong row's largest weight rounds to 1.0 in double, and
  // p (1 - p) computed from it would drop the diagonal (a 13 % error in the norm).
  p.facts.push_back({"Jacobian Frobenius norm", softmax_jacobian_frobenius_of_scores(scores),
                     softmax_jacobian_frobenius_of_scores(scores, 1.0 / std::sqrt(double(d)))});
  return p;
}

Pitfall pitfall_temperature_direction() {
  // Someone wants sharper attention and, following a tutorial, raises T to 2; lowering it to 0.5
  // is what sharpens.
  const TemperatureResult r = run_temperature(kDefaultScores, {0.5, 1.0, 2.0});
  const TemperaturePoint &sharp = r.points[0], &start = r.points[1], &flat = r.points[2];
  std::vector<std::string> cols;
  for (double s : kDefaultScores) cols.push_back("s=" + format_g(s));
  Pitfall p{"temperature-direction", "Which way does temperature go?",
            "to sharpen attention, raise T (T = 2)", "to sharpen attention, lower T (T = 0.5)",
            "softmax(s / T): a larger T flattens (entropy rises, dH/dT = Var_p(s) / T^3 > 0), a smaller T sharpens.",
            "a tutorial's \"T越大 ... 让高值更多权重\" (larger T, more weight to high values: backwards)", {}, {}};
  auto two_rows = [&](const TemperaturePoint& changed) {
    Tensor2 t = Tensor2::from_shape({2, kDefaultScores.size()});
    for (std::size_t j = 0; j < kDefaultScores.size(); ++j) {
      t(0, j) = static_cast<float>(start.weights[j]);
      t(1, j) = static_cast<float>(changed.weights[j]);
    }
    return t;
  };
  // The panel titles name the goal each T is judged by: "wrong" alone does not say wrong for what.
  p.tables.push_back({"weights of one row of scores, from T = 1 to the new T (goal: sharper attention)",
                      {"T = 1 (start)", "new T"}, cols, two_rows(flat), two_rows(sharp),
                      "✗ T = 2 flattens: not the goal", "✓ T = 0.5 sharpens: the goal"});
  p.facts.push_back({"new T", flat.temperature, sharp.temperature});
  p.facts.push_back({"max weight (" + format_g(start.max_weight, 4) + " at T = 1)", flat.max_weight, sharp.max_weight});
  p.facts.push_back({"entropy (nats; " + format_g(start.entropy, 4) + " at T = 1)", flat.entropy, sharp.entropy});
  return p;
}

std::vector<Pitfall> all_pitfalls(std::uint64_t seed) {
  return {pitfall_mask_polarity(),     pitfall_causal_alignment(),   pitfall_fully_masked_row(),
          pitfall_eps_after_softmax(), pitfall_missing_scale(seed),  pitfall_temperature_direction(),
          pitfall_rope_half_width(),   pitfall_mask_value_float16(), pitfall_float_mask_sdpa(),
          pitfall_paper_dk(),          pitfall_softmax_cost(),       pitfall_mha_bias(),
          pitfall_flash_memory(),      pitfall_mb_mib()};
}

Pitfall find_pitfall(const std::string& id, std::uint64_t seed) {
  std::string ids;
  for (Pitfall& p : all_pitfalls(seed)) {
    if (p.id == id) return p;
    ids += (ids.empty() ? "" : ", ") + p.id;
  }
  throw InputError("unknown pitfall '" + id + "' (known: " + ids + ")");
}

Json pitfalls_json(const std::vector<Pitfall>& pitfalls) {
  Json out = Json::array();
  for (const Pitfall& p : pitfalls) {
    Json tables = Json::array(), facts = Json::array();
    for (const PitfallTable& t : p.tables) {
      tables.push_back({{"caption", t.caption}, {"rows", t.row_labels}, {"columns", t.col_labels},
                        {"wrong", to_json(t.wrong)}, {"right", to_json(t.right)}});
    }
    for (const PitfallFact& f : p.facts) facts.push_back({{"name", f.name}, {"wrong", f.wrong}, {"right", f.right}});
    out.push_back({{"id", p.id}, {"title", p.title}, {"wrong_way", p.wrong_way}, {"right_way", p.right_way},
                   {"lesson", p.lesson}, {"seen_in", p.seen_in}, {"tables", tables}, {"facts", facts}});
  }
  return {{"pitfalls", out}};
}

}  // namespace attn
