// Rank collapse, measured (rank_collapse.hpp).
#include "attn/lessons/concepts/rank_collapse.hpp"

#include <algorithm>
#include <cmath>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/io/toy_model_file.hpp"

namespace attn {
namespace {

constexpr std::size_t kMaxLayers = 256, kMaxTokens = 4096, kMaxDModel = 2048, kMaxMlpRatio = 8;

// Least squares y = a + b x; the root-mean-square error of that line is not returned here.
struct Line {
  double a = 0, b = 0;
};
Line fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < x.size(); ++i) mx += x[i] / n, my += y[i] / n;
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx);
  const double b = sxx > 0 ? sxy / sxx : 0;
  return {my - b * mx, b};
}

double rms(const std::vector<double>& e) {
  double s = 0;
  for (double x : e) s += x * x;
  return e.empty() ? 0 : std::sqrt(s / static_cast<double>(e.size()));
}

SettingResidual summarise(StackSetting setting, std::vector<double> r) {
  SettingResidual s;
  s.setting = setting;
  s.fit = fit_collapse(r);
  s.smallest = *std::min_element(r.begin(), r.end());
  const std::size_t L = r.size() - 1;
  s.factor_per_layer = L > 0 && r.front() > 0 ? std::pow(std::max(r.back(), 1e-300) / r.front(), 1.0 / static_cast<double>(L)) : 1.0;
  for (std::size_t l = 0; l < r.size(); ++l)
    if (r[l] <= kRoundoffFloor) {
      s.layer_at_floor = l;
      break;
    }
  s.r = std::move(r);
  return s;
}

Json fit_json(const CollapseFit& f) {
  return {{"layers", {f.first, f.last}}, {"points", f.points},
          {"exponential", {{"alpha", f.alpha}, {"beta", f.beta}, {"rms_ln_r", f.rms_exponential}}},
          {"doubly_exponential", {{"gamma", f.gamma}, {"delta", f.delta}, {"growth_b", f.growth},
                                  {"rms_ln_r", f.rms_doubly}}},
          {"min_acceleration", f.points >= 2 ? Json(f.min_acceleration) : Json(nullptr)},
          {"is_doubly_exponential", f.doubly_exponential}};
}

Json setting_json(const SettingResidual& s) {
  Json j = {{"fit", fit_json(s.fit)}, {"smallest", s.smallest}, {"factor_per_layer", s.factor_per_layer}};
  j["layer_at_roundoff"] = s.layer_at_floor ? Json(*s.layer_at_floor) : Json(nullptr);
  return j;
}

}  // namespace

void check_rank_collapse_config(const RankCollapseConfig& c) {
  auto in_range = [](const char* flag, std::size_t v, std::size_t lo, std::size_t hi) {
    if (v < lo || v > hi)
      throw InputError(std::string(flag) + ": " + std::to_string(v) + " is outside " + std::to_string(lo) + ".." +
                       std::to_string(hi));
  };
  in_range("--layers", c.layers, 1, kMaxLayers);
  in_range("--tokens", c.tokens, 2, kMaxTokens);
  in_range("--d-model", c.d_model, 1, kMaxDModel);
  in_range("--heads", c.heads, 1, c.d_model);
  in_range("--mlp-ratio", c.mlp_ratio, 1, kMaxMlpRatio);
  if (c.d_model % c.heads != 0)
    throw InputError("--heads: d_model " + std::to_string(c.d_model) + " is not a multiple of " +
                     std::to_string(c.heads) + " heads");
}

double rank_collapse_flops(const RankCollapseConfig& c) {
  const double n = static_cast<double>(c.tokens), D = static_cast<double>(c.d_model),
               F = static_cast<double>(c.mlp_ratio * c.d_model), L = static_cast<double>(c.layers);
  const double attention = 4 * n * n * (D + 5 * static_cast<double>(c.heads)) + 8 * n * D * D;
  const double mlp = 4 * n * D * F;
  return L * (4 * attention + 2 * mlp);  // four settings, two of them with an MLP
}

