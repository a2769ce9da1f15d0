#pragma once
// Writing a file so that a failed run never leaves half of it behind (DESIGN.md's demo folder).
#include <string>

namespace attn {

// Writes text to path through a temporary file in the same folder and a rename, so a failed
// run never leaves a half-written file. path "-" writes to stdout. A path where no file can be
// created (missing folder, no permission) -> InputError; a write that fails -> RuntimeError.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace attn
