// attn-cli forward: run a model folder (a trained toy model, or GPT-2 from Hugging Face) on a
// sequence; its attention and predictions.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "attn/engine/core/error.hpp"
#include "attn/engine/text/printable_text.hpp"
#include "attn/engine/text/tokenize.hpp"
#include "attn/io/file_io.hpp"
#include "attn/io/decoder_model_file.hpp"
#include "attn/io/gpt2_model_file.hpp"
#include "attn/io/hf_config.hpp"
#include "attn/io/hf_tokenizer_file.hpp"
#include "attn/lessons/models/decoder_lessons.hpp"
#include "attn/render/views/decoder_lessons_picture.hpp"
#include "attn/io/toy_model_file.hpp"
#include "attn/lessons/models/forward.hpp"
#include "attn/lessons/models/gpt2_forward.hpp"
#include "attn/lessons/measure/memory_policy.hpp"
#include "attn/io/number_format.hpp"
#include "attn/render/report/report_table.hpp"
#include "attn/render/draw/terminal_heatmap.hpp"
#include "attn/render/draw/text_table.hpp"
#include "attn/render/views/model_pictures.hpp"
#include "commands.hpp"
#include "model_flag.hpp"
#include "image_flags.hpp"

namespace attn::cli {
namespace {

struct ForwardOptions {
  std::string model, tokens, text, out;
  bool json = false;
  std::optional<std::size_t> layer;
  ImageFlags image;
};

// Each position's most likely next token, its probability, and the word it stands for.
void print_predictions(const ToyTokens& t, const ToyForward& f) {
  std::map<std::int32_t, std::string> word_of;
  for (std::size_t i = 0; i < t.ids.size(); ++i) word_of.emplace(t.ids[i], t.labels[i]);
  Table table{{"position", "token", "id", "predicted next id", "p", "which is"}, {}};
  const std::size_t V = f.logits.shape(1);
  for (std::size_t i = 0; i < t.ids.size(); ++i) {
    std::size_t best = 0;
    double sum = 0;
    for (std::size_t v = 0; v < V; ++v) best = f.logits(i, v) > f.logits(i, best) ? v : best;
    for (std::size_t v = 0; v < V; ++v) sum += std::exp(double(f.logits(i, v)) - double(f.logits(i, best)));
    const auto word = word_of.find(std::int32_t(best));
    table.rows.push_back({std::to_string(i), t.labels[i], std::to_string(t.ids[i]), std::to_string(best),
                          format_fixed(1.0 / sum, 3), word == word_of.end() ? "" : "'" + word->second + "'"});
  }
  std::cout << render_table(table, TableFormat::text);
}

// Each head's scores and kind on the terminal (head_summary.hpp states the rule).
void print_head_summary(const HeadSummary& s, std::ostream& out) {
  if (s.tokens < 2) {
    out << "Heads: not classified: one token attends only to itself, so no score can be measured "
           "(head_summary.json lists every head as untested).\n";
    return;
  }
  auto bar = [](const char* name, const std::optional<KindBar>& b) {
    return std::string(name) + " " + format_fixed(b->bar, 3) + " (uniform head: " + format_fixed(b->uniform, 3) + ")";
  };
  out << wrap_words("Heads, classified by scores on these tokens: " + std::string(kHeadKindRule) + " (" + kHeadBarRule +
                       "); " + induction_scope(s) +
                       (s.induction_measured() ? "." : "; give the text twice to score it.") + " Bars at " +
                       std::to_string(s.tokens) + " tokens: " + bar("previous-token", s.previous_token_bar) + ", " +
                       bar("first-token", s.first_token_bar) +
                       (s.induction_bar ? ", " + bar("induction", s.induction_bar) : std::string()) + ":",
                   std::min<std::size_t>(terminal_columns(STDOUT_FILENO), 100))
      << "\n";
  Table table{{"layer", "head", "previous-token", "first-token", "induction", "entropy", "kind"}, {}};
  auto cell = [](const std::optional<double>& x) { return x ? format_fixed(*x, 3) : std::string("-"); };
  for (const HeadScores& h : s.heads) {
    table.rows.push_back({std::to_string(h.layer), std::to_string(h.head), cell(h.previous_token),
                          cell(h.first_token), cell(h.induction), cell(h.entropy), h.kind});
  }
  out << render_table(table, TableFormat::text);
}

// --out DIR: heads.png (the model view: every layer x head), with --layer L heads_layer<L>.png
// (the head view of one layer) and head_summary.json (every head's scores and kind).
void write_forward_pictures(const ForwardOptions& o, OutputFolder& folder, const ToyTokens& tokens,
                            const std::vector<Tensor3>& attention, const HeadSummary& summary, std::ostream& log,
                            std::vector<NamedFigure> extra = {}, std::vector<Mask2> visible = {},
                            const std::string& masking = "causal") {
  const std::size_t n = tokens.ids.size();
  // The text in the title, as demo's heads.png has it (cut past 60 columns): a folder of pictures
  // must say what they were run on.
  const std::string on = o.text.empty() ? "token ids " + title_quote(o.tokens) : title_quote(o.text);
  const bool classified = n >= 2;  // one token: every head untested, no kind in the titles
  ModelViewSpec spec{attention, tokens.labels, classified ? &summary : nullptr, "Every head of " + o.model + ": " + on,
                     count_of(n, "token") + " · rows: query (attending), columns: key (attended to) · " + masking +
                         (classified ? " · each panel titled with the kind its scores give, " + induction_scope(summary) +
                                         " (head_summary.json)"
                                     : " · one token attends only to itself: no head can be classified"),
                     o.image.colormap};
  spec.visible = std::move(visible);
  std::vector<NamedFigure> figures{{"heads", model_view_figure(spec)}};
  if (o.layer) {
    spec.title = "Layer " + std::to_string(*o.layer) + " of " + o.model + ": its heads and their mean, " + on;
    figures.push_back({"heads_layer" + std::to_string(*o.layer), head_view_figure(spec, *o.layer)});
  }
  {
    Json j = head_summary_json(summary);
    j["model"] = o.model;
    j["token_texts"] = tokens.texts;
    j["token_ids"] = tokens.ids;
    write_file_atomically((std::filesystem::path(folder.staging()) / "head_summary.json").string(), j.dump(2) + "\n");
  }
  for (NamedFigure& f : extra) figures.push_back(std::move(f));
  save_pictures(figures, folder, image_options(o.image), log);
  log << "Wrote " << printable_text(folder.final_path("head_summary.json")) << "\n";
}

// A Llama-family folder's own lessons (decoder_lessons.hpp): attention sinks from 3 tokens,
// grouped-query heads from 2; lessons.json beside the pictures, a line each on `log`.
std::vector<NamedFigure> decoder_lesson_pictures(const ForwardOptions& o, const DecoderModel& model,
                                                 const ToyTokens& tokens, const DecoderForward& f, OutputFolder& folder,
                                                 std::ostream& log) {
  std::vector<NamedFigure> figures;
  Json lessons = Json::object();
  if (tokens.ids.size() >= 2) {
    const GqaLesson g = gqa_lesson(model.config, f);
    lessons["grouped_query"] = gqa_lesson_json(g);
    figures.push_back({"gqa", gqa_figure(g, o.model, o.image.colormap)});
    log << "Grouped-query heads: " << model.config.heads << " query heads share " << model.config.kv_heads
        << " key/value heads; KV cache " << g.bytes_gqa << " bytes a token in bfloat16, against " << g.bytes_mha
        << " for multi-head (gqa.png: how alike the heads that share attend).\n";
  }
  if (tokens.ids.size() >= 2) {
    const ModelRopeLesson r = model_rope_lesson(model.config, f);
    lessons["rope"] = model_rope_lesson_json(r);
    figures.push_back({"rope_bands", rope_bands_figure(r, o.model, o.image.colormap)});
    figures.push_back({"rope_distance", rope_distance_figure(r, o.model)});
  }
  if (tokens.ids.size() >= 3) {
    const SinkLesson s = sink_lesson(model, tokens.ids, f);
    lessons["attention_sinks"] = sink_lesson_json(s);
    figures.push_back({"sinks", sinks_figure(s, o.model, o.image.colormap)});
    double top = 0;
    std::size_t top_layer = 0, top_head = 0;
    for (std::size_t l = 0; l < s.first_token.size(); ++l)
      for (std::size_t h = 0; h < s.first_token[l].size(); ++h)
        if (s.first_token[l][h] > top) top = s.first_token[l][h], top_layer = l, top_head = h;
    log << "Attention sinks: layer " << top_layer << " head " << top_head << " puts " << format_fixed(top, 3)
        << " of its weight on token 0 (an even head: " << format_fixed(s.uniform, 3) << "). Under a " << s.window
        << "-key window the next token's KL from the full model is " << format_g(s.kl_evicted, 3)
        << " nats with token 0 evicted, " << format_g(s.kl_kept, 3) << " with it kept (sinks.png).\n";
  }
  if (!lessons.empty())
    write_file_atomically((std::filesystem::path(folder.staging()) / "lessons.json").string(), lessons.dump(2) + "\n");
  return figures;
}

void check_layer(const ForwardOptions& o, std::size_t layers) {
  if (!o.layer) return;
  if (o.out.empty()) throw InputError("--layer: draws the head view into --out DIR; give --out too");
  if (*o.layer >= layers)
    throw InputError("--layer: expected 0.." + std::to_string(layers - 1) + " (the model has " +
                     std::to_string(layers) + " layers), got " + std::to_string(*o.layer));
}

// The top-5 next tokens of the last position, as a table.
void print_next_tokens(const Tensor2& logits, const SubwordTokenizer* tokenizer) {
  std::cout << "Most likely next tokens (softmax of the last position's logits):\n";
  Table table{{"rank", "id", "token", "p"}, {}};
  const std::vector<NextToken> next = top_next_tokens(logits, tokenizer, 5);
  for (std::size_t r = 0; r < next.size(); ++r) {
    table.rows.push_back({std::to_string(r + 1), std::to_string(next[r].id), "[" + printable_text(next[r].label) + "]",
                          format_fixed(next[r].probability, 4)});
  }
  std::cout << render_table(table, TableFormat::text);
}

// The tokens of --tokens or of the text, with the folder's tokenizer when it has one. --tokens
// needs none: a folder of weights alone (config.json, model.safetensors) runs, its tokens shown
// as ids. A text's ids must have embedding rows: a tokenizer larger than the model is refused.
ToyTokens folder_tokens(const ForwardOptions& o, std::size_t vocab, std::unique_ptr<SubwordTokenizer>& tokenizer) {
  if (o.tokens.empty() || has_tokenizer_files(o.model)) tokenizer = read_folder_tokenizer(o.model);
  if (!o.tokens.empty()) return gpt2_tokens_from_list(tokenizer.get(), o.tokens, vocab);
  return model_tokens_from_text(*tokenizer, o.text, vocab);
}

// The labels of the tokens after the folder's name: "7 tokens: [The] [ cat] ...".
void print_token_labels(const ToyTokens& tokens) {
  std::cout << count_of(tokens.ids.size(), "token") << ":";
  for (const std::string& t : tokens.labels) std::cout << " [" << printable_text(t) << "]";
  std::cout << "\n";
}

// What a sliding window hides from the last token of this prompt.
void print_window_reach(const DecoderConfig& c, std::size_t n) {
  if (c.sliding_window == 0) return;
  const std::string layers = c.window_first_layer ? " on layers " + std::to_string(c.window_first_layer) + " and up" : "";
  if (n <= c.sliding_window) {
    std::cout << "Sliding window of " << c.sliding_window << " keys" << layers << ": this prompt fits in it, every token "
              << "sees every earlier one.\n";
    return;
  }
  std::cout << "Sliding window of " << c.sliding_window << " keys" << layers << ": the last token sees tokens "
            << n - c.sliding_window << ".." << n - 1 << "; tokens 0.." << n - c.sliding_window - 1
            << " reach it only through earlier layers (each layer passes information one window further).\n";
}

// A Llama, Mistral or Qwen2 folder (Hugging Face's layout), its text read by its tokenizer.json.
void run_decoder_forward(const ForwardOptions& o) {
  const auto read_start = std::chrono::steady_clock::now();
  const DecoderModel model = read_decoder_model(o.model);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - read_start).count();
  const DecoderConfig& c = model.config;
  check_layer(o, c.layers);
  std::unique_ptr<SubwordTokenizer> tokenizer;
  const ToyTokens tokens = folder_tokens(o, c.vocab, tokenizer);
  reuse_freed_memory();
  const auto start = std::chrono::steady_clock::now();
  const DecoderForward f = decoder_forward(model, tokens.ids, 0, /*keep_qkv=*/!o.out.empty());
  const double forward_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::optional<OutputFolder> folder;  // checked before the output, written as a whole after it
  if (!o.out.empty()) folder.emplace(prepare_picture_dir(o.out));
  std::ostream& log = o.json ? std::cerr : std::cout;
  if (o.json) {
    std::cout << forward_json(tokens, f.attention, f.logits).dump() << "\n";
  } else {
    std::cout << decoder_family_name(c.family) << " model " << printable_text(o.model) << ": " << c.layers << " layers x "
              << c.heads << " query heads sharing " << c.kv_heads << " key/value heads, head dim " << c.head_dim
              << ", width " << c.hidden << ", vocab " << c.vocab
              << (c.sliding_window ? ", sliding window " + std::to_string(c.sliding_window) : std::string()) << ". ";
    print_token_labels(tokens);
    print_window_reach(c, tokens.ids.size());
    print_next_tokens(f.logits, tokenizer.get());
    // Times go to the terminal only (never into --json or files): they change from run to run.
    const double gflop = decoder_forward_flops(c, tokens.ids.size()) / 1e9;
    std::cout << "Time: reading the folder " << format_fixed(load_s, 3) << " s; the forward pass "
              << format_fixed(forward_s, 3) << " s for " << format_fixed(gflop, 2) << " GFLOP ("
              << format_fixed(gflop / std::max(forward_s, 1e-9), 1) << " GFLOP/s; compare attn-cli bench --sgemm 2048)\n";
  }
  if (!folder) return;
  const HeadSummary summary = summarize_heads(tokens.ids, f.attention);
  print_head_summary(summary, log);
  std::vector<Mask2> visible;
  std::string masking = "causal";
  if (c.sliding_window > 0) {  // the band each layer's queries see, the rest hatched
    for (std::size_t l = 0; l < c.layers; ++l) visible.push_back(decoder_visible(c, l, tokens.ids.size()));
    masking = "causal, a sliding window of " + std::to_string(c.sliding_window) + " keys" +
              (c.window_first_layer ? " from layer " + std::to_string(c.window_first_layer) + " on" : std::string()) +
              " (hatched beyond it)";
  }
  write_forward_pictures(o, *folder, tokens, f.attention, summary, log,
                         decoder_lesson_pictures(o, model, tokens, f, *folder, log), std::move(visible), masking);
  if (tokens.ids.size() >= 2) log << "Wrote " << printable_text(folder->final_path("lessons.json")) << "\n";
}

// GPT-2 from a Hugging Face folder: its own tokenizer, its top-5 next tokens on the terminal.
void run_gpt2_forward(const ForwardOptions& o) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const Gpt2Model model = read_gpt2_model(o.model);
  check_layer(o, model.config.n_layer);
  std::unique_ptr<SubwordTokenizer> tokenizer;
  const ToyTokens tokens = folder_tokens(o, model.config.vocab_size, tokenizer);
  reuse_freed_memory();
  const auto loaded = Clock::now();
  const Gpt2Forward f = gpt2_forward(model, tokens.ids);
  const auto done = Clock::now();
  std::optional<OutputFolder> folder;  // checked before the output, written as a whole after it
  if (!o.out.empty()) folder.emplace(prepare_picture_dir(o.out));
  const std::optional<HeadSummary> summary =
      folder ? std::optional<HeadSummary>(summarize_heads(tokens.ids, f.attention)) : std::nullopt;
  std::ostream& log = o.json ? std::cerr : std::cout;
  if (o.json) {
    std::cout << forward_json(tokens, f.attention, f.logits).dump() << "\n";
  } else {
    const Gpt2Config& c = model.config;
    std::cout << "GPT-2 model " << printable_text(o.model) << ": " << c.n_layer << " layers x " << c.n_head << " heads, width "
              << c.n_embd << ", vocab " << c.vocab_size << ". ";
    print_token_labels(tokens);
    print_next_tokens(f.logits, tokenizer.get());
    // Times go to the terminal only (never into --json or files): they change from run to run.
    const double load_s = std::chrono::duration<double>(loaded - start).count();
    const double forward_s = std::chrono::duration<double>(done - loaded).count();
    const double gflop = gpt2_forward_flops(model.config, tokens.ids.size()) / 1e9;
    std::cout << "Time: reading the folder " << format_fixed(load_s, 3) << " s; the forward pass "
              << format_fixed(forward_s, 3) << " s for " << format_fixed(gflop, 2) << " GFLOP ("
              << format_fixed(gflop / std::max(forward_s, 1e-9), 1) << " GFLOP/s; compare attn-cli bench --sgemm 2048)\n";
  }
  if (!folder) return;
  print_head_summary(*summary, log);
  write_forward_pictures(o, *folder, tokens, f.attention, *summary, log);
}

