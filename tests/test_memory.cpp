// platform/memory.hpp: advice about large buffers reaches exactly the whole pages inside them,
// and the huge-page count reads /proc/self/smaps as the kernel writes it.
#include <doctest/doctest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "attn/engine/platform/memory.hpp"

namespace {

constexpr std::size_t kMiB = std::size_t(1) << 20;

// The VmFlags of the mapping of /proc/self/smaps that holds address a ("" if none does).
std::string vm_flags_at(const void* a) {
  const auto x = reinterpret_cast<std::uintptr_t>(a);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool here = false;
  while (std::getline(smaps, line)) {
    const std::size_t dash = line.find('-'), space = line.find(' ');
    if (dash != std::string::npos && space != std::string::npos && dash < space && line[space - 1] != ':') {
      const std::uintptr_t from = std::stoull(line.substr(0, dash), nullptr, 16),
                           to = std::stoull(line.substr(dash + 1, space - dash - 1), nullptr, 16);
      here = from <= x && x < to;
    } else if (here && line.rfind("VmFlags:", 0) == 0) {
      return line.substr(8) + " ";
    }
  }
  return "";
}

bool advised_huge(const void* a) { return vm_flags_at(a).find(" hg ") != std::string::npos; }

// A fresh anonymous mapping, 2 MiB-aligned inside: no earlier advice in this process (freed
// heap memory keeps its mapping's flags) can reach it.
class FreshMapping {
 public:
  explicit FreshMapping(std::size_t bytes) : bytes_(bytes + 2 * kMiB) {
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    map_ = p == MAP_FAILED ? nullptr : static_cast<char*>(p);
  }
  ~FreshMapping() {
    if (map_) ::munmap(map_, bytes_);
  }
  FreshMapping(const FreshMapping&) = delete;
  FreshMapping& operator=(const FreshMapping&) = delete;
  char* aligned() const {
    const auto a = reinterpret_cast<std::uintptr_t>(map_);
    return map_ + ((a + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB) - a);
  }
  explicit operator bool() const { return map_ != nullptr; }

 private:
  std::size_t bytes_;
  char* map_;
};

}  // namespace

TEST_CASE("memory: 2 MiB pages are asked for the whole pages inside a buffer, and only there") {
  const std::size_t page = std::size_t(::sysconf(_SC_PAGESIZE));
  const FreshMapping block(8 * kMiB);
  REQUIRE(block);
  char* const base = block.aligned();
  // A buffer that starts 100 bytes into a page and ends 100 bytes into another: its first and
  // last pages hold a neighbour's bytes too, and must keep the default.
  char* const buffer = base + page + 100;
  const std::size_t bytes = 6 * kMiB;
  if (!attn::prefer_huge_pages(buffer, bytes)) {
    MESSAGE("this kernel refuses MADV_HUGEPAGE (no transparent huge pages): nothing to check");
    return;
  }
  CHECK_FALSE(advised_huge(buffer));                // the partial first page
  CHECK(advised_huge(base + 2 * page));             // the first whole page
  CHECK(advised_huge(buffer + bytes / 2));
  CHECK(advised_huge(buffer + bytes - 200));        // the last whole page
  CHECK_FALSE(advised_huge(buffer + bytes));        // the partial last page
  CHECK_FALSE(advised_huge(base + 8 * kMiB - 1));   // past the buffer

  // Under 2 MiB of whole pages there is no 2 MiB page to give: no advice.
  const FreshMapping small(4 * kMiB);
  REQUIRE(small);
  char* const s = small.aligned();
  CHECK_FALSE(attn::prefer_huge_pages(s + 1, 2 * kMiB));  // 2 MiB less a page of whole pages
  CHECK_FALSE(advised_huge(s + kMiB));
  CHECK(attn::prefer_huge_pages(s, 2 * kMiB));
  CHECK(advised_huge(s + kMiB));
}

TEST_CASE("memory: huge-page bytes count the mappings inside the range, from smaps text") {
  // Four mappings as /proc/self/smaps prints them (fields abridged): one before the range, two
  // inside it (4 and 2 MiB of huge pages), one that runs past its end (the range ends 2 MiB into
  // it; its 8 MiB are not counted: those pages may belong to a neighbour).
  const std::string smaps =
      "7f0000000000-7f0000400000 rw-p 00000000 00:00 0\n"
      "Size:               4096 kB\n"
      "AnonHugePages:      4096 kB\n"
      "VmFlags: rd wr mr mw me ac hg\n"
      "7f0000400000-7f0000c00000 rw-p 00000000 00:00 0\n"
      "AnonHugePages:      4096 kB\n"
      "THPeligible:    1\n"
      "7f0000c00000-7f0000e00000 rw-p 00000000 00:00 0 \n"
      "AnonHugePages:      2048 kB\n"
      "7f0000e00000-7f0002000000 rw-p 00000000 00:00 0                          [heap]\n"
      "AnonHugePages:      8192 kB\n";
  const auto* begin = reinterpret_cast<const void*>(std::uintptr_t(0x7f0000400000));
  std::istringstream in(smaps);
  CHECK(attn::huge_page_bytes(in, begin, 12 * kMiB) == 6 * kMiB);
  std::istringstream again(smaps);  // a range that starts inside the first mapping counts neither it nor the rest
  CHECK(attn::huge_page_bytes(again, reinterpret_cast<const void*>(std::uintptr_t(0x7f0000001000)), 4 * kMiB) == 0);
  // Lines that are not a mapping's first line, nor a count, neither start a mapping nor add.
  std::istringstream junk(
      "7f0000400000-7f0000600000 rw-p 00000000 00:00 0\n"
      "AnonHugePages:      2048 kB\n"
      "not-a-range rw-p\n-\nzz-yy rw-p\nAnonHugePages:\n7f0000600000-\n");
  CHECK(attn::huge_page_bytes(junk, begin, 10 * kMiB) == 2 * kMiB);
}

TEST_CASE("memory: a huge-page vector is an ordinary zeroed vector, and this process's own count stays within it") {
  std::vector<float> v = attn::huge_page_vector<float>(3 * kMiB);
  REQUIRE(v.size() == 3 * kMiB);
  CHECK(v.front() == 0.0f);
  CHECK(v[v.size() / 2] == 0.0f);
  CHECK(v.back() == 0.0f);
  const std::size_t on_huge = attn::huge_page_bytes(v.data(), v.size() * sizeof(float));
  CHECK(on_huge <= v.size() * sizeof(float));
  CHECK(on_huge % (2 * kMiB) == 0);
  MESSAGE("12 MiB vector: " << on_huge / kMiB << " MiB on 2 MiB pages");
}
