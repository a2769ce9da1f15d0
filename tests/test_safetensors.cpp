// safetensors read/write (io/safetensors.hpp) and toy model folders (io/toy_model_file.hpp):
// round trips, F16/BF16 widening, and hostile files -- truncated, offsets out of range or
// overlapping, sizes that lie, unsupported dtypes -- each an InputError before any data is read.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "attn/engine/core/error.hpp"
#include "attn/io/safetensors.hpp"
#include "attn/io/toy_model_file.hpp"

using namespace attn;

namespace {

// A file from a header text and data bytes, as a hostile writer would make it.
std::string file_from(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

std::string floats(std::initializer_list<float> values) {
  std::string out;
  for (float v : values) out.append(reinterpret_cast<const char*>(&v), 4);
  return out;
}

void check_refused(const std::string& bytes, const std::string& needle) {
  CAPTURE(needle);
  try {
    parse_safetensors(bytes, "model.safetensors");
    FAIL("accepted a hostile file");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find(needle) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("safetensors: what is written reads back bit for bit") {
  Tensor2 a = {{1.5f, -2.0f, 3.25f}, {0.0f, 1e-30f, -7.0f}};
  Tensor2 b = {{42.0f}};
  const std::string bytes = safetensors_bytes({{"a", &a}, {"b", &b}});
  CHECK((bytes.size() - 8 - 7 * 4) % 8 == 0);  // the header is padded: data 8-byte aligned
  const auto read = parse_safetensors(bytes, "x");
  REQUIRE(read.size() == 2);
  CHECK(read.at("a").dtype == "F32");
  CHECK(read.at("a").shape == Shape{2, 3});
  CHECK(std::memcmp(read.at("a").values.data(), a.data(), 24) == 0);
  CHECK(read.at("b").values == std::vector<float>{42.0f});
  CHECK(safetensors_bytes({{"a", &a}, {"b", &b}}) == bytes);  // deterministic
}

TEST_CASE("safetensors: F16 and BF16 are widened exactly") {
  // F16: 1.0 = 0x3c00, -2.0 = 0xc000, 2^-24 (smallest subnormal) = 0x0001; BF16: 1.0 = 0x3f80
  const std::string f16("\x00\x3c\x00\xc0\x01\x00", 6), bf16("\x80\x3f\x00\xc0", 4);
  const auto read = parse_safetensors(
      file_from(R"({"h":{"dtype":"F16","shape":[3],"data_offsets":[0,6]},)"
                R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[6,10]},"__metadata__":{"format":"pt"}})",
                f16 + bf16),
      "x");
  CHECK(read.at("h").values == std::vector<float>{1.0f, -2.0f, 0x1.0p-24f});
  CHECK(read.at("b").values == std::vector<float>{1.0f, -2.0f});
}

TEST_CASE("safetensors: hostile files are input errors") {
  const std::string two = floats({1, 2});
  check_refused("abc", "shorter than");
  check_refused(file_from("{}", "").substr(0, 9), "exceeds the file");  // header cut off
  {
    std::string huge(8, '\xff');
    check_refused(huge + "{}", "header length");
  }
  check_refused(file_from("[1,2]", ""), "not a JSON object");
  check_refused(file_from("{not json", ""), "not a JSON object");
  check_refused(file_from(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", floats({1})),
                "lie outside");                                                          // truncated data
  check_refused(file_from(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", two), "lie outside");
  check_refused(file_from(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", two), "needs 12 bytes");
  check_refused(file_from(R"({"w":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", two), "dtype I64");
  check_refused(file_from(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", two), "non-negative");
  check_refused(file_from(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", two), "lie outside");
  check_refused(file_from(R"({"w":{"dtype":"F32","shape":[2]}})", two), "data_offsets");
  check_refused(file_from(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", two),
                "too large");
  check_refused(file_from(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                          R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", two),
                "overlap");
  check_refused(file_from(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", two), "cover 4 of the 8");
  // One name twice: JSON would keep the last entry and the first would vanish without a word.
  check_refused(file_from(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                          R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", two),
                "\"w\" is named twice");
  // ... but a name inside an entry (every entry has "dtype") or in __metadata__ is no tensor name.
  CHECK(parse_safetensors(file_from(R"({"__metadata__":{"w":"x"},"w":{"dtype":"F32","shape":[2],)"
                                    R"("data_offsets":[0,8]}})", two), "ok.safetensors").size() == 1);
}

TEST_CASE("toy model folder: round trip, and wrong tensors are input errors") {
  const std::string dir = (std::filesystem::temp_directory_path() / "attn_test_toy_model").string();
  std::filesystem::remove_all(dir);
  const ToyModel model = init_toy_model({5, 4, 2, 2, 6}, 9);
  write_toy_model(dir, model, {"induction", 10, 4, 1e-3, 9});
  ToyTrainInfo info;
  ToyModel back = read_toy_model(dir, &info);
  CHECK(info.steps == 10);
  CHECK(info.task == "induction");
  CHECK(back.config.layers == 2);
  CHECK(back.embed == model.embed);
  CHECK(back.layers[1].w_o == model.layers[1].w_o);
  CHECK(back.unembed == model.unembed);

  // A model.safetensors whose tensor has the wrong shape for config.json.
  Tensor2 wrong = xt::zeros<float>({3, 3});
  {
    std::ofstream(dir + "/model.safetensors", std::ios::binary) << safetensors_bytes({{"embed", &wrong}});
  }
  CHECK_THROWS_WITH_AS(read_toy_model(dir), doctest::Contains("expected shape [5, 4]"), InputError);
  {  // truncated
    std::ofstream(dir + "/model.safetensors", std::ios::binary) << std::string("\x10\x00\x00", 3);
  }
  CHECK_THROWS_AS(read_toy_model(dir), InputError);
  CHECK_THROWS_WITH_AS(read_toy_model(dir + "/nowhere"), doctest::Contains("no config.json"), InputError);
  std::filesystem::remove_all(dir);
}
