// toml++ compiled once, for the whole program, with floats read by
// std::from_chars: Debian's build reads each one through an istringstream,
// which cost a 12 MB lesson 1.3 s of its load.
#define TOML_IMPLEMENTATION
#include "core/toml.hpp"