void run_forward_command(const ForwardOptions& o) {
  check_colormap(o.image.colormap);
  if (o.tokens.empty() == o.text.empty()) throw InputError("forward: give either --tokens I,J,... or TEXT");
  if (is_gpt2_folder(o.model)) return run_gpt2_forward(o);
  if (is_decoder_folder(o.model)) return run_decoder_forward(o);
  const ToyModel model = read_toy_model(o.model);
  check_layer(o, model.config.layers);
  const ToyTokens tokens = o.tokens.empty() ? toy_tokens_from_words(token_texts(tokenize(o.text)), model.config.vocab)
                                            : toy_tokens_from_list(o.tokens, model.config.vocab);
  const ToyForward f = run_toy_forward(model, tokens);
  std::optional<OutputFolder> folder;  // checked before the output, written as a whole after it
  if (!o.out.empty()) folder.emplace(prepare_picture_dir(o.out));
  if (o.json) std::cout << forward_json(tokens, f).dump() << "\n";
  else {
    std::cout << "Model " << o.model << ": " << model.config.layers << " layers x " << model.config.heads
              << " heads, vocab " << model.config.vocab << ". Predictions (the argmax of the logits):\n";
    print_predictions(tokens, f);
  }
  if (!folder) return;
  const HeadSummary summary = summarize_heads(tokens.ids, f.attention);
  std::ostream& log = o.json ? std::cerr : std::cout;
  print_head_summary(summary, log);
  write_forward_pictures(o, *folder, tokens, f.attention, summary, log);
}

}  // namespace

