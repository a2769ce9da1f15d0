// `attn-cli tune`: every blocking the kernels offer is timed and gives the built-in's bits, the
// choice follows the margin rule from the run's own times, and what it saves is what later
// commands run (doctor and bench --json say so) -- on the CPU it was measured on only.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "attn/engine/attention/flash.hpp"
#include "attn/lessons/measure/tune_decode.hpp"
#include "support.hpp"

using namespace attn;
using test::run_cli;
namespace fs = std::filesystem;

namespace {

// Sets an environment variable for the attn-cli runs of one test, and puts it back after.
struct EnvFor {
  std::string name;
  std::optional<std::string> before;
  EnvFor(const std::string& n, const std::optional<std::string>& value) : name(n) {
    if (const char* v = std::getenv(n.c_str())) before = v;
    if (value) setenv(n.c_str(), value->c_str(), 1);
    else unsetenv(n.c_str());
  }
  ~EnvFor() {
    if (before) setenv(name.c_str(), before->c_str(), 1);
    else unsetenv(name.c_str());
  }
};

// A cache folder of this test's own, as XDG_CACHE_HOME.
struct OwnCache {
  fs::path dir = fs::temp_directory_path() / ("attn-cli-tune-test-" + std::to_string(::getpid()));
  fs::path file = dir / "attn-cli" / "flash-tuning.json";
  EnvFor env{"XDG_CACHE_HOME", dir.string()};
  OwnCache() { fs::remove_all(dir); }
  ~OwnCache() { fs::remove_all(dir); }
};

// Exit 2 with an error line naming `expected` (a warning about the same file may come first).
void check_refused(const test::CliResult& r, const std::string& expected) {
  CAPTURE(r.err);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  const std::size_t at = r.err.rfind("error: ");
  REQUIRE(at != std::string::npos);
  CHECK(r.err.find(expected, at) != std::string::npos);
}

// A tuning file as tune writes it, for this machine (doctor's cpu, flash_isa and version).
Json tuning_file(const std::string& qk, const std::string& pv, std::size_t block_q) {
  const Json machine = Json::parse(run_cli("doctor --json").out);
  return {{"attn_cli", machine["version"]}, {"cpu", machine["cpu"]}, {"flash_isa", machine["flash_isa"]},
          {"qk_kernel", qk}, {"pv_kernel", pv}, {"block_q", block_q}};
}

Json doctor_tuning() {
  const auto r = run_cli("doctor --json");
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  return Json::parse(r.out)["flash_tuning"];
}

}  // namespace

