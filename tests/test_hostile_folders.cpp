// Folders handed to you are hostile too: a demo, train or model folder someone sends may hold
// links to files elsewhere, named pipes and loops. attn-cli never writes or reads through a
// link it was not asked to follow, never waits on a pipe, and answers with one error line.
// The hostile folders are built here, in a scratch folder, never committed.
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include <doctest/doctest.h>

#include "attn/io/safetensors.hpp"
#include "support.hpp"

namespace attn::test {
namespace {
namespace fs = std::filesystem;

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// A small demo folder (3 tokens), made by attn-cli itself.
void make_demo(const Scratch& s, const std::string& name) {
  const CliResult r = run_cli("demo \"a b c\" --out " + name, "", s.dir.string(), 60);
  REQUIRE(r.code == 0);
}

}  // namespace

TEST_CASE("hostile folders: report never writes through a link at report.html") {
  Scratch s;
  make_demo(s, "demo");
  write_text(s / "victim.txt", "keep me");
  fs::remove(s / "demo/report.html");
  fs::create_symlink("../victim.txt", s / "demo/report.html");
  const CliResult r = run_cli("report demo", "", s.dir.string(), 60);
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(read_text(s / "victim.txt") == "keep me");  // the link's target is untouched
  CHECK_FALSE(fs::is_symlink(fs::symlink_status(s / "demo/report.html")));  // the link itself was replaced
  CHECK(read_text(s / "demo/report.html").find("<html") != std::string::npos);
  // The same for --out: a link there is replaced, not followed.
  fs::create_symlink("victim.txt", s / "page.html");
  CHECK(run_cli("report demo --out page.html", "", s.dir.string(), 60).code == 0);
  CHECK(read_text(s / "victim.txt") == "keep me");
  // A named pipe there would block the writer: refused. /dev/stdout, a name the user types, still works.
  fs::remove(s / "demo/report.html");
  REQUIRE(::mkfifo((s / "demo/report.html").c_str(), 0600) == 0);
  check_input_error(run_cli("report demo", "", s.dir.string(), 30), "not a regular file");
  const CliResult to_stdout = run_cli("report demo --out /dev/stdout", "", s.dir.string(), 60);
  CHECK(to_stdout.code == 0);
  CHECK(to_stdout.out.find("<html") != std::string::npos);
}

TEST_CASE("hostile folders: report reads no file through a link, and embeds nothing from outside the folder") {
  Scratch s;
  make_demo(s, "demo");
  write_text(s / "secret.txt", "SECRET-BYTES");
  // A picture the manifest lists, swapped for a link to a file elsewhere.
  const std::string picture = s / "demo/attention.png";
  REQUIRE(fs::is_regular_file(picture));
  fs::remove(picture);
  fs::create_symlink(s / "secret.txt", picture);
  check_input_error(run_cli("report demo --out page.html", "", s.dir.string(), 30), "attention.png: a symbolic link");
  CHECK_FALSE(fs::exists(s / "page.html"));
  // The manifest itself as a link.
  Scratch t;
  make_demo(t, "demo");
  fs::rename(t / "demo/manifest.json", t / "manifest-elsewhere.json");
  fs::create_symlink(t / "manifest-elsewhere.json", t / "demo/manifest.json");
  check_input_error(run_cli("report demo --out page.html", "", t.dir.string(), 30), "manifest.json: a symbolic link");
  // A train folder's pictures are every PNG in it: a linked one is refused too, and so is a pipe.
  Scratch u;
  fs::create_directories(u / "run");
  write_text(u / "run/train.json", R"({"train": {"task": "copy"}, "steps": [{"step": 0, "loss": 1.0}]})");
  fs::create_symlink(u / "secret.png", u / "run/loss.png");
  write_text(u / "secret.png", "SECRET-BYTES");
  check_input_error(run_cli("report run --out page.html", "", u.dir.string(), 30), "loss.png: a symbolic link");
  fs::remove(u / "run/loss.png");
  REQUIRE(::mkfifo((u / "run/loss.png").c_str(), 0600) == 0);
  check_input_error(run_cli("report run --out page.html", "", u.dir.string(), 30), "loss.png: not a regular file");
  // A model folder's page runs the demo now: the demo's budgets hold for it too.
  check_input_error(run_cli("report " + std::string(ATTN_DATA_DIR) + "/gpt2_tiny --max-memory 1K --out p.html", "",
                            u.dir.string(), 30),
                    "over the memory budget");
  // The folder the user names may itself be a link: that one they asked for.
  fs::remove(u / "run/loss.png");
  fs::create_directory_symlink(s / "demo", u / "linked-demo");
  fs::remove(s / "demo/attention.png");
  fs::copy_file(t / "demo/attention.png", s / "demo/attention.png");
  const CliResult ok = run_cli("report linked-demo --out page.html", "", u.dir.string(), 60);
  CAPTURE(ok.err);
  CHECK(ok.code == 0);
  CHECK(read_text(u / "page.html").find("SECRET-BYTES") == std::string::npos);
}

TEST_CASE("hostile folders: a named pipe for the weights is refused at once, never waited on") {
  Scratch s;
  fs::copy(std::string(ATTN_DATA_DIR) + "/gpt2_tiny", s / "gpt2");
  fs::remove(s / "gpt2/model.safetensors");
  REQUIRE(::mkfifo((s / "gpt2/model.safetensors").c_str(), 0600) == 0);
  for (const char* args : {"forward --model gpt2 \"hi there\"", "generate --model gpt2 \"hi\" --tokens 2",
                                 "demo --model gpt2 \"hi there\" --out d"}) {
    CAPTURE(args);
    const CliResult r = run_cli(args, "", s.dir.string(), 20);  // 124 if it hung
    check_input_error(r, "not a regular file");
  }
}

TEST_CASE("hostile folders: a model's files may not link out of its folder, but Hugging Face's cache layout loads") {
  Scratch s;
  const std::string tiny = std::string(ATTN_DATA_DIR) + "/gpt2_tiny";
  fs::create_directories(s / "outside");
  fs::copy_file(tiny + "/model.safetensors", s / "outside/weights.bin");
  for (const char* name : {"config.json", "model.safetensors", "vocab.json", "merges.txt"}) {
    CAPTURE(name);
    fs::remove_all(s / "gpt2");
    fs::copy(tiny, s / "gpt2");
    fs::copy_file(tiny + "/" + name, s / ("outside/" + std::string(name)), fs::copy_options::overwrite_existing);
    fs::remove(s / ("gpt2/" + std::string(name)));
    fs::create_symlink(s / ("outside/" + std::string(name)), s / ("gpt2/" + std::string(name)));
    const CliResult r = run_cli("forward --model gpt2 \"hi there\"", "", s.dir.string(), 30);
    CHECK(r.code == 2);
    CHECK(r.err.find("a symbolic link out of the model folder") != std::string::npos);
  }
  // models--gpt2/snapshots/<hash>/NAME -> ../../blobs/<sha>, as huggingface_hub writes the cache.
  const fs::path snap = s.dir / "hub/models--tiny/snapshots/0123abc", blobs = s.dir / "hub/models--tiny/blobs";
  fs::create_directories(snap);
  fs::create_directories(blobs);
  int n = 0;
  for (const char* name : {"config.json", "model.safetensors", "vocab.json", "merges.txt"}) {
    const std::string blob = "blob" + std::to_string(n++);
    fs::copy_file(tiny + "/" + name, blobs / blob);
    fs::create_symlink("../../blobs/" + blob, snap / name);
  }
  const CliResult cached = run_cli("forward --model '" + snap.string() + "' \"hi there\"", "", s.dir.string(), 30);
  CAPTURE(cached.err);
  CHECK(cached.code == 0);
  // A link that stays inside the folder is the folder's own file.
  fs::remove_all(s / "gpt2");
  fs::copy(tiny, s / "gpt2");
  fs::rename(s / "gpt2/model.safetensors", s / "gpt2/weights.safetensors");
  fs::create_symlink("weights.safetensors", s / "gpt2/model.safetensors");
  CHECK(run_cli("forward --model gpt2 \"hi there\"", "", s.dir.string(), 30).code == 0);
}

TEST_CASE("hostile folders: config values the GPT-2 loader does not implement are refused, naming them") {
  Scratch s;
  const Json base = read_json(std::string(ATTN_DATA_DIR) + "/gpt2_tiny/config.json");
  for (const auto& field : std::vector<std::pair<std::string, Json>>{
           {"activation_function", "relu"}, {"n_inner", 100}, {"scale_attn_weights", false},
           {"scale_attn_by_inverse_layer_idx", true}, {"add_cross_attention", true}}) {
    const std::string& key = field.first;  // not a structured binding: clang 14's CAPTURE cannot take one
    const Json& value = field.second;
    CAPTURE(key);
    fs::remove_all(s / "gpt2");
    fs::copy(std::string(ATTN_DATA_DIR) + "/gpt2_tiny", s / "gpt2");
    Json config = base;
    config[key] = value;
    write_text(s / "gpt2/config.json", config.dump());
    check_input_error(run_cli("forward --model gpt2 \"hi there\"", "", s.dir.string(), 30), "\"" + key + "\"");
  }
  // What GPT-2 itself says passes: Hugging Face writes these for the real model.
  fs::remove_all(s / "gpt2");
  fs::copy(std::string(ATTN_DATA_DIR) + "/gpt2_tiny", s / "gpt2");
  Json config = base;
  config["n_inner"] = nullptr;
  config["scale_attn_weights"] = true;
  config["scale_attn_by_inverse_layer_idx"] = false;
  config["activation_function"] = "gelu_new";
  write_text(s / "gpt2/config.json", config.dump());
  CHECK(run_cli("forward --model gpt2 \"hi there\"", "", s.dir.string(), 30).code == 0);
}

TEST_CASE("hostile folders: weights finite in the file that overflow float32 in the pass are bad input, before any output") {
  Scratch s;
  fs::copy(std::string(ATTN_DATA_DIR) + "/gpt2_tiny", s / "gpt2");
  std::string bytes = read_text(s / "gpt2/model.safetensors");
  const auto entries = index_safetensors(bytes, "model.safetensors");
  const SafetensorsEntry& w = entries.at("h.0.mlp.c_proj.weight");  // [4D, D]: 64 terms of 3e38 per output
  REQUIRE(w.dtype == "F32");
  const std::size_t offset = std::size_t(w.data - reinterpret_cast<const unsigned char*>(bytes.data()));
  const float huge = 3e38f;  // finite: the loader's check of the file passes it
  for (std::size_t i = 0; i < w.count; ++i) std::memcpy(bytes.data() + offset + 4 * i, &huge, 4);
  write_text(s / "gpt2/model.safetensors", bytes);
  for (const char* args : {"forward --model gpt2 \"hi there\"", "generate --model gpt2 \"hi\" --tokens 2",
                           "demo --model gpt2 \"hi there\" --out d"}) {
    CAPTURE(args);
    check_input_error(run_cli(args, "", s.dir.string(), 30), "overflow float32 after layer 0");  // stdout empty
  }
}

TEST_CASE("hostile folders: link loops and a linked --out folder on another path") {
  Scratch s;
  fs::create_symlink("loop", s / "loop");
  for (const char* args : {"forward --model loop \"hi\"", "report loop", "demo --model loop"}) {
    CAPTURE(args);
    const CliResult r = run_cli(args, "", s.dir.string(), 20);
    CHECK(r.code == 2);
    CHECK(line_count(r.err) == 1);
    CHECK(r.err.find("filesystem error") == std::string::npos);
    CHECK(r.err.find("loop") != std::string::npos);
  }
  // --out a link to a folder on another filesystem (tmpfs /dev/shm): the files land in that
  // folder, staged beside it. A staging folder beside the link failed with EXDEV.
  struct stat tmp_st {}, shm_st {};
  const fs::path target = "/dev/shm/attn-out-target-" + std::to_string(::getpid());
  if (::stat(s.dir.c_str(), &tmp_st) != 0 || ::stat("/dev/shm", &shm_st) != 0 || tmp_st.st_dev == shm_st.st_dev) {
    MESSAGE("no second filesystem at /dev/shm: the cross-device --out link is not checked here");
    return;
  }
  fs::remove_all(target);
  fs::create_directories(target);
  fs::create_directory_symlink(target, s / "out-link");
  const CliResult r = run_cli("demo \"a b\" --out out-link", "", s.dir.string(), 60);
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(fs::is_regular_file(target / "manifest.json"));
  CHECK(fs::is_symlink(fs::symlink_status(s / "out-link")));
  for (const fs::directory_entry& e : fs::directory_iterator(s.dir))  // no staging folder left beside the link
    CHECK(e.path().filename().string().rfind(".out-link", 0) != 0);
  fs::remove_all(target);
}

}  // namespace attn::test
