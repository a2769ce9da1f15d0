// End-to-end tests: the attn-cli binary as a user runs it.
#include <doctest/doctest.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <regex>
#include <set>
#include <thread>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include "support.hpp"

using namespace attn;
using namespace attn::test;

namespace {

namespace fs = std::filesystem;

// Runs a README.md, docs/*.md or --help example line, with "attn-cli" standing for the built binary.
CliResult run_example(const std::string& line, const fs::path& cwd) {
  std::string cmd = std::regex_replace(line, std::regex(R"((^|\| *)attn-cli )"), "$1'" + std::string(ATTN_CLI) + "' ");
  const std::string out = (cwd / ".out").string(), err = (cwd / ".err").string();
  const int status = std::system(("cd '" + cwd.string() + "' && (" + cmd + ") >'" + out + "' 2>'" + err + "'").c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128, read_text(out), read_text(err)};
}

// The pages whose examples the suite runs and whose links it follows: README.md, then docs/*.md sorted.
std::vector<fs::path> doc_pages() {
  const fs::path root(ATTN_SOURCE_DIR);
  std::vector<fs::path> docs;
  for (const auto& entry : fs::directory_iterator(root / "docs"))
    if (entry.is_regular_file() && entry.path().extension() == ".md") docs.push_back(entry.path());
  std::sort(docs.begin(), docs.end());
  docs.insert(docs.begin(), root / "README.md");
  return docs;
}

// "Examples:" lines of a help text: the indented lines after the heading that run attn-cli.
std::vector<std::string> help_examples(const std::string& help) {
  std::vector<std::string> lines;
  const auto at = help.find("Examples:");
  if (at == std::string::npos) return lines;
  std::istringstream in(help.substr(at));
  std::string line;
  while (std::getline(in, line)) {
    const auto start = line.find_first_not_of(' ');
    if (start != std::string::npos && line.find("attn-cli ", start) != std::string::npos && start >= 2)
      lines.push_back(line.substr(start));
  }
  return lines;
}

void check_close(const Json& ours, const Json& ref) {
  const std::vector<double> a = flat(ours), b = flat(ref);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isinf(b[i])) {
      CHECK(a[i] == b[i]);
    } else {
      CHECK(std::fabs(a[i] - b[i]) <= 2.5e-7 * std::max(1.0, std::fabs(b[i])));
    }
  }
}

}  // namespace

TEST_CASE("cli: --version and --help") {
  const CliResult v = run_cli("--version");
  CHECK(v.code == 0);
  CHECK(v.out.find("attn-cli 0.") == 0);
  const CliResult h = run_cli("--help");
  CHECK(h.code == 0);
  for (const char* sub : {"attend", "mha", "tokenize", "demo"}) CHECK(h.out.find(sub) != std::string::npos);
  CHECK(h.out.find("1/true = the query MAY attend") != std::string::npos);
}

TEST_CASE("cli: usage errors exit 2 with one error line") {
  check_input_error(run_cli(""), "subcommand");
  check_input_error(run_cli("frobnicate"), "frobnicate");
  check_input_error(run_cli("attend"), "--input");
  check_input_error(run_cli("tokenize a --max-tokens 0"), "max-tokens");
}

// scripts/make_golden.py writes this many cases into data/golden/: a loop over the folder that
// found fewer (a missing folder, a renamed file) would pass while checking nothing.
constexpr int kGoldenCases = 18;

TEST_CASE("cli: attend and mha reproduce the float64 reference for every golden case") {
  int found = 0;
  for (const auto& entry : fs::directory_iterator(data_path("golden"))) {
    ++found;
    const std::string name = entry.path().stem().string();
    CAPTURE(name);
    const Json g = read_json(entry.path().string());
    const std::string sub = name.rfind("mha", 0) == 0 ? "mha" : "attend";
    const CliResult r = run_cli(sub + " --input -", g["input"].dump());
    REQUIRE(r.code == 0);
    const Json out = Json::parse(r.out);
    for (const char* field : {"output", "weights", "lse"}) {
      CAPTURE(field);
      check_close(out[field], g["expected"][field]);
    }
  }
  CHECK(found == kGoldenCases);
}

