#pragma once
// The flash tuning `attn-cli tune` measured on this machine, kept in a per-user cache file
// ($XDG_CACHE_HOME/attn-cli/flash-tuning.json, else ~/.cache/attn-cli/...) and made the
// kernel's default at start-up. It is used only where it was measured: the same CPU model,
// flash ISA and attn-cli version. ATTN_CLI_TUNING=off runs the built-in blockings instead.
// Every tuning gives the same bits, so the file changes speed, never a result.
#include <optional>
#include <string>

#include "attn/io/json_io.hpp"
#include "attn/lessons/measure/tune.hpp"
#include "attn/lessons/measure/tune_decode.hpp"

namespace attn::cli {

// Where the file is, or nothing when neither XDG_CACHE_HOME nor HOME is set.
std::optional<std::string> tuning_file_path();

// In main, before any command: sets the file's tuning when it was measured on this machine. A
// file that cannot be read as one is ignored with a warning; one from another CPU or version
// is ignored quietly (doctor says so).
void load_flash_tuning();

// {qk_kernel, pv_kernel, block_q, source: "built-in" | "tuned", file, note, decode: {prefetch_blocks,
// decode_thread_work, prefill_thread_work, bf16_near_keys, f32_near_keys, source, note}}: what the flash kernel
// runs and why, for doctor and bench --json. decode's note says when tune has not measured it
// here, or which of its settings a file that tune wrote is without (those run the built-in).
Json tuning_json();

// {qk_kernel, pv_kernel, block_q}: a tuning as the file, tune --json and doctor write it.
Json flash_tuning_fields(const FlashTuning& tuning);
// {prefetch_blocks, decode_thread_work, prefill_thread_work, bf16_near_keys, f32_near_keys}: the same for
// DecodeTuning.
Json decode_tuning_fields(const DecodeTuning& tuning);

// What the decode path and small prefill run, in words; and that with where it came from (the
// tuning_json() object: measured by tune here, or built-in and why), for bench and doctor.
std::string decode_tuning_text(const DecodeTuning& tuning);
std::string decode_tuning_line(const Json& tuning);
// The prefill's blockings and query tile from the same object, with where they came from.
std::string flash_tuning_line(const Json& tuning);

// Makes the file's folder and returns the file's path: InputError when no cache folder is known
// or it cannot be made (tune calls it before it measures anything).
std::string tuning_file_for_writing();

// Writes the file (atomically: a reader never sees half of it): what this run measured (a null
// pointer: that part was not measured), and for the part it did not, what the file held and
// this process runs.
void save_flash_tuning(const TuneConfig& config, const TuneResult* flash, const DecodeTuneConfig& decode_config,
                       const DecodeTuneResult* decode);

// Removes the file; false when there was none.
bool remove_flash_tuning();

}  // namespace attn::cli
