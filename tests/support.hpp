#pragma once
// Shared by the test files: golden data, comparisons, and running the attn-cli binary.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <doctest/doctest.h>

#include "attn/io/json_io.hpp"
#include "attn/engine/attention/mha.hpp"
#include "attn/engine/core/random.hpp"

namespace attn::test {

// A fresh folder for one test's files, removed afterwards.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static int n = 0;
    path = std::filesystem::temp_directory_path() /
           ("attn-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

inline std::string data_path(const std::string& relative) {
  return std::string(ATTN_DATA_DIR) + "/" + relative;
}

inline Json load_golden(const std::string& name) { return read_json(data_path("golden/" + name + ".json")); }

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Flattens a nested JSON array of numbers (null -> -inf, the contract's fully masked lse).
inline void flatten_json(const Json& j, std::vector<double>& out) {
  if (j.is_array()) {
    for (const Json& x : j) flatten_json(x, out);
  } else if (j.is_null()) {
    out.push_back(-INFINITY);
  } else {
    out.push_back(j.get<double>());
  }
}

inline std::vector<double> flat(const Json& j) {
  std::vector<double> v;
  flatten_json(j, v);
  return v;
}

// The same shape and the same bytes (== would call -0 and +0 equal, and NaN unequal to itself).
template <class A>
bool same_bytes(const A& x, const A& y) {
  return x.shape() == y.shape() && std::memcmp(x.data(), y.data(), x.size() * sizeof(*x.data())) == 0;
}

// [a, b, c] of seeded normal samples with standard deviation sd.
inline Tensor3 randn(Rng& rng, std::size_t a, std::size_t b, std::size_t c, double sd = 1.0) {
  Tensor3 t = Tensor3::from_shape({a, b, c});
  for (float& x : t) x = float(rng.normal() * sd);
  return t;
}

template <class Tensor>
std::vector<double> flat_tensor(const Tensor& t) {
  return std::vector<double>(t.begin(), t.end());
}

// Largest |a - b|; -inf on both sides counts as equal, on one side as infinitely far.
inline double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isinf(a[i]) || std::isinf(b[i])) {
      if (a[i] != b[i]) return INFINITY;
      continue;
    }
    m = std::max(m, std::fabs(a[i] - b[i]));
  }
  return m;
}

// Golden mha inputs (docs/contracts.md's field names) as library values.
inline Tensor2 json_matrix(const Json& j) { return to_tensor<2>(parse_array(j, "matrix")); }

inline std::optional<Tensor1> json_bias(const Json& in, const char* field) {
  if (!in.contains(field)) return std::nullopt;
  return to_tensor<1>(parse_array(in[field], field));
}

inline MhaWeights json_mha_weights(const Json& in) {
  return {json_matrix(in["w_q"]), json_matrix(in["w_k"]), json_matrix(in["w_v"]), json_matrix(in["w_o"]),
          json_bias(in, "b_q"),   json_bias(in, "b_k"),   json_bias(in, "b_v"),   json_bias(in, "b_o")};
}

