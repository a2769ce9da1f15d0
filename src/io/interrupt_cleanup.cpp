#include "attn/io/interrupt_cleanup.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace attn {
namespace {

constexpr int kSlots = 16;
constexpr std::size_t kPathMax = 4096;

// A slot is written while free (state 0 -> 1), published (2), and read by the handler only
// when published; unregistering (2 -> 0) makes the handler skip it. The handler takes a slot
// (2 -> 3) before deleting, and unregistering waits while it is taken: a handler on another
// thread never deletes a folder whose commit has begun (the process ends with that handler).
struct Slot {
  std::atomic<int> state{0};
  char path[kPathMax];
};
Slot slots[kSlots];

// Deletes what `name` (relative to the open folder `dir`) is, recursing into folders through
// getdents64: no allocation, no locks, only calls that are async-signal-safe (getdents64 is a
// plain system call). Staging folders hold at most a model/ folder; the depth is capped anyway.
void remove_at(int dir, const char* name, int depth) {
  if (::unlinkat(dir, name, 0) == 0 || depth > 8) return;
  const int fd = ::openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  alignas(8) char buffer[4096];
  // Deleting while listing may skip entries: list again until a pass finds nothing (at most 4).
  for (int pass = 0; pass < 4; ++pass) {
    bool found = false;
    ::lseek(fd, 0, SEEK_SET);
    for (ssize_t n; (n = ::getdents64(fd, buffer, sizeof buffer)) > 0;) {
      for (ssize_t at = 0; at < n;) {
        const auto* e = reinterpret_cast<const dirent64*>(buffer + at);
        at += e->d_reclen;
        if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
        found = true;
        remove_at(fd, e->d_name, depth + 1);
      }
    }
    if (!found) break;
  }
  ::close(fd);
  ::unlinkat(dir, name, AT_REMOVEDIR);
}

extern "C" void on_signal(int sig) {
  for (Slot& slot : slots) {
    int published = 2;
    if (slot.state.compare_exchange_strong(published, 3, std::memory_order_acq_rel)) remove_at(AT_FDCWD, slot.path, 0);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void remove_temporaries_on_signal() {
  // SIGPIPE too: `attn-cli flash --replay ... | head` ends when head stops reading.
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    struct sigaction old {};
    ::sigaction(sig, nullptr, &old);
    if (old.sa_handler == SIG_IGN) continue;  // started with it ignored (nohup): keep it so
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);  // the others wait while one handler cleans up
    for (int other : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&action.sa_mask, other);
    ::sigaction(sig, &action, nullptr);
  }
}

int register_temporary(const std::string& path) noexcept {
  if (path.empty() || path.size() >= kPathMax) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (!slots[i].state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) continue;
    std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
    slots[i].state.store(2, std::memory_order_release);
    return i;
  }
  return -1;
}

void unregister_temporary(int slot) noexcept {
  if (slot < 0 || slot >= kSlots) return;
  for (int published = 2; !slots[slot].state.compare_exchange_strong(published, 0, std::memory_order_acq_rel);
       published = 2) {
    if (published != 3) return;  // not published: nothing to take back
    ::sched_yield();            // a handler is deleting it and will end the process
  }
}

}  // namespace attn
