#include "attn/io/file_io.hpp"

#include <unistd.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "attn/engine/error.hpp"
#include "attn/io/interrupt_cleanup.hpp"

namespace attn {

std::string read_input(const std::string& path, std::size_t max_bytes) {
  const std::string name = path == "-" ? std::string("stdin") : path;
  std::ifstream file;
  if (path != "-") {
    if (std::filesystem::is_directory(path)) throw InputError("cannot read " + path + ": it is a folder");
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

void write_file_atomically(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  if (path == "-") {
    std::cout << text << std::flush;
    if (!std::cout) throw RuntimeError("cannot write to stdout");
    return;
  }
  if (path.empty()) throw InputError("cannot write to an empty file name");
  const fs::path target(path);
  std::error_code ec;
  if (fs::is_directory(target, ec)) throw InputError("cannot write " + path + ": it is a folder; give a file name");
  const fs::file_status link = fs::symlink_status(target, ec);
  if (fs::exists(link) && (fs::is_symlink(link) || !fs::is_regular_file(link))) {
    // /dev/stdout (a symlink), a named pipe, a device: renaming a temporary file over it would
    // replace the link or the device itself, so write straight into what it points to.
    std::ofstream out(path, std::ios::binary);
    out << text << std::flush;
    if (!out) throw RuntimeError("cannot write " + path);
    return;
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
