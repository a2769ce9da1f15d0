// The toy transformer's gradients (toy_backprop.hpp) against central finite differences of an
// independent float64 forward written here from the equations in toy_model.hpp, for every
// parameter of a tiny model, on both attention backends; and Adam against its definition.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "attn/engine/training/adam.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/training/toy_backprop.hpp"

using namespace attn;

namespace {

using Vec = std::vector<double>;  // a row-major matrix of doubles

// The whole model in float64, straight from the definition: x = embed[t] + pos; per layer
// x += concat_h(softmax_causal(Q_h K_h^T / sqrt(d)) V_h) W_o^T; loss = mean next-token CE.
struct RefModel {
  ToyConfig c;
  std::vector<Vec> tensors;  // in toy_parameters() order
};

Vec matmul_t(const Vec& x, const Vec& w, std::size_t rows, std::size_t in, std::size_t out) {
  Vec y(rows * out, 0.0);  // y = x w^T
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t o = 0; o < out; ++o)
      for (std::size_t i = 0; i < in; ++i) y[r * out + o] += x[r * in + i] * w[o * in + i];
  return y;
}

double reference_loss(const RefModel& m, const TokenBatch& batch) {
  // The model reads L ids of each row of n; every id but the first is a target.
  const std::size_t D = m.c.d_model, H = m.c.heads, d = D / H, V = m.c.vocab, n = batch.length;
  const std::size_t L = batch.last_is_target ? n - 1 : n, nl = m.c.layers;
  const Vec& embed = m.tensors[0];
  const Vec& pos = m.tensors[1];
  const Vec& unembed = m.tensors[2 + 4 * nl];
  double total = 0;
  for (std::size_t b = 0; b < batch.batch; ++b) {
    const std::int32_t* t = batch.tokens.data() + b * n;
    Vec x(L * D);
    for (std::size_t i = 0; i < L; ++i)
      for (std::size_t c = 0; c < D; ++c) x[i * D + c] = embed[t[i] * D + c] + pos[i * D + c];
    for (std::size_t l = 0; l < nl; ++l) {
      const Vec q = matmul_t(x, m.tensors[2 + 4 * l], L, D, D), k = matmul_t(x, m.tensors[3 + 4 * l], L, D, D),
                v = matmul_t(x, m.tensors[4 + 4 * l], L, D, D);
      Vec merged(L * D, 0.0);
      for (std::size_t h = 0; h < H; ++h)
        for (std::size_t i = 0; i < L; ++i) {
          Vec s(i + 1);
          double max = -INFINITY, sum = 0;
          for (std::size_t j = 0; j <= i; ++j) {
            s[j] = 0;
            for (std::size_t c = 0; c < d; ++c) s[j] += q[i * D + h * d + c] * k[j * D + h * d + c];
            s[j] /= std::sqrt(double(d));
            max = std::max(max, s[j]);
          }
          for (double& e : s) sum += (e = std::exp(e - max));
          for (std::size_t j = 0; j <= i; ++j)
            for (std::size_t c = 0; c < d; ++c) merged[i * D + h * d + c] += s[j] / sum * v[j * D + h * d + c];
        }
      const Vec out = matmul_t(merged, m.tensors[5 + 4 * l], L, D, D);
      for (std::size_t n = 0; n < x.size(); ++n) x[n] += out[n];
    }
    const Vec logits = matmul_t(x, unembed, L, D, V);
    for (std::size_t i = 0; i + 1 < n; ++i) {
      double max = -INFINITY, sum = 0;
      for (std::size_t o = 0; o < V; ++o) max = std::max(max, logits[i * V + o]);
      for (std::size_t o = 0; o < V; ++o) sum += std::exp(logits[i * V + o] - max);
      total += max + std::log(sum) - logits[i * V + t[i + 1]];
    }
  }
  return total / double(batch.batch * (n - 1));
}

RefModel to_reference(ToyModel& model) {
  RefModel r{model.config, {}};
  for (const NamedTensor& p : toy_parameters(model)) r.tensors.emplace_back(p.tensor->begin(), p.tensor->end());
  return r;
}

