// Fuzz target: the safetensors reader (include/attn/io/safetensors.hpp) on arbitrary bytes.
// fuzz/CMakeLists.txt builds it only once src/io/safetensors.cpp exists. Checked:
//   - a refused file is an InputError, nothing else (no bad_alloc from a lying shape);
//   - every tensor read holds exactly product(shape) values of a supported dtype;
//   - float32 matrices written back by safetensors_bytes read back bit for bit.
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <new>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "attn/engine/core/error.hpp"
#include "attn/io/safetensors.hpp"
#include "fuzz_support.hpp"

namespace attn::fuzz {
namespace {

std::map<std::string, StoredTensor> parse(const std::string& bytes) {
  try {
    return parse_safetensors(bytes, "fuzz");
  } catch (const InputError&) {
    return {};
  } catch (const std::bad_alloc&) {
    finding("out of memory reading a small file");
  } catch (const std::exception& e) {
    finding(std::string("not an InputError: ") + e.what());
  }
}

void check_tensor(const std::string& name, const StoredTensor& t) {
  const std::size_t count = std::accumulate(t.shape.begin(), t.shape.end(), std::size_t(1), std::multiplies<>());
  check(t.values.size() == count, name + ": values do not fill its shape");
  check(t.dtype == "F32" || t.dtype == "F16" || t.dtype == "BF16", name + ": unsupported dtype read");
}

void check_round_trip(const std::map<std::string, StoredTensor>& read) {
  std::vector<Tensor2> matrices;
  std::vector<std::string> names;
  for (const auto& [name, t] : read) {
    if (t.dtype != "F32" || t.shape.size() != 2) continue;
    Tensor2 m = Tensor2::from_shape({t.shape[0], t.shape[1]});
    std::copy(t.values.begin(), t.values.end(), m.begin());
    matrices.push_back(std::move(m));
    names.push_back(name);
  }
  std::vector<std::pair<std::string, const Tensor2*>> entries;
  for (std::size_t i = 0; i < names.size(); ++i) entries.emplace_back(names[i], &matrices[i]);
  const auto again = parse_safetensors(safetensors_bytes(entries), "round trip");
  check(again.size() == entries.size(), "round trip: tensors lost");
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::vector<float>& a = read.at(names[i]).values;
    const std::vector<float>& b = again.at(names[i]).values;
    check(a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0),
          "round trip: " + names[i] + " changed");
  }
}

}  // namespace
}  // namespace attn::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const auto read = attn::fuzz::parse(bytes);
  for (const auto& [name, t] : read) attn::fuzz::check_tensor(name, t);
  attn::fuzz::check_round_trip(read);
  return 0;
}