TEST_CASE("cli: attend and mha with backend flash reproduce the float64 reference (default and small tiles)") {
  int found = 0;
  for (const auto& entry : fs::directory_iterator(data_path("golden"))) {
    ++found;
    const std::string name = entry.path().stem().string();
    const std::string sub = name.rfind("mha", 0) == 0 ? "mha" : "attend";
    const Json g = read_json(entry.path().string());
    for (int block : {0, 1, 2, 3}) {
      CAPTURE(name);
      CAPTURE(block);
      Json in = g["input"];
      in["backend"] = "flash";
      if (block) in["block_size"] = block;
      const CliResult r = run_cli(sub + " --input -", in.dump());
      REQUIRE(r.code == 0);
      const Json out = Json::parse(r.out);
      for (const char* field : {"output", "weights", "lse"}) {
        CAPTURE(field);
        check_close(out[field], g["expected"][field]);
      }
    }
  }
  CHECK(found == kGoldenCases);
}

TEST_CASE("cli: temperature folds into the flash kernel's scale") {
  Json in = load_golden("attend_heads")["input"];
  in["temperature"] = 2.5;
  const CliResult naive = run_cli("attend --input -", in.dump());
  in["backend"] = "flash";
  const CliResult flash = run_cli("attend --input -", in.dump());
  REQUIRE(naive.code == 0);
  REQUIRE(flash.code == 0);
  for (const char* field : {"output", "weights", "lse"}) {
    CAPTURE(field);
    check_close(Json::parse(flash.out)[field], Json::parse(naive.out)[field]);
  }
}

TEST_CASE("cli: flash in float32, and backend cuda without a device") {
  const Json g = load_golden("attend_causal_rect");
  Json in = g["input"];
  in["backend"] = "flash";
  in["precision"] = "float32";
  const CliResult r = run_cli("attend --input -", in.dump());
  REQUIRE(r.code == 0);
  const std::vector<double> a = flat(Json::parse(r.out)["output"]), b = flat(g["expected"]["output"]);
  CHECK(max_abs_diff(a, b) < 1e-5);
  in["backend"] = "cuda";
  in.erase("precision");
  check_input_error(run_cli("attend --input -", in.dump()), "no CUDA device");
  in["backend"] = "naive";
  in["block_size"] = 4;
  check_input_error(run_cli("attend --input -", in.dump()), "block_size: applies to backend \"flash\" only");
}

TEST_CASE("cli: attend answers in the rank it was asked, --no-weights, --output FILE") {
  Scratch s;
  const CliResult r = run_cli("attend --input data/examples/attend_small.json --no-weights --output out.json", "",
                              s.dir.string());
  CHECK(r.code == 0);
  CHECK(r.out.empty());
  const Json out = read_json((s.dir / "out.json").string());
  CHECK_FALSE(out.contains("weights"));
  CHECK(out["output"].size() == 3);     // [Lq, dv], not [1, Lq, dv]
  CHECK(out["output"][0].size() == 2);
  CHECK(out["output"][0][0] == 1.0);    // causal: the first query sees only itself
}

TEST_CASE("cli: a fully masked row is zero with a null lse, and a warning") {
  const CliResult r = run_cli("attend --input -", R"({"q":[[1,0],[0,1]],"k":[[1,0]],"v":[[3]],"mask":[[0],[1]]})");
  CHECK(r.code == 0);
  const Json out = Json::parse(r.out);
  CHECK(out["weights"][0][0] == 0.0);
  CHECK(out["output"][0][0] == 0.0);
  CHECK(out["lse"][0].is_null());
  CHECK(out["output"][1][0] == 3.0);
  CHECK(r.err.find("warning: 1 query row") != std::string::npos);
}

