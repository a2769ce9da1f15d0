#pragma once
// What a run has half-written is removed when it is stopped by Ctrl-C, SIGTERM, SIGHUP or
// SIGPIPE (a reader such as `head` that stopped reading): staging folders (OutputFolder) and
// temporary files (write_file_atomically) are registered while they exist, and the handler
// deletes them with async-signal-safe system calls only, then lets the signal end the process
// as it would have (exit status 128 + the signal's number).
#include <string>

namespace attn {

// Installs the handlers; call once at the start of main.
void remove_temporaries_on_signal();

// A path to delete (a file, or a folder and all it holds) if a signal ends the run while it is
// registered. Returns a slot for unregister_temporary, or -1 when all slots are taken (the path
// is then simply not cleaned up on a signal). The path is copied.
int register_temporary(const std::string& path) noexcept;
void unregister_temporary(int slot) noexcept;

}  // namespace attn
