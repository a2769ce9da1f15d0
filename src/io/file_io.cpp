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

namespace attn {

void write_file_atomically(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  if (path == "-") {
    std::cout << text << std::flush;
    if (!std::cout) throw RuntimeError("cannot write to stdout");
    return;
  }
  const fs::path target(path);
  std::error_code ec;
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