TEST_CASE("cli: malformed input gets exit 2 and one clear error line") {
  check_input_error(run_cli("attend --input -", "{\"q\": [[1, 2]"), "malformed JSON");
  check_input_error(run_cli("attend --input -", "[1, 2]"), "expected a JSON object");
  check_input_error(run_cli("attend --input -", R"({"q":[[1,2]],"k":[[1,2]]})"), "v: required");
  check_input_error(run_cli("attend --input -", R"({"q":[[1,2],[3]],"k":[[1,2]],"v":[[1]]})"), "q: ragged");
  check_input_error(run_cli("attend --input -", R"({"q":[[1,2]],"k":[[1,2,3]],"v":[[1]]})"),
                    "k: expected shape [Lk, 2] (d of q), got [1, 3]");
  check_input_error(run_cli("attend --input -", R"({"q":[[1,2]],"k":[[1,2]],"v":[[1],[2]]})"),
                    "v: expected shape [1, dv]");
  check_input_error(run_cli("attend --input -", R"({"q":[[1,2]],"k":[[1,2]],"v":[[1]],"mask":[[1,1]]})"),
                    "mask: expected shape [1, 1], got [1, 2]");
  check_input_error(run_cli("attend --input -", R"({"q":[[1,2]],"k":[[1,2]],"v":[[1]],"causal":"yes"})"),
                    "causal: expected true or false");
  check_input_error(run_cli("attend --input -", R"({"q":[[1,2]],"k":[[1,2]],"v":[[1]],"backend":"magic"})"),
                    "backend");
  check_input_error(run_cli("attend --input -", R"({"q":[[1e40,2]],"k":[[1,2]],"v":[[1]]})"), "float32");
  const std::string mha = R"({"query":[[1,2,3]],"num_heads":2,"w_q":[[1,0,0],[0,1,0],[0,0,1]],)"
                          R"("w_k":[[1,0,0],[0,1,0],[0,0,1]],"w_v":[[1,0,0],[0,1,0],[0,0,1]],"w_o":[[1,0,0],[0,1,0],[0,0,1]]})";
  check_input_error(run_cli("mha --input -", mha), "num_heads: 2 does not divide the model dim D = 3");
  Json rope = Json::parse(mha);
  rope["num_heads"] = 1;
  rope["rope"] = {{"base", 10000}};  // D = 3, one head: d = 3 has no pairs to rotate
  check_input_error(run_cli("mha --input -", rope.dump()), "rope: head dim d = 3 is odd");
  rope.erase("rope");
  rope["decode_from"] = 1;  // not causal
  check_input_error(run_cli("mha --input -", rope.dump()), "decode_from: KV-cache decoding is causal");
}

TEST_CASE("cli: a missing input file is the user's to fix (exit 2, one line)") {
  check_input_error(run_cli("attend --input /nonexistent/in.json"), "cannot read /nonexistent/in.json");
}

TEST_CASE("cli: tokenize prints tokens, --json for machines, rejects invalid UTF-8") {
  const CliResult r = run_cli("tokenize 'The cat sat.'");
  CHECK(r.code == 0);
  CHECK(r.out == "0\tThe\n1\tcat\n2\tsat\n3\t.\n");
  const CliResult j = run_cli("tokenize '我喜欢深度学习' --json");
  CHECK(Json::parse(j.out)["tokens"] == Json::parse(R"(["我","喜欢","深度","学习"])"));
  check_input_error(run_cli(R"x(tokenize "$(printf 'bad \377 byte')")x"), "invalid UTF-8");
  check_input_error(run_cli("tokenize 'a b c' --max-tokens 2"), "--max-tokens = 2");
}

