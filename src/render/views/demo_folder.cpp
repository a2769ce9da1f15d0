// The demo folder (demo_view.hpp): the pictures, then manifest.json listing them, then
// report.html reading both, as `attn-cli report` reads a finished folder.
#include "attn/render/views/demo_view.hpp"

#include <chrono>
#include <filesystem>

#include "attn/io/file_io.hpp"
#include "attn/render/report/report_html.hpp"
#include "attn/render/views/demo_pictures.hpp"

namespace attn {

std::vector<Artifact> write_demo_folder(const DemoResult& r, const std::string& dir, const DemoPictureOptions& pictures,
                                        double& ms) {
  // Timings go to the terminal only: the files must be byte-identical from run to run.
  const auto start = std::chrono::steady_clock::now();
  std::vector<Artifact> artifacts = write_demo_pictures(r, dir, pictures);
  ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  artifacts.push_back({"report.html", "report",
                       "one offline page: heatmaps with hover, heads, temperature, masks, lines view, flash replay"});
  const std::string manifest = (std::filesystem::path(dir) / "manifest.json").string();
  // Indented for a reader opening it in an editor, unless that makes it huge: indentation puts
  // every number of a long sentence's weights on its own line.
  const Json m = demo_manifest(r, artifacts);
  const std::string compact = m.dump();
  write_file_atomically(manifest, (compact.size() < (1u << 20) ? m.dump(2) : compact) + "\n");
  // The report reads the staged folder as `attn-cli report` reads a finished one.
  write_file_atomically((std::filesystem::path(dir) / "report.html").string(), report_html(read_report_folder(dir)));
  return artifacts;
}

}  // namespace attn
