// libFuzzer target: the roster reader (fuzz/entries.hpp).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "entries.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  attn::fuzz::roster(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
