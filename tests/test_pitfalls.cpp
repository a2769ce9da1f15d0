#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "attn/engine/core/error.hpp"
#include "attn/lessons/concepts/pitfalls.hpp"

using namespace attn;

namespace {

const PitfallFact& fact(const Pitfall& p, const std::string& prefix) {
  for (const PitfallFact& f : p.facts)
    if (f.name.rfind(prefix, 0) == 0) return f;
  FAIL("no fact " << prefix);
  throw;
}

void check_row(const Tensor2& m, std::size_t i, const std::vector<double>& expected, double eps = 1e-6) {
  REQUIRE(m.shape(1) == expected.size());
  for (std::size_t j = 0; j < expected.size(); ++j) {
    CAPTURE(j);
    CHECK(double(m(i, j)) == doctest::Approx(expected[j]).epsilon(eps));
  }
}

}  // namespace

TEST_CASE("pitfalls: mask polarity - the flipped mask attends only to the padding") {
  const Pitfall p = pitfall_mask_polarity();
  const double e2 = std::exp(2.0), e1 = std::exp(1.0), eh = std::exp(0.5), z = e2 + e1 + eh;
  check_row(p.tables[0].right, 0, {e2 / z, e1 / z, eh / z, 0});
  check_row(p.tables[0].wrong, 0, {0, 0, 0, 1});
  CHECK(fact(p, "weight on the padding").wrong == 1.0);
  CHECK(fact(p, "weight on the padding").right == 0.0);
}

TEST_CASE("pitfalls: causal alignment with Lq = 2, Lk = 4, equal scores - weights are 1 / keys seen") {
  const Pitfall p = pitfall_causal_alignment();
  const PitfallTable& t = p.tables[0];
  check_row(t.wrong, 0, {1, 0, 0, 0});               // top-left: query 0 sees key 0 only
  check_row(t.wrong, 1, {0.5, 0.5, 0, 0});
  check_row(t.right, 0, {1.0 / 3, 1.0 / 3, 1.0 / 3, 0});  // bottom-right: j <= i + 2
  check_row(t.right, 1, {0.25, 0.25, 0.25, 0.25});
  CHECK(fact(p, "keys seen by the last").wrong == 2);
  CHECK(fact(p, "keys seen by the last").right == 4);
}

TEST_CASE("pitfalls: -1e9 on a fully masked row averages the values, -inf gives zeros") {
  const Pitfall p = pitfall_fully_masked_row();
  check_row(p.tables[0].wrong, 0, {1.0 / 3, 1.0 / 3, 1.0 / 3});
  check_row(p.tables[0].right, 0, {0, 0, 0});
  // mean of v0 = (1, 0), v1 = (0, 1), v2 = (3, 3) is (4/3, 4/3)
  check_row(p.tables[1].wrong, 0, {4.0 / 3, 4.0 / 3});
  check_row(p.tables[1].right, 0, {0, 0});
  CHECK(fact(p, "sum of the row").wrong == doctest::Approx(1.0));
  CHECK(fact(p, "sum of the row").right == 0.0);
  CHECK(fact(p, "partially masked").wrong == 0.0);  // -1e9 is harmless when one key is visible
  CHECK(fact(p, "partially masked").right == 0.0);
}

TEST_CASE("pitfalls: eps after softmax gives each masked key eps / (1 + n eps)") {
  const Pitfall p = pitfall_eps_after_softmax();
  const double eps = 1e-8, n = 4;
  CHECK(fact(p, "weight on each masked").wrong == doctest::Approx(eps / (1 + n * eps)).epsilon(1e-9));
  CHECK(fact(p, "weight on each masked").right == 0.0);
  CHECK(fact(p, "total weight on masked").wrong == doctest::Approx(3 * eps / (1 + n * eps)).epsilon(1e-9));
  check_row(p.tables[0].wrong, 0, {(1 + eps) / (1 + n * eps), eps, eps, eps}, 1e-5);
  // The leak made visible: divided by eps, each future key's weight is 1 / (1 + n eps), not 0.000.
  REQUIRE(p.tables.size() == 2);
  check_row(p.tables[1].wrong, 0, {1 / (1 + n * eps), 1 / (1 + n * eps), 1 / (1 + n * eps)}, 1e-6);
  check_row(p.tables[1].right, 0, {0, 0, 0});
  CHECK(p.tables[1].col_labels == std::vector<std::string>{"k1", "k2", "k3"});
}

