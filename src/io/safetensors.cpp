#include "attn/io/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "attn/engine/error.hpp"

namespace attn {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;  // the Rust reader's own limit

// IEEE binary16 -> float, exactly (subnormals, infinities and NaN included).
float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ffu;
  std::uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else {  // zero or subnormal: mantissa * 2^-24
    const float value = float(mantissa) * 0x1.0p-24f;
    return sign ? -value : value;
  }
  return std::bit_cast<float>(bits);
}

std::size_t dtype_bytes(const std::string& dtype) {
  if (dtype == "F32") return 4;
  if (dtype == "F16" || dtype == "BF16") return 2;
  return 0;
}

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw InputError(source + ": " + what);
}

struct Entry {
  std::string name, dtype;
  Shape shape;
  std::uint64_t begin, end;
};

Entry check_entry(const std::string& source, const std::string& name, const nlohmann::json& j,
                  std::uint64_t data_bytes) {
  const std::string where = "tensor \"" + name + "\"";
  if (!j.is_object()) fail(source, where + ": expected an object");
  if (!j.contains("dtype") || !j["dtype"].is_string()) fail(source, where + ": missing dtype");
  Entry e{name, j["dtype"].get<std::string>(), {}, 0, 0};
  const std::size_t width = dtype_bytes(e.dtype);
  if (!width) fail(source, where + ": dtype " + e.dtype + " is not supported (expected F32, F16 or BF16)");
  if (!j.contains("shape") || !j["shape"].is_array()) fail(source, where + ": missing shape");
  std::uint64_t count = 1;
  for (const nlohmann::json& n : j["shape"]) {
    if (!n.is_number_unsigned()) fail(source, where + ": shape must hold non-negative integers");
    const std::uint64_t dim = n.get<std::uint64_t>();
    if (dim && count > std::numeric_limits<std::uint64_t>::max() / 8 / dim)
      fail(source, where + ": shape " + n.dump() + " is too large");
    count *= dim;
    e.shape.push_back(std::size_t(dim));
  }
  const nlohmann::json& off = j.contains("data_offsets") ? j["data_offsets"] : nlohmann::json();
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    fail(source, where + ": data_offsets must be [begin, end] with non-negative integers");
  e.begin = off[0].get<std::uint64_t>(), e.end = off[1].get<std::uint64_t>();
  if (e.begin > e.end || e.end > data_bytes) {
    fail(source, where + ": data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                     "] lie outside the " + std::to_string(data_bytes) + " data bytes in the file");
  }
  if (e.end - e.begin != count * width) {
    fail(source, where + ": " + e.dtype + " " + shape_string(e.shape) + " needs " + std::to_string(count * width) +
                     " bytes, data_offsets give " + std::to_string(e.end - e.begin));
  }
  return e;
}

}  // namespace

std::map<std::string, StoredTensor> parse_safetensors(const std::string& bytes, const std::string& source) {
  if (bytes.size() < 8) fail(source, "not a safetensors file (shorter than its 8-byte header length)");
  std::uint64_t header_bytes;
  std::memcpy(&header_bytes, bytes.data(), 8);
  if (header_bytes > kMaxHeaderBytes || header_bytes > bytes.size() - 8) {
    fail(source, "header length " + std::to_string(header_bytes) + " exceeds the file (" +
                     std::to_string(bytes.size()) + " bytes): truncated or not safetensors");
  }
  const nlohmann::json header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + long(header_bytes),
                                                      nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) fail(source, "the header is not a JSON object");
  const std::uint64_t data_bytes = bytes.size() - 8 - header_bytes;

  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") continue;
    entries.push_back(check_entry(source, name, value, data_bytes));
  }
  // The tensors must tile the data: sorted by offset, each starts where the previous ended.
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const Entry* a, const Entry* b) { return a->begin != b->begin ? a->begin < b->begin : a->end < b->end; });
  std::uint64_t covered = 0;
  for (const Entry* e : by_offset) {
    if (e->begin != covered) {
      fail(source, "tensor \"" + e->name + "\" starts at " + std::to_string(e->begin) + ", expected " +
                       std::to_string(covered) + " (tensors overlap or leave a hole)");
    }
    covered = e->end;
  }
  if (covered != data_bytes) {
    fail(source, "the tensors cover " + std::to_string(covered) + " of the " + std::to_string(data_bytes) +
                     " data bytes");
  }

  std::map<std::string, StoredTensor> out;
  const char* data = bytes.data() + 8 + header_bytes;
  for (const Entry& e : entries) {
    StoredTensor t{e.dtype, e.shape, {}};
    const char* p = data + e.begin;
    const std::size_t width = dtype_bytes(e.dtype), count = (e.end - e.begin) / width;
    t.values.resize(count);
    // One loop per dtype, the dtype tested once: GPT-2 small is 124M values.
    if (e.dtype == "F32") {
      if (count > 0) std::memcpy(t.values.data(), p, 4 * count);  // an empty vector's data() may be null
    } else {
      const bool f16 = e.dtype == "F16";
      for (std::size_t i = 0; i < count; ++i) {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        t.values[i] = f16 ? half_to_float(h) : std::bit_cast<float>(std::uint32_t(h) << 16);
      }
    }
    out.emplace(e.name, std::move(t));
  }
  return out;
}

std::map<std::string, StoredTensor> read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw InputError(path + ": cannot open");
  // One read of the known size: GPT-2 small is 250-500 MB, which a growing buffer copies often.
  const std::streamoff size = in.tellg();
  if (size < 0) throw InputError(path + ": cannot read");
  std::string bytes(std::size_t(size), '\0');
  in.seekg(0);
  if (!in.read(bytes.data(), size)) throw InputError(path + ": cannot read");
  return parse_safetensors(bytes, path);
}

std::string safetensors_bytes(const std::vector<std::pair<std::string, const Tensor2*>>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const std::uint64_t size = t->size() * 4;
    header[name] = {{"dtype", "F32"}, {"shape", {t->shape(0), t->shape(1)}}, {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned (the spec allows spaces)
  const std::uint64_t header_bytes = text.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &header_bytes, 8);
  out += text;
  for (const auto& [name, t] : tensors) out.append(reinterpret_cast<const char*>(t->data()), t->size() * 4);
  return out;
}

}  // namespace attn