TEST_CASE("cli tune: every offered blocking is timed, the margin rule picks, and later commands run what it saved") {
  OwnCache cache;
  const FlashBlockings offered = flash_blockings();
  CHECK(doctor_tuning()["source"] == "built-in");

  const auto r = run_cli("tune --n 768 --heads 1 --rounds 2 --json");
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  const Json out = Json::parse(r.out);
  CHECK(out["isa"] == offered.isa);
  CHECK(out["all_same_bits"] == true);
  const double margin = out["margin"].get<double>();
  CHECK(margin > 0);
  CHECK(margin < 0.2);

  // Stage by stage: its candidates, its scores, and the pick the rule makes from them, which
  // the next stage starts from.
  Json incumbent = out["builtin"];
  CHECK(incumbent["qk_kernel"] == offered.qk.front());
  CHECK(incumbent["pv_kernel"] == offered.pv.front());
  CHECK(incumbent["block_q"] == offered.block_q);
  for (const char* stage : {"qk_kernel", "pv_kernel", "block_q"}) {
    CAPTURE(stage);
    std::vector<Json> seen;
    for (const Json& c : out["candidates"])
      if (c["stage"] == stage) seen.push_back(c);
    REQUIRE(!seen.empty());
    for (const char* field : {"qk_kernel", "pv_kernel", "block_q"})
      CHECK(seen.front()[field] == incumbent[field]);  // the choice so far comes first
    std::set<Json> values;
    for (const Json& c : seen) {
      CHECK(c["same_bits"] == true);
      CHECK(c["score_ms"].get<double>() ==
            doctest::Approx(c["min_ms"].get<double>() + c["min_ms_causal"].get<double>()));
      CHECK(c["min_ms"].get<double>() > 0);
      values.insert(c[stage]);
    }
    const std::size_t expected = std::string(stage) == "qk_kernel"   ? offered.qk.size()
                                 : std::string(stage) == "pv_kernel" ? offered.pv.size()
                                                                     : 3;  // half, once, twice the built-in
    CHECK(values.size() == expected);
    if (std::string(stage) == "block_q") {
      CHECK(values.count(Json(offered.block_q / 2)) == 1);
      CHECK(values.count(Json(offered.block_q * 2)) == 1);
    }
    std::size_t best = 0;
    for (std::size_t i = 1; i < seen.size(); ++i)
      if (seen[i]["score_ms"].get<double>() < seen[best]["score_ms"].get<double>()) best = i;
    const bool replaced =
        seen[best]["score_ms"].get<double>() < seen.front()["score_ms"].get<double>() * (1 - margin);
    incumbent = {{"qk_kernel", seen[replaced ? best : 0]["qk_kernel"]},
                 {"pv_kernel", seen[replaced ? best : 0]["pv_kernel"]},
                 {"block_q", seen[replaced ? best : 0]["block_q"]}};
  }
  CHECK(out["staged"] == incumbent);
  // What the stages chose is kept only when it beat the built-in by the margin head to head.
  if (out["staged"] != out["builtin"]) {
    const bool won = out["staged_ms"].get<double>() < out["builtin_ms"].get<double>() * (1 - margin);
    CHECK(out["chosen"] == (won ? out["staged"] : out["builtin"]));
  } else {
    CHECK(out["chosen"] == out["builtin"]);
  }

  // Saved where it said, for this CPU and version; doctor and bench report it.
  REQUIRE(out["saved_to"] == cache.file.string());
  const Json saved = read_json(cache.file.string());
  for (const char* field : {"qk_kernel", "pv_kernel", "block_q"}) CHECK(saved[field] == out["chosen"][field]);
  CHECK(saved["flash_isa"] == offered.isa);
  CHECK(saved["cpu"] == out["machine"]["cpu"]);
  Json t = doctor_tuning();
  CHECK(t["source"] == "tuned");
  CHECK(t["file"] == cache.file.string());
  for (const char* field : {"qk_kernel", "pv_kernel", "block_q"}) CHECK(t[field] == out["chosen"][field]);

  // A saved choice other than the built-in is the one later commands run.
  Json other = saved;
  other["qk_kernel"] = offered.qk.back();
  other["pv_kernel"] = offered.pv.back();
  other["block_q"] = 96;
  std::ofstream(cache.file) << other.dump();
  const auto bench = run_cli("bench --backend flash --n 1000 --heads 1 --repeat 1 --no-check --json");
  REQUIRE(bench.code == 0);
  const Json bench_out = Json::parse(bench.out);
  t = bench_out["machine"]["flash_tuning"];
  CHECK(t["source"] == "tuned");
  CHECK(t["qk_kernel"] == offered.qk.back());
  CHECK(t["pv_kernel"] == offered.pv.back());
  CHECK(t["block_q"] == 96);
  const Json tiles = bench_out["runs"][0]["tiles"];  // what the run itself ran
  CHECK(tiles["qk_kernel"] == offered.qk.back());
  CHECK(tiles["pv_kernel"] == offered.pv.back());
  CHECK(tiles["block_q"] == 96);
  CHECK(tiles["block_k"] == flash_default_block_k());
  {
    EnvFor off("ATTN_CLI_TUNING", "off");
    t = doctor_tuning();
    CHECK(t["source"] == "built-in");
    CHECK(t["qk_kernel"] == offered.qk.front());
    CHECK(t["note"] == "ATTN_CLI_TUNING=off");
  }
  // --no-save measures and leaves the file alone; --reset forgets it.
  const auto no_save = run_cli("tune --n 768 --heads 1 --rounds 1 --no-save --json");
  REQUIRE(no_save.code == 0);
  CHECK(Json::parse(no_save.out)["saved_to"].is_null());
  CHECK(read_json(cache.file.string()) == other);
  const auto reset = run_cli("tune --reset --json");
  CHECK(reset.code == 0);
  CHECK(Json::parse(reset.out) == Json{{"file", cache.file.string()}, {"removed", true}});
  CHECK(!fs::exists(cache.file));
  CHECK(run_cli("tune --reset").out.find("nothing to remove") == 0);
  CHECK(doctor_tuning()["source"] == "built-in");
}

