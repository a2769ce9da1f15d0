// Fuzz target: folders someone hands you. The bytes are a script that builds a small tree in a
// fresh scratch folder -- the names report and the model loaders look for, each made a regular
// file (with fuzzed contents), a folder, a symbolic link (to a file inside, to a secret file
// outside, dangling, or to itself), or a named pipe -- and then report, the toy and GPT-2 model
// loaders and the GPT-2 tokenizer read it, and report.html is written into it. Checked:
//   - every refusal is an InputError (no raw filesystem_error, no bad_alloc), and nothing hangs
//     (a named pipe is never opened for a blocking read: the run would stall, and libFuzzer's
//     -timeout reports it);
//   - no byte of the secret file outside the folder reaches the page;
//   - writing report.html never changes the secret file, whatever link stands at that name.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>

#include "attn/engine/core/error.hpp"
#include "attn/io/file_io.hpp"
#include "attn/io/gpt2_model_file.hpp"
#include "attn/io/gpt2_tokenizer_file.hpp"
#include "attn/io/toy_model_file.hpp"
#include "attn/render/report/report_html.hpp"
#include "byte_reader.hpp"
#include "fuzz_support.hpp"

namespace attn::fuzz {
namespace {
namespace fs = std::filesystem;

const char* const kNames[] = {"manifest.json", "train.json",  "attention.png", "heads.svg", "report.html",
                              "config.json",   "model.safetensors", "vocab.json", "merges.txt", "model",
                              "snapshots",     "loss.png"};
const char kSecret[] = "SECRET-e5b1c0de";  // the file outside the folder that must never leak

std::string write_text(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
  return text;
}

// Small JSON or PNG-looking contents, or raw bytes: enough to get past the first checks.
std::string contents(ByteReader& in) {
  switch (in.small(3)) {
    case 0: return R"({"tokens": ["a"], "results": {}, "artifacts": [{"path": "attention.png"}, {"path": "heads.svg"}]})";
    case 1: return R"({"train": {"task": "copy"}, "steps": [{"step": 0, "loss": 1.0}]})";
    case 2: return "\x89PNG\r\n\x1a\n";
    default: {
      std::string s;
      for (std::size_t n = in.small(40); n > 0; --n) s += char(in.byte());
      return s;
    }
  }
}

// One entry of the tree, as the script's next bytes say.
void make_entry(ByteReader& in, const fs::path& dir, const fs::path& secret) {
  const fs::path at = dir / kNames[in.small(std::size(kNames) - 1)];
  std::error_code ec;
  if (fs::exists(fs::symlink_status(at, ec))) return;  // the first writer of a name wins
  switch (in.small(6)) {
    case 0: write_text(at, contents(in)); break;
    case 1: fs::create_directory(at, ec); break;
    case 2: fs::create_symlink(secret, at, ec); break;  // out of the folder
    case 3: fs::create_symlink(kNames[in.small(std::size(kNames) - 1)], at, ec); break;  // inside, maybe dangling
    case 4: fs::create_symlink(at.filename(), at, ec); break;  // a loop
    case 5: ::mkfifo(at.c_str(), 0600); break;
    default: fs::create_directory_symlink(secret.parent_path(), at, ec); break;  // a folder outside
  }
}

template <class F>
void refused_or_done(const char* what, F&& f) {
  try {
    f();
  } catch (const InputError&) {
  } catch (const std::bad_alloc&) {
    finding(std::string(what) + ": out of memory on a tiny folder");
  } catch (const std::exception& e) {
    finding(std::string(what) + ": not an InputError: " + e.what());
  }
}

}  // namespace
}  // namespace attn::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attn;
  using namespace attn::fuzz;
  static const fs::path root = fs::temp_directory_path() / ("attn-fuzz-folders-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path dir = root / "handed", secret = root / "outside" / "secret.txt";
  fs::create_directories(dir);
  fs::create_directories(secret.parent_path());
  write_text(secret, kSecret);
  ByteReader in(data, size);
  for (std::size_t n = 1 + in.small(7); n > 0; --n) make_entry(in, dir, secret);

  std::string page;
  refused_or_done("report", [&] { page = report_html(read_report_folder(dir.string())); });
  check(page.find(kSecret) == std::string::npos, "report: the page holds the secret file from outside the folder");
  refused_or_done("report.html", [&] { write_file_atomically((dir / "report.html").string(), page.empty() ? "page" : page); });
  std::ifstream back(secret, std::ios::binary);
  const std::string after((std::istreambuf_iterator<char>(back)), std::istreambuf_iterator<char>());
  check(after == kSecret, "report.html: writing it changed the file a link there points to");
  refused_or_done("toy model", [&] { read_toy_model(dir.string()); });
  refused_or_done("gpt2 model", [&] { read_gpt2_model(dir.string()); });
  refused_or_done("gpt2 tokenizer", [&] { read_gpt2_tokenizer(dir.string()); });
  fs::remove_all(root);
  return 0;
}
