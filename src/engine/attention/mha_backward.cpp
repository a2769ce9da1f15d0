// The backward pass of multi-head attention (mha.hpp): mha()'s forward steps, kept, then
// undone last to first. Attention is the only step that mixes positions; the projections act
// on each row alone, and RoPE on each head vector alone, so their backward passes are short.
#include <cblas.h>

#include "attn/engine/attention/backward.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/mha.hpp"
#include "backward_f64.hpp"
#include "mha_parts.hpp"

namespace attn {
namespace {


// The backward of y = x W^T + b (torch.nn.Linear), x [L, in], w [out, in], dy [L, out]:
//   dx = dy W  [L, in],   dW = dy^T x  [out, in],   db = sum over rows of dy  [out]
struct LinearGrads {
  TensorD2 dx, dw;
  TensorD1 db;
};

LinearGrads linear_backward(const TensorD2& x, const Tensor2& w, const TensorD2& dy) {
  const int L = int(x.shape(0)), in = int(x.shape(1)), out = int(w.shape(0));
  const TensorD2 wd = xt::cast<double>(w);
  LinearGrads g{TensorD2::from_shape({x.shape(0), x.shape(1)}), TensorD2::from_shape({w.shape(0), w.shape(1)}),
                xt::zeros<double>({w.shape(0)})};
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, L, in, out, 1.0, dy.data(), out, wd.data(), in, 0.0,
              g.dx.data(), in);
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, L, 1.0, dy.data(), out, x.data(), in, 0.0,
              g.dw.data(), in);
  for (int i = 0; i < L; ++i)
    for (int o = 0; o < out; ++o) g.db(o) += dy(i, o);
  return g;
}

// The gradient through rotate_heads: every row of x [heads, L, d] turned back by its angle.
void unrotate_heads(TensorD3& x, std::span<const std::int64_t> positions, const RopeOptions& rope) {
  const std::span<double> rows(x.data(), x.size());
  if (rope.frequencies.empty()) apply_rope_inverse_inplace(rows, x.shape(2), positions, rope.base, rope.style);
  else apply_rope_inverse_inplace(rows, x.shape(2), positions, rope.frequencies, rope.style);
}

std::optional<Tensor1> bias_gradient(const std::optional<Tensor1>& bias, const TensorD1& db) {
  if (!bias) return std::nullopt;  // no bias given, no gradient reported
  return Tensor1(xt::cast<float>(db));
}

// The four projections' gradients, in float64: q, k, v's dx are the gradients of the
// query, key and value inputs.
struct ProjectionGrads {
  LinearGrads q, k, v, o;
};

ProjectionGrads backward_f64(const Tensor2& query, const Tensor2& key, const Tensor2& value,
                             const MhaWeights& w, const Mask3* allowed, const Tensor2& grad_output,
                             const MhaOptions& options) {
  // query [Lq, D], key and value [Lk, D], grad_output dy [Lq, D]
  const detail::HeadLayout l = detail::check_mha(query, key, value, w, allowed, options);
  const std::size_t Lq = query.shape(0), Lk = key.shape(0);
  check_grad_output_shape(shape_of(grad_output), {Lq, l.D});
  detail::check_backward_options(options.attention);

  // Forward, as mha() runs it, keeping what the backward reads.
  const TensorD2 xq = xt::cast<double>(query), xk = xt::cast<double>(key), xv = xt::cast<double>(value);
  TensorD3 q = split_heads(detail::project_rows(xq, 0, Lq, w.w_q, w.b_q), l.H);    // [H, Lq, d]
  TensorD3 k = split_heads(detail::project_rows(xk, 0, Lk, w.w_k, w.b_k), l.Hkv);  // [Hkv, Lk, d]
  const TensorD3 v = split_heads(detail::project_rows(xv, 0, Lk, w.w_v, w.b_v), l.Hkv);
  std::vector<std::int64_t> q_pos, k_pos;
  if (options.rope) {
    q_pos = rope_query_positions(*options.rope, Lq);
    k_pos = rope_key_positions(*options.rope, Lq, Lk);
    detail::rotate_heads(q, q_pos, *options.rope);
    detail::rotate_heads(k, k_pos, *options.rope);
  }
  const detail::SdpaF64 a =
      detail::attend_f64(q, k, v, allowed, options.attention, options.backend, /*with_weights=*/false);
  const TensorD2 o = merge_heads(a.output);  // [Lq, D], the input of W_o

  // Backward, last step first. y = o W_o^T + b_o:
  ProjectionGrads g;
  g.o = linear_backward(o, w.w_o, xt::cast<double>(grad_output));
  // Attention, per head (GQA: dk, dv come summed over each group):
  detail::GradsF64 da = detail::attend_backward_f64(q, k, v, allowed, a, split_heads(g.o.dx, l.H),
                                                    options.attention, options.backend);
  // RoPE: the gradient of the unrotated Q, K is the rotated one's, turned back.
  if (options.rope) {
    unrotate_heads(da.dq, q_pos, *options.rope);
    unrotate_heads(da.dk, k_pos, *options.rope);
  }
  // The input projections, each from its own input:
  g.q = linear_backward(xq, w.w_q, merge_heads(da.dq));
  g.k = linear_backward(xk, w.w_k, merge_heads(da.dk));
  g.v = linear_backward(xv, w.w_v, merge_heads(da.dv));
  return g;
}

// The weights' gradients, rounded to float32 once.
MhaGradients weight_gradients(const ProjectionGrads& g, const MhaWeights& w) {
  MhaGradients r;
  r.grad_w_q = xt::cast<float>(g.q.dw);
  r.grad_w_k = xt::cast<float>(g.k.dw);
  r.grad_w_v = xt::cast<float>(g.v.dw);
  r.grad_w_o = xt::cast<float>(g.o.dw);
  r.grad_b_q = bias_gradient(w.b_q, g.q.db);
  r.grad_b_k = bias_gradient(w.b_k, g.k.db);
  r.grad_b_v = bias_gradient(w.b_v, g.v.db);
  r.grad_b_o = bias_gradient(w.b_o, g.o.db);
  return r;
}

}  // namespace

MhaGradients mha_backward(const Tensor2& query, const Tensor2& key, const Tensor2& value,
                          const MhaWeights& weights, const Mask3* allowed,
                          const Tensor2& grad_output, const MhaOptions& options) {
  const ProjectionGrads g = backward_f64(query, key, value, weights, allowed, grad_output, options);
  MhaGradients r = weight_gradients(g, weights);
  r.grad_query = xt::cast<float>(g.q.dx);
  r.grad_key = xt::cast<float>(g.k.dx);
  r.grad_value = xt::cast<float>(g.v.dx);
  return r;
}

MhaGradients mha_self_backward(const Tensor2& x, const MhaWeights& weights, const Mask3* allowed,
                               const Tensor2& grad_output, const MhaOptions& options) {
  const ProjectionGrads g = backward_f64(x, x, x, weights, allowed, grad_output, options);
  MhaGradients r = weight_gradients(g, weights);
  // x reaches the output along three paths (as query, key and value): their gradients add,
  // in float64, then round once.
  const TensorD2 dx = g.q.dx + g.k.dx + g.v.dx;
  r.grad_query = xt::cast<float>(dx);
  return r;
}

}  // namespace attn