TEST_CASE("cli tune: a broken or foreign tuning file is ignored, never an error") {
  OwnCache cache;
  fs::create_directories(cache.file.parent_path());
  // Not JSON: a warning, the built-in, and every command still runs.
  std::ofstream(cache.file) << "{\"qk_kernel\": ";
  auto r = run_cli("doctor --json");
  CHECK(r.code == 0);
  CHECK(r.err.find("warning: ignoring " + cache.file.string()) != std::string::npos);
  CHECK(Json::parse(r.out)["flash_tuning"]["source"] == "built-in");
  r = run_cli("attend --input -", R"({"q":[[1,0]],"k":[[1,0],[0,1]],"v":[[1],[2]]})");
  CHECK(r.code == 0);
  // A blocking this build does not offer: the same.
  Json file = tuning_file("99x1", flash_blockings().pv.front(), 192);
  const Json this_cpu = file["cpu"];
  std::ofstream(cache.file) << file.dump();
  r = run_cli("doctor --json");
  CHECK(r.code == 0);
  CHECK(r.err.find("99x1") != std::string::npos);
  CHECK(Json::parse(r.out)["flash_tuning"]["source"] == "built-in");
  // Measured on another CPU: quietly not used; doctor says why.
  file["qk_kernel"] = flash_blockings().qk.back();
  file["cpu"] = "Some Other CPU";
  std::ofstream(cache.file) << file.dump();
  r = run_cli("doctor --json");
  CHECK(r.code == 0);
  CHECK(r.err.find("ignoring") == std::string::npos);
  const Json t = Json::parse(r.out)["flash_tuning"];
  CHECK(t["source"] == "built-in");
  CHECK(t["note"].get<std::string>().find("another CPU") != std::string::npos);
  // What the file says reaches the terminal escaped.
  file["cpu"] = "Other\x1b[2J CPU";
  std::ofstream(cache.file) << file.dump();
  r = run_cli("doctor");
  CHECK(r.code == 0);
  CHECK(r.out.find("another CPU") != std::string::npos);
  CHECK(r.out.find('\x1b') == std::string::npos);
  // The same file on this CPU is used: the test above failed for the CPU alone.
  file["cpu"] = this_cpu;
  std::ofstream(cache.file) << file.dump();
  CHECK(doctor_tuning()["source"] == "tuned");
}

TEST_CASE("cli tune: nowhere to save is an input error, and --no-save needs no folder") {
  OwnCache cache;
  fs::create_directories(cache.dir);
  std::ofstream(cache.dir / "attn-cli") << "a file where the folder would be";
  test::check_input_error(run_cli("tune --n 64"), "cannot make");
  EnvFor no_xdg("XDG_CACHE_HOME", std::nullopt);
  EnvFor no_home("HOME", std::nullopt);
  test::check_input_error(run_cli("tune --n 64"), "no cache folder");
  const auto r = run_cli("tune --n 768 --heads 1 --rounds 1 --no-save");
  CHECK(r.code == 0);
}

TEST_CASE("cli tune: below the key tile some blockings cannot run, and tune says so instead of timing them") {
  OwnCache cache;
  if (flash_blockings().qk.size() > 1) {  // the baseline ISA offers its own blocking only
    test::check_input_error(run_cli("tune --n 256 --heads 1 --rounds 1"), "tune at n >= " +
                                                                              std::to_string(flash_default_block_k()));
    CHECK(!fs::exists(cache.file));
  }
}