// A golden mha case (scripts/make_golden.py) through the library, its contract fields read
// here independently of src/cli: rope (cross-attention keys at 0..Lk-1), mask, causal and
// decode_from (through mha_decode, which must reproduce the one-shot reference).
inline void check_mha_golden(const std::string& name) {
  const Json g = load_golden(name);
  const Json& in = g["input"];
  const Tensor2 query = json_matrix(in["query"]);
  const Tensor2 key = in.contains("key") ? json_matrix(in["key"]) : query;
  const Tensor2 value = in.contains("value") ? json_matrix(in["value"]) : query;
  MhaOptions o;
  o.num_heads = in["num_heads"];
  o.num_kv_heads = in["num_kv_heads"];
  o.attention.causal = in.value("causal", false);
  if (in.contains("rope")) {
    const Json& r = in["rope"];
    o.rope = RopeOptions{r.value("base", 10000.0), parse_rope_style(r.value("style", std::string("half"))), {}, {}};
    if (r.contains("position_ids")) o.rope->position_ids = r["position_ids"].get<std::vector<std::int64_t>>();
    if (in.contains("key"))
      for (std::size_t j = 0; j < key.shape(0); ++j) o.rope->key_position_ids.push_back(static_cast<std::int64_t>(j));
  }
  std::optional<Mask3> mask;
  if (in.contains("mask")) {
    const DenseArray m = parse_array(in["mask"], "mask", true);
    Mask3 m3 = Mask3::from_shape({1, m.shape[0], m.shape[1]});
    std::transform(m.data.begin(), m.data.end(), m3.begin(), [](float x) { return x != 0; });
    mask = m3;
  }
  const MhaWeights w = json_mha_weights(in);
  const Mask3* allowed = mask ? &*mask : nullptr;
  MhaResult r;
  if (in.contains("decode_from")) {
    const MhaDecodeResult d = mha_decode(query, w, allowed, o, in["decode_from"].get<std::size_t>());
    CHECK(d.kv_cache_len == g["expected"]["kv_cache_len"].get<std::size_t>());
    r = d.result;
  } else {
    r = mha(query, key, value, w, allowed, o);
  }
  // float64 inside: the only error left is rounding each result to float32.
  CHECK(max_abs_diff(flat_tensor(r.output), flat(g["expected"]["output"])) < 1e-6);
  CHECK(max_abs_diff(flat_tensor(r.weights), flat(g["expected"]["weights"])) < 1e-6);
  CHECK(max_abs_diff(flat_tensor(r.lse), flat(g["expected"]["lse"])) < 1e-5);
}

// A scratch folder for one test, removed with it, with data/ linked in, so examples written as in
// README.md and docs/ run unchanged. s / "name" is the path of a file in it.
struct Scratch {
  std::filesystem::path dir;
  Scratch() {
    static int n = 0;
    dir = std::filesystem::temp_directory_path() /
          ("attn-scratch-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::filesystem::create_directory_symlink(ATTN_DATA_DIR, dir / "data");
  }
  ~Scratch() { std::filesystem::remove_all(dir); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  std::string operator/(const std::string& name) const { return (dir / name).string(); }
};

struct CliResult {
  int code;
  std::string out, err;
};

// Runs `attn-cli ARGS` through the shell in `cwd` (default: a scratch folder), with stdin
// from `input` when given; killed after `timeout_s` seconds when that is not 0 (exit 124).
inline CliResult run_cli(const std::string& args, const std::string& input = "",
                         const std::string& cwd = "", int timeout_s = 0) {
  namespace fs = std::filesystem;
  static int counter = 0;
  const fs::path scratch = fs::temp_directory_path() /
                           ("attn-cli-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  fs::create_directories(scratch);
  const std::string in_file = (scratch / "stdin").string();
  std::ofstream(in_file, std::ios::binary) << input;
  const std::string out_file = (scratch / "stdout").string(), err_file = (scratch / "stderr").string();
  const std::string dir = cwd.empty() ? scratch.string() : cwd;
  const std::string limit = timeout_s ? "timeout -k 5 " + std::to_string(timeout_s) + " " : "";
  const std::string cmd = "cd '" + dir + "' && " + limit + "'" + ATTN_CLI + "' " + args + " <'" + in_file +
                          "' >'" + out_file + "' 2>'" + err_file + "'";
  const int status = std::system(cmd.c_str());
  CliResult r{WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), read_text(out_file),
              read_text(err_file)};
  fs::remove_all(scratch);
  return r;
}

// The subcommands attn-cli --help lists (its "Subcommands:" section), so a new one is tested
// without an edit here.
inline std::vector<std::string> listed_subcommands() {
  std::istringstream in(run_cli("--help").out);
  std::vector<std::string> names;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Subcommands:", 0) == 0) inside = true;
    else if (inside && line.rfind("  ", 0) == 0) names.push_back(line.substr(2, line.find(' ', 2) - 2));
    else if (inside) break;
  }
  return names;
}

// Number of lines in text (a trailing newline does not start a new line).
inline std::size_t line_count(const std::string& text) {
  std::size_t n = 0;
  for (char c : text) n += c == '\n';
  return n + (!text.empty() && text.back() != '\n');
}

// A bad-input run: exit 2, nothing on stdout, one "error: ..." line containing `expected`.
inline void check_input_error(const CliResult& r, const std::string& expected) {
  CAPTURE(r.err);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.rfind("error: ", 0) == 0);
  CHECK(r.err.find(expected) != std::string::npos);
}

}  // namespace attn::test
