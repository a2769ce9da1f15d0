#pragma once
// Advice to Linux about large buffers that are streamed: model weights, a KV cache, a
// benchmark's inputs.
//
// A 4 KiB page costs a TLB entry; a cache of tens of MiB spans thousands of them, and every new
// page is a page walk (under a hypervisor, a walk through two page tables). Linux can back such a
// buffer with 2 MiB pages (transparent huge pages), but in its "madvise" mode, Debian's
// default, only where the process asks. PyTorch (THP_MEM_ALLOC_ENABLE) and mimalloc ask the
// same way. Both calls are advice: on a kernel without the feature, nothing changes.
#include <cstddef>
#include <istream>
#include <vector>

namespace attn {

// Asks for 2 MiB pages over the whole 4 KiB pages inside [p, p + bytes), when that is at least
// 2 MiB (Linux uses them for the 2 MiB-aligned parts). Call it before the buffer is first
// written: pages already faulted in stay 4 KiB. True when Linux took the advice.
bool prefer_huge_pages(void* p, std::size_t bytes);

// n value-initialised elements, on 2 MiB pages where Linux offers them (the advice comes
// between the allocation and the first write).
template <class T>
std::vector<T> huge_page_vector(std::size_t n) {
  std::vector<T> v;
  v.reserve(n);
  prefer_huge_pages(v.data(), n * sizeof(T));
  v.resize(n);
  return v;
}

// Faults the whole pages inside [p, p + bytes) in with one call (MADV_POPULATE_WRITE, Linux
// 5.14), not one fault per page as a first write would. True when Linux did it.
bool populate_for_writing(void* p, std::size_t bytes);

// Bytes of [p, p + bytes) that sit on 2 MiB pages: the AnonHugePages of the mappings of
// /proc/self/smaps that lie inside the range (prefer_huge_pages makes the advised pages a
// mapping of their own). A lower bound: advised pages that merge into a neighbouring mapping
// with the same flags are not counted. 0 where there is no such file.
std::size_t huge_page_bytes(const void* p, std::size_t bytes);
// The same, read from smaps text (what the tests feed it).
std::size_t huge_page_bytes(std::istream& smaps, const void* p, std::size_t bytes);

}  // namespace attn
