#include "tuning_file.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <tuple>
#include <utility>

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

// What load_flash_tuning found, for tuning_json() and for tune --only to keep the other part.
struct Loaded {
  bool tuned = false;         // the blockings come from the file
  bool decode_tuned = false;  // the decode path's settings come from the file
  std::string note;  // why a file was not used, or that the user turned tuning off
  std::string decode_note;  // what of a used decode part is the built-in all the same
  Json measured, decode_measured;  // the file's records of how each part was measured
  Json decode;  // the file's decode part as it was, for tune --only flash to keep
};

Loaded& loaded() {
  static Loaded state;
  return state;
}

bool tuning_off() {
  const char* off = std::getenv("ATTN_CLI_TUNING");
  return off && std::string(off) == "off";
}

// The file's blockings; InputError naming what is wrong when it is not one.
FlashTuning parse_tuning(const Json& j) {
  for (const char* field : {"qk_kernel", "pv_kernel"})
    if (!j.contains(field) || !j[field].is_string()) throw InputError(std::string(field) + ": expected a string");
  const std::vector<std::size_t> tiles = tune_block_qs();  // what tune writes, nothing else
  if (!j.contains("block_q") || !j["block_q"].is_number_unsigned() ||
      std::find(tiles.begin(), tiles.end(), j["block_q"].get<std::size_t>()) == tiles.end())
    throw InputError("block_q: expected one of the query tiles attn-cli tune tries");
  return {j["qk_kernel"].get<std::string>(), j["pv_kernel"].get<std::string>(), j["block_q"].get<std::size_t>()};
}

// The file's "decode" object; InputError naming what is wrong when it is not one.
DecodeTuning parse_decode_tuning(const Json& d) {
  if (!d.is_object()) throw InputError("decode: expected a JSON object");
  const std::vector<std::size_t> distances = tune_prefetch_blocks();
  if (!d.contains("prefetch_blocks") || !d["prefetch_blocks"].is_number_unsigned() ||
      std::find(distances.begin(), distances.end(), d["prefetch_blocks"].get<std::size_t>()) == distances.end())
    throw InputError("decode.prefetch_blocks: expected one of the distances attn-cli tune tries");
  DecodeTuning t;
  t.prefetch_blocks = d["prefetch_blocks"].get<std::size_t>();
  // A file written before tune timed a near distance has none: the built-in runs.
  for (auto [field, value, near] : {std::tuple{"bf16_near_keys", &t.bf16_near_keys, tune_bf16_near_keys()},
                                    std::tuple{"f32_near_keys", &t.f32_near_keys, tune_f32_near_keys()}}) {
    if (!d.contains(field)) continue;
    if (!d[field].is_number_unsigned() ||
        std::find(near.begin(), near.end(), d[field].get<std::size_t>()) == near.end())
      throw InputError(std::string("decode.") + field + ": expected one of the distances attn-cli tune tries");
    *value = d[field].get<std::size_t>();
  }
  for (auto [field, value] : {std::pair{"decode_thread_work", &t.decode_thread_work},
                              std::pair{"prefill_thread_work", &t.prefill_thread_work}}) {
    if (!d.contains(field) || !d[field].is_number_unsigned() || d[field].get<std::size_t>() < 1 ||
        d[field].get<std::size_t>() > (std::size_t(1) << 50))
      throw InputError(std::string("decode.") + field + ": expected a whole number from 1 to 2^50");
    *value = d[field].get<std::size_t>();
  }
  return t;
}

// Both parts of the file: the blockings when it has them, the decode settings when it has them,
// at least one of the two.
std::pair<std::optional<FlashTuning>, std::optional<DecodeTuning>> parse_tuning_file(const Json& j) {
  if (!j.is_object()) throw InputError("expected a JSON object");
  std::optional<FlashTuning> flash;
  std::optional<DecodeTuning> decode;
  if (j.contains("qk_kernel") || !j.contains("decode")) flash = parse_tuning(j);
  if (j.contains("decode")) decode = parse_decode_tuning(j["decode"]);
  return {flash, decode};
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
    const auto [tuning, decode] = parse_tuning_file(j);
    if (field_or_empty(j, "cpu") != cpu_facts().model || field_or_empty(j, "flash_isa") != flash_isa()) {
      state.note = "not used: measured on another CPU (" + printable_text(field_or_empty(j, "cpu")) + ")";
      return;
    }
    if (field_or_empty(j, "attn_cli") != kVersion) {
      state.note = "not used: measured by attn-cli " + printable_text(field_or_empty(j, "attn_cli"));
      return;
    }
    if (tuning) set_flash_tuning(*tuning);  // InputError for a blocking this build does not offer
    if (decode) set_decode_tuning(*decode);
    state.tuned = tuning.has_value();
    state.decode_tuned = decode.has_value();
    if (j.contains("measured")) state.measured = j["measured"];
    if (j.contains("decode_measured")) state.decode_measured = j["decode_measured"];
    if (decode) state.decode = j["decode"];
    if (decode) {
      std::vector<std::string> older;  // the near distances the file predates
      if (!j["decode"].contains("bf16_near_keys")) older.push_back("bfloat16");
      if (!j["decode"].contains("f32_near_keys")) older.push_back("float32");
      if (older.size() == 1)
        state.decode_note = "the " + older[0] + " near distance is the built-in: the file predates tune's stage for it";
      if (older.size() == 2)
        state.decode_note =
            "the bfloat16 and float32 near distances are the built-in: the file predates tune's stages for them";
    }
  } catch (const std::exception& e) {  // a broken cache must not stop every command
    state.note = "not used: " + printable_text(e.what());  // the file's text may be in it
    warn("ignoring " + *path + " (" + e.what() + "); attn-cli tune measures this machine again");
  }
}

