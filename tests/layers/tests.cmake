# tests/layers: the include layering (scripts/check-includes.py): include/ and base/ (floor 0),
# gemm/ and ops/ (1), models/ (2), runtime/ (3); no include points to a higher floor, gemm/ and ops/
# keep apart, and gemm/tc/ and gemm/decode/ do not include each other's files (label unit).
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME check_includes
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/check-includes.py ${PROJECT_SOURCE_DIR})
  set_tests_properties(check_includes PROPERTIES LABELS unit TIMEOUT 60)
endif()