void setup_forward(CLI::App& app) {
  auto opts = std::make_shared<ForwardOptions>();
  CLI::App* cmd = app.add_subcommand("forward", "Run a model folder on a sequence: attention and logits");
  add_model_option(cmd, opts->model,
                  "a model folder: written by attn-cli train, or a GPT-2 folder from Hugging Face "
                  "(config.json, model.safetensors, vocab.json, merges.txt)")->required();
  cmd->add_option("--tokens", opts->tokens, "comma-separated token ids, e.g. 3,17,5");
  cmd->add_option("text", opts->text,
                  "text: the folder's own BPE tokens (tokenizer.json, or GPT-2's vocab.json + merges.txt) for a "
                  "GPT-2, Llama, Mistral or Qwen2 folder; for a toy model each distinct word "
                  "gets the next id, in order of first appearance");
  cmd->add_flag("--json", opts->json, "print {tokens, attention [layer][head][n][n], logits [n][vocab]}");
  cmd->add_option("--out", opts->out,
                  "folder for heads.png (the model view: every head of every layer, one row per layer, one "
                  "colour scale), head_summary.json (each head's previous-token, first-token, induction and "
                  "entropy scores, the kind they give, and the bars a score must reach at this length; every head "
                  "untested with one token), with --layer, heads_layer<L>.png, and for a Llama, Mistral or Qwen2 "
                  "folder sinks.png (each head's weight on token 0, and a sliding window with and without it), "
                  "gqa.png (how alike the query heads sharing a key/value head attend), rope_bands.png and "
                  "rope_distance.png (which rotation speeds each head uses, and its score by distance with and "
                  "without RoPE) and lessons.json");
  cmd->add_option("--layer", opts->layer, "with --out: also draw the head view of layer L (0-based): its heads, "
                  "larger, and their mean");
  add_image_flags(cmd, opts->image, true);
  cmd->footer(R"(Examples:
  attn-cli train --steps 20 --out train-quick
  attn-cli forward --model train-quick/model --tokens 3,17,5,3,17
  attn-cli forward --model train-quick/model "the cat sat on the mat . the cat sat on the mat" --out fwd
  attn-cli forward --model train-quick/model --tokens 1,2,3,1,2 --json
  attn-cli forward --model data/gpt2_tiny "the cat sat on the mat"
  attn-cli forward --model data/gpt2_tiny --tokens 72,101,108 --json
  attn-cli forward --model data/gpt2_tiny "the cat sat on the mat" --out gpt2-views --layer 1
  attn-cli forward --model data/llama_tiny --tokens 1,5,9,3,1,5,9
  attn-cli forward --model data/llama_tiny "The cat sat on the mat"
Pictures with --out: heads.png is the model view (a row per layer, a panel per head, each titled
with its kind), heads_layer<L>.png the head view of --layer L. Past 26 tokens (70 in the head view)
the panels label every k-th token and say so in the subtitle; head_summary.json and --json have every number.
A real GPT-2 (nothing is downloaded): --model ~/.cache/huggingface/hub/models--gpt2/snapshots/<hash>,
or any folder written by save_pretrained (config.json, model.safetensors, vocab.json, merges.txt).
A Llama, Mistral or Qwen2 folder (config.json, and model.safetensors or the shards its
model.safetensors.index.json names; F32, BF16 or F16) reads its text with its tokenizer.json,
as Hugging Face's tokenizers does (Llama 3 adds <|begin_of_text|>). data/llama_tiny is a random
2-layer Llama with grouped-query heads and a toy byte-level vocabulary.
)");
  cmd->callback([opts] { run_forward_command(*opts); });
}

}  // namespace attn::cli
