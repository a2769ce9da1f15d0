#pragma once
// Rank collapse, measured (Dong, Cordonnier & Loukas 2021, "Attention is not all you need: pure
// attention loses rank doubly exponentially with depth", arXiv 2103.03404).
//
// Claim: a stack of self-attention layers without skip connections or MLPs drives every token's
// row of X toward the same row, and does so doubly exponentially: their Theorem 2.2 bounds the
// residual after L layers by  res(X_L) <= (4 gamma beta / sqrt(d_qk))^((3^L - 1)/2) res(X_0)^(3^L),
// so -ln r_l grows like a b^l with b = 3 in the bound. Skip connections break it (a path of
// length 0 carries X_0 through); MLPs slow it only through their Lipschitz constant.
//
// The lesson runs the same seeded stack (attention_stack.hpp) in the four settings and measures
// r_l = ||X_l - 1 xbar_l^T||_F / ||X_l||_F after every layer, in float64. The check fits, over the
// layers from 1 on whose r is above float64 round-off (kRoundoffFloor), two models to ln r_l:
//   exponential          ln r_l = alpha + beta l           (a constant factor per layer)
//   doubly exponential   ln(-ln r_l) = gamma + delta l     (-ln r_l multiplied by b = e^delta per layer)
// and calls the fall doubly exponential when there are at least 3 such layers, b > 1.5 and the fall
// accelerates at every layer: ln(r_{l+1}/r_l) / ln(r_l/r_{l-1}) > 1.5 (an exponential fall keeps that
// ratio at 1; a doubly exponential one at b).
// With --model, the same r_l on a trained toy model's own residual stream (x += MHA(x), causal).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attn/engine/attention/attention_stack.hpp"
#include "attn/io/json_io.hpp"

namespace attn {

struct RankCollapseConfig {
  std::size_t layers = 12;
  std::size_t tokens = 32;  // n, the rows of X
  std::size_t d_model = 64;
  std::size_t heads = 4;
  std::size_t mlp_ratio = 4;  // hidden width of the MLP = mlp_ratio * d_model
  std::uint64_t seed = 42;
  std::string model_dir;  // empty: no model
};

// Below this, r is float64 round-off (about 1e-16 times the entries' size), not signal.
inline constexpr double kRoundoffFloor = 1e-12;
// Skips "keep the rank" when r never falls below this on any layer.
inline constexpr double kSkipFloor = 1e-3;

// The two fits of the header comment, over layers first..last.
struct CollapseFit {
  std::size_t first = 0, last = 0, points = 0;  // points = last - first + 1; 0: no fit
  double alpha = 0, beta = 0;                   // exponential: ln r = alpha + beta l
  double gamma = 0, delta = 0;                  // doubly exponential: ln(-ln r) = gamma + delta l
  double rms_exponential = 0, rms_doubly = 0;   // rms error in ln r of each fit
  double growth = 0;                            // b = e^delta
  double min_acceleration = 0;                  // smallest ln(r_{l+1}/r_l) / ln(r_l/r_{l-1}) in the window
  bool doubly_exponential = false;
};

struct SettingResidual {
  StackSetting setting{};
  std::vector<double> r;  // r_0 (the input) .. r_L
  CollapseFit fit;
  double smallest = 0;       // min over l of r_l
  double factor_per_layer = 0;  // (r_L / r_0)^(1/L): the average factor of one layer
  std::optional<std::size_t> layer_at_floor;  // the first l with r_l <= kRoundoffFloor
};

struct ModelResidual {
  std::string dir;
  std::size_t layers = 0, d_model = 0, heads = 0, tokens = 0, context = 0;
  std::vector<std::int32_t> token_ids;
  SettingResidual stream;  // setting skip, causal: the model's own forward pass
};

struct RankCollapseResult {
  RankCollapseConfig config;
  std::array<SettingResidual, 4> settings;  // in kStackSettings order
  std::optional<ModelResidual> model;
  bool pure_attention_doubly_exponential = false;  // settings[0].fit says so
  bool skip_keeps_rank = false;  // skip's smallest r >= kSkipFloor
};

// InputError for sizes of 0, d_model % heads != 0, or sizes past what a CPU lesson should run.
void check_rank_collapse_config(const RankCollapseConfig& config);
// Floating-point operations of the four random stacks (for the time budget) and their float64 bytes.
double rank_collapse_flops(const RankCollapseConfig& config);
double rank_collapse_bytes(const RankCollapseConfig& config);

// The fits of the header comment on r_0..r_L.
CollapseFit fit_collapse(const std::vector<double>& r);

// X_0: n rows of i.i.d. N(0, 1) entries; the layers: random_stack_layers; both from the seed.
struct RankCollapseCase {
  Tensor2 x0;
  std::vector<StackLayer> layers;
};
RankCollapseCase rank_collapse_case(const RankCollapseConfig& config);

// The model's input: `tokens` random ids (capped at its context) from the seed, embed + pos.
ModelResidual model_residual(const std::string& dir, std::size_t tokens, std::uint64_t seed);

RankCollapseResult run_rank_collapse(const RankCollapseConfig& config);

// docs/contracts.md's contract {"residual_definition", "settings": {...}, "model"?} plus the fits.
Json rank_collapse_json(const RankCollapseResult& result);
// The inputs and weights of the random stacks, for an outside reference
// (scripts/check_rank_collapse.py): {"config", "x0", "layers": [{w_q, w_k, w_v, w_o, w_1, w_2}]}.
Json rank_collapse_case_json(const RankCollapseConfig& config);

}  // namespace attn
