// attn-cli mha: multi-head attention with given weights (tensor I/O contract).
#include <memory>

#include "attn/error.hpp"
#include "attn/mha.hpp"
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

void run_mha(const MhaCliOptions& opts) {
  const Json in = read_json(opts.input);
  require_object(in);
  warn_unknown_fields(in, {"query", "key", "value", "num_heads", "num_kv_heads", "w_q", "w_k",
                           "w_v", "w_o", "b_q", "b_k", "b_v", "b_o", "mask", "causal", "scale",
                           "temperature", "dropout", "seed", "backend", "block_size", "rope",
                           "decode_from"});
  if (in.contains("rope") && !in.at("rope").is_null()) {
    throw InputError("rope: RoPE is not implemented in this version of attn-cli; remove the field");
  }
  if (in.contains("decode_from") && !in.at("decode_from").is_null()) {
    throw InputError("decode_from: KV-cache decoding is not implemented in this version of "
                     "attn-cli; remove the field");
  }
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
  if (auto s = optional_number(in, "seed")) options.attention.dropout_seed = static_cast<std::uint64_t>(*s);
  backend_from(in, /*flash_supported=*/false);

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
  const MhaResult r = mha(query, key, value, w, allowed ? &*allowed : nullptr, options);
  warn_fully_masked(r.lse);

  Json out;
  out["output"] = to_json(r.output);
  if (!opts.no_weights) out["weights"] = to_json(r.weights);
  out["lse"] = lse_to_json(r.lse);
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
  cmd->footer(R"(Input:  {"query": [Lq,D], "key"?: [Lk,D], "value"?: [Lk,D] (absent = self-attention),
         "num_heads": H, "num_kv_heads"?: Hkv (GQA/MQA),
         "w_q": [D,D], "w_k": [Dkv,D], "w_v": [Dkv,D], "w_o": [D,D]  (Dkv = Hkv*D/H; y = x W^T + b),
         "b_q"?, "b_k"?, "b_v"?, "b_o"?: [out], "mask"?, "causal"?, "scale"?, "temperature"?,
         "dropout"?: p (off by default), "seed"?: dropout seed}
Output: {"output": [Lq,D], "weights": [H,Lq,Lk], "lse": [H,Lq]}

Examples:
  attn-cli mha --input data/examples/mha_gqa.json
)");
  cmd->callback([opts] { run_mha(*opts); });
}

}  // namespace attn::cli
