# tests/docs: every repository path named in the docs and comments exists (scripts/check-paths.py;
# label unit, no build needed).
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME check_paths COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/check-paths.py
           ${PROJECT_SOURCE_DIR})
  set_tests_properties(check_paths PROPERTIES LABELS unit TIMEOUT 60)
endif()
