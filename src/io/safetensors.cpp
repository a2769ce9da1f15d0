#include "attn/io/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include <nlohmann/json.hpp>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/stored_matrix.hpp"
#include "attn/engine/platform/memory.hpp"

namespace attn {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;  // the Rust reader's own limit

// count IEEE binary16 values (little-endian bytes) -> float, exactly; false when one is an
// infinity or NaN (exponent bits all ones). With F16C (every x86-64 CPU since 2012), eight at
// a time by vcvtph2ps, the check on the same eight; GPT-2 small in float16 is 124M values.
bool is_finite_half(std::uint16_t h) { return (h & 0x7c00u) != 0x7c00u; }

#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) bool widen_half_f16c(const unsigned char* in, std::size_t count, float* out) {
  const __m128i exponent = _mm_set1_epi16(0x7c00);
  __m128i not_finite = _mm_setzero_si128();
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i));
    not_finite = _mm_or_si128(not_finite, _mm_cmpeq_epi16(_mm_and_si128(h, exponent), exponent));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  bool finite = _mm_testz_si128(not_finite, not_finite);
  for (; i < count; ++i) {
    std::uint16_t h;
    std::memcpy(&h, in + 2 * i, 2);
    out[i] = half_to_float(h);
    finite &= is_finite_half(h);
  }
  return finite;
}
#endif

bool widen_half(const unsigned char* in, std::size_t count, float* out) {
#if defined(__x86_64__)
  static const bool f16c = [] {  // clang has no "f16c" for __builtin_cpu_supports: CPUID leaf 1 says it
    __builtin_cpu_init();
    unsigned a, b, c, d;
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
  }();
  if (f16c) return widen_half_f16c(in, count, out);
#endif
  bool finite = true;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint16_t h;
    std::memcpy(&h, in + 2 * i, 2);
    out[i] = half_to_float(h);
    finite &= is_finite_half(h);
  }
  return finite;
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

std::map<std::string, SafetensorsEntry> index_safetensors(std::string_view bytes, const std::string& source) {
  if (bytes.size() < 8) fail(source, "not a safetensors file (shorter than its 8-byte header length)");
  std::uint64_t header_bytes;
  std::memcpy(&header_bytes, bytes.data(), 8);
  if (header_bytes > kMaxHeaderBytes || header_bytes > bytes.size() - 8) {
    fail(source, "header length " + std::to_string(header_bytes) + " exceeds the file (" +
                     std::to_string(bytes.size()) + " bytes): truncated or not safetensors");
  }
  // A name given twice would silently keep its last entry (JSON objects keep one value per
  // key): the file says two things about one tensor, so it is refused.
  std::set<std::string> names;
  std::string twice;
  const nlohmann::json::parser_callback_t note_names = [&](int depth, nlohmann::json::parse_event_t event,
                                                          nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 1 && parsed.is_string() &&
        !names.insert(parsed.get<std::string>()).second && twice.empty())
      twice = parsed.get<std::string>();
    return true;
  };
  const nlohmann::json header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + long(header_bytes),
                                                      note_names, /*allow_exceptions=*/false);
  if (!header.is_object()) fail(source, "the header is not a JSON object");
  if (!twice.empty()) fail(source, "tensor \"" + twice + "\" is named twice in the header");
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

  std::map<std::string, SafetensorsEntry> out;
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data()) + 8 + header_bytes;
  for (const Entry& e : entries)
    out.emplace(e.name, SafetensorsEntry{e.dtype, e.shape, data + e.begin, (e.end - e.begin) / dtype_bytes(e.dtype)});
  return out;
}

namespace {

// Values [begin, begin + count) of e into out[0, count); false when one is not finite.
bool widen_range(const SafetensorsEntry& e, std::size_t begin, std::size_t count, float* out) {
  // Fresh memory is faulted in by one call, not page by page as the widening first writes it (a
  // GPT-2 small is 122k pages of 4 KiB).
  populate_for_writing(out, count * sizeof(float));
  const unsigned char* in = e.data + begin * dtype_bytes(e.dtype);
  if (e.dtype == "F16") return widen_half(in, count, out);
  if (e.dtype == "F32") {
    std::memcpy(out, in, 4 * count);
  } else {  // BF16: the high half of a float32
    for (std::size_t i = 0; i < count; ++i) {
      std::uint16_t h;
      std::memcpy(&h, in + 2 * i, 2);
      out[i] = std::bit_cast<float>(std::uint32_t(h) << 16);
    }
  }
  bool finite = true;
  for (std::size_t i = 0; i < count; ++i) finite &= std::isfinite(out[i]);
  return finite;
}

}  // namespace

