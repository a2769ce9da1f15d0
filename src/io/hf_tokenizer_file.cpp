#include "attn/io/hf_tokenizer_file.hpp"

#include <cctype>
#include <filesystem>
#include <map>

#include "attn/engine/core/error.hpp"
#include "attn/io/file_io.hpp"
#include "attn/io/gpt2_tokenizer_file.hpp"
#include "attn/io/json_io.hpp"
#include "bpe_vocab.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

// Where an error is: "DIR/tokenizer.json: pre_tokenizer.pretokenizers[1]".
struct Where {
  std::string path, field;
  Where at(const std::string& key) const { return {path, field.empty() ? key : field + "." + key}; }
  Where item(std::size_t i) const { return {path, field + "[" + std::to_string(i) + "]"}; }
  std::string str() const { return field.empty() ? path : path + ": " + field; }
};

[[noreturn]] void refuse(const Where& w, const std::string& what) { throw InputError(w.str() + ": " + what); }

// tokenizers writes absent options as null; a present one must have the right type.
bool flag(const Json& obj, const char* key, bool fallback, const Where& w) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) refuse(w.at(key), "expected true or false, got " + it->dump());
  return it->get<bool>();
}

std::string text(const Json& obj, const char* key, const Where& w) {
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) refuse(w.at(key), "expected a string");
  return it->get<std::string>();
}

const Json& array(const Json& obj, const char* key, const Where& w) {
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_array()) refuse(w.at(key), "expected an array");
  return *it;
}

std::string type_of(const Json& step, const Where& w) {
  if (!step.is_object()) refuse(w, "expected an object with a \"type\"");
  return text(step, "type", w);
}

HfNormalization read_normalizer(const Json& n, const Where& w) {
  if (n.is_null()) return HfNormalization::none;
  const std::string type = type_of(n, w);
  if (type == "NFC") return HfNormalization::nfc;
  if (type == "NFD") return HfNormalization::nfd;
  if (type == "NFKC") return HfNormalization::nfkc;
  if (type == "NFKD") return HfNormalization::nfkd;
  if (type != "Sequence")
    refuse(w, "normalizer \"" + type + "\" is not supported (attn-cli applies NFC, NFD, NFKC or NFKD)");
  const Json& steps = array(n, "normalizers", w);
  HfNormalization form = HfNormalization::none;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const HfNormalization f = read_normalizer(steps[i], w.at("normalizers").item(i));
    if (form != HfNormalization::none && f != HfNormalization::none && f != form)
      refuse(w, "more than one Unicode normalization form in one Sequence");
    if (f != HfNormalization::none) form = f;
  }
  return form;
}

// A String pattern is matched literally: every ASCII punctuation character escaped for ICU.
std::string literal_pattern(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 128 && !std::isalnum(static_cast<unsigned char>(c))) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

HfPreTokenStep read_split(const Json& step, const Where& w) {
  HfPreTokenStep s;
  s.kind = HfPreTokenStep::Kind::split;
  const auto pattern = step.find("pattern");
  if (pattern == step.end() || !pattern->is_object()) refuse(w.at("pattern"), "expected {\"Regex\": ...} or {\"String\": ...}");
  if (pattern->contains("Regex") && (*pattern)["Regex"].is_string()) {
    s.pattern = hf_regex_to_icu((*pattern)["Regex"].get<std::string>());
  } else if (pattern->contains("String") && (*pattern)["String"].is_string()) {
    s.pattern = literal_pattern((*pattern)["String"].get<std::string>());
  } else {
    refuse(w.at("pattern"), "expected {\"Regex\": ...} or {\"String\": ...}, got " + pattern->dump());
  }
  const std::string behavior = text(step, "behavior", w);
  if (behavior != "Isolated")
    refuse(w.at("behavior"), "\"" + behavior + "\" is not supported (attn-cli splits with \"Isolated\")");
  if (flag(step, "invert", false, w)) refuse(w.at("invert"), "an inverted Split is not supported");
  return s;
}

void read_pre_tokenizer(const Json& p, const Where& w, std::vector<HfPreTokenStep>& steps) {
  if (p.is_null()) return;
  const std::string type = type_of(p, w);
  if (type == "Sequence") {
    const Json& list = array(p, "pretokenizers", w);
    for (std::size_t i = 0; i < list.size(); ++i) read_pre_tokenizer(list[i], w.at("pretokenizers").item(i), steps);
  } else if (type == "Split") {
    steps.push_back(read_split(p, w));
  } else if (type == "Digits") {
    HfPreTokenStep s;
    s.kind = HfPreTokenStep::Kind::digits;
    s.individual_digits = flag(p, "individual_digits", false, w);
    steps.push_back(s);
  } else if (type == "ByteLevel") {
    HfPreTokenStep s;
    s.kind = HfPreTokenStep::Kind::byte_level;
    s.add_prefix_space = flag(p, "add_prefix_space", false, w);
    s.use_regex = flag(p, "use_regex", true, w);
    steps.push_back(s);
  } else {
    refuse(w, "pre-tokenizer \"" + type + "\" is not supported (attn-cli reads ByteLevel, Split, Digits and Sequence; "
              "Metaspace and Whitespace belong to tokenizers that are not byte-level BPE)");
  }
}

