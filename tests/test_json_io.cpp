#include <doctest/doctest.h>

#include <filesystem>
#include <limits>

#include "attn/engine/core/error.hpp"
#include "attn/io/json_io.hpp"
#include "support.hpp"

using namespace attn;

TEST_CASE("data directory is present (golden files and examples live there)") {
  REQUIRE(std::filesystem::is_directory(ATTN_DATA_DIR));
  REQUIRE(std::filesystem::exists(test::data_path("golden/attend_2d.json")));
}

TEST_CASE("parse_array: shape and row-major data") {
  const DenseArray a = parse_array(Json::parse("[[[1,2,3],[4,5,6]]]"), "q");
  CHECK(a.shape == Shape{1, 2, 3});
  CHECK(a.data == std::vector<float>{1, 2, 3, 4, 5, 6});
}

TEST_CASE("parse_array: errors name the field and the place") {
  CHECK_THROWS_WITH_AS(parse_array(Json::parse("[[1,2],[3]]"), "k"),
                       doctest::Contains("k: ragged array at k[1]: expected 2 items, got 1"), InputError);
  CHECK_THROWS_WITH_AS(parse_array(Json::parse("[[1,\"x\"]]"), "v"), doctest::Contains("v: expected a number at v[0][1]"),
                       InputError);
  CHECK_THROWS_AS(parse_array(Json::parse("[[1,2],3]"), "q"), InputError);
  CHECK_THROWS_AS(parse_array(Json::parse("[3,[1,2]]"), "q"), InputError);
  CHECK_THROWS_AS(parse_array(Json::parse("[]"), "q"), InputError);
  CHECK_THROWS_AS(parse_array(Json::parse("{\"a\":1}"), "q"), InputError);
  CHECK_THROWS_WITH_AS(parse_array(Json::parse("[1e39]"), "q"), doctest::Contains("float32"), InputError);
  CHECK_THROWS_AS(parse_array(Json::parse("[[0,2]]"), "mask", true), InputError);
  CHECK(parse_array(Json::parse("[[true,0,1,false]]"), "mask", true).data == std::vector<float>{1, 0, 1, 0});
}

TEST_CASE("to_json: the exact float32 value (as a double), and null for a fully masked lse") {
  const Tensor2 t = {{0.1f, 1.0f / 3.0f}};
  // 0.1f is 13421773 / 2^27 exactly; read as a double, the JSON must give that value back.
  const Json j = Json::parse(to_json(t).dump());
  CHECK(j[0][0].get<double>() == 13421773.0 / 134217728.0);
  CHECK(j[0][1].get<double>() == static_cast<double>(1.0f / 3.0f));
  const Tensor1 lse = {1.5f, -std::numeric_limits<float>::infinity()};
  CHECK(lse_to_json(lse).dump() == "[1.5,null]");
  const Tensor1 odd = {1e-38f, 3.4e38f, -7.123456e-5f};
  const Json back = Json::parse(to_json(odd).dump());
  for (std::size_t i = 0; i < 3; ++i) CHECK(back[i].get<double>() == static_cast<double>(odd(i)));
  const Tensor1 bad = {std::numeric_limits<float>::infinity()};
  CHECK_THROWS_AS(to_json(bad), InputError);
}

TEST_CASE("read_json: malformed JSON and a missing file are input errors") {
  const auto dir = std::filesystem::temp_directory_path() / "attn-json-test";
  std::filesystem::create_directories(dir);
  const std::string bad = (dir / "bad.json").string();
  write_file_atomically(bad, "{\"q\": [1, 2,");
  CHECK_THROWS_WITH_AS(read_json(bad), doctest::Contains("malformed JSON"), InputError);
  CHECK_THROWS_WITH_AS(read_json((dir / "missing.json").string()), doctest::Contains("cannot read"), InputError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("read_json: refuses deep nesting, NUL and trailing bytes, numbers past double") {
  const auto dir = std::filesystem::temp_directory_path() / "attn-json-limits-test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "in.json").string();
  auto parse_file = [&](const std::string& text) {
    write_file_atomically(path, text);
    return read_json(path);
  };
  // 60 000 levels once overflowed the stack in flatten(); the limit is kMaxJsonDepth.
  CHECK_THROWS_WITH_AS(parse_file(std::string(60000, '[') + std::string(60000, ']')),
                       doctest::Contains("nested deeper than 64 levels"), InputError);
  CHECK(parse_file(std::string(64, '[') + std::string(64, ']')).is_array());
  // nlohmann's lexer ends the input at a NUL: '{}\0garbage' once parsed as '{}'.
  CHECK_THROWS_WITH_AS(parse_file(std::string("{\"q\": 1}\0garbage", 16)), doctest::Contains("NUL byte at offset 8"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_file("{} {}"), doctest::Contains("malformed JSON"), InputError);
  // Past double range: nlohmann throws out_of_range (not parse_error), once an exit 1.
  CHECK_THROWS_WITH_AS(parse_file("{\"scale\": 1e400}"), doctest::Contains("number overflow parsing '1e400'"),
                       InputError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("write_file_atomically: writes whole files and leaves no temporary behind") {
  const auto dir = std::filesystem::temp_directory_path() / "attn-atomic-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "out.json").string();
  write_file_atomically(path, "first");
  write_file_atomically(path, "second");
  CHECK(test::read_text(path) == "second");
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++files;
  CHECK(files == 1);
  CHECK_THROWS_AS(write_file_atomically((dir / "no" / "such" / "dir.json").string(), "x"), InputError);
  std::filesystem::remove_all(dir);
}
