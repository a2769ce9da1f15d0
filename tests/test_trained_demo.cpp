// The learned heads in the default demo (issue: a learner's first picture shows training, not
// only random projections): the toy model shipped inside attn-cli, what `demo` prints and draws
// of it, and that the model is what its documented `attn-cli train` command writes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "attn/engine/core/error.hpp"
#include "attn/io/shipped_model.hpp"
#include "attn/io/toy_model_file.hpp"
#include "attn/render/draw/canvas.hpp"
#include "attn/render/draw/heatmap.hpp"
#include "picture_support.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;

namespace {

std::size_t lines_of(const std::string& text) { return std::size_t(std::count(text.begin(), text.end(), '\n')); }

bool orange(const Rgb8& c) { return c.r > 200 && c.g > 90 && c.g < 140 && c.b < 40; }

// Every parameter of two toy models, bit for bit.
bool same_weights(ToyModel a, ToyModel b) {
  const std::vector<NamedTensor> pa = toy_parameters(a), pb = toy_parameters(b);
  if (pa.size() != pb.size()) return false;
  for (std::size_t k = 0; k < pa.size(); ++k)
    if (pa[k].name != pb[k].name || *pa[k].tensor != *pb[k].tensor) return false;
  return true;
}

}  // namespace

TEST_CASE("heatmap: outlined cells get an orange frame, the others none") {
  HeatmapSpec s;
  s.weights = Tensor2{{1.0f, 0.0f, 0.0f}, {0.5f, 0.5f, 0.0f}, {0.2f, 0.7f, 0.1f}};
  s.vmax = 1.0;
  s.outlined = {{2, 1}};
  const double scale = 2;
  const Figure f = heatmap_figure(s);
  const DecodedPng png = DecodedPng::from_bytes(render_png(f, scale));
  REQUIRE(png.ok());
  const CellGrid& g = f.grids.at(0);
  // Just inside the left edge of a cell, half-way down: the frame's colour, or the cell's.
  auto edge = [&](std::size_t i, std::size_t j) { return png.pixel(g.cell_x(j) + 1.2, g.cell_y(i) + g.cell_h / 2, scale); };
  CHECK(orange(edge(2, 1)));
  CHECK_FALSE(orange(edge(2, 0)));
  CHECK_FALSE(orange(edge(1, 1)));
  HeatmapSpec outside = s;
  outside.outlined = {{3, 0}};
  CHECK_THROWS_AS(heatmap_figure(outside), InputError);
}

TEST_CASE("shipped model: the bytes inside attn-cli are data/models/induction") {
  CHECK(same_weights(shipped_toy_model(), read_toy_model(data_path("models/induction"))));
  const ToyConfig c = shipped_toy_model().config;
  CHECK(c.layers == 2);
  CHECK(c.heads == 4);
}

TEST_CASE("cli: the default demo shows the trained heads beside the random ones, in 30 lines") {
  Scratch s;
  const CliResult r = run_cli("demo --out d", "", s.dir.string());
  REQUIRE(r.code == 0);
  CAPTURE(r.out);
  CHECK(lines_of(r.out) <= 30);
  CHECK(r.out.find("Untrained") != std::string::npos);
  CHECK(r.out.find("Trained (") != std::string::npos);
  CHECK(r.out.find("the sentence twice, as no word repeats") != std::string::npos);
  CHECK(r.out.find("trained_heads.png") != std::string::npos);
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) CHECK(line.size() <= 100 + 20);  // wrapped prose (UTF-8 bytes aside)

  const Json m = read_json(s / "d/manifest.json");
  const Json& t = m["results"]["trained"];
  REQUIRE(t["shown"] == true);
  CHECK(t["repeated"] == true);
  // "Thinking strictly is hard" twice: each second copy reads the key after its first copy.
  CHECK(t["tokens"].size() == 8);
  const Json& cells = t["head_summary"]["induction_cells"];
  REQUIRE(cells.size() == 4);
  for (std::size_t k = 0; k < 4; ++k) {
    CHECK(cells[k]["query"] == 4 + k);
    CHECK(cells[k]["key"] == 1 + k);
  }
  // The shown heads are the kinds the summary's rule names, and their panels show them: the
  // induction head's mean weight on the outlined cells is its score, over the bar.
  CHECK(t["induction_head"]["kind"] == "induction");
  CHECK(t["prev_token_head"]["kind"] == "previous-token");
  const Json& w = t["induction_head"]["weights"];
  double on_cells = 0;
  for (const Json& c : cells) on_cells += w[c["query"].get<std::size_t>()][c["key"].get<std::size_t>()].get<double>();
  const double bar = t["head_summary"]["bars"]["induction"]["bar"].get<double>();
  CHECK(on_cells / 4 >= bar);
  bool listed = false;
  for (const Json& a : m["artifacts"]) listed = listed || a["path"] == "trained_heads.png";
  CHECK(listed);

  const CliResult random = run_cli("demo --random-only --out r", "", s.dir.string());
  REQUIRE(random.code == 0);
  CHECK(random.out.find("Trained") == std::string::npos);
  CHECK_FALSE(std::filesystem::exists(s.dir / "r/trained_heads.png"));
  CHECK_FALSE(read_json(s / "r/manifest.json")["results"].contains("trained"));
  CHECK(run_cli("demo --random-only --model x").code == 2);
}

