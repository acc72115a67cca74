# Fails when a doctest test case of BIN has a name that doctest_discover_tests
# cannot register: it reads the names as a CMake list, so a ';' splits one test
# case into two CTest tests whose filters match nothing, and both pass with
# nothing run.
execute_process(COMMAND ${BIN} --list-test-cases --no-intro=true --no-version=true
                OUTPUT_VARIABLE names RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${BIN} --list-test-cases failed (${status})")
endif()
string(REPLACE ";" "<semicolon>" names "${names}")
string(REGEX MATCHALL "[^\n]*<semicolon>[^\n]*" bad "${names}")
if(bad)
  list(JOIN bad "\n  " bad)
  string(REPLACE "<semicolon>" ";" bad "${bad}")
  message(FATAL_ERROR "test case names with ';', which CTest would never run:\n  ${bad}")
endif()
