// Attention as a convolution (attention_conv.hpp).
#include "attn/lessons/concepts/attention_conv.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <xtensor/xmath.hpp>

#include "attn/engine/attention/attention.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/engine/training/toy_backprop.hpp"
#include "attn/lessons/models/head_summary.hpp"

namespace attn {
namespace {

// Positions of a 1-D sequence ({i}) or a row-major image ({r, c}); offsets likewise.
using Point = std::vector<long>;

struct Grid {
  std::vector<long> extent;  // {L} or {H, W}
  std::size_t size() const {
    std::size_t n = 1;
    for (long e : extent) n *= std::size_t(e);
    return n;
  }
  Point point(std::size_t n) const {
    Point p(extent.size());
    for (std::size_t a = extent.size(); a-- > 0;) {
      p[a] = long(n % std::size_t(extent[a]));
      n /= std::size_t(extent[a]);
    }
    return p;
  }
  // The index of p + offset, or none past an edge (zero padding).
  std::optional<std::size_t> shifted(std::size_t n, const Point& offset) const {
    const Point p = point(n);
    std::size_t index = 0;
    for (std::size_t a = 0; a < extent.size(); ++a) {
      const long c = p[a] + offset[a];
      if (c < 0 || c >= extent[a]) return std::nullopt;
      index = index * std::size_t(extent[a]) + std::size_t(c);
    }
    return index;
  }
};

// Every offset of a kernel of size K per axis, row-major: -(K-1)/2 .. (K-1)/2.
std::vector<Point> kernel_offsets(std::size_t axes, std::size_t K) {
  const long half = long(K - 1) / 2;
  std::vector<Point> out{{}};
  for (std::size_t a = 0; a < axes; ++a) {
    std::vector<Point> next;
    for (const Point& p : out)
      for (long d = -half; d <= half; ++d) {
        Point q = p;
        q.push_back(d);
        next.push_back(q);
      }
    out = next;
  }
  return out;
}

// The convolution as a textbook writes it: y[n] = sum over taps of W_tap x[n + tap], zero padding.
ArrayF64 convolve(const Grid& g, const ArrayF64& x, const std::vector<ArrayF64>& w, const std::vector<Point>& taps) {
  const std::size_t N = g.size(), C = x.shape(1), Cout = w.front().shape(0);
  ArrayF64 y = xt::zeros<double>({N, Cout});
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t t = 0; t < taps.size(); ++t) {
      const std::optional<std::size_t> m = g.shifted(n, taps[t]);
      if (!m) continue;
      for (std::size_t o = 0; o < Cout; ++o)
        for (std::size_t c = 0; c < C; ++c) y(n, o) += w[t](o, c) * x(*m, c);
    }
  return y;
}

// Multi-head self-attention whose head h sees only the key at offset h: relative-position
// scores 0 there and -inf elsewhere (a mask), W_v = I, W_o^h = w[h]. The heads run through
// attention() at once (GQA: one key/value head, x itself); `heads` of them are summed. With
// weights_out, the heads' [H, N, N] weights as the door returned them are kept there.
ArrayF64 attention_as_conv(const Grid& g, const ArrayF64& x, const std::vector<ArrayF64>& w,
                           const std::vector<Point>& offsets, std::size_t heads, Tensor3* weights_out = nullptr) {
  const std::size_t N = g.size(), C = x.shape(1), Cout = w.front().shape(0), H = offsets.size();
  Mask3 allowed = xt::zeros<bool>({H, N, N});
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t i = 0; i < N; ++i)
      if (const std::optional<std::size_t> j = g.shifted(i, offsets[h])) allowed(h, i, *j) = true;
  const Tensor3 q = xt::zeros<float>({H, N, std::size_t(1)}), k = xt::zeros<float>({std::size_t(1), N, std::size_t(1)});
  Tensor3 v = Tensor3::from_shape({std::size_t(1), N, C});
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t c = 0; c < C; ++c) v(0, n, c) = float(x(n, c));  // x is float32-exact
  const SdpaResult r = attention(q, k, v, &allowed, SdpaOptions{}, BackendOptions{}, weights_out != nullptr);
  if (weights_out) *weights_out = r.weights;
  ArrayF64 y = xt::zeros<double>({N, Cout});
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t n = 0; n < N; ++n)
      for (std::size_t o = 0; o < Cout; ++o)
        for (std::size_t c = 0; c < C; ++c) y(n, o) += w[h](o, c) * double(r.output(h, n, c));
  return y;
}

double max_abs(const ArrayF64& a, const ArrayF64& b) { return xt::amax(xt::abs(a - b))(); }