TEST_CASE("pitfalls: without 1/sqrt(d_k) the row saturates and its Jacobian vanishes") {
  const Pitfall p = pitfall_missing_scale(42);
  CHECK(fact(p, "max weight").wrong > 0.99);
  CHECK(fact(p, "max weight").right < fact(p, "max weight").wrong);
  CHECK(fact(p, "entropy").wrong < 0.1 * fact(p, "entropy").right);
  CHECK(fact(p, "Jacobian").wrong < 0.1 * fact(p, "Jacobian").right);
  // The right row is a proper distribution with the entropy reported.
  double sum = 0, h = 0;
  for (float w : p.tables[0].right) {
    sum += w;
    if (w > 0) h -= w * std::log(double(w));
  }
  CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
  CHECK(fact(p, "entropy").right == doctest::Approx(h).epsilon(1e-5));
}

TEST_CASE("pitfalls: temperature direction - T = 2 flattens, T = 0.5 sharpens (by hand)") {
  const Pitfall p = pitfall_temperature_direction();
  auto top = [](double T) {
    double z = 0;
    for (double s : {2.0, 1.0, 0.5, 0.0, -1.0}) z += std::exp(s / T);
    return std::exp(2.0 / T) / z;
  };
  CHECK(fact(p, "max weight").wrong == doctest::Approx(top(2.0)));
  CHECK(fact(p, "max weight").right == doctest::Approx(top(0.5)));
  CHECK(fact(p, "entropy").wrong > fact(p, "entropy").right);
  // Both panels start from the same T = 1 row and name the new T.
  CHECK(fact(p, "new T").wrong == 2.0);
  CHECK(fact(p, "new T").right == 0.5);
  REQUIRE(p.tables[0].wrong.shape(0) == 2);
  CHECK(double(p.tables[0].wrong(0, 0)) == doctest::Approx(top(1.0)).epsilon(1e-6));
  CHECK(double(p.tables[0].right(0, 0)) == doctest::Approx(top(1.0)).epsilon(1e-6));
  CHECK(double(p.tables[0].wrong(1, 0)) == doctest::Approx(top(2.0)).epsilon(1e-6));
  CHECK(p.tables[0].wrong_title.find("T = 2") != std::string::npos);
  CHECK(p.tables[0].right_title.find("T = 0.5") != std::string::npos);
}

