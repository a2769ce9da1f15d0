#include "attn/engine/attention/kv_cache.hpp"

#include <bit>
#include <cstdint>
#include <string>

#include "attn/engine/core/bf16.hpp"
#include "attn/engine/core/error.hpp"

namespace attn {

KvDtype parse_kv_dtype(std::string_view name) {
  if (name == "f64") return KvDtype::float64;
  if (name == "bf16") return KvDtype::bfloat16;
  throw InputError("--kv-dtype: expected f64 or bf16, got \"" + std::string(name) + "\"");
}

const char* kv_dtype_name(KvDtype dtype) { return dtype == KvDtype::bfloat16 ? "bf16" : "f64"; }

std::size_t kv_dtype_bytes(KvDtype dtype) { return dtype == KvDtype::bfloat16 ? 2 : sizeof(double); }

double kv_stored_value(KvDtype dtype, double x) {
  if (dtype == KvDtype::float64) return x;
  const float f = static_cast<float>(x);
  std::uint16_t bits;
  round_to_bf16(&f, 1, &bits);
  return std::bit_cast<float>(std::uint32_t(bits) << 16);
}

KvCache::KvCache(std::size_t num_kv_heads, std::size_t head_dim, std::size_t window, KvDtype dtype)
    : num_kv_heads_(num_kv_heads), head_dim_(head_dim), window_(window), dtype_(dtype),
      k_(num_kv_heads), v_(num_kv_heads) {
  if (num_kv_heads == 0 || head_dim == 0) {
    throw InputError("kv cache: expected num_kv_heads >= 1 and head_dim >= 1");
  }
}

void KvCache::append(std::span<const double> k, std::span<const double> v) {
  const std::size_t d = head_dim_;
  if (k.size() != num_kv_heads_ * d || v.size() != num_kv_heads_ * d) {
    throw InputError("kv cache: expected k and v of " + std::to_string(num_kv_heads_ * d) +
                     " values ([Hkv, d]), got " + std::to_string(k.size()) + " and " +
                     std::to_string(v.size()));
  }
  const bool evict = window_ > 0 && length_ == window_;
  for (std::size_t h = 0; h < num_kv_heads_; ++h) {
    if (evict) {
      k_[h].erase(k_[h].begin(), k_[h].begin() + static_cast<std::ptrdiff_t>(d));
      v_[h].erase(v_[h].begin(), v_[h].begin() + static_cast<std::ptrdiff_t>(d));
    }
    k_[h].insert(k_[h].end(), k.begin() + h * d, k.begin() + (h + 1) * d);
    v_[h].insert(v_[h].end(), v.begin() + h * d, v.begin() + (h + 1) * d);
    if (dtype_ != KvDtype::float64)  // the new row, as the cache holds it
      for (std::vector<double>* rows : {&k_[h], &v_[h]})
        for (auto x = rows->end() - static_cast<std::ptrdiff_t>(d); x != rows->end(); ++x) *x = kv_stored_value(dtype_, *x);
  }
  length_ += evict ? 0 : 1;
  ++tokens_seen_;
}

std::span<const double> KvCache::keys(std::size_t kv_head) const { return k_.at(kv_head); }
std::span<const double> KvCache::values(std::size_t kv_head) const { return v_.at(kv_head); }

std::size_t KvCache::bytes(std::size_t bytes_per_value) const {
  return 2 * num_kv_heads_ * length_ * head_dim_ * (bytes_per_value ? bytes_per_value : kv_dtype_bytes(dtype_));
}

TensorD3 KvCache::as_tensor(bool keys) const {
  TensorD3 t = TensorD3::from_shape({num_kv_heads_, length_, head_dim_});
  for (std::size_t h = 0; h < num_kv_heads_; ++h) {
    const std::span<const double> src = keys ? this->keys(h) : values(h);
    std::copy(src.begin(), src.end(), t.data() + h * length_ * head_dim_);
  }
  return t;
}

}  // namespace attn