ConvCase run_case(const Grid& g, const ConvLessonConfig& c, Rng& rng, bool keep_weights) {
  ConvCase out;
  const std::vector<Point> offsets = kernel_offsets(g.extent.size(), c.kernel);
  out.heads = offsets.size();
  out.offsets.assign(offsets.begin(), offsets.end());
  out.x = ArrayF64::from_shape({g.size(), c.channels});
  for (double& v : out.x) v = double(float(rng.normal()));  // float32-exact: the door takes float32
  for (std::size_t h = 0; h < out.heads; ++h) {
    ArrayF64 w = ArrayF64::from_shape({c.out_channels, c.channels});
    for (double& v : w) v = rng.normal() / std::sqrt(double(c.channels * out.heads));
    out.weights.push_back(w);
  }
  out.conv = convolve(g, out.x, out.weights, offsets);
  out.attention = attention_as_conv(g, out.x, out.weights, offsets, out.heads, keep_weights ? &out.head_weights : nullptr);
  out.max_abs_diff = max_abs(out.attention, out.conv);
  out.one_head_short = max_abs(attention_as_conv(g, out.x, out.weights, offsets, out.heads - 1), out.conv);
  return out;
}

// Where the toy model's induction head looks, query by query, on a sentence twice.
TrainedOffsets trained_offsets(const ToyModel& model) {
  TrainedOffsets t;
  const std::vector<std::string> words = {"the", "cat", "sat", "on", "a", "mat"};
  std::vector<std::int32_t> ids;
  for (int copy = 0; copy < 2; ++copy)
    for (std::size_t w = 0; w < words.size(); ++w) {
      t.tokens.push_back(words[w]);
      ids.push_back(std::int32_t(w));
    }
  const ToyForward f = toy_forward(model, ids);
  const HeadSummary s = summarize_heads(ids, f.attention);
  const HeadScores* best = nullptr;
  for (const HeadScores& h : s.heads)
    if (h.layer > 0 && (!best || h.induction.value_or(0) > best->induction.value_or(0))) best = &h;
  if (!best) best = &s.heads.front();
  t.layer = best->layer, t.head = best->head;
  std::set<long> distinct;
  const Tensor3& a = f.attention[t.layer];
  for (std::size_t i = 1; i < ids.size(); ++i) {
    std::size_t top = 0;
    for (std::size_t j = 0; j <= i; ++j) top = a(t.head, i, j) > a(t.head, i, top) ? j : top;
    t.argmax_offset.push_back(long(top) - long(i));
    distinct.insert(t.argmax_offset.back());
  }
  t.distinct = distinct.size();
  t.weights = xt::view(a, t.head, xt::all(), xt::all());
  return t;
}

Json case_json(const ConvCase& c, const std::vector<long>& extent) {
  Json weights = Json::array();
  for (const ArrayF64& w : c.weights) weights.push_back(to_json(w));
  return {{"extent", extent},  {"heads", c.heads},          {"offsets", c.offsets},
          {"max_abs_diff", c.max_abs_diff}, {"one_head_short", c.one_head_short},
          {"x", to_json(c.x)}, {"weights", weights}, {"conv", to_json(c.conv)}, {"attention", to_json(c.attention)}};
}

}  // namespace

void check_conv_lesson(const ConvLessonConfig& c) {
  if (c.kernel == 0 || c.kernel % 2 == 0) throw InputError("--kernel: expected an odd size >= 1, got " + std::to_string(c.kernel));
  if (c.length == 0 || c.height == 0 || c.width == 0 || c.channels == 0 || c.out_channels == 0)
    throw InputError("sizes: expected at least 1");
  if (c.length > 4096 || c.height * c.width > 4096) throw InputError("sizes: at most 4096 positions");
  if (c.kernel > 31) throw InputError("--kernel: at most 31");
  if (c.keep_head_weights && c.length > kMaxKeptPositions)
    throw InputError("--length: the pictures draw each head's [L, L] weights, up to " +
                     std::to_string(kMaxKeptPositions) + " positions; got " + std::to_string(c.length));
  if (c.channels > 256 || c.out_channels > 256) throw InputError("channels: at most 256");
}

ConvLesson run_conv_lesson(const ConvLessonConfig& c, const ToyModel* model) {
  check_conv_lesson(c);
  ConvLesson l;
  l.config = c;
  Rng rng(c.seed);
  l.one_d = run_case(Grid{{long(c.length)}}, c, rng, c.keep_head_weights);
  l.two_d = run_case(Grid{{long(c.height), long(c.width)}}, c, rng, /*keep_weights=*/false);
  if (model) l.trained = trained_offsets(*model);
  return l;
}

Json conv_lesson_json(const ConvLesson& l) {
  const ConvLessonConfig& c = l.config;
  Json j = {{"config",
             {{"length", c.length}, {"height", c.height}, {"width", c.width}, {"channels", c.channels},
              {"out_channels", c.out_channels}, {"kernel", c.kernel}, {"seed", c.seed}}},
            {"one_d", case_json(l.one_d, {long(c.length)})},
            {"two_d", case_json(l.two_d, {long(c.height), long(c.width)})}};
  if (l.trained) {
    j["trained"] = {{"tokens", l.trained->tokens}, {"layer", l.trained->layer}, {"head", l.trained->head},
                    {"argmax_offset", l.trained->argmax_offset}, {"distinct_offsets", l.trained->distinct}};
  }
  return j;
}

}  // namespace attn
