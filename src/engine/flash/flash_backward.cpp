// FlashAttention backward on the CPU: FlashAttention-2 (Dao 2023, arXiv 2307.08691),
// Algorithm 2. The [Lq, Lk] weights are never stored: each tile of P is recomputed from Q, K
// and the forward's lse (P = exp(S - L), exact because L is the row's log-sum-exp), and the
// softmax's backward needs only D = rowsum(dO o O) per row, one number the forward's output
// already holds. Extra memory is O(tile) per thread.
//
// Loop order as Algorithm 2: key/value blocks outer (dK_j, dV_j stay in cache while every
// query block streams past), query blocks inner (dQ_i accumulates across key blocks). Causal
// tiles above the diagonal are skipped by index with the forward's helpers (tile_math.hpp).
// Float64 inside, like the forward's default precision for attend and mha.
//
// Threads take whole query heads: each head writes its own dQ rows and its own copy of dK, dV,
// and the copies of a GQA group are summed in head order at the end, so the result does not
// depend on the number of threads (a training run stays byte-identical).
#include <algorithm>
#include <cmath>
#include <vector>

#include "attn/engine/backward.hpp"
#include "attn/engine/error.hpp"
#include "attn/engine/tile_math.hpp"
#include "backward_f64.hpp"
#include "parallel.hpp"

namespace attn {
namespace {

constexpr std::size_t kDefaultBlock = 64;  // a 64 x 64 tile of doubles is 32 KiB: L1/L2-sized

struct BackwardProblem {
  std::size_t H, Lq, d, Hkv, Lk, dv, group;
  std::size_t Br, Bc;  // query rows and keys per tile (Algorithm 2's B_r, B_c)
  double scale;        // S = scale * Q K^T (temperature folded in)
  bool causal;
  const Mask3* allowed;
};

// One thread's tiles, reused for every tile it processes.
struct Tiles {
  std::vector<double> kt, vt;  // K_j^T [d][Bc], V_j^T [dv][Bc]: products run along keys
  std::vector<double> p, ds;   // P_ij and dP_ij -> dS_ij, [Br][Bc]
  explicit Tiles(const BackwardProblem& pb)
      : kt(pb.d * pb.Bc), vt(pb.dv * pb.Bc), p(pb.Br * pb.Bc), ds(pb.Br * pb.Bc) {}
};

// y[0..n) += a * x[0..n): every product below is written as such contiguous updates, which
// the compiler vectorises (a dot product would need -ffast-math to be reordered).
inline void axpy(double a, const double* x, double* y, std::size_t n) {
  for (std::size_t c = 0; c < n; ++c) y[c] += a * x[c];
}

// Whether query i of head h may see key j: the explicit mask, and causal by index (on the
// diagonal tiles only; `full` says the tile lies entirely below it).
inline bool visible(const BackwardProblem& p, std::size_t h, std::size_t i, std::size_t j, bool full) {
  if (!full && !tile::causal_visible(long(i), long(j), long(p.Lq), long(p.Lk))) return false;
  return !p.allowed || (*p.allowed)(p.allowed->shape(0) == 1 ? 0 : h, i, j);
}

// Algorithm 2, lines 5-19, for query head h: q, dO, lse, D, dq are this head's rows; k, v its
// key/value head's; dk, dv this head's own share of dK, dV (zero on entry).
void backward_head(const BackwardProblem& p, std::size_t h, const double* q, const double* k,
                   const double* v, const double* dO, const double* lse, const double* D,
                   double* dq, double* dk, double* dv, Tiles& t) {
  const std::size_t Bc = p.Bc;
  for (std::size_t j0 = 0; j0 < p.Lk; j0 += Bc) {  // line 5: for each key block K_j, V_j
    const std::size_t cols = std::min(Bc, p.Lk - j0);
    // Line 6: load K_j, V_j (transposed, so that S and dP below are updates along the keys).
    // Line 7: dK_j, dV_j are rows [j0, j0 + cols) of dk, dv, accumulated in place.
    for (std::size_t c = 0; c < cols; ++c) {
      for (std::size_t x = 0; x < p.d; ++x) t.kt[x * Bc + c] = k[(j0 + c) * p.d + x];
      for (std::size_t x = 0; x < p.dv; ++x) t.vt[x * Bc + c] = v[(j0 + c) * p.dv + x];
    }
    for (std::size_t i0 = 0; i0 < p.Lq; i0 += p.Br) {  // line 8: for each query block Q_i
      const std::size_t rows = std::min(p.Br, p.Lq - i0);
      // Causal: no row of this block sees key j0 or later, so the tile is above the diagonal
      // and is skipped without being read. Tiles wholly below it need no per-element test.
      if (p.causal && std::size_t(tile::causal_key_end(long(i0 + rows), long(p.Lq), long(p.Lk))) <= j0) continue;
      const bool full = !p.causal || tile::causal_tile_full(long(i0), long(j0 + cols), long(p.Lq), long(p.Lk));

      for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t i = i0 + r;
        double* pr = t.p.data() + r * Bc;
        double* dsr = t.ds.data() + r * Bc;
        std::fill(pr, pr + cols, 0.0);
        std::fill(dsr, dsr + cols, 0.0);
        // A fully masked row (lse = -inf) attends to nothing: P = 0 and no gradient. Testing
        // it here also avoids exp(-inf - (-inf)) = NaN.
        if (lse[i] == -INFINITY) continue;
        // Line 10: S_ij = scale * Q_i K_j^T.
        for (std::size_t x = 0; x < p.d; ++x) axpy(q[i * p.d + x], t.kt.data() + x * Bc, pr, cols);
        // Line 11: P_ij = exp(S_ij - L_i); masked keys have P = 0.
        for (std::size_t c = 0; c < cols; ++c)
          pr[c] = visible(p, h, i, j0 + c, full) ? std::exp(p.scale * pr[c] - lse[i]) : 0.0;
        // Line 13: dP_ij = dO_i V_j^T.
        for (std::size_t x = 0; x < p.dv; ++x) axpy(dO[i * p.dv + x], t.vt.data() + x * Bc, dsr, cols);
        // Line 14: dS_ij = P_ij o (dP_ij - D_i).
        for (std::size_t c = 0; c < cols; ++c) dsr[c] = pr[c] * (dsr[c] - D[i]);
      }
      for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t i = i0 + r;
        const double* pr = t.p.data() + r * Bc;
        const double* dsr = t.ds.data() + r * Bc;
        for (std::size_t c = 0; c < cols; ++c) {
          const std::size_t j = j0 + c;
          if (pr[c] == 0.0) continue;  // masked, or a weight that underflowed: adds nothing
          axpy(pr[c], dO + i * p.dv, dv + j * p.dv, p.dv);                // line 12: dV_j += P_ij^T dO_i
          axpy(p.scale * dsr[c], k + j * p.d, dq + i * p.d, p.d);         // line 15: dQ_i += scale dS_ij K_j
          axpy(p.scale * dsr[c], q + i * p.d, dk + j * p.d, p.d);         // line 16: dK_j += scale dS_ij^T Q_i
        }
      }
    }
  }
}

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

}  // namespace