TEST_CASE("cli tune: bench's table names the prefill's blockings and whether tune measured them here") {
  OwnCache cache;
  const std::string bench_flash = "bench --backend flash --n 64 --heads 1 --repeat 1 --no-check";
  auto r = run_cli(bench_flash);
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  const FlashBlockings offered = flash_blockings();
  CHECK(r.out.find("flash tune: Q K^T " + offered.qk.front() + ", P V " + offered.pv.front() + ", query tile " +
                   std::to_string(flash_default_block_q()) + " (built-in; attn-cli tune measures this machine's)") !=
        std::string::npos);
  // A tuning file with another query tile: bench says it runs that one, and from where.
  fs::create_directories(cache.file.parent_path());
  std::ofstream(cache.file) << tuning_file(offered.qk.front(), offered.pv.front(), flash_default_block_q() / 2).dump();
  r = run_cli(bench_flash);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("flash tune: Q K^T " + offered.qk.front() + ", P V " + offered.pv.front() + ", query tile " +
                   std::to_string(flash_default_block_q() / 2) + " (measured here by attn-cli tune: " +
                   cache.file.string() + ")") != std::string::npos);
  // No line where the tuned float32 blockings do not run: no flash, the float64 backward, tiles
  // given by flag, bfloat16's own kernels.
  for (const char* other : {"bench --backend naive --n 64 --heads 1 --repeat 1",
                            "bench --backward --backend flash --n 64 --heads 1 --repeat 1 --no-check",
                            "bench --backend flash --n 64 --heads 1 --repeat 1 --no-check --block-q 32",
                            "bench --backend flash --n 64 --heads 1 --repeat 1 --no-check --dtype bf16"}) {
    const std::string command = other;
    r = run_cli(command);
    CAPTURE(command);
    CAPTURE(r.err);
    REQUIRE(r.code == 0);
    CHECK(r.out.find("flash tune:") == std::string::npos);
  }
}

TEST_CASE("cli tune: what is at the file's path is read or replaced only when it is a file") {
  OwnCache cache;
  fs::create_directories(cache.file.parent_path());
  // A named pipe would block a reader for ever: every command must still run.
  REQUIRE(::mkfifo(cache.file.c_str(), 0600) == 0);
  auto r = run_cli("doctor --json", "", "", 30);
  CHECK(r.code == 0);
  CHECK(r.err.find("not a regular file") != std::string::npos);
  check_refused(run_cli("tune --n 768 --heads 1 --rounds 1"), "not a regular file");
  check_refused(run_cli("tune --reset"), "not a regular file");
  CHECK(fs::is_fifo(cache.file));
  fs::remove(cache.file);
  // A link is never written through.
  const fs::path elsewhere = cache.dir / "elsewhere.json";
  std::ofstream(elsewhere) << "keep me";
  fs::create_symlink(elsewhere, cache.file);
  check_refused(run_cli("tune --n 768 --heads 1 --rounds 1"), "not a regular file");
  CHECK(test::read_text(elsewhere.string()) == "keep me");
  fs::remove(cache.file);
  // A query tile tune never tries (1 would make every tile 1 row of work padded to a block).
  Json file = tuning_file(flash_blockings().qk.front(), flash_blockings().pv.front(), 1);
  std::ofstream(cache.file) << file.dump();
  r = run_cli("doctor --json");
  CHECK(r.code == 0);
  CHECK(r.err.find("block_q") != std::string::npos);
  CHECK(Json::parse(r.out)["flash_tuning"]["source"] == "built-in");
  file["block_q"] = flash_default_block_q() / 2;
  std::ofstream(cache.file) << file.dump();
  CHECK(doctor_tuning()["source"] == "tuned");
  CHECK(doctor_tuning()["block_q"] == flash_default_block_q() / 2);
  // A relative XDG_CACHE_HOME is ignored (the XDG specification): HOME's ~/.cache is used.
  EnvFor relative("XDG_CACHE_HOME", "relative/cache");
  EnvFor home("HOME", cache.dir.string());
  CHECK(doctor_tuning()["file"] == (cache.dir / ".cache" / "attn-cli" / "flash-tuning.json").string());
}

namespace {

// The crossover rule as tune_decode.hpp states it, from a ladder as tune --json prints it.
std::size_t crossover_from(const Json& ladder, std::size_t threads, double margin) {
  std::size_t from = ladder.size();
  while (from > 0 && ladder[from - 1]["all_threads_ms"].get<double>() <
                         ladder[from - 1]["one_thread_ms"].get<double>() * (1 - margin))
    --from;
  if (from == ladder.size()) return std::size_t(ladder.back()["work"].get<double>() / double(threads)) + 1;
  return std::max<std::size_t>(1, std::size_t(ladder[from]["work"].get<double>() / double(threads)));
}

}  // namespace

