# tests/api: the public API on bad input (label unit): broken copies of the tiny fixture model,
# bad batches, context overflow, and tinfer-generate's error exit.
add_executable(test_api ${CMAKE_CURRENT_LIST_DIR}/test_api.c)
target_link_libraries(test_api PRIVATE tinfer PkgConfig::CJSON)
add_test(NAME api_bad_input
         COMMAND test_api ${PROJECT_SOURCE_DIR}/tests/model/fixtures/tiny-llama
                 $<TARGET_FILE:tinfer-generate>)
set_tests_properties(api_bad_input PROPERTIES LABELS unit TIMEOUT 60)

add_executable(test_generate ${CMAKE_CURRENT_LIST_DIR}/test_generate.c)
target_link_libraries(test_generate PRIVATE tinfer PkgConfig::CJSON)
add_test(NAME generate_cli
         COMMAND test_generate ${PROJECT_SOURCE_DIR}/tests/model/fixtures/tiny-llama
                 $<TARGET_FILE:tinfer-generate>)
set_tests_properties(generate_cli PROPERTIES LABELS unit TIMEOUT 60)
