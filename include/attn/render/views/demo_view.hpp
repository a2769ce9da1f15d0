#pragma once
// `attn-cli demo`'s result shown: its terminal text and its folder (the pictures, manifest.json,
// report.html). It takes the result as demo.hpp hands it on, so that the command line includes
// none of the sections' headers; demo_pictures.hpp draws the sections, demo_text.cpp and
// demo_checks_text.cpp write their text.
#include <string>
#include <vector>

#include "attn/lessons/demo/demo.hpp"
#include "attn/render/draw/canvas.hpp"

namespace attn {

struct DemoPictureOptions {
  ImageOptions image;
  std::string colormap = "Blues";
};

struct DemoTextOptions {
  std::string colormap = "Blues";  // of the terminal heatmap
  bool no_color = false;           // plain numbers even on a terminal
  bool verbose = false;            // every table and check in full, not the short summary
};

// Everything the demo prints before its files: the tokens, the single head's weights and top-k,
// the trained or the model's heads, the checks. For standard output: prose is wrapped to its
// width (terminal_columns) and the heatmap coloured when it is a terminal, unless no_color.
std::string demo_text(const DemoResult& result, const DemoTextOptions& options);

// The pictures (demo_pictures.hpp), manifest.json (demo_manifest) and report.html into dir, each
// written atomically; returns them as the manifest lists them, report.html last. `ms` gets the
// pictures' time, for the terminal only: the files are byte-identical from run to run.
std::vector<Artifact> write_demo_folder(const DemoResult& result, const std::string& dir,
                                        const DemoPictureOptions& options, double& ms);

// What the folder holds, after it is written: one line, or with verbose every file.
std::string demo_written_text(const std::string& folder, const std::vector<Artifact>& artifacts, double ms,
                              const DemoTextOptions& options);

}  // namespace attn
