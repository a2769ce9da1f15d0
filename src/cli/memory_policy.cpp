#include "memory_policy.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace attn::cli {

void reuse_freed_memory() {
#if defined(__GLIBC__)
  // Blocks up to 256 MiB come from the heap, and its top is trimmed only past 1 GiB free.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

}  // namespace attn::cli
