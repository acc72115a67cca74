// Errors a user can act on. They are thrown deep in the code and mapped to
// exit codes only at the command boundary (src/cli/main.cpp).
#pragma once

#include <stdexcept>
#include <string>

namespace attn {

// Bad input or usage: exit 2. The message names the file, the key or line,
// and what to do about it.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The machine cannot hold what the command needs: exit 4. The message says
// what could not be held and what to ask for instead.
struct OutOfMemory : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The requested backend is not in this build or not on this machine: exit 3.
struct BackendUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace attn
