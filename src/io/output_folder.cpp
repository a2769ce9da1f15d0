#include "attn/io/output_folder.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "attn/engine/core/error.hpp"
#include "attn/io/interrupt_cleanup.hpp"

namespace attn {
namespace fs = std::filesystem;

namespace {

// The folder that holds `path` ("." for a bare name), and path's own name without a trailing '/'.
fs::path parent_of(const fs::path& path) {
  const fs::path p = path.lexically_normal();
  const fs::path clean = p.has_filename() ? p : p.parent_path();
  return clean.has_parent_path() ? clean.parent_path() : fs::path(".");
}

std::string name_of(const fs::path& path) {
  const fs::path p = path.lexically_normal();
  return (p.has_filename() ? p : p.parent_path()).filename().string();
}

// An exclusive flock on a folder for as long as it lives.
class FolderLock {
 public:
  explicit FolderLock(const std::string& dir) : fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY)) {
    if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0) {
      const int err = errno;
      if (fd_ >= 0) ::close(fd_);
      throw RuntimeError("cannot lock " + dir + ": " + std::strerror(err));
    }
  }
  ~FolderLock() { ::close(fd_); }  // closing releases the lock
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_;
};

}  // namespace

OutputFolder::OutputFolder(const std::string& path, const std::string& flag) : path_(path) {
  std::error_code ec;
  // --out named a link to a folder: the files go into that folder, and the staging folder sits
  // beside it, not beside the link, so that the final renames stay on one filesystem.
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    const fs::path resolved = fs::canonical(path, ec);
    if (ec) throw InputError(flag + ": " + path + " is a symbolic link that leads nowhere (" + ec.message() + ")");
    path_ = resolved.string();
  }
  if (fs::exists(path_, ec) && !fs::is_directory(path_, ec)) {
    throw InputError(flag + ": cannot create folder " + path + ": a file of that name exists");
  }
  // Missing parents are made now (the staging folder sits beside the result) and remembered.
  const fs::path parent = parent_of(path_);
  for (fs::path p = parent; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    made_parents_.insert(made_parents_.begin(), p.string());
  }
  for (const std::string& p : made_parents_) {
    if (!fs::create_directory(p, ec) && !fs::is_directory(p)) {
      made_parents_.clear();
      throw InputError(flag + ": cannot create folder " + path + ": " + ec.message());
    }
  }
  std::string tmpl = (parent / ("." + name_of(path_) + ".tmpXXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) {
    const int err = errno;
    discard();  // the parents just made
    throw InputError(flag + ": cannot create folder " + path + ": " + std::strerror(err));
  }
  staging_ = tmpl;
  signal_slot_ = register_temporary(staging_);
}

OutputFolder::OutputFolder(OutputFolder&& other) noexcept
    : path_(std::move(other.path_)),
      staging_(std::move(other.staging_)),
      made_parents_(std::move(other.made_parents_)),
      done_(other.done_),
      signal_slot_(other.signal_slot_) {
  other.done_ = true;
  other.signal_slot_ = -1;
}

OutputFolder::~OutputFolder() {
  if (!done_) discard();
}

void OutputFolder::discard() noexcept {
  std::error_code ec;
  if (!staging_.empty()) fs::remove_all(staging_, ec);
  unregister_temporary(signal_slot_);
  signal_slot_ = -1;
  for (auto p = made_parents_.rbegin(); p != made_parents_.rend(); ++p) fs::remove(*p, ec);  // only if empty
}

std::string OutputFolder::final_path(const std::string& name) const { return (fs::path(path_) / name).string(); }

void OutputFolder::commit() {
  // From here a signal leaves the staging folder as it is: it may already hold a replaced
  // model/ folder of the user's, which deleting it would lose.
  unregister_temporary(std::exchange(signal_slot_, -1));
  // A folder that is not there yet appears whole, in one rename.
  std::error_code ec;
  if (!fs::exists(path_, ec) && std::rename(staging_.c_str(), path_.c_str()) == 0) {
    // mkdtemp made it 0700; give it the usual permissions of a new folder.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::chmod(path_.c_str(), 0777 & ~mask);
    done_ = true;
    return;
  }
  // It exists (maybe since a concurrent run renamed its own into place): move file by file,
  // holding the folder's lock so that another run's files never interleave with these.
  if (!fs::is_directory(path_, ec)) throw InputError("cannot write into " + path_ + ": it is not a folder");
  {
    const FolderLock lock(path_);
    std::vector<fs::path> entries;
    for (const fs::directory_entry& e : fs::directory_iterator(staging_)) entries.push_back(e.path());
    for (const fs::path& from : entries) {
      const fs::path to = fs::path(path_) / from.filename();
      // A staged folder (a model/) replaces the one already there whole: rename cannot put a
      // folder onto a non-empty one, so the old one moves into the staging folder first and
      // leaves with it.
      const fs::path replaced = fs::path(staging_) / (".replaced-" + from.filename().string());
      const bool replacing = fs::is_directory(from, ec) && fs::is_directory(to, ec);
      if (replacing && std::rename(to.c_str(), replaced.c_str()) != 0) {
        throw RuntimeError("cannot replace " + to.string() + ": " + std::strerror(errno));
      }
      if (std::rename(from.c_str(), to.c_str()) != 0) {
        const int err = errno;
        if (replacing) std::rename(replaced.c_str(), to.c_str());  // the old one back, not lost with the staging
        throw RuntimeError("cannot write " + to.string() + ": " + std::strerror(err));
      }
    }
  }
  fs::remove_all(staging_, ec);
  done_ = true;
}

}  // namespace attn