double rank_collapse_bytes(const RankCollapseConfig& c) {
  const double n = static_cast<double>(c.tokens), D = static_cast<double>(c.d_model),
               F = static_cast<double>(c.mlp_ratio * c.d_model), L = static_cast<double>(c.layers);
  // float32 weights of every layer, float64 scores of one layer and a few copies of X and the MLP's hidden
  return L * 4 * (4 * D * D + 2 * D * F) + 8 * (2 * static_cast<double>(c.heads) * n * n + 8 * n * D + 2 * n * F);
}

CollapseFit fit_collapse(const std::vector<double>& r) {
  CollapseFit f;
  std::vector<double> l, ln_r, ln_neg_ln_r;
  for (std::size_t i = 1; i < r.size() && r[i] > kRoundoffFloor && r[i] < 1; ++i) {
    l.push_back(static_cast<double>(i));
    ln_r.push_back(std::log(r[i]));
    ln_neg_ln_r.push_back(std::log(-std::log(r[i])));
  }
  if (l.size() < 2) return f;
  f.first = static_cast<std::size_t>(l.front());
  f.last = static_cast<std::size_t>(l.back());
  f.points = l.size();
  const Line single = fit_line(l, ln_r), doubly = fit_line(l, ln_neg_ln_r);
  f.alpha = single.a, f.beta = single.b, f.gamma = doubly.a, f.delta = doubly.b;
  f.growth = std::exp(f.delta);
  std::vector<double> e_single, e_doubly;
  for (std::size_t i = 0; i < l.size(); ++i) {
    e_single.push_back(ln_r[i] - (f.alpha + f.beta * l[i]));
    e_doubly.push_back(ln_r[i] + std::exp(f.gamma + f.delta * l[i]));
  }
  f.rms_exponential = rms(e_single);
  f.rms_doubly = rms(e_doubly);
  // ln(r_{l+1} / r_l) / ln(r_l / r_{l-1}): 1 for an exponential fall, b for a doubly exponential one.
  f.min_acceleration = INFINITY;
  for (std::size_t i = f.first; i < f.last; ++i)
    f.min_acceleration = std::min(f.min_acceleration, std::log(r[i + 1] / r[i]) / std::log(r[i] / r[i - 1]));
  f.doubly_exponential = f.points >= 3 && f.growth > 1.5 && f.min_acceleration > 1.5;
  return f;
}

RankCollapseCase rank_collapse_case(const RankCollapseConfig& c) {
  RankCollapseCase out;
  Rng rng(hash_with_seed("rank-collapse input", c.seed));
  out.x0 = Tensor2::from_shape({c.tokens, c.d_model});
  for (float& x : out.x0) x = static_cast<float>(rng.normal());
  out.layers = random_stack_layers(c.layers, c.d_model, c.mlp_ratio * c.d_model,
                                   hash_with_seed("rank-collapse layers", c.seed));
  return out;
}

ModelResidual model_residual(const std::string& dir, std::size_t tokens, std::uint64_t seed) {
  const ToyModel model = read_toy_model(dir);
  ModelResidual m;
  m.dir = dir;
  m.layers = model.config.layers;
  m.d_model = model.config.d_model;
  m.heads = model.config.heads;
  m.context = model.config.context;
  m.tokens = std::min(tokens, model.config.context);
  Rng rng(hash_with_seed("rank-collapse model tokens", seed));
  Tensor2 x0 = Tensor2::from_shape({m.tokens, m.d_model});
  for (std::size_t i = 0; i < m.tokens; ++i) {
    const auto id = static_cast<std::int32_t>(rng.next_u64() % model.config.vocab);
    m.token_ids.push_back(id);
    for (std::size_t c = 0; c < m.d_model; ++c) x0(i, c) = model.embed(id, c) + model.pos(i, c);  // float32, as the model
  }
  std::vector<StackLayer> layers;
  for (const ToyLayer& l : model.layers) layers.push_back({l.w_q, l.w_k, l.w_v, l.w_o, {}, {}});
  m.stream = summarise(StackSetting::skip, stack_residuals(x0, layers, StackSetting::skip, m.heads, /*causal=*/true));
  return m;
}

