// The efficient-attention methods of attend (attention_methods.hpp), in float64.
#include "attn/engine/attention/attention_methods.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <xtensor/xmath.hpp>

#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/linear_attention.hpp"
#include "attn/engine/core/random.hpp"

namespace attn {
namespace {

using Rows = xt::xtensor<double, 2>;

Rows head_of(const Tensor3& t, std::size_t h) { return xt::cast<double>(xt::view(t, h, xt::all(), xt::all())); }

// FAVOR+'s positive features of the rows of x' = sqrt(scale) x, with w [m, d]. Each row is
// shifted by `shift(row)` in the exponent, a constant the normalisation cancels.
template <class Shift>
Rows favor_features(const Rows& x, const Rows& w, double scale, Shift shift) {
  const std::size_t n = x.shape(0), d = x.shape(1), m = w.shape(0);
  Rows exponent = Rows::from_shape({n, m});
  for (std::size_t i = 0; i < n; ++i) {
    double norm2 = 0;
    for (std::size_t c = 0; c < d; ++c) norm2 += scale * x(i, c) * x(i, c);
    for (std::size_t r = 0; r < m; ++r) {
      double dot = 0;
      for (std::size_t c = 0; c < d; ++c) dot += w(r, c) * std::sqrt(scale) * x(i, c);
      exponent(i, r) = dot - norm2 / 2;
    }
  }
  Rows phi = Rows::from_shape({n, m});
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t r = 0; r < m; ++r) phi(i, r) = std::exp(exponent(i, r) - shift(exponent, i)) / std::sqrt(double(m));
  return phi;
}

// A_ij = fq_i . fk_j over the visible j, each row normalised to 1 (a row with nothing visible
// stays 0).
Rows normalised_kernel(const Rows& fq, const Rows& fk, bool causal) {
  const std::size_t Lq = fq.shape(0), Lk = fk.shape(0), f = fq.shape(1);
  Rows a = xt::zeros<double>({Lq, Lk});
  for (std::size_t i = 0; i < Lq; ++i) {
    const std::size_t p = i + Lk - Lq;
    double total = 0;
    for (std::size_t j = 0; j < Lk && (!causal || j <= p); ++j) {
      double dot = 0;
      for (std::size_t r = 0; r < f; ++r) dot += fq(i, r) * fk(j, r);
      a(i, j) = dot;
      total += dot;
    }
    if (total > 0)
      for (std::size_t j = 0; j < Lk; ++j) a(i, j) /= total;
  }
  return a;
}

// The same outputs in linear time: out_i = S_p^T fq_i / (z_p^T fq_i) with S_p = sum fk_j v_j^T
// and z_p = sum fk_j over the keys query i sees (all; or j <= p = i + Lk - Lq with causal,
// summed key by key as the queries advance: the recurrence of linear_attention.hpp). A row with
// nothing visible stays 0, as in normalised_kernel.
Rows kernel_attention(const Rows& fq, const Rows& fk, const Rows& v, bool causal) {
  const std::size_t Lq = fq.shape(0), Lk = fk.shape(0), f = fq.shape(1), dv = v.shape(1);
  Rows S = xt::zeros<double>({f, dv}), out = xt::zeros<double>({Lq, dv});
  std::vector<double> z(f, 0.0);
  std::size_t added = 0;  // keys summed into S and z so far
  auto add_keys_before = [&](std::size_t end) {
    for (; added < end; ++added)
      for (std::size_t a = 0; a < f; ++a) {
        z[a] += fk(added, a);
        for (std::size_t c = 0; c < dv; ++c) S(a, c) += fk(added, a) * v(added, c);
      }
  };
  for (std::size_t i = 0; i < Lq; ++i) {
    if (causal && i + Lk < Lq) continue;  // no key at or before this query
    add_keys_before(causal ? std::min(Lk, i + Lk - Lq + 1) : Lk);
    double normaliser = 0;
    for (std::size_t a = 0; a < f; ++a) normaliser += z[a] * fq(i, a);
    if (!(normaliser > 0)) continue;
    for (std::size_t c = 0; c < dv; ++c) {
      double numerator = 0;
      for (std::size_t a = 0; a < f; ++a) numerator += S(a, c) * fq(i, a);
      out(i, c) = numerator / normaliser;
    }
  }
  return out;
}

// Performer's query and key features for one head. Each query's features share one shift (its
// own largest exponent); the keys share one over all of them: both cancel in the
// normalisation, and exp never overflows.
std::pair<Rows, Rows> performer_features(const Rows& q, const Rows& k, const Rows& w, double scale) {
  Rows fq = favor_features(q, w, scale, [](const Rows& x, std::size_t i) { return xt::amax(xt::view(x, i, xt::all()))(); });
  double key_top = -INFINITY;
  Rows fk = favor_features(k, w, scale, [&key_top](const Rows& x, std::size_t) {
    if (key_top == -INFINITY) key_top = xt::amax(x)();
    return key_top;
  });
  return {std::move(fq), std::move(fk)};
}

Rows normal_matrix(Rng& rng, std::size_t rows, std::size_t cols, double sd) {
  Rows m = Rows::from_shape({rows, cols});
  for (double& x : m) x = rng.normal() * sd;
  return m;
}

// a [n, m] times b [m, c].
Rows product(const Rows& a, const Rows& b) {
  Rows out = xt::zeros<double>({a.shape(0), b.shape(1)});
  for (std::size_t i = 0; i < a.shape(0); ++i)
    for (std::size_t t = 0; t < a.shape(1); ++t)
      for (std::size_t c = 0; c < b.shape(1); ++c) out(i, c) += a(i, t) * b(t, c);
  return out;
}

// Linformer for one head: softmax(scale q (E k)^T) (F v).
Rows linformer_head(const Rows& q, const Rows& k, const Rows& v, const Rows& e, const Rows& f, double scale) {
  const Rows kp = product(e, k), vp = product(f, v);  // [rank, d], [rank, dv]
  const std::size_t Lq = q.shape(0), rank = kp.shape(0), d = q.shape(1);
  Rows a = Rows::from_shape({Lq, rank});
  for (std::size_t i = 0; i < Lq; ++i) {
    double top = -INFINITY;
    for (std::size_t r = 0; r < rank; ++r) {
      double dot = 0;
      for (std::size_t c = 0; c < d; ++c) dot += q(i, c) * kp(r, c);
      a(i, r) = scale * dot;
      top = std::max(top, a(i, r));
    }
    double total = 0;
    for (std::size_t r = 0; r < rank; ++r) total += (a(i, r) = std::exp(a(i, r) - top));
    for (std::size_t r = 0; r < rank; ++r) a(i, r) /= total;
  }
  return product(a, vp);
}

}  // namespace

