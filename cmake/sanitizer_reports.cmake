# The folder of sanitizer reports of the test suite (see cmake/sanitize.cmake):
# MODE=clear empties DIR before the tests; MODE=check fails, printing each
# report, when any test wrote one.
if(MODE STREQUAL "clear")
  file(REMOVE_RECURSE ${DIR})
  file(MAKE_DIRECTORY ${DIR})
  return()
endif()
file(GLOB reports ${DIR}/*)
if(NOT reports)
  message(STATUS "no sanitizer reports in ${DIR}")
  return()
endif()
foreach(report IN LISTS reports)
  file(READ ${report} text)
  message("---- ${report}\n${text}")
endforeach()
list(LENGTH reports count)
message(FATAL_ERROR "${count} sanitizer report(s) in ${DIR}")
