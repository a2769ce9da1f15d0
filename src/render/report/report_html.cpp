#include "attn/render/report/report_html.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "attn/engine/core/error.hpp"
#include "attn/io/file_io.hpp"
#include "attn/lessons/models/train.hpp"
#include "attn/render/views/model_pictures.hpp"

namespace attn {
namespace detail {
extern const char* const kReportTemplate;  // report_template.html, embedded by CMake
}

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxPictureBytes = std::size_t(64) << 20;
constexpr std::size_t kMaxJsonBytes = std::size_t(256) << 20;

std::string extension_of(const std::string& path) { return fs::path(path).extension().string(); }

std::string mime_of(const std::string& path) {
  return extension_of(path) == ".svg" ? "image/svg+xml" : "image/png";
}

// The JSON inside <script type="application/json">: '<' becomes \u003c (valid JSON, read
// back as '<' by JSON.parse), so neither "</script>" nor "<!--" in a token can break the page.
std::string embedded_json(const Json& j) {
  const std::string text = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + 64);
  for (char c : text) {
    if (c == '<') out += "\\u003c";
    else out += c;
  }
  return out;
}

// The folder's own files only (read_file_in_folder): the page embeds what it reads and is then
// shared, so a link in the folder to a file elsewhere (~/secret) is refused, never embedded.
Json read_folder_json(const fs::path& dir, const std::string& name) {
  try {
    return Json::parse(read_file_in_folder(dir.string(), name, kMaxJsonBytes));
  } catch (const Json::exception& e) {
    throw InputError((dir / name).string() + ": not valid JSON (" + e.what() + ")");
  }
}

std::string read_picture(const fs::path& dir, const std::string& rel) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(dir / rel, ec)))
    throw InputError((dir / rel).string() + ": listed in manifest.json but missing");
  return read_file_in_folder(dir.string(), rel, kMaxPictureBytes);
}

// A manifest's pictures, one format per picture: the PNG of a stem written in both formats.
std::vector<ReportPicture> manifest_pictures(const fs::path& dir, const Json& manifest) {
  std::vector<ReportPicture> pictures;
  if (!manifest.contains("artifacts") || !manifest["artifacts"].is_array())
    throw InputError((dir / "manifest.json").string() + ": expected an \"artifacts\" list");
  std::map<std::string, bool> has_png;
  for (const Json& a : manifest["artifacts"]) {
    if (!a.is_object() || !a.contains("path") || !a["path"].is_string())
      throw InputError((dir / "manifest.json").string() + ": an artifact without a \"path\"");
    const std::string path = a["path"];
    if (extension_of(path) == ".png") has_png[fs::path(path).replace_extension().string()] = true;
  }
  for (const Json& a : manifest["artifacts"]) {
    const std::string path = a["path"];
    const std::string ext = extension_of(path);
    if (ext != ".png" && ext != ".svg") continue;  // report.html itself, JSON
    if (path.find("..") != std::string::npos || fs::path(path).is_absolute())
      throw InputError((dir / "manifest.json").string() + ": artifact path \"" + path + "\" leaves the folder");
    if (ext == ".svg" && has_png.count(fs::path(path).replace_extension().string())) continue;
    pictures.push_back({path, a.value("kind", ""), a.value("title", ""), read_picture(dir, path)});
  }
  return pictures;
}

// Every picture in a folder without a manifest, by name.
std::vector<ReportPicture> folder_pictures(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string ext = e.path().extension().string();
    // Not is_regular_file(), which follows links: a linked picture (even a link to itself, which
    // status() cannot follow) is listed, and refused by read_picture.
    std::error_code ec;
    if (!e.is_directory(ec) && (ext == ".png" || ext == ".svg")) names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  std::vector<ReportPicture> pictures;
  for (const std::string& n : names) {
    const std::string stem = fs::path(n).replace_extension().string();
    if (extension_of(n) == ".svg" && std::find(names.begin(), names.end(), stem + ".png") != names.end()) continue;
    pictures.push_back({n, "", stem, read_picture(dir, n)});
  }
  return pictures;
}

// A weight at 4 decimals: the page draws it; train.json and the checkpoint keep it whole.
double rounded(double x) { return std::round(x * 1e4) / 1e4; }