TokenBatch tiny_batch() {
  return {2, 5, {1, 4, 2, 1, 4, 6, 0, 3, 6, 0}};
}

}  // namespace

TEST_CASE("toy model: loss matches the float64 reference, gradients match finite differences") {
  const ToyConfig config{7, 8, 2, 2, 6};
  ToyModel model = init_toy_model(config, 3);
  for (ToyLayer& layer : model.layers)  // larger projections: sharper, more informative softmaxes
    for (Tensor2* w : {&layer.w_q, &layer.w_k}) *w *= 3.0f;
  RefModel ref = to_reference(model);

  for (const bool last_is_target : {false, true})
  for (Backend backend : {Backend::flash, Backend::naive}) {
    CAPTURE(backend_name(backend));
    CAPTURE(last_is_target);
    TokenBatch batch = tiny_batch();
    batch.last_is_target = last_is_target;
    ToyModel grads = zero_toy_model(config);
    ToyWorkspace ws;
    const double loss = toy_loss_and_gradients(model, batch, &grads, ws, {backend, 1});
    CHECK(loss == doctest::Approx(reference_loss(ref, batch)).epsilon(1e-5));

    const std::vector<NamedTensor> g = toy_parameters(grads);
    for (std::size_t n = 0; n < g.size(); ++n) {
      CAPTURE(g[n].name);
      double worst = 0, largest = 0;
      for (std::size_t i = 0; i < ref.tensors[n].size(); ++i) {
        const double saved = ref.tensors[n][i], h = 1e-5;
        ref.tensors[n][i] = saved + h;
        const double up = reference_loss(ref, batch);
        ref.tensors[n][i] = saved - h;
        const double down = reference_loss(ref, batch);
        ref.tensors[n][i] = saved;
        const double numeric = (up - down) / (2 * h);
        worst = std::max(worst, std::abs(numeric - double(g[n].tensor->data()[i])));
        largest = std::max(largest, std::abs(numeric));
      }
      CHECK(largest > 1e-4);  // the check means something: this tensor does get a gradient
      CHECK(worst <= 1e-3 * largest + 1e-6);
    }
  }
}

TEST_CASE("toy model: gradients at sizes off the kernels' blocks match finite differences") {
  // The linear layers run on the flash kernel's register-blocked product: 160 rows (not a
  // multiple of any ISA's row block; more than one depth chunk for the weight gradients), vocab
  // 70 and d_model 24 (whole key panels and partial ones), so every edge path is exercised.
  const ToyConfig config{70, 24, 2, 1, 40};
  ToyModel model = init_toy_model(config, 5);
  RefModel ref = to_reference(model);
  TokenBatch batch{4, 40, {}};
  for (std::size_t n = 0; n < 160; ++n) batch.tokens.push_back(std::int32_t((n * 29 + 3) % 70));
  ToyModel grads = zero_toy_model(config);
  ToyWorkspace ws;
  const double loss = toy_loss_and_gradients(model, batch, &grads, ws, {Backend::flash, 1});
  CHECK(loss == doctest::Approx(reference_loss(ref, batch)).epsilon(1e-5));
  const std::vector<NamedTensor> g = toy_parameters(grads);
  for (std::size_t n = 0; n < g.size(); ++n) {
    CAPTURE(g[n].name);
    double worst = 0, largest = 0;
    const std::size_t size = ref.tensors[n].size();
    for (std::size_t i = 7 % size; i < size; i += size / 23 + 1) {  // a spread of entries, first and last rows included
      const double saved = ref.tensors[n][i], h = 1e-5;
      ref.tensors[n][i] = saved + h;
      const double up = reference_loss(ref, batch);
      ref.tensors[n][i] = saved - h;
      const double down = reference_loss(ref, batch);
      ref.tensors[n][i] = saved;
      const double numeric = (up - down) / (2 * h);
      worst = std::max(worst, std::abs(numeric - double(g[n].tensor->data()[i])));
      largest = std::max(largest, std::abs(numeric));
    }
    CHECK(largest > 1e-5);
    CHECK(worst <= 1e-3 * largest + 1e-6);
  }
}

