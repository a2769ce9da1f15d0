// tokenizer.json's byte-level BPE pipeline (engine/text/hf_tokenizer.hpp) and its reader
// (io/hf_tokenizer_file.hpp), on vocabularies small enough to follow by hand. The pipeline on
// whole tokenizer.json files of each family is checked against an independent Python reference
// by scripts/check_hf_tokenizer.py (CTest: hf_tokenizer_*_vs_reference).
#include <doctest/doctest.h>

#include <fstream>

#include "attn/engine/core/error.hpp"
#include "attn/engine/text/hf_tokenizer.hpp"
#include "attn/io/hf_tokenizer_file.hpp"
#include "attn/io/json_io.hpp"
#include "bpe_support.hpp"
#include "support.hpp"

using namespace attn;
using attn::test::TinyVocab;
using attn::test::utf8;

namespace {

const std::string kSpace = utf8(0x120);  // GPT-2's byte character for ' ', 'Ġ'

// Llama 3's and Qwen2's Split patterns, as their tokenizer.json files write them.
const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

TinyVocab hf_test_vocab() {
  TinyVocab v{{kSpace, "c"}, {kSpace + "c", "a"}, {kSpace + "ca", "t"}, {"1", "2"}, {"12", "3"}};
  v.tables.symbols.push_back(kSpace + "dog");  // a whole word no merge reaches
  return v;
}

HfPreTokenStep split_step(const char* pattern) {
  HfPreTokenStep s;
  s.kind = HfPreTokenStep::Kind::split;
  s.pattern = hf_regex_to_icu(pattern);
  return s;
}

HfPreTokenStep byte_level_step(bool use_regex) {
  HfPreTokenStep s;
  s.kind = HfPreTokenStep::Kind::byte_level;
  s.use_regex = use_regex;
  return s;
}

HfTokenizerSpec spec_with(std::vector<HfPreTokenStep> steps) {
  HfTokenizerSpec spec;
  spec.bpe = hf_test_vocab().tables;
  spec.pre_tokenizer = std::move(steps);
  return spec;
}

HfAddedToken added(TokenId id, const std::string& content, bool lstrip = false, bool rstrip = false) {
  HfAddedToken t;
  t.id = id, t.content = content, t.lstrip = lstrip, t.rstrip = rstrip, t.special = true;
  return t;
}

}  // namespace

TEST_CASE("hf tokenizer: Oniguruma's \\s and \\S become ICU's White_Space property, escapes stay") {
  CHECK(hf_regex_to_icu(R"(\s+(?!\S))") == R"(\p{White_Space}+(?!\P{White_Space}))");
  CHECK(hf_regex_to_icu(R"([^\s\p{L}])") == R"([^\p{White_Space}\p{L}])");
  CHECK(hf_regex_to_icu(R"(\\s\d)") == R"(\\s\d)");  // an escaped backslash, then a letter s
}

TEST_CASE("hf tokenizer: Llama 3's split keeps at most three digits together, Qwen2's one") {
  using V = std::vector<std::string>;
  const HfTokenizer llama(spec_with({split_step(kLlama3Pattern), byte_level_step(false)}));
  // " " before a digit is no letter's prefix and no lone whitespace run's end: \s+ takes it alone.
  CHECK(llama.pre_tokenize("The cat 12345!") == V{"The", " cat", " ", "123", "45", "!"});
  CHECK(llama.pre_tokenize("I'M here\n\n  x") == V{"I", "'M", " here", "\n\n", " ", " x"});
  const HfTokenizer qwen(spec_with({split_step(kQwen2Pattern), byte_level_step(false)}));
  CHECK(qwen.pre_tokenize("The cat 12345!") == V{"The", " cat", " ", "1", "2", "3", "4", "5", "!"});
  // Digits (SmolLM): each digit alone, then GPT-2's regex on what is left.
  HfPreTokenStep digits;
  digits.kind = HfPreTokenStep::Kind::digits;
  digits.individual_digits = true;
  const HfTokenizer smol(spec_with({digits, byte_level_step(true)}));
  CHECK(smol.pre_tokenize("The cat 12345!") == V{"The", " cat", " ", "1", "2", "3", "4", "5", "!"});
  digits.individual_digits = false;
  const HfTokenizer runs(spec_with({digits, byte_level_step(false)}));
  CHECK(runs.pre_tokenize("a12b٣4") == V{"a", "12", "b", "٣4"});  // Arabic-Indic three is a digit too
}

TEST_CASE("hf tokenizer: the pieces are merged by the vocabulary's merges, ids by hand") {
  const TinyVocab v = hf_test_vocab();
  const HfTokenizer llama(spec_with({split_step(kLlama3Pattern), byte_level_step(false)}));
  CHECK(llama.encode("The cat 12345!") ==
        v.ids({"T", "h", "e", kSpace + "cat", kSpace, "123", "4", "5", "!"}));
  CHECK(llama.decode(llama.encode("The cat 12345!")) == "The cat 12345!");
}

