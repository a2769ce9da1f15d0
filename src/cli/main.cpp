// attn-cli: wires the subcommands (src/cli/cmd_*.cpp) and maps failures to exit codes:
//   0 success, 1 runtime failure (I/O, ...), 2 bad usage or input (one "error:" line).
#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

#include "attn/engine/core/error.hpp"
#include "attn/engine/platform/machine.hpp"
#include "attn/engine/text/printable_text.hpp"
#include "attn/io/interrupt_cleanup.hpp"
#include "attn/version.hpp"
#include "commands.hpp"
#include "machine_facts.hpp"
#include "number_flags.hpp"
#include "tuning_file.hpp"

namespace {

// A closed standard stream (`attn-cli ... >&-`) would hand its number to the next file opened,
// and what was meant for stdout would land in that file. Each closed one gets /dev/null; the
// return value says whether stdout was among them.
bool guard_closed_standard_streams() {
  bool stdout_closed = false;
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    stdout_closed = stdout_closed || fd == STDOUT_FILENO;
    const int null = ::open("/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY);
    if (null >= 0 && null != fd) {  // open takes the lowest free number: fd itself
      ::dup2(null, fd);
      ::close(null);
    }
  }
  return stdout_closed;
}

// Output still buffered for stdout meets a full disk or a closed pipe only at the end: a
// command whose output did not all arrive must not exit 0.
int exit_code_after_stdout(int code, bool stdout_closed) {
  errno = 0;
  std::cout.flush();
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  if (stdout_closed) {
    std::cerr << "error: cannot write to stdout: it is closed\n";
    return 1;
  }
  if (!flushed || !std::cout || std::ferror(stdout)) {
    std::cerr << "error: cannot write to stdout" << (err ? std::string(": ") + std::strerror(err) : "") << "\n";
    return 1;
  }
  return code;
}

// The app's name, version, examples and every subcommand (main only wires them).
void configure_app(CLI::App& app) {
  app.name("attn-cli");
  app.set_version_flag("--version", std::string("attn-cli ") + attn::kVersion);
  app.require_subcommand(1);
  app.footer(R"(Examples:
  attn-cli demo "The cat sat on the mat"
  attn-cli tokenize "我喜欢深度学习"
  attn-cli attend --input data/examples/attend_small.json
  attn-cli mha --input data/examples/mha_gqa.json
  attn-cli heatmap --input data/examples/heatmap_tokens.json
  attn-cli mask --kind causal --size 5
  attn-cli rope
  attn-cli generate "The cat sat on the mat" --prefill 2
  attn-cli variance --dk 8,64,512 --samples 2000
  attn-cli rank-collapse --layers 8 --plots rank-plots
  attn-cli linear-attention "The cat sat on the mat"
  attn-cli attention-conv --kernel 5
  attn-cli complexity --n 1024,4096 --d-model 4096 --heads 32
  attn-cli roofline --n 512,2048 --kv 1024,16384
  attn-cli bench --n 512 --heads 2 --repeat 1
  attn-cli doctor
  attn-cli tune
  attn-cli train --steps 20 --out train-quick
Run 'attn-cli SUBCOMMAND --help' for each subcommand's input and examples.
)");

  attn::cli::setup_attend(app);
  attn::cli::setup_mha(app);
  attn::cli::setup_tokenize(app);
  attn::cli::setup_demo(app);
  attn::cli::setup_bench(app);
  attn::cli::setup_heatmap(app);
  attn::cli::setup_mask(app);
  attn::cli::setup_rope(app);
  attn::cli::setup_positional(app);
  attn::cli::setup_generate(app);
  attn::cli::setup_train(app);
  attn::cli::setup_forward(app);
  attn::cli::setup_flash(app);
  attn::cli::setup_report(app);
  attn::cli::setup_variance(app);
  attn::cli::setup_temperature(app);
  attn::cli::setup_complexity(app);
  attn::cli::setup_roofline(app);
  attn::cli::setup_explain(app);
  attn::cli::setup_pitfalls(app);
  attn::cli::setup_rank_collapse(app);
  attn::cli::setup_linear_attention(app);
  attn::cli::setup_attention_conv(app);
  attn::cli::setup_tradeoff(app);
  attn::cli::setup_doctor(app);
  attn::cli::setup_tune(app);
  attn::cli::check_number_flags(app);
}

// CLI11 would only say "A subcommand is required" for an unknown name: say which ones exist.
void check_subcommand_name(const CLI::App& app, int argc, char** argv) {
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    std::string names;  // listed from the app itself, so a new subcommand needs no edit here
    for (const CLI::App* sub : app.get_subcommands({})) {
      known = known || sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) throw attn::InputError(std::string("unknown subcommand '") + argv[1] +
                                       "' (expected one of: " + names + ")");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool stdout_closed = guard_closed_standard_streams();
  attn::remove_temporaries_on_signal();  // Ctrl-C leaves no staging folder or temporary file
  attn::cli::give_openblas_the_right_core();
  attn::rest_openblas_threads();  // idle, they spin for 0.1 s: none of it on the engine's cores
  attn::cli::load_flash_tuning();
  using attn::printable_text;  // every "error:" below echoes user text: keep it one line
  CLI::App app{"attn-cli: learn attention by running it for real and seeing what happens.\n"
               "Masks follow PyTorch SDPA's convention: 1/true = the query MAY attend to the key."};
  configure_app(app);

  try {
    check_subcommand_name(app, argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return exit_code_after_stdout(app.exit(e), stdout_closed);  // --help, --version
    std::string what = e.what();
    if (what.empty()) what = e.get_name();
    std::cerr << "error: " << printable_text(what) << " (see attn-cli --help)\n";
    return 2;
  } catch (const attn::InputError& e) {
    std::cerr << "error: " << printable_text(e.what()) << "\n";
    return 2;
  } catch (const attn::RuntimeError& e) {
    std::cerr << "error: " << printable_text(e.what()) << "\n";
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the user gave that cannot be used (a link loop, a name too long, no permission):
    // bad input, in one line naming it. Anything else the filesystem says is the machine's.
    const std::errc c = static_cast<std::errc>(e.code().value());
    const bool users = c == std::errc::too_many_symbolic_link_levels || c == std::errc::filename_too_long ||
                       c == std::errc::permission_denied || c == std::errc::not_a_directory ||
                       c == std::errc::no_such_file_or_directory || c == std::errc::is_a_directory;
    std::cerr << "error: " << printable_text(e.path1().string() + ": " + e.code().message()) << "\n";
    return users ? 2 : 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory (is the input size possible?)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << printable_text(e.what()) << "\n";
    return 1;
  }
  return exit_code_after_stdout(0, stdout_closed);
}