AttentionMethod parse_attention_method(const std::string& name) {
  if (name == "softmax") return AttentionMethod::softmax;
  if (name == "linear") return AttentionMethod::linear;
  if (name == "performer") return AttentionMethod::performer;
  if (name == "linformer") return AttentionMethod::linformer;
  if (name == "sparse") return AttentionMethod::sparse;
  throw InputError("method: expected \"softmax\", \"linear\", \"performer\", \"linformer\" or \"sparse\", got \"" +
                   name + "\"");
}

MethodResult method_attention(const Tensor3& q, const Tensor3& k, const Tensor3& v, const MethodOptions& o) {
  const std::size_t H = q.shape(0), Lq = q.shape(1), d = q.shape(2), Hkv = k.shape(0), Lk = k.shape(1), dv = v.shape(2);
  const std::size_t group = H / Hkv;
  MethodResult r{Tensor3::from_shape({H, Lq, dv}), std::nullopt};
  Rng rng(o.seed);
  Rows w, e, f;  // performer's features; linformer's projections (shared by every head)
  if (o.method == AttentionMethod::performer) {
    if (o.features == 0) throw InputError("features: performer needs m >= 1 random features");
    w = normal_matrix(rng, o.features, d, 1.0);
  } else if (o.method == AttentionMethod::linformer) {
    if (o.rank == 0) throw InputError("rank: linformer needs k >= 1 projected rows");
    if (o.causal) throw InputError("causal: linformer's projection mixes every key into each row; it is not causal");
    e = normal_matrix(rng, o.rank, Lk, 1.0 / std::sqrt(double(o.rank)));
    f = normal_matrix(rng, o.rank, Lk, 1.0 / std::sqrt(double(o.rank)));
  } else if (o.method != AttentionMethod::linear) {
    throw InputError(std::string("method: \"") + attention_method_name(o.method) + "\" is not computed here");
  }
  if (o.method == AttentionMethod::performer) r.draws = {w};
  if (o.method == AttentionMethod::linformer) r.draws = {e, f};
  const bool weights = o.with_weights && o.method != AttentionMethod::linformer;
  if (weights) r.weights = Tensor3::from_shape({H, Lq, Lk});
  for (std::size_t h = 0; h < H; ++h) {
    const Rows qh = head_of(q, h), kh = head_of(k, h / group), vh = head_of(v, h / group);
    Rows out;
    if (o.method == AttentionMethod::linformer) {
      out = linformer_head(qh, kh, vh, e, f, o.scale);
    } else {
      const auto [fq, fk] = o.method == AttentionMethod::linear ? std::pair(elu_plus_one(qh), elu_plus_one(kh))
                                                                : performer_features(qh, kh, w, o.scale);
      if (weights) {  // the quadratic form: the normalised kernel matrix, then A V
        const Rows a = normalised_kernel(fq, fk, o.causal);
        out = product(a, vh);
        for (std::size_t i = 0; i < Lq; ++i)
          for (std::size_t j = 0; j < Lk; ++j) (*r.weights)(h, i, j) = float(a(i, j));
      } else {
        out = kernel_attention(fq, fk, vh, o.causal);
      }
    }
    for (std::size_t i = 0; i < Lq; ++i)
      for (std::size_t c = 0; c < dv; ++c) r.output(h, i, c) = float(out(i, c));
  }
  return r;
}

const char* attention_method_name(AttentionMethod method) {
  switch (method) {
    case AttentionMethod::softmax: return "softmax";
    case AttentionMethod::linear: return "linear";
    case AttentionMethod::performer: return "performer";
    case AttentionMethod::linformer: return "linformer";
    case AttentionMethod::sparse: return "sparse";
  }
  return "?";
}

}  // namespace attn
