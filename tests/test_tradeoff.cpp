// attn-cli tradeoff (lessons/tradeoff.hpp): the counts by hand and against the engine's own
// mask, the fit on exact power laws, and a small run whose errors are recomputed through the
// naive float64 reference (an independent path from the flash kernel the lesson uses).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "attn/engine/attention/attention.hpp"
#include "attn/engine/attention/variant.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/lessons/measure/bench.hpp"
#include "attn/lessons/measure/scaling.hpp"
#include "attn/lessons/measure/tradeoff.hpp"
#include "attn/io/shipped_model.hpp"
#include "support.hpp"

using namespace attn;

TEST_CASE("tradeoff: keys seen under a window and the strided pattern, by hand and by the engine's mask") {
  CHECK(window_keys(0, 3) == 1);
  CHECK(window_keys(5, 3) == 3);
  // p = 7, stride 3: distances 0, 1, 2 (local) and 3, 6 (multiples): keys 7, 6, 5, 4, 1.
  CHECK(strided_keys(7, 3) == 5);
  AttentionMask strided;
  strided.stride = variants::Strided{4};
  AttentionMask window;
  window.window = variants::SlidingWindow{4, 0};
  for (std::size_t p = 0; p < 20; ++p) {
    std::size_t s = 0, w = 0;
    for (std::size_t j = 0; j <= p; ++j) s += strided.visible(p, j, 20, 20), w += window.visible(p, j, 20, 20);
    CHECK(strided_keys(p, 4) == s);
    CHECK(window_keys(p, 5) == w);
  }
}

TEST_CASE("tradeoff: its fit (scaling.hpp's fit_loglog_slope) recovers exact power laws") {
  CHECK(fit_loglog_slope({256, 1024, 4096}, {3 * 256.0 * 256, 3 * 1024.0 * 1024, 3 * 4096.0 * 4096}) == doctest::Approx(2.0));
  CHECK(fit_loglog_slope({2, 8}, {5 * std::pow(2.0, 1.5), 5 * std::pow(8.0, 1.5)}) == doctest::Approx(1.5));
  CHECK_THROWS_AS(fit_loglog_slope({4}, {1}), InputError);
  CHECK_THROWS_AS(fit_loglog_slope({4, 4}, {1, 2}), InputError);
}

TEST_CASE("tradeoff: a small run measures every method, and its errors hold against the naive reference") {
  TradeoffConfig c;
  c.ns = {48, 96};
  c.head_dim = 64;  // local inputs' scores are 2 sqrt(d) 0.9^|i-j|: 16 at d = 64, 0.55 past 32 keys
  c.window = 32;
  c.stride = 6;
  c.features = {4, 1024};
  c.rank = 8;
  c.repeat = 1;
  const TradeoffResult r = run_tradeoff(c);
  REQUIRE(r.runs.size() == 2 * 2 * (5 + 2));
  CHECK(r.fits.size() == 5 + 2);
  for (const TradeoffFit& f : r.fits) CHECK(std::isfinite(f.exponent));
  auto run = [&](const std::string& inputs, std::size_t n, const std::string& method) {
    for (const TradeoffRun& x : r.runs)
      if (x.inputs == inputs && x.n == n && x.method == method) return x;
    FAIL("no run " << method);
    return TradeoffRun{};
  };
  for (const TradeoffRun& x : r.runs) {
    CAPTURE(x.method);
    CHECK(x.ms > 0);
    CHECK(std::isfinite(x.error));
    if (x.family == "flash") CHECK(x.error < 1e-5);  // exact, up to float32
  }
  CHECK(run("random", 96, "flash").flops == attention_flops(96, 1, 64, true));
  // Structure matters: on local inputs the window is close to exact, linear attention is not.
  CHECK(run("local", 96, "window 32").error < 0.1);
  CHECK(run("local", 96, "linear").error > 10 * run("local", 96, "window 32").error);
  // Performer's error falls as its features grow.
  CHECK(run("random", 96, "performer m=1024").error < run("random", 96, "performer m=4").error);

  // The window's error, recomputed: the same inputs (seed + n, as the lesson draws them) through
  // the naive float64 kernel, with and without the window.
  Rng rng(c.seed + 96);
  Tensor3 q = Tensor3::from_shape({1, 96, 64}), k = q, v = q;
  for (Tensor3* t : {&q, &k, &v})
    for (float& x : *t) x = float(rng.normal());
  SdpaOptions causal;
  causal.causal = true;
  SdpaOptions windowed = causal;
  windowed.mask_mod.window = variants::SlidingWindow{31, 0};
  const Tensor3 exact = attention(q, k, v, nullptr, causal).output, approx = attention(q, k, v, nullptr, windowed).output;
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < exact.size(); ++i) {
    diff += std::pow(double(approx.data()[i]) - double(exact.data()[i]), 2);
    norm += std::pow(double(exact.data()[i]), 2);
  }
  CHECK(run("random", 96, "window 32").error == doctest::Approx(std::sqrt(diff / norm)).epsilon(1e-4));
}

