// GPT-2 through its KV caches (engine/models/gpt2_decode.hpp) against the full forward pass on the
// same prefix (gpt2_model.hpp), and the token choice of generation (lessons/gpt2_generate.hpp).
// The float64 reference for generation is scripts/check_gpt2_generate.py (CTest).
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "attn/engine/core/error.hpp"
#include "attn/engine/models/gpt2_decode.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/io/gpt2_model_file.hpp"
#include "attn/lessons/models/gpt2_generate.hpp"
#include "gpt2_support.hpp"
#include "support.hpp"

using namespace attn;

namespace {

// A random GPT-2 of 2 layers x 2 heads, width 8, 12 positions, vocab 11, spread wide enough
// that attention is far from uniform (as scripts/make_gpt2_folder.py does).
Gpt2Model random_gpt2() {
  Gpt2Config c;
  c.n_layer = 2, c.n_head = 2, c.n_embd = 8, c.vocab_size = 11, c.n_positions = 12;
  return test::random_gpt2(c, 5, 0.5);
}

double max_row_difference(const Tensor2& a, std::size_t row_a, const Tensor2& b, std::size_t row_b) {
  double d = 0;
  for (std::size_t v = 0; v < a.shape(1); ++v) d = std::max(d, std::fabs(double(a(row_a, v)) - double(b(row_b, v))));
  return d;
}

double max_abs(const Tensor2& a) {
  double m = 0;
  for (float x : a) m = std::max(m, std::fabs(double(x)));
  return m;
}

}  // namespace

TEST_CASE("gpt2 decoder: a prefill and every later step give the logits of a full forward on the prefix") {
  const Gpt2Model m = random_gpt2();
  const std::vector<std::int32_t> ids = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
  Gpt2Decoder decoder(m);
  const std::vector<std::int32_t> prompt(ids.begin(), ids.begin() + 4);
  const Tensor2 prefill = decoder.feed(prompt);
  const Tensor2 full4 = gpt2_forward(m, prompt).logits;
  for (std::size_t i = 0; i < 4; ++i) CHECK(max_row_difference(prefill, i, full4, i) <= 1e-4 * std::max(1.0, max_abs(full4)));
  for (std::size_t t = 4; t < ids.size(); ++t) {
    CAPTURE(t);
    const Tensor2 step = decoder.feed({ids[t]});
    REQUIRE(step.shape(0) == 1);
    const std::vector<std::int32_t> prefix(ids.begin(), ids.begin() + std::ptrdiff_t(t) + 1);
    const Tensor2 full = gpt2_forward(m, prefix).logits;
    CHECK(max_row_difference(step, 0, full, t) <= 1e-4 * std::max(1.0, max_abs(full)));
    // The same comparison against a prefix that lost its first token must fail: the check
    // can tell a cache that forgot position 0 from one that did not.
    const std::vector<std::int32_t> shifted(ids.begin() + 1, ids.begin() + std::ptrdiff_t(t) + 1);
    const Tensor2 wrong = gpt2_forward(m, shifted).logits;
    CHECK(max_row_difference(step, 0, wrong, t - 1) > 1e-2);
  }
  CHECK(decoder.length() == ids.size());
  for (const KvCache& c : decoder.caches()) CHECK(c.length() == ids.size());
  CHECK(decoder.cache_bytes() == 2 * 2 * ids.size() * 8 * sizeof(double));  // 2 layers x K,V x tokens x D x 8
  CHECK_THROWS_WITH_AS(decoder.feed({1, 2, 3}), doctest::Contains("n_positions"), InputError);
  CHECK_THROWS_WITH_AS(decoder.feed({11}), doctest::Contains("out of range"), InputError);
}

TEST_CASE("choose_next_token: greedy takes the argmax, the lowest id on a tie - top-k keeps only k") {
  Rng rng(1);
  const std::vector<float> z = {0.f, 2.f, 2.f, -1.f};
  const NextChoice g = choose_next_token(z, 0, 0, rng);
  CHECK(g.id == 1);
  // softmax: e^2 / (1 + 2 e^2 + e^-1)
  CHECK(g.probability == doctest::Approx(std::exp(2.0) / (1 + 2 * std::exp(2.0) + std::exp(-1.0))));
  for (int n = 0; n < 50; ++n) {  // top-2 of {2, 2}: id 1 or 2, each p = 1/2, never 0 or 3
    const NextChoice s = choose_next_token(z, 1.0, 2, rng);
    CHECK((s.id == 1 || s.id == 2));
    CHECK(s.probability == doctest::Approx(0.5));
  }
  // A very low temperature is greedy in effect; top-k 1 is greedy exactly.
  CHECK(choose_next_token(z, 1e-3, 0, rng).id != 3);
  CHECK(choose_next_token(std::vector<float>{5.f, 1.f, 9.f}, 2.0, 1, rng).id == 2);
}

TEST_CASE("gpt2_generate: the same seed gives the same tokens - bad settings are refused by name") {
  const Gpt2Model m = random_gpt2();
  Gpt2GenerateConfig c;
  c.prompt = {3, 1};
  c.new_tokens = 6;
  c.temperature = 1.5;
  c.seed = 9;
  c.check_every_step = true;
  const Gpt2Generation a = gpt2_generate(m, c), b = gpt2_generate(m, c);
  CHECK(a.ids == b.ids);
  REQUIRE(a.steps.size() == 6);
  for (const Gpt2GenerateStep& s : a.steps) CHECK(*s.max_diff_vs_full <= 1e-4 * std::max(1.0, s.logit_scale));
  CHECK(a.steps.back().cache_len == 7);  // 2 prompt tokens + 5 fed before the last choice

  Gpt2GenerateConfig bad = c;
  bad.new_tokens = 0;
  CHECK_THROWS_WITH_AS(gpt2_generate(m, bad), doctest::Contains("--tokens"), InputError);
  bad = c;
  bad.new_tokens = 11;  // 2 + 11 > 12 positions
  CHECK_THROWS_WITH_AS(gpt2_generate(m, bad), doctest::Contains("n_positions"), InputError);
  bad = c;
  bad.temperature = std::nan("");
  CHECK_THROWS_WITH_AS(gpt2_generate(m, bad), doctest::Contains("--temperature"), InputError);
  bad = c;
  bad.prompt = {};
  CHECK_THROWS_AS(gpt2_generate(m, bad), InputError);
}

