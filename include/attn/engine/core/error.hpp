#pragma once
// The two kinds of failure a user can see, and the exit codes they map to.
//   InputError   -> exit 2: bad usage or input (malformed JSON, wrong shape, invalid UTF-8, ...)
//   RuntimeError -> exit 1: the input was fine but the run failed (I/O, no device, ...)
#include <stdexcept>
#include <string>

namespace attn {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct RuntimeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace attn
