// GPT-2's pieces against values worked out by hand: GELU (tanh form), LayerNorm, and a whole
// forward pass of a model whose blocks write nothing, so that only the embeddings, the causal
// softmax of equal scores and the final LayerNorm remain.
#include "attn/engine/models/gpt2_model.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/random.hpp"
#include "gpt2_support.hpp"

using namespace attn;

TEST_CASE("gelu_new: the tanh form at hand-computed points") {
  // gelu_new(1) = 0.5 (1 + tanh(sqrt(2/pi) * 1.044715)) = 0.5 (1 + tanh(0.833562)) = 0.841192
  CHECK(gelu_new(0.0f) == 0.0f);
  CHECK(gelu_new(1.0f) == doctest::Approx(0.8411920).epsilon(1e-6));
  // The tanh is odd, so gelu(x) - gelu(-x) = x: gelu(-1) = 0.841192 - 1.
  CHECK(gelu_new(-1.0f) == doctest::Approx(-0.1588080).epsilon(1e-5));
  CHECK(gelu_new(2.0f) - gelu_new(-2.0f) == doctest::Approx(2.0f).epsilon(1e-6));
  // Far from 0 the tanh saturates: the identity on the right, zero on the left.
  CHECK(gelu_new(10.0f) == doctest::Approx(10.0f));
  CHECK(std::abs(gelu_new(-10.0f)) < 1e-6f);
}

TEST_CASE("layer_norm: one row by hand, a constant row, gamma and beta") {
  // [1, 2, 3, 4]: mean 2.5, biased variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25,
  // so y = [-1.5, -0.5, 0.5, 1.5] / sqrt(1.25) = [-1.341641, -0.447214, 0.447214, 1.341641].
  Tensor2 x = {{1, 2, 3, 4}, {3, 3, 3, 3}};
  const Tensor1 gamma = {1, 2, 1, 1}, beta = {0, 0, 0, 1};
  // eps = 0 only on the row with a variance: the constant row would divide by zero.
  const Tensor2 y = layer_norm(Tensor2(xt::view(x, xt::range(0, 1), xt::all())), gamma, beta, 0.0);
  CHECK(y(0, 0) == doctest::Approx(-1.341641));
  CHECK(y(0, 1) == doctest::Approx(-0.894427));  // -0.447214 x gamma 2
  CHECK(y(0, 2) == doctest::Approx(0.447214));
  CHECK(y(0, 3) == doctest::Approx(2.341641));   // 1.341641 + beta 1
  // A constant row has variance 0: eps keeps it finite, and the output is beta.
  const Tensor2 c = layer_norm(x, gamma, beta, 1e-5);
  for (std::size_t j = 0; j < 4; ++j) CHECK(c(1, j) == doctest::Approx(beta(j)));
}

TEST_CASE("gpt2_forward: blocks that write nothing leave equal causal weights and ln_f(wte) logits") {
  // vocab 2, D 2, one head. Every block weight and bias is 0 and so are the LayerNorm gammas of
  // the blocks: q = k = v = 0, so query i spreads 1/(i+1) over keys 0..i, and both branches add
  // 0. The residual stays x = wte[t] (wpe = 0); ln_f (gamma 1) maps [1, -1] to itself / sqrt(1
  // + eps), and the logits are that times wte^T: token 0 -> [2, -2] / sqrt(1 + 1e-5).
  Gpt2Config c;
  c.n_layer = 1, c.n_head = 1, c.n_embd = 2, c.vocab_size = 2, c.n_positions = 3;
  Gpt2Model m = zero_gpt2_model(c);
  m.wte = {{1, -1}, {-1, 1}};
  m.ln_f_weight = {1, 1};
  const Gpt2Forward f = gpt2_forward(m, {0, 1, 0});
  const double third = 1.0 / 3.0, expected[3][3] = {{1, 0, 0}, {0.5, 0.5, 0}, {third, third, third}};
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 3; ++j) CHECK(f.attention[0](0, i, j) == doctest::Approx(expected[i][j]));
  const double two = 2.0 / std::sqrt(1.0 + 1e-5);
  CHECK(f.logits(0, 0) == doctest::Approx(two));
  CHECK(f.logits(0, 1) == doctest::Approx(-two));
  CHECK(f.logits(1, 0) == doctest::Approx(-two));
  CHECK(f.logits(2, 1) == doctest::Approx(-two));

  CHECK_THROWS_WITH_AS(gpt2_forward(m, {0, 1, 0, 1}), doctest::Contains("n_positions"), InputError);
  CHECK_THROWS_WITH_AS(gpt2_forward(m, {2}), doctest::Contains("out of range"), InputError);
  CHECK_THROWS_AS(gpt2_forward(m, {}), InputError);
}

