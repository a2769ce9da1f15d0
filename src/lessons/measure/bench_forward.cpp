// `attn-cli bench --mode forward` as a library call (bench_forward.hpp).
#include "attn/lessons/measure/bench_forward.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "attn/engine/core/error.hpp"
#include "attn/engine/models/decoder_model.hpp"
#include "attn/engine/models/gpt2_model.hpp"
#include "attn/io/decoder_model_file.hpp"
#include "attn/io/gpt2_model_file.hpp"
#include "attn/lessons/measure/bench.hpp"
#include "attn/lessons/models/gpt2_forward.hpp"
#include "bench_timing.hpp"

namespace attn {

using namespace bench_detail;

struct ForwardBench::Model {
  std::optional<Gpt2Model> gpt2;
  std::optional<DecoderModel> decoder;
  std::string family;
};

namespace {

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

}  // namespace

ForwardBench::ForwardBench(const std::string& dir) : model_(std::make_unique<Model>()) {
  if (is_gpt2_folder(dir)) {
    model_->gpt2.emplace(read_gpt2_model(dir));
    model_->family = "GPT-2";
  } else {
    model_->decoder.emplace(read_decoder_model(dir));
    model_->family = decoder_family_name(model_->decoder->config.family);
  }
}

ForwardBench::~ForwardBench() = default;

const std::string& ForwardBench::family() const { return model_->family; }
std::size_t ForwardBench::layers() const {
  return model_->gpt2 ? model_->gpt2->config.n_layer : model_->decoder->config.layers;
}
std::size_t ForwardBench::heads() const {
  return model_->gpt2 ? model_->gpt2->config.n_head : model_->decoder->config.heads;
}
std::size_t ForwardBench::width() const {
  return model_->gpt2 ? model_->gpt2->config.n_embd : model_->decoder->config.hidden;
}
std::size_t ForwardBench::vocab() const {
  return model_->gpt2 ? model_->gpt2->config.vocab_size : model_->decoder->config.vocab;
}
double ForwardBench::pass_flops(std::size_t tokens) const {
  return model_->gpt2 ? gpt2_forward_flops(model_->gpt2->config, tokens)
                      : decoder_forward_flops(model_->decoder->config, tokens);
}
double ForwardBench::pass_bytes(std::size_t tokens) const {
  const double n = double(tokens), L = double(layers());
  return 4 * (L * double(heads()) * n * n + 6 * L * n * double(width()) + n * double(vocab()));
}
std::size_t ForwardBench::positions() const {
  return model_->gpt2 ? model_->gpt2->config.n_positions : model_->decoder->config.max_positions;
}
void ForwardBench::check_tokens(std::size_t tokens) const {
  if (tokens == 0 || tokens > positions())
    throw InputError("--n: expected 1 to the model's " + std::to_string(positions()) + " positions, got " +
                     std::to_string(tokens));
}

ForwardBenchRun ForwardBench::run(const ForwardBenchConfig& c) const {
  check_tokens(c.tokens);
  if (c.repeat == 0) throw InputError("--repeat: expected at least 1");
  // The ids do not matter to the time; spread over the vocabulary, the same every run.
  std::vector<std::int32_t> ids(c.tokens);
  for (std::size_t i = 0; i < c.tokens; ++i) ids[i] = std::int32_t(i * 7919 % vocab());
  auto pass = [&] {  // what `forward` times: the pass and its outputs (attention weights, logits)
    if (model_->gpt2) (void)gpt2_forward(*model_->gpt2, ids, c.threads);
    else (void)decoder_forward(*model_->decoder, ids, c.threads);
  };
  std::optional<SgemmOperands> sgemm;
  if (c.sgemm_n) sgemm.emplace(c.sgemm_n);

  ForwardBenchRun run;
  run.config = c;
  run.flops = pass_flops(c.tokens);
  hand_back_kept_memory();  // the first pass on fresh memory, as a `forward` command's is
  const long faults_before = minor_faults();
  run.first_ms = time_runs(1, pass).wall_ms[0];
  run.first_minor_faults = minor_faults() - faults_before;
  if (sgemm) sgemm->timed_ms(c.threads);  // untimed: OpenBLAS started, its buffers allocated
  std::vector<double> ratios;
  long timed_faults = 0;
  for (std::size_t r = 0; r < c.repeat; ++r) {  // side by side: both see the machine as it is
    const long f0 = minor_faults();
    run.pass_ms.push_back(time_runs(1, pass).wall_ms[0]);
    timed_faults += minor_faults() - f0;
    if (!sgemm) continue;
    run.sgemm_ms.push_back(sgemm->timed_ms(c.threads));
    ratios.push_back(run.sgemm_ms.back() / run.pass_ms.back() * run.flops / sgemm->flops());
  }
  run.timed_minor_faults = double(timed_faults) / double(c.repeat);
  run.median_ms = median_of(run.pass_ms);
  run.min_ms = *std::min_element(run.pass_ms.begin(), run.pass_ms.end());
  run.gflops = run.flops / (run.median_ms * 1e6);
  if (sgemm) {
    run.sgemm_median_ms = median_of(run.sgemm_ms);
    run.sgemm_gflops = sgemm->flops() / (*run.sgemm_median_ms * 1e6);
    run.fraction_of_sgemm = median_of(ratios);
    run.first_fraction_of_sgemm = run.flops / (run.first_ms * 1e6) / *run.sgemm_gflops;
  }
  return run;
}

}  // namespace attn