std::vector<HfAddedToken> read_added(const Json& list, const Where& w) {
  std::vector<HfAddedToken> added;
  if (list.is_null()) return added;
  if (!list.is_array()) refuse(w, "expected an array");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Where wi = w.item(i);
    const Json& t = list[i];
    if (!t.is_object()) refuse(wi, "expected an object");
    const auto id = t.find("id");
    if (id == t.end() || !id->is_number_integer() || id->get<std::int64_t>() < 0 ||
        id->get<std::int64_t>() >= std::int64_t(kMaxVocabTokens))
      refuse(wi.at("id"), "expected an integer in 0.." + std::to_string(kMaxVocabTokens - 1));
    if (flag(t, "single_word", false, wi)) refuse(wi.at("single_word"), "whole-word added tokens are not supported");
    added.push_back({id->get<TokenId>(), text(t, "content", wi), flag(t, "lstrip", false, wi),
                     flag(t, "rstrip", false, wi), flag(t, "special", false, wi)});
  }
  return added;
}

// TemplateProcessing's "single": the special tokens around $A.
void read_template(const Json& p, const Where& w, std::vector<TokenId>& prefix, std::vector<TokenId>& suffix) {
  const Json& single = array(p, "single", w);
  const auto specials = p.find("special_tokens");
  bool seen_text = false;
  for (std::size_t i = 0; i < single.size(); ++i) {
    const Where wi = w.at("single").item(i);
    const Json& piece = single[i];
    if (piece.contains("Sequence")) {
      if (seen_text) refuse(wi, "the text appears twice in the template");
      seen_text = true;
      continue;
    }
    if (!piece.contains("SpecialToken") || !piece["SpecialToken"].is_object())
      refuse(wi, "expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
    const std::string name = text(piece["SpecialToken"], "id", wi.at("SpecialToken"));
    if (specials == p.end() || !specials->is_object() || !specials->contains(name))
      refuse(w.at("special_tokens"), "no entry for \"" + name + "\"");
    const Where ws = w.at("special_tokens").at(name);
    for (const Json& id : array((*specials)[name], "ids", ws)) {
      if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() >= std::int64_t(kMaxVocabTokens))
        refuse(ws.at("ids"), "expected token ids, got " + id.dump());
      (seen_text ? suffix : prefix).push_back(id.get<TokenId>());
    }
  }
  if (!seen_text) refuse(w.at("single"), "the template has no {\"Sequence\": {\"id\": \"A\"}}");
}

// RobertaProcessing and BertProcessing: {"cls": ["<s>", 0], "sep": ["</s>", 2]} -> <s> $A </s>.
TokenId processor_token(const Json& p, const char* key, const Where& w) {
  const auto it = p.find(key);
  if (it == p.end() || !it->is_array() || it->size() != 2 || !(*it)[1].is_number_integer() ||
      (*it)[1].get<std::int64_t>() < 0 || (*it)[1].get<std::int64_t>() >= std::int64_t(kMaxVocabTokens))
    refuse(w.at(key), "expected [\"token\", id]");
  return (*it)[1].get<TokenId>();
}

void read_post_processor(const Json& p, const Where& w, std::vector<TokenId>& prefix, std::vector<TokenId>& suffix) {
  if (p.is_null()) return;
  const std::string type = type_of(p, w);
  if (type == "Sequence") {
    const Json& list = array(p, "processors", w);
    for (std::size_t i = 0; i < list.size(); ++i) read_post_processor(list[i], w.at("processors").item(i), prefix, suffix);
  } else if (type == "TemplateProcessing" || type == "RobertaProcessing" || type == "BertProcessing") {
    if (!prefix.empty() || !suffix.empty()) refuse(w, "a second template after the first");
    if (type == "TemplateProcessing") {
      read_template(p, w, prefix, suffix);
    } else {
      prefix.push_back(processor_token(p, "cls", w));
      suffix.push_back(processor_token(p, "sep", w));
    }
  } else if (type != "ByteLevel") {  // ByteLevel only adjusts offsets, never ids
    refuse(w, "post-processor \"" + type + "\" is not supported");
  }
}

