#pragma once
// Writing a file so that a failed run never leaves half of it behind (DESIGN.md's demo folder).
#include <cstddef>
#include <string>

namespace attn {

// Writes text to path through a temporary file in the same folder and a rename, so a failed
// run never leaves a half-written file. path "-" writes to stdout. A path where no file can be
// created (missing folder, no permission) -> InputError; a write that fails -> RuntimeError.
void write_file_atomically(const std::string& path, const std::string& text);

// The whole of a file, or of stdin when path is "-", read in chunks so that more than
// max_bytes (/dev/zero, a runaway pipe) is refused after max_bytes + 1, not buffered. A missing
// or unreadable file, a folder, too many bytes -> InputError naming the input; a read that
// fails part-way -> RuntimeError.
std::string read_input(const std::string& path, std::size_t max_bytes);

}  // namespace attn
