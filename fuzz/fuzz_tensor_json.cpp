// Fuzz target: the JSON tensor reader through `attn-cli attend` and `attn-cli mha`, run
// in-process exactly as main.cpp runs them (the input arrives on stdin, the result goes to a
// file). Each input is given to both subcommands. The contract checked (docs/contracts.md):
//   - a refused input is an InputError (exit 2; main.cpp prints it on one line), and no file
//     is written;
//   - nothing else escapes (a RuntimeError, CLI11 or nlohmann's exceptions, bad_alloc);
//   - an accepted input leaves exactly the output file, valid JSON with no null where a number
//     belongs (null is only an lse's "every key masked");
//   - warnings are one clean line each;
//   - and ASan/UBSan see nothing.
// Inputs whose attention would be large are skipped so each run takes milliseconds.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "attn/engine/core/error.hpp"
#include "commands.hpp"
#include "fuzz_support.hpp"

namespace attn::fuzz {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

constexpr std::size_t kMaxScores = std::size_t(1) << 16;  // H * Lq * Lk per run

// Rows of a nested array: the product of every dimension but the last (read along the first
// elements; a ragged array is the reader's to refuse).
std::size_t rows(const Json& v) {
  std::size_t n = 1;
  for (const Json* a = &v; a->is_array() && !a->empty() && (*a)[0].is_array(); a = &(*a)[0])
    n *= a->size();
  return n;
}

std::size_t rows_of(const Json& in, const char* field) {
  return in.contains(field) ? rows(in.at(field)) : 1;
}

bool small_enough(const std::string& text) {
  const Json in = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!in.is_object()) return true;  // refused before any attention runs
  const std::size_t attend = rows_of(in, "q") * rows_of(in, "k");
  const std::size_t lq = rows_of(in, "query");
  const std::size_t lk = in.contains("key") ? rows_of(in, "key") : lq;
  const Json heads = in.value("num_heads", Json(1));
  const std::size_t h = heads.is_number_unsigned() ? heads.get<std::size_t>() : 1;
  return attend <= kMaxScores && h <= kMaxScores && lq * lk <= kMaxScores / std::max<std::size_t>(h, 1);
}

// Swaps a stream's buffer for the length of a scope.
struct StreamSwap {
  std::ios& stream;
  std::streambuf* old;
  StreamSwap(std::ios& s, std::streambuf* with) : stream(s), old(s.rdbuf(with)) {}
  ~StreamSwap() {
    stream.rdbuf(old);
    stream.clear();
  }
};

// A private folder for the output file, removed when the process ends.
struct WorkDir {
  fs::path path;
  WorkDir() {
    std::string tmpl = (fs::temp_directory_path() / "attn-fuzz-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) finding("cannot create a temporary folder");
    path = tmpl;
  }
  ~WorkDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const fs::path& work_dir() {
  static const WorkDir dir;
  return dir.path;
}

void check_no_null_numbers(const Json& v, const std::string& where) {
  if (v.is_null()) finding("null where a number belongs, at " + where);
  if (v.is_structured())
    for (const auto& [key, item] : v.items())
      if (key != "lse") check_no_null_numbers(item, where + "/" + key);
}

void check_output(const fs::path& out, const std::string& command) {
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(work_dir())) ++files;
  check(files == 1 && fs::exists(out), command + ": an accepted run must leave exactly its output file");
  std::ifstream in(out);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const Json result = Json::parse(text, nullptr, false);
  check(!result.is_discarded(), command + ": the output is not valid JSON");
  check(result.contains("output"), command + ": the output has no \"output\"");
  check_no_null_numbers(result, command);
}

void check_warnings(const std::string& err, const std::string& command) {
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    check(line.rfind("warning: ", 0) == 0 && is_one_clean_line(line),
          command + ": stderr holds more than one-line warnings: " + err);
  }
}

void run_command(const std::string& command, const std::string& text) {
  const fs::path out = work_dir() / "out.json";
  fs::remove(out);
  std::istringstream stdin_text(text);
  std::ostringstream stderr_text, stdout_text;
  bool accepted = false;
  {
    StreamSwap in(std::cin, stdin_text.rdbuf()), err(std::cerr, stderr_text.rdbuf()),
        cout(std::cout, stdout_text.rdbuf());
    CLI::App app;
    app.require_subcommand(1);
    attn::cli::setup_attend(app);
    attn::cli::setup_mha(app);
    const std::string out_arg = out.string();
    const char* argv[] = {"attn-cli", command.c_str(), "--input", "-", "--output", out_arg.c_str()};
    try {
      app.parse(6, argv);
      accepted = true;
    } catch (const InputError& e) {
      check(*e.what() != '\0', command + ": an empty error message");
      check(fs::is_empty(work_dir()), command + ": a refused run left a file behind");
    } catch (const RuntimeError& e) {
      finding(command + ": RuntimeError (exit 1) on an input problem: " + e.what());
    } catch (const std::bad_alloc&) {
      finding(command + ": out of memory on a small input");
    } catch (const std::exception& e) {
      finding(command + ": an exception reached main as raw text (exit 1): " + e.what());
    }
  }
  check_warnings(stderr_text.str(), command);
  if (accepted) check_output(out, command);
}

}  // namespace
}  // namespace attn::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (!attn::fuzz::small_enough(text)) return 0;
  attn::fuzz::run_command("attend", text);
  attn::fuzz::run_command("mha", text);
  return 0;
}
