#include "attn/lessons/measure/memory_policy.hpp"

#include <cstdlib>  // any C library header defines __GLIBC__ (features.h); with none before the
                    // test below, it was never defined and neither call was made

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace attn {

void reuse_freed_memory() {
#if defined(__GLIBC__)
  // Blocks up to 256 MiB come from the heap, and its top is trimmed only past 1 GiB free. A
  // glibc that caps the threshold at 32 MiB (HEAP_MAX_SIZE / 2) refuses 256 MiB: then 32 MiB,
  // since fixing the trim threshold below also stops the threshold from rising by itself.
  if (!mallopt(M_MMAP_THRESHOLD, 256 << 20)) mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

}  // namespace attn
