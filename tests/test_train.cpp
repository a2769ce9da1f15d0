// The training run (lessons/train.hpp) and the forward of a model folder (lessons/forward.hpp):
// scores and the phase-change rule on hand-made inputs, refused options, determinism, and a
// run continued from its folder equal to the uninterrupted run.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <unistd.h>

#include "attn/engine/core/error.hpp"
#include "attn/io/toy_model_file.hpp"
#include "attn/lessons/models/forward.hpp"
#include "attn/lessons/models/train.hpp"
#include "support.hpp"

using namespace attn;

namespace {

// A tiny run: fast enough for the unit tests, same code path as the default.
TrainOptions tiny_options(std::size_t steps) {
  TrainOptions o;
  o.config = {8, 16, 2, 2, 8};
  o.steps = steps;
  o.batch = 4;
  o.threads = 1;
  o.log_every = 5;
  o.timing = false;
  return o;
}

std::string model_bytes(const TrainRun& run, const std::string& dir) {
  write_train_run(dir, run, tiny_options(run.points.back().step));
  return test::read_text(dir + "/model/model.safetensors");
}

}  // namespace

TEST_CASE("train: the tasks' sequences repeat or mirror their first half") {
  Rng rng(3);
  const TokenBatch b = task_batch(TrainTask::induction, 3, 10, 7, rng);
  const TokenBatch r = task_batch(TrainTask::reverse, 3, 10, 7, rng);
  for (std::size_t s = 0; s < 3; ++s)
    for (std::size_t i = 0; i < 5; ++i) {
      CHECK(b.tokens[s * 10 + 5 + i] == b.tokens[s * 10 + i]);
      CHECK(r.tokens[s * 10 + 5 + i] == r.tokens[s * 10 + 4 - i]);
      CHECK(b.tokens[s * 10 + i] < 7);
    }
}

TEST_CASE("train: training rows are a random prefix, then a repeat to the end, one id past the context") {
  Rng rng(5);
  const std::size_t L = 32, n = L + 1, rows = 400;
  const TokenBatch b = training_batch(TrainTask::induction, rows, L, 64, rng);
  CHECK(b.last_is_target);
  REQUIRE(b.tokens.size() == rows * n);
  std::size_t held_out_layout = 0, late_repeats = 0;
  for (std::size_t s = 0; s < rows; ++s) {
    const std::int32_t* row = b.tokens.data() + s * n;
    // The shortest period p for which the row's tail from some start on repeats: every row has one.
    std::size_t period = 0, start = 0;
    for (std::size_t p = 2; p <= L / 2 && !period; ++p) {
      std::size_t first = n;  // the first index from which row[i] == row[i - p] to the end
      while (first > p && row[first - 1] == row[first - 1 - p]) --first;
      if (n - first >= p) period = p, start = first - p;  // at least one whole copy
    }
    REQUIRE(period >= 2);
    held_out_layout += period == L / 2 && start == 0;
    late_repeats += start >= L / 4;
  }
  CHECK(held_out_layout > rows / 4);  // 2 in 5 by design, a few more by chance
  CHECK(held_out_layout < rows / 2);
  CHECK(late_repeats > rows / 5);     // repeats that start late in the row are common
}

TEST_CASE("train: held-out sequences vary period and start, so position alone cannot score") {
  const std::size_t L = 32, rows = 400;
  Rng rng(5);
  const TokenBatch b = held_out_batch(TrainTask::induction, rows, L, 64, rng);
  REQUIRE(b.tokens.size() == rows * L);
  CHECK_FALSE(b.last_is_target);
  std::set<std::size_t> periods, starts;
  for (std::size_t s = 0; s < rows; ++s) {
    const std::int32_t* row = b.tokens.data() + s * L;
    // The largest start from which the row repeats with some period p to its end (a whole copy at least).
    std::size_t period = 0, start = 0;
    for (std::size_t p = 2; p <= L / 2 && !period; ++p) {
      std::size_t first = L;
      while (first > p && row[first - 1] == row[first - 1 - p]) --first;
      if (L - first >= p) period = p, start = first - p;
    }
    REQUIRE(period >= 2);
    periods.insert(period);
    starts.insert(start);
  }
  // Uniform period in [2, 16] and start in [0, L - 2 period]: 400 rows see nearly every one.
  CHECK(periods.size() >= 12);
  CHECK(starts.size() >= 12);
  // The reverse task's held-out rows are its training layout.
  Rng again(5), same(5);
  CHECK(held_out_batch(TrainTask::reverse, 3, 10, 7, again).tokens == task_batch(TrainTask::reverse, 3, 10, 7, same).tokens);
}

TEST_CASE("train: the phase change is where the loss falls past the midpoint, or none") {
  const double uniform = std::log(64.0);
  std::vector<TrainPoint> points;
  for (std::size_t k = 0; k <= 60; ++k) {  // a plateau at ln(64), a cliff at step 300, then 2.0
    const double step = double(k * 10);
    points.push_back({k * 10, 2.0 + (uniform - 2.0) / (1.0 + std::exp((step - 300.0) / 10.0)), 0, 0, 0});
  }
  const std::optional<std::size_t> at = phase_change_step(points, uniform);
  REQUIRE(at.has_value());
  CHECK(*at >= 290);
  CHECK(*at <= 310);
  for (TrainPoint& p : points) p.loss = uniform - 0.2;  // no real drop
  CHECK(!phase_change_step(points, uniform).has_value());
}

