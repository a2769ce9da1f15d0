#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>

#include "attn/lessons/concepts/complexity.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/lessons/measure/scaling.hpp"

using namespace attn;
using u64 = std::uint64_t;

TEST_CASE("complexity: FLOPs and bytes equal the closed forms, recomputed here, for several n, D, H") {
  struct Case { u64 n, D, H, B; bool causal; };
  for (const Case c : {Case{128, 512, 8, 4, false}, Case{1000, 768, 12, 2, false}, Case{4096, 4096, 32, 2, true},
                       Case{7, 6, 3, 4, true}, Case{1, 1, 1, 1, false}, Case{8192, 512, 8, 4, true}}) {
    CAPTURE(c.n);
    CAPTURE(c.causal);
    const ComplexityRow r = count_attention(c.n, c.D, c.H, c.causal, c.B);
    const u64 qkv = 3 * (2 * c.n * c.D * c.D);  // three [n, D] x [D, D] products, 2 FLOPs per MAC
    const u64 out = 2 * c.n * c.D * c.D;
    const u64 mm = c.causal ? c.n * c.n * c.D : 2 * c.n * c.n * c.D;
    const u64 sm = c.causal ? 3 * c.H * (c.n * (c.n + 1) / 2) : 3 * c.H * c.n * c.n;
    CHECK(r.flops.qkv_proj == qkv);
    CHECK(r.flops.out_proj == out);
    CHECK(r.flops.scores == mm);
    CHECK(r.flops.weighted_sum == mm);
    CHECK(r.flops.softmax == sm);
    CHECK(r.flops.total == qkv + out + 2 * mm + sm);
    CHECK(r.scores_naive_bytes == c.H * c.n * c.n * c.B);
    CHECK(r.tiled_extra_bytes == 2 * c.H * c.n * c.B);
    CHECK(r.attention_elements == c.H * c.n * c.n);
  }
}

TEST_CASE("complexity: agrees with the usual analyze_attention_complexity formulas (B=1, h=8, d_model=512)") {
  // The usual tutorial formulas: attn_size = B h n^2, memory = attn_size * 4 (FP32), flops = 4 B h n^2 d_k.
  for (u64 n : {128u, 1024u, 8192u}) {
    const ComplexityRow r = count_attention(n, 512, 8, false, 4);
    CHECK(r.scores_naive_bytes == 8 * n * n * 4);
    CHECK(r.flops.scores + r.flops.weighted_sum == 4 * 8 * n * n * (512 / 8));
  }
}

TEST_CASE("complexity: the crossover of n^2 D and n D^2 terms is n = 2D (4D causal)") {
  for (std::size_t D : {64u, 512u, 4096u}) {
    const Crossover c = crossover_length(D, 8, false);
    CHECK(c.matmuls == doctest::Approx(2.0 * D));           // 8 n D^2 = 4 n^2 D
    CHECK(c.matmuls_without_out == doctest::Approx(1.5 * D));  // 6 n D^2 = 4 n^2 D
    CHECK(c.with_softmax == doctest::Approx(8.0 * D * D / (4.0 * D + 3 * 8)));
    const Crossover k = crossover_length(D, 8, true);
    CHECK(k.matmuls == doctest::Approx(4.0 * D));
    CHECK(k.with_softmax == doctest::Approx(8.0 * D * D / (2.0 * D + 1.5 * 8)));
  }
}

TEST_CASE("complexity: KV-cache bytes of the presets, from their real configurations") {
  // 2 x layers x kv_heads x head_dim x tokens x bytes, configs typed from the papers/configs.
  auto bytes = [](u64 L, u64 kvh, u64 hd, u64 T, u64 B) { return 2 * L * kvh * hd * T * B; };
  CHECK(kv_cache_bytes(kv_preset("gpt2-small"), 1024, 2) == bytes(12, 12, 64, 1024, 2));
  CHECK(kv_cache_bytes(kv_preset("gpt2-medium"), 1024, 4) == bytes(24, 16, 64, 1024, 4));
  CHECK(kv_cache_bytes(kv_preset("llama-7b"), 2048, 2) == 1073741824u);  // exactly 1 GiB
  CHECK(kv_cache_bytes(kv_preset("llama-2-7b"), 4096, 2) == bytes(32, 32, 128, 4096, 2));
  CHECK(kv_cache_bytes(kv_preset("llama-3-8b"), 8192, 2) == bytes(32, 8, 128, 8192, 2));
  CHECK(kv_cache_bytes(kv_preset("mistral-7b"), 100, 1) == bytes(32, 8, 128, 100, 1));
  CHECK(kv_preset("llama-7b").layers == 32);
  CHECK(kv_presets().size() == 6);
  CHECK_THROWS_WITH_AS(kv_preset("gpt-5"), doctest::Contains("llama-3-8b"), InputError);
}

TEST_CASE("complexity: Mistral 7B v0.1's rolling buffer keeps 4096 tokens: 512 MiB at 32k tokens, not 4 GiB") {
  const std::uint64_t MiB = 1 << 20;
  const KvModel& mistral = kv_preset("mistral-7b");
  CHECK(kv_cache_bytes(mistral, 32768, 2) == 4096 * MiB);           // every token cached (v0.2 and later)
  CHECK(kv_rolling_buffer_bytes(mistral, 32768, 2) == 512 * MiB);   // the last 4096 (v0.1)
  CHECK(kv_rolling_buffer_bytes(mistral, 1000, 2) == kv_cache_bytes(mistral, 1000, 2));  // shorter than w
  CHECK_THROWS_AS(kv_rolling_buffer_bytes(kv_preset("llama-7b"), 10, 2), InputError);
}

