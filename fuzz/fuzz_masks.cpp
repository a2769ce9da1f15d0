// Fuzz target: the mask builders (include/attn/engine/attention/mask.hpp) against their definitions,
// each written here as the plain formula over exact (128-bit) integers, cell by cell:
//   causal [Lq, Lk], bottom-right aligned:  j <= i + Lk - Lq
//   sliding window [Lq, Lk], left, right:   p - left <= j <= p + right,  p = i + Lk - Lq
//   padding [B, L, L] from lengths:         j < lengths[b]  (a length > L is refused)
//   graph [n, n] from edges:                (i, j) is an edge, or (j, i) when undirected, or
//                                           i == j with self loops  (a node >= n is refused)
// The bytes choose the sizes (window edges up to size_t's limits, where arithmetic wraps).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/mask.hpp"
#include "byte_reader.hpp"
#include "fuzz_support.hpp"

namespace attn::fuzz {
namespace {

using Wide = __int128;
constexpr std::size_t kMaxSide = 40;

std::string cell(const char* mask, std::size_t i, std::size_t j) {
  return std::string(mask) + ": cell (" + std::to_string(i) + ", " + std::to_string(j) + ")";
}

void check_shape(const Mask2& m, std::size_t rows, std::size_t cols, const char* mask) {
  check(m.shape(0) == rows && m.shape(1) == cols, std::string(mask) + ": wrong shape");
}

void check_causal(ByteReader& in) {
  const std::size_t Lq = in.small(kMaxSide), Lk = in.small(kMaxSide);
  const Mask2 m = causal_allowed(Lq, Lk);
  check_shape(m, Lq, Lk, "causal");
  for (std::size_t i = 0; i < Lq; ++i)
    for (std::size_t j = 0; j < Lk; ++j)
      check(m(i, j) == (Wide(j) <= Wide(i) + Wide(Lk) - Wide(Lq)), cell("causal", i, j));
}

void check_sliding_window(ByteReader& in) {
  const std::size_t Lq = in.small(kMaxSide), Lk = in.small(kMaxSide);
  const std::size_t left = in.extent(), right = in.extent();
  const Mask2 m = sliding_window_allowed(Lq, Lk, left, right);
  check_shape(m, Lq, Lk, "sliding window");
  for (std::size_t i = 0; i < Lq; ++i) {
    const Wide p = Wide(i) + Wide(Lk) - Wide(Lq);
    for (std::size_t j = 0; j < Lk; ++j) {
      const bool allowed = p - Wide(left) <= Wide(j) && Wide(j) <= p + Wide(right);
      check(m(i, j) == allowed, cell("sliding window", i, j) + " with left " +
                                    std::to_string(left) + ", right " + std::to_string(right));
    }
  }
}

void check_padding(ByteReader& in) {
  const std::size_t L = in.small(kMaxSide);
  std::vector<std::size_t> lengths(in.small(6));
  bool too_long = false;
  for (std::size_t& n : lengths) {
    n = in.small(L + 2);
    too_long = too_long || n > L;
  }
  try {
    const Mask3 m = padding_allowed(lengths, L);
    check(!too_long, "padding: a length beyond L was accepted");
    check(m.shape(0) == lengths.size() && m.shape(1) == L && m.shape(2) == L, "padding: wrong shape");
    for (std::size_t b = 0; b < lengths.size(); ++b)
      for (std::size_t i = 0; i < L; ++i)
        for (std::size_t j = 0; j < L; ++j) check(m(b, i, j) == (j < lengths[b]), cell("padding", i, j));
  } catch (const InputError& e) {
    check(too_long, std::string("padding: refused: ") + e.what());
  }
}

void check_graph(ByteReader& in) {
  const std::size_t n = in.small(kMaxSide);
  const bool directed = in.flag(), self_loops = in.flag();
  std::vector<std::pair<std::size_t, std::size_t>> edges(in.small(60));
  bool outside = false;
  for (auto& [a, b] : edges) {
    a = in.small(n + 1), b = in.small(n + 1);
    outside = outside || a >= n || b >= n;
  }
  try {
    const Mask2 m = graph_allowed(n, edges, directed, self_loops);
    check(!outside, "graph: an edge outside the graph was accepted");
    check_shape(m, n, n, "graph");
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        bool edge = self_loops && i == j;
        for (const auto& [a, b] : edges) edge = edge || (a == i && b == j) || (!directed && a == j && b == i);
        check(m(i, j) == edge, cell("graph", i, j));
      }
  } catch (const InputError& e) {
    check(outside, std::string("graph: refused: ") + e.what());
  }
}

}  // namespace
}  // namespace attn::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  attn::fuzz::ByteReader in(data, size);
  // Each chunk of bytes picks one builder, until the bytes run out.
  do {
    switch (in.byte() % 4) {
      case 0: attn::fuzz::check_causal(in); break;
      case 1: attn::fuzz::check_sliding_window(in); break;
      case 2: attn::fuzz::check_padding(in); break;
      default: attn::fuzz::check_graph(in); break;
    }
  } while (!in.empty());
  return 0;
}
