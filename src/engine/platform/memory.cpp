#include "attn/engine/platform/memory.hpp"

#include <charconv>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace attn {
namespace {

constexpr std::uintptr_t kHugePage = std::uintptr_t(2) << 20;

#if defined(__linux__)
struct PageRange {
  std::uintptr_t begin, end;
};

// The whole pages inside [p, p + bytes): advice must not reach the bytes of a neighbour.
PageRange inner_pages(const void* p, std::size_t bytes) {
  static const auto page = std::uintptr_t(::sysconf(_SC_PAGESIZE));
  const auto first = reinterpret_cast<std::uintptr_t>(p);
  return {(first + page - 1) / page * page, (first + bytes) / page * page};
}
#endif

// madvise over those pages, when there are at least min_bytes of them.
[[maybe_unused]] bool advise(const void* p, std::size_t bytes, std::uintptr_t min_bytes, int advice) {
#if defined(__linux__)
  const PageRange r = inner_pages(p, bytes);
  if (r.end <= r.begin || r.end - r.begin < min_bytes) return false;
  return ::madvise(reinterpret_cast<void*>(r.begin), r.end - r.begin, advice) == 0;
#else
  (void)p, (void)bytes, (void)min_bytes, (void)advice;
  return false;
#endif
}

// "start-end" in hex, as smaps starts a mapping's lines.
bool parse_range(const std::string& text, std::uintptr_t& from, std::uintptr_t& to) {
  const char *first = text.data(), *last = first + text.size();
  const auto [dash, ok] = std::from_chars(first, last, from, 16);
  if (ok != std::errc() || dash == last || *dash != '-') return false;
  const auto [end, ok2] = std::from_chars(dash + 1, last, to, 16);
  return ok2 == std::errc() && end == last;
}

}  // namespace

bool prefer_huge_pages(void* p, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  return advise(p, bytes, kHugePage, MADV_HUGEPAGE);
#else
  (void)p, (void)bytes;
  return false;
#endif
}

bool populate_for_writing(void* p, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  return advise(p, bytes, 1, MADV_POPULATE_WRITE);
#else
  (void)p, (void)bytes;
  return false;
#endif
}

std::size_t huge_page_bytes(std::istream& smaps, const void* p, std::size_t bytes) {
  const auto begin = reinterpret_cast<std::uintptr_t>(p), end = begin + bytes;
  bool inside = false;  // whether the mapping whose fields are being read lies in [begin, end)
  std::size_t total = 0;
  std::string line;
  while (std::getline(smaps, line)) {
    std::istringstream fields(line);
    std::string first;
    fields >> first;
    std::uintptr_t from = 0, to = 0;
    if (parse_range(first, from, to)) {  // a mapping's first line: "start-end perms offset ..."
      inside = begin <= from && to <= end;
    } else if (inside && first == "AnonHugePages:") {
      std::size_t kib = 0;
      fields >> kib;
      total += kib * 1024;
    }
  }
  return total;
}

std::size_t huge_page_bytes(const void* p, std::size_t bytes) {
  std::ifstream smaps("/proc/self/smaps");
  return smaps ? huge_page_bytes(smaps, p, bytes) : 0;
}

}  // namespace attn