TEST_CASE("train: options out of range are refused") {
  auto refused = [](auto change, const char* what) {
    TrainOptions o = tiny_options(10);
    change(o);
    CHECK_THROWS_WITH_AS(check_train_options(o), doctest::Contains(what), InputError);
  };
  refused([](TrainOptions& o) { o.steps = 0; }, "steps");
  refused([](TrainOptions& o) { o.batch = 0; }, "batch");
  refused([](TrainOptions& o) { o.lr = std::nan(""); }, "lr");
  refused([](TrainOptions& o) { o.lr = -1e-3; }, "lr");
  refused([](TrainOptions& o) { o.config.context = 7; }, "context");
  refused([](TrainOptions& o) { o.config.context = 2; }, "context");
  refused([](TrainOptions& o) { o.config.heads = 3; }, "d_model");
  refused([](TrainOptions& o) { o.backend = Backend::cuda; }, "backend");
  CHECK_THROWS_AS(parse_train_task("copy"), InputError);
}

TEST_CASE("train: same seed and threads, same bytes, another seed, other bytes") {
  const TrainRun a = run_training(tiny_options(12)), b = run_training(tiny_options(12));
  CHECK(train_json(a, tiny_options(12)).dump() == train_json(b, tiny_options(12)).dump());
  const test::TempDir tmp;
  CHECK(model_bytes(a, tmp / "a") == model_bytes(b, tmp / "b"));
  TrainOptions other = tiny_options(12);
  other.seed = 7;
  CHECK(train_json(run_training(other), other).dump() != train_json(a, tiny_options(12)).dump());
  CHECK(a.points.size() == 4);  // steps 0, 5, 10 and the last, 12
  CHECK(a.points.back().step == 12);
  CHECK(a.final_summary.heads.size() == 4);
  CHECK(a.uniform_loss == doctest::Approx(std::log(8.0)));
}

TEST_CASE("train: a run continued from its folder equals the uninterrupted run") {
  const TrainRun whole = run_training(tiny_options(20));
  const test::TempDir tmp;
  for (std::size_t stop : {10, 7}) {  // on a logging step, and between two
    CAPTURE(stop);
    const std::string dir = tmp / ("resume-" + std::to_string(stop));
    write_train_run(dir, run_training(tiny_options(stop)), tiny_options(stop));
    TrainOptions o = tiny_options(0);
    const TrainRun saved = read_train_run(dir, o);
    CHECK(o.steps == stop);
    o.steps = 20;
    const TrainRun continued = run_training(o, {}, &saved);
    CHECK(train_json(continued, o).dump() == train_json(whole, tiny_options(20)).dump());
    CHECK(model_bytes(continued, dir + "-c") == model_bytes(whole, dir + "-w"));
    o.steps = stop;
    CHECK_THROWS_AS(run_training(o, {}, &saved), InputError);  // nothing left to do
  }
  CHECK_THROWS_AS([] { TrainOptions o; read_train_run("/nonexistent-run", o); }(), InputError);
}

TEST_CASE("forward: words get ids by first appearance, id lists are checked") {
  const ToyTokens t = toy_tokens_from_words({"the", "cat", "the", "mat"}, 8);
  CHECK(t.ids == std::vector<std::int32_t>{0, 1, 0, 2});
  CHECK_THROWS_AS(toy_tokens_from_words({"a", "b", "c"}, 2), InputError);
  CHECK(toy_tokens_from_list("3,1,3", 4).ids == std::vector<std::int32_t>{3, 1, 3});
  for (const char* bad : {"", "1,,2", "1,x", "4", "-1", "1.5", "99999999999999999999"})
    CHECK_THROWS_AS(toy_tokens_from_list(bad, 4), InputError);
}

TEST_CASE("forward: a hand-made model gives the numbers worked out by hand") {
  // vocab 2, D 2, one head, one layer: embed = unembed = I, pos = 0, W_q = W_k = 0 (every
  // allowed key equally weighted), W_v = W_o = I. Tokens [0, 1]:
  //   position 0 sees itself: x = e0 + e0 = [2, 0];
  //   position 1 sees both equally: x = e1 + (e0 + e1)/2 = [0.5, 1.5]; logits = x.
  ToyModel m = zero_toy_model({2, 2, 1, 1, 2});
  m.embed = m.unembed = m.layers[0].w_v = m.layers[0].w_o = xt::eye<float>(2);
  const test::TempDir tmp;
  const std::string dir = tmp / "hand";
  write_toy_model(dir, m, {});
  const ToyModel read = read_toy_model(dir);
  const ToyForward f = run_toy_forward(read, toy_tokens_from_list("0,1", 2));
  CHECK(f.attention[0](0, 0, 0) == 1.0f);
  CHECK(f.attention[0](0, 1, 0) == 0.5f);
  CHECK(f.attention[0](0, 1, 1) == 0.5f);
  CHECK(f.logits(0, 0) == 2.0f);
  CHECK(f.logits(0, 1) == 0.0f);
  CHECK(f.logits(1, 0) == 0.5f);
  CHECK(f.logits(1, 1) == 1.5f);
  CHECK_THROWS_AS(run_toy_forward(read, toy_tokens_from_list("0,1,0", 2)), InputError);  // past the context
}
