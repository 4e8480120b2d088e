# tests/sampler: the sampler (runtime/sampler.c) on hand-made logits (label unit).
add_executable(test_sampler ${CMAKE_CURRENT_LIST_DIR}/test_sampler.c)
target_link_libraries(test_sampler PRIVATE tinfer ${MATH_LIB})
add_test(NAME sampler COMMAND test_sampler)
set_tests_properties(sampler PROPERTIES LABELS unit TIMEOUT 60)
