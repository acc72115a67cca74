// libFuzzer target: the golden reader (fuzz/entries.hpp).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "entries.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  attn::fuzz::golden(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
