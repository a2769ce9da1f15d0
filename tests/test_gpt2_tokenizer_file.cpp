// GPT-2's tokenizer read from a folder (io/gpt2_tokenizer_file.hpp) and `tokenize --model`,
// on data/gpt2_tokenizer/tiny (scripts/make_tiny_gpt2_tokenizer.py), whose merges are few
// enough to apply by hand. GPT-2's real vocabulary: scripts/check_gpt2_tokenizer.py.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "attn/engine/core/error.hpp"
#include "attn/io/gpt2_tokenizer_file.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;

namespace {

namespace fs = std::filesystem;

const std::string kTiny = data_path("gpt2_tokenizer/tiny");

// Ids of the tiny vocabulary's symbols, read from vocab.json here, not through the tokenizer.
std::vector<TokenId> tiny_ids(std::initializer_list<const char*> symbols) {
  const Json vocab = read_json(kTiny + "/vocab.json");
  std::vector<TokenId> ids;
  for (const char* s : symbols) ids.push_back(vocab.at(s).get<TokenId>());
  return ids;
}

// A copy of the tiny folder in which one file is replaced (or removed, with text nullptr).
struct BrokenFolder {
  fs::path dir;
  BrokenFolder(const std::string& file, const char* text) {
    static int n = 0;
    dir = fs::temp_directory_path() / ("attn-gpt2-tok-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (const char* name : {"vocab.json", "merges.txt"}) fs::copy_file(kTiny + "/" + name, dir / name);
    fs::remove(dir / file);
    if (text) std::ofstream(dir / file, std::ios::binary) << text;
  }
  ~BrokenFolder() { fs::remove_all(dir); }
  std::string path() const { return dir.string(); }
};

void check_refused(const std::string& file, const char* text, const std::string& expected) {
  const BrokenFolder f(file, text);
  CAPTURE(file);
  CHECK_THROWS_WITH_AS(read_gpt2_tokenizer(f.path()), doctest::Contains((f.path() + "/" + file).c_str()), InputError);
  CHECK_THROWS_WITH_AS(read_gpt2_tokenizer(f.path()), doctest::Contains(expected.c_str()), InputError);
}

}  // namespace

TEST_CASE("gpt2 tokenizer file: the tiny folder, merged by hand") {
  const Gpt2Tokenizer t = read_gpt2_tokenizer(kTiny);
  CHECK(t.vocab_size() == 275);
  // the -> t + he (rank 1) -> the (rank 3); " the" -> Ġt (rank 0) + he -> Ġthe (rank 2);
  // " cat" -> at (rank 4), Ġc (rank 5), Ġcat (rank 6); " mat" -> at, Ġm (11), Ġmat (16).
  CHECK(t.encode("the cat sat on the mat") == tiny_ids({"the", "Ġcat", "Ġsat", "Ġon", "Ġthe", "Ġmat"}));
  // " don" -> on (rank 12) before Ġd (rank 13), then Ġdon; "'t" is its own pre-token.
  CHECK(t.encode(" don't") == tiny_ids({"Ġdon", "'t"}));
  // "t h" is the last merge: merging from the left would stop at th + e.
  CHECK(t.encode("the") == tiny_ids({"the"}));
  CHECK(t.encode("th") == tiny_ids({"th"}));
  CHECK(t.encode("<|endoftext|>").size() > 1);  // plain text here, not the special token
}

TEST_CASE("gpt2 tokenizer file: every problem names the file") {
  check_refused("merges.txt", nullptr, "missing");
  check_refused("vocab.json", "{\"a\": 0,", "malformed JSON");
  check_refused("vocab.json", "[1, 2]", "expected a JSON object");
  check_refused("vocab.json", "{\"a\": 0, \"b\": 0}", "id 0 is given to both");
  check_refused("vocab.json", "{\"a\": 0, \"b\": 7}", "expected an integer in 0..1");
  check_refused("vocab.json", "{\"a\": 0, \"b\": \"1\"}", "expected an integer");
  check_refused("merges.txt", "#version: 0.2\nĠ t\nx yz\n", "line 3: token \"yz\" is not in vocab.json");
  check_refused("merges.txt", "Ġ t\nt e\n", "line 2: the merged token \"te\" is not in vocab.json");
  check_refused("merges.txt", "Ġ t h\n", "line 1: expected two tokens");
  check_refused("merges.txt", "Ġ t\n\nh e\n", "line 2: expected two tokens");
  check_refused("merges.txt", "Ġt\n", "line 1: expected two tokens");
  check_refused("merges.txt", "Ġ t\nh e\nĠ t\n", "line 3: the merge \"Ġ t\" repeats line 1");
  {
    BrokenFolder f("merges.txt", "#version: 0.2\n");
    std::ofstream(f.dir / "vocab.json") << "{\"a\": 0}";
    CHECK_THROWS_WITH_AS(read_gpt2_tokenizer(f.path()), doctest::Contains((f.path() + "/vocab.json: no token for byte 0x00").c_str()),
                         InputError);
  }
  CHECK_THROWS_WITH_AS(read_gpt2_tokenizer("/no/such/folder"), doctest::Contains("/no/such/folder: no such folder"),
                       InputError);
}

TEST_CASE("cli: tokenize --model prints GPT-2 ids and texts") {
  const CliResult j = run_cli("tokenize --model '" + kTiny + "' 'the cat' --json");
  REQUIRE(j.code == 0);
  const Json tokens = Json::parse(j.out)["tokens"];
  REQUIRE(tokens.size() == 2);
  CHECK(tokens[0]["id"] == tiny_ids({"the"})[0]);
  CHECK(tokens[0]["text"] == "the");
  CHECK(tokens[1]["id"] == tiny_ids({"Ġcat"})[0]);
  CHECK(tokens[1]["text"] == " cat");
  // A split emoji's bytes read as U+FFFD in "text"; the table shows spaces and newlines.
  CHECK(Json::parse(run_cli("tokenize --model '" + kTiny + "' '😀' --json").out)["tokens"][0]["text"] == "\uFFFD");
  const CliResult table = run_cli("tokenize --model '" + kTiny + "' 'the cat\n'");
  REQUIRE(table.code == 0);
  CHECK(table.out.find("␣cat") != std::string::npos);
  CHECK(table.out.find("\\n") != std::string::npos);
  check_input_error(run_cli("tokenize --model '" + kTiny + "' 'the cat sat' --max-tokens 2"), "--max-tokens = 2");
  check_input_error(run_cli("tokenize --model '" + kTiny + "' 'ab\xff'"), "invalid UTF-8");
}

TEST_CASE("cli: tokenize --model with a broken folder is one error line, exit 2") {
  check_input_error(run_cli("tokenize --model /no/such/folder hi"), "no such folder");
  const BrokenFolder no_merges("merges.txt", nullptr);
  check_input_error(run_cli("tokenize --model '" + no_merges.path() + "' hi"), "merges.txt: missing");
  const BrokenFolder bad_json("vocab.json", "{\"a\": ");
  check_input_error(run_cli("tokenize --model '" + bad_json.path() + "' hi"), "malformed JSON");
  const BrokenFolder unknown("merges.txt", "Ġ q\n");
  check_input_error(run_cli("tokenize --model '" + unknown.path() + "' hi"), "the merged token \"Ġq\" is not in vocab.json");
}
