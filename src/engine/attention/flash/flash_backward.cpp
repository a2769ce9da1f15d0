// FlashAttention backward on the CPU: FlashAttention-2 (Dao 2023, arXiv 2307.08691),
// Algorithm 2. The [Lq, Lk] weights are never stored: each tile of P is recomputed from Q, K
// and the forward's lse (P = exp(S - L), exact because L is the row's log-sum-exp), and the
// softmax's backward needs only D = rowsum(dO o O) per row, one number the forward's output
// already holds. Extra memory is O(tile) per thread.
//
// Loop order as Algorithm 2: key/value blocks outer (dK_j, dV_j stay in cache while every
// query block streams past), query blocks inner (dQ_i accumulates across key blocks). Causal
// tiles above the diagonal are skipped by index with the forward's helpers (tile_math.hpp).
// Float64 inside for attend and mha (the reference, on the generic loops: the same numbers on
// every CPU); float32 for training, on the loops compiled for this CPU's widest ISA
// (microkernels_impl.hpp's backward_head).
//
// Threads take whole query heads: each head writes its own dQ rows and its own copy of dK, dV,
// and the copies of a GQA group are summed in head order at the end, so the result does not
// depend on the number of threads (a training run stays byte-identical).
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "attn/engine/attention/backward.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/tile_math.hpp"
#include "attention/backward_f64.hpp"
#include "microkernels.hpp"
#include "platform/parallel.hpp"