// The shown sequence's attention at up to kMaxSnapshots logged steps (evenly spaced, first and
// last included), from the run's checkpoint: the heads as training grows them, for the page's
// step slider. Null when the folder has no checkpoint.
constexpr std::size_t kMaxSnapshots = 12;
Json train_snapshots(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / "checkpoint.safetensors", ec) || !fs::is_directory(dir / "model", ec)) return nullptr;
  TrainOptions o;
  const TrainRun run = read_train_run(dir.string(), o);
  const std::size_t n = run.shown_attention.size();
  std::vector<std::size_t> picks;
  for (std::size_t k = 0; k < std::min(n, kMaxSnapshots); ++k) {
    const std::size_t at = n <= kMaxSnapshots ? k : k * (n - 1) / (kMaxSnapshots - 1);
    if (picks.empty() || picks.back() != at) picks.push_back(at);
  }
  Json steps = Json::array(), attention = Json::array(), tokens = Json::array();
  for (std::int32_t id : run.shown_sequence) tokens.push_back(std::to_string(id));
  for (std::size_t k : picks) {
    steps.push_back(run.points[k].step);
    Json layers = Json::array();
    for (const Tensor3& a : run.shown_attention[k]) {
      Json heads = Json::array();
      for (std::size_t h = 0; h < a.shape(0); ++h) {
        Json rows = Json::array();
        for (std::size_t i = 0; i < a.shape(1); ++i) {
          Json row = Json::array();
          for (std::size_t j = 0; j < a.shape(2); ++j) row.push_back(rounded(a(h, i, j)));
          rows.push_back(row);
        }
        heads.push_back(rows);
      }
      layers.push_back(heads);
    }
    attention.push_back(layers);
  }
  return {{"about", "the attention of one held-out sequence (token ids) at logged steps, every layer and head, causal"},
          {"tokens", tokens}, {"steps", steps}, {"attention", attention}};
}

}  // namespace

std::string base64(const std::string& bytes) {
  static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const unsigned v = (unsigned char)bytes[i] << 16 | (unsigned char)bytes[i + 1] << 8 | (unsigned char)bytes[i + 2];
    out += digits[v >> 18], out += digits[(v >> 12) & 63], out += digits[(v >> 6) & 63], out += digits[v & 63];
  }
  if (i + 1 == bytes.size()) {
    const unsigned v = (unsigned char)bytes[i] << 16;
    out += digits[v >> 18], out += digits[(v >> 12) & 63], out += "==";
  } else if (i + 2 == bytes.size()) {
    const unsigned v = (unsigned char)bytes[i] << 16 | (unsigned char)bytes[i + 1] << 8;
    out += digits[v >> 18], out += digits[(v >> 12) & 63], out += digits[(v >> 6) & 63], out += '=';
  }
  return out;
}

std::string report_html(const ReportContent& c) {
  Json pictures = Json::array();
  for (const ReportPicture& p : c.pictures) {
    pictures.push_back({{"path", p.path}, {"kind", p.kind}, {"title", p.title},
                        {"src", "data:" + mime_of(p.path) + ";base64," + base64(p.bytes)}});
  }
  // The tokens as the pictures label them: a whitespace-only GPT-2 token (" ", "\n") is "␣" or
  // "↵", not an empty chip (model_pictures.hpp's visible_token_labels, the one rule for both).
  Json token_labels = Json::array();
  if (c.manifest.is_object() && c.manifest.contains("tokens") && c.manifest["tokens"].is_array()) {
    std::vector<std::string> tokens;
    for (const Json& t : c.manifest["tokens"]) tokens.push_back(t.is_string() ? t.get<std::string>() : t.dump());
    token_labels = visible_token_labels(tokens);
  }
  const Json data = {{"title", c.title}, {"summary", c.summary}, {"manifest", c.manifest},
                     {"train", c.train}, {"replay", c.replay}, {"pictures", pictures},
                     {"token_labels", token_labels}};
  std::string page = detail::kReportTemplate;
  const std::string marker = "{{ATTN_REPORT_DATA}}";
  const std::size_t at = page.find(marker);
  if (at == std::string::npos) throw RuntimeError("report template: no data marker");
  return page.replace(at, marker.size(), embedded_json(data));
}

ReportContent read_report_folder(const std::string& dir_text) {
  const fs::path dir(dir_text);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError("report: " + dir_text + " is not a folder" + (ec ? " (" + ec.message() + ")" : ""));
  ReportContent c;
  if (fs::exists(fs::symlink_status(dir / "manifest.json", ec))) {
    c.manifest = read_folder_json(dir, "manifest.json");
    if (!c.manifest.is_object() || !c.manifest.contains("tokens") || !c.manifest.contains("results") ||
        !c.manifest["results"].is_object())
      throw InputError((dir / "manifest.json").string() + ": not a demo manifest (expected \"tokens\" and \"results\")");
    const std::string sentence = c.manifest.value("sentence", "");
    c.title = "attn-cli demo: \u201c" + sentence + "\u201d";
    c.summary = "Everything below comes from this folder's manifest.json (seed " +
                c.manifest.value("seed", Json(0)).dump() + ") and its pictures, written by attn-cli demo.";
    c.pictures = manifest_pictures(dir, c.manifest);
    return c;
  }
  if (fs::exists(fs::symlink_status(dir / "train.json", ec))) {
    c.train = read_folder_json(dir, "train.json");
    if (!c.train.is_object() || !c.train.contains("steps") || !c.train["steps"].is_array() ||
        c.train["steps"].empty() || !c.train.contains("train"))
      throw InputError((dir / "train.json").string() + ": not a train.json (expected \"train\" and \"steps\")");
    c.title = "attn-cli train: " + c.train["train"].value("task", std::string("?"));
    c.summary = "Everything below comes from this folder's train.json and its pictures, written by attn-cli train.";
    c.pictures = folder_pictures(dir);
    c.train["snapshots"] = train_snapshots(dir);
    return c;
  }
  throw InputError("report: " + dir_text + " holds neither manifest.json (attn-cli demo) nor train.json (attn-cli train)");
}

}  // namespace attn
