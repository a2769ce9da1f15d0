// The error catalogue (data/hostile/catalogue.json): hostile inputs across every subcommand,
// each answered as docs/contracts.md's error rule says -- exit 2, one line "error: ..." naming the
// problem, control characters escaped, nothing on stdout, and no file left behind.
#include <chrono>
#include <filesystem>
#include <set>
#include <string>

#include <doctest/doctest.h>

#include "support.hpp"

namespace attn::test {
namespace {

// "stdin": text, or a list of pieces, each text or [text, times] (60 000 '[' without a
// 120 KB line in the catalogue).
std::string stdin_text(const Json& c) {
  if (!c.contains("stdin")) return "";
  const Json& s = c.at("stdin");
  if (s.is_string()) return s.get<std::string>();
  std::string out;
  for (const Json& piece : s) {
    if (piece.is_string()) {
      out += piece.get<std::string>();
    } else {
      for (int i = 0; i < piece.at(1).get<int>(); ++i) out += piece.at(0).get<std::string>();
    }
  }
  return out;
}

bool has_control_character(const std::string& line) {
  for (std::size_t i = 0; i < line.size(); ++i) {
    const auto u = static_cast<unsigned char>(line[i]);
    const bool final_newline = i + 1 == line.size() && line[i] == '\n';
    if ((u < 0x20 || u == 0x7f) && !final_newline) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("hostile inputs: every catalogue entry gets exit 2 and one plain error line, and leaves nothing") {
  const Json catalogue = read_json(data_path("hostile/catalogue.json"));
  const Json& cases = catalogue.at("cases");
  REQUIRE(cases.size() >= 60);
  namespace fs = std::filesystem;
  std::set<std::string> subcommands;
  for (const Json& c : cases) {
    const std::string name = c.at("name").get<std::string>(), args = c.at("args").get<std::string>();
    CAPTURE(name);
    subcommands.insert(args.substr(0, args.find(' ')));
    const fs::path cwd = fs::temp_directory_path() / ("attn-hostile-" + std::to_string(::getpid()));
    fs::remove_all(cwd);
    fs::create_directories(cwd);
    const auto start = std::chrono::steady_clock::now();
    const CliResult r = run_cli(args, stdin_text(c), cwd.string(), 60);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    check_input_error(r, c.at("expect").get<std::string>());
    CHECK_FALSE(has_control_character(r.err));
    CHECK(seconds < 20);  // refused up front, not after the work
    // Nothing left in the working folder: no --out folder, no staging sibling, no temporary file.
    std::string left;
    for (const fs::directory_entry& e : fs::directory_iterator(cwd)) left += e.path().filename().string() + " ";
    CHECK_MESSAGE(left.empty(), "left behind: " << left);
    fs::remove_all(cwd);
  }
  // Every subcommand has hostile entries.
  for (const std::string& sub : listed_subcommands()) {
    CHECK_MESSAGE(subcommands.count(sub) == 1, sub << " has no hostile input in the catalogue");
  }
}

}  // namespace attn::test