TEST_CASE("pitfalls: RoPE with cos/sin of width d/2 - interleaved fix is not a rotation") {
  const Pitfall p = pitfall_rope_half_width();
  const std::vector<double> q = {1.0, 0.5, -0.3, 0.8, 0.2, -1.0, 0.7, 0.1};
  const std::size_t d = 8, h = 4;
  const double pos = 3;
  std::vector<double> right(d), wrong(d);
  for (std::size_t i = 0; i < d; ++i) {
    // rotate-half pairs element i with i + d/2 (sign - for the first half, + for the second)
    const double partner = i < h ? -q[i + h] : q[i - h];
    const double a_cat = pos * std::pow(10000.0, -2.0 * double(i % h) / d);   // cat(freqs, freqs)
    const double a_int = pos * std::pow(10000.0, -2.0 * double(i / 2) / d);   // repeat_interleave
    right[i] = q[i] * std::cos(a_cat) + partner * std::sin(a_cat);
    wrong[i] = q[i] * std::cos(a_int) + partner * std::sin(a_int);
  }
  check_row(p.tables[0].right, 0, right, 1e-5);
  check_row(p.tables[0].wrong, 0, wrong, 1e-5);
  double nq = 0, nw = 0;
  for (std::size_t i = 0; i < d; ++i) {
    nq += q[i] * q[i];
    nw += wrong[i] * wrong[i];
  }
  CHECK(fact(p, "|RoPE(q)|").right == doctest::Approx(1.0).epsilon(1e-12));
  CHECK(fact(p, "|RoPE(q)|").wrong == doctest::Approx(std::sqrt(nw / nq)).epsilon(1e-9));
  CHECK(std::fabs(fact(p, "|RoPE(q)|").wrong - 1.0) > 1e-3);
  CHECK(std::fabs(fact(p, "q.k at positions").right) < 1e-12);
  CHECK(std::fabs(fact(p, "q.k at positions").wrong) > 1e-2);
  // Across positions: the rotation keeps every length and gives one q.k for one distance.
  REQUIRE(p.tables.size() == 3);
  double norm_spread = 0, dot_spread_right = 0, dot_spread_wrong = 0;
  for (std::size_t m = 0; m < p.tables[1].right.shape(1); ++m) {
    CHECK(p.tables[1].right(0, m) == doctest::Approx(1.0).epsilon(1e-6));
    norm_spread = std::max(norm_spread, std::fabs(double(p.tables[1].wrong(0, m)) - 1.0));
    dot_spread_right = std::max(dot_spread_right, std::fabs(double(p.tables[2].right(0, m) - p.tables[2].right(0, 0))));
    dot_spread_wrong = std::max(dot_spread_wrong, std::fabs(double(p.tables[2].wrong(0, m) - p.tables[2].wrong(0, 0))));
  }
  CHECK(p.tables[1].wrong(0, 0) == doctest::Approx(1.0));  // position 0: no rotation either way
  CHECK(norm_spread > 1e-2);
  CHECK(dot_spread_right < 1e-5);
  CHECK(dot_spread_wrong > 1e-2);
  CHECK(fact(p, "broadcasts").wrong == 0.0);  // 4 against 8: neither equal nor 1
  CHECK(fact(p, "broadcasts").right == 1.0);
}

TEST_CASE("pitfalls: the list, lookup by id, and no non-finite number anywhere") {
  const std::vector<Pitfall> all = all_pitfalls(42);
  CHECK(all.size() == 14);
  for (const Pitfall& p : all) {
    CAPTURE(p.id);
    CHECK(!p.lesson.empty());
    CHECK(find_pitfall(p.id, 42).title == p.title);
    for (const PitfallFact& f : p.facts) CHECK((std::isfinite(f.wrong) && std::isfinite(f.right)));
    for (const PitfallTable& t : p.tables) {
      CHECK(t.wrong.shape() == t.right.shape());
      for (float x : t.wrong) CHECK(std::isfinite(x));
      for (float x : t.right) CHECK(std::isfinite(x));
    }
  }
  CHECK_THROWS_WITH_AS(find_pitfall("nope", 42), doctest::Contains("mask-polarity"), InputError);
  CHECK(pitfalls_json(all)["pitfalls"].size() == 14);
}