TEST_CASE("hf tokenizer: ignore_merges takes a piece that is itself a token whole (Llama 3)") {
  const TinyVocab v = hf_test_vocab();
  HfTokenizerSpec spec = spec_with({split_step(kLlama3Pattern), byte_level_step(false)});
  const HfTokenizer merged(spec);
  CHECK(merged.encode(" dog") == v.ids({kSpace, "d", "o", "g"}));  // no merge joins them
  spec.ignore_merges = true;
  const HfTokenizer whole(std::move(spec));
  CHECK(whole.encode(" dog") == v.ids({kSpace + "dog"}));
  CHECK(whole.encode(" cat") == v.ids({kSpace + "cat"}));  // in the vocabulary: the same either way
}

TEST_CASE("hf tokenizer: added tokens are cut out first, leftmost-longest, with lstrip and rstrip") {
  const TinyVocab v = hf_test_vocab();
  HfTokenizerSpec spec = spec_with({byte_level_step(true)});
  spec.added = {added(1000, "<s>"), added(1001, "</s>"), added(1002, "<s>x"), added(1003, "<mask>", true, false),
                added(1004, "<r>", false, true)};
  spec.prefix = {1000};
  const HfTokenizer t(std::move(spec));
  CHECK(t.encode_text("<s>hi</s>") == std::vector<TokenId>{1000, v.id("h"), v.id("i"), 1001});
  CHECK(t.encode_text("<s>xy") == std::vector<TokenId>{1002, v.id("y")});  // the longer of two at one place
  CHECK(t.encode_text("a  <mask>b") == std::vector<TokenId>{v.id("a"), 1003, v.id("b")});  // both spaces taken
  CHECK(t.encode_text("a  <r>  b") ==
        std::vector<TokenId>{v.id("a"), v.id(kSpace), v.id(kSpace), 1004, v.id("b")});  // only those after
  // The post-processor's template: BOS before the text's ids.
  CHECK(t.encode("hi") == std::vector<TokenId>{1000, v.id("h"), v.id("i")});
  CHECK(t.vocab_size() == 1005);
  CHECK(t.has_token(1003));
  CHECK_FALSE(t.has_token(999));
  CHECK(t.label_or_id(999) == "<id 999>");
  CHECK(t.token_text(1001) == "</s>");
  CHECK(t.decode({1000, v.id("h"), 1001}) == "<s>h</s>");
  CHECK_THROWS_AS(t.decode({999}), InputError);
}

TEST_CASE("hf tokenizer: NFC joins a decomposed accent before the pieces are cut (Qwen2)") {
  using V = std::vector<std::string>;
  HfTokenizerSpec spec = spec_with({byte_level_step(true)});
  const std::string decomposed = "caf" + std::string("e") + utf8(0x301);
  CHECK(HfTokenizer(spec).pre_tokenize(decomposed) == V{"cafe", utf8(0x301)});  // the mark is no letter
  spec.normalization = HfNormalization::nfc;
  CHECK(HfTokenizer(std::move(spec)).pre_tokenize(decomposed) == V{"caf" + utf8(0xE9)});
}

TEST_CASE("hf tokenizer: invalid UTF-8, an empty or clashing added token, a broken pattern are InputErrors") {
  const HfTokenizer t(spec_with({byte_level_step(true)}));
  CHECK_THROWS_AS(t.encode("a\xff"), InputError);
  HfTokenizerSpec empty = spec_with({byte_level_step(true)});
  empty.added = {added(300, "")};
  CHECK_THROWS_AS(HfTokenizer(std::move(empty)), InputError);
  HfTokenizerSpec clash = spec_with({byte_level_step(true)});
  clash.added = {added(300, "<a>"), added(300, "<b>")};
  CHECK_THROWS_AS(HfTokenizer(std::move(clash)), InputError);
  CHECK_THROWS_AS(HfTokenizer(spec_with({split_step("(")})), InputError);
  HfTokenizerSpec bos = spec_with({byte_level_step(true)});
  bos.prefix = {5000};
  CHECK_THROWS_AS(HfTokenizer(std::move(bos)), InputError);
}

namespace {

// A valid tokenizer.json for the hand vocabulary, to break one field at a time.
Json hf_test_document() {
  const TinyVocab v = hf_test_vocab();
  Json vocab = Json::object();
  for (std::size_t i = 0; i < v.tables.symbols.size(); ++i) vocab[v.tables.symbols[i]] = i;
  Json merges = Json::array();
  for (const BpeMerge& m : v.tables.merges) merges.push_back(v.tables.symbols[m.left] + " " + v.tables.symbols[m.right]);
  return {{"version", "1.0"},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
          {"added_tokens", Json::array({{{"id", 1000}, {"content", "<s>"}, {"single_word", false}, {"lstrip", false},
                                         {"rstrip", false}, {"normalized", false}, {"special", true}}})},
          {"post_processor",
           {{"type", "TemplateProcessing"},
            {"single", Json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                    {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
            {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1000}}, {"tokens", {"<s>"}}}}}}}},
          {"model", {{"type", "BPE"}, {"byte_fallback", false}, {"ignore_merges", false}, {"vocab", vocab},
                     {"merges", merges}}}};
}

