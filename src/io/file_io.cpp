#include "attn/io/file_io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "attn/engine/core/error.hpp"
#include "attn/io/interrupt_cleanup.hpp"

namespace attn {

std::string read_input(const std::string& path, std::size_t max_bytes) {
  const std::string name = path == "-" ? std::string("stdin") : path;
  std::ifstream file;
  if (path != "-") {
    std::error_code ec;  // a link loop or a bad path: left to the open below, which names the error
    if (std::filesystem::is_directory(path, ec)) throw InputError("cannot read " + path + ": it is a folder");
    file.open(path, std::ios::binary);
    // A missing or unreadable input file is the user's to fix: exit 2, like a malformed one.
    if (!file) throw InputError("cannot read " + path + ": " + std::strerror(errno));
  }
  std::istream& in = path == "-" ? std::cin : file;
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes) {
      const bool mib = max_bytes >= (1u << 20);
      throw InputError(name + ": input larger than " + std::to_string(mib ? max_bytes >> 20 : max_bytes) +
                       (mib ? " MiB" : " bytes"));
    }
  }
  if (in.bad()) throw RuntimeError("cannot read " + name + ": " + std::strerror(errno));
  return text;
}

namespace {

// Reads what is left of fd into a string, refusing more than max_bytes; `name` for messages.
std::string read_all(int fd, const std::string& name, std::size_t max_bytes) {
  std::string text;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw RuntimeError("cannot read " + name + ": " + std::strerror(errno));
    if (n == 0) return text;
    text.append(chunk, static_cast<std::size_t>(n));
    if (text.size() > max_bytes) throw InputError(name + ": larger than " + std::to_string(max_bytes) + " bytes");
  }
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_file_in_folder(const std::string& dir, const std::string& relative, std::size_t max_bytes) {
  const std::string name = (std::filesystem::path(dir) / relative).string();
  Fd at{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};  // the folder the user named
  if (at.fd < 0) throw InputError("cannot read " + dir + ": " + std::strerror(errno));
  std::size_t start = 0;
  for (;;) {
    const std::size_t slash = relative.find('/', start);
    const std::string part = relative.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part.empty() || part == "." || part == "..")
      throw InputError(name + ": not a path inside " + dir);
    const bool last = slash == std::string::npos;
    // O_NOFOLLOW: a link, at any step, is refused (ELOOP), never followed. O_NONBLOCK: opening a
    // named pipe returns at once instead of waiting for a writer; fstat then refuses it.
    const int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? O_NONBLOCK : O_DIRECTORY);
    Fd next{::openat(at.fd, part.c_str(), flags)};
    if (next.fd < 0) {
      const int err = errno;
      if (err == ELOOP || (!last && err == ENOTDIR))
        throw InputError(name + ": a symbolic link or not a folder; only the folder's own files are read");
      throw InputError("cannot read " + name + ": " + std::strerror(err));
    }
    if (last) {
      struct stat st {};
      if (::fstat(next.fd, &st) != 0 || !S_ISREG(st.st_mode))
        throw InputError(name + ": not a regular file (a folder, a named pipe or a device)");
      return read_all(next.fd, name, max_bytes);
    }
    std::swap(at.fd, next.fd);
    start = slash + 1;
  }
}

std::string model_file(const std::string& dir, const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path path = fs::path(dir) / name;
  std::error_code ec;
  if (!fs::is_symlink(fs::symlink_status(path, ec))) return path.string();
  const fs::path target = fs::canonical(path, ec);
  if (ec) throw InputError(path.string() + ": a symbolic link that leads nowhere (" + ec.message() + ")");
  const fs::path folder = fs::canonical(dir, ec);
  auto inside = [&](const fs::path& root) {
    const fs::path rel = target.lexically_relative(root);
    return !root.empty() && !rel.empty() && *rel.begin() != "..";
  };
  const bool snapshot = folder.parent_path().filename() == "snapshots";
  if (inside(folder) || (snapshot && inside(folder.parent_path().parent_path() / "blobs"))) return path.string();
  throw InputError(path.string() + ": a symbolic link out of the model folder (to " + target.string() +
                   "); copy the file into the folder instead");
}

bool is_stdout_name(const std::string& path) {
  return path == "-" || path == "/dev/stdout" || path == "/dev/fd/1" || path == "/proc/self/fd/1";
}

void write_file_atomically(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  // stdout by name too: opening /dev/stdout anew would write at offset 0 of a file that stdout
  // is redirected to, under whatever the process then prints through std::cout.
  if (is_stdout_name(path)) {
    std::cout << text << std::flush;
    if (!std::cout) throw RuntimeError("cannot write to stdout");
    return;
  }
  if (path.empty()) throw InputError("cannot write to an empty file name");
  const fs::path target(path);
  std::error_code ec;
  // A stream the user named (/dev/stdout, /dev/null, a shell's /dev/fd/63): written through,
  // as a shell's redirection would; renaming a file over it would replace the device itself.
  if (path.rfind("/dev/", 0) == 0 || path.rfind("/proc/self/fd/", 0) == 0) {
    std::ofstream out(path, std::ios::binary);
    out << text << std::flush;
    if (!out) throw RuntimeError("cannot write " + path);
    return;
  }
  if (fs::is_directory(target, ec)) throw InputError("cannot write " + path + ": it is a folder; give a file name");
  // Any other symbolic link there is replaced by the rename below, never written through: a
  // folder someone hands you may hold report.html -> ../victim.txt. A named pipe or a device
  // would block or be replaced: refused.
  const fs::file_status link = fs::symlink_status(target, ec);
  if (fs::exists(link) && !fs::is_symlink(link) && !fs::is_regular_file(link)) {
    throw InputError("cannot write " + path + ": it is not a regular file (a named pipe or a device); "
                     "write to a file, or to /dev/stdout and redirect");
  }
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmpl = (dir / ("." + target.filename().string() + ".tmpXXXXXX")).string();
  const int fd = mkstemp(tmpl.data());
  // A file that cannot even be created (no such folder, no permission) is a bad path the
  // user gave: exit 2. A write that fails once started (a full disk) is a runtime error: 1.
  if (fd < 0) throw InputError("cannot write " + path + ": " + std::strerror(errno));
  struct Registered {  // removed by a signal's handler until renamed or unlinked below
    int slot;
    ~Registered() { unregister_temporary(slot); }
  } registered{register_temporary(tmpl)};
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmpl.c_str());
      throw RuntimeError("cannot write " + path + ": " + std::strerror(err));
    }
    done += static_cast<std::size_t>(n);
  }
  // mkstemp creates the file 0600; give it the usual permissions of a new file.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  if (::close(fd) != 0 || std::rename(tmpl.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmpl.c_str());
    throw RuntimeError("cannot write " + path + ": " + std::strerror(err));
  }
}

}  // namespace attn
