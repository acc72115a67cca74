# The AddressSanitizer + UndefinedBehaviorSanitizer build (ATTN_SANITIZE=ON,
# meant for CMAKE_BUILD_TYPE=Debug; `scripts/test --sanitize` builds it in
# build-asan/): every target is instrumented, and attn_sanitize_tests() makes
# every test of the suite fail on any sanitizer report.

if(ATTN_SANITIZE)
  # C++ only: nvcc takes none of these (the CUDA backend's host code is its .cpp files).
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined>"
                      "$<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=undefined>"
                      "$<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>")
  add_link_options(-fsanitize=address,undefined)
endif()

# attn_sanitize_tests([DOCTEST <target>...]): in the sanitizer build, runs every
# test of the current folder (those added so far with add_test, and those that
# doctest_discover_tests finds in each DOCTEST target) with sanitizer options
# that stop the process at the first report. Reports are written to
# <build>/sanitizer-reports/<test>.<pid> rather than to stderr, because the
# command-line tests run the binary as a subprocess and may only look at its
# output; the test sanitizer_reports, which CTest runs after all the others,
# fails and prints every report found. Call it in each folder that adds tests,
# after its last add_test.
function(attn_sanitize_tests)
  if(NOT ATTN_SANITIZE)
    return()
  endif()
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "" "DOCTEST")
  set(reports ${CMAKE_BINARY_DIR}/sanitizer-reports)
  set(asan halt_on_error=1:abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=1
           :check_initialization_order=1:strict_init_order=1)
  set(ubsan halt_on_error=1:abort_on_error=1:print_stacktrace=1)
  string(REPLACE ";" "" asan "${asan}")
  # The CUDA driver maps memory where AddressSanitizer's shadow gap would be.
  if(ATTN_WITH_CUDA)
    string(APPEND asan :protect_shadow_gap=0)
  endif()

  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(test IN LISTS tests)
    string(MAKE_C_IDENTIFIER ${test} log)
    set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT
                 ASAN_OPTIONS=${asan}:log_path=${reports}/${log}
                 UBSAN_OPTIONS=${ubsan}:log_path=${reports}/${log})
    set_property(TEST ${test} APPEND PROPERTY FIXTURES_REQUIRED sanitizer_reports)
  endforeach()
  # Discovered tests exist only when CTest runs: set theirs in a CTest script.
  set(script "")
  foreach(target IN LISTS arg_DOCTEST)
    string(APPEND script
      "foreach(test IN LISTS ${target}_TESTS)\n"
      "  set_tests_properties(\"\${test}\" PROPERTIES\n"
      "    ENVIRONMENT \"ASAN_OPTIONS=${asan}:log_path=${reports}/${target};"
      "UBSAN_OPTIONS=${ubsan}:log_path=${reports}/${target}\"\n"
      "    FIXTURES_REQUIRED sanitizer_reports)\n"
      "endforeach()\n")
  endforeach()
  set(include_file ${CMAKE_CURRENT_BINARY_DIR}/sanitize_tests.cmake)
  file(CONFIGURE OUTPUT ${include_file} CONTENT "${script}" @ONLY)
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})

  # The tests that clear and inspect the reports, once for the whole build.
  get_property(added GLOBAL PROPERTY ATTN_SANITIZER_REPORT_TESTS)
  if(added)
    return()
  endif()
  set_property(GLOBAL PROPERTY ATTN_SANITIZER_REPORT_TESTS TRUE)
  add_test(NAME sanitizer_reports_clear
           COMMAND ${CMAKE_COMMAND} -DDIR=${reports} -DMODE=clear
                   -P ${CMAKE_SOURCE_DIR}/cmake/sanitizer_reports.cmake)
  add_test(NAME sanitizer_reports
           COMMAND ${CMAKE_COMMAND} -DDIR=${reports} -DMODE=check
                   -P ${CMAKE_SOURCE_DIR}/cmake/sanitizer_reports.cmake)
  set_tests_properties(sanitizer_reports_clear PROPERTIES FIXTURES_SETUP sanitizer_reports)
  set_tests_properties(sanitizer_reports PROPERTIES FIXTURES_CLEANUP sanitizer_reports)
endfunction()