TEST_CASE("cli: demo prints tokens and the top-2 table and writes manifest.json, byte-identical on rerun") {
  Scratch s;
  const CliResult r = run_cli("demo 'The cat sat on the mat' --verbose --out run1", "", s.dir.string());
  REQUIRE(r.code == 0);
  CHECK(r.out.find("[5] mat") != std::string::npos);
  CHECK(r.out.find("'cat' [1] ->") != std::string::npos);
  // "the" at 4 is not "The" at 0: every listed key carries its position.
  const auto row = r.out.find("'the' [4] ->");
  REQUIRE(row != std::string::npos);
  const std::string line = r.out.substr(row, r.out.find('\n', row) - row);
  CHECK(std::count(line.begin(), line.end(), '[') == 3);  // the query and its top 2 keys
  // The flash check and its tile grid (2 x 4 tiles; by hand from the causal rule), the decode check.
  CHECK(r.out.find("FlashAttention check") != std::string::npos);
  CHECK(r.out.find("causal      D . . | F D . | F F D   3 of 9 tiles skipped") != std::string::npos);
  CHECK(r.out.find("Decode check") != std::string::npos);
  const Json m = read_json((s.dir / "run1/manifest.json").string());
  CHECK(m["sentence"] == "The cat sat on the mat");
  CHECK(m["tokens"].size() == 6);
  CHECK(m["seed"] == 42);
  CHECK(m["artifacts"].is_array());
  for (const auto& a : m["artifacts"]) CHECK(fs::exists(s.dir / "run1" / a["path"].get<std::string>()));
  const Json& rows = m["results"]["single_head"]["weights"];
  for (const auto& row : rows) {
    double sum = 0;
    for (double w : row) sum += w;
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
  }
  // The top-2 listed per query are that row's two largest weights.
  for (const auto& q : m["results"]["single_head"]["top_k"]) {
    std::vector<double> row = rows[q["index"].get<std::size_t>()].get<std::vector<double>>();
    std::sort(row.rbegin(), row.rend());
    CHECK(q["top"][0]["weight"].get<double>() == row[0]);
    CHECK(q["top"][1]["weight"].get<double>() == row[1]);
  }
  // "the" appears twice: same embedding, so its two rows are the same.
  CHECK(rows[0] != rows[4]);  // "The" and "the" are different texts
  REQUIRE(run_cli("demo 'The cat sat on the mat' --out run2", "", s.dir.string()).code == 0);
  CHECK(read_text((s.dir / "run1/manifest.json").string()) == read_text((s.dir / "run2/manifest.json").string()));
}

TEST_CASE("cli: demo with a Chinese sentence, and an unwritable --out") {
  Scratch s;
  const CliResult r = run_cli("demo '我喜欢深度学习' --out zh", "", s.dir.string());
  REQUIRE(r.code == 0);
  CHECK(read_json((s.dir / "zh/manifest.json").string())["tokens"].size() == 4);
  check_input_error(run_cli("demo --out /proc/version/x"), "--out");
}

TEST_CASE("cli: every example in README.md and docs/*.md runs") {
  std::size_t total = 0;
  for (const fs::path& page : doc_pages()) {
    CAPTURE(page);
    std::istringstream in(read_text(page.string()));
    std::string line;
    std::size_t examples = 0;
    Scratch s;  // one folder per page: a page's later examples read what its earlier ones wrote
    while (std::getline(in, line)) {
      if (line.rfind("$ attn-cli ", 0) != 0 && line.rfind("$ echo ", 0) != 0) continue;
      CAPTURE(line);
      const CliResult r = run_example(line.substr(2), s.dir);
      CAPTURE(r.err);
      CHECK(r.code == 0);
      ++examples;
    }
    if (page.filename() == "README.md") CHECK(examples >= 5);
    total += examples;
  }
  // README.md held 72 example lines before its topics moved to docs/ (issue 34); its learner path
  // added 7. None may get lost on the way to a page that is not read.
  CHECK(total >= 79);
}

TEST_CASE("cli: README.md is a front door of at most 300 lines, and every relative link resolves") {
  const std::string readme = read_text(std::string(ATTN_SOURCE_DIR) + "/README.md");
  CHECK(std::count(readme.begin(), readme.end(), '\n') <= 300);
  const std::regex link(R"(\]\(([^)\s]+)\))");
  std::size_t links = 0;
  for (const fs::path& page : doc_pages()) {
    CAPTURE(page);
    std::istringstream in(read_text(page.string()));
    std::string line;
    bool code = false;  // inside a ``` block, where "](" is text, not a link
    while (std::getline(in, line)) {
      if (line.rfind("```", 0) == 0) code = !code;
      if (code) continue;
      for (auto m = std::sregex_iterator(line.begin(), line.end(), link); m != std::sregex_iterator(); ++m) {
        const std::string target = (*m)[1].str();
        if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0) continue;
        const std::string path = target.substr(0, target.find('#'));
        if (path.empty()) continue;  // an anchor on the same page
        CAPTURE(target);
        CHECK(fs::exists(page.parent_path() / path));
        ++links;
      }
    }
  }
  CHECK(links >= 50);  // 79 today: a pattern that stopped matching would pass every page
}

