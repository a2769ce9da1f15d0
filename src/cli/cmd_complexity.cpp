// attn-cli complexity: FLOPs, memory and KV-cache bytes of attention, counted in closed form
// (complexity.hpp), and optionally the engine timed over n (scaling.hpp).
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>

#include "attn/lessons/concepts/complexity.hpp"
#include "attn/render/views/experiment_pictures.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/text/printable_text.hpp"
#include "attn/io/hf_config.hpp"
#include "attn/lessons/measure/scaling.hpp"
#include "budget.hpp"
#include "commands.hpp"
#include "experiment_output.hpp"

namespace attn::cli {
namespace {

struct ComplexityOptions {
  ComplexityConfig config;
  std::size_t layers = 0, kv_heads = 0, head_dim = 0;  // a custom KV-cache model when given
  bool measure = false;
  std::vector<std::size_t> measure_n = {256, 512, 1024, 2048};
  std::size_t repeat = 5;
  std::uint64_t seed = 42;
  OutputOptions output;
  PlotOptions plots;
};

// Exact integers for machines (CSV), SI prefixes for people.
std::string count_cell(double x, TableFormat f) { return f == TableFormat::csv ? format_fixed(x, 0) : format_si(x); }
std::string bytes_cell(double x, TableFormat f) { return f == TableFormat::csv ? format_fixed(x, 0) : format_bytes(x); }

// The FLOPs per step, and where the n^2 terms overtake the projections.
void flops_section(const ComplexityReport& r, TableFormat f, std::string& out) {
  const bool prose = f != TableFormat::csv;
  Table rows{{"n", "H n^2", "qkv_proj", "scores", "softmax", "weighted_sum", "out_proj", "total FLOPs",
              "scores (naive)", "tiled extra"}, {}};
  for (const ComplexityRow& x : r.rows) {
    const AttentionFlops& fl = x.flops;
    rows.rows.push_back({std::to_string(x.n), count_cell(double(x.attention_elements), f),
                         count_cell(double(fl.qkv_proj), f), count_cell(double(fl.scores), f),
                         count_cell(double(fl.softmax), f), count_cell(double(fl.weighted_sum), f),
                         count_cell(double(fl.out_proj), f), count_cell(double(fl.total), f),
                         bytes_cell(double(x.scores_naive_bytes), f), bytes_cell(double(x.tiled_extra_bytes), f)});
  }
  out += render_table(rows, f) + "\n";
  if (prose) {
    // n is a count of tokens: the crossover is written as the nearest whole one ("16384", not "1.638e+04").
    auto tokens = [](double n) { return format_fixed(std::round(n), 0); };
    out += "Crossover (the textbook O(n d^2 + n^2 d)): the n^2 terms overtake the n D^2 projections at n = " +
           tokens(r.crossover.matmuls) + " (Q K^T + P V vs the Q, K, V and output projections), n = " +
           tokens(r.crossover.matmuls_without_out) + " without the output projection (the four steps textbooks count), n = " +
           tokens(r.crossover.with_softmax) + " with softmax counted too. The textbook \"when n > d\" is the "
           "order of magnitude; the constants move it.\n\n";
  }
}

// The long-sequence methods at the largest n, as counts.
void methods_section(const ComplexityReport& r, TableFormat f, std::string& out) {
  const bool prose = f != TableFormat::csv;
  const ComplexityConfig& c = r.config;
  if (prose) {
    out += "Long-sequence methods (FlashAttention, sparse, linear, local), attention core only (Q K^T and P V; projections "
           "excluded), at n = " + std::to_string(r.methods.front().at.back().n) +
           (c.causal ? ", causal (each query sees only earlier keys)" : "") + ":\n";
  }
  Table methods{{"method", "time", "memory", "FLOPs", "score memory", "idea", "source"}, {}};
  for (const MethodCost& mc : r.methods) {
    const MethodAt& a = mc.at.back();
    methods.rows.push_back({mc.name, mc.time, mc.memory, count_cell(a.flops, f), bytes_cell(a.memory_bytes, f),
                            mc.idea, mc.source});
  }
  if (prose) {  // long prose columns read better outside the aligned table
    for (auto& row : methods.rows) row.resize(5);
    methods.header.resize(5);
  }
  out += render_table(methods, f) + "\n";
  if (prose) {
    for (const MethodCost& mc : r.methods) out += "  " + mc.name + ": " + mc.idea + " (" + mc.source + ")\n";
    out += "These are counts. `attn-cli tradeoff` measures the methods on this machine (time, peak memory, error "
           "against exact attention), where constants and memory traffic decide what the big-O does not.\n\n";
  }
}

// Vaswani et al.'s Table 1, computed, and what it says of self-attention against recurrence.
void layer_types_section(const ComplexityReport& r, TableFormat f, std::string& out) {
  const bool prose = f != TableFormat::csv;
  const ComplexityConfig& c = r.config;
  if (prose) {
    out += "Vaswani et al. 2017, Table 1, computed for n = " + std::to_string(c.ns.back()) + ", d = " +
           std::to_string(c.d_model) + ", k = " + std::to_string(c.kernel) + ", r = " + std::to_string(c.window) +
           " (operations per layer; sequential operations; the longest path a signal travels between two positions):\n";
  }
  Table layers{{"layer type", "complexity", "operations", "sequential", "max path", "path"}, {}};
  for (const LayerTypeRow& l : r.layer_types)
    layers.rows.push_back({l.layer, l.complexity, count_cell(l.operations, f), format_fixed(l.sequential, 0),
                           format_fixed(l.max_path, 0), l.path_formula});
  out += render_table(layers, f) + "\n";
  if (prose) {
    const LayerTypeRow &attn = r.layer_types[0], &rnn = r.layer_types[1];
    out += "Self-attention costs " + format_g(attn.operations / rnn.operations, 3) + "x a recurrent layer here: "
           "cheaper exactly when n < d (the paper's point for sentence-length n), with one sequential step and a path of "
           "1 where the recurrent layer needs n.\n";
  }
}

// The KV cache of each model, with the rolling buffer of a windowed one and the tutorial's slip.
void kv_section(const ComplexityReport& r, TableFormat f, std::string& out) {
  const bool prose = f != TableFormat::csv;
  const ComplexityConfig& c = r.config;
  if (prose) {
    out += "\nKV cache = 2 x layers x kv_heads x head_dim x tokens x bytes (" + std::to_string(c.tokens) +
           " tokens, " + std::to_string(c.dtype_bytes) + "-byte numbers, batch 1); a model with a sliding "
           "window w can keep a rolling buffer of min(tokens, w) tokens instead:\n";
  }
  Table kv{{"model", "layers", "kv_heads", "head_dim", "tokens", "bytes", "window", "rolling buffer"}, {}};
  for (const auto& [model, bytes] : r.kv_cache) {
    kv.rows.push_back({model.name, std::to_string(model.layers), std::to_string(model.kv_heads),
                       std::to_string(model.head_dim), std::to_string(c.tokens), bytes_cell(double(bytes), f),
                       model.window ? std::to_string(model.window) : "-",
                       model.window ? bytes_cell(double(kv_rolling_buffer_bytes(model, c.tokens, c.dtype_bytes)), f)
                                    : "-"});
  }
  out += render_table(kv, f);
  if (prose) {
    for (const auto& [model, bytes] : r.kv_cache)
      if (model.window) out += "\n" + model.name + ": " + model.source + ".\n";
    const KvClaimCheck& s = r.kv_claim;
    out += "\nA widely shared KV-cache tutorial gives LLaMA-7B " + std::to_string(s.claimed.layers) + " layers: " +
           std::to_string(s.claimed_bytes) + " bytes (" + format_si(double(s.claimed_bytes)) + "B = " +
           format_bytes(double(s.claimed_bytes)) + ", its arithmetic is right) at " +
           std::to_string(s.tokens) + " tokens and FP16. LLaMA-7B has " + std::to_string(s.actual.layers) +
           " layers (" + s.actual.source + "): " + std::to_string(s.actual_bytes) + " bytes (" +
           format_bytes(double(s.actual_bytes)) + ").\n";
  }
}

// --measure: the timed points and the fitted exponent.
void measured_section(const ScalingMeasurement& m, TableFormat f, std::string& out) {
  const bool prose = f != TableFormat::csv;
  out += prose ? "\nMeasured: attn::sdpa (float64 reference) on one head of d = " + std::to_string(m.head_dim) + ", " +
                     std::to_string(m.repeats) + " runs per length:\n"
               : "\n";
  Table t{{"n", "median ms", "min ms"}, {}};
  for (const TimingPoint& p : m.points)
    t.rows.push_back({std::to_string(p.n), format_g(p.median_ms, 4), format_g(p.min_ms, 4)});
  out += render_table(t, f);
  if (prose) {
    out += "Fitted exponent of time ~ n^p on log-log axes (least squares on the min times): p = " +
           format_fixed(m.exponent, 2) + " (predicted " + format_g(m.predicted_exponent) + " for large n).\n";
  }
}

std::string complexity_text(const ComplexityReport& r, const std::optional<ScalingMeasurement>& m,
                            TableFormat f) {
  const bool prose = f != TableFormat::csv;
  const ComplexityConfig& c = r.config;
  std::string out;
  if (prose) {
    out += "One self-attention layer: d_model D = " + std::to_string(c.d_model) + ", heads H = " +
           std::to_string(c.heads) + (c.causal ? ", causal" : "") + ", " + std::to_string(c.dtype_bytes) +
           "-byte numbers, batch 1.\nConvention: " + flops_convention() + "\n\n";
  }
  flops_section(r, f, out);
  methods_section(r, f, out);
  layer_types_section(r, f, out);
  kv_section(r, f, out);
  if (m) measured_section(*m, f, out);
  return out;
}

// A Hugging Face folder named by --model: its own KV cache (GQA as configured) beside the
// same shape as full multi-head (kv_heads = heads) and multi-query attention (one KV head).
void add_folder_models(const std::string& dir, ComplexityConfig& c) {
  const DecoderConfig d = read_decoder_config(dir);
  const std::filesystem::path path(dir);  // "models/Llama/" names the folder Llama too
  const std::string name = (path.has_filename() ? path.filename() : path.parent_path().filename()).string();
  const std::string source = printable_text(dir) + "/config.json (" + decoder_family_name(d.family) + ", " + std::to_string(d.heads) +
                             " query heads)";
  c.custom.push_back({printable_text(name), d.layers, d.kv_heads, d.head_dim, source, d.sliding_window});
  if (d.kv_heads != d.heads)
    c.custom.push_back({printable_text(name) + " as MHA", d.layers, d.heads, d.head_dim, source + ", kv_heads = heads", 0});
  if (d.kv_heads != 1)
    c.custom.push_back({printable_text(name) + " as MQA", d.layers, 1, d.head_dim, source + ", one KV head", 0});
}

// --model names presets or folders: each folder becomes rows of its own, and when only
// folders were named no preset is listed.
void split_models(ComplexityConfig& c) {
  std::vector<std::string> presets;
  bool any_folder = false;
  for (const std::string& name : c.models) {
    std::error_code ec;
    if (std::filesystem::is_directory(name, ec)) {
      add_folder_models(name, c);
      any_folder = true;
    } else {
      presets.push_back(name);
    }
  }
  c.list_presets = !any_folder;
  c.models = presets;
}

void run_complexity_command(ComplexityOptions opts) {
  split_models(opts.config);
  const bool any_custom = opts.layers || opts.kv_heads || opts.head_dim;
  if (any_custom) {
    if (!(opts.layers && opts.kv_heads && opts.head_dim))
      throw InputError("--layers, --kv-heads and --head-dim go together (a custom KV-cache model)");
    opts.config.custom.push_back({"custom", opts.layers, opts.kv_heads, opts.head_dim, "given on the command line"});
  }
  if (opts.measure) {
    // Each length: one untimed run and --repeat timed runs of the naive sdpa on one head.
    const double d = double(opts.config.d_model / opts.config.heads);
    double flops = 0;
    for (std::size_t n : opts.measure_n) flops += double(opts.repeat + 1) * attention_work(1, double(n), double(n), d);
    require_time(flops / kFlopsPerSecond, "complexity --measure with these --measure-n and --repeat",
                 "lower them");
  }
  const ComplexityReport r = run_complexity(opts.config);
  PreparedPlots plots = prepare_plots(opts.plots);
  std::optional<ScalingMeasurement> m;
  Json json = complexity_json(r);
  if (opts.measure) {
    m = measure_sdpa_scaling(opts.measure_n, opts.config.d_model / opts.config.heads, opts.repeat, opts.seed);
    json["measure"] = scaling_json(*m);
  }
  emit(opts.output, json, [&](TableFormat f) { return complexity_text(r, m, f); });
  std::vector<NamedFigure> figures{{"complexity", complexity_figure(r)}};
  if (m) figures.push_back({"scaling", scaling_figure(*m)});
  write_plots(plots, opts.output, figures);
}

}  // namespace

void setup_complexity(CLI::App& app) {
  auto opts = std::make_shared<ComplexityOptions>();
  CLI::App* cmd = app.add_subcommand(
      "complexity", "FLOPs, memory and KV-cache bytes of attention, counted exactly (and --measure)");
  ComplexityConfig& c = opts->config;
  cmd->add_option("--n", c.ns, "sequence lengths (comma-separated)")->delimiter(',')->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 40));
  cmd->add_option("--d-model", c.d_model, "model width D")->capture_default_str()->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30));
  cmd->add_option("--heads", c.heads, "attention heads H (divides D)")->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30));
  cmd->add_flag("--causal", c.causal, "causal self-attention: count only the unmasked half");
  cmd->add_option("--dtype-bytes", c.dtype_bytes, "bytes per number: 4 = fp32, 2 = fp16/bf16")
      ->capture_default_str()->check(CLI::Range(1, 8));
  cmd->add_option("--window", c.window, "window w of the sliding-window row (and r, the restricted attention's "
                  "neighbourhood, of the layer-type table)")->capture_default_str();
  cmd->add_option("--kernel", c.kernel, "convolution kernel k of the layer-type table (Vaswani et al. Table 1)")
      ->capture_default_str()->check(CLI::Range(std::size_t{2}, std::size_t{1} << 20));
  cmd->add_option("--tokens", c.tokens, "tokens held in the KV cache")->capture_default_str();
  std::string presets;
  for (const KvModel& m : kv_presets()) presets += (presets.empty() ? "" : ", ") + m.name;
  cmd->add_option("--model", c.models, "KV-cache presets to list (default all: " + presets + "), or a Hugging Face "
                  "Llama, Mistral or Qwen2 folder (its config.json: its cache beside MHA and MQA)")->delimiter(',');
  cmd->add_option("--layers", opts->layers, "custom KV-cache model: layers");
  cmd->add_option("--kv-heads", opts->kv_heads, "custom KV-cache model: key/value heads");
  cmd->add_option("--head-dim", opts->head_dim, "custom KV-cache model: head dim");
  add_time_flag(cmd);
  cmd->add_flag("--measure", opts->measure, "also time attn::sdpa over --measure-n and fit the exponent");
  cmd->add_option("--measure-n", opts->measure_n, "lengths to time (<= 8192)")->delimiter(',')->capture_default_str();
  cmd->add_option("--repeat", opts->repeat, "timed runs per length (the fit uses the fastest)")->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--seed", opts->seed, "seed of the random Q, K, V for --measure")->capture_default_str();
  add_output_options(cmd, opts->output, {"text", "markdown", "csv", "json"});
  add_plot_options(cmd, opts->plots);
  cmd->footer(R"(Pictures written into --plots DIR: complexity (FLOPs of each term vs n, log-log, with the
crossover n* marked) and, with --measure, scaling (measured time vs n, the fitted exponent and
the predicted n^2 line).

Examples:
  attn-cli complexity
  attn-cli complexity --n 1024,4096 --d-model 4096 --heads 32 --causal --dtype-bytes 2 --format markdown
  attn-cli complexity --n 512 --model llama-3-8b --layers 80 --kv-heads 8 --head-dim 128 --format json
  attn-cli complexity --n 256 --measure --measure-n 64,128,256 --repeat 1
  attn-cli complexity --n 64,128,256,512,1024,2048,4096 --d-model 512 --plots complexity-plots
)");
  cmd->callback([opts] { run_complexity_command(*opts); });
}

}  // namespace attn::cli
