#pragma once
// `attn-cli demo` as a library call, seen from the command line: the options, the size of a run
// before it runs, and the run itself as a handle that the renderer reads (render/views/demo_view.hpp).
// What the run computes lives in its sections, each with its own run and JSON, and
// demo_result.hpp puts them together:
//
//   tokens and heatmaps   sentence -> tokens -> seeded embeddings -> seeded projections ->
//                         single-head self-attention -> top-k per query (Vaswani et al. 2017,
//                         3.2.1), and the same under a causal mask (section 5)   demo_seeded.cpp
//   multi-head            a seeded multi-head run, RoPE in it with --rope          demo_seeded.cpp
//   checks                the flash kernel against the naive sdpa on the same Q, K, V, split-KV's
//                         merge, the multi-head run through a KV cache              demo_checks.hpp
//   trained heads, model  a trained toy model beside the seeded run, or with --model a toy or
//                         GPT-2 folder's own heads instead of seeded projections    demo_model.hpp
//   positions, variance, complexity, efficient attention: the concepts/ lessons at the demo's size
//
// This header names none of them, so that a caller which only hands the result on (cmd_demo.cpp)
// includes none of their headers.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attn/lessons/concepts/position_kind.hpp"
#include "attn/engine/positions/rope.hpp"
#include "attn/engine/text/tokenize.hpp"

namespace attn {

struct ToyModel;        // engine/models/toy_model.hpp
struct Gpt2Model;       // engine/models/gpt2_model.hpp
class Gpt2Tokenizer;    // engine/text/gpt2_bpe.hpp
struct DecoderModel;    // engine/models/decoder_model.hpp
class SubwordTokenizer;  // engine/text/subword_tokenizer.hpp
struct DemoResult;      // demo_result.hpp: every section's numbers

struct DemoConfig {
  std::string sentence = "Thinking strictly is hard";
  std::uint64_t seed = 42;
  std::size_t d_model = 64;
  std::size_t top_k = 2;
  std::size_t heads = 4;  // of the multi-head run; must divide d_model
  std::size_t max_tokens = kDefaultMaxTokens;
  std::optional<RopeStyle> rope;  // RoPE (base 10000) on q and k of the multi-head run, and a causal run beside
  // What x carries of positions in every run: none (the default: attention alone cannot see order)
  // or sinusoidal (x + PE). "rope" means config.rope is set (--positions rope).
  PositionKind positions = PositionKind::none;
  // A trained toy model: d_model and heads are its own, words map to ids in order of first
  // appearance (forward.hpp), and RoPE is refused (the toy learned positions of its own).
  std::shared_ptr<const ToyModel> model;
  // Or a GPT-2 folder (io/gpt2_model_file.hpp): the sentence is GPT-2's BPE tokens, the
  // attention the model's own (its layers' LayerNorm, biases and MLPs included).
  std::shared_ptr<const Gpt2Model> gpt2;
  std::shared_ptr<const Gpt2Tokenizer> gpt2_tokenizer;
  // Or a Llama, Mistral or Qwen2 folder (io/decoder_model_file.hpp): the sentence is its
  // tokenizer.json's tokens, the attention its own (RMSNorm, RoPE, grouped-query heads, window).
  std::shared_ptr<const DecoderModel> decoder;
  std::shared_ptr<const SubwordTokenizer> decoder_tokenizer;
  std::string model_path;  // how the manifest and the pictures name it
  // Without model or gpt2: a trained toy model shown beside the seeded projections (the demo's
  // default is the one shipped in the binary, io/shipped_model.hpp), and how to name it.
  std::shared_ptr<const ToyModel> trained;
  std::string trained_name;
};

// The sentence a model is shown when none is given (demo_model.hpp says what it is shown).
inline const char* kDemoModelSentence = "the cat sat on the mat . the cat sat on the mat";

// config.gpt2 and gpt2_tokenizer from a GPT-2 folder (io/gpt2_model_file.hpp's is_gpt2_folder),
// config.decoder and decoder_tokenizer from a Llama, Mistral or Qwen2 folder (its tokenizer.json
// required), else config.model from a toy model folder (attn-cli train); config.model_path = dir.
// InputError for a folder that is none of them.
void use_model_folder(DemoConfig& config, const std::string& dir);
// config.trained: the toy model shipped in the binary (io/shipped_model.hpp), and its name.
void use_shipped_model(DemoConfig& config);

// InputError for a configuration run_demo refuses (heads not dividing d_model, RoPE on an odd
// head dim, RoPE with a model), so that a caller can check before it creates anything.
void check_demo_config(const DemoConfig& config);

// What run_demo's cost grows with, known before it runs (tokenizing is cheap): the token count
// L, the model width D and head dim d, and how many [L, L] attention maps it forms and draws (every head of
// every layer shown, the single head, causal, RoPE). A caller estimates memory and time from
// it and refuses a run past its budget up front.
struct DemoSize {
  std::size_t tokens, d_model, head_dim, maps;
};
DemoSize demo_size(const DemoConfig& config);

// demo_result.hpp's run_demo, for a caller that reads none of the result itself. InputError
// also for a sentence a model cannot read (more tokens than its context, more distinct words
// than its vocabulary).
std::shared_ptr<const DemoResult> run_demo_shared(const DemoConfig& config);

// manifest.json as docs/contracts.md describes it; artifacts lists the files written beside it.
struct Artifact {
  std::string path, kind, title;  // path relative to the output folder
};

}  // namespace attn
