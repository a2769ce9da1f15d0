#pragma once
// attn-cli tradeoff: the efficient-attention family measured on this machine, Long Range Arena
// style (Tay et al. 2021, arXiv 2011.04006): for each sequence length n, the time, the peak
// memory, the FLOPs and the error against exact softmax attention on the same Q, K, V of
//
//   flash       exact softmax attention, the tiled float32 kernel (FlashAttention)
//   window      a causal sliding window of `window` keys (Mistral), flash with a mask
//   sparse      Child et al. 2019's strided pattern, stride `stride`, flash with a mask
//   linear      Katharopoulos et al. 2020, elu + 1 features, linear-time form (float64)
//   performer   Choromanski et al. 2021, m positive random features (float64), one run per m
//   linformer   Wang et al. 2020, K and V projected to k rows (float64); not causal
//
// Every method but linformer is causal and compared with exact causal attention; linformer
// with exact bidirectional attention (its projection mixes every key into each row). The exact
// references are the flash kernel in float64. One head of width d, scale 1/sqrt(d), on two
// kinds of inputs:
//   random   Q, K, V ~ N(0, 1): scores of about N(0, 1), attention spread over every key, no
//            structure for an approximation to use;
//   local    K a random walk along the sequence (each row 0.9 of the last plus fresh noise, so
//            k_i . k_j ~ d 0.9^|i-j|), Q = 2 K plus noise 0.1, V ~ N(0, 1): attention peaked on
//            the nearest keys, as language's often is;
//   toy      a trained head's own q, k, v: the toy model attn-cli carries (shipped_model.hpp),
//            its best induction head (largest score on the first window), d = its head dim, 16.
//            The model reads 32 positions, so the sequence is ceil(n / 32) held-out windows of
//            its task (train.hpp's held_out_batch: a random prefix, then a period repeated),
//            each its own forward pass, laid end to end. Within a window the head looks at the
//            token after the query's earlier copy, wherever it is: attention found by content,
//            not distance (across windows the same tokens recur, so exact attention over all n
//            keys weighs every copy).
// The time of each method is then fitted by a power law in n (on the first kind of inputs).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attn/engine/core/tensor.hpp"
#include "attn/io/json_io.hpp"

namespace attn {

struct TradeoffConfig {
  std::vector<std::size_t> ns = {256, 1024, 4096};
  std::size_t head_dim = 64;
  std::size_t window = 128, stride = 64;
  std::vector<std::size_t> features = {16, 64, 256};  // performer's m, one run each
  std::size_t rank = 64;                               // linformer's k
  std::size_t repeat = 3;                              // timed runs per method (median), after one untimed
  std::size_t threads = 0;                             // flash's threads (0 = all)
  std::uint64_t seed = 42;
  std::vector<std::string> inputs = {"random", "local"};
  std::function<void(std::size_t done, std::size_t total)> progress;
};

struct TradeoffRun {
  std::string method;  // "flash", "window 128", "performer m=64", ...
  std::string family;  // flash, window, sparse, linear, performer, linformer
  std::size_t n = 0;
  std::string inputs;  // random | local | toy
  std::size_t head_dim = 0;  // config.head_dim, or the toy model's with toy inputs
  bool causal = true;
  double ms = 0;            // median of the timed runs
  double flops = 0;         // multiply-adds counted 2, for what the method computes
  double peak_bytes = 0;    // the process's peak resident set during the run, above its size before
  double error = 0;         // ||O - O_exact||_F / ||O_exact||_F
};

struct TradeoffFit {
  std::string method;
  double exponent = 0;  // time ~ n^exponent, least squares on log-log over the n measured
};

struct TradeoffResult {
  TradeoffConfig config;
  std::vector<TradeoffRun> runs;  // n by n, methods in the order above
  std::vector<TradeoffFit> fits;  // one per method, when at least two n were measured
};

// InputError for sizes that cannot run (n, d, window, stride, features, rank, repeat of 0;
// n past 65536) and inputs other than random, local and toy.
void check_tradeoff_config(const TradeoffConfig& config);
// Seconds the whole measurement should take at most, for the time budget: its work at rates
// a little below the slowest CPU these kernels were measured on (flash float32 2e10 FLOP/s,
// float64 flash 5e9, the float64 methods 1e9, a mask's bitmap 5e7 elements/s).
double tradeoff_seconds(const TradeoffConfig& config);
// The largest memory one run holds: for the memory budget (a mask's bitmap is n^2 bytes, twice).
double tradeoff_bytes(const TradeoffConfig& config);

TradeoffResult run_tradeoff(const TradeoffConfig& config);

// The configuration one kind of inputs runs with: toy inputs have the toy model's head dim.
TradeoffConfig config_for(const TradeoffConfig& config, const std::string& kind);

// One kind of inputs at n: Q, K, V [1, n, d], d = config.head_dim (pass config_for(config, kind)).
struct TradeoffInputs {
  Tensor3 q, k, v;
};
TradeoffInputs tradeoff_inputs(const TradeoffConfig& config, std::size_t n, const std::string& kind);

// Keys query p (0-based, causal) sees under a window of w keys, or Child et al.'s stride s:
// min(w, p + 1); min(s, p + 1) + floor(p / s).
std::size_t window_keys(std::size_t p, std::size_t w);
std::size_t strided_keys(std::size_t p, std::size_t s);

Json tradeoff_json(const TradeoffResult& result);

}  // namespace attn
