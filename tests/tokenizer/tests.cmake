# tests/tokenizer: the byte-level BPE tokenizer and chat templates (runtime/tokenizer*.c, chat.c).
set(_tk ${CMAKE_CURRENT_LIST_DIR})

# No model needed: a hand-written tiny tokenizer.json, bad files, UTF-8, chat templates.
add_executable(test_tokenizer_unit ${_tk}/test_tokenizer_unit.c)
target_link_libraries(test_tokenizer_unit PRIVATE tinfer)
target_include_directories(test_tokenizer_unit PRIVATE ${TINFER_INCLUDE_DIRS} ${PROJECT_SOURCE_DIR}/runtime)
add_test(NAME tokenizer_unit COMMAND test_tokenizer_unit ${_tk}/tiny_tokenizer.json)
set_tests_properties(tokenizer_unit PROPERTIES LABELS unit)

# Against HF tokenizers fixtures on the converted SmolLM2 (scripts/get-model.sh); skipped (77)
# when the model directory is absent. TINFER_SMOLLM2_DIR overrides the directory.
add_executable(test_tokenizer_model ${_tk}/test_tokenizer_model.c)
target_link_libraries(test_tokenizer_model PRIVATE tinfer)
target_include_directories(test_tokenizer_model PRIVATE ${TINFER_INCLUDE_DIRS} ${PROJECT_SOURCE_DIR}/runtime)
add_test(NAME tokenizer_smollm2
         COMMAND test_tokenizer_model ${CMAKE_BINARY_DIR}/models/smollm2-135m-instruct
                 ${_tk}/fixtures/smollm2.json)
set_tests_properties(tokenizer_smollm2 PROPERTIES LABELS model SKIP_RETURN_CODE ${TINFER_TEST_SKIP})