TEST_CASE("cli tune: decode's prefetch and thread crossovers follow the rules, are saved, shown, and switched off") {
  OwnCache cache;
  test::check_input_error(run_cli("tune --only prefill"), "--only");
  Json t = doctor_tuning()["decode"];
  CHECK(t["source"] == "built-in");
  CHECK(t["note"] == "attn-cli tune has not measured decode on this CPU");
  const auto bench_text = run_cli("bench --mode decode --kv 256 --heads 1 --repeat 1 --no-check");
  REQUIRE(bench_text.code == 0);
  CHECK(bench_text.out.find("tune has not measured decode") != std::string::npos);

  const auto r = run_cli("tune --only decode --heads 2 --rounds 1 --decode-kv 1024 --threads 2 --json");
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  const Json out = Json::parse(r.out);
  CHECK(!out.contains("candidates"));  // the blockings were not measured
  const Json d = out["decode"];
  CHECK(d["all_same_bits"] == true);
  CHECK(d["threads"] == 2);
  const double margin = 0.03;
  // The prefetch stages: every distance, the built-in first, the margin rule.
  const DecodeTuning builtin = decode_tuning_builtin();
  for (auto [stage, field, distances, first] :
       {std::tuple{"prefetch", "prefetch_blocks", tune_prefetch_blocks(), builtin.prefetch_blocks},
        std::tuple{"bf16_near", "bf16_near_keys", tune_bf16_near_keys(), builtin.bf16_near_keys},
        std::tuple{"f32_near", "f32_near_keys", tune_f32_near_keys(), builtin.f32_near_keys}}) {
    const std::string name = stage;  // CAPTURE takes no structured binding (clang 14)
    CAPTURE(name);
    const Json& timed = d[stage];
    REQUIRE(timed.size() == distances.size());
    CHECK(timed[0][field] == first);
    if (name != "prefetch")  // the near stages run with the prefetch stage's pick
      for (const Json& t : timed) CHECK(t["prefetch_blocks"] == d["staged"]["prefetch_blocks"]);
    std::size_t best = 0;
    for (std::size_t i = 0; i < timed.size(); ++i) {
      CHECK(timed[i][field] == distances[i]);
      CHECK(timed[i]["same_bits"] == true);
      // Timed on one thread and on both, scored by the sum.
      CHECK(timed[i]["one_thread_ms"].get<double>() > 0);
      CHECK(timed[i]["all_threads_ms"].get<double>() > 0);
      CHECK(timed[i]["ms"].get<double>() ==
            doctest::Approx(timed[i]["one_thread_ms"].get<double>() + timed[i]["all_threads_ms"].get<double>()));
      if (timed[i]["ms"].get<double>() < timed[best]["ms"].get<double>()) best = i;
    }
    const bool replaced = timed[best]["ms"].get<double>() < timed[0]["ms"].get<double>() * (1 - margin);
    CHECK(d["staged"][field] == timed[replaced ? best : 0][field]);
  }
  // The crossovers, from the ladders' own times.
  CHECK(d["decode_ladder"].size() >= 4);
  CHECK(d["prefill_ladder"].size() >= 4);
  CHECK(d["staged"]["decode_thread_work"] == crossover_from(d["decode_ladder"], 2, margin));
  CHECK(d["staged"]["prefill_thread_work"] == crossover_from(d["prefill_ladder"], 2, margin));
  // Each change kept only when it beat its base head to head where it runs differently; the
  // others stay the built-in's. A near distance's base is the built-in with the staged prefetch
  // (its stage ran with it), and it is kept only with that prefetch.
  Json expected = d["builtin"];
  double builtin_sum = 0, staged_sum = 0;
  bool prefetch_kept = false;
  const bool prefetch_changed = d["staged"]["prefetch_blocks"] != d["builtin"]["prefetch_blocks"];
  for (const Json& h : d["head_to_head"]) {
    const std::string field = h["setting"];
    CAPTURE(field);
    CHECK(h["builtin"] == d["builtin"][field]);
    CHECK(h["staged"] == d["staged"][field]);
    CHECK(h["staged"] != h["builtin"]);
    const bool near = field == "bf16_near_keys" || field == "f32_near_keys";
    CHECK(h["base"] == (near && prefetch_changed ? Json{{"prefetch_blocks", d["staged"]["prefetch_blocks"]}}
                                                 : Json::object()));
    const bool won = h["staged_ms"].get<double>() < h["builtin_ms"].get<double>() * (1 - margin) &&
                     (!near || !prefetch_changed || prefetch_kept);
    CHECK(h["kept"] == won);
    if (field == "prefetch_blocks") prefetch_kept = won;
    if (won) expected[field] = h["staged"];
    builtin_sum += h["builtin_ms"].get<double>();
    staged_sum += h["staged_ms"].get<double>();
  }
  CHECK(d["chosen"] == expected);
  CHECK(d["builtin_ms"].get<double>() == doctest::Approx(builtin_sum));
  CHECK(d["staged_ms"].get<double>() == doctest::Approx(staged_sum));
  // Every changed setting that runs differently on some shape is compared: the prefetch
  // distances always do (their stage's cache), a crossover only where a ladder point moves.
  for (const char* field : {"prefetch_blocks", "bf16_near_keys", "f32_near_keys"}) {
    bool compared = false;
    for (const Json& h : d["head_to_head"]) compared = compared || h["setting"] == field;
    CHECK(compared == (d["staged"][field] != d["builtin"][field]));
  }
  // Saved without blockings (none were measured or saved before); doctor runs it.
  const Json saved = read_json(cache.file.string());
  CHECK(!saved.contains("qk_kernel"));
  CHECK(saved["decode"] == d["chosen"]);
  const Json tuning = doctor_tuning();
  CHECK(tuning["source"] == "built-in");
  CHECK(tuning["decode"]["source"] == "tuned");
  for (const char* field :
       {"prefetch_blocks", "decode_thread_work", "prefill_thread_work", "bf16_near_keys", "f32_near_keys"})
    CHECK(tuning["decode"][field] == d["chosen"][field]);

  // A setting other than the built-in is what later commands run, and bench says so.
  Json other = saved;
  other["decode"] = {{"prefetch_blocks", 2}, {"decode_thread_work", 7}, {"prefill_thread_work", 9},
                     {"bf16_near_keys", 128}, {"f32_near_keys", 32}};
  std::ofstream(cache.file) << other.dump();
  t = doctor_tuning()["decode"];
  CHECK(t["source"] == "tuned");
  CHECK(t["prefetch_blocks"] == 2);
  CHECK(t["decode_thread_work"] == 7);
  CHECK(t["bf16_near_keys"] == 128);
  CHECK(t["f32_near_keys"] == 32);
  const auto doctor_text = run_cli("doctor");
  CHECK(doctor_text.out.find("decode:     prefetch 2 block(s) ahead, a bfloat16 cache's rows 128 keys ahead into "
                             "L1, a float32 cache's 32 into L2;") != std::string::npos);
  const auto bench_tuned = run_cli("bench --mode decode --kv 256 --heads 1 --repeat 1 --no-check");
  CHECK(bench_tuned.out.find("measured here by attn-cli tune") != std::string::npos);
  {
    EnvFor off("ATTN_CLI_TUNING", "off");
    t = doctor_tuning()["decode"];
    CHECK(t["source"] == "built-in");
    CHECK(t["prefetch_blocks"] == builtin.prefetch_blocks);
    CHECK(t["note"] == "ATTN_CLI_TUNING=off");
  }
  // tune --only flash keeps the decode part; a prefetch distance tune never tries is not used.
  REQUIRE(run_cli("tune --only flash --n 768 --heads 1 --rounds 1").code == 0);
  const Json both = read_json(cache.file.string());
  CHECK(both.contains("qk_kernel"));
  CHECK(both["decode"] == other["decode"]);
  for (auto [field, value] : {std::pair{"prefetch_blocks", Json(3)}, std::pair{"bf16_near_keys", Json(48)},
                              std::pair{"bf16_near_keys", Json("64")}, std::pair{"bf16_near_keys", Json(-64)},
                              std::pair{"f32_near_keys", Json(48)}, std::pair{"f32_near_keys", Json(-32)}}) {
    const std::string name = field;
    CAPTURE(name);
    Json bad = both;
    bad["decode"][field] = value;
    std::ofstream(cache.file) << bad.dump();
    const auto warned = run_cli("doctor --json");
    CHECK(warned.code == 0);
    CHECK(warned.err.find(field) != std::string::npos);
    CHECK(Json::parse(warned.out)["flash_tuning"]["decode"]["source"] == "built-in");
  }
  // A file from before tune timed the near distance runs its other settings and the built-in
  // near distance, says so, and tune --only flash keeps its decode part as it was.
  Json older = both;
  older["decode"].erase("bf16_near_keys");
  std::ofstream(cache.file) << older.dump();
  t = doctor_tuning()["decode"];
  CHECK(t["source"] == "tuned");
  CHECK(t["prefetch_blocks"] == 2);
  CHECK(t["bf16_near_keys"] == builtin.bf16_near_keys);
  CHECK(t["note"].get<std::string>().find("near distance is the built-in") != std::string::npos);
  CHECK(run_cli("doctor").out.find("predates") != std::string::npos);
  REQUIRE(run_cli("tune --only flash --n 768 --heads 1 --rounds 1").code == 0);
  CHECK(read_json(cache.file.string())["decode"] == older["decode"]);
  // The same for the float32 near distance, and for both.
  older = both;
  older["decode"].erase("f32_near_keys");
  std::ofstream(cache.file) << older.dump();
  t = doctor_tuning()["decode"];
  CHECK(t["f32_near_keys"] == builtin.f32_near_keys);
  CHECK(t["bf16_near_keys"] == 128);
  CHECK(t["note"].get<std::string>().find("float32 near distance is the built-in") != std::string::npos);
  older["decode"].erase("bf16_near_keys");
  std::ofstream(cache.file) << older.dump();
  t = doctor_tuning()["decode"];
  CHECK(t["source"] == "tuned");
  CHECK(t["bf16_near_keys"] == builtin.bf16_near_keys);
  CHECK(t["note"].get<std::string>().find("bfloat16 and float32 near distances are the built-in") !=
        std::string::npos);
}

