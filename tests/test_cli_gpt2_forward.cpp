// `attn-cli forward --model DIR` on a GPT-2 folder end to end: the committed tiny fixture
// (scripts/make_gpt2_folder.py), its JSON against the tokenizer and the contract's shapes, the
// top-5 table, and folders that are wrong (exit 2, one line naming the tensor or field).
// scripts/check_gpt2_forward.py checks the numbers against a float64 reference (CTest).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "attn/io/json_io.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;
namespace fs = std::filesystem;

namespace {

// A copy of data/gpt2_tiny (2 layers x 2 heads, n_embd 16, n_positions 32, vocab 275) to break.
std::string tiny_copy(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("attn-cli-gpt2-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::copy(data_path("gpt2_tiny"), dir, fs::copy_options::recursive);
  return dir.string();
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::size_t header_bytes(const std::string& safetensors) {
  std::uint64_t n;
  std::memcpy(&n, safetensors.data(), 8);
  return std::size_t(n);
}

// Rewrites model.safetensors with its JSON header changed by `edit` (the data stays).
template <class Edit>
void edit_header(const std::string& dir, Edit edit) {
  const std::string bytes = read_text(dir + "/model.safetensors");
  std::uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  Json header = Json::parse(bytes.substr(8, n));
  edit(header);
  const std::string text = header.dump();
  const std::uint64_t m = text.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &m, 8);
  write_text(dir + "/model.safetensors", out + text + bytes.substr(8 + n));
}

}  // namespace

TEST_CASE("cli forward gpt2: JSON as the contract says, with GPT-2's own tokens") {
  const std::string text = "the cat sat";
  const CliResult r = run_cli("forward --model '" + data_path("gpt2_tiny") + "' '" + text + "' --json");
  REQUIRE(r.code == 0);
  const Json j = Json::parse(r.out);
  const Json ids = Json::parse(run_cli("tokenize --model '" + data_path("gpt2_tiny") + "' '" + text + "' --json").out);
  REQUIRE(j["tokens"] == ids["tokens"]);
  const std::size_t n = j["tokens"].size();
  REQUIRE(n >= 3);  // at least one token per word
  REQUIRE(j["attention"].size() == 2);
  REQUIRE(j["attention"][1].size() == 2);
  REQUIRE(j["attention"][1][0].size() == n);
  for (const Json& row : j["attention"][1][1]) {  // each row a causal distribution
    double sum = 0;
    for (const Json& w : row) sum += w.get<double>();
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
  }
  CHECK(j["attention"][0][0][0][1] == 0.0);  // the first token sees only itself
  REQUIRE(j["logits"].size() == n);
  CHECK(j["logits"][0].size() == 275);
}

TEST_CASE("cli forward gpt2: the terminal shows the top 5 next tokens, most likely first") {
  const CliResult r = run_cli("forward --model '" + data_path("gpt2_tiny") + "' --tokens 72,101,108");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("2 layers x 2 heads") != std::string::npos);
  CHECK(r.out.find("Most likely next tokens") != std::string::npos);
  // The same ids as --json: the table's first id is the argmax of the last row of logits.
  const std::string json = run_cli("forward --model '" + data_path("gpt2_tiny") + "' --tokens 72,101,108 --json").out;
  const Json j = Json::parse(json);
  const Json& last = j["logits"][2];
  std::size_t best = 0;
  for (std::size_t v = 0; v < last.size(); ++v) best = last[v] > last[best] ? v : best;
  CAPTURE(r.out);
  const std::size_t at = r.out.find("\n1 ");
  REQUIRE(at != std::string::npos);
  const std::string first_row = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  CHECK(first_row.find(" " + std::to_string(best) + " ") != std::string::npos);
  CHECK(r.out.find(". 3 tokens:") != std::string::npos);
  const CliResult one = run_cli("forward --model '" + data_path("gpt2_tiny") + "' --tokens 72");
  REQUIRE(one.code == 0);
  CHECK(one.out.find(". 1 token:") != std::string::npos);  // not "1 tokens"
}

TEST_CASE("cli gpt2: a token holding part of a character is shown by its bytes, its JSON text stays U+FFFD") {
  // data/gpt2_tiny has no merges for the emoji: one token per byte, F0 9F 98 80.
  const std::string model = "--model '" + data_path("gpt2_tiny") + "' ";
  const CliResult r = run_cli("forward " + model + "'the \xF0\x9F\x98\x80 cat'");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("[\\xf0] [\\x9f] [\\x98] [\\x80]") != std::string::npos);
  CHECK(r.out.find("\xEF\xBF\xBD") == std::string::npos);
  const CliResult t = run_cli("tokenize " + model + "'\xF0\x9F\x98\x80'");
  REQUIRE(t.code == 0);
  for (const char* b : {"\\xf0", "\\x9f", "\\x98", "\\x80"}) CHECK(t.out.find(b) != std::string::npos);
  const Json j = Json::parse(run_cli("tokenize " + model + "'\xF0\x9F\x98\x80' --json").out);
  REQUIRE(j["tokens"].size() == 4);
  for (const Json& tok : j["tokens"]) CHECK(tok["text"] == "\xEF\xBF\xBD");  // as decode([id]) gives it
}

