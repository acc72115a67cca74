# The libFuzzer build (ATTN_FUZZ=ON, clang only; `scripts/fuzz` builds it in
# build-fuzz/, docs/fuzzing.md): every project library is compiled with
# -fsanitize=fuzzer-no-link,address,undefined (coverage for libFuzzer, ASan
# and UBSan, which stops at its first report so that libFuzzer counts it as a
# crash), and the targets of fuzz/ link with -fsanitize=fuzzer,address,undefined.
option(ATTN_FUZZ "Build the libFuzzer targets of fuzz/ (clang only; see scripts/fuzz)" OFF)

if(ATTN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "ATTN_FUZZ=ON needs clang (libFuzzer): configure with "
                        "CC=clang CXX=clang++, as scripts/fuzz does")
  endif()
  if(ATTN_SANITIZE)
    message(FATAL_ERROR "ATTN_FUZZ=ON brings its own sanitizers: leave ATTN_SANITIZE off")
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link,address,undefined>"
                      "$<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=undefined>"
                      "$<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>" "$<$<COMPILE_LANGUAGE:CXX>:-g>")
  add_link_options(-fsanitize=address,undefined)
endif()