std::size_t flash_backward_default_block() { return kDefaultBlock; }

namespace detail {

GradsF64 flash_backward_f64(const TensorD3& q, const TensorD3& k, const TensorD3& v,
                            const Mask3* allowed, const TensorD3& output, const TensorD2& lse,
                            const TensorD3& grad_output, const FlashOptions& options) {
  // q [H, Lq, d], k [Hkv, Lk, d], v [Hkv, Lk, dv], output and grad_output [H, Lq, dv], lse [H, Lq]
  check_inputs(shape_of(q), shape_of(k), shape_of(v), allowed, shape_of(output), shape_of(lse),
               shape_of(grad_output), options);
  BackwardProblem p{};
  p.H = q.shape(0), p.Lq = q.shape(1), p.d = q.shape(2);
  p.Hkv = k.shape(0), p.Lk = k.shape(1), p.dv = v.shape(2), p.group = p.H / p.Hkv;
  p.Br = std::min(options.block_q ? options.block_q : kDefaultBlock, p.Lq);
  p.Bc = std::min(options.block_k ? options.block_k : kDefaultBlock, p.Lk);
  p.scale = *options.scale;
  p.causal = options.causal;
  p.allowed = allowed;

  // Line 4: D = rowsum(dO o O)   [H, Lq]
  TensorD2 D = TensorD2::from_shape({p.H, p.Lq});
  for (std::size_t h = 0; h < p.H; ++h)
    for (std::size_t i = 0; i < p.Lq; ++i) {
      double s = 0;
      for (std::size_t x = 0; x < p.dv; ++x) s += grad_output(h, i, x) * output(h, i, x);
      D(h, i) = s;
    }

  // Line 3: dQ = 0; dK, dV = 0, one copy per query head (summed over GQA groups below).
  GradsF64 g{xt::zeros<double>(q.shape()), xt::zeros<double>({p.H, p.Lk, p.d}),
             xt::zeros<double>({p.H, p.Lk, p.dv})};
  const std::size_t threads = detail::thread_count(options.threads, p.H);
  std::vector<Tiles> tiles;
  for (std::size_t n = 0; n < threads; ++n) tiles.emplace_back(p);
  detail::parallel_items(p.H, threads, [&](std::size_t worker, std::size_t h) {
    const std::size_t kvh = h / p.group;
    backward_head(p, h, q.data() + h * p.Lq * p.d, k.data() + kvh * p.Lk * p.d, v.data() + kvh * p.Lk * p.dv,
                  grad_output.data() + h * p.Lq * p.dv, lse.data() + h * p.Lq, D.data() + h * p.Lq,
                  g.dq.data() + h * p.Lq * p.d, g.dk.data() + h * p.Lk * p.d, g.dv.data() + h * p.Lk * p.dv,
                  tiles[worker]);
  });

  if (p.group > 1) {  // GQA: a key/value head's gradient is the sum over the heads that read it
    TensorD3 dk = xt::zeros<double>(k.shape()), dv = xt::zeros<double>(v.shape());
    for (std::size_t h = 0; h < p.H; ++h) {
      xt::view(dk, h / p.group) += xt::view(g.dk, h);
      xt::view(dv, h / p.group) += xt::view(g.dv, h);
    }
    g.dk = std::move(dk);
    g.dv = std::move(dv);
  }
  return g;
}

}  // namespace detail

SdpaGradients flash_backward(const Tensor3& q, const Tensor3& k, const Tensor3& v,
                             const Mask3* allowed, const FlashResult& forward,
                             const Tensor3& grad_output, const FlashOptions& options) {
  FlashOptions o = options;
  o.scale = resolved_scale(options.scale, q.shape(2));
  const detail::TensorD2 lse = forward.lse64.size() ? forward.lse64 : detail::TensorD2(xt::cast<double>(forward.lse));
  const detail::GradsF64 g = detail::flash_backward_f64(
      xt::cast<double>(q), xt::cast<double>(k), xt::cast<double>(v), allowed, xt::cast<double>(forward.output),
      lse, xt::cast<double>(grad_output), o);
  return {xt::cast<float>(g.dq), xt::cast<float>(g.dk), xt::cast<float>(g.dv)};
}

}  // namespace attn