namespace {

// IEEE binary16 bits of x, rounded toward zero (any half will do: the test compares two ways of
// reading the same file); magnitudes below the normal range become zero.
std::uint16_t to_half(float x) {
  const std::uint32_t b = std::bit_cast<std::uint32_t>(x), sign = (b >> 16) & 0x8000u;
  const int exponent = int((b >> 23) & 0xff) - 127 + 15;
  if (exponent <= 0) return std::uint16_t(sign);
  if (exponent >= 31) return std::uint16_t(sign | 0x7bffu);
  return std::uint16_t(sign | std::uint32_t(exponent) << 10 | ((b >> 13) & 0x3ffu));
}

// The tiny GPT-2 folder with every tensor stored as float16, written into dir.
void write_half_gpt2(const std::filesystem::path& dir) {
  const std::string src = test::data_path("gpt2_tiny");
  for (const char* name : {"config.json", "vocab.json", "merges.txt"})
    std::filesystem::copy_file(src + "/" + name, dir / name);
  const std::string bytes = test::read_text(src + "/model.safetensors");
  std::uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  Json header = Json::parse(bytes.substr(8, n));
  std::string data;
  for (auto& [name, t] : header.items()) {
    if (name == "__metadata__") continue;
    const std::size_t begin = t["data_offsets"][0], end = t["data_offsets"][1];
    const std::size_t first = data.size();
    for (std::size_t at = begin; at < end; at += 4) {
      float x;
      std::memcpy(&x, bytes.data() + 8 + n + at, 4);
      const std::uint16_t h = to_half(x);
      data.append(reinterpret_cast<const char*>(&h), 2);
    }
    t["dtype"] = "F16";
    t["data_offsets"] = {first, data.size()};
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const std::uint64_t m = text.size();
  std::ofstream out(dir / "model.safetensors", std::ios::binary);
  out.write(reinterpret_cast<const char*>(&m), 8);
  out << text << data;
}

// Six sampled tokens from the same model read two ways: the same ids and probabilities, bit for bit.
void check_same_generation(const Gpt2Model& stored, const Gpt2Model& held) {
  Gpt2GenerateConfig c;
  c.prompt = {3, 80, 117};
  c.new_tokens = 6;
  c.temperature = 0.9;
  c.seed = 4;
  const Gpt2Generation a = gpt2_generate(stored, c), b = gpt2_generate(held, c);
  CHECK(a.ids == b.ids);
  REQUIRE(a.steps.size() == b.steps.size());
  for (std::size_t i = 0; i < a.steps.size(); ++i) CHECK(a.steps[i].probability == b.steps[i].probability);
}

}  // namespace

TEST_CASE("gpt2_generate: float16 weights read where they are stored give the bits of the same weights widened into memory") {
  // generate reads a folder per_block: each matrix where the file stores it, the LayerNorms and
  // biases widened as a step reaches them. Widening is exact, so the steps match those of the
  // whole model widened into memory, bit for bit, while a step reads half the bytes.
  test::TempDir dir;
  write_half_gpt2(dir.path);
  const Gpt2Model stored = read_gpt2_model(dir.path.string(), Gpt2Loading::per_block);
  const Gpt2Model held = read_gpt2_model(dir.path.string(), Gpt2Loading::widen_all);
  REQUIRE(stored.stored);
  REQUIRE(stored.stored->stored_wte().type == StoredType::f16);
  check_same_generation(stored, held);
  CHECK(2 * gpt2_weight_stream(stored, 1).bytes == gpt2_weight_stream(held, 1).bytes);
}

TEST_CASE("gpt2_generate: weights read where they are stored give the tokens and probabilities of weights held as float32") {
  // The float32 folder the same way; and the yardstick counts the stored bytes.
  const std::string dir = test::data_path("gpt2_tiny");
  const Gpt2Model stored = read_gpt2_model(dir, Gpt2Loading::per_block);
  const Gpt2Model held = read_gpt2_model(dir, Gpt2Loading::widen_all);
  REQUIRE(stored.stored);
  REQUIRE_FALSE(held.stored);
  check_same_generation(stored, held);
  std::size_t bytes = 0;
  Gpt2Block vectors = gpt2_block_vectors(stored.config.n_embd);
  for (std::size_t l = 0; l < stored.config.n_layer; ++l) {
    const Gpt2BlockMatrices m = stored.stored->block_matrices(l, vectors);
    bytes += m.attn.bytes() + m.attn_proj.bytes() + m.fc.bytes() + m.mlp_proj.bytes();
  }
  bytes += stored.stored->stored_wte().bytes();
  const WeightStream s = gpt2_weight_stream(stored, 1);
  CHECK(s.bytes == bytes);
  CHECK(s.seconds > 0);
  // The tiny folder is float32: the stored bytes are the held tensors' bytes.
  CHECK(gpt2_weight_stream(held, 1).bytes == bytes);
}
