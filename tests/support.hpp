#pragma once
// Shared by the test files: golden data, comparisons, and running the attn-cli binary.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "attn/json_io.hpp"

namespace attn::test {

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

struct CliResult {
  int code;
  std::string out, err;
};

// Runs `attn-cli ARGS` through the shell in `cwd` (default: a scratch folder), with stdin
// from `input` when given.
inline CliResult run_cli(const std::string& args, const std::string& input = "",
                         const std::string& cwd = "") {
  namespace fs = std::filesystem;
  static int counter = 0;
  const fs::path scratch = fs::temp_directory_path() /
                           ("attn-cli-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  fs::create_directories(scratch);
  const std::string in_file = (scratch / "stdin").string();
  std::ofstream(in_file, std::ios::binary) << input;
  const std::string out_file = (scratch / "stdout").string(), err_file = (scratch / "stderr").string();
  const std::string dir = cwd.empty() ? scratch.string() : cwd;
  const std::string cmd = "cd '" + dir + "' && '" + ATTN_CLI + "' " + args + " <'" + in_file +
                          "' >'" + out_file + "' 2>'" + err_file + "'";
  const int status = std::system(cmd.c_str());
  CliResult r{WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), read_text(out_file),
              read_text(err_file)};
  fs::remove_all(scratch);
  return r;
}

// Number of lines in text (a trailing newline does not start a new line).
inline std::size_t line_count(const std::string& text) {
  std::size_t n = 0;
  for (char c : text) n += c == '\n';
  return n + (!text.empty() && text.back() != '\n');
}

// A usage or input error as the project promises it: exit 2, nothing on stdout, one
// "error: ..." line on stderr that mentions `expected`.
inline void check_input_error(const CliResult& r, const std::string& expected) {
  CAPTURE(r.err);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.rfind("error: ", 0) == 0);
  CHECK(r.err.find(expected) != std::string::npos);
}

}  // namespace attn::test
