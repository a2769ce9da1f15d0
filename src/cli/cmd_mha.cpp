// attn-cli mha: multi-head attention with given weights (tensor I/O contract).
#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/backward.hpp"
#include "attn/engine/attention/mha.hpp"
#include "budget.hpp"
#include "commands.hpp"
#include "common.hpp"

namespace attn::cli {
namespace {

struct MhaCliOptions {
  std::string input;
  std::string output = "-";
  bool no_weights = false;
};

Tensor2 matrix_field(const Json& in, const char* field) {
  const DenseArray a = parse_array(require_field(in, field), field);
  if (a.shape.size() != 2) {
    throw InputError(std::string(field) + ": expected a matrix [rows, cols], got shape " +
                     shape_string(a.shape));
  }
  return to_tensor<2>(a);
}

std::optional<Tensor1> bias_field(const Json& in, const char* field) {
  if (!in.contains(field) || in.at(field).is_null()) return std::nullopt;
  const DenseArray a = parse_array(in.at(field), field);
  if (a.shape.size() != 1) {
    throw InputError(std::string(field) + ": expected a vector [out], got shape " +
                     shape_string(a.shape));
  }
  return to_tensor<1>(a);
}

std::vector<std::int64_t> position_ids_field(const Json& ids, const std::string& field) {
  if (!ids.is_array()) throw InputError(field + ": expected an array of integers, got " + ids.type_name());
  std::vector<std::int64_t> out;
  for (const Json& p : ids) {
    // A position past 2^63 would wrap to a negative int64; 1e12 is far beyond any context.
    out.push_back(static_cast<std::int64_t>(count_field(p, field, 0, 1'000'000'000'000)));
  }
  return out;
}

// "rope": {"base"?: 10000, "style"?: "half" | "interleaved", "position_ids"?: [Lq ints]}.
// Query positions are position_ids (default 0..Lq-1). In self-attention the keys are the
// same tokens, so they share those positions; in cross-attention the keys are a sequence of
// their own and sit at 0..Lk-1.
std::optional<RopeOptions> rope_field(const Json& in, bool self, std::size_t Lk) {
  if (!in.contains("rope") || in.at("rope").is_null()) return std::nullopt;
  const Json& r = in.at("rope");
  if (!r.is_object()) {
    throw InputError("rope: expected an object {\"base\": 10000, \"style\": \"half\" | "
                     "\"interleaved\", \"position_ids\"?: [...]}, got " + r.dump());
  }
  for (const auto& [key, value] : r.items()) {
    if (key != "base" && key != "style" && key != "position_ids") warn("ignoring unknown field \"rope." + key + "\"");
  }
  RopeOptions o;
  if (r.contains("base") && !r.at("base").is_null()) {
    o.base = number_field(r.at("base"), "rope.base", kRopeBaseMin, kRopeBaseMax);
  }
  if (r.contains("style")) {
    if (!r.at("style").is_string()) throw InputError("rope.style: expected a string, got " + r.at("style").dump());
    o.style = parse_rope_style(r.at("style").get<std::string>());
  }
  if (r.contains("position_ids") && !r.at("position_ids").is_null()) {
    o.position_ids = position_ids_field(r.at("position_ids"), "rope.position_ids");
  }
  if (!self) {  // cross-attention: the keys are a sequence of their own, at 0..Lk-1
    o.key_position_ids.resize(Lk);
    std::iota(o.key_position_ids.begin(), o.key_position_ids.end(), 0);
  }
  return o;
}

// "decode_from": P, an integer 0 <= P <= Lq (range checked by mha_decode).
std::optional<std::size_t> decode_from_field(const Json& in, bool self, bool causal) {
  if (!in.contains("decode_from") || in.at("decode_from").is_null()) return std::nullopt;
  const std::size_t prefill = count_field(in.at("decode_from"), "decode_from");
  if (!self) throw InputError("decode_from: KV-cache decoding is self-attention only; remove key and value");
  if (!causal) throw InputError("decode_from: KV-cache decoding is causal; set \"causal\": true");
  return prefill;
}

// "grad_output": dLoss/dy [Lq, D], which asks for the backward pass. Not with decode_from: the
// backward differentiates the one-shot run (which decoding reproduces).
std::optional<Tensor2> grad_output_field(const Json& in, const Tensor2& query, bool decoding) {
  if (!in.contains("grad_output") || in.at("grad_output").is_null()) return std::nullopt;
  if (decoding) throw InputError("grad_output: not supported with decode_from (drop decode_from: the one-shot run has the same gradients)");
  const DenseArray a = parse_array(in.at("grad_output"), "grad_output");
  check_grad_output_shape(a.shape, {query.shape(0), query.shape(1)});
  return to_tensor<2>(a);
}

void run_mha(const MhaCliOptions& opts) {
  const Json in = read_json(opts.input);
  require_object(in);
  warn_unknown_fields(in, {"query", "key", "value", "num_heads", "num_kv_heads", "w_q", "w_k",
                           "w_v", "w_o", "b_q", "b_k", "b_v", "b_o", "mask", "causal", "scale",
                           "temperature", "dropout", "seed", "backend", "block_size", "precision", "rope",
                           "decode_from", "grad_output"});
  const Tensor2 query = matrix_field(in, "query");
  const bool self = !in.contains("key") && !in.contains("value");
  if (!self && !(in.contains("key") && in.contains("value"))) {
    throw InputError(std::string(in.contains("key") ? "value" : "key") +
                     ": required when the other of key/value is given (cross-attention)");
  }
  const Tensor2 key = self ? query : matrix_field(in, "key");
  const Tensor2 value = self ? query : matrix_field(in, "value");

  MhaOptions options;
  const auto heads = optional_positive_int(in, "num_heads");
  if (!heads) throw InputError("num_heads: required field is missing");
  options.num_heads = *heads;
  options.num_kv_heads = optional_positive_int(in, "num_kv_heads").value_or(*heads);
  options.attention = sdpa_options_from(in);
  if (auto p = optional_number(in, "dropout")) options.attention.dropout_p = *p;
  if (in.contains("seed") && !in.at("seed").is_null()) {
    options.attention.dropout_seed = count_field(in.at("seed"), "seed");
  }
  options.backend = backend_from(in);
  options.rope = rope_field(in, self, key.shape(0));
  const std::optional<std::size_t> decode_from = decode_from_field(in, self, options.attention.causal);

  MhaWeights w{matrix_field(in, "w_q"), matrix_field(in, "w_k"), matrix_field(in, "w_v"),
               matrix_field(in, "w_o"), bias_field(in, "b_q"), bias_field(in, "b_k"),
               bias_field(in, "b_v"), bias_field(in, "b_o")};
  std::optional<Mask3> allowed;
  if (in.contains("mask") && !in.at("mask").is_null()) {
    const DenseArray m = parse_array(in.at("mask"), "mask", /*booleans=*/true);
    if (m.shape.size() != 2 && m.shape.size() != 3) {
      throw InputError("mask: expected shape [Lq, Lk] or [H, Lq, Lk], got " + shape_string(m.shape));
    }
    allowed = mask_from(m);
  }
  const Mask3* mask = allowed ? &*allowed : nullptr;
  const std::optional<Tensor2> grad_output = grad_output_field(in, query, decode_from.has_value());
  // decode_from pads and returns every step's weights; otherwise --no-weights skips them.
  options.with_weights = !opts.no_weights || decode_from.has_value();
  require_weights_memory(options.num_heads, query.shape(0), key.shape(0), options.backend, options.with_weights,
                         "--no-weights");
  std::optional<MhaDecodeResult> decoded;
  if (decode_from) decoded = mha_decode(query, w, mask, options, *decode_from);
  const MhaResult r = decoded ? decoded->result : mha(query, key, value, w, mask, options);
  Json out;  // built first: a non-finite value throws before any warning is printed
  out["output"] = to_json(r.output);
  if (!opts.no_weights) out["weights"] = to_json(r.weights);
  out["lse"] = lse_to_json(r.lse);
  if (decoded) out["kv_cache_len"] = decoded->kv_cache_len;
  if (grad_output) {
    const MhaGradients g = self ? mha_self_backward(query, w, mask, *grad_output, options)
                                : mha_backward(query, key, value, w, mask, *grad_output, options);
    out["grad_query"] = to_json(g.grad_query);
    if (!self) {
      out["grad_key"] = to_json(g.grad_key);
      out["grad_value"] = to_json(g.grad_value);
    }
    out["grad_w_q"] = to_json(g.grad_w_q);
    out["grad_w_k"] = to_json(g.grad_w_k);
    out["grad_w_v"] = to_json(g.grad_w_v);
    out["grad_w_o"] = to_json(g.grad_w_o);
    if (g.grad_b_q) out["grad_b_q"] = to_json(*g.grad_b_q);
    if (g.grad_b_k) out["grad_b_k"] = to_json(*g.grad_b_k);
    if (g.grad_b_v) out["grad_b_v"] = to_json(*g.grad_b_v);
    if (g.grad_b_o) out["grad_b_o"] = to_json(*g.grad_b_o);
  }
  warn_fully_masked(r.lse);
  write_file_atomically(opts.output, out.dump() + "\n");
}

}  // namespace

void setup_mha(CLI::App& app) {
  auto opts = std::make_shared<MhaCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "mha", "Multi-head attention with given weights (self, cross, GQA/MQA; JSON in, JSON out)");
  cmd->add_option("-i,--input", opts->input, "JSON file (see below); - reads stdin")->required();
  cmd->add_option("-o,--output", opts->output, "where to write the result JSON (- = stdout)")
      ->capture_default_str();
  cmd->add_flag("--no-weights", opts->no_weights, "leave the [H, Lq, Lk] weights out of the output");
  add_memory_flag(cmd);
  cmd->footer(R"(Input:  {"query": [Lq,D], "key"?: [Lk,D], "value"?: [Lk,D] (absent = self-attention),
         "num_heads": H, "num_kv_heads"?: Hkv (GQA/MQA),
         "w_q": [D,D], "w_k": [Dkv,D], "w_v": [Dkv,D], "w_o": [D,D]  (Dkv = Hkv*D/H; y = x W^T + b),
         "b_q"?, "b_k"?, "b_v"?, "b_o"?: [out], "mask"?, "causal"?, "scale"?, "temperature"?,
         "dropout"?: p (off by default), "seed"?: dropout seed,
         "rope"?: {"base"?: 10000, "style"?: "half" | "interleaved", "position_ids"?: [Lq ints]},
         "decode_from"?: P (causal self-attention only, 0 <= P <= Lq),
         "backend"?: "naive" | "flash" | "cuda", "block_size"?, "precision"?: "float64" | "float32",
         "grad_output"?: [Lq,D] = dLoss/dOutput (runs the backward pass; naive or flash)}
Output: {"output": [Lq,D], "weights": [H,Lq,Lk], "lse": [H,Lq], "kv_cache_len"?: int,
         with grad_output: "grad_query", "grad_w_q", "grad_w_k", "grad_w_v", "grad_w_o",
         "grad_b_q|k|v|o" (for each bias given), "grad_key", "grad_value" (cross-attention)}

RoPE rotates q and k per head after the projection: "half" = rotate_half, pairs (i, i+d/2)
(GPT-NeoX, LLaMA-HF); "interleaved" = pairs (2i, 2i+1) (GPT-J, RoFormer, Meta's llama).
Queries sit at position_ids (default 0..Lq-1); self-attention keys share them, cross-attention
keys sit at 0..Lk-1. decode_from P prefills P tokens into a KV cache, then decodes the rest one
at a time; the result equals the one-shot causal run (decoded weight rows padded with 0).
The backward pass runs in float64, through RoPE (the inverse rotation) and the projections;
in self-attention grad_query is the whole gradient of the input (it is query, key and value).
Not with dropout or decode_from.

Examples:
  attn-cli mha --input data/examples/mha_gqa.json
  attn-cli mha --input data/examples/mha_rope_decode.json
  attn-cli mha --input data/examples/mha_backward.json --no-weights
)");
  cmd->callback([opts] { run_mha(*opts); });
}

}  // namespace attn::cli
