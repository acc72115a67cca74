# The practice page's engine compiled to WebAssembly (issue 22, docs/build.md):
# ATTN_WASM=AUTO|ON|OFF, default AUTO. AUTO builds it when emscripten's em++
# is found (ATTN_EMXX if given, else on PATH), ON requires it, OFF never
# builds it. Sets ATTN_WITH_WASM
# and ATTN_ENGINE_SCRIPT (${CMAKE_BINARY_DIR}/attn-engine.js, where the module
# is written when built).
#
# The module is a second CMake project, wasm/, configured with emscripten's own
# toolchain file and built as an ExternalProject of this one: its objects
# compile in parallel and incrementally, it is built on every `cmake --build`
# (BUILD_ALWAYS: its own dependency scan decides what is out of date), after
# this build has generated the embedded lessons and the zh catalog it compiles
# too. The sources are this build's lists (cmake/sources.cmake).

set(ATTN_WASM AUTO CACHE STRING
    "Build the practice page's WebAssembly engine: AUTO (when em++ is found), ON or OFF")
set_property(CACHE ATTN_WASM PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${ATTN_WASM}" attn_wasm_mode)
if(NOT attn_wasm_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "ATTN_WASM is '${ATTN_WASM}'; use AUTO, ON or OFF")
endif()

set(ATTN_WITH_WASM OFF)
set(ATTN_ENGINE_SCRIPT ${CMAKE_BINARY_DIR}/attn-engine.js)

# The toolchain file beside the real em++ (Debian: /usr/bin/em++ links to
# /usr/share/emscripten/wrapper; emsdk: upstream/emscripten/em++), into `out`.
function(attn_emscripten_toolchain out emxx)
  file(REAL_PATH ${emxx} real)
  get_filename_component(root ${real} DIRECTORY)
  set(toolchain ${root}/cmake/Modules/Platform/Emscripten.cmake)
  if(EXISTS ${toolchain})
    set(${out} ${toolchain} PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

if(NOT attn_wasm_mode STREQUAL "OFF")
  if(ATTN_EMXX)  # -DATTN_EMXX=/path/to/em++ chooses one
    set(attn_emxx ${ATTN_EMXX})
    set(attn_searched "ATTN_EMXX=${ATTN_EMXX}")
  else()
    find_program(attn_emxx NAMES em++ NO_CACHE)
    set(attn_searched "em++ on PATH")
  endif()
  set(attn_emscripten_toolchain "")
  if(attn_emxx AND EXISTS "${attn_emxx}")
    attn_emscripten_toolchain(attn_emscripten_toolchain ${attn_emxx})
  endif()
  if(attn_emscripten_toolchain)
    set(ATTN_WITH_WASM ON)
    message(STATUS "WebAssembly engine: on (${attn_emxx}), writes ${ATTN_ENGINE_SCRIPT}")
  elseif(attn_wasm_mode STREQUAL "ON")
    message(FATAL_ERROR
      "ATTN_WASM=ON but emscripten was not found (looked at ${attn_searched}; the toolchain "
      "file cmake/Modules/Platform/Emscripten.cmake must be beside it). Install it (Debian: "
      "apt-get install emscripten, or scripts/setup --with-test-tools), or give its em++ with "
      "-DATTN_EMXX=/path/to/em++, or configure with -DATTN_WASM=AUTO (build without the "
      "page's engine when em++ is missing) or -DATTN_WASM=OFF.")
  else()
    message(STATUS "WebAssembly engine: off (ATTN_WASM=AUTO, no emscripten at ${attn_searched})")
  endif()
else()
  message(STATUS "WebAssembly engine: off (ATTN_WASM=OFF)")
endif()

if(ATTN_WITH_WASM)
  # The third-party headers the engine compiles, and only those: a folder of
  # links to each library's own headers. /usr/include itself must not be on
  # emscripten's include path (glibc's headers there break its libc's).
  set(attn_wasm_headers ${CMAKE_BINARY_DIR}/wasm-headers)
  file(MAKE_DIRECTORY ${attn_wasm_headers})
  foreach(entry "armadillo;armadillo" "armadillo_bits;armadillo_bits/config.hpp"
                "fmt;fmt/format.h" "toml++;toml++/toml.h")
    list(GET entry 0 name)
    list(GET entry 1 header)
    find_path(attn_header_root NAMES ${header} NO_CACHE REQUIRED)
    file(CREATE_LINK ${attn_header_root}/${name} ${attn_wasm_headers}/${name} SYMBOLIC)
    unset(attn_header_root)
  endforeach()
  # With a Node.js that is not Debian's (nodesource's, nvm's), Debian's
  # emscripten finds the acorn parser it runs at link time only through NODE_PATH.
  set(attn_node_path "$ENV{NODE_PATH}")
  if(EXISTS /usr/share/nodejs/acorn)
    string(JOIN ":" attn_node_path /usr/share/nodejs $ENV{NODE_PATH})
  endif()

  include(ExternalProject)
  ExternalProject_Add(attn_wasm
    SOURCE_DIR ${CMAKE_SOURCE_DIR}/wasm
    BINARY_DIR ${CMAKE_BINARY_DIR}/wasm
    CMAKE_CACHE_ARGS
      -DCMAKE_TOOLCHAIN_FILE:FILEPATH=${attn_emscripten_toolchain}
      -DCMAKE_BUILD_TYPE:STRING=Release
      -DATTN_SOURCE_DIR:PATH=${CMAKE_SOURCE_DIR}
      -DATTN_HEADERS:PATH=${attn_wasm_headers}
      -DATTN_GENERATED_SOURCES:STRING=${ATTN_EMBEDDED_CPP};${ATTN_CATALOG_CPP}
      -DATTN_ENGINE_SCRIPT:FILEPATH=${ATTN_ENGINE_SCRIPT}
      -DATTN_NODE_PATH:STRING=${attn_node_path}
      -DATTN_BUILD_PROBE:BOOL=${ATTN_BUILD_TESTS}
      -DATTN_WARNINGS_AS_ERRORS:BOOL=${ATTN_WARNINGS_AS_ERRORS}
    BUILD_ALWAYS ON
    INSTALL_COMMAND ""
    DEPENDS attn_generated_sources
    BUILD_BYPRODUCTS ${ATTN_ENGINE_SCRIPT} ${CMAKE_BINARY_DIR}/attn-engine.wasm
                     ${CMAKE_BINARY_DIR}/attn-engine.wasm.gz)
endif()
