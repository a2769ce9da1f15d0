#pragma once
// `attn-cli train`: grow an induction head (Olsson et al. 2022, "In-context learning and
// induction heads") in a 2-layer attention-only transformer (engine/models/toy_model.hpp) trained
// with Adam on sequences of random tokens repeated once, and record how it happens.
//
// Scores: head_summary.hpp's, the same that demo, forward and report give, pooled over held-out
// sequences where position alone cannot find the next token: each a random prefix, then a run of
// `period` random ids repeated (period and offset vary from sequence to sequence), so the
// induction score rises only when a previous-token head feeds an induction head:
//   previous-token score = mean over i >= 1 of A[i, i-1]
//   induction score      = mean over the queries whose token appeared exactly once before, at
//                          j, of A[i, j+1]: the token after that copy
//
// Every batch is drawn from a generator seeded by (seed, step), so a run continued from a
// checkpoint (--resume) sees exactly the batches an uninterrupted run sees.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attn/engine/training/adam.hpp"
#include "attn/engine/attention/attention.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/engine/training/toy_backprop.hpp"
#include "attn/io/json_io.hpp"
#include "attn/lessons/models/head_summary.hpp"

namespace attn {

// induction: P random ids, then the same P again (the next token of the second half is
//            "what followed this token last time").
// reverse:   P random ids, then the same P backwards (the next token is fixed by position
//            alone: the mirror image of where the query sits).
enum class TrainTask { induction, reverse };
TrainTask parse_train_task(const std::string& name);  // InputError naming the choices
const char* train_task_name(TrainTask task);

struct TrainOptions {
  ToyConfig config{64, 64, 4, 2, 32};
  TrainTask task = TrainTask::induction;
  std::size_t steps = 1000, batch = 64;  // steps: where the scores level off, measured (docs/training.md)
  double lr = 4e-3;  // the prototype's 1e-3 forms the heads too slowly for a 30-second run (docs/training.md)
  std::uint64_t seed = 42;
  // BLAS and attention threads (0 = all hardware threads). One by default: the default model's
  // products are too small to share (2 threads measured 15 % slower per step on 2 idle cores,
  // and several times slower on a busy machine, where OpenBLAS's waiting threads spin).
  std::size_t threads = 1;
  Backend backend = Backend::flash;
  std::size_t log_every = 10;  // a `steps` entry (and held-out scores) every this many steps
  bool timing = true;          // false: `seconds` is 0, so train.json is byte-identical
};

// A batch of the task: each row P = L/2 uniform random ids, then those P again (induction)
// or reversed (reverse).
TokenBatch task_batch(TrainTask task, std::size_t batch, std::size_t length, std::size_t vocab, Rng& rng);
// What training sees. reverse: task_batch. induction: rows of L + 1 ids with last_is_target
// (every one of the L positions predicts, so the last position is trained like the others and
// the held-out scores there mean something). 2 rows in 5 have the fixed layout (P = L/2 ids,
// then again); the others a random prefix of `offset` ids, then `period` ids repeated until the
// row is full, period uniform in [2, L/2] and offset uniform in [0, L + 1 - 2 period].
//  - With the fixed layout alone, one layer finds "the token P - 1 places back" by position (we
//    measured it: no previous-token head ever formed). Rows whose period changes leave only the
//    content route for them: a previous-token head feeding an induction head.
//  - A repeat that starts late makes positions late in the row keys that only a sharp
//    previous-token head can fill; from row start alone every late key has an earlier copy and
//    the layer-0 head stays blurred there (its score over the whole row fell to about 0.5).
//  - A token that occurs twice among the P ids (about one query in five for 16 of 64 ids) splits
//    a purely content-matching induction head between two followers: its score is at most
//    about 0.87 on the fixed layout. The fixed rows teach the tie-break, "prefer the match
//    P - 1 back". (The scores leave such queries out: head_summary.hpp counts a query only when
//    its token appeared exactly once before.)
TokenBatch training_batch(TrainTask task, std::size_t batch, std::size_t length, std::size_t vocab, Rng& rng);
TokenBatch induction_batch(std::size_t batch, std::size_t length, std::size_t vocab, Rng& rng);
// The held-out sequences the scores are measured on. induction: rows of `length` ids, a random
// prefix of `offset` ids, then `period` ids repeated to the end, period uniform in [2, L/2] and
// offset uniform in [0, L - 2 period] (a fixed layout would let "attend P - 1 back", position
// alone, pass for induction). reverse: task_batch.
TokenBatch held_out_batch(TrainTask task, std::size_t batch, std::size_t length, std::size_t vocab, Rng& rng);

struct TrainPoint {
  std::size_t step;
  double loss;  // held-out mean next-token loss (nats), every position of the sequence
  double prev_token_score, induction_score, seconds;  // the best head's score of each kind
};

struct TrainRun {
  ToyModel model;
  AdamState optimizer;  // to continue the run (--resume)
  std::vector<TrainPoint> points;
  HeadSummary final_summary;  // every head's scores and kind at the last step (head_summary.hpp)
  double uniform_loss;       // ln(vocab): a model that guesses uniformly
  double best_loss;          // the task's floor: positions whose next token is random pay ln(vocab)
  std::optional<std::size_t> phase_change_step;
  std::vector<std::int32_t> shown_sequence;  // held-out sequence 0, for the pictures
  // Its attention [layers] of [H, L, L] at every logged point (points[k] <-> shown_attention[k]).
  std::vector<std::vector<Tensor3>> shown_attention;
  // ...before training, at the phase change (the end when there is none) and at the end.
  const std::vector<Tensor3>& attention_before() const { return shown_attention.front(); }
  const std::vector<Tensor3>& attention_at_phase_change() const;
  const std::vector<Tensor3>& attention_after() const { return shown_attention.back(); }
};

// InputError for options out of range (steps, batch, log_every >= 1; lr > 0 and finite;
// context even and >= 4; the model's own limits, check_toy_config).
void check_train_options(const TrainOptions& options);

// About the most memory a run holds at once, in bytes, for a budget check before it starts: the
// held-out scoring on the naive float64 kernel (its scores and weights for every held-out
// sequence and layer), the shown sequence's attention at every logged point, the batch's
// activations, and the model with its gradients and Adam's two moments.
double train_memory_bytes(const TrainOptions& options);

// The whole run, or its continuation from `resume` (a run of the same options, fewer steps)
// up to options.steps. on_point is called for every logged point (progress bars).
TrainRun run_training(const TrainOptions& options, const std::function<void(const TrainPoint&)>& on_point = {},
                      const TrainRun* resume = nullptr);

// The phase change from a loss curve: the first logged step at which the loss, smoothed over 5
// points, is below the midpoint between ln(vocab) and the final smoothed loss; none when the
// loss never fell at least 0.5 nats below ln(vocab).
std::optional<std::size_t> phase_change_step(const std::vector<TrainPoint>& points, double uniform_loss);

// The held-out sequence a run with these options shows in its pictures (TrainRun::shown_sequence),
// drawn again from the seed: a run read back from its folder has it too.
std::vector<std::int32_t> train_shown_sequence(const TrainOptions& options);

// train.json: {config, train, uniform_loss, best_loss, phase_change_step, phase_change_rule,
// steps: [...], final: [...]}.
Json train_json(const TrainRun& run, const TrainOptions& options);

// DIR/model/ (the model folder), DIR/train.json and DIR/checkpoint.safetensors (Adam's
// moments and the shown sequence's attention history, what --resume needs beside the first two).
void write_train_run(const std::string& dir, const TrainRun& run, const TrainOptions& options);

// A run written by write_train_run, with the options it ran with (threads, backend and
// log_every as stored). InputError for a folder that is not one.
TrainRun read_train_run(const std::string& dir, TrainOptions& options);

}  // namespace attn
