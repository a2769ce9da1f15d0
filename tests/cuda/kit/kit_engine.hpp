#pragma once
// The kit's mask variants (kit.hpp's KitRules) as the engine's own descriptor, for the two
// programs of the kit that link the engine: the case writer's float64 reference
// (kit_cases.cpp) and the CUDA test through attention() (test_cuda_main.cpp). The driver, which
// has no engine, gives the kernel kit_rules() instead.
#include <utility>

#include "attn/engine/attention/variant.hpp"
#include "kit.hpp"

namespace attn::kit {

inline AttentionMask case_mask(const Shape& s) {
  using R = KitRules;
  AttentionMask m;
  switch (s.mask) {
    case MaskKind::window:
    case MaskKind::bitmap_window: m.window = variants::SlidingWindow{R::left, R::right, R::sinks}; break;
    case MaskKind::prefix: m.prefix = variants::PrefixLM{R::prefix(s.Lq)}; break;
    case MaskKind::strided: m.stride = variants::Strided{R::stride}; break;
    case MaskKind::chunked: m.chunk = variants::Chunked{R::chunk}; break;
    case MaskKind::documents: {
      CaseDocuments ids = document_ids(s);
      m.segments = variants::Documents{std::move(ids.q), std::move(ids.k)};
      break;
    }
    case MaskKind::combined: {
      CaseDocuments ids = document_ids(s);
      m.window = variants::SlidingWindow{R::left, R::right, R::sinks};
      m.segments = variants::Documents{std::move(ids.q), std::move(ids.k)};
      m.chunk = variants::Chunked{R::chunk};
      break;
    }
    default: break;
  }
  return m;
}

}  // namespace attn::kit
