#pragma once
// Timing a model's forward pass (`attn-cli bench --mode forward`, scripts/bench_forward.sh): a
// GPT-2 or Llama-family folder read once, then passes on the same token ids, each timed round
// one pass and one OpenBLAS sgemm N^3 (the yardstick), so that both see the same machine.
// Timed like every other bench: after an untimed first pass, on memory the process has touched
// already; that first pass is reported apart, with the page faults its fresh memory took.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attn {

struct ForwardBenchConfig {
  std::size_t tokens = 64, threads = 1, repeat = 3;
  std::size_t sgemm_n = 2048;  // 0: no yardstick
};

struct ForwardBenchRun {
  ForwardBenchConfig config;
  double flops = 0;              // one pass: gpt2_forward_flops or decoder_forward_flops
  double first_ms = 0;           // the untimed first pass
  long first_minor_faults = 0;   // page faults during it (the process's, every thread's)
  double timed_minor_faults = 0; // page faults per timed pass, on average
  double median_ms = 0, min_ms = 0;
  double gflops = 0;             // flops / median_ms
  std::optional<double> sgemm_gflops;       // 2 N^3 / sgemm's median time over the same rounds
  std::optional<double> fraction_of_sgemm;  // gflops / sgemm_gflops
  std::optional<double> first_fraction_of_sgemm;  // the first pass's GFLOP/s / sgemm_gflops
};

// A model folder, read once (the file mapped, as `forward` reads it), then timed at any number
// of tokens and threads. InputError for a folder that is neither GPT-2 nor a Llama-family
// decoder (the readers' own messages), for tokens = 0 or past the model's positions.
class ForwardBench {
 public:
  explicit ForwardBench(const std::string& dir);
  ~ForwardBench();
  ForwardBench(const ForwardBench&) = delete;
  ForwardBench& operator=(const ForwardBench&) = delete;

  // "GPT-2", or config.json's model_type ("llama", "mistral", "qwen2"), and its shape.
  const std::string& family() const;
  std::size_t layers() const;
  std::size_t width() const;
  std::size_t vocab() const;
  std::size_t max_tokens() const;
  double pass_flops(std::size_t tokens) const;

  ForwardBenchRun run(const ForwardBenchConfig& config) const;

 private:
  struct Model;
  std::unique_ptr<Model> model_;
};

}  // namespace attn
