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

// The requested backend is not in this build or not on this machine: exit 3.
struct BackendUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "4×3": the way every message and every renderer writes a shape.
std::string shape_str(std::size_t rows, std::size_t cols);

// "0.45", "1.6755", "2": a number in a message, with at most 6 significant digits.
std::string short_number(double v);

}  // namespace attn
