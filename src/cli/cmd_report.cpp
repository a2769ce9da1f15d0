// attn-cli report: one offline, interactive HTML page for a demo or train folder.
#include <filesystem>
#include <iostream>
#include <memory>

#include "attn/io/file_io.hpp"
#include "attn/render/report_html.hpp"
#include "commands.hpp"

namespace attn::cli {
namespace {

struct ReportOptions {
  std::string dir;
  std::string out;  // "" = DIR/report.html
};

void run_report_command(const ReportOptions& opts) {
  const std::string out = opts.out.empty() ? (std::filesystem::path(opts.dir) / "report.html").string() : opts.out;
  const std::string page = report_html(read_report_folder(opts.dir));
  write_file_atomically(out, page);
  std::cout << "Wrote " << out << " (" << (page.size() + 512) / 1024 << " KiB, self-contained: open it in any browser, offline)\n";
}

}  // namespace

void setup_report(CLI::App& app) {
  auto opts = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Write report.html for a demo or train folder: one self-contained, interactive page");
  cmd->add_option("dir", opts->dir, "a folder written by attn-cli demo (manifest.json) or attn-cli train (train.json)")
      ->required();
  cmd->add_option("-o,--out", opts->out, "where to write the page (default: DIR/report.html)");
  cmd->footer(R"(The page embeds its data, its pictures (as data: URLs), its script and its style: it makes no
request of any kind and works from file:// on a machine with no network.

Examples:
  attn-cli demo "The cat sat on the mat" --out cat-demo
  attn-cli report cat-demo
  attn-cli train --steps 20 --out train-quick
  attn-cli report train-quick --out train-quick.html
)");
  cmd->callback([opts] { run_report_command(*opts); });
}

}  // namespace attn::cli