TEST_CASE("complexity: causal method counts are the visible key-query pairs, counted one by one") {
  const std::size_t D = 64, H = 4, w = 3, B = 4;
  for (std::size_t n : {1, 2, 3, 8, 9, 10, 50}) {
    CAPTURE(n);
    const std::size_t l = std::size_t(std::ceil(std::sqrt(double(n))));
    double strided = 0, local = 0;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j <= i; ++j) {
        strided += (i - j < l || (i - j) % l == 0) ? 1 : 0;
        local += i - j < w ? 1 : 0;
      }
    const auto m = method_table({n}, D, H, w, B, /*causal=*/true);
    CHECK(m[0].at[0].flops == 4 * double(n) * double(n) / 2 * D);  // halved, as count_attention
    CHECK(m[0].at[0].memory_bytes == H * double(n * n) * B);       // the full matrix is stored
    CHECK(m[2].at[0].flops == 4 * strided * D);
    CHECK(m[2].at[0].memory_bytes == H * strided * B);
    CHECK(m[4].at[0].flops == 4 * local * D);
    CHECK(m[3].at[0].flops == method_table({n}, D, H, w, B, false)[3].at[0].flops);  // linear: the same
  }
}

TEST_CASE("complexity: the tutorial's LLaMA-7B KV cache uses 24 layers (805 MB) - 32 layers give 1 GiB") {
  const KvClaimCheck c = tutorial_kv_claim_check();
  CHECK(c.claimed_bytes == 24ull * 1 * 2048 * 32 * 128 * 2 * 2);  // the tutorial's own product
  CHECK(c.claimed_bytes == 805306368u);
  CHECK(c.actual_bytes == 32ull * 2048 * 32 * 128 * 2 * 2);
}

TEST_CASE("complexity: the method table's attention-core counts") {
  const std::size_t D = 512, H = 8, d = 64, w = 256, B = 2;
  const auto m = method_table({1024, 100}, D, H, w, B);
  REQUIRE(m.size() == 5);
  const double n = 1024;
  CHECK(m[0].at[0].flops == 4 * n * n * D);
  CHECK(m[1].at[0].flops == m[0].at[0].flops);          // flash: same FLOPs
  CHECK(m[1].at[0].memory_bytes == 2 * H * n * B);      // O(n) memory
  CHECK(m[2].at[0].flops == 4 * n * (2 * 32) * D);      // sqrt(1024) = 32, 2 sqrt(n) keys
  CHECK(m[3].at[0].flops == H * 4 * n * d * d);
  CHECK(m[4].at[0].flops == 4 * n * w * D);
  CHECK(m[4].at[1].flops == 4 * 100.0 * 100 * D);       // window longer than the sequence
}

TEST_CASE("complexity: bad sizes are input errors, including 64-bit overflow") {
  CHECK_THROWS_AS(count_attention(0, 512, 8, false, 4), InputError);
  CHECK_THROWS_WITH_AS(count_attention(128, 512, 3, false, 4), doctest::Contains("does not divide"), InputError);
  CHECK_THROWS_AS(count_attention(128, 512, 8, false, 0), InputError);
  CHECK_THROWS_WITH_AS(count_attention(std::size_t{1} << 40, std::size_t{1} << 20, 1, false, 4),
                       doctest::Contains("64 bits"), InputError);
  ComplexityConfig c;
  c.ns = {};
  CHECK_THROWS_AS(run_complexity(c), InputError);
}

TEST_CASE("scaling: the log-log fit recovers known exponents - a timed run gives one per length") {
  CHECK(fit_loglog_slope({1, 2, 4, 8}, {3, 12, 48, 192}) == doctest::Approx(2.0));
  CHECK(fit_loglog_slope({10, 100, 1000}, {5 * std::pow(10, 1.5), 5 * std::pow(100, 1.5), 5 * std::pow(1000, 1.5)}) ==
        doctest::Approx(1.5));
  CHECK_THROWS_AS(fit_loglog_slope({2, 2}, {1, 3}), InputError);
  const ScalingMeasurement m = measure_sdpa_scaling({16, 32, 64}, 8, 1, 42);
  REQUIRE(m.points.size() == 3);
  CHECK(std::isfinite(m.exponent));
  for (const TimingPoint& p : m.points) CHECK(p.median_ms >= p.min_ms);
  CHECK_THROWS_AS(measure_sdpa_scaling({16}, 8, 1, 42), InputError);
  CHECK_THROWS_AS(measure_sdpa_scaling({16, 100000}, 8, 1, 42), InputError);
}

TEST_CASE("layer types: Vaswani et al. Table 1 at n = d = 512, k = 3, r = 64, worked out by hand") {
  const std::vector<LayerTypeRow> t = layer_type_table(512, 512, 3, 64);
  REQUIRE(t.size() == 5);
  CHECK(t[0].operations == 512.0 * 512 * 512);  // n^2 d = 134217728
  CHECK(t[1].operations == t[0].operations);      // n d^2: equal when n = d
  CHECK(t[1].sequential == 512);
  CHECK(t[1].max_path == 512);
  CHECK(t[2].operations == 3.0 * 512 * 512 * 512);
  CHECK(t[2].max_path == 171);  // ceil(512 / 3)
  CHECK(t[3].max_path == 6);    // 3^5 = 243 < 512 <= 3^6 = 729
  CHECK(t[4].operations == 64.0 * 512 * 512);
  CHECK(t[4].max_path == 8);    // 512 / 64
  CHECK(t[0].sequential == 1);
  CHECK(t[0].max_path == 1);
  // A sentence shorter than the representation: self-attention is the cheaper layer.
  const std::vector<LayerTypeRow> short_n = layer_type_table(64, 512, 3, 16);
  CHECK(short_n[0].operations < short_n[1].operations);
}
