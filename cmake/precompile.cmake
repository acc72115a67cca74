# Precompiled headers: Armadillo, fmt and toml++ are parsed once per build
# folder instead of once per source file. CLI11 is left out: its header-only
# mode defines validator objects that every source including it must compile,
# and with it in the header most sources took about 1.5 times as long.
#
# attn_precompile(<target>) gives <target> the project's one precompiled
# header, built once by the object library attn_pch and reused by every target
# (REUSE_FROM). The header is included first in every source of <target>, so
# <target> also gets these libraries' usage requirements (include folders,
# definitions such as FMT_SHARED). A precompiled header is used only where the
# macros it was built with match, and some flags change predefined macros
# (-Wpedantic undefines __cpp_runtime_arrays), so attn_pch is built with
# attn_warnings too, and every target given the header needs attn_warnings:
# CMake's -Winvalid-pch with -Werror turns any mismatch into a build error
# instead of a silently slow build.
# ATTN_PRECOMPILE_HEADERS=OFF turns the function into a no-op.

set(ATTN_PCH_LIBRARIES armadillo_dep fmt::fmt attn_toml)
set(ATTN_PCH_HEADERS
    <armadillo>
    <fmt/format.h>
    ${CMAKE_SOURCE_DIR}/src/core/toml.hpp
    <algorithm>
    <cmath>
    <filesystem>
    <map>
    <optional>
    <string>
    <string_view>
    <vector>)

function(attn_precompile target)
  if(NOT ATTN_PRECOMPILE_HEADERS)
    return()
  endif()
  if(NOT TARGET attn_pch)
    set(source ${CMAKE_BINARY_DIR}/generated/attn_pch.cpp)
    file(CONFIGURE OUTPUT ${source}
         CONTENT "// The translation unit that builds the precompiled header (cmake/precompile.cmake).\n")
    add_library(attn_pch OBJECT ${source})
    target_link_libraries(attn_pch PRIVATE ${ATTN_PCH_LIBRARIES})
    attn_warnings(attn_pch)
    target_precompile_headers(attn_pch PRIVATE ${ATTN_PCH_HEADERS})
  endif()
  target_link_libraries(${target} PRIVATE ${ATTN_PCH_LIBRARIES})
  target_precompile_headers(${target} REUSE_FROM attn_pch)
  # GCC 12 reports the false positive of `"literal" + std::string` inside
  # libstdc++ (GCC bug 105329, the -Wno-restrict of attn_warnings) as
  # -Warray-bounds or -Wstringop-overflow instead when <string> comes from a
  # precompiled header: the same lines, the same libstdc++ code.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-array-bounds -Wno-stringop-overflow)
  endif()
endfunction()
