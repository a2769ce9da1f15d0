#pragma once
// A folder of results written as a whole (docs/contracts.md's demo folder): every file goes into a
// hidden temporary sibling first, and only a finished run puts them in place. A run refused
// part-way leaves nothing behind, and runs writing into one folder at the same time never
// leave a mixture of their files.
#include <string>
#include <vector>

namespace attn {

class OutputFolder {
 public:
  // Checks that `path` can be a folder and makes the staging sibling (and any missing parent
  // folders, removed again if the run fails). A file in the way, no permission -> InputError
  // naming `flag`.
  OutputFolder(const std::string& path, const std::string& flag);
  OutputFolder(OutputFolder&& other) noexcept;
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;
  OutputFolder& operator=(OutputFolder&&) = delete;
  // Without commit() the staging folder and the parents it made are removed.
  ~OutputFolder();

  // Where the files are written until commit().
  const std::string& staging() const { return staging_; }
  // The path a staged file `name` will have once committed (what to tell the user).
  std::string final_path(const std::string& name) const;

  // Puts the staged files in place: a new folder is renamed into place at once; into an
  // existing one the files are moved under an exclusive lock on it, so concurrent runs
  // commit one after the other, each as a whole. Files already there that this run did not
  // write are kept.
  void commit();

 private:
  void discard() noexcept;  // removes the staging folder and the parents made for it

  std::string path_, staging_;
  std::vector<std::string> made_parents_;  // innermost last
  bool done_ = false;
  int signal_slot_ = -1;  // the staging folder, removed if a signal ends the run (interrupt_cleanup.hpp)
};

}  // namespace attn