TEST_CASE("cli: every example in --help runs") {
  Scratch s;
  std::size_t examples = 0;
  std::vector<std::string> subs = test::listed_subcommands();
  CHECK(subs.size() >= 16);
  subs.insert(subs.begin(), "");
  // One folder for every help text: a line two texts share (attn-cli tune, a quick train that
  // later lines read) runs once, and the lines after it read what it wrote (or what a later
  // line of the same name, such as train's own quick train, wrote over it).
  std::set<std::string> ran;
  for (const std::string& sub : subs) {
    CAPTURE(sub);
    const CliResult h = run_cli(sub + " --help");
    REQUIRE(h.code == 0);
    const auto lines = help_examples(h.out);
    CHECK(!lines.empty());
    for (const std::string& line : lines) {
      if (!ran.insert(line).second) continue;
      CAPTURE(line);
      const CliResult r = run_example(line, s.dir);
      CAPTURE(r.err);
      CHECK(r.code == 0);
      ++examples;
    }
  }
  CHECK(examples >= 8);
}

TEST_CASE("cli: overflowing scores are an error, never a null or NaN in the JSON") {
  const std::string big = R"({"q":[[1e30,1e30]],"k":[[1e30,1e30]],"v":[[1,2]])";
  check_input_error(run_cli("attend --input -", big + "}"), "overflow");
  check_input_error(run_cli("attend --input -", big + R"(,"backend":"flash","precision":"float32"})"), "overflow");
  check_input_error(run_cli("attend --input -", R"({"q":[[1,1]],"k":[[1,1]],"v":[[1]],"scale":1e300})"), "overflow");
  // 16 keys fill whole vector registers, where exp2(inf - inf) used to come out 0 ("every key masked").
  std::string keys, values;
  for (int j = 0; j < 16; ++j) keys += std::string(j ? "," : "") + "[1e30,1e30]", values += std::string(j ? "," : "") + "[1]";
  check_input_error(run_cli("attend --input -", R"({"q":[[1e30,1e30]],"k":[)" + keys + R"(],"v":[)" + values +
                                                    R"(],"backend":"flash","precision":"float32"})"),
                    "overflow");
}

TEST_CASE("cli: output that cannot be written is a runtime error, /dev/stdout works") {
  Scratch s;
  const std::string cli = "'" + std::string(ATTN_CLI) + "' attend --input data/examples/attend_small.json";
  const std::string err = (s.dir / "err").string(), out = (s.dir / "out").string();
  int status = std::system(("cd '" + s.dir.string() + "' && " + cli + " > /dev/full 2>'" + err + "'").c_str());
  CHECK(WEXITSTATUS(status) == 1);
  CHECK(read_text(err).rfind("error: cannot write to stdout", 0) == 0);
  // --output /dev/stdout writes through the link (never renames a file over it).
  status = std::system(("cd '" + s.dir.string() + "' && " + cli + " --output /dev/stdout >'" + out + "'").c_str());
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(Json::parse(read_text(out))["output"].size() == 3);
  CHECK(fs::is_symlink(fs::symlink_status("/dev/stdout")));
  check_input_error(run_cli("attend --input /tmp"), "it is a folder");
  // Every command, not only attend: output left in stdout's buffer meets the full disk at exit.
  for (const char* args : {"doctor", "tokenize \"the cat sat\" --json", "complexity --n 1024 --format json",
                           "variance --dk 4 --samples 10 --format json", "roofline --n 512 --kv 1024 --format json"}) {
    CAPTURE(args);
    status = std::system(("cd '" + s.dir.string() + "' && '" + ATTN_CLI + "' " + args + " > /dev/full 2>'" + err + "'").c_str());
    CHECK(WEXITSTATUS(status) == 1);
    CHECK(read_text(err).find("error: cannot write to stdout") != std::string::npos);
  }
}