TEST_CASE("cli forward gpt2: weights alone run with --tokens, and pytorch_model.bin gets how to convert it") {
  const std::string dir = tiny_copy("weights-only");
  fs::remove(dir + "/vocab.json");
  fs::remove(dir + "/merges.txt");
  const CliResult r = run_cli("forward --model '" + dir + "' --tokens 1,2,3");
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("[<id 1>] [<id 2>] [<id 3>]") != std::string::npos);  // the tokens, as ids
  const CliResult j = run_cli("forward --model '" + dir + "' --tokens 1,2,3 --json");
  CHECK(j.code == 0);
  CHECK(Json::parse(j.out)["tokens"].size() == 3);
  check_input_error(run_cli("forward --model '" + dir + "' \"hi\""), "vocab.json");  // text needs the tokenizer
  // A folder as older Hugging Face versions saved it: the pickle, which attn-cli never loads.
  fs::rename(dir + "/model.safetensors", dir + "/pytorch_model.bin");
  const CliResult p = run_cli("forward --model '" + dir + "' --tokens 1,2");
  check_input_error(p, "pytorch_model.bin");
  CHECK(p.err.find("save_pretrained") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("cli forward gpt2: folders that are wrong get one error line naming what") {
  const std::string dir = tiny_copy("errors");
  const std::string model = " --model '" + dir + "' --tokens 1,2";
  const std::string config = read_text(dir + "/config.json"), weights = read_text(dir + "/model.safetensors");

  edit_header(dir, [](Json& h) { h["h.1.mlp.c_fc.bias_x"] = h["h.1.mlp.c_fc.bias"]; h.erase("h.1.mlp.c_fc.bias"); });
  check_input_error(run_cli("forward" + model), "missing tensor \"h.1.mlp.c_fc.bias\"");
  write_text(dir + "/model.safetensors", weights);
  edit_header(dir, [](Json& h) { h["h.0.attn.c_attn.weight"]["shape"] = {48, 16}; });
  check_input_error(run_cli("forward" + model), "\"h.0.attn.c_attn.weight\": expected shape [16, 48], got [48, 16]");
  write_text(dir + "/model.safetensors", weights);
  edit_header(dir, [](Json& h) { h["transformer.wte.weight"] = h["wte.weight"]; });  // two names, one byte range
  check_input_error(run_cli("forward" + model), "model.safetensors");
  write_text(dir + "/model.safetensors", weights);
  edit_header(dir, [](Json& h) { h["lm_head.weight"] = h["wpe.weight"]; h.erase("wpe.weight"); });
  check_input_error(run_cli("forward" + model), "missing tensor \"wpe.weight\"");
  write_text(dir + "/model.safetensors", weights);
  edit_header(dir, [](Json& h) { h["wte"] = h["wte.weight"]; h.erase("wte.weight"); });
  CHECK(run_cli("forward" + model).code == 0);  // the short name some exports use
  // A NaN in a weight left in the file until a pass reaches it (a block, a row of wte) is still
  // refused by the tensor's name, before anything is printed.
  for (const char* name : {"h.1.mlp.c_proj.weight", "wte.weight"}) {
    const Json header = Json::parse(weights.substr(8, header_bytes(weights)));
    const std::size_t at = 8 + header_bytes(weights) + header[name]["data_offsets"][0].get<std::size_t>() + 4 * 17;
    std::string poisoned = weights;
    const float nan = std::nanf("");
    std::memcpy(poisoned.data() + at, &nan, 4);
    write_text(dir + "/model.safetensors", poisoned);
    const CliResult r = run_cli("forward" + model);
    check_input_error(r, std::string("tensor \"") + name + "\" holds a non-finite value");
    CHECK(r.out.empty());
  }
  write_text(dir + "/model.safetensors", weights.substr(0, weights.size() - 5));
  check_input_error(run_cli("forward" + model), "model.safetensors");
  write_text(dir + "/model.safetensors", weights);

  Json c = Json::parse(config);
  c["n_head"] = 5;
  write_text(dir + "/config.json", c.dump());
  check_input_error(run_cli("forward" + model), "n_embd");
  c = Json::parse(config);
  c.erase("layer_norm_epsilon");
  write_text(dir + "/config.json", c.dump());
  check_input_error(run_cli("forward" + model), "layer_norm_epsilon");
  write_text(dir + "/config.json", config);

  std::string many = "0";
  for (int i = 1; i < 33; ++i) many += ",1";
  check_input_error(run_cli("forward --model '" + dir + "' --tokens " + many), "n_positions of 32");
  check_input_error(run_cli("forward --model '" + dir + "' --tokens 1,275"), "out of range");
  check_input_error(run_cli("forward" + model + " --out pics --layer 2"), "--layer: expected 0..1");  // 2 layers
  CHECK(run_cli("forward" + model).code == 0);  // the restored folder runs
  fs::remove_all(dir);
}
