// The toy transformer's passes over a batch (toy_backprop.hpp). Rows of the residual stream
// are (sequence b, position i) -> row b*L + i; heads are laid out [B*H, L, d] so that one
// attention call covers the whole batch: head h of sequence b is "head" b*H + h.
#include "attn/engine/training/toy_backprop.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "attn/engine/attention/attention.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/core/linear.hpp"
#include "core/finite_stream.hpp"
#include "attention/flash/microkernels.hpp"
#include "platform/parallel.hpp"  // the flash kernel's vector row max and exp2, for the cross-entropy

namespace attn {
namespace {

struct Dims {
  std::size_t B, L, N, D, H, d, V;  // N = B*L rows, d = D/H
  std::size_t stride;               // ids per row of the batch: L, or L + 1 with last_is_target
  bool last_is_target;
  // The id read at row r = b*L + i, and the id it predicts.
  std::size_t token_index(std::size_t r) const { return r / L * stride + r % L; }
  bool predicts(std::size_t r) const { return last_is_target || r % L + 1 < L; }
};

void ensure(Tensor2& t, std::size_t rows, std::size_t cols) {
  if (t.shape(0) != rows || t.shape(1) != cols) t = Tensor2::from_shape({rows, cols});
}
void ensure(Tensor3& t, std::size_t a, std::size_t b, std::size_t c) {
  if (t.shape(0) != a || t.shape(1) != b || t.shape(2) != c) t = Tensor3::from_shape({a, b, c});
}

// A matrix operand read in place: element (r, c) = p[r * rs + c * cs].
struct View {
  const float* p;
  std::size_t rs, cs;
  float operator()(std::size_t r, std::size_t c) const { return p[r * rs + c * cs]; }
};

// C [M, N] = A [M, K] B [K, N] (+ C when accumulate), C row-major with row stride ldc, on the
// flash kernel's register-blocked product (Microkernels::gemm) rather than BLAS: the linear
// layers here are small (64 x 64 weights), the kernel keeps 6 x 64 outputs in AVX-512
// registers, and a training run's bytes then depend on the instruction set's FMA, not on which
// kernels OpenBLAS picked for this CPU (OPENBLAS_CORETYPE). B is packed in depth chunks of
// kDepth (a 32 KiB panel stays in L1); rows run in blocks of the kernel's height, the last
// partial block and the last partial panel of columns through ws.edge.
void product(std::size_t M, std::size_t N, std::size_t K, View A, View B, float* C, std::size_t ldc, bool accumulate,
             ToyWorkspace& ws, std::size_t threads) {
  const flash::Microkernels<float>& mk = flash::best_microkernels<float>();
  constexpr std::size_t kDepth = 128, kRowsPerItem = 16;
  const std::size_t PW = mk.key_panel, MR = mk.qk_rows;
  const std::size_t full_panels = N / PW, panels = (N + PW - 1) / PW, main_rows = M / MR * MR;
  const std::size_t row_items = (main_rows / MR + kRowsPerItem - 1) / kRowsPerItem;
  ws.panels.resize(panels * std::min(K, kDepth) * PW);
  for (std::size_t k0 = 0; k0 < K; k0 += kDepth) {
    const std::size_t depth = std::min(kDepth, K - k0);
    const bool add = accumulate || k0 > 0;
    for (std::size_t p = 0; p < panels; ++p)
      for (std::size_t k = 0; k < depth; ++k) {
        float* row = ws.panels.data() + (p * depth + k) * PW;
        const std::size_t width = std::min(PW, N - p * PW);
        if (B.cs == 1) {
          std::copy_n(B.p + (k0 + k) * B.rs + p * PW, width, row);
        } else {
          for (std::size_t t = 0; t < width; ++t) row[t] = B(k0 + k, p * PW + t);
        }
        std::fill(row + width, row + PW, 0.0f);
      }
    const float* a = A.p + k0 * A.cs;
    // Whole row blocks and whole panels straight into C, split over threads by row blocks.
    detail::parallel_items(row_items, detail::thread_count(threads, row_items), [&](std::size_t, std::size_t item) {
      const std::size_t r0 = item * kRowsPerItem * MR, rows = std::min(kRowsPerItem * MR, main_rows - r0);
      if (full_panels) mk.gemm(a + r0 * A.rs, A.rs, A.cs, depth, rows, ws.panels.data(), full_panels, C + r0 * ldc, ldc, add);
    });
    // The edges through a padded block: columns past the last whole panel, rows past the last
    // whole block (zero rows of A).
    auto edge = [&](std::size_t r0, std::size_t rows, std::size_t p0, const float* ea, std::size_t ers,
                    std::size_t ecs) {
      const std::size_t width = (panels - p0) * PW, cols = N - p0 * PW, padded = (rows + MR - 1) / MR * MR;
      ws.edge.assign(padded * width, 0.0f);
      if (add)
        for (std::size_t r = 0; r < rows; ++r) std::copy_n(C + (r0 + r) * ldc + p0 * PW, cols, ws.edge.data() + r * width);
      mk.gemm(ea, ers, ecs, depth, padded, ws.panels.data() + p0 * depth * PW, panels - p0,
              ws.edge.data(), width, true);
      for (std::size_t r = 0; r < rows; ++r) std::copy_n(ws.edge.data() + r * width, cols, C + (r0 + r) * ldc + p0 * PW);
    };
    if (full_panels < panels && main_rows) edge(0, main_rows, full_panels, a, A.rs, A.cs);
    if (main_rows < M) {
      std::vector<float> rows_of_a(MR * depth, 0.0f);  // the last rows of A, contiguous, zero-padded
      for (std::size_t r = main_rows; r < M; ++r)
        for (std::size_t k = 0; k < depth; ++k) rows_of_a[(r - main_rows) * depth + k] = A(r, k0 + k);
      edge(main_rows, M - main_rows, 0, rows_of_a.data(), depth, 1);
    }
  }
}

// y [M, Out] = x [M, In] W^T (+ y when accumulate): torch.nn.Linear without a bias.
void linear(const Tensor2& x, const Tensor2& w, Tensor2& y, ToyWorkspace& ws, std::size_t threads,
            bool accumulate = false) {
  const std::size_t M = x.shape(0), In = x.shape(1), Out = w.shape(0);
  product(M, Out, In, {x.data(), In, 1}, {w.data(), 1, In}, y.data(), Out, accumulate, ws, threads);
}
// dx [M, In] (+)= dy [M, Out] W: the gradient of linear() with respect to its input.
void linear_grad_input(const Tensor2& dy, const Tensor2& w, Tensor2& dx, bool accumulate, ToyWorkspace& ws,
                       std::size_t threads) {
  const std::size_t M = dy.shape(0), Out = dy.shape(1), In = w.shape(1);
  product(M, In, Out, {dy.data(), Out, 1}, {w.data(), In, 1}, dx.data(), In, accumulate, ws, threads);
}
// dW [Out, In] = dy^T x: the gradient of linear() with respect to its weight.
void linear_grad_weight(const Tensor2& dy, const Tensor2& x, Tensor2& dw, ToyWorkspace& ws, std::size_t threads) {
  const std::size_t M = dy.shape(0), Out = dy.shape(1), In = x.shape(1);
  product(Out, In, M, {dy.data(), 1, Out}, {x.data(), In, 1}, dw.data(), In, false, ws, threads);
}

// [B*L, D] -> [B*H, L, d]: row b*L+i, columns h*d..h*d+d  ->  head b*H+h, row i (linear.hpp's
// split_heads, sequence by sequence).
void split_heads(const Tensor2& x, Tensor3& heads, const Dims& s) {
  ensure(heads, s.B * s.H, s.L, s.d);
  for (std::size_t b = 0; b < s.B; ++b)
    attn::split_heads(x.data() + b * s.L * s.D, s.D, s.L, s.H, s.d, heads.data() + b * s.H * s.L * s.d);
}
// The inverse: [B*H, L, d] -> [B*L, D].
void merge_heads(const Tensor3& heads, Tensor2& x, const Dims& s) {
  ensure(x, s.N, s.D);
  for (std::size_t b = 0; b < s.B; ++b)
    attn::merge_heads(heads.data() + b * s.H * s.L * s.d, s.L, s.H, s.d, x.data() + b * s.L * s.D, s.D);
}

// Causal attention with the 1/sqrt(d) scale, through the engine's door: flash's float32 tiles
// (what training times) or the float64 reference.
SdpaOptions attention_options(const Dims& s) {
  SdpaOptions so;
  so.causal = true;
  so.scale = 1.0 / std::sqrt(double(s.d));
  return so;
}
BackendOptions backend_options(const ToyPassOptions& o) {
  BackendOptions b;
  b.backend = o.backend;
  b.threads = o.threads;
  b.precision = FlashPrecision::float32;
  return b;
}

Dims check_batch(const ToyModel& model, const TokenBatch& batch) {
  const ToyConfig& c = model.config;
  const std::size_t L = batch.length - (batch.last_is_target ? 1 : 0);
  if (batch.batch < 1 || batch.length < 1 || L < 1) throw InputError("tokens: expected at least one token");
  if (batch.tokens.size() != batch.batch * batch.length) {
    throw InputError("tokens: expected " + std::to_string(batch.batch * batch.length) + " ids, got " +
                     std::to_string(batch.tokens.size()));
  }
  if (L > c.context) {
    throw InputError("tokens: " + std::to_string(L) + " tokens exceed the model's context of " +
                     std::to_string(c.context));
  }
  for (std::int32_t t : batch.tokens)
    if (t < 0 || std::size_t(t) >= c.vocab)
      throw InputError("tokens: id " + std::to_string(t) + " out of range [0, " + std::to_string(c.vocab) + ")");
  return {batch.batch, L, batch.batch * L, c.d_model, c.heads, c.d_model / c.heads, c.vocab, batch.length,
          batch.last_is_target};
}

// The forward of every layer, keeping what the backward needs in ws; leaves the logits.
void forward(const ToyModel& m, const TokenBatch& batch, ToyWorkspace& ws, const ToyPassOptions& o,
             const Dims& s) {
  const std::size_t n = m.layers.size();
  ws.residual.resize(n + 1);
  ws.q.resize(n), ws.k.resize(n), ws.v.resize(n), ws.merged.resize(n);
  ws.attention.resize(n);
  for (Tensor2& x : ws.residual) ensure(x, s.N, s.D);
  ensure(ws.grad_proj, s.N, s.D);

  // x_0 = embed[t] + pos[i]
  Tensor2& x0 = ws.residual[0];
  for (std::size_t r = 0; r < s.N; ++r) {
    const float* e = m.embed.data() + std::size_t(batch.tokens[s.token_index(r)]) * s.D;
    const float* p = m.pos.data() + (r % s.L) * s.D;
    for (std::size_t c = 0; c < s.D; ++c) x0.data()[r * s.D + c] = e[c] + p[c];
  }
  for (std::size_t l = 0; l < n; ++l) {
    const ToyLayer& w = m.layers[l];
    const Tensor2& x = ws.residual[l];
    linear(x, w.w_q, ws.grad_proj, ws, o.threads), split_heads(ws.grad_proj, ws.q[l], s);
    linear(x, w.w_k, ws.grad_proj, ws, o.threads), split_heads(ws.grad_proj, ws.k[l], s);
    linear(x, w.w_v, ws.grad_proj, ws, o.threads), split_heads(ws.grad_proj, ws.v[l], s);
    // Attention is the only place where positions exchange information.
    // Flash keeps its output and lse for the backward; the reference its weights.
    ws.attention[l] = attention(ws.q[l], ws.k[l], ws.v[l], nullptr, attention_options(s), backend_options(o),
                                /*with_weights=*/false);
    merge_heads(ws.attention[l].output, ws.merged[l], s);
    // The residual connection: the layer adds what it read to the stream.
    Tensor2& next = ws.residual[l + 1];
    std::copy(x.begin(), x.end(), next.begin());
    linear(ws.merged[l], w.w_o, next, ws, o.threads, /*accumulate=*/true);
  }
  ensure(ws.logits, s.N, s.V);
  linear(ws.residual[n], m.unembed, ws.logits, ws, o.threads);
}

// Cross-entropy of next-token prediction; turns ws.logits into dLoss/dlogits in place when
// `gradient` (softmax - onehot, divided by the number of predicted positions). exp(logit - max)
// is the flash kernel's vector exp2 of log2(e) (logit - max), kept in place for the gradient.
double cross_entropy(const TokenBatch& batch, Tensor2& logits, const Dims& s, bool gradient) {
  const flash::Microkernels<float>& mk = flash::best_microkernels<float>();
  constexpr float kLog2e = 1.44269504088896341f;
  const double count = double(s.B * (s.last_is_target ? s.L : s.L - 1));
  double total = 0;
  std::vector<float> scratch(gradient ? 0 : s.V);
  for (std::size_t r = 0; r < s.N; ++r) {
    float* row = logits.data() + r * s.V;
    if (!s.predicts(r)) {  // the last position has no next token
      if (gradient) std::fill(row, row + s.V, 0.0f);
      continue;
    }
    const std::size_t target = std::size_t(batch.tokens[s.token_index(r) + 1]);
    const float max = mk.row_max(row, s.V);
    total += double(max) - double(row[target]);
    float* e = gradient ? row : scratch.data();  // the loss alone leaves the logits as they are
    for (std::size_t c = 0; c < s.V; ++c) e[c] = row[c] * kLog2e;
    const float sum = mk.exp2_sum(e, s.V, max * kLog2e);
    total += std::log(double(sum));
    if (gradient) {
      const float to_probability = float(1.0 / (double(sum) * count));
      for (std::size_t c = 0; c < s.V; ++c) row[c] *= to_probability;
      row[target] -= float(1.0 / count);
    }
  }
  return count > 0 ? total / count : 0.0;
}

void backward(const ToyModel& m, const TokenBatch& batch, ToyModel& g, ToyWorkspace& ws, const ToyPassOptions& o,
              const Dims& s) {
  const std::size_t n = m.layers.size();
  ensure(ws.grad_x, s.N, s.D), ensure(ws.grad_merged, s.N, s.D);
  // logits = x_n unembed^T
  linear_grad_weight(ws.logits, ws.residual[n], g.unembed, ws, o.threads);
  linear_grad_input(ws.logits, m.unembed, ws.grad_x, false, ws, o.threads);
  for (std::size_t l = n; l-- > 0;) {
    const ToyLayer& w = m.layers[l];
    ToyLayer& gw = g.layers[l];
    // x_{l+1} = x_l + merged W_o^T: the residual passes grad_x through unchanged, and adds
    // the attention branch's gradient below.
    linear_grad_weight(ws.grad_x, ws.merged[l], gw.w_o, ws, o.threads);
    linear_grad_input(ws.grad_x, w.w_o, ws.grad_merged, false, ws, o.threads);
    split_heads(ws.grad_merged, ws.grad_heads, s);
    const SdpaGradients a = attention_backward(ws.q[l], ws.k[l], ws.v[l], nullptr, ws.attention[l], ws.grad_heads,
                                               attention_options(s), backend_options(o));
    const std::pair<const Tensor3*, std::pair<const Tensor2*, Tensor2*>> projections[] = {
        {&a.grad_q, {&w.w_q, &gw.w_q}}, {&a.grad_k, {&w.w_k, &gw.w_k}}, {&a.grad_v, {&w.w_v, &gw.w_v}}};
    for (const auto& [grad_heads, weights] : projections) {
      merge_heads(*grad_heads, ws.grad_proj, s);
      linear_grad_weight(ws.grad_proj, ws.residual[l], *weights.second, ws, o.threads);
      linear_grad_input(ws.grad_proj, *weights.first, ws.grad_x, /*accumulate=*/true, ws, o.threads);
    }
  }
  // x_0 = embed[t] + pos[i]: each row's gradient lands on its token's and its position's row.
  std::fill(g.embed.begin(), g.embed.end(), 0.0f);
  std::fill(g.pos.begin(), g.pos.end(), 0.0f);
  for (std::size_t r = 0; r < s.N; ++r) {
    const float* dx = ws.grad_x.data() + r * s.D;
    float* e = g.embed.data() + std::size_t(batch.tokens[s.token_index(r)]) * s.D;
    float* p = g.pos.data() + (r % s.L) * s.D;
    for (std::size_t c = 0; c < s.D; ++c) e[c] += dx[c], p[c] += dx[c];
  }
}

}  // namespace

double toy_loss_and_gradients(const ToyModel& model, const TokenBatch& batch, ToyModel* grads,
                              ToyWorkspace& ws, const ToyPassOptions& options) {
  if (options.backend == Backend::cuda) throw InputError("backend: training runs on \"flash\" or \"naive\"");
  const Dims s = check_batch(model, batch);
  forward(model, batch, ws, options, s);
  const double loss = cross_entropy(batch, ws.logits, s, grads != nullptr);
  if (grads) {
    if (grads->layers.size() != model.layers.size() || grads->embed.shape() != model.embed.shape() ||
        grads->pos.shape() != model.pos.shape())
      *grads = zero_toy_model(model.config);
    backward(model, batch, *grads, ws, options, s);
  }
  return loss;
}

ToyForward toy_forward(const ToyModel& model, const std::vector<std::int32_t>& tokens) {
  const TokenBatch batch{1, tokens.size(), tokens};
  const ToyPassOptions options{Backend::naive, 1};
  const Dims s = check_batch(model, batch);
  ToyWorkspace ws;
  forward(model, batch, ws, options, s);
  for (std::size_t l = 0; l < ws.residual.size(); ++l)  // residual[l] enters layer l: it leaves layer l - 1
    detail::require_finite_stream(ws.residual[l], l == 0 ? "the embeddings" : "layer " + std::to_string(l - 1));
  detail::require_finite_stream(ws.logits, "the unembedding (the logits)");
  ToyForward out;
  out.logits = std::move(ws.logits);
  for (SdpaResult& r : ws.attention) out.attention.push_back(std::move(r.weights));
  out.residual = std::move(ws.residual);
  out.q = std::move(ws.q), out.k = std::move(ws.k), out.v = std::move(ws.v);
  return out;
}

}  // namespace attn
