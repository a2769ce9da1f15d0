#include "tuning_file.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "attn/engine/core/error.hpp"
#include "attn/engine/text/printable_text.hpp"
#include "attn/engine/attention/flash.hpp"
#include "attn/engine/platform/machine.hpp"
#include "attn/io/file_io.hpp"
#include "attn/version.hpp"
#include "common.hpp"

namespace fs = std::filesystem;

namespace attn::cli {
namespace {

// What load_flash_tuning found, for tuning_json().
struct Loaded {
  bool tuned = false;
  std::string note;  // why a file was not used, or that the user turned tuning off
};

Loaded& loaded() {
  static Loaded state;
  return state;
}

bool tuning_off() {
  const char* off = std::getenv("ATTN_CLI_TUNING");
  return off && std::string(off) == "off";
}

// The file's tuning; InputError naming what is wrong when it is not one.
FlashTuning parse_tuning(const Json& j) {
  if (!j.is_object()) throw InputError("expected a JSON object");
  for (const char* field : {"qk_kernel", "pv_kernel"})
    if (!j.contains(field) || !j[field].is_string()) throw InputError(std::string(field) + ": expected a string");
  const std::vector<std::size_t> tiles = tune_block_qs();  // what tune writes, nothing else
  if (!j.contains("block_q") || !j["block_q"].is_number_unsigned() ||
      std::find(tiles.begin(), tiles.end(), j["block_q"].get<std::size_t>()) == tiles.end())
    throw InputError("block_q: expected one of the query tiles attn-cli tune tries");
  return {j["qk_kernel"].get<std::string>(), j["pv_kernel"].get<std::string>(), j["block_q"].get<std::size_t>()};
}

std::string field_or_empty(const Json& j, const char* field) {
  return j.is_object() && j.contains(field) && j[field].is_string() ? j[field].get<std::string>() : "";
}

}  // namespace

std::optional<std::string> tuning_file_path() {
  // Relative values are ignored, as the XDG base directory specification says: the file would
  // otherwise move with the working folder.
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && fs::path(xdg).is_absolute()) return (fs::path(xdg) / "attn-cli" / "flash-tuning.json").string();
  const char* home = std::getenv("HOME");
  if (home && fs::path(home).is_absolute())
    return (fs::path(home) / ".cache" / "attn-cli" / "flash-tuning.json").string();
  return std::nullopt;
}

void load_flash_tuning() {
  Loaded& state = loaded();
  if (tuning_off()) {
    state.note = "ATTN_CLI_TUNING=off";
    return;
  }
  const std::optional<std::string> path = tuning_file_path();
  std::error_code ec;
  if (!path || !fs::exists(*path, ec)) return;
  try {
    // Only a file is read: a named pipe there would block every command.
    if (!fs::is_regular_file(fs::status(*path, ec))) throw InputError("not a regular file");
    const Json j = Json::parse(read_input(*path, std::size_t(1) << 16));
    const FlashTuning tuning = parse_tuning(j);
    if (field_or_empty(j, "cpu") != cpu_facts().model || field_or_empty(j, "flash_isa") != flash_isa()) {
      state.note = "not used: measured on another CPU (" + printable_text(field_or_empty(j, "cpu")) + ")";
      return;
    }
    if (field_or_empty(j, "attn_cli") != kVersion) {
      state.note = "not used: measured by attn-cli " + printable_text(field_or_empty(j, "attn_cli"));
      return;
    }
    set_flash_tuning(tuning);  // InputError for a blocking this build does not offer
    state.tuned = true;
  } catch (const std::exception& e) {  // a broken cache must not stop every command
    state.note = "not used: " + printable_text(e.what());  // the file's text may be in it
    warn("ignoring " + *path + " (" + e.what() + "); attn-cli tune measures this machine again");
  }
}

Json flash_tuning_fields(const FlashTuning& t) {
  return {{"qk_kernel", t.qk_kernel}, {"pv_kernel", t.pv_kernel}, {"block_q", t.block_q}};
}

Json tuning_json() {
  const FlashBlockings offered = flash_blockings();
  const FlashTuning t = flash_tuning();
  Json j = flash_tuning_fields({t.qk_kernel.empty() ? offered.qk.front() : t.qk_kernel,
                                t.pv_kernel.empty() ? offered.pv.front() : t.pv_kernel,
                                t.block_q ? t.block_q : offered.block_q});
  j["source"] = loaded().tuned ? "tuned" : "built-in";
  if (const auto path = tuning_file_path()) j["file"] = *path;
  if (!loaded().note.empty()) j["note"] = loaded().note;
  return j;
}

std::string tuning_file_for_writing() {
  const std::optional<std::string> path = tuning_file_path();
  if (!path) throw InputError("no cache folder to save to: set XDG_CACHE_HOME or HOME, or use --no-save");
  std::error_code ec;
  fs::create_directories(fs::path(*path).parent_path(), ec);
  if (ec) throw InputError("cannot make " + fs::path(*path).parent_path().string() + ": " + ec.message());
  // Written by a rename over it: a link or a device there would be written through instead.
  const fs::file_status there = fs::symlink_status(*path, ec);
  if (fs::exists(there) && !fs::is_regular_file(there))
    throw InputError(*path + " is not a regular file: remove it, or use --no-save");
  return *path;
}

void save_flash_tuning(const TuneConfig& config, const TuneResult& r) {
  const std::string path = tuning_file_for_writing();
  Json j = flash_tuning_fields(r.chosen);
  j["attn_cli"] = kVersion;
  j["cpu"] = cpu_facts().model;
  j["flash_isa"] = r.isa;
  j["measured"] = {{"n", config.n},         {"heads", config.heads},         {"head_dim", config.head_dim},
                   {"threads", r.threads}, {"builtin_ms", r.builtin_ms}, {"staged_ms", r.staged_ms}};
  write_file_atomically(path, j.dump(2) + "\n");
}

bool remove_flash_tuning() {
  const std::optional<std::string> path = tuning_file_path();
  std::error_code ec;
  if (!path || !fs::exists(fs::symlink_status(*path, ec))) return false;
  if (!fs::is_regular_file(fs::symlink_status(*path, ec)))
    throw InputError(*path + " is not a regular file: attn-cli tune leaves it alone");
  fs::remove(*path, ec);
  if (ec) throw InputError("cannot remove " + *path + ": " + ec.message());
  return true;
}

}  // namespace attn::cli