TEST_CASE("cli: a closed stdout, --help into a full disk and an empty --model are errors") {
  Scratch s;
  const std::string cli = "cd '" + s.dir.string() + "' && '" + std::string(ATTN_CLI) + "' ";
  const std::string err = (s.dir / "err").string();
  // Closed: the output must not land in whatever file is opened next, nor vanish with exit 0.
  int status = std::system((cli + "tokenize \"the cat sat\" >&- 2>'" + err + "'").c_str());
  CHECK(WEXITSTATUS(status) == 1);
  CHECK(read_text(err).find("error: cannot write to stdout: it is closed") != std::string::npos);
  status = std::system((cli + "demo \"a b\" --out closed >&- 2>'" + err + "'").c_str());
  CHECK(WEXITSTATUS(status) == 1);
  for (const char* args : {"--help", "demo --help", "--version"}) {
    CAPTURE(args);
    status = std::system((cli + args + " > /dev/full 2>'" + err + "'").c_str());
    CHECK(WEXITSTATUS(status) == 1);
    CHECK(read_text(err).find("error: cannot write to stdout") != std::string::npos);
  }
  // An empty --model is no model folder: refused by every command that takes one, never read as
  // "no model" (demo ran the seeded demo) or as the current folder.
  for (const char* args : {"demo --model \"\" --out d", "forward --model \"\" \"a b\"", "generate \"a\" --model \"\"",
                           "tokenize \"a\" --model \"\""}) {
    CAPTURE(args);
    check_input_error(run_cli(args, "", s.dir.string()), "empty folder name");
  }
  CHECK_FALSE(fs::exists(s.dir / "d"));
}

