# tests/ops: the CPU GEMM and the CPU ops against double-precision references (label unit), and
# perf_gemm_cpu (built, not a test: times the SmolLM2 GEMM shapes; see gemm/cpu/README.md).
set(TINFER_OPS_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})

function(tinfer_ops_cpu_exe name)
  add_executable(${name} ${TINFER_OPS_TEST_DIR}/${name}.c
                 $<TARGET_OBJECTS:tinfer_gemm> $<TARGET_OBJECTS:tinfer_ops>)
  target_include_directories(${name} PRIVATE ${TINFER_INCLUDE_DIRS})
  target_link_libraries(${name} PRIVATE OpenMP::OpenMP_C ${MATH_LIB})
endfunction()

tinfer_ops_cpu_exe(test_gemm_cpu)
add_test(NAME gemm_cpu COMMAND test_gemm_cpu)
set_tests_properties(gemm_cpu PROPERTIES LABELS unit TIMEOUT 300)

tinfer_ops_cpu_exe(test_gemm_q8)
add_test(NAME gemm_q8 COMMAND test_gemm_q8)
set_tests_properties(gemm_q8 PROPERTIES LABELS unit TIMEOUT 300)

# The AMX path (gemm/cpu/gemm_cpu_amx.c); skipped (77) where the CPU or the kernel refuses AMX.
tinfer_ops_cpu_exe(test_gemm_amx)
add_test(NAME gemm_amx COMMAND test_gemm_amx)
set_tests_properties(gemm_amx PROPERTIES LABELS unit TIMEOUT 300 SKIP_RETURN_CODE ${TINFER_TEST_SKIP})

tinfer_ops_cpu_exe(test_ops_cpu)
add_test(NAME ops_cpu COMMAND test_ops_cpu)
set_tests_properties(ops_cpu PROPERTIES LABELS unit TIMEOUT 300)

tinfer_ops_cpu_exe(perf_gemm_cpu)
