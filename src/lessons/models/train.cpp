// `attn-cli train` as a library call (train.hpp): batches, the Adam loop, held-out scores and
// the phase change.
#include "attn/lessons/models/train.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "attn/engine/core/error.hpp"
#include "attn/engine/platform/machine.hpp"
#include "attn/lessons/measure/memory_policy.hpp"


namespace attn {
namespace {

constexpr std::size_t kHeldOutSequences = 32;
// The share of training rows with the fixed layout, P ids then the same P (train.hpp).
constexpr double kHeldOutLayoutShare = 0.4;

// The generator of step `step`'s batch: seeded by (seed, step), so a continued run draws the
// batches an uninterrupted one draws.
Rng batch_rng(std::uint64_t seed, std::size_t step) {
  return Rng(hash_with_seed("batch " + std::to_string(step), seed));
}
Rng held_out_rng(std::uint64_t seed) { return Rng(hash_with_seed("held-out", seed)); }

struct Evaluation {
  double loss;
  HeadSummary summary;
  std::vector<Tensor3> shown;  // sequence 0's attention, [layers] of [H, L, L]
};

// The held-out loss and every head's attention on the held-out batch, on the naive float64
// kernel: the numbers do not depend on the thread count or the training backend.
Evaluation evaluate(const ToyModel& model, const TokenBatch& held_out, ToyWorkspace& ws) {
  Evaluation e;
  e.loss = toy_loss_and_gradients(model, held_out, nullptr, ws, {Backend::naive, 1});
  const std::size_t H = model.config.heads, L = held_out.length, per_head = L * L;
  std::vector<std::vector<Tensor3>> attention(held_out.batch);
  std::vector<std::vector<std::int32_t>> ids(held_out.batch);
  for (std::size_t s = 0; s < held_out.batch; ++s) {
    ids[s].assign(held_out.tokens.begin() + std::ptrdiff_t(s * L), held_out.tokens.begin() + std::ptrdiff_t((s + 1) * L));
    for (const SdpaResult& layer : ws.attention) {
      Tensor3 w = Tensor3::from_shape({H, L, L});
      std::copy_n(layer.weights.data() + s * H * per_head, H * per_head, w.data());
      attention[s].push_back(std::move(w));
    }
  }
  e.summary = summarize_heads(ids, attention);
  e.shown = std::move(attention.front());
  return e;
}

TrainPoint point_of(std::size_t step, const Evaluation& e, double seconds) {
  TrainPoint p{step, e.loss, 0, 0, seconds};
  for (const HeadScores& s : e.summary.heads) {
    p.prev_token_score = std::max(p.prev_token_score, s.previous_token.value_or(0));
    p.induction_score = std::max(p.induction_score, s.induction.value_or(0));
  }
  return p;
}

// A point that an uninterrupted run would not have logged (the last step of a run that
// stopped between two logging steps) is dropped when the run continues.
void drop_off_grid_point(TrainRun& run, std::size_t log_every) {
  const TrainPoint& last = run.points.back();
  if (run.points.size() > 1 && last.step % log_every != 0) {
    run.points.pop_back();
    run.shown_attention.pop_back();
  }
}

}  // namespace

TrainTask parse_train_task(const std::string& name) {
  if (name == "induction") return TrainTask::induction;
  if (name == "reverse") return TrainTask::reverse;
  throw InputError("task: expected \"induction\" or \"reverse\", got \"" + name + "\"");
}

const char* train_task_name(TrainTask task) { return task == TrainTask::induction ? "induction" : "reverse"; }

std::int32_t random_id(std::size_t vocab, Rng& rng) {
  return std::int32_t(std::min(vocab - 1, std::size_t(rng.uniform() * double(vocab))));
}

TokenBatch task_batch(TrainTask task, std::size_t batch, std::size_t length, std::size_t vocab, Rng& rng) {
  const std::size_t P = length / 2;
  TokenBatch b{batch, length, std::vector<std::int32_t>(batch * length)};
  for (std::size_t s = 0; s < batch; ++s) {
    std::int32_t* row = b.tokens.data() + s * length;
    for (std::size_t i = 0; i < P; ++i) row[i] = random_id(vocab, rng);
    for (std::size_t i = 0; i < P; ++i) row[P + i] = task == TrainTask::induction ? row[i] : row[P - 1 - i];
  }
  return b;
}

namespace {

// A row of `n` ids: a random prefix of `offset` ids, then `period` random ids repeated to the
// end. The period is uniform in [2, length/2], the offset in [0, n - 2 period].
void varied_row(std::int32_t* row, std::size_t n, std::size_t length, std::size_t vocab, Rng& rng) {
  const std::size_t P = length / 2;
  const std::size_t period = 2 + std::min(P - 2, std::size_t(rng.uniform() * double(P - 1)));
  const std::size_t offset = std::min(n - 2 * period, std::size_t(rng.uniform() * double(n - 2 * period + 1)));
  for (std::size_t i = 0; i < n; ++i) row[i] = i < offset + period ? random_id(vocab, rng) : row[i - period];
}

// One row of what training sees (train.hpp): `n` ids, the last only a target.
void training_row(std::int32_t* row, std::size_t n, std::size_t length, std::size_t vocab, Rng& rng) {
  if (rng.uniform() >= kHeldOutLayoutShare) return varied_row(row, n, length, vocab, rng);
  const std::size_t P = length / 2;
  for (std::size_t i = 0; i < n; ++i) row[i] = i < P ? random_id(vocab, rng) : row[i - P];
}

}  // namespace

TokenBatch training_batch(TrainTask task, std::size_t batch, std::size_t length, std::size_t vocab, Rng& rng) {
  if (task != TrainTask::induction) return task_batch(task, batch, length, vocab, rng);
  const std::size_t n = length + 1;
  TokenBatch b{batch, n, std::vector<std::int32_t>(batch * n), /*last_is_target=*/true};
  for (std::size_t s = 0; s < batch; ++s) training_row(b.tokens.data() + s * n, n, length, vocab, rng);
  return b;
}

TokenBatch induction_batch(std::size_t batch, std::size_t length, std::size_t vocab, Rng& rng) {
  return task_batch(TrainTask::induction, batch, length, vocab, rng);
}

TokenBatch held_out_batch(TrainTask task, std::size_t batch, std::size_t length, std::size_t vocab, Rng& rng) {
  if (task != TrainTask::induction) return task_batch(task, batch, length, vocab, rng);
  TokenBatch b{batch, length, std::vector<std::int32_t>(batch * length)};
  for (std::size_t s = 0; s < batch; ++s) varied_row(b.tokens.data() + s * length, length, length, vocab, rng);
  return b;
}

void check_train_options(const TrainOptions& o) {
  check_toy_config(o.config);
  auto at_least_one = [](const char* name, std::size_t value, std::size_t max) {
    if (value < 1 || value > max)
      throw InputError(std::string(name) + ": expected 1.." + std::to_string(max) + ", got " + std::to_string(value));
  };
  at_least_one("steps", o.steps, 10000000);
  at_least_one("batch", o.batch, 65536);
  at_least_one("log_every", o.log_every, 10000000);
  if (!std::isfinite(o.lr) || o.lr <= 0 || o.lr > 1)
    throw InputError("lr: expected a number in (0, 1], got " + std::to_string(o.lr));
  if (o.config.context < 4 || o.config.context % 2)
    throw InputError("context: expected an even number >= 4 (P tokens, then P again), got " +
                     std::to_string(o.config.context));
  // The largest activation, the logits [batch * context, vocab], must fit in memory.
  const double elements = double(o.batch) * double(o.config.context) * double(std::max(o.config.vocab, o.config.d_model));
  if (elements > double(1u << 28))
    throw InputError("batch: batch x context x max(vocab, d_model) = " + std::to_string(std::size_t(elements)) +
                     " values per activation, more than 2^28");
  if (o.backend == Backend::cuda) throw InputError("backend: training runs on \"flash\" or \"naive\"");
  if (o.threads > 1024) throw InputError("threads: expected 0..1024, got " + std::to_string(o.threads));
}

double train_memory_bytes(const TrainOptions& o) {
  const ToyConfig& c = o.config;
  const double L = double(c.context), H = double(c.heads), layers = double(c.layers);
  const double per_sequence_attention = H * L * L;
  // Scoring: float64 scores and weights of one layer, every layer's float32 weights kept, and
  // their per-sequence copies.
  const double scoring = double(kHeldOutSequences) * per_sequence_attention * (16 + 8 * layers);
  const double history = double(o.steps / o.log_every + 2) * layers * per_sequence_attention * 4;
  const double rows = double(o.batch) * L, width = double(std::max(c.vocab, c.d_model));
  const double activations = rows * width * 4 * (3 * layers + 8);  // residuals, Q K V, merged, logits, scratch
  const double parameters = double(toy_parameter_count(c)) * 4 * 4;  // model, gradients, Adam's m and v
  return scoring + history + activations + parameters;
}

const std::vector<Tensor3>& TrainRun::attention_at_phase_change() const {
  for (std::size_t k = 0; k < points.size(); ++k)
    if (phase_change_step && points[k].step == *phase_change_step) return shown_attention[k];
  return shown_attention.back();
}

std::optional<std::size_t> phase_change_step(const std::vector<TrainPoint>& points, double uniform_loss) {
  if (points.empty()) return std::nullopt;
  std::vector<double> smooth(points.size());
  for (std::size_t k = 0; k < points.size(); ++k) {  // centred mean over up to 5 points
    const std::size_t lo = k >= 2 ? k - 2 : 0, hi = std::min(points.size(), k + 3);
    double sum = 0;
    for (std::size_t j = lo; j < hi; ++j) sum += points[j].loss;
    smooth[k] = sum / double(hi - lo);
  }
  if (*std::min_element(smooth.begin(), smooth.end()) > uniform_loss - 0.5) return std::nullopt;
  const double threshold = 0.5 * (uniform_loss + smooth.back());
  for (std::size_t k = 0; k < points.size(); ++k)
    if (smooth[k] < threshold) return points[k].step;
  return std::nullopt;
}

std::vector<std::int32_t> train_shown_sequence(const TrainOptions& o) {
  Rng generator = held_out_rng(o.seed);
  const TokenBatch held_out = held_out_batch(o.task, kHeldOutSequences, o.config.context, o.config.vocab, generator);
  return {held_out.tokens.begin(), held_out.tokens.begin() + std::ptrdiff_t(o.config.context)};
}

TrainRun run_training(const TrainOptions& o, const std::function<void(const TrainPoint&)>& on_point,
                      const TrainRun* resume) {
  check_train_options(o);
  const std::size_t threads = o.threads ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  set_openblas_threads(threads);  // its workers stay stopped until a BLAS call needs them
  // Every step allocates and frees the same few MiB (the kernels' results): kept in the
  // process, a step is pure computation.
  reuse_freed_memory();
  const ToyConfig& c = o.config;
  Rng held_out_generator = held_out_rng(o.seed);
  const TokenBatch held_out = held_out_batch(o.task, kHeldOutSequences, c.context, c.vocab, held_out_generator);

  TrainRun run;
  run.uniform_loss = std::log(double(c.vocab));
  // Of the L-1 predictions, the first P-1 are of fresh random tokens: ln(vocab) each at best.
  run.best_loss = run.uniform_loss * double(c.context / 2 - 1) / double(c.context - 1);
  run.shown_sequence.assign(held_out.tokens.begin(), held_out.tokens.begin() + std::ptrdiff_t(c.context));
  ToyWorkspace ws, eval_ws;
  std::optional<Adam> adam;
  const AdamOptions adam_options{o.lr};
  if (resume) {
    run.model = resume->model, run.points = resume->points, run.shown_attention = resume->shown_attention;
    if (resume->optimizer.t >= o.steps)
      throw InputError("steps: the resumed run has done " + std::to_string(resume->optimizer.t) +
                       " steps already; ask for more");
    adam.emplace(adam_options, resume->optimizer);
    drop_off_grid_point(run, o.log_every);
  } else {
    run.model = init_toy_model(c, o.seed);
    adam.emplace(c, adam_options);
    Evaluation e = evaluate(run.model, held_out, eval_ws);
    run.points.push_back(point_of(0, e, 0));
    run.shown_attention.push_back(std::move(e.shown));
    if (on_point) on_point(run.points.back());
  }

  const double seconds_before = run.points.back().seconds;
  const auto start = std::chrono::steady_clock::now();
  ToyModel grads = zero_toy_model(c);
  const ToyPassOptions pass{o.backend, threads};
  for (std::size_t step = adam->steps_taken() + 1; step <= o.steps; ++step) {
    Rng rng = batch_rng(o.seed, step);
    const TokenBatch batch = training_batch(o.task, o.batch, c.context, c.vocab, rng);
    const double loss = toy_loss_and_gradients(run.model, batch, &grads, ws, pass);
    if (!std::isfinite(loss)) throw RuntimeError("training diverged at step " + std::to_string(step) + " (try a smaller --lr)");
    adam->step(run.model, grads);
    if (step % o.log_every != 0 && step != o.steps) continue;
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    Evaluation e = evaluate(run.model, held_out, eval_ws);
    run.points.push_back(point_of(step, e, o.timing ? seconds_before + elapsed.count() : 0));
    run.shown_attention.push_back(std::move(e.shown));
    if (step == o.steps) run.final_summary = std::move(e.summary);
    if (on_point) on_point(run.points.back());
  }
  run.optimizer = adam->state();
  run.phase_change_step = phase_change_step(run.points, run.uniform_loss);
  return run;
}

}  // namespace attn
