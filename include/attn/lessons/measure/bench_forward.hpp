#pragma once
// Timing a model's forward pass (`attn-cli bench --mode forward`, scripts/bench_forward.sh): a
// GPT-2 or Llama-family folder read once, then passes on the same token ids, each round one pass
// and one OpenBLAS sgemm N^3 (the yardstick) timed side by side, so that both see the machine as
// it is at that moment. The rounds are timed as every other bench times: after a first pass, on
// memory the process has touched already. That first pass, on fresh memory as a `forward`
// command's is, is reported apart, with its page faults.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attn {

struct ForwardBenchConfig {
  std::size_t tokens = 64, threads = 1, repeat = 3;
  std::size_t sgemm_n = 2048;  // 0: no yardstick
};

// Medians are the middle round's, the upper of the two middle ones for an even count (as every
// bench column).
struct ForwardBenchRun {
  ForwardBenchConfig config;
  double flops = 0;               // one pass: gpt2_forward_flops or decoder_forward_flops
  double first_ms = 0;            // the first pass, on fresh memory
  long first_minor_faults = 0;    // page faults during it (the process's, every thread's)
  double timed_minor_faults = 0;  // page faults per round's pass, on average
  std::vector<double> pass_ms, sgemm_ms;  // each round's, in order (sgemm_ms empty without a yardstick)
  double median_ms = 0, min_ms = 0;
  double gflops = 0;  // flops / median_ms
  // With a yardstick: sgemm's median time over the rounds and its rate; the median over the
  // rounds of each round's pass rate over that round's sgemm rate (a pass and the sgemm beside
  // it see the same machine); and the first pass's rate over sgemm's median rate.
  std::optional<double> sgemm_median_ms, sgemm_gflops, fraction_of_sgemm, first_fraction_of_sgemm;
};

// A model folder, read once (the file mapped, as `forward` reads it), then timed at any number
// of tokens and threads. InputError for a folder that is neither GPT-2 nor a Llama-family
// decoder (the readers' own messages), and from run() for tokens past the model's positions.
class ForwardBench {
 public:
  explicit ForwardBench(const std::string& dir);
  ~ForwardBench();
  ForwardBench(const ForwardBench&) = delete;
  ForwardBench& operator=(const ForwardBench&) = delete;

  // "GPT-2", or config.json's model_type ("llama", "mistral", "qwen2"), and its shape.
  const std::string& family() const;
  std::size_t layers() const;
  std::size_t heads() const;
  std::size_t width() const;
  std::size_t vocab() const;
  std::size_t positions() const;  // the most tokens a pass takes
  double pass_flops(std::size_t tokens) const;
  // Bytes a pass's outputs hold at once, about: every layer's attention weights, q, k, v (GPT-2
  // keeps them) and the residual stream's copies, and the logits, all float32.
  double pass_bytes(std::size_t tokens) const;
  // InputError unless 1 <= tokens <= positions().
  void check_tokens(std::size_t tokens) const;

  ForwardBenchRun run(const ForwardBenchConfig& config) const;

 private:
  struct Model;
  std::unique_ptr<Model> model_;
};

}  // namespace attn
