// Reading a [[claim]] that states a shape or a quantity of the computation
// (docs/lesson-format.md, "Shape and quantity claims") rather than values.
#pragma once

#include <string>

#include "core/lesson.hpp"
#include "core/toml_read.hpp"

namespace attn {

// Whether a [[claim]] table has `shape` or `quantity`.
bool is_quantity_claim(const toml::table& claim);

// Reads the claim table `item` named `where` ("claim[3]"); every key checked,
// each error naming the file, the key, the line and the fix.
QuantityClaim read_quantity_claim(const TomlReader& toml, const toml::node& item,
                                  const std::string& where);

}  // namespace attn
