// attn-cli attend: scaled dot-product attention on given Q, K, V (tensor I/O contract).
#include <unistd.h>

#include <iostream>
#include <memory>

#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/attention.hpp"
#include "attn/engine/attention/backward.hpp"
#include "attn/render/draw/heatmap.hpp"
#include "attn/engine/attention/mask.hpp"
#include "attn/engine/attention/sdpa.hpp"
#include "attn/render/draw/terminal_heatmap.hpp"
#include "attn/engine/attention/attention_methods.hpp"
#include "attn/io/numbers.hpp"
#include "commands.hpp"
#include "variant_fields.hpp"
#include "budget.hpp"
#include "common.hpp"

namespace attn::cli {
namespace {

struct AttendOptions {
  std::string input;
  std::string output = "-";
  bool no_weights = false;
  bool no_color = false;
};

// [L, d] -> [1, L, d] so one code path serves both ranks.
Tensor3 as_heads(const DenseArray& a) {
  if (a.shape.size() == 3) return to_tensor<3>(a);
  DenseArray b = a;
  b.shape.insert(b.shape.begin(), 1);
  return to_tensor<3>(b);
}

// For a person at a terminal, the weights as coloured cells, one table per head. The JSON is
// never mixed with it: the table goes to stdout only when the JSON went to a file, and to
// stderr when the JSON is on the terminal. Piped output gets the JSON alone.
void show_weights_on_terminal(const SdpaResult& r, const Mask3* mask, const SdpaOptions& options,
                              const AttendOptions& opts) {
  if (opts.no_weights || !::isatty(STDOUT_FILENO)) return;
  const bool json_on_stdout = opts.output == "-";
  const ColorMode mode = terminal_color_mode(::isatty(json_on_stdout ? STDERR_FILENO : STDOUT_FILENO),
                                             opts.no_color);
  if (json_on_stdout && mode == ColorMode::none) return;  // plain numbers: the JSON has them
  const std::size_t H = r.weights.shape(0), Lq = r.weights.shape(1), Lk = r.weights.shape(2);
  std::ostream& os = json_on_stdout ? std::cerr : std::cout;
  if (Lk > 16 || H * Lq > 48) {
    os << "(weights [" << H << ", " << Lq << ", " << Lk << "] are too large to show here; "
       << "try attn-cli heatmap)\n";
    return;
  }
  const ColorScale scale = color_scale_for({r.weights.data(), r.weights.size()}, std::nullopt);
  const Mask2 causal_mask = causal_allowed(Lq, Lk);
  for (std::size_t h = 0; h < H; ++h) {
    Mask2 allowed = xt::ones<bool>({Lq, Lk});
    if (mask) allowed = xt::view(*mask, mask->shape(0) == 1 ? 0 : h, xt::all(), xt::all());
    if (options.causal) allowed = allowed && causal_mask;
    if (options.mask_mod.any()) allowed = allowed && options.mask_mod.allowed(Lq, Lk);
    if (H > 1) os << "head " << h << ":\n";
    os << render_terminal_heatmap({position_labels(Lq, "q"), position_labels(Lk, "k"),
                                   xt::view(r.weights, h, xt::all(), xt::all()), &allowed, "Blues", scale,
                                   terminal_columns(json_on_stdout ? STDERR_FILENO : STDOUT_FILENO)},
                                  mode);
  }
}

// The fields a method other than softmax may take besides q, k, v (attention_methods.hpp);
// any other present field is one it cannot honour.
std::vector<const char*> method_fields(AttentionMethod m) {
  switch (m) {
    case AttentionMethod::linear: return {"causal", "backend"};
    case AttentionMethod::performer: return {"causal", "backend", "scale", "features", "seed"};
    case AttentionMethod::linformer: return {"backend", "scale", "rank", "seed"};
    default: return {};
  }
}

std::string join_names(const std::vector<const char*>& names) {
  std::string out;
  for (const char* n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

// attend with "method" linear, performer or linformer: float64, on the naive backend only.
void run_method(const Json& in, const AttendOptions& opts, AttentionMethod method) {
  const char* name = attention_method_name(method);
  const std::vector<const char*> allowed = method_fields(method);
  for (const auto& item : in.items()) {
    const std::string& field = item.key();  // not a structured binding: a lambda below reads it (clang 14)
    if (field == "q" || field == "k" || field == "v" || field == "method" || item.value().is_null()) continue;
    if (std::none_of(allowed.begin(), allowed.end(), [&](const char* f) { return field == f; }))
      throw InputError(field + ": method \"" + name + "\" cannot honour it (it takes " +
                       (allowed.empty() ? std::string("nothing more") : join_names(allowed)) + ")");
  }
  if (backend_from(in).backend != Backend::naive)
    throw InputError(std::string("backend: method \"") + name + "\" runs on backend \"naive\" (float64) only");
  const DenseArray q = parse_array(require_field(in, "q"), "q");
  const DenseArray k = parse_array(require_field(in, "k"), "k");
  const DenseArray v = parse_array(require_field(in, "v"), "v");
  check_sdpa_shapes(q.shape, k.shape, v.shape, nullptr);
  MethodOptions mo;
  mo.method = method;
  mo.causal = optional_bool(in, "causal", false);
  mo.scale = resolved_scale(optional_number(in, "scale"), q.shape.back());
  if (in.contains("features") && !in.at("features").is_null()) mo.features = count_field(in.at("features"), "features", 1, 1u << 16);
  if (in.contains("rank") && !in.at("rank").is_null()) mo.rank = count_field(in.at("rank"), "rank", 1, 1u << 16);
  if (in.contains("seed") && !in.at("seed").is_null()) mo.seed = count_field(in.at("seed"), "seed");
  const Tensor3 q3 = as_heads(q), k3 = as_heads(k), v3 = as_heads(v);
  // With weights, every method but linformer forms its [Lq, Lk] weights (float64, then float32
  // for every head); with --no-weights, linear and performer run in linear time and form none.
  // Performer also forms its [L, m] features, twice (exponents and values), for queries and keys.
  mo.with_weights = !opts.no_weights;
  const double weights = double(q3.shape(0)) * double(q3.shape(1)) * double(k3.shape(1));
  if (mo.with_weights && method != AttentionMethod::linformer)
    require_memory(weights * 40.0,
                   "the attention weights [" + std::to_string(q3.shape(0)) + ", " + std::to_string(q3.shape(1)) +
                       ", " + std::to_string(k3.shape(1)) + "]",
                   std::string("fewer tokens, or --no-weights (method \"") + name + "\" then runs in linear time)");
  require_memory(double(q3.shape(1) + k3.shape(1)) * double(mo.features) * 16, "performer's random features",
                 "use fewer \"features\"");
  const MethodResult r = method_attention(q3, k3, v3, mo);
  const bool rank2 = q.shape.size() == 2;
  auto in_rank = [rank2](const Tensor3& t) {
    return rank2 ? to_json(Tensor2(xt::view(t, 0, xt::all(), xt::all()))) : to_json(t);
  };
  Json out;
  out["output"] = in_rank(r.output);
  if (r.weights && !opts.no_weights) out["weights"] = in_rank(*r.weights);
  out["method"] = name;
  if (mo.causal) out["causal"] = true;
  // The random draws, so that a check outside can recompute the method exactly.
  if (method == AttentionMethod::performer) out["random_features"] = to_json(r.draws.at(0));
  if (method == AttentionMethod::linformer) out["projections"] = {{"E", to_json(r.draws.at(0))}, {"F", to_json(r.draws.at(1))}};
  write_file_atomically(opts.output, out.dump() + "\n");
}

void run_attend(const AttendOptions& opts) {
  const Json in = read_json(opts.input);
  require_object(in);
  std::vector<std::string> known{"q", "k", "v", "mask", "causal", "scale", "temperature", "backend", "block_size",
                                 "precision", "grad_output", "method", "features", "rank", "seed", "stride"};
  known.insert(known.end(), variant_fields().begin(), variant_fields().end());
  warn_unknown_fields(in, known);
  AttentionMethod method = AttentionMethod::softmax;
  if (in.contains("method") && !in.at("method").is_null()) {
    if (!in.at("method").is_string()) throw InputError("method: expected a string, got " + in.at("method").dump());
    method = parse_attention_method(in.at("method").get<std::string>());
  }
  if (method == AttentionMethod::linear || method == AttentionMethod::performer || method == AttentionMethod::linformer)
    return run_method(in, opts, method);
  for (const char* f : {"features", "rank", "seed"})
    if (in.contains(f) && !in.at(f).is_null())
      throw InputError(std::string(f) + ": method \"" + attention_method_name(method) + "\" cannot honour it");
  if (method == AttentionMethod::softmax && in.contains("stride") && !in.at("stride").is_null())
    throw InputError("stride: applies to method \"sparse\" only");
  const DenseArray q = parse_array(require_field(in, "q"), "q");
  const DenseArray k = parse_array(require_field(in, "k"), "k");
  const DenseArray v = parse_array(require_field(in, "v"), "v");
  std::optional<DenseArray> mask;
  if (in.contains("mask") && !in.at("mask").is_null()) {
    mask = parse_array(in.at("mask"), "mask", /*booleans=*/true);
  }
  check_sdpa_shapes(q.shape, k.shape, v.shape, mask ? &mask->shape : nullptr);
  const bool rank2 = q.shape.size() == 2;
  std::optional<DenseArray> grad_output;  // dLoss/dO: asks for the backward pass
  if (in.contains("grad_output") && !in.at("grad_output").is_null()) {
    grad_output = parse_array(in.at("grad_output"), "grad_output");
    const std::size_t Lq = q.shape[q.shape.size() - 2], dv = v.shape.back();
    check_grad_output_shape(grad_output->shape, rank2 ? Shape{Lq, dv} : Shape{q.shape[0], Lq, dv});
  }
  const BackendOptions backend = backend_from(in);
  SdpaOptions options = sdpa_options_from(in);
  variants_from(in, q.shape.size() == 3 ? q.shape[0] : 1, options);
  if (method == AttentionMethod::sparse) {  // Child et al.'s strided pattern: a mask like the variants
    if (!in.contains("stride") || in.at("stride").is_null()) throw InputError("stride: method \"sparse\" needs it");
    options.mask_mod.stride = variants::Strided{count_field(in.at("stride"), "stride", 1, std::uint64_t(1) << 40)};
  }
  const Mask3 allowed = mask ? mask_from(*mask) : Mask3{};
  const Mask3* allowed_ptr = mask ? &allowed : nullptr;
  const Tensor3 q3 = as_heads(q), k3 = as_heads(k), v3 = as_heads(v);
  require_weights_memory(q3.shape(0), q3.shape(1), k3.shape(1), backend, !opts.no_weights, "--no-weights");

  const SdpaResult r = attention(q3, k3, v3, allowed_ptr, options, backend, !opts.no_weights);
  // Answer in the rank we were asked in: [1, L, x] goes out as [L, x].
  auto in_rank = [rank2](const Tensor3& t) {
    return rank2 ? to_json(Tensor2(xt::view(t, 0, xt::all(), xt::all()))) : to_json(t);
  };
  Json out;  // built first: a non-finite value throws before any warning is printed
  out["output"] = in_rank(r.output);
  if (!opts.no_weights) out["weights"] = in_rank(r.weights);
  out["lse"] = rank2 ? lse_to_json(Tensor1(xt::view(r.lse, 0, xt::all()))) : lse_to_json(r.lse);
  // What hid which keys, as given: `attn-cli heatmap --input` reads them back and hatches the
  // masked cells instead of drawing them as weights of 0.
  if (mask) out["mask"] = in.at("mask");
  if (options.causal) out["causal"] = true;
  if (method == AttentionMethod::sparse) out["method"] = "sparse";
  if (grad_output) {
    const SdpaGradients g = attention_backward(q3, k3, v3, allowed_ptr, as_heads(*grad_output), options, backend);
    out["grad_q"] = in_rank(g.grad_q);
    out["grad_k"] = in_rank(g.grad_k);
    out["grad_v"] = in_rank(g.grad_v);
  }
  warn_fully_masked(r.lse);
  write_file_atomically(opts.output, out.dump() + "\n");
  show_weights_on_terminal(r, mask ? &allowed : nullptr, options, opts);
}

}  // namespace

void setup_attend(CLI::App& app) {
  auto opts = std::make_shared<AttendOptions>();
  CLI::App* cmd = app.add_subcommand(
      "attend", "Scaled dot-product attention on given Q, K, V (JSON in, JSON out)");
  cmd->add_option("-i,--input", opts->input, "JSON file with q, k, v (and optional mask, causal, "
                  "scale); - reads stdin")->required();
  cmd->add_option("-o,--output", opts->output, "where to write the result JSON (- = stdout)")
      ->capture_default_str();
  cmd->add_flag("--no-weights", opts->no_weights, "leave the [H, Lq, Lk] weights out of the output");
  add_memory_flag(cmd);
  cmd->add_flag("--no-color", opts->no_color, "no coloured weights table on a terminal (also: NO_COLOR=1)");
  cmd->footer(R"(Input:  {"q": [Lq,d] or [H,Lq,d], "k": [Lk,d], "v": [Lk,dv],
         "mask"?: [Lq,Lk] of 0/1 (1 = may attend), "causal"?: bool (bottom-right aligned),
         "scale"?: number (default 1/sqrt(d)), "temperature"?: number,
         "backend"?: "naive" (float64 reference) | "flash" (tiled, online softmax),
         "block_size"?: flash tile edge, "precision"?: "float64" (default) | "float32" (flash),
         "grad_output"?: [Lq,dv] or [H,Lq,dv] = dLoss/dOutput (runs the backward pass),
         variants (every CPU backend; p = i + Lk - Lq is query i's position):
         "window"?: [left, right] (keys p-left..p+right), "sinks"?: s (keys j < s always
         visible), "softcap"?: c (score x -> c tanh(x/c)), "alibi"?: true | [H] slopes
         (score - m_h (p - j)), "segments"?: {"q": [Lq], "k": [Lk]} (same id only),
         "prefix"?: P (keys j < P seen by all, the rest causally),
         "method"?: "softmax" (default) | "linear" (elu+1 features; causal) | "performer"
         ("features" m, "seed"; causal, scale) | "linformer" ("rank" k, "seed"; scale) |
         "sparse" ("stride" s: keys p-j < s or (p-j) mod s = 0, every backend)}
Output: {"output": [Lq,dv], "weights": [Lq,Lk], "lse": [Lq] (null = every key masked),
         "mask" and "causal" as given (so `heatmap --input` hatches the masked cells),
         with grad_output: "grad_q", "grad_k", "grad_v" (each the shape of q, k, v)}
The backward pass (naive: through the stored weights; flash: FlashAttention-2's Algorithm 2,
weights recomputed tile by tile) runs in float64. With GQA, grad_k and grad_v are summed over
the query heads that share a key/value head; a fully masked row contributes nothing.
On a terminal the weights are also shown as coloured cells (on stderr while the JSON is on
stdout; never when the output is piped).

Examples:
  attn-cli attend --input data/examples/attend_small.json
  attn-cli attend --input data/examples/attend_flash.json
  attn-cli attend --input data/examples/attend_backward.json --no-weights
  attn-cli attend --input data/examples/attend_variants.json
  echo '{"q":[[1,0],[0,1]],"k":[[1,0],[0,1]],"v":[[1,2],[3,4]],"method":"linear","causal":true}' | attn-cli attend --input -
  echo '{"q":[[1,0]],"k":[[1,0],[0,1]],"v":[[1,2],[3,4]]}' | attn-cli attend --input -
)");
  cmd->callback([opts] { run_attend(*opts); });
}

}  // namespace attn::cli
