// Numbers and shapes as words.
#include "core/number_text.hpp"

#include <fmt/format.h>

#include <cmath>

namespace attn {

std::string shape_str(std::size_t rows, std::size_t cols) {
  return fmt::format("{}×{}", rows, cols);
}

std::string short_number(double v) {
  return fmt::format("{:.6g}", v);
}

std::string format_exact(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  return fmt::format("{:.17g}", value);
}

}  // namespace attn
