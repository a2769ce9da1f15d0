#include "attn/lessons/concepts/explain.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/linear.hpp"
#include "attn/engine/attention/mask.hpp"
#include "attn/engine/attention/mha.hpp"
#include "attn/engine/attention/attention.hpp"
#include "attn/engine/attention/softmax.hpp"
#include "attn/engine/text/tokenize.hpp"

namespace attn {
namespace {

Tensor3 as_head(const Tensor2& t) { return Tensor3(xt::expand_dims(t, 0)); }

constexpr double kInf = std::numeric_limits<double>::infinity();

// softmax of one row in float64, the max subtracted; -inf entries get 0.
std::vector<double> softmax64(const std::vector<double>& s) {
  double m = -kInf;
  for (double x : s) m = std::max(m, x);
  std::vector<double> p(s.size(), 0.0);
  if (m == -kInf) return p;
  double z = 0;
  for (std::size_t j = 0; j < s.size(); ++j) z += (p[j] = std::exp(s[j] - m));
  for (double& x : p) x /= z;
  return p;
}

std::vector<double> row64(const Tensor2& t, std::size_t i) {
  std::vector<double> r(t.shape(1));
  for (std::size_t j = 0; j < r.size(); ++j) r[j] = t(i, j);
  return r;
}

// The recurrence of FlashAttention's forward on one row, one key at a time (tile_math.hpp does it a
// tile at a time): m' = max(m, s_j); l' = l e^(m - m') + e^(s_j - m'); o' = o e^(m - m') + e^(s_j - m') v_j.
OnlineTrace online_softmax_row(const ExplainResult& r, std::size_t i) {
  const std::size_t L = r.masked.shape(1), d = r.v.shape(1);
  OnlineTrace t;
  t.row = i;
  double m = -kInf, l = 0;
  std::vector<double> o(d, 0.0);
  for (std::size_t j = 0; j < L; ++j) {
    OnlineStep step;
    step.key = j;
    step.score = r.scaled(i, j);
    step.masked = !r.allowed(i, j);
    if (!step.masked) {
      const double m_new = std::max(m, step.score);
      step.rescale = m == -kInf ? 0.0 : std::exp(m - m_new);  // nothing to rescale before the first key
      const double e = std::exp(step.score - m_new);
      l = l * step.rescale + e;
      for (std::size_t c = 0; c < d; ++c) o[c] = o[c] * step.rescale + e * double(r.v(j, c));
      m = m_new;
    }
    step.m = m;
    step.l = l;
    step.o = o;
    t.steps.push_back(std::move(step));
  }
  for (std::size_t j = 0; j < L; ++j) {
    const double w = r.allowed(i, j) ? std::exp(double(r.scaled(i, j)) - m) / l : 0.0;
    t.weights.push_back(w);
    t.max_weight_diff = std::max(t.max_weight_diff, std::fabs(w - double(r.weights(i, j))));
  }
  for (std::size_t c = 0; c < d; ++c) {
    t.output.push_back(o[c] / l);
    t.max_output_diff = std::max(t.max_output_diff, std::fabs(o[c] / l - double(r.output(i, c))));
  }
  return t;
}

JacobianLesson softmax_jacobian(const ExplainResult& r, std::size_t i, std::size_t target) {
  const std::vector<double> s = row64(r.masked, i);
  const std::vector<double> p = softmax64(s);
  const std::size_t L = s.size();
  JacobianLesson J;
  J.row = i;
  J.target = target;
  J.jacobian = Tensor2::from_shape({L, L});
  const double h = 1e-5;
  for (std::size_t k = 0; k < L; ++k)
    if (std::isinf(s[k]) && s[k] < 0) J.masked_keys.push_back(k);
  for (std::size_t k = 0; k < L; ++k) {
    // Column k by central differences: nudge score k (a masked score stays -inf: no column).
    std::vector<double> up = s, down = s;
    up[k] += h;
    down[k] -= h;
    const std::vector<double> pu = softmax64(up), pd = softmax64(down);
    for (std::size_t j = 0; j < L; ++j) {
      const double exact = (j == k ? p[j] : 0.0) - p[j] * p[k];
      J.jacobian(j, k) = static_cast<float>(exact);
      const double fd = std::isinf(s[k]) ? 0.0 : (pu[j] - pd[j]) / (2 * h);
      J.max_fd_diff = std::max(J.max_fd_diff, std::fabs(exact - fd));
    }
    const double ce = (k == target ? p[k] - 1.0 : p[k]);
    J.grad_ce.push_back(ce);
    const double fd_ce = std::isinf(s[k]) ? 0.0 : (-std::log(pu[target]) + std::log(pd[target])) / (2 * h);
    J.max_ce_fd_diff = std::max(J.max_ce_fd_diff, std::fabs(ce - fd_ce));
  }
  for (std::size_t j = 0; j < L; ++j) {
    double sum = 0;
    for (std::size_t k = 0; k < L; ++k) {
      sum += (j == k ? p[j] : 0.0) - p[j] * p[k];
      J.max_asymmetry = std::max(J.max_asymmetry, std::fabs(double(J.jacobian(j, k)) - double(J.jacobian(k, j))));
    }
    J.max_row_sum = std::max(J.max_row_sum, std::fabs(sum));
  }
  return J;
}

double max_asymmetry(const std::vector<std::vector<double>>& m) {
  double a = 0;
  for (std::size_t i = 0; i < m.size(); ++i)
    for (std::size_t j = 0; j < m.size(); ++j) a = std::max(a, std::fabs(m[i][j] - m[j][i]));
  return a;
}

// Scores of every pair without a mask, in float64: a_i . b_j * scale.
std::vector<std::vector<double>> all_scores(const Tensor2& a, const Tensor2& b, double scale) {
  std::vector<std::vector<double>> s(a.shape(0), std::vector<double>(b.shape(0)));
  for (std::size_t i = 0; i < a.shape(0); ++i)
    for (std::size_t j = 0; j < b.shape(0); ++j) {
      double dot = 0;
      for (std::size_t c = 0; c < a.shape(1); ++c) dot += double(a(i, c)) * double(b(j, c));
      s[i][j] = dot * scale;
    }
  return s;
}

SymmetryLesson symmetry_lesson(const ExplainResult& r) {
  SymmetryLesson y;
  std::vector<std::vector<double>> bare = all_scores(r.x, r.x, r.scale);
  y.scores_no_projection = max_asymmetry(bare);
  y.scores_with_projection = max_asymmetry(all_scores(r.q, r.k, r.scale));
  for (auto& row : bare) row = softmax64(row);
  y.weights_no_projection = max_asymmetry(bare);
  return y;
}

}  // namespace

ExplainResult explain_attention(const ExplainConfig& config) {
  if (config.d_model == 0 || config.d_model > 64) throw InputError("--d-model: expected 1 to 64");
  const std::vector<Token> tokens = tokenize(config.sentence, config.max_tokens);
  ExplainResult r;
  r.config = config;
  r.tokens = token_texts(tokens);
  const std::size_t L = tokens.size(), D = config.d_model;

  // Inputs, drawn like `attn-cli demo`: embeddings by (seed, token), projections by seed + 1.
  r.x = embed_tokens(tokens, D, config.seed);
  const MhaWeights w = init_mha_weights(D, 1, 1, config.seed + 1);
  r.q = linear(r.x, w.w_q);
  r.k = linear(r.x, w.w_k);
  r.v = linear(r.x, w.w_v);

  // Step 1: S = Q K^T. linear(Q, K) computes Q K^T: torch.nn.Linear's y = x W^T with W = K.
  r.scores = linear(r.q, r.k);
  // Step 2: divide by sqrt(d).
  r.scale = resolved_scale(std::nullopt, D);
  r.scaled = r.scores * static_cast<float>(r.scale);
  // Step 3: blocked pairs become -inf (never -1e9: see softmax.hpp and `attn-cli pitfalls`).
  r.allowed = config.causal ? causal_allowed(L, L) : Mask2(xt::ones<bool>({L, L}));
  r.masked = r.scaled;
  for (std::size_t i = 0; i < L; ++i)
    for (std::size_t j = 0; j < L; ++j)
      if (!r.allowed(i, j)) r.masked(i, j) = -std::numeric_limits<float>::infinity();
  // Step 4: subtract each row's largest allowed score. softmax(s) = softmax(s - c) for any c; with
  // c = max every exp is at most 1, so nothing overflows (exp(89) already does in float32).
  r.row_max = Tensor1::from_shape({L});
  r.shifted = r.masked;
  for (std::size_t i = 0; i < L; ++i) {
    float m = -std::numeric_limits<float>::infinity();
    for (std::size_t j = 0; j < L; ++j) m = std::max(m, r.masked(i, j));
    r.row_max(i) = m;
    for (std::size_t j = 0; j < L; ++j) r.shifted(i, j) -= m;
  }
  // Step 5: softmax of each row.
  r.weights = softmax_rows(r.masked);
  r.row_sums = Tensor1::from_shape({L});
  for (std::size_t i = 0; i < L; ++i) {
    double sum = 0;
    for (std::size_t j = 0; j < L; ++j) sum += r.weights(i, j);
    r.row_sums(i) = static_cast<float>(sum);
  }
  // Step 6: O = P V, again as a Linear: P (V^T)^T.
  r.output = linear(r.weights, Tensor2(xt::transpose(r.v)));

  // The check: the engine in one call on the same Q, K, V.
  SdpaOptions options;
  options.causal = config.causal;
  const SdpaResult ref = attention(as_head(r.q), as_head(r.k), as_head(r.v), nullptr, options);
  r.sdpa_output = xt::view(ref.output, 0, xt::all(), xt::all());
  for (std::size_t i = 0; i < r.output.size(); ++i) {
    r.max_abs_diff = std::max(r.max_abs_diff, std::fabs(static_cast<double>(r.output.flat(i)) -
                                                        static_cast<double>(r.sdpa_output.flat(i))));
  }

  const std::size_t row = config.row.value_or(L - 1);
  if ((config.online || config.jacobian || config.split_kv) && row >= L)
    throw InputError("--row " + std::to_string(row) + ": the sentence has rows 0 to " + std::to_string(L - 1));
  if (config.online) r.online = online_softmax_row(r, row);
  if (config.jacobian) {
    const std::size_t target = config.target.value_or(row);
    if (target >= L || !r.allowed(row, target))
      throw InputError("--target " + std::to_string(target) + ": row " + std::to_string(row) + " attends to keys 0 to " +
                       std::to_string(config.causal ? row : L - 1));
    r.jacobian = softmax_jacobian(r, row, target);
  }
  if (config.symmetry) r.symmetry = symmetry_lesson(r);
  if (config.split_kv) {
    std::vector<bool> visible(L);
    for (std::size_t j = 0; j < L; ++j) visible[j] = r.allowed(row, j);
    r.split_kv = split_kv_merge(Tensor1(xt::view(r.q, row, xt::all())), r.k, r.v, visible, r.scale, *config.split_kv);
  }
  // Seeded like the demo's multi-head run: its own projections, seed + 2.
  if (config.heads > 1) r.multihead = multihead_by_hand(r.x, config.heads, config.seed + 2, config.causal);
  return r;
}

std::string jacobian_masked_text(const ExplainResult& r) {
  const JacobianLesson& J = *r.jacobian;
  if (J.masked_keys.empty()) return "No key of row " + std::to_string(J.row) + " is masked.";
  std::string keys;
  for (std::size_t k : J.masked_keys) keys += (keys.empty() ? "" : ", ") + std::to_string(k) + " '" + r.tokens[k] + "'";
  const bool one = J.masked_keys.size() == 1;
  return std::string(one ? "Masked key " : "Masked keys ") + keys + ": p = 0 there, so " + (one ? "its" : "their") +
         " row" + (one ? "" : "s") + " and column" + (one ? "" : "s") + " are all 0.";
}

Json explain_json(const ExplainResult& r) {
  Json mask = Json::array();
  for (std::size_t i = 0; i < r.allowed.shape(0); ++i) {
    Json row = Json::array();
    for (std::size_t j = 0; j < r.allowed.shape(1); ++j) row.push_back(r.allowed(i, j) ? 1 : 0);
    mask.push_back(row);
  }
  auto step = [](int number, const char* name, const char* formula, Json matrix) {
    return Json{{"step", number}, {"name", name}, {"formula", formula}, {"matrix", std::move(matrix)}};
  };
  Json steps = Json::array();
  steps.push_back(step(1, "scores", "Q K^T", to_json(r.scores)));
  steps.push_back(step(2, "scaled", "Q K^T / sqrt(d)", to_json(r.scaled)));
  // JSON has no -inf: lse_to_json writes it as null, as the tensor contract does for lse.
  Json masked = step(3, "masked", "-inf where mask = 0 (null in JSON)", lse_to_json(r.masked));
  masked["mask"] = mask;
  steps.push_back(masked);
  Json shifted = step(4, "shifted", "masked - max of each row (null in JSON: -inf)", lse_to_json(r.shifted));
  shifted["row_max"] = to_json(r.row_max);
  steps.push_back(shifted);
  Json soft = step(5, "softmax", "softmax of each row", to_json(r.weights));
  soft["row_sums"] = to_json(r.row_sums);
  steps.push_back(soft);
  steps.push_back(step(6, "output", "softmax(...) V", to_json(r.output)));
  Json j = {{"sentence", r.config.sentence},
          {"tokens", r.tokens},
          {"seed", r.config.seed},
          {"d_model", r.config.d_model},
          {"causal", r.config.causal},
          {"scale", r.scale},
          {"inputs", {{"x", to_json(r.x)}, {"q", to_json(r.q)}, {"k", to_json(r.k)}, {"v", to_json(r.v)}}},
          {"steps", steps},
          {"check", {{"sdpa_output", to_json(r.sdpa_output)}, {"max_abs_diff", r.max_abs_diff}}}};
  if (r.online) {
    Json keys = Json::array();
    for (const OnlineStep& s : r.online->steps) {
      keys.push_back({{"key", s.key}, {"masked", s.masked}, {"score", s.masked ? Json(nullptr) : Json(s.score)},
                      {"m", s.m == -kInf ? Json(nullptr) : Json(s.m)}, {"l", s.l}, {"rescale", s.rescale}, {"o", s.o}});
    }
    j["online"] = {{"row", r.online->row}, {"steps", keys}, {"weights", r.online->weights},
                   {"output", r.online->output}, {"max_weight_diff", r.online->max_weight_diff},
                   {"max_output_diff", r.online->max_output_diff}};
  }
  if (r.jacobian) {
    const JacobianLesson& J = *r.jacobian;
    j["jacobian"] = {{"row", J.row}, {"target", J.target}, {"matrix", to_json(J.jacobian)},
                     {"max_finite_difference_diff", J.max_fd_diff}, {"max_row_sum", J.max_row_sum},
                     {"max_asymmetry", J.max_asymmetry}, {"cross_entropy_grad", J.grad_ce},
                     {"cross_entropy_max_finite_difference_diff", J.max_ce_fd_diff},
                     {"masked_keys", J.masked_keys}};
  }
  if (r.symmetry) {
    j["symmetry"] = {{"scores_no_projection_max_asymmetry", r.symmetry->scores_no_projection},
                     {"scores_with_projection_max_asymmetry", r.symmetry->scores_with_projection},
                     {"weights_no_projection_max_asymmetry", r.symmetry->weights_no_projection}};
  }
  if (r.multihead) j["multi_head"] = multihead_json(*r.multihead);
  if (r.split_kv) {
    j["split_kv"] = split_kv_json(*r.split_kv);
    j["split_kv"]["row"] = r.config.row.value_or(r.tokens.size() - 1);
  }
  return j;
}

}  // namespace attn
