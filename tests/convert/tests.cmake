# tests/convert: the GGUF -> HF converter (models/convert) and scripts/get-model.sh.
set(_cv ${CMAKE_CURRENT_LIST_DIR})

add_executable(test_convert_quant ${_cv}/test_convert_quant.c)
target_link_libraries(test_convert_quant PRIVATE tinfer_convert_lib)
add_test(NAME convert_quant COMMAND test_convert_quant)
set_tests_properties(convert_quant PROPERTIES LABELS unit)

add_executable(test_convert_bad ${_cv}/test_convert_bad.c)
target_link_libraries(test_convert_bad PRIVATE tinfer_convert_lib)
add_dependencies(test_convert_bad tinfer-convert)
add_test(NAME convert_bad_input
         COMMAND test_convert_bad $<TARGET_FILE:tinfer-convert> ${CMAKE_BINARY_DIR}/tests/convert_bad)
set_tests_properties(convert_bad_input PROPERTIES LABELS unit)

# A GGUF whose matrices are Q8_0: --weights q8_0 copies its blocks byte for byte.
add_executable(test_convert_q8 ${_cv}/test_convert_q8.c)
target_include_directories(test_convert_q8 PRIVATE ${TINFER_INCLUDE_DIRS})
target_link_libraries(test_convert_q8 PRIVATE PkgConfig::CJSON)
add_dependencies(test_convert_q8 tinfer-convert)
add_test(NAME convert_q8_copy
         COMMAND test_convert_q8 $<TARGET_FILE:tinfer-convert> ${CMAKE_BINARY_DIR}/tests/convert_q8)
set_tests_properties(convert_q8_copy PROPERTIES LABELS unit)

# The cross-check against gguf-py runs with <build>/pytools (made by scripts/py-tools.sh, which
# scripts/test.sh runs) when it exists, else with any Python 3; it reports "skipped" without gguf.
find_package(Python3 COMPONENTS Interpreter QUIET)
set(_cv_py ${Python3_EXECUTABLE})
if(EXISTS ${CMAKE_BINARY_DIR}/pytools/bin/python3)
  set(_cv_py ${CMAKE_BINARY_DIR}/pytools/bin/python3)
endif()
if(_cv_py)
  add_test(NAME convert_vs_gguf_py
           COMMAND ${_cv_py} ${_cv}/check_gguf_py.py $<TARGET_FILE:tinfer-convert>
                   ${CMAKE_BINARY_DIR}/tests/convert_py)
  set_tests_properties(convert_vs_gguf_py PROPERTIES LABELS unit SKIP_RETURN_CODE ${TINFER_TEST_SKIP})
endif()

add_executable(test_convert_model ${_cv}/test_convert_model.c)
target_link_libraries(test_convert_model PRIVATE PkgConfig::CJSON ${MATH_LIB})
add_test(NAME convert_model
         COMMAND ${_cv}/model_test.sh ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR}
                 $<TARGET_FILE:test_convert_model>)
set_tests_properties(convert_model PROPERTIES LABELS model SKIP_RETURN_CODE ${TINFER_TEST_SKIP}
                     TIMEOUT 600)