namespace attn {
namespace {

using flash::BackwardProblem;
using flash::BackwardTiles;

constexpr std::size_t kDefaultBlock = 64;  // a 64 x 64 tile of doubles is 32 KiB: L1/L2-sized

void check_inputs(const Shape& q, const Shape& k, const Shape& v, const Mask3* allowed,
                  const Shape& output, const Shape& lse, const Shape& grad_output,
                  const FlashOptions& options) {
  check_head_shapes(q, k, v, allowed);
  const Shape o{q[0], q[1], v[2]};
  if (output != o) throw InputError("output: expected shape " + shape_string(o) + ", got " + shape_string(output));
  if (lse != Shape{q[0], q[1]}) {
    throw InputError("lse: expected shape " + shape_string(Shape{q[0], q[1]}) + ", got " + shape_string(lse));
  }
  check_grad_output_shape(grad_output, o);
  if (!options.scale || !std::isfinite(*options.scale)) throw InputError("scale: expected a finite number");
  for (std::size_t b : {options.block_q, options.block_k})
    if (b > 65536) throw InputError("block_size: expected at most 65536, got " + std::to_string(b));
}

// The whole backward in element type T on one head loop: dq [H, Lq, d], and dk, dv one copy
// per query head [H, Lk, d] / [H, Lk, dv] (summed over GQA groups by the caller).
template <class T>
void run_backward(const BackwardProblem& p, flash::BackwardHeadFn<T> head, std::size_t thread_option, const T* q,
                  const T* k, const T* v, const T* output, const T* lse, const T* dO, T* dq, T* dk, T* dv) {
  // Line 4: D = rowsum(dO o O)   [H, Lq], summed in double.
  std::vector<T> D(p.H * p.Lq);
  for (std::size_t r = 0; r < p.H * p.Lq; ++r) {
    double s = 0;
    for (std::size_t x = 0; x < p.dv; ++x) s += double(dO[r * p.dv + x]) * double(output[r * p.dv + x]);
    D[r] = T(s);
  }
  const std::size_t threads = detail::thread_count(thread_option, p.H);
  std::vector<BackwardTiles<T>> tiles;
  for (std::size_t n = 0; n < threads; ++n) tiles.emplace_back(p);
  detail::parallel_items(p.H, threads, [&](std::size_t worker, std::size_t h) {
    const std::size_t kvh = h / p.group;
    head(p, h, q + h * p.Lq * p.d, k + kvh * p.Lk * p.d, v + kvh * p.Lk * p.dv, dO + h * p.Lq * p.dv,
         lse + h * p.Lq, D.data() + h * p.Lq, dq + h * p.Lq * p.d, dk + h * p.Lk * p.d, dv + h * p.Lk * p.dv,
         tiles[worker]);
  });
}

BackwardProblem problem(const Shape& q, const Shape& k, const Shape& v, const Mask3* allowed,
                        const FlashOptions& options) {
  BackwardProblem p{};
  p.H = q[0], p.Lq = q[1], p.d = q[2];
  p.Hkv = k[0], p.Lk = k[1], p.dv = v[2], p.group = p.H / p.Hkv;
  p.Br = std::min(options.block_q ? options.block_q : kDefaultBlock, p.Lq);
  p.Bc = std::min(options.block_k ? options.block_k : kDefaultBlock, p.Lk);
  p.scale = *options.scale;
  p.causal = options.causal;
  p.allowed = allowed;
  p.rule = options.mask_rule && options.mask_rule->any() ? options.mask_rule : nullptr;
  p.score_mod = options.score_mod && options.score_mod->any() ? options.score_mod : nullptr;
  p.temperature = options.temperature;
  return p;
}

// GQA: a key/value head's gradient is the sum over the query heads that read it, in head order.
template <class Tensor>
Tensor sum_groups(Tensor per_head, std::size_t group) {
  if (group == 1) return per_head;  // moved, not copied
  Tensor sum = xt::zeros<typename Tensor::value_type>({per_head.shape(0) / group, per_head.shape(1), per_head.shape(2)});
  for (std::size_t h = 0; h < per_head.shape(0); ++h) xt::view(sum, h / group) += xt::view(per_head, h);
  return sum;
}

}  // namespace

std::size_t flash_backward_default_block() { return kDefaultBlock; }

namespace detail {

GradsF64 flash_backward_f64(const TensorD3& q, const TensorD3& k, const TensorD3& v,
                            const Mask3* allowed, const TensorD3& output, const TensorD2& lse,
                            const TensorD3& grad_output, const FlashOptions& options) {
  // q [H, Lq, d], k [Hkv, Lk, d], v [Hkv, Lk, dv], output and grad_output [H, Lq, dv], lse [H, Lq]
  check_inputs(shape_of(q), shape_of(k), shape_of(v), allowed, shape_of(output), shape_of(lse),
               shape_of(grad_output), options);
  const BackwardProblem p = problem(shape_of(q), shape_of(k), shape_of(v), allowed, options);
  // Line 3: dQ = 0; dK, dV = 0, one copy per query head.
  GradsF64 g{xt::zeros<double>(q.shape()), xt::zeros<double>({p.H, p.Lk, p.d}),
             xt::zeros<double>({p.H, p.Lk, p.dv})};
  run_backward<double>(p, flash::microkernels_generic<double>().backward_head, options.threads, q.data(), k.data(),
                       v.data(), output.data(), lse.data(), grad_output.data(), g.dq.data(), g.dk.data(),
                       g.dv.data());
  g.dk = sum_groups(std::move(g.dk), p.group);
  g.dv = sum_groups(std::move(g.dv), p.group);
  return g;
}

}  // namespace detail

SdpaGradients flash_backward(const Tensor3& q, const Tensor3& k, const Tensor3& v,
                             const Mask3* allowed, const FlashResult& forward,
                             const Tensor3& grad_output, const FlashOptions& options) {
  FlashOptions o = options;
  o.scale = resolved_scale(options.scale, q.shape(2));
  if (o.precision == FlashPrecision::float32) {
    check_inputs(shape_of(q), shape_of(k), shape_of(v), allowed, shape_of(forward.output), shape_of(forward.lse),
                 shape_of(grad_output), o);
    const BackwardProblem p = problem(shape_of(q), shape_of(k), shape_of(v), allowed, o);
    SdpaGradients g{xt::zeros<float>(q.shape()), xt::zeros<float>({p.H, p.Lk, p.d}), xt::zeros<float>({p.H, p.Lk, p.dv})};
    run_backward<float>(p, flash::microkernels_for<float>(o.isa).backward_head, o.threads, q.data(), k.data(), v.data(),
                        forward.output.data(), forward.lse.data(), grad_output.data(), g.grad_q.data(), g.grad_k.data(),
                        g.grad_v.data());
    g.grad_k = sum_groups(std::move(g.grad_k), p.group);
    g.grad_v = sum_groups(std::move(g.grad_v), p.group);
    return g;
  }
  const TensorD2 lse = forward.lse64.size() ? forward.lse64 : TensorD2(xt::cast<double>(forward.lse));
  const detail::GradsF64 g = detail::flash_backward_f64(
      xt::cast<double>(q), xt::cast<double>(k), xt::cast<double>(v), allowed, xt::cast<double>(forward.output),
      lse, xt::cast<double>(grad_output), o);
  return {xt::cast<float>(g.dq), xt::cast<float>(g.dk), xt::cast<float>(g.dv)};
}

}  // namespace attn