TEST_CASE("cli tune: the decode stages' table names every stage and the bit check") {
  OwnCache cache;
  const auto r = run_cli("tune --only decode --heads 1 --rounds 1 --decode-kv 512 --threads 2 --no-save");
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  for (const char* words : {"Prefetch distance", "blocks ahead", "A bfloat16 cache's rows asked into L1 ahead",
                            "The float32 cache's rows asked into L2 ahead", "keys ahead", "Decode, one query row",
                            "Prefill, n x n", "1 thread    2 threads          sum",
                            "The stages chose: prefetch", "bit for bit"})
    CHECK(r.out.find(words) != std::string::npos);
  CHECK(!fs::exists(cache.file));
}

TEST_CASE("cli tune: on one thread a prefetch distance is timed once, and that time is its score") {
  OwnCache cache;
  const auto r = run_cli("tune --only decode --heads 1 --rounds 1 --decode-kv 512 --threads 1 --no-save --json");
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  const Json d = Json::parse(r.out)["decode"];
  CHECK(d["threads"] == 1);
  for (const char* stage : {"prefetch", "bf16_near", "f32_near"}) {
    CAPTURE(stage);
    REQUIRE(!d[stage].empty());
    for (const Json& t : d[stage]) {
      CHECK(t["one_thread_ms"].get<double>() > 0);
      CHECK(t["all_threads_ms"] == t["one_thread_ms"]);
      CHECK(t["ms"] == t["one_thread_ms"]);
    }
  }
  CHECK(d["decode_ladder"].empty());
}

