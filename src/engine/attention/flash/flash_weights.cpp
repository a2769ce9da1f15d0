// What the flash kernel does not hand back: the attention weights, recomputed for the JSON
// contract as FlashAttention's backward pass recomputes them.
#include <algorithm>
#include <cmath>
#include <vector>

#include "attention/sdpa_f64.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/flash.hpp"
#include "attn/engine/attention/softmax.hpp"
#include "attn/engine/attention/tile_math.hpp"
#include "platform/parallel.hpp"

namespace attn {
namespace {

// q . k in float64 (q and K widened to float64 first: exact for float), in four interleaved
// partial sums (c mod 4) added pairwise at the end: one running sum waits on every previous
// addition (4 cycles each), four keep the adder busier.
double dot(const double* q, const double* k, std::size_t d) {
  double part[4] = {0, 0, 0, 0};
  std::size_t c = 0;
  for (; c + 4 <= d; c += 4)
    for (std::size_t p = 0; p < 4; ++p) part[p] += q[c + p] * k[c + p];
  for (; c < d; ++c) part[c % 4] += q[c] * k[c];
  return (part[0] + part[1]) + (part[2] + part[3]);
}

// dot for four keys at once: each key keeps dot's four partial sums, added in dot's order, so
// each result has dot's bits. One key's sums wait on their own additions; four keys' do not wait
// on each other (docs/performance.md, GPT-2 forward speed).
using Pair [[gnu::vector_size(16)]] = double;  // partial sums (0, 1) or (2, 3)

void dots4(const double* q, const double* const (&k)[4], std::size_t d, double* out) {
  Pair lo[4] = {}, hi[4] = {};
  std::size_t c = 0;
  for (; c + 4 <= d; c += 4) {
    Pair q01, q23;
    __builtin_memcpy(&q01, q + c, 16);
    __builtin_memcpy(&q23, q + c + 2, 16);
    for (std::size_t t = 0; t < 4; ++t) {
      Pair k01, k23;
      __builtin_memcpy(&k01, k[t] + c, 16);
      __builtin_memcpy(&k23, k[t] + c + 2, 16);
      lo[t] += q01 * k01;
      hi[t] += q23 * k23;
    }
  }
  for (std::size_t t = 0; t < 4; ++t) {
    double part[4] = {lo[t][0], lo[t][1], hi[t][0], hi[t][1]};
    for (std::size_t r = c; r < d; ++r) part[r % 4] += q[r] * k[t][r];
    out[t] = (part[0] + part[1]) + (part[2] + part[3]);
  }
}

// Keys of K widened to float64 at a time: 256 keys x d = 128 are 256 KiB, however long K is.
constexpr std::size_t kKeyBlock = 256;

// One row's scores against keys [j0, j1), whose float64 rows start at kd (key j0's first):
// score(q . k, j) where visible[j - j0], -inf elsewhere. Runs of four visible keys go through
// dots4, the rest through dot: the same bits either way.
template <class Score>
void row_scores(const double* qd, const double* kd, std::size_t d, std::size_t j0, std::size_t j1,
                const char* visible, const Score& score, double* row) {
  for (std::size_t j = j0; j < j1;) {
    const char* v = visible + (j - j0);
    const double* kj = kd + (j - j0) * d;
    if (j + 4 <= j1 && v[0] && v[1] && v[2] && v[3]) {
      const double* const keys[4] = {kj, kj + d, kj + 2 * d, kj + 3 * d};
      double s[4];
      dots4(qd, keys, d, s);
      for (std::size_t t = 0; t < 4; ++t) row[j + t] = score(s[t], j + t);
      j += 4;
    } else {
      row[j] = v[0] ? score(dot(qd, kj, d), j) : -INFINITY;
      ++j;
    }
  }
}

// The weights of a flash run, which the kernel never forms: for every row the kernel attended
// (lse > -inf), softmax of scale * q_i . k_j over the visible keys, recomputed in float64 and
// normalised by the row's own sum; rows the kernel found fully masked (lse = -inf) are zero.
// The row's own sum, not exp(s - lse): a float32 lse of 1e4 is off by 1e-3 and would skew
// every weight of its row by as much.
template <class T>
xt::xtensor<double, 3> recompute_rows(const xt::xtensor<T, 3>& q, const xt::xtensor<T, 3>& k,
                                      const xt::xtensor<double, 2>& lse, const Mask3* allowed, bool causal,
                                      double scale, const ScoreMod* mod, double temperature, std::size_t threads) {
  const std::size_t H = q.shape(0), Lq = q.shape(1), d = q.shape(2), Lk = k.shape(1);
  const std::size_t group = H / k.shape(0);
  const bool modded = mod && mod->any();  // on scale * q.k, before the temperature (variant.hpp)
  xt::xtensor<double, 3> w = xt::zeros<double>({H, Lq, Lk});
  // One head per work item: each row is computed alone, so the bits do not depend on the threads.
  // Row i's scores go where its weights will be, a block of K at a time, then its softmax.
  detail::parallel_items(H, detail::thread_count(threads, H), [&](std::size_t, std::size_t h) {
    double* wh = w.data() + h * Lq * Lk;
    const T* kh = k.data() + h / group * Lk * d;
    std::vector<double> qd(d), kd(std::min(Lk, kKeyBlock) * d);
    std::vector<char> visible(kKeyBlock);
    for (std::size_t j0 = 0; j0 < Lk; j0 += kKeyBlock) {
      const std::size_t j1 = std::min(Lk, j0 + kKeyBlock);
      std::copy(kh + j0 * d, kh + j1 * d, kd.begin());  // exact for float
      for (std::size_t i = 0; i < Lq; ++i) {
        if (lse(h, i) == -INFINITY) continue;  // fully masked row: all zero
        std::copy_n(q.data() + (h * Lq + i) * d, d, qd.begin());
        for (std::size_t j = j0; j < j1; ++j)
          visible[j - j0] = (!causal || tile::causal_visible(long(i), long(j), long(Lq), long(Lk))) &&
                            (!allowed || (*allowed)(allowed->shape(0) == 1 ? 0 : h, i, j));
        auto score = [&](double s, std::size_t j) {
          return modded ? mod->apply(s * scale * temperature, h, long(i) + long(Lk) - long(Lq), long(j)) / temperature
                        : s * scale;
        };
        row_scores(qd.data(), kd.data(), d, j0, j1, visible.data(), score, wh + i * Lk);
      }
    }
    // The softmax over the row up to its last score that is not -inf: past it every weight is
    // exactly 0 and every term of the sum +0, so where the scores are finite the bits stay (a
    // square causal row's exps halve). A NaN or +inf score, which leaves the whole row NaN, now
    // leaves that tail 0.
    for (std::size_t i = 0; i < Lq; ++i) {
      if (lse(h, i) == -INFINITY) continue;
      double* row = wh + i * Lk;
      std::size_t end = Lk;
      while (end > 0 && row[end - 1] == -INFINITY) --end;
      softmax_row_inplace(row, end);
      std::fill(row + end, row + Lk, 0.0);
    }
  });
  return w;
}

}  // namespace

namespace detail {

TensorD3 recompute_weights_f64(const TensorD3& q, const TensorD3& k, const TensorD2& lse,
                               const Mask3* allowed, bool causal, double scale, const ScoreMod* score_mod,
                               double temperature) {
  return recompute_rows<double>(q, k, lse, allowed, causal, scale, score_mod, temperature, 1);
}

}  // namespace detail

Tensor3 recompute_weights(const Tensor3& q, const Tensor3& k, const xt::xtensor<double, 2>& lse,
                          const Mask3* allowed, bool causal, std::optional<double> scale,
                          const ScoreMod* score_mod, double temperature, std::size_t threads) {
  return xt::cast<float>(recompute_rows(q, k, lse, allowed, causal, resolved_scale(scale, q.shape(2)), score_mod,
                                        temperature, threads));
}

}  // namespace attn
