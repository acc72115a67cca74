// Reading a mask pattern (window, global, stride) from a lesson's [model] or
// from an "attended" claim, every value checked: errors name the file, the
// key, the line and the fix (exit 2).
#pragma once

#include <cstdint>
#include <string_view>

#include "core/lesson.hpp"
#include "core/mask_pattern.hpp"
#include "core/toml_read.hpp"

namespace attn {

// window, global and stride of table `t` (named `where`: "model",
// "claim[2]") for a sequence of `n` tokens; `causal` as given.
MaskPattern read_mask_pattern(const TomlReader& toml, const toml::table& t,
                              std::string_view where, std::uint64_t n, bool causal);

// The lesson's [model] window, global and stride (read after [input] and
// [decode]): refused with cross-attention and with a KV cache.
void read_lesson_mask_pattern(const TomlReader& toml, const toml::table* model, Lesson& lesson);

}  // namespace attn