TEST_CASE("tradeoff: sizes that cannot run are input errors") {
  TradeoffConfig c;
  c.ns = {0};
  CHECK_THROWS_AS(check_tradeoff_config(c), InputError);
  c.ns = {64};
  c.inputs = {"sorted"};
  CHECK_THROWS_AS(check_tradeoff_config(c), InputError);
  c.inputs = {"local"};
  c.features = {};
  CHECK_THROWS_AS(check_tradeoff_config(c), InputError);
}

TEST_CASE("cli: tradeoff prints the table and the fits, writes its JSON and its picture") {
  test::TempDir dir;
  const std::string cwd = dir.path.string();
  const test::CliResult text = test::run_cli("tradeoff --n 32,64 --repeat 1 --features 4,16", "", cwd);
  CAPTURE(text.err);
  REQUIRE(text.code == 0);
  CHECK(text.out.find("Time grows as n^p") != std::string::npos);
  CHECK(text.out.find("on local inputs, the closest approximation is") != std::string::npos);
  const test::CliResult json = test::run_cli("tradeoff --n 32 --repeat 1 --inputs local --json --plots p", "", cwd);
  REQUIRE(json.code == 0);
  const Json j = Json::parse(json.out);
  CHECK(j.at("runs").size() == 5 + 3);
  CHECK(j.at("runs").at(0).at("method") == "flash");
  CHECK(std::filesystem::exists(dir.path / "p" / "tradeoff.png"));
  CHECK(test::run_cli("tradeoff --n 0", "", cwd).code == 2);
  CHECK(test::run_cli("tradeoff --inputs sorted", "", cwd).code == 2);
}

TEST_CASE("tradeoff: toy inputs are the trained induction head's, attention found by content, not distance") {
  TradeoffConfig c;
  c.inputs = {"toy"};
  const TradeoffConfig toy = config_for(c, "toy");
  const ToyConfig mc = shipped_toy_model().config;
  CHECK(toy.head_dim == mc.d_model / mc.heads);
  CHECK(config_for(c, "random").head_dim == c.head_dim);
  const std::size_t n = 2 * mc.context + 5;  // two whole windows and a cut one
  const TradeoffInputs in = tradeoff_inputs(toy, n, "toy");
  REQUIRE(in.q.shape(1) == n);
  REQUIRE(in.q.shape(2) == toy.head_dim);
  // Causal softmax inside each window, computed here: an induction head puts most of a row's
  // weight on one key several places back (the token after the query's earlier copy); random
  // q, k of the same width almost never do.
  auto far_sure_rows = [&](const TradeoffInputs& x) {
    std::size_t rows = 0;
    const double scale = 1 / std::sqrt(double(x.q.shape(2)));
    for (std::size_t w = 0; w + mc.context <= n; w += mc.context)
      for (std::size_t i = w + 1; i < w + mc.context; ++i) {
        std::vector<double> s;
        for (std::size_t j = w; j <= i; ++j) {
          double dot = 0;
          for (std::size_t c2 = 0; c2 < x.q.shape(2); ++c2) dot += double(x.q(0, i, c2)) * double(x.k(0, j, c2));
          s.push_back(scale * dot);
        }
        const double top = *std::max_element(s.begin(), s.end());
        double sum = 0;
        for (double v : s) sum += std::exp(v - top);
        const std::size_t arg = std::size_t(std::max_element(s.begin(), s.end()) - s.begin());
        if (1 / sum > 0.5 && (i - w) - arg >= 2) ++rows;
      }
    return rows;
  };
  TradeoffConfig random16 = toy;
  const std::size_t toy_rows = far_sure_rows(in), random_rows = far_sure_rows(tradeoff_inputs(random16, n, "random"));
  CAPTURE(toy_rows);
  CAPTURE(random_rows);
  CHECK(toy_rows >= 16);
  CHECK(random_rows * 4 <= toy_rows);
  // And the measurement runs on them, the exact kernel exact.
  c.ns = {n};
  c.features = {8};
  c.repeat = 1;
  const TradeoffResult r = run_tradeoff(c);
  for (const TradeoffRun& x : r.runs) {
    CHECK(x.head_dim == toy.head_dim);
    CHECK(std::isfinite(x.error));
    if (x.family == "flash") CHECK(x.error < 1e-5);
  }
}
