#pragma once
// The report: one self-contained, interactive HTML page per run (report.html). The page
// (src/render/report/report_template.html, embedded at build time) draws everything in the browser
// from JSON embedded in it: the heatmaps with hover, head, layer, temperature and mask
// controls, the lines view, the flash replay, the training curve, the experiments, and every
// picture of the folder as a data: URL. Nothing is fetched: it opens from file:// offline.
#include <string>
#include <vector>

#include "attn/io/json_io.hpp"

namespace attn {

struct ReportPicture {
  std::string path, kind, title;  // path relative to the folder; kind as in manifest.json
  std::string bytes;              // the file's contents (PNG or SVG)
};

struct ReportContent {
  std::string title, summary;
  Json manifest;  // a demo folder's manifest.json (with the scaled scores and the replay), or null
  Json train;     // a train folder's train.json, or null
  Json replay;    // a flash replay on its own (flash --replay), or null
  std::vector<ReportPicture> pictures;
};

// The page, with the content embedded as JSON (every '<' escaped, so no "</script>" can end
// the script early) and the pictures as base64 data: URLs.
std::string report_html(const ReportContent& content);

// A demo folder (manifest.json: the pictures it lists, one format per picture, PNG first) or a
// train folder (train.json: its pictures) as report content. Anything else -> InputError.
ReportContent read_report_folder(const std::string& dir);

// Standard base64 (RFC 4648, with padding): how the pictures travel inside the page.
std::string base64(const std::string& bytes);

}  // namespace attn
