#pragma once
#include <algorithm>
#include <numeric>
#include <vector>

namespace attn {

// Indices of the k largest values, largest first; ties keep the lower index first
// (torch.topk leaves tie order unspecified; a teaching tool should not).
template <class Row>
std::vector<std::size_t> top_k_indices(const Row& row, std::size_t k) {
  std::vector<std::size_t> idx(row.size());
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min(k, idx.size());
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return row[a] > row[b]; });
  idx.resize(k);
  return idx;
}

}  // namespace attn