SafetensorsEntry slice_entry(const SafetensorsEntry& e, std::size_t first, std::size_t count) {
  return {e.dtype, {}, e.data + first * dtype_bytes(e.dtype), count};
}

std::size_t entry_bytes(const SafetensorsEntry& e) { return e.count * dtype_bytes(e.dtype); }

StoredMatrix stored_matrix(const SafetensorsEntry& e) {
  const StoredType type = e.dtype == "F32" ? StoredType::f32 : e.dtype == "BF16" ? StoredType::bf16 : StoredType::f16;
  return {e.data, type, e.shape.at(0), e.shape.at(1)};
}

bool widen_to_float(const SafetensorsEntry& e, float* out) {
  if (e.count == 0) return true;  // an empty tensor's out may be null
  // Large tensors on every core: into fresh memory the kernel's zeroing of its pages is most of
  // the time, and each thread's share is zeroed by that thread; into reused memory (a block of
  // a model left in its file) the conversion is, and a share of 1 MiB is still worth a thread.
  constexpr std::size_t kPerThread = std::size_t(1) << 18;  // values (1 MiB of float)
  const std::size_t parts = std::clamp<std::size_t>(e.count / kPerThread, 1, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<char> finite(parts, 1);
  // 2 MiB pages where Linux allows them, asked for the whole tensor before any share is written
  // (a share of its own may be too short for one).
  prefer_huge_pages(out, e.count * sizeof(float));
  auto part = [&](std::size_t p) {
    const std::size_t begin = e.count * p / parts, end = e.count * (p + 1) / parts;
    finite[p] = widen_range(e, begin, end - begin, out + begin);
  };
  std::vector<std::thread> threads;
  try {
    for (std::size_t p = 1; p < parts; ++p) threads.emplace_back(part, p);
  } catch (const std::system_error&) {  // fewer threads than asked: this one does the rest
  }
  part(0);
  for (std::size_t p = 1 + threads.size(); p < parts; ++p) part(p);
  for (std::thread& t : threads) t.join();
  return std::all_of(finite.begin(), finite.end(), [](char f) { return f != 0; });
}

std::map<std::string, StoredTensor> parse_safetensors(std::string_view bytes, const std::string& source) {
  std::map<std::string, StoredTensor> out;
  for (const auto& [name, e] : index_safetensors(bytes, source)) {
    StoredTensor t{e.dtype, e.shape, std::vector<float>(e.count)};
    widen_to_float(e, t.values.data());
    out.emplace(name, std::move(t));
  }
  return out;
}

MappedSafetensors::MappedSafetensors(const std::string& path) {
  // O_NONBLOCK: a named pipe in the weights' place opens at once (and is refused below) instead
  // of waiting forever for a writer. It changes nothing for a regular file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw InputError(path + ": cannot read (not a regular file)");
  }
  size_ = std::size_t(st.st_size);
  if (size_ > 0) {
    // MAP_POPULATE maps every page in this one call: faulting them in one by one, as widening
    // reads them, cost more than the widening (a 351 MB GPT-2: 86k faults).
    map_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (map_ == MAP_FAILED) {
      map_ = nullptr;
      ::close(fd);
      throw InputError(path + ": cannot read (" + std::strerror(errno) + ")");
    }
  }
  ::close(fd);
  try {
    tensors_ = index_safetensors(std::string_view(static_cast<const char*>(map_), size_), path);
  } catch (...) {
    if (map_) ::munmap(map_, size_);
    throw;
  }
}

MappedSafetensors::~MappedSafetensors() {
  if (map_) ::munmap(map_, size_);
}

std::map<std::string, StoredTensor> read_safetensors(const std::string& path) {
  const MappedSafetensors file(path);
  std::map<std::string, StoredTensor> out;
  for (const auto& [name, e] : file.tensors()) {
    StoredTensor t{e.dtype, e.shape, std::vector<float>(e.count)};
    widen_to_float(e, t.values.data());
    out.emplace(name, std::move(t));
  }
  return out;
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
