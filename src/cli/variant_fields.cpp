// attend's variant fields (variant_fields.hpp).
#include "variant_fields.hpp"

#include <cstdint>

#include "attn/engine/positions/alibi.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/io/numbers.hpp"

namespace attn::cli {
namespace {

bool present(const Json& in, const char* field) { return in.contains(field) && !in.at(field).is_null(); }

std::vector<std::int64_t> ids(const Json& v, const std::string& field) {
  if (!v.is_array()) throw InputError(field + ": expected an array of integers, got " + v.dump().substr(0, 40));
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const Json& x = v[i];
    const bool fits = x.is_number_integer() && (!x.is_number_unsigned() || x.get<std::uint64_t>() <= std::uint64_t(INT64_MAX));
    if (!fits) throw InputError(field + "[" + std::to_string(i) + "]: expected an integer, got " + x.dump().substr(0, 40));
    out.push_back(x.get<std::int64_t>());
  }
  return out;
}

// Positions and counts far past any sequence, small enough that p - left cannot overflow.
constexpr std::uint64_t kMaxPosition = std::uint64_t(1) << 40;

// One parser per variant, each reading its own field(s) into its descriptor.
void window_from(const Json& in, SdpaOptions& o) {
  if (!present(in, "window")) return;
  const Json& w = in.at("window");
  if (!w.is_array() || w.size() != 2) throw InputError("window: expected [left, right], two integers >= 0");
  o.mask_mod.window = variants::SlidingWindow{count_field(w[0], "window[0]", 0, kMaxPosition),
                                              count_field(w[1], "window[1]", 0, kMaxPosition)};
}

// Sinks belong to the window: without one every key is visible anyway, so they add nothing.
void sinks_from(const Json& in, SdpaOptions& o) {
  if (!present(in, "sinks")) return;
  const std::size_t sinks = count_field(in.at("sinks"), "sinks", 0, kMaxPosition);
  if (o.mask_mod.window) o.mask_mod.window->sinks = sinks;
}

void prefix_from(const Json& in, SdpaOptions& o) {
  if (present(in, "prefix")) o.mask_mod.prefix = variants::PrefixLM{count_field(in.at("prefix"), "prefix", 0, kMaxPosition)};
}

void segments_from(const Json& in, SdpaOptions& o) {
  if (!present(in, "segments")) return;
  const Json& s = in.at("segments");
  if (!s.is_object() || !s.contains("q") || !s.contains("k"))
    throw InputError("segments: expected {\"q\": [Lq ints], \"k\": [Lk ints]}");
  o.mask_mod.segments = variants::Documents{ids(s.at("q"), "segments.q"), ids(s.at("k"), "segments.k")};
}

void chunk_from(const Json& in, SdpaOptions& o) {
  if (present(in, "chunk")) o.mask_mod.chunk = variants::Chunked{count_field(in.at("chunk"), "chunk", 1, kMaxPosition)};
}

void softcap_from(const Json& in, SdpaOptions& o) {
  if (present(in, "softcap")) o.score_mod.softcap = variants::SoftCap{number_field(in.at("softcap"), "softcap")};
}

void alibi_from(const Json& in, std::size_t num_heads, SdpaOptions& o) {
  if (!present(in, "alibi")) return;
  const Json& a = in.at("alibi");
  if (a.is_boolean()) {
    if (a.get<bool>()) o.score_mod.alibi = variants::AlibiBias{alibi_slopes(num_heads)};
  } else if (a.is_array()) {
    if (a.empty()) throw InputError("alibi: expected true or one slope per head, got []");
    variants::AlibiBias bias;
    for (std::size_t h = 0; h < a.size(); ++h) bias.slopes.push_back(number_field(a[h], "alibi[" + std::to_string(h) + "]"));
    o.score_mod.alibi = bias;
  } else {
    throw InputError("alibi: expected true or [H] slopes, got " + a.dump().substr(0, 40));
  }
}

}  // namespace

const std::vector<std::string>& variant_fields() {
  static const std::vector<std::string> fields{"window", "sinks", "prefix", "segments", "chunk", "softcap", "alibi"};
  return fields;
}

void variants_from(const Json& in, std::size_t num_heads, SdpaOptions& o) {
  window_from(in, o);
  sinks_from(in, o);
  prefix_from(in, o);
  segments_from(in, o);
  chunk_from(in, o);
  softcap_from(in, o);
  alibi_from(in, num_heads, o);
  o.score_mod.check(num_heads);
}

}  // namespace attn::cli
