// The efficient-attention family on one head of a sentence (approximations.hpp).
#include "attn/lessons/concepts/approximations.hpp"

#include <cmath>

#include "attn/engine/attention/attention.hpp"
#include "attn/engine/attention/attention_methods.hpp"
#include "attn/engine/attention/mask.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/io/number_format.hpp"
#include "max_difference.hpp"

namespace attn {
namespace {

std::size_t visible_cells(const Mask2& allowed) {
  std::size_t n = 0;
  for (bool a : allowed) n += a ? 1 : 0;
  return n;
}

struct Computed {
  ApproximationRun run;
  Tensor3 output;  // [1, L, dv]
};

// Causal softmax under an extra mask (none, a window, the strided pattern), float64 reference.
Computed softmax_run(const Tensor3& q, const Tensor3& k, const Tensor3& v, double scale, const AttentionMask& mask,
                     std::string method, std::string family) {
  SdpaOptions o;
  o.causal = true;
  o.scale = scale;
  o.mask_mod = mask;
  const std::size_t L = q.shape(1);
  SdpaResult s = attention(q, k, v, nullptr, o);
  Mask2 allowed = causal_allowed(L, L);
  if (mask.any()) allowed = allowed && mask.allowed(L, L);
  return {{std::move(method), std::move(family), xt::view(s.weights, 0), allowed, 0, 0, 0}, std::move(s.output)};
}

Computed kernel_run(const Tensor3& q, const Tensor3& k, const Tensor3& v, const MethodOptions& o, std::string method,
                    std::string family) {
  const std::size_t L = q.shape(1);
  MethodResult m = method_attention(q, k, v, o);
  return {{std::move(method), std::move(family), xt::view(*m.weights, 0), causal_allowed(L, L), 0, 0, 0},
          std::move(m.output)};
}

}  // namespace

ApproximationsLesson run_approximations(const Tensor3& q, const Tensor3& k, const Tensor3& v, double scale,
                                        const std::vector<std::string>& tokens, const std::string& head,
                                        const ApproximationsConfig& config) {
  const std::size_t L = q.shape(1);
  if (q.shape(0) != 1 || k.shape(0) != 1 || v.shape(0) != 1 || k.shape(1) != L || v.shape(1) != L ||
      k.shape(2) != q.shape(2))
    throw InputError("approximations: expected one head's q, k, v of one length and width");
  if (L == 0) throw InputError("approximations: no tokens");
  if (tokens.size() != L) throw InputError("approximations: expected one token per position");
  if (config.features == 0) throw InputError("approximations: performer needs at least one feature");
  ApproximationsLesson lesson;
  lesson.head = head;
  lesson.tokens = tokens;
  lesson.window = lesson.stride = std::max<std::size_t>(2, std::size_t(std::ceil(std::sqrt(double(L)))));
  lesson.features = config.features;

  std::vector<Computed> computed;
  computed.push_back(softmax_run(q, k, v, scale, {}, "exact softmax", "exact"));
  AttentionMask window;
  window.window = variants::SlidingWindow{lesson.window - 1, 0};
  computed.push_back(softmax_run(q, k, v, scale, window, "window " + std::to_string(lesson.window), "window"));
  AttentionMask strided;
  strided.stride = variants::Strided{lesson.stride};
  computed.push_back(softmax_run(q, k, v, scale, strided, "strided " + std::to_string(lesson.stride), "sparse"));
  MethodOptions o;
  o.causal = true;
  o.scale = scale;
  o.method = AttentionMethod::linear;
  computed.push_back(kernel_run(q, k, v, o, "linear (elu + 1)", "linear"));
  o.method = AttentionMethod::performer;
  o.features = config.features;
  o.seed = config.seed;
  computed.push_back(kernel_run(q, k, v, o, "performer m = " + std::to_string(config.features), "performer"));

  const Computed& exact = computed.front();
  for (Computed& c : computed) {
    c.run.visible = visible_cells(c.run.allowed);
    c.run.weight_error = max_abs_difference(c.run.weights, exact.run.weights);
    c.run.output_error = relative_frobenius_error(c.output, exact.output);
  }
  for (Computed& c : computed) lesson.runs.push_back(std::move(c.run));
  return lesson;
}

Json approximations_json(const ApproximationsLesson& lesson) {
  Json runs = Json::array();
  for (const ApproximationRun& r : lesson.runs)
    runs.push_back({{"method", r.method}, {"family", r.family}, {"visible", r.visible},
                    {"weight_error", r.weight_error}, {"output_error", r.output_error}, {"weights", to_json(r.weights, FloatText::shortest)}});
  return {{"head", lesson.head}, {"tokens", lesson.tokens}, {"window", lesson.window}, {"stride", lesson.stride},
          {"features", lesson.features}, {"runs", runs}};
}

std::string approximations_text(const ApproximationsLesson& lesson) {
  std::string out = "Efficient attention on " + lesson.head + " (errors against exact causal softmax):\n";
  const std::size_t L = lesson.tokens.size(), causal = L * (L + 1) / 2;
  for (const ApproximationRun& r : lesson.runs) {
    if (r.family == "exact") continue;
    out += "  " + r.method + ": output error " + format_g(r.output_error, 3) + ", largest weight error " +
           format_g(r.weight_error, 3);
    if (r.family == "window" || r.family == "sparse")
      out += r.visible == causal ? " (sees every earlier token at this length: exact)"
                                 : ", " + std::to_string(r.visible) + " of " + std::to_string(causal) + " pairs kept";
    else out += ", never forms a score: a state of fixed size per step";
    out += "\n";
  }
  return out;
}

}  // namespace attn
