// OutputFolder: a folder of results appears whole or not at all, and concurrent runs into one
// folder never leave a mixture of their files.
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "attn/engine/core/error.hpp"
#include "attn/io/file_io.hpp"
#include "attn/io/output_folder.hpp"
#include "support.hpp"

namespace attn::test {
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("output folder: nothing appears until commit, and a run that fails leaves nothing") {
  const fs::path root = fresh_dir("attn-folder-test");
  const std::string out = (root / "a" / "b" / "out").string();
  {
    OutputFolder folder(out, "--out");
    write_file_atomically((fs::path(folder.staging()) / "x.txt").string(), "x");
    CHECK_FALSE(fs::exists(out));
    CHECK(folder.final_path("x.txt") == (fs::path(out) / "x.txt").string());
  }  // no commit: as if the run threw
  CHECK(names_in(root).empty());  // the parents it made are gone too
  {
    OutputFolder folder(out, "--out");
    write_file_atomically((fs::path(folder.staging()) / "x.txt").string(), "x");
    folder.commit();
  }
  CHECK(read_text((fs::path(out) / "x.txt").string()) == "x");
  CHECK(names_in(fs::path(out).parent_path()) == std::vector<std::string>{"out"});  // no staging left
  // Into an existing folder: this run's files replace theirs, other files stay.
  write_file_atomically((fs::path(out) / "mine.txt").string(), "keep");
  {
    OutputFolder folder(out, "--out");
    write_file_atomically((fs::path(folder.staging()) / "x.txt").string(), "y");
    folder.commit();
  }
  CHECK(names_in(out) == std::vector<std::string>{"mine.txt", "x.txt"});
  CHECK(read_text((fs::path(out) / "x.txt").string()) == "y");
  write_file_atomically((root / "file").string(), "");
  CHECK_THROWS_WITH_AS(OutputFolder((root / "file").string(), "--plots"),
                       doctest::Contains("--plots: cannot create folder"), InputError);
  fs::remove_all(root);
}

TEST_CASE("output folder: a staged subfolder replaces the one already there whole, other files stay") {
  const fs::path root = fresh_dir("attn-folder-sub");
  const fs::path out = root / "run";
  fs::create_directories(out / "model");
  write_file_atomically((out / "model" / "old.bin").string(), "old");
  write_file_atomically((out / "notes.txt").string(), "mine");
  {
    OutputFolder folder(out.string(), "--out");
    fs::create_directories(fs::path(folder.staging()) / "model");
    write_file_atomically((fs::path(folder.staging()) / "model" / "new.bin").string(), "new");
    write_file_atomically((fs::path(folder.staging()) / "train.json").string(), "{}");
    CHECK(names_in(out / "model") == std::vector<std::string>{"old.bin"});
    folder.commit();
  }
  CHECK(names_in(out / "model") == std::vector<std::string>{"new.bin"});
  CHECK(names_in(out) == std::vector<std::string>{"model", "notes.txt", "train.json"});
  CHECK(names_in(root) == std::vector<std::string>{"run"});  // no staging or replaced folder left
  fs::remove_all(root);
}

TEST_CASE("cli: concurrent demos into one --out leave the files of one run, and a refused one leaves none") {
  const fs::path cwd = fresh_dir("attn-folder-cli-test");
  const std::vector<std::string> sentences{"The cat sat", "A dog ran far", "Birds fly south today", "Fish swim"};
  std::vector<std::future<CliResult>> runs;
  for (const std::string& s : sentences) {
    runs.push_back(std::async(std::launch::async, [&cwd, s] {
      return run_cli("demo '" + s + "' --out shared --d-model 8 --heads 2", "", cwd.string());
    }));
  }
  for (auto& r : runs) CHECK(r.get().code == 0);
  CHECK(names_in(cwd) == std::vector<std::string>{"shared"});
  // The manifest names the sentence and the number of tokens; the pictures' file sizes depend on
  // the sentence. Every picture in the folder must be the one its manifest's run wrote, so rerun
  // that sentence into a fresh folder and compare byte for byte.
  const Json manifest = read_json((cwd / "shared" / "manifest.json").string());
  const std::string sentence = manifest.at("sentence").get<std::string>();
  CHECK(run_cli("demo '" + sentence + "' --out alone --d-model 8 --heads 2", "", cwd.string()).code == 0);
  CHECK(names_in(cwd / "shared") == names_in(cwd / "alone"));
  for (const std::string& name : names_in(cwd / "alone")) {
    CAPTURE(name);
    CHECK(read_text((cwd / "shared" / name).string()) == read_text((cwd / "alone" / name).string()));
  }
  check_input_error(run_cli("demo 'a b c' --max-tokens 2 --out refused", "", cwd.string()), "--max-tokens");
  CHECK_FALSE(fs::exists(cwd / "refused"));
  fs::remove_all(cwd);
}

}  // namespace attn::test