TEST_CASE("toy model: flash and naive backends agree on a default-sized batch") {
  const ToyConfig config;  // vocab 64, D 64, 4 heads, 2 layers, context 32
  ToyModel model = init_toy_model(config, 42);
  TokenBatch batch{3, 32, {}};
  for (std::size_t n = 0; n < 96; ++n) batch.tokens.push_back(std::int32_t((n * 37 + 11) % 64));
  ToyModel gf = zero_toy_model(config), gn = zero_toy_model(config);
  ToyWorkspace wf, wn;
  const double lf = toy_loss_and_gradients(model, batch, &gf, wf, {Backend::flash, 1});
  const double ln = toy_loss_and_gradients(model, batch, &gn, wn, {Backend::naive, 1});
  CHECK(lf == doctest::Approx(ln).epsilon(1e-5));
  const std::vector<NamedTensor> a = toy_parameters(gf), b = toy_parameters(gn);
  for (std::size_t n = 0; n < a.size(); ++n) {
    CAPTURE(a[n].name);
    const float scale = xt::amax(xt::abs(*b[n].tensor))();
    CHECK(float(xt::amax(xt::abs(*a[n].tensor - *b[n].tensor))()) <= 1e-4f * scale + 1e-7f);
  }
}

TEST_CASE("toy model: bad tokens and configs are input errors") {
  ToyModel model = init_toy_model({7, 8, 2, 1, 6}, 1);
  ToyWorkspace ws;
  CHECK_THROWS_AS(toy_loss_and_gradients(model, {1, 2, {0, 7}}, nullptr, ws), InputError);
  CHECK_THROWS_AS(toy_loss_and_gradients(model, {1, 2, {-1, 0}}, nullptr, ws), InputError);
  CHECK_THROWS_AS(toy_loss_and_gradients(model, {1, 7, {0, 1, 2, 3, 4, 5, 6}}, nullptr, ws), InputError);
  CHECK_THROWS_AS(toy_loss_and_gradients(model, {2, 2, {0, 1}}, nullptr, ws), InputError);
  CHECK_THROWS_AS(check_toy_config({7, 9, 2, 1, 6}), InputError);
  CHECK_THROWS_AS(check_toy_config({0, 8, 2, 1, 6}), InputError);
}

TEST_CASE("toy model: forward gives causal attention rows that sum to one") {
  ToyModel model = init_toy_model({7, 8, 2, 2, 6}, 5);
  const ToyForward f = toy_forward(model, {3, 1, 4, 1, 5});
  REQUIRE(f.attention.size() == 2);
  CHECK(f.logits.shape(0) == 5);
  CHECK(f.logits.shape(1) == 7);
  for (const Tensor3& a : f.attention)
    for (std::size_t h = 0; h < 2; ++h)
      for (std::size_t i = 0; i < 5; ++i) {
        double sum = 0;
        for (std::size_t j = 0; j < 5; ++j) sum += a(h, i, j);
        CHECK(sum == doctest::Approx(1.0));
        if (i + 1 < 5) CHECK(a(h, i, i + 1) == 0.0f);
      }
}

TEST_CASE("Adam: first step moves every parameter by lr against its gradient's sign") {
  // With t = 1 the bias corrections make m_hat = g and v_hat = g^2: the step is lr * g/(|g|+eps).
  const ToyConfig config{3, 2, 1, 1, 2};
  ToyModel model = zero_toy_model(config), grads = zero_toy_model(config);
  grads.embed(0, 0) = 0.5f;
  grads.embed(1, 1) = -2.0f;
  Adam adam(config, {0.01, 0.9, 0.999, 1e-8});
  adam.step(model, grads);
  CHECK(model.embed(0, 0) == doctest::Approx(-0.01));
  CHECK(model.embed(1, 1) == doctest::Approx(0.01));
  CHECK(model.embed(2, 0) == 0.0f);
  adam.step(model, grads);  // same gradient again: the same step again
  CHECK(model.embed(0, 0) == doctest::Approx(-0.02));
  CHECK(adam.steps_taken() == 2);
}