TEST_CASE("check_gpt2_config: each absurd value is refused by its name") {
  Gpt2Config c;
  c.n_head = 5;  // 768 % 5 != 0
  CHECK_THROWS_WITH_AS(check_gpt2_config(c), doctest::Contains("n_embd"), InputError);
  c = {};
  c.n_layer = 0;
  CHECK_THROWS_WITH_AS(check_gpt2_config(c), doctest::Contains("n_layer"), InputError);
  c = {};
  c.layer_norm_epsilon = -1;
  CHECK_THROWS_WITH_AS(check_gpt2_config(c), doctest::Contains("layer_norm_epsilon"), InputError);
  CHECK_NOTHROW(check_gpt2_config(Gpt2Config{}));  // GPT-2 small itself
}

namespace {

// A random GPT-2 wide enough that its GEMMs and its unembedding are split across threads
// (c_attn 3 x 256 columns, vocab 1100 over several 512-row slices).
Gpt2Model wide_random_gpt2() {
  Gpt2Config c;
  c.n_layer = 2, c.n_head = 4, c.n_embd = 256, c.vocab_size = 1100, c.n_positions = 16;
  return test::random_gpt2(c, 11, 0.1);
}

// The blocks and wte of an in-memory model served as stored weights are, counting the widenings.
class CountingStore final : public Gpt2StoredWeights {
 public:
  explicit CountingStore(Gpt2Model model) : model_(std::move(model)) {}
  void widen_block(std::size_t layer, Gpt2Block& out) const override { out = model_.blocks.at(layer); }
  Gpt2BlockMatrices block_matrices(std::size_t layer, Gpt2Block& vectors) const override {
    ++blocks;
    Gpt2Block& b = const_cast<Gpt2Block&>(model_.blocks.at(layer));  // read only: the parameter list wants it
    const std::vector<Gpt2Parameter> from = gpt2_block_parameters(b, layer), to = gpt2_block_parameters(vectors, layer);
    for (std::size_t i = 0; i < from.size(); ++i)
      if (from[i].shape.size() == 1) std::copy_n(from[i].data, from[i].shape[0], to[i].data);
    auto f32 = [](const Tensor2& w) { return StoredMatrix{w.data(), StoredType::f32, w.shape(0), w.shape(1)}; };
    return {f32(b.attn_weight), f32(b.attn_proj_weight), f32(b.fc_weight), f32(b.mlp_proj_weight)};
  }
  [[noreturn]] void non_finite(const std::string& parameter) const override {
    throw InputError("the store's " + parameter + " is not finite");
  }
  void widen_wte_rows(std::size_t first, std::size_t count, float* out) const override {
    const std::size_t D = model_.config.n_embd;
    std::copy_n(model_.wte.data() + first * D, count * D, out);
    if (!std::all_of(out, out + count * D, [](float v) { return std::isfinite(v); })) non_finite("wte.weight");
  }
  StoredMatrix stored_wte() const override {
    ++wte_read_in_place;
    return {model_.wte.data(), StoredType::f32, model_.wte.shape(0), model_.wte.shape(1)};
  }
  mutable std::size_t blocks = 0, wte_read_in_place = 0;