Json flash_tuning_fields(const FlashTuning& t) {
  return {{"qk_kernel", t.qk_kernel}, {"pv_kernel", t.pv_kernel}, {"block_q", t.block_q}};
}

Json decode_tuning_fields(const DecodeTuning& t) {
  return {{"prefetch_blocks", t.prefetch_blocks},
          {"decode_thread_work", t.decode_thread_work},
          {"prefill_thread_work", t.prefill_thread_work},
          {"bf16_near_keys", t.bf16_near_keys},
          {"f32_near_keys", t.f32_near_keys}};
}

std::string decode_tuning_text(const DecodeTuning& t) {
  return "prefetch " + std::to_string(t.prefetch_blocks) + " block(s) ahead, a bfloat16 cache's rows " +
         std::to_string(t.bf16_near_keys) + " keys ahead into L1, a float32 cache's " +
         std::to_string(t.f32_near_keys) + " into L2; a second thread from " +
         std::to_string(t.decode_thread_work) + " (key, row) pairs a thread (decode), " +
         std::to_string(t.prefill_thread_work) + " multiply-adds a thread (prefill)";
}

std::string decode_tuning_line(const Json& t) {
  const Json& d = t["decode"];
  const std::string line = decode_tuning_text(
      {d["prefetch_blocks"].get<std::size_t>(), d["decode_thread_work"].get<std::size_t>(),
       d["prefill_thread_work"].get<std::size_t>(), d["bf16_near_keys"].get<std::size_t>(),
       d["f32_near_keys"].get<std::size_t>()});
  if (d["source"] == "tuned")
    return line + " (measured here by attn-cli tune" + (d.contains("note") ? "; " + d["note"].get<std::string>() : "") +
           ")";
  return line + " (built-in" + (d.contains("note") ? ": " + d["note"].get<std::string>() : std::string()) + ")";
}

std::string flash_tuning_line(const Json& t) {
  const std::string line = "Q K^T " + t["qk_kernel"].get<std::string>() + ", P V " + t["pv_kernel"].get<std::string>() +
                           ", query tile " + std::to_string(t["block_q"].get<std::size_t>());
  if (t["source"] == "tuned") return line + " (measured here by attn-cli tune: " + t["file"].get<std::string>() + ")";
  return line + " (built-in" + (t.contains("note") ? ", " + t["note"].get<std::string>() : std::string()) +
         "; attn-cli tune measures this machine's)";
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
  Json d = decode_tuning_fields(decode_tuning());
  d["source"] = loaded().decode_tuned ? "tuned" : "built-in";
  if (!loaded().decode_tuned)  // why: turned off, a file that was not used, or never measured
    d["note"] = !loaded().note.empty() ? loaded().note : "attn-cli tune has not measured decode on this CPU";
  else if (!loaded().decode_note.empty())
    d["note"] = loaded().decode_note;
  j["decode"] = d;
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

void save_flash_tuning(const TuneConfig& config, const TuneResult* flash, const DecodeTuneConfig& dc,
                       const DecodeTuneResult* decode) {
  const std::string path = tuning_file_for_writing();
  Json j = Json::object();
  if (flash) {
    j = flash_tuning_fields(flash->chosen);
    j["measured"] = {{"n", config.n},         {"heads", config.heads},         {"head_dim", config.head_dim},
                     {"threads", flash->threads}, {"builtin_ms", flash->builtin_ms}, {"staged_ms", flash->staged_ms}};
  } else if (loaded().tuned) {  // tune --only decode keeps the blockings the file gave
    j = flash_tuning_fields(flash_tuning());
    if (!loaded().measured.is_null()) j["measured"] = loaded().measured;
  }
  if (decode) {
    j["decode"] = decode_tuning_fields(decode->chosen);
    j["decode_measured"] = {{"kv", dc.kv},           {"heads", dc.heads},
                            {"head_dim", dc.head_dim}, {"threads", decode->threads},
                            {"builtin_ms", decode->builtin_ms}, {"staged_ms", decode->staged_ms}};
  } else if (loaded().decode_tuned) {  // tune --only flash keeps the decode part the file gave
    j["decode"] = loaded().decode;
    if (!loaded().decode_measured.is_null()) j["decode_measured"] = loaded().decode_measured;
  }
  if (!j.contains("qk_kernel") && !j.contains("decode")) return;  // nothing measured, nothing kept
  j["attn_cli"] = kVersion;
  j["cpu"] = cpu_facts().model;
  j["flash_isa"] = flash ? flash->isa : flash_isa();
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