std::string read_error(const attn::test::TempDir& dir, const Json& doc) {
  std::ofstream(dir / "tokenizer.json") << doc.dump();
  try {
    read_hf_tokenizer(dir.path.string());
  } catch (const InputError& e) {
    return e.what();
  }
  return "(read without an error)";
}

}  // namespace

TEST_CASE("hf tokenizer file: a valid file reads, merges as strings or pairs, BOS from its template") {
  const attn::test::TempDir dir;
  Json doc = hf_test_document();
  std::ofstream(dir / "tokenizer.json") << doc.dump();
  const TinyVocab v = hf_test_vocab();
  CHECK(read_hf_tokenizer(dir.path.string()).encode(" cat") == std::vector<TokenId>{1000, v.id(kSpace + "cat")});
  for (Json& m : doc["model"]["merges"]) {
    const std::string line = m.get<std::string>();
    m = Json::array({line.substr(0, line.find(' ')), line.substr(line.find(' ') + 1)});
  }
  std::ofstream(dir / "tokenizer.json") << doc.dump();
  const std::unique_ptr<SubwordTokenizer> t = read_folder_tokenizer(dir.path.string());
  CHECK(t->encode(" cat") == std::vector<TokenId>{1000, v.id(kSpace + "cat")});
}

TEST_CASE("hf tokenizer file: what it cannot read is one InputError naming the field") {
  const attn::test::TempDir dir;
  struct Case {
    const char* expected;
    void (*breaks)(Json&);
  };
  const Case cases[] = {
      {"model.type: \"Unigram\"", [](Json& d) { d["model"]["type"] = "Unigram"; }},
      {"model.byte_fallback", [](Json& d) { d["model"]["byte_fallback"] = true; }},
      {"model.dropout", [](Json& d) { d["model"]["dropout"] = 0.1; }},
      {"pre-tokenizer \"Metaspace\" is not supported", [](Json& d) { d["pre_tokenizer"] = {{"type", "Metaspace"}}; }},
      {"pre_tokenizer: no ByteLevel step", [](Json& d) { d["pre_tokenizer"] = nullptr; }},
      {"behavior: \"Removed\"",
       [](Json& d) {
         d["pre_tokenizer"] = {{"type", "Sequence"},
                               {"pretokenizers", Json::array({{{"type", "Split"}, {"pattern", {{"Regex", "a"}}},
                                                               {"behavior", "Removed"}, {"invert", false}},
                                                              {{"type", "ByteLevel"}}})}};
       }},
      {"not a regular expression ICU accepts",
       [](Json& d) {
         d["pre_tokenizer"] = {{"type", "Sequence"},
                               {"pretokenizers", Json::array({{{"type", "Split"}, {"pattern", {{"Regex", "("}}},
                                                               {"behavior", "Isolated"}, {"invert", false}},
                                                              {{"type", "ByteLevel"}}})}};
       }},
      {"normalizer \"Lowercase\" is not supported", [](Json& d) { d["normalizer"] = {{"type", "Lowercase"}}; }},
      {"added_tokens[0].single_word", [](Json& d) { d["added_tokens"][0]["single_word"] = true; }},
      {"special_tokens: no entry for \"<s>\"", [](Json& d) { d["post_processor"]["special_tokens"] = Json::object(); }},
      {"model.merges[0]: the merged token \"xc\" is not in model.vocab", [](Json& d) { d["model"]["merges"][0] = "x c"; }},
      {"model.merges[1]: the merge", [](Json& d) { d["model"]["merges"][1] = d["model"]["merges"][0]; }},
      {"model.vocab: the id of", [](Json& d) { d["model"]["vocab"]["a"] = 5000; }},
      {"no token for byte", [](Json& d) { d["model"]["vocab"].erase("b"), d["model"]["vocab"]["zz"] = 98; }},
      {"post-processor token id 7000", [](Json& d) { d["post_processor"]["special_tokens"]["<s>"]["ids"] = {7000}; }},
  };
  for (const Case& c : cases) {
    Json doc = hf_test_document();
    c.breaks(doc);
    const std::string error = read_error(dir, doc);
    CAPTURE(error);
    CHECK(error.find(c.expected) != std::string::npos);
    CHECK(error.find("tokenizer.json") != std::string::npos);
  }
}

TEST_CASE("hf tokenizer file: a folder with only a SentencePiece model, or no tokenizer, is refused by name") {
  const attn::test::TempDir dir;
  CHECK_THROWS_WITH_AS(read_folder_tokenizer(dir.path.string()), doctest::Contains("no tokenizer"), InputError);
  std::ofstream(dir / "tokenizer.model") << "x";
  CHECK_THROWS_WITH_AS(read_folder_tokenizer(dir.path.string()), doctest::Contains("SentencePiece"), InputError);
}

TEST_CASE("hf tokenizer: a Split pattern that backtracks without end is stopped, not waited for") {
  // (a+)+b on a run of a's with no b tries every way to split the run: 2^n of them.
  const HfTokenizer t(spec_with({split_step("(a+)+b"), byte_level_step(false)}));
  CHECK_THROWS_WITH_AS(t.encode(std::string(40, 'a') + "!"), doctest::Contains("backtracks without end"), InputError);
}