TEST_CASE("cli: a run stopped by Ctrl-C, SIGTERM or SIGPIPE leaves no staging folder behind") {
  // A flash replay at --block 1 over 64 tokens writes frames for minutes; stop it once its
  // staging folder (.fl.tmpXXXXXX) is there. Spawned with the signals' default actions and
  // none blocked, whatever this test process inherited (a shell's background job ignores SIGINT).
  std::string words;
  for (int i = 0; i < 64; ++i) words += (i ? " w" : "w") + std::to_string(i % 50);
  for (int sig : {SIGINT, SIGTERM, SIGPIPE}) {  // SIGPIPE: `... | head`, once head stops reading
    CAPTURE(sig);
    Scratch s;
    const std::string out = (s.dir / "fl").string();
    std::vector<std::string> args{ATTN_CLI, "flash", words, "--block", "1", "--replay", "--out", out,
                                  "--max-frames", "5000", "--max-seconds", "100000"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t defaults, none;
    sigemptyset(&defaults);
    sigemptyset(&none);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    pid_t pid = 0;
    REQUIRE(posix_spawn(&pid, ATTN_CLI, &actions, &attr, argv.data(), environ) == 0);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    auto staged = [&] {
      for (const fs::directory_entry& e : fs::directory_iterator(s.dir))
        if (e.path().filename().string().rfind(".fl.tmp", 0) == 0 && !fs::is_empty(e.path())) return true;
      return false;
    };
    for (int i = 0; i < 600 && !staged(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(staged());
    kill(pid, sig);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status));  // ended by the signal, as without the handler (exit 128 + sig)
    CHECK(WTERMSIG(status) == sig);
    std::string left;
    for (const fs::directory_entry& e : fs::directory_iterator(s.dir))
      if (e.path().filename() != "data") left += e.path().filename().string() + " ";
    CHECK_MESSAGE(left.empty(), "left behind: " << left);
  }
}

TEST_CASE("cli: float32 flash weights at large scores still sum to 1 per row") {
  // Scores of about 1e4: a float32 lse is off by ~1e-3 there, so weights must not come from it.
  const std::string in = R"({"q":[[100,100],[-100,50]],"k":[[100,100],[99,101],[-50,100]],)"
                         R"("v":[[1],[2],[3]],"scale":1.0,"backend":"flash","precision":"float32"})";
  const CliResult r = run_cli("attend --input -", in);
  REQUIRE(r.code == 0);
  // Name the parsed document: a range-for over a member of a temporary Json would iterate
  // freed memory (the temporary dies before the loop body runs).
  const Json out = Json::parse(r.out);
  for (const Json& row : out["weights"]) {
    double sum = 0;
    for (double w : row) sum += w;
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
  }
}

TEST_CASE("cli: a [1, Lq, Lk] mask is shared by every head, in attend as in mha") {
  Json in = load_golden("attend_heads")["input"];  // 3 heads, Lq = 4, Lk = 6
  Json shared = Json::array(), per_head = Json::array();
  Json m = Json::array();
  for (int i = 0; i < 4; ++i) {
    Json row = Json::array();
    for (int j = 0; j < 6; ++j) row.push_back((i + j) % 3 != 0);
    m.push_back(row);
  }
  shared.push_back(m);
  for (int h = 0; h < 3; ++h) per_head.push_back(m);
  in["mask"] = shared;
  const CliResult a = run_cli("attend --input -", in.dump());
  in["mask"] = per_head;
  const CliResult b = run_cli("attend --input -", in.dump());
  REQUIRE(a.code == 0);
  REQUIRE(b.code == 0);
  Json ja = Json::parse(a.out), jb = Json::parse(b.out);
  CHECK(ja["mask"] == shared);  // echoed as given, for heatmap --input
  CHECK(jb["mask"] == per_head);
  ja.erase("mask"), jb.erase("mask");
  CHECK(ja == jb);
}

TEST_CASE("cli: mha's dropout seed must be a non-negative integer") {
  Json in = load_golden("mha_self_bias")["input"];
  in["dropout"] = 0.1;
  in["seed"] = -3;
  check_input_error(run_cli("mha --input -", in.dump()), "seed: expected a whole number >= 0, got -3");
  in["seed"] = 7;
  CHECK(run_cli("mha --input -", in.dump()).code == 0);
}

TEST_CASE("cli: a long sentence keeps the demo's tile grid readable and its manifest compact") {
  Scratch s;
  std::string sentence;
  for (int i = 0; i < 100; ++i) sentence += "w" + std::to_string(i % 17) + " ";
  const CliResult r = run_cli("demo '" + sentence + "' --out long", "", s.dir.string());
  REQUIRE(r.code == 0);
  const std::string text = read_text((s.dir / "long/manifest.json").string());
  const Json m = Json::parse(text);
  const Json& teaching = m["results"]["flash"]["teaching"];
  // 100 tokens in about 8 tiles a side, not 50 x 50 tiles of 2.
  CHECK(teaching["tiles"]["non_causal"]["total"].get<std::size_t>() <= 100);
  CHECK(teaching["requested_block_q"].get<std::size_t>() == 13);  // ceil(100 / 8)
  // Weights are the shortest decimals of their float32 values (not 17-digit exact doubles):
  // each one, printed back in float32's shortest form, is the very same number.
  for (const Json& row : m["results"]["single_head"]["weights"]) {
    for (const Json& x : row) {
      const double w = x.get<double>();
      char buf[32];
      const auto end = std::to_chars(buf, buf + sizeof buf, static_cast<float>(w)).ptr;
      CHECK(std::strtod(std::string(buf, end).c_str(), nullptr) == w);
    }
  }
}

TEST_CASE("cli: a one-token run says 1 token, 1 query, never \"1 tokens\"") {
  Scratch s;
  const CliResult r = run_cli("demo Hi --verbose --out one --no-color", "", s.dir.string());
  REQUIRE(r.code == 0);
  // The teaching tile clamped to the sentence, as the picture names it: one query, one key.
  CHECK(r.out.find("got 1 query × 1 key (") != std::string::npos);
  CHECK(r.out.find("1 token as the prompt") != std::string::npos);
  const Json m = read_json((s.dir / "one/manifest.json").string());
  bool titled = false;
  for (const Json& a : m["artifacts"]) titled |= a["title"] == "Causal mask for 1 token";
  CHECK(titled);
  for (const char* wrong : {"1 tokens", "1 queries"}) CHECK(r.out.find(wrong) == std::string::npos);
  const CliResult e = run_cli("explain Hi --out ex", "", s.dir.string());
  CHECK(e.out.find("1 token;") != std::string::npos);
}