TEST_CASE("pitfalls: the teaching notes' errata, each against numbers known by hand") {
  // binary16's largest finite value, 65504 = (2 - 2^-10) 2^15, is a textbook constant.
  const Pitfall half = pitfall_mask_value_float16();
  CHECK(fact(half, "largest finite float16").right == 65504.0);
  CHECK(fact(half, "the fill is exact").wrong == 0.0);
  CHECK(fact(half, "|fill value|").wrong == doctest::Approx(1e9 / 65504.0));
  // A 0/1 float mask is added: scores (2, 1, 0.5, 3) + (1, 1, 1, 0) = (3, 2, 1.5, 3).
  const Pitfall fm = pitfall_float_mask_sdpa();
  const double z = 2 * std::exp(3.0) + std::exp(2.0) + std::exp(1.5);
  CHECK(fact(fm, "weight on the masked key").wrong == doctest::Approx(std::exp(3.0) / z));
  CHECK(fact(fm, "weight on the masked key").right == 0.0);
  check_row(fm.tables[0].right, 0, {std::exp(2.0) / (std::exp(2.0) + std::exp(1.0) + std::exp(0.5)),
                                    std::exp(1.0) / (std::exp(2.0) + std::exp(1.0) + std::exp(0.5)),
                                    std::exp(0.5) / (std::exp(2.0) + std::exp(1.0) + std::exp(0.5)), 0.0});
  // Vaswani et al. 2017: d_model 512, h 8, d_k 64.
  CHECK(fact(pitfall_paper_dk(), "d_k").right == 64.0);
  CHECK(fact(pitfall_paper_dk(), "standard deviation").right == 8.0);
  CHECK(fact(pitfall_softmax_cost(), "operations").right == 130816.0);  // 256 x 511
  CHECK(fact(pitfall_mha_bias(), "parameters").right == 1050624.0);     // 4 x 512^2 + 4 x 512
  CHECK(fact(pitfall_mha_bias(), "of which biases").right == 2048.0);
  CHECK(fact(pitfall_flash_memory(), "saving").right == 4096.0);        // n^2 floats against n
  CHECK(fact(pitfall_mb_mib(), "printed").wrong == 2048.0);             // 2^31 bytes / 2^20
  CHECK(fact(pitfall_mb_mib(), "printed").right == doctest::Approx(2147.483648));
}

TEST_CASE("pitfalls: the keys each way masks are recorded, so the pictures hatch them instead of showing 0.000") {
  // Every table whose right way masks keys says which; wherever a way masked a key its weight is 0.
  for (const Pitfall& p : {pitfall_mask_polarity(), pitfall_causal_alignment(), pitfall_float_mask_sdpa(),
                           pitfall_eps_after_softmax(), pitfall_fully_masked_row()}) {
    CAPTURE(p.id);
    const PitfallTable& t = p.tables.front();
    REQUIRE(t.right_allowed);
    CHECK(t.right_allowed->shape(0) == t.right.shape(0));
    CHECK(t.right_allowed->shape(1) == t.right.shape(1));
    bool any = false;
    for (std::size_t i = 0; i < t.right.shape(0); ++i)
      for (std::size_t j = 0; j < t.right.shape(1); ++j)
        if (!(*t.right_allowed)(i, j)) {
          any = true;
          CHECK(t.right(i, j) == 0.0f);
        }
    CHECK(any);
  }
  // The wrong mask of mask-polarity blocks the words; the top-left causal mask hides q0's own key.
  const PitfallTable polarity = pitfall_mask_polarity().tables.front();
  REQUIRE(polarity.wrong_allowed);
  CHECK(!(*polarity.wrong_allowed)(0, 0));
  CHECK((*polarity.wrong_allowed)(0, 3));
  const PitfallTable causal = pitfall_causal_alignment().tables.front();
  REQUIRE(causal.wrong_allowed);
  CHECK(!(*causal.wrong_allowed)(0, 2));   // top-left: q0 (position 2) cannot see key 2, itself
  CHECK((*causal.right_allowed)(0, 2));    // bottom-right: it can
  // The float mask masks nothing: the wrong way has no masked key to hatch.
  CHECK(!pitfall_float_mask_sdpa().tables.front().wrong_allowed);
}

TEST_CASE("pitfalls: temperature-direction names the goal each T is judged by, not just wrong and right") {
  const PitfallTable t = pitfall_temperature_direction().tables.front();
  CHECK(t.wrong_title.find("flattens") != std::string::npos);
  CHECK(t.right_title.find("sharpens") != std::string::npos);
  CHECK(t.caption.find("goal: sharper") != std::string::npos);
}

TEST_CASE("pitfalls: rope-half-width's length ratio is drawn around the 1 a rotation keeps") {
  const Pitfall p = pitfall_rope_half_width();
  REQUIRE(p.tables.size() >= 2);
  CHECK(p.tables[1].reference == 1.0);
  CHECK(!p.tables[0].reference);
}