 private:
  Gpt2Model model_;
};

double max_difference(const Tensor2& a, const Tensor2& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(double(a.data()[i]) - double(b.data()[i])));
  return d;
}

}  // namespace

TEST_CASE("gpt2_unembed: split across threads, wte read in place, x wte^T as a plain float64 loop gives it") {
  const Gpt2Model m = wide_random_gpt2();
  const std::size_t L = 3, D = m.config.n_embd, V = m.config.vocab_size;
  Rng rng(3);
  Tensor2 x = Tensor2::from_shape({L, D});
  for (float& v : x) v = float(rng.normal());
  Gpt2Model stored = m;
  const auto store = std::make_shared<CountingStore>(m);
  stored.wte = Tensor2();
  stored.blocks.clear();
  stored.stored = store;
  const Tensor2 first = gpt2_unembed(m, x, 1);
  for (std::size_t threads : {1, 2, 3}) {
    const Tensor2 held = gpt2_unembed(m, x, threads), streamed = gpt2_unembed(stored, x, threads);
    CHECK(held == first);  // the same bits whatever the threads
    CHECK(streamed == first);
    double worst = 0;
    for (std::size_t i = 0; i < L; ++i) {
      for (std::size_t v = 0; v < V; ++v) {
        double expected = 0;
        for (std::size_t j = 0; j < D; ++j) expected += double(x(i, j)) * double(m.wte(v, j));
        worst = std::max(worst, std::fabs(held(i, v) - expected));
      }
    }
    CHECK(worst < 1e-4);  // a float32 dot product of 256 terms of size ~0.1
  }
  CHECK(store->wte_read_in_place == 3);
  // A held or stored wte with a NaN is named, by a decode step's few rows (stored_matmul, then a
  // second look) and by a prompt's (stored_gemm, as it widens).
  Gpt2Model poisoned = m;
  poisoned.wte(1000, 7) = NAN;
  Gpt2Model poisoned_stored = stored;
  poisoned_stored.stored = std::make_shared<CountingStore>(poisoned);
  Tensor2 prompt = Tensor2::from_shape({12, D});
  for (float& v : prompt) v = float(rng.normal());
  for (const Tensor2* rows : {&x, &prompt}) {
    CHECK_THROWS_WITH_AS(gpt2_unembed(poisoned, *rows, 2), doctest::Contains("\"wte.weight\" holds a non-finite value"),
                         InputError);
    CHECK_THROWS_WITH_AS(gpt2_unembed(poisoned_stored, *rows, 2), doctest::Contains("wte.weight"), InputError);
  }
}

TEST_CASE("gpt2_forward: weights left in a store give the held model's pass, widening each block once") {
  const Gpt2Model m = wide_random_gpt2();
  Gpt2Model stored = m;
  const auto store = std::make_shared<CountingStore>(m);
  stored.wte = Tensor2();
  stored.blocks.clear();
  stored.stored = store;
  const std::vector<std::int32_t> ids{5, 1099, 0, 42, 42, 7};
  for (std::size_t threads : {1, 2}) {
    store->blocks = 0;
    const Gpt2Forward held = gpt2_forward(m, ids, threads), streamed = gpt2_forward(stored, ids, threads);
    CHECK(store->blocks == m.config.n_layer);
    CHECK(max_difference(held.logits, streamed.logits) == 0.0);  // the same values through the same code
    for (std::size_t l = 0; l < m.config.n_layer; ++l)
      for (std::size_t i = 0; i < held.attention[l].size(); ++i)
        REQUIRE(held.attention[l].data()[i] == streamed.attention[l].data()[i]);
  }
  // One thread against two: the same sums, split by columns only.
  CHECK(max_difference(gpt2_forward(m, ids, 1).logits, gpt2_forward(m, ids, 2).logits) < 1e-5);
  CHECK_THROWS_WITH_AS(gpt2_forward(stored, {1100}), doctest::Contains("out of range"), InputError);
}
