// Small helpers to write JSON by hand: escaped strings, numbers as docs/json.md
// writes them, arrays of strings and matrices.
#pragma once

#include <armadillo>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

std::string json_string(std::string_view s);
// 17 significant digits; "-inf", "inf", "nan" as strings.
std::string json_number(double v);
std::string json_strings(const std::vector<std::string>& items);
std::string json_matrix(const arma::mat& M);
std::string json_row(const arma::rowvec& v);

}  // namespace attn
