#pragma once
// Writing a file so that a failed run never leaves half of it behind (docs/contracts.md's demo folder).
#include <cstddef>
#include <string>

namespace attn {

// Writes text to path through a temporary file in the same folder and a rename, so a failed
// run never leaves a half-written file. path "-" writes to stdout, and a stream the user
// names (/dev/stdout, /dev/null, /dev/fd/N) is written through. A symbolic link at path is
// replaced, never written through; a named pipe or device there is refused. A path where no
// file can be created (missing folder, no permission) -> InputError; a write that fails ->
// RuntimeError.
void write_file_atomically(const std::string& path, const std::string& text);

// Whether path names stdout itself ("-", /dev/stdout, /dev/fd/1, /proc/self/fd/1): what
// write_file_atomically writes through std::cout, so a caller's own notes go to stderr.
bool is_stdout_name(const std::string& path);

// The whole of a file, or of stdin when path is "-", read in chunks so that more than
// max_bytes (/dev/zero, a runaway pipe) is refused after max_bytes + 1, not buffered. A missing
// or unreadable file, a folder, too many bytes -> InputError naming the input; a read that
// fails part-way -> RuntimeError.
std::string read_input(const std::string& path, std::size_t max_bytes);

// A file inside a folder someone handed you (report's demo or train folder), `relative` to it
// ("attention.png", "snapshots/step_80.png"): read only when no step below `dir` is a symbolic
// link and the file is a regular one, so a link to ~/secret or a named pipe in the folder is
// refused (InputError naming it), never followed, embedded or waited on. `dir` itself may be a
// link: the user named it. More than max_bytes -> InputError.
std::string read_file_in_folder(const std::string& dir, const std::string& relative, std::size_t max_bytes);

// DIR/NAME for a model loader, refused (InputError naming both ends) when it is a symbolic link
// that leaves the folder: no command reads a file outside the folder the user named. The one
// exception is Hugging Face's cache, whose snapshot folders (.../snapshots/<hash>/) link each
// file into the model's own .../blobs/. A missing file is the loader's to report.
std::string model_file(const std::string& dir, const std::string& name);

}  // namespace attn
