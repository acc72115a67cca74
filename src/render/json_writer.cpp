// JSON writing helpers.
#include "render/json_writer.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/number_text.hpp"
#include "render/numbers.hpp"

namespace attn {

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("\\u{:04x}", c);
        else
          out += c;
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  return std::isfinite(v) ? format_exact(v) : json_string(format_exact(v));
}

std::string json_strings(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + json_string(items[i]);
  return out + "]";
}

std::string json_row(const arma::rowvec& v) {
  std::string out = "[";
  for (std::size_t c = 0; c < v.n_elem; ++c) out += (c ? ", " : "") + json_number(v(c));
  return out + "]";
}

std::string json_matrix(const arma::mat& M) {
  std::string out = "[";
  for (std::size_t r = 0; r < M.n_rows; ++r) out += (r ? ", " : "") + json_row(M.row(r));
  return out + "]";
}

}  // namespace attn
