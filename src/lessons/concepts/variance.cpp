#include "attn/lessons/concepts/variance.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/io/number_format.hpp"
#include "attn/lessons/concepts/softmax_stats.hpp"

namespace attn {
namespace {

// A sweep costs about samples * sum(d_k) * (2 + 1) normal draws; past this it takes minutes.
constexpr double kMaxDraws = 3e9;

std::vector<double> normal_vector(Rng& rng, std::size_t d) {
  std::vector<double> x(d);
  for (double& v : x) v = rng.normal();
  return x;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

struct MeanVar {
  double mean, var;  // var is the unbiased sample variance (divides by S - 1)
};

MeanVar mean_var(const std::vector<double>& z) {
  const double S = static_cast<double>(z.size());
  const double mean = std::accumulate(z.begin(), z.end(), 0.0) / S;
  double ss = 0;
  for (double x : z) ss += (x - mean) * (x - mean);  // two passes: no cancellation
  return {mean, ss / (S - 1)};
}

}  // namespace

double sample_variance_se(std::size_t d_k, std::size_t samples) {
  const double d = static_cast<double>(d_k), S = static_cast<double>(samples);
  const double mu4 = 3 * d * d + 6 * d, sigma4 = d * d;
  return std::sqrt(mu4 / S - sigma4 * (S - 3) / (S * (S - 1)));
}

void check_variance_config(const VarianceConfig& c) {
  if (c.d_ks.empty()) throw InputError("--dk: expected at least one d_k");
  for (std::size_t d : c.d_ks)
    if (d == 0) throw InputError("--dk: every d_k must be >= 1");
  if (c.samples < 2) throw InputError("--samples: a variance needs at least 2 samples");
  if (c.keys < 2) throw InputError("--keys: a softmax row needs at least 2 keys");
  if (variance_draws(c) > kMaxDraws) {
    char draws[32];
    std::snprintf(draws, sizeof draws, "%.3g", variance_draws(c));
    throw InputError(std::string("--samples x sum of --dk is too large (") + draws + " random draws); keep it under 3e9");
  }
}

double variance_draws(const VarianceConfig& c) {
  const double S = static_cast<double>(c.samples), n = static_cast<double>(c.keys);
  const double rows = std::max(1.0, std::floor(S / n));
  double draws = 0;
  for (std::size_t d : c.d_ks) draws += static_cast<double>(d) * (2 * S + rows * (n + 1));
  return draws;
}

VarianceResult run_variance(const VarianceConfig& config) {
  check_variance_config(config);
  VarianceResult result{config, {}, 0, 0};
  const std::size_t n = config.keys;
  const std::vector<double> uniform(n, 1.0 / static_cast<double>(n));
  result.entropy_uniform = entropy_nats(uniform);
  result.jacobian_uniform = softmax_jacobian_frobenius(uniform);

  const std::size_t total = std::accumulate(config.d_ks.begin(), config.d_ks.end(), std::size_t{0});
  std::size_t done = 0;
  for (std::size_t d_k : config.d_ks) {
    Rng rng(hash_with_seed("variance d_k=" + std::to_string(d_k), config.seed));
    const double root_d = std::sqrt(static_cast<double>(d_k));
    VarianceRow row;
    row.d_k = d_k;
    row.samples = config.samples;

    // Part 1: S independent pairs, q.k and q.k / sqrt(d_k).
    std::vector<double> unscaled(config.samples), scaled(config.samples);
    for (std::size_t s = 0; s < config.samples; ++s) {
      const std::vector<double> q = normal_vector(rng, d_k), k = normal_vector(rng, d_k);
      unscaled[s] = dot(q, k);
      scaled[s] = unscaled[s] / root_d;
    }
    const MeanVar u = mean_var(unscaled), sc = mean_var(scaled);
    row.mean_unscaled = u.mean;
    row.var_unscaled = u.var;
    row.mean_scaled = sc.mean;
    row.var_scaled = sc.var;
    row.var_unscaled_theory = static_cast<double>(d_k);
    row.var_scaled_theory = 1.0;
    const double S = static_cast<double>(config.samples);
    row.mean_unscaled_se = std::sqrt(static_cast<double>(d_k) / S);
    row.mean_scaled_se = std::sqrt(1.0 / S);
    row.var_unscaled_se = sample_variance_se(d_k, config.samples);
    row.var_scaled_se = row.var_unscaled_se / static_cast<double>(d_k);
    auto inside = [](double x, double theory, double se) { return std::fabs(x - theory) <= kBandSigmas * se; };
    row.within_band = inside(row.mean_unscaled, 0, row.mean_unscaled_se) &&
                      inside(row.var_unscaled, row.var_unscaled_theory, row.var_unscaled_se) &&
                      inside(row.mean_scaled, 0, row.mean_scaled_se) &&
                      inside(row.var_scaled, 1.0, row.var_scaled_se);

    // Part 2: one query against n keys, as one row of attention scores; the same scores
    // through softmax unscaled and scaled.
    row.keys = n;
    row.softmax_rows = std::max<std::size_t>(1, config.samples / n);
    for (std::size_t r = 0; r < row.softmax_rows; ++r) {
      const std::vector<double> q = normal_vector(rng, d_k);
      std::vector<double> scores(n);
      for (double& s : scores) s = dot(q, normal_vector(rng, d_k));
      const std::vector<double> p_unscaled = softmax_of(scores), p_scaled = softmax_of(scores, 1.0 / root_d);
      row.max_weight_unscaled += max_weight(p_unscaled);
      row.max_weight_scaled += max_weight(p_scaled);
      row.entropy_unscaled += entropy_nats(p_unscaled);
      row.entropy_scaled += entropy_nats(p_scaled);
      row.jacobian_unscaled += softmax_jacobian_frobenius(p_unscaled);
      row.jacobian_scaled += softmax_jacobian_frobenius(p_scaled);
    }
    const double R = static_cast<double>(row.softmax_rows);
    for (double* x : {&row.max_weight_unscaled, &row.max_weight_scaled, &row.entropy_unscaled,
                      &row.entropy_scaled, &row.jacobian_unscaled, &row.jacobian_scaled})
      *x /= R;

    result.rows.push_back(row);
    done += d_k;
    if (config.progress) config.progress(done, total);
  }
  return result;
}

Json variance_json(const VarianceResult& r) {
  Json rows = Json::array();
  for (const VarianceRow& x : r.rows) {
    rows.push_back({
        {"d_k", x.d_k},
        {"samples", x.samples},
        {"mean_unscaled", x.mean_unscaled},
        {"var_unscaled", x.var_unscaled},
        {"mean_scaled", x.mean_scaled},
        {"var_scaled", x.var_scaled},
        {"mean_theory", 0.0},
        {"var_unscaled_theory", x.var_unscaled_theory},
        {"var_scaled_theory", x.var_scaled_theory},
        {"mean_unscaled_se", x.mean_unscaled_se},
        {"var_unscaled_se", x.var_unscaled_se},
        {"mean_scaled_se", x.mean_scaled_se},
        {"var_scaled_se", x.var_scaled_se},
        {"within_band", x.within_band},
        {"keys", x.keys},
        {"softmax_rows", x.softmax_rows},
        {"max_weight_unscaled", x.max_weight_unscaled},
        {"max_weight_scaled", x.max_weight_scaled},
        {"entropy_unscaled", x.entropy_unscaled},
        {"entropy_scaled", x.entropy_scaled},
        {"jacobian_fro_unscaled", x.jacobian_unscaled},
        {"jacobian_fro_scaled", x.jacobian_scaled},
    });
  }
  Json out = {
      {"rows", rows},
      {"seed", r.config.seed},
      {"distribution", "q, k with i.i.d. N(0,1) entries; unscaled = q.k, scaled = q.k / sqrt(d_k)"},
      {"band", "theory +- 3 standard errors; se of the sample variance = sqrt(mu4/S - sigma^4 (S-3)/(S(S-1))) "
               "with mu4 = 3 d_k^2 + 6 d_k, sigma^2 = d_k"},
      {"softmax", "one query against `keys` keys per row, averaged over `softmax_rows` rows; entropy in nats; "
                  "jacobian_fro = Frobenius norm of diag(p) - p p^T"},
      {"entropy_uniform", r.entropy_uniform},
      {"jacobian_fro_uniform", r.jacobian_uniform},
  };
  if (const auto rise = jacobian_rise(r)) {
    out["jacobian_rise"] = {{"peak_d_k", rise->peak_d_k}, {"peak", rise->peak},
                            {"last_above_scaled_d_k", rise->last_above_d_k},
                            {"first_below_scaled_d_k", rise->first_below_d_k},
                            {"why", jacobian_rise_sentence(*rise)}};
  }
  return out;
}

std::optional<JacobianRise> jacobian_rise(const VarianceResult& r) {
  if (r.rows.size() < 2) return std::nullopt;
  std::size_t peak = 0;
  for (std::size_t i = 1; i < r.rows.size(); ++i)
    if (r.rows[i].jacobian_unscaled > r.rows[peak].jacobian_unscaled) peak = i;
  if (peak == 0) return std::nullopt;  // never rises: saturation from the first d_k on
  JacobianRise rise;
  rise.peak_d_k = r.rows[peak].d_k;
  rise.peak = r.rows[peak].jacobian_unscaled;
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    if (r.rows[i].jacobian_unscaled > r.rows[i].jacobian_scaled) {
      rise.last_above_d_k = r.rows[i].d_k;
      rise.first_below_d_k = i + 1 < r.rows.size() ? r.rows[i + 1].d_k : 0;
    }
  }
  return rise;
}

std::string jacobian_rise_sentence(const JacobianRise& rise) {
  std::string s = "Why the unscaled ||J||F first rises (to " + format_g(rise.peak, 3) + " at d_k = " +
                  std::to_string(rise.peak_d_k) + "): a near-uniform row, every p ~ 1/n, has a small Jacobian; "
                  "a few keys sharing the weight give the largest; one key taking it all gives none.";
  if (rise.last_above_d_k != 0 && rise.first_below_d_k != 0)
    s += " It stays above the scaled rows up to d_k = " + std::to_string(rise.last_above_d_k) + " and is below from d_k = " +
         std::to_string(rise.first_below_d_k) + " on.";
  return s;
}

}  // namespace attn