TEST_CASE("cli doctor: names the kernels that read a model's weights, those of the CPU's vectors") {
  const auto d = run_cli("doctor --json");
  CAPTURE(d.err);
  REQUIRE(d.code == 0);
  const Json m = Json::parse(d.out);
  const std::string named = m["weights_isa"], vectors = m["cpu_vectors"];
  CAPTURE(vectors);
  CHECK((named == "avx512" || named == "avx2" || named == "generic"));
  // A CPU with AVX2 (every x86 one since 2013, F16C and FMA with it) never reads them in plain C++.
  if (vectors == "AVX2") CHECK(named == "avx2");
  if (vectors == "AVX-512") CHECK(named == "avx512");
  CHECK(run_cli("doctor").out.find("weights:    " + named + " (") != std::string::npos);
}

TEST_CASE("cli doctor: names the bfloat16 products that bench --dtype bf16 runs") {
  const auto d = run_cli("doctor --json");
  CAPTURE(d.err);
  REQUIRE(d.code == 0);
  const std::string named = Json::parse(d.out)["bf16_products"];
  CHECK((named == "amx-bf16" || named == "avx512bf16" || named == "avx2" || named == "portable"));
  const auto b = run_cli("bench --backend flash --dtype bf16 --n 64 --heads 1 --repeat 1 --no-check --json");
  CAPTURE(b.err);
  REQUIRE(b.code == 0);
  CHECK(Json::parse(b.out)["runs"][0]["tiles"]["isa"] == named);
  CHECK(run_cli("doctor").out.find("bf16 flash: " + named + " (") != std::string::npos);
}