std::vector<BpeMerge> read_model_merges(const Json& list, const Where& w, const detail::SymbolIds& ids) {
  detail::BpeMergeList merges;
  const std::string vocab_name = "model.vocab";
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Where wi = w.item(i);
    const Json& m = list[i];
    std::string left, right;
    if (m.is_string()) {  // "left right", as merges.txt writes it
      const std::string line = m.get<std::string>();
      const std::size_t space = line.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == line.size() || line.find(' ', space + 1) != std::string::npos)
        refuse(wi, "expected two tokens separated by one space, got \"" + line + "\"");
      left = line.substr(0, space), right = line.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {  // ["left", "right"]
      left = m[0].get<std::string>(), right = m[1].get<std::string>();
    } else {
      refuse(wi, "expected \"left right\" or [\"left\", \"right\"], got " + m.dump());
    }
    merges.add(detail::bpe_merge(ids, left, right, wi.str(), vocab_name.c_str()), wi.str(),
               "merge " + std::to_string(i), left + " " + right);
  }
  return std::move(merges.merges);
}

void read_model(const Json& model, const Where& w, HfTokenizerSpec& spec) {
  if (!model.is_object()) refuse(w, "expected an object");
  if (model.contains("type") && model["type"] != "BPE")
    refuse(w.at("type"), model["type"].dump() + ": attn-cli reads byte-level BPE tokenizers (Llama 3, Qwen2, SmolLM, "
                         "GPT-2), not WordPiece, WordLevel or Unigram");
  if (flag(model, "byte_fallback", false, w))
    refuse(w.at("byte_fallback"), "a BPE with byte fallback (SentencePiece's, as Llama 2 and Mistral 7B v0.1 ship) is "
                                  "not supported: attn-cli reads byte-level BPE (Llama 3, Qwen2, SmolLM, GPT-2)");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(key) && !model[key].is_null() && model[key] != "")
      refuse(w.at(key), model[key].dump() + " is not supported (byte-level BPE has none)");
  if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"] != 0)
    refuse(w.at("dropout"), "BPE dropout samples a different tokenization each run; expected null");
  detail::SymbolIds ids;
  const auto vocab = model.find("vocab");
  if (vocab == model.end()) refuse(w.at("vocab"), "missing");
  spec.bpe.symbols = detail::bpe_vocab_symbols(*vocab, w.at("vocab").str(), ids);
  spec.bpe.merges = read_model_merges(array(model, "merges", w), w.at("merges"), ids);
  spec.ignore_merges = flag(model, "ignore_merges", false, w);
}

HfTokenizerSpec read_spec(const Json& doc, const std::string& path) {
  const Where w{path, ""};
  if (!doc.is_object()) refuse(w, "expected a JSON object (Hugging Face tokenizers' format)");
  HfTokenizerSpec spec;
  read_model(doc.contains("model") ? doc["model"] : Json(), w.at("model"), spec);
  spec.normalization = read_normalizer(doc.value("normalizer", Json()), w.at("normalizer"));
  read_pre_tokenizer(doc.value("pre_tokenizer", Json()), w.at("pre_tokenizer"), spec.pre_tokenizer);
  bool byte_level = false;
  for (const HfPreTokenStep& s : spec.pre_tokenizer) byte_level |= s.kind == HfPreTokenStep::Kind::byte_level;
  if (!byte_level)
    refuse(w.at("pre_tokenizer"), "no ByteLevel step: attn-cli reads byte-level BPE tokenizers (Llama 3, Qwen2, "
                                  "SmolLM, GPT-2)");
  spec.added = read_added(doc.value("added_tokens", Json()), w.at("added_tokens"));
  read_post_processor(doc.value("post_processor", Json()), w.at("post_processor"), spec.prefix, spec.suffix);
  return spec;
}

}  // namespace

HfTokenizer read_hf_tokenizer(const std::string& dir) {
  const std::string path = model_file(dir, "tokenizer.json");
  const Json doc = read_json(path);
  try {
    return HfTokenizer(read_spec(doc, path));
  } catch (const InputError& e) {
    const std::string what = e.what();
    if (what.rfind(path, 0) == 0) throw;
    throw InputError(path + ": " + what);  // what the engine refuses (a byte without a token, a bad pattern)
  }
}

bool has_tokenizer_files(const std::string& dir) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(fs::path(dir) / "tokenizer.json", ec)) || has_gpt2_tokenizer_files(dir);
}

std::unique_ptr<SubwordTokenizer> read_folder_tokenizer(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(dir + ": no such folder");
  if (fs::exists(fs::symlink_status(fs::path(dir) / "tokenizer.json", ec)))
    return std::make_unique<HfTokenizer>(read_hf_tokenizer(dir));
  if (has_gpt2_tokenizer_files(dir)) return std::make_unique<Gpt2Tokenizer>(read_gpt2_tokenizer(dir));
  if (fs::exists(fs::path(dir) / "tokenizer.model", ec))
    throw InputError(dir + "/tokenizer.model: a SentencePiece model, which attn-cli does not read; a folder with "
                     "tokenizer.json (Hugging Face's tokenizers format) works, or give token ids");
  throw InputError(dir + ": no tokenizer (tokenizer.json, or vocab.json and merges.txt); give token ids instead");
}

}  // namespace attn
