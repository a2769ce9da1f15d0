// Hugging Face Llama, Mistral and Qwen2 config.json files (io/hf_config.hpp), written here with
// the fields those models publish, and what complexity --model computes from them by hand.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "attn/engine/core/error.hpp"
#include "attn/io/hf_config.hpp"
#include "support.hpp"

using namespace attn;

namespace {

// Llama 3.1 8B's published config.json (the fields that matter here).
const char* kLlama31 = R"({"architectures": ["LlamaForCausalLM"], "attention_bias": false, "hidden_act": "silu",
  "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 131072, "mlp_bias": false,
  "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
  "original_max_position_embeddings": 8192, "rope_type": "llama3"}, "rope_theta": 500000.0,
  "tie_word_embeddings": false, "vocab_size": 128256})";

std::string folder(const test::TempDir& dir, const std::string& name, const std::string& config) {
  const std::filesystem::path p = dir.path / name;
  std::filesystem::create_directories(p);
  std::ofstream(p / "config.json") << config;
  return p.string();
}

}  // namespace

TEST_CASE("hf config: Llama 3.1, Mistral and Qwen2 read with Hugging Face's defaults") {
  test::TempDir dir;
  const DecoderConfig llama = read_decoder_config(folder(dir, "llama", kLlama31));
  CHECK(llama.family == DecoderFamily::llama);
  CHECK(llama.heads == 32);
  CHECK(llama.kv_heads == 8);
  CHECK(llama.head_dim == 128);  // 4096 / 32
  CHECK(llama.rope_theta == 500000.0);
  CHECK(llama.rope_scaling.type == "llama3");
  CHECK(llama.rope_scaling.original_max_positions == 8192);
  CHECK(llama.sliding_window == 0);
  CHECK_FALSE(llama.qkv_bias);
  CHECK(is_decoder_folder((dir.path / "llama").string()));

  const DecoderConfig mistral = read_decoder_config(folder(dir, "mistral", R"({"model_type": "mistral", "hidden_size": 4096,
    "intermediate_size": 14336, "max_position_embeddings": 32768, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "sliding_window": 4096, "vocab_size": 32000})"));
  CHECK(mistral.sliding_window == 4096);
  CHECK(mistral.rope_theta == 10000.0);  // the default when absent
  CHECK(mistral.rms_eps == 1e-6);

  // Qwen2 carries a sliding_window it uses only with use_sliding_window; its q, k, v have biases.
  const DecoderConfig qwen = read_decoder_config(folder(dir, "qwen", R"({"model_type": "qwen2", "hidden_size": 896,
    "intermediate_size": 4864, "max_position_embeddings": 32768, "num_attention_heads": 14, "num_hidden_layers": 24,
    "num_key_value_heads": 2, "sliding_window": 32768, "use_sliding_window": false, "tie_word_embeddings": true,
    "vocab_size": 151936})"));
  CHECK(qwen.sliding_window == 0);
  CHECK(qwen.qkv_bias);
  CHECK(qwen.tie_embeddings);
  CHECK(qwen.head_dim == 64);  // 896 / 14
  CHECK(qwen.kv_heads == 2);
}

TEST_CASE("hf config: what attn-cli would compute wrongly is refused, naming the file and the field") {
  test::TempDir dir;
  // Each refusal also through the command line: exit 2 and one error line (the hostile rule).
  auto refused = [&](const std::string& name, const std::string& config, const std::string& says) {
    CAPTURE(name);
    const std::string d = folder(dir, name, config);
    CHECK_THROWS_WITH_AS(read_decoder_config(d), doctest::Contains(says.c_str()), InputError);
    CHECK_THROWS_WITH_AS(read_decoder_config(d), doctest::Contains("config.json"), InputError);
    test::check_input_error(test::run_cli("complexity --model " + name, "", dir.path.string()), says);
  };
  std::string llama = kLlama31;
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = llama;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  refused("bert", with("\"model_type\": \"llama\"", "\"model_type\": \"bert\""), "\"bert\"");
  refused("gelu", with("\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\""), "hidden_act");
  refused("mlp_bias", with("\"mlp_bias\": false", "\"mlp_bias\": true"), "mlp_bias");
  refused("yarn", with("\"rope_type\": \"llama3\"", "\"rope_type\": \"yarn\""), "\"yarn\" is not supported");
  refused("kv5", with("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 5"), "does not divide");
  refused("no_hidden", with("\"hidden_size\": 4096,", ""), "\"hidden_size\" is missing");
  refused("negative", with("\"num_hidden_layers\": 32", "\"num_hidden_layers\": -32"), "\"num_hidden_layers\": expected a whole number >= 1");
  refused("array", "[1, 2]", "expected a JSON object");
  CHECK_THROWS_AS(read_decoder_config((dir.path / "nowhere").string()), InputError);
  CHECK_FALSE(is_decoder_folder((dir.path / "bert").string()));
  CHECK_FALSE(is_decoder_folder((dir.path / "nowhere").string()));
}

TEST_CASE("cli: complexity --model FOLDER gives its KV cache beside MHA and MQA, computed by hand") {
  test::TempDir dir;
  folder(dir, "Llama-3.1-8B", kLlama31);
  const test::CliResult r =
      test::run_cli("complexity --model Llama-3.1-8B --tokens 8192 --dtype-bytes 2 --format json", "", dir.path.string());
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  const Json j = Json::parse(r.out);
  // 2 x 32 layers x kv_heads x 128 x 8192 tokens x 2 bytes: 8 heads 1 GiB, 32 (MHA) 4 GiB, 1 (MQA) 128 MiB.
  std::map<std::string, std::uint64_t> bytes;
  for (const Json& row : j.at("kv_cache")) bytes[row.at("model").get<std::string>()] = row.at("bytes").get<std::uint64_t>();
  CHECK(bytes.size() == 3);  // the folder alone: no preset listed
  CHECK(bytes["Llama-3.1-8B"] == 2ull * 32 * 8 * 128 * 8192 * 2);
  CHECK(bytes["Llama-3.1-8B as MHA"] == 4 * bytes["Llama-3.1-8B"]);
  CHECK(bytes["Llama-3.1-8B as MQA"] == bytes["Llama-3.1-8B"] / 8);
  const test::CliResult bert =
      test::run_cli("complexity --model b", "", (folder(dir, "b", R"({"model_type": "bert"})"), dir.path.string()));
  CHECK(bert.code == 2);
  CHECK(bert.err.find("model_type") != std::string::npos);
}
