// attn-cli attention-conv: a convolution is multi-head attention with relative-position heads,
// computed (Cordonnier, Loukas & Jaggi 2020), and what the textbook sentence leaves out.
#include <memory>

#include "attn/io/shipped_model.hpp"
#include "attn/lessons/concepts/attention_conv.hpp"
#include "attn/io/number_format.hpp"
#include "attn/render/draw/text_table.hpp"
#include "attn/render/views/attention_conv_picture.hpp"
#include "commands.hpp"
#include "experiment_output.hpp"

namespace attn::cli {
namespace {

struct ConvOptions {
  ConvLessonConfig config;
  OutputOptions output;
  PlotOptions plots;
  bool json = false;
};

std::string offset_text(const std::vector<long>& o) {
  std::string s;
  for (std::size_t a = 0; a < o.size(); ++a) s += (a ? "," : "") + std::to_string(o[a]);
  return o.size() > 1 ? "(" + s + ")" : s;
}

std::string case_text(const char* name, const ConvCase& c, const std::string& shape) {
  std::string offsets;
  for (std::size_t h = 0; h < c.heads; ++h) offsets += (h ? " " : "") + offset_text(c.offsets[h]);
  return std::string(name) + " (" + shape + "): " + std::to_string(c.heads) + " heads, head h attending only to offset " +
         offsets + ".\n  max |attention - convolution| = " + format_g(c.max_abs_diff, 3) +
         (c.max_abs_diff <= 1e-12 ? " (the same to float64 round-off)" : " (NOT the same)") +
         "\n  with " + std::to_string(c.heads - 1) + " heads (the last left out): max difference " +
         format_g(c.one_head_short, 3) + ": one tap short, no longer the convolution\n";
}

std::string conv_text(const ConvLesson& l) {
  const ConvLessonConfig& c = l.config;
  std::string out =
      "A convolution is multi-head self-attention (Cordonnier, Loukas & Jaggi 2020), computed here.\n"
      "Each head h scores key j by a relative position: 0 when j - i is its offset, -inf otherwise, so its "
      "softmax row is one-hot; W_v = I and W_o^h = the kernel's tap h. Kernel " + std::to_string(c.kernel) +
      ", " + std::to_string(c.channels) + " channels in, " + std::to_string(c.out_channels) + " out, zero padding, seed " +
      std::to_string(c.seed) + ".\n\n";
  out += case_text("1-D", l.one_d, std::to_string(c.length) + " positions");
  out += case_text("2-D", l.two_d, std::to_string(c.height) + " x " + std::to_string(c.width) + " image");
  out += "\nWhat the sentence \"a CNN is a special case of attention\" leaves out:\n"
         "  - it takes one head per tap: K heads in 1-D, K^2 in 2-D (above: one fewer and it fails);\n"
         "  - the heads need relative-position scores; attention on content alone is permutation-equivariant "
         "and cannot know where a neighbour is (attn-cli demo --positions none shows it);\n"
         "  - a convolution's offsets are fixed, a trained head's depend on what it reads:\n";
  if (l.trained) {
    const TrainedOffsets& t = *l.trained;
    std::string offsets;
    for (long o : t.argmax_offset) offsets += (offsets.empty() ? "" : " ") + std::to_string(o);
    out += "    the trained toy model's head L" + std::to_string(t.layer) + "H" + std::to_string(t.head) +
           " on \"the cat sat on a mat\" twice puts its largest weight at offsets " + offsets + " (query 1 on): " +
           std::to_string(t.distinct) + " different offsets, chosen by content, not one fixed tap.\n";
  }
  return out;
}

void run_attention_conv(ConvOptions o) {
  if (o.json) o.output.format = "json";
  o.config.keep_head_weights = !o.plots.dir.empty();  // the heads picture draws them
  check_conv_lesson(o.config);
  PreparedPlots plots = prepare_plots(o.plots);
  const ToyModel model = shipped_toy_model();
  const ConvLesson l = run_conv_lesson(o.config, &model);
  emit(o.output, conv_lesson_json(l), [&](TableFormat) { return wrap_words(conv_text(l), 100, "    "); });
  if (!plots.folder) return;
  std::vector<NamedFigure> figures{{"attention_conv_heads", conv_heads_figure(l)},
                                   {"attention_conv_outputs", conv_outputs_figure(l)}};
  if (l.trained) figures.push_back({"attention_conv_trained", conv_trained_figure(*l.trained)});
  write_plots(plots, o.output, figures);
}

}  // namespace

void setup_attention_conv(CLI::App& app) {
  auto opts = std::make_shared<ConvOptions>();
  ConvLessonConfig& c = opts->config;
  CLI::App* cmd = app.add_subcommand(
      "attention-conv", "A convolution is multi-head attention with relative-position heads, computed (Cordonnier et al. 2020)");
  cmd->add_option("--kernel", c.kernel, "kernel size K (odd): K heads in 1-D, K^2 in 2-D")->capture_default_str();
  cmd->add_option("--length", c.length, "1-D: positions")->capture_default_str();
  cmd->add_option("--height", c.height, "2-D: image rows")->capture_default_str();
  cmd->add_option("--width", c.width, "2-D: image columns")->capture_default_str();
  cmd->add_option("--channels", c.channels, "input channels")->capture_default_str();
  cmd->add_option("--out-channels", c.out_channels, "output channels")->capture_default_str();
  cmd->add_option("--seed", c.seed, "seed of x and the kernel")->capture_default_str();
  add_output_options(cmd, opts->output, {"text", "json"});
  cmd->add_flag("--json", opts->json, "print the JSON (the same as --format json): x, the kernel taps, both outputs");
  add_plot_options(cmd, opts->plots);
  cmd->footer(R"(The attention runs through the engine's attention door (float64 reference); the
convolution is the textbook loop. They must agree to float64 round-off (<= 1e-12).

Pictures written into --plots DIR (the 1-D case, --length at most 64): attention_conv_heads
(each head's one-hot [L, L] weights), attention_conv_outputs (the attention output beside the
convolution's) and attention_conv_trained (the toy model's head, each query's largest weight
outlined: its offset changes with content).

Examples:
  attn-cli attention-conv
  attn-cli attention-conv --kernel 5 --length 16
  attn-cli attention-conv --json
  attn-cli attention-conv --plots conv-plots
)");
  cmd->callback([opts] { run_attention_conv(*opts); });
}

}  // namespace attn::cli
