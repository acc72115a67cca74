// Numbers and shapes as words: one way for every message, golden file and renderer.
#pragma once

#include <string>

namespace attn {

// "4×3": the way every message and every renderer writes a shape.
std::string shape_str(std::size_t rows, std::size_t cols);

// "0.45", "1.6755", "2": a number in a message, with at most 6 significant digits.
std::string short_number(double v);

// Round-trip exact: 17 significant digits; "-inf", "inf", "nan".
std::string format_exact(double value);

}  // namespace attn