RankCollapseResult run_rank_collapse(const RankCollapseConfig& config) {
  check_rank_collapse_config(config);
  RankCollapseResult out;
  out.config = config;
  const RankCollapseCase c = rank_collapse_case(config);
  for (std::size_t i = 0; i < 4; ++i)
    out.settings[i] = summarise(kStackSettings[i], stack_residuals(c.x0, c.layers, kStackSettings[i], config.heads,
                                                                    /*causal=*/false));
  if (!config.model_dir.empty()) out.model = model_residual(config.model_dir, config.tokens, config.seed);
  const SettingResidual& skip = out.settings[1];
  out.pure_attention_doubly_exponential = out.settings[0].fit.doubly_exponential;
  out.skip_keeps_rank = skip.smallest >= kSkipFloor;
  return out;
}

Json rank_collapse_json(const RankCollapseResult& r) {
  Json settings = Json::object(), details = Json::object();
  for (const SettingResidual& s : r.settings) {
    settings[stack_setting_name(s.setting)] = s.r;
    details[stack_setting_name(s.setting)] = setting_json(s);
  }
  const RankCollapseConfig& c = r.config;
  Json out = {
      {"residual_definition",
       "r_l = ||X_l - 1 xbar_l^T||_F / ||X_l||_F after layer l (r_0: the input), xbar_l = column means of X_l "
       "(the row that makes the residual smallest); float64"},
      {"settings", settings},
      {"setting_definitions",
       {{"attention_only", "X <- SA(X)"}, {"skip", "X <- X + SA(X)"}, {"mlp", "X <- MLP(SA(X))"},
        {"skip_mlp", "X <- X + SA(X); X <- X + MLP(X)"}}},
      {"architecture",
       "SA(X) = concat_h(softmax(X W_q,h (X W_k,h)^T / sqrt(D/H)) X W_v,h) W_o^T, not causal; "
       "MLP(X) = relu(X W_1^T) W_2^T; no bias, no LayerNorm; weights N(0, 1/fan_in), X_0 i.i.d. N(0, 1)"},
      {"config", {{"layers", c.layers}, {"tokens", c.tokens}, {"d_model", c.d_model}, {"heads", c.heads},
                  {"mlp_hidden", c.mlp_ratio * c.d_model}, {"seed", c.seed}}},
      {"fits", details},
      {"fit_definition",
       "over layers l >= 1 with 1e-12 < r_l < 1: exponential ln r_l = alpha + beta l; doubly exponential "
       "ln(-ln r_l) = gamma + delta l, growth_b = e^delta (the paper's bound has b = 3); acceleration_l = "
       "ln(r_{l+1}/r_l) / ln(r_l/r_{l-1}) (1 when exponential); doubly exponential when >= 3 points, b > 1.5 and "
       "every acceleration > 1.5"},
      {"pure_attention_doubly_exponential", r.pure_attention_doubly_exponential},
      {"skip_keeps_rank", r.skip_keeps_rank},
      {"skip_floor", kSkipFloor},
      {"roundoff_floor", kRoundoffFloor},
  };
  if (r.model) {
    out["model"] = r.model->stream.r;
    out["model_info"] = {{"dir", r.model->dir}, {"layers", r.model->layers}, {"d_model", r.model->d_model},
                         {"heads", r.model->heads}, {"tokens", r.model->tokens}, {"token_ids", r.model->token_ids},
                         {"architecture", "x = embed[t] + pos[i]; per layer x += MHA(x), causal"},
                         {"fit", setting_json(r.model->stream)}};
  }
  return out;
}

Json rank_collapse_case_json(const RankCollapseConfig& config) {
  check_rank_collapse_config(config);
  const RankCollapseCase c = rank_collapse_case(config);
  Json layers = Json::array();
  for (const StackLayer& l : c.layers)
    layers.push_back({{"w_q", to_json(l.w_q)}, {"w_k", to_json(l.w_k)}, {"w_v", to_json(l.w_v)},
                      {"w_o", to_json(l.w_o)}, {"w_1", to_json(l.w_1)}, {"w_2", to_json(l.w_2)}});
  return {{"config", {{"heads", config.heads}, {"causal", false}, {"seed", config.seed}}},
          {"x0", to_json(c.x0)}, {"layers", layers}};
}

}  // namespace attn
