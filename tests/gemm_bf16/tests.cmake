# tests/gemm_bf16: the BF16 GEMM/GEMV kernels (gemm/bf16.h) against a double-precision CPU
# reference; label gpu, exit 77 (skipped) without a GPU. Links only libtinfer_lab and cudart
# (libtinfer_lab also carries base/status.c), so the binary runs on the device image, which lacks
# cJSON/PCRE2.
if(TINFER_HAVE_CUDA)
  add_executable(test-gemm-bf16 ${CMAKE_CURRENT_LIST_DIR}/test_gemm_bf16.cu
                 ${CMAKE_CURRENT_LIST_DIR}/test_gemm_bf16_case.cu
                 ${CMAKE_CURRENT_LIST_DIR}/test_gemm_bf16_host.cu
                 ${CMAKE_CURRENT_LIST_DIR}/test_gemm_bf16_norm.cu)
  target_include_directories(test-gemm-bf16 PRIVATE ${TINFER_INCLUDE_DIRS})
  tinfer_lab_program(test-gemm-bf16)
  add_test(NAME gemm_bf16 COMMAND test-gemm-bf16)
  set_tests_properties(gemm_bf16 PROPERTIES LABELS gpu SKIP_RETURN_CODE ${TINFER_TEST_SKIP})

  # The benchmark as a standalone program (same source as `tinfer-bench-gemm bf16`), linking
  # only cudart + cuBLAS (chart.c needs only the stb header). The device check
  # (scripts/gpu/tests.txt) runs `tinfer-bench-gemm bf16`, the same code.
  add_executable(tinfer-bench-gemm-bf16 ${CMAKE_CURRENT_LIST_DIR}/bench_main.c
                 ${PROJECT_SOURCE_DIR}/examples/bench_gemm/bf16.cu
                 ${PROJECT_SOURCE_DIR}/examples/bench_gemm/bf16_output.cu
                 ${PROJECT_SOURCE_DIR}/examples/bench_gemm/bf16_shape.cu
                 ${PROJECT_SOURCE_DIR}/examples/bench_gemm/bf16_timing.cu
                 ${PROJECT_SOURCE_DIR}/examples/bench_gemm/bf16_trace.cu
                 ${PROJECT_SOURCE_DIR}/examples/bench_gemm/chart.c
                 ${PROJECT_SOURCE_DIR}/examples/bench_gemm/knobs.c)
  target_include_directories(tinfer-bench-gemm-bf16 PRIVATE ${TINFER_INCLUDE_DIRS}
                             ${STB_INCLUDE_DIR})
  tinfer_lab_program(tinfer-bench-gemm-bf16)
  target_link_libraries(tinfer-bench-gemm-bf16 PRIVATE CUDA::cublas)

  # Decode rungs 05/06 under programmatic dependent launch: a kernel writes new X / W right
  # before the GEMV on the same stream, no sync; the output must come from the new values.
  add_executable(test-gemv-pdl ${CMAKE_CURRENT_LIST_DIR}/test_gemv_pdl.cu)
  target_include_directories(test-gemv-pdl PRIVATE ${TINFER_INCLUDE_DIRS})
  tinfer_lab_program(test-gemv-pdl)
  add_test(NAME gemv_pdl COMMAND test-gemv-pdl)
  set_tests_properties(gemv_pdl PROPERTIES LABELS gpu SKIP_RETURN_CODE ${TINFER_TEST_SKIP})
endif()

# The generated BF16 tables (gemm/bench_bf16/TABLE.md) match the committed sweeps: runs anywhere.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME bf16_table COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_table.py ${PROJECT_SOURCE_DIR})
  set_tests_properties(bf16_table PROPERTIES LABELS unit)
endif()

# The route table (gemm/bench_bf16/ROUTES.md) matches the dispatcher's rules: host arithmetic,
# runs without a GPU wherever the CUDA parts are built.
if(Python3_Interpreter_FOUND AND TARGET tinfer-bench-gemm)
  add_test(NAME bf16_routes COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_routes.py
           $<TARGET_FILE:tinfer-bench-gemm> ${PROJECT_SOURCE_DIR})
  set_tests_properties(bf16_routes PROPERTIES LABELS unit)
endif()