TEST_CASE("shipped model: `attn-cli train --no-timing` writes it again") {
  Scratch s;
  REQUIRE(run_cli("train --no-timing --out t", "", s.dir.string()).code == 0);
  const Json provenance = read_json(data_path("models/induction/provenance.json"));
  CHECK(provenance["command"] == std::string(kShippedModelCommand));
  const Json doctor = Json::parse(run_cli("doctor --json").out);
  const Json& on = provenance["trained_on"];
  // The same kernels and the same compiler (clang's code for the sanitizer build rounds
  // differently from gcc's Release build on the same CPU).
  const bool same_kernels = doctor["flash_isa"] == on["flash_isa"] && doctor["blas"]["core"] == on["blas_core"] &&
                            doctor["compiler"] == on["compiler"];
  CAPTURE(doctor.dump());
  const Json mine = read_json(s / "t/train.json")["final"], shipped = provenance["final_heads"];
  REQUIRE(mine.size() == shipped.size());
  if (same_kernels) {
    // The kernels it was trained with: bit for bit.
    CHECK(read_text(s / "t/model/model.safetensors") == read_text(data_path("models/induction/model.safetensors")));
    CHECK(read_text(s / "t/model/config.json") == read_text(data_path("models/induction/config.json")));
    CHECK(mine == shipped);
  } else {
    // Another flash ISA, BLAS core or compiler rounds float32 differently, and 1000 steps of Adam
    // carry it on: the same kind for every head, each score within 0.1.
    MESSAGE("other kernels than the shipped model's: comparing kinds and scores, not bytes");
    for (std::size_t k = 0; k < mine.size(); ++k) {
      CAPTURE(k);
      CHECK(mine[k]["kind"] == shipped[k]["kind"]);
      for (const char* key : {"prev_token_score", "induction_score"})
        CHECK(std::fabs(mine[k][key].get<double>() - shipped[k][key].get<double>()) <= 0.1);
    }
  }
}

TEST_CASE("one story per head: forward, demo --model and its report name the same kind for every head") {
  Scratch s;
  const std::string model = data_path("models/induction");
  const std::string text = "'the cat sat on the mat . the cat sat on the mat'";
  REQUIRE(run_cli("forward --model " + model + " " + text + " --out f", "", s.dir.string()).code == 0);
  REQUIRE(run_cli("demo --model " + model + " " + text + " --out d", "", s.dir.string()).code == 0);
  const Json forward = read_json(s / "f/head_summary.json");
  const Json manifest = read_json(s / "d/manifest.json");
  const Json& demo = manifest["results"]["model"];
  REQUIRE(forward["heads"].size() == 8);
  REQUIRE(demo["head_summary"]["heads"].size() == 8);
  std::size_t induction = 0;
  for (std::size_t k = 0; k < 8; ++k) {
    CAPTURE(k);
    const Json &a = forward["heads"][k], &b = demo["head_summary"]["heads"][k];
    CHECK(a["kind"] == b["kind"]);
    CHECK(a["induction"].get<double>() == doctest::Approx(b["induction"].get<double>()).epsilon(1e-6));
    CHECK(demo["scores"][k]["kind"] == a["kind"]);  // the terminal's and the manifest's table
    induction += a["kind"] == "induction";
  }
  CHECK(induction >= 1);
  // The heatmap's head is one the rule calls induction, titled so.
  const Json& shown = manifest["results"]["single_head"];
  CHECK(shown["kind"] == "induction");
  // The report draws from that manifest: its page carries the same head_summary.
  REQUIRE(run_cli("report d --out r.html", "", s.dir.string()).code == 0);
  const std::string page = read_text(s / "r.html");
  CHECK(page.find("kindOf(l, h)") != std::string::npos);
  CHECK(page.find(demo["head_summary"]["rule"].get<std::string>()) != std::string::npos);
}

TEST_CASE("cli: the demo's efficient-attention section runs on the trained induction head, else the seeded one") {
  Scratch s;
  REQUIRE(run_cli("demo --out d", "", s.dir.string()).code == 0);
  const Json m = read_json(s / "d/manifest.json");
  const Json& a = m["results"]["approximations"];
  const Json& t = m["results"]["trained"];
  // The same head the trained_heads picture calls the induction head, on the same tokens.
  CHECK(a["head"] == "the trained model's induction head (layer " + std::to_string(t["induction_head"]["layer"].get<int>()) +
                         ", head " + std::to_string(t["induction_head"]["head"].get<int>()) + ")");
  CHECK(a["tokens"] == t["tokens"]);
  const Json& exact = a["runs"][0]["weights"];
  const Json& induction = t["induction_head"]["weights"];
  for (std::size_t i = 0; i < 8; ++i)
    for (std::size_t j = 0; j < 8; ++j) CHECK(exact[i][j].get<double>() == doctest::Approx(induction[i][j].get<double>()).epsilon(1e-5));
  std::vector<std::string> families;
  for (const Json& r : a["runs"]) families.push_back(r["family"]);
  CHECK(families == std::vector<std::string>{"exact", "window", "sparse", "linear", "performer"});
  // 8 tokens: window and stride ceil(sqrt(8)) = 3. The second "is" [6] reads "hard" [3], 3 back:
  // outside a 3-key window (distances 0..2), so the window cannot give the induction answer.
  CHECK(a["window"] == 3);
  CHECK(a["runs"][1]["weights"][6][3].get<double>() == 0);
  CHECK(exact[6][3].get<double>() > 0.5);
  CHECK(a["runs"][1]["output_error"].get<double>() > 0.5);
  bool listed = false;
  for (const Json& x : m["artifacts"]) listed = listed || (x["path"] == "approximations.png" && x["kind"] == "heatmap");
  CHECK(listed);

  REQUIRE(run_cli("demo --random-only --out r", "", s.dir.string()).code == 0);
  const Json r = read_json(s / "r/manifest.json");
  CHECK(r["results"]["approximations"]["head"] == "the seeded single head");
  CHECK(r["results"]["approximations"]["runs"][0]["weights"] == r["results"]["causal"]["weights"]);
}
