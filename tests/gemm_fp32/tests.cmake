# tests/gemm_fp32: every rung of the FP32 SGEMM ladder (gemm/prefill) against a CPU reference
# with double accumulation. Label gpu; exits 77 (skipped) without a GPU. gemm_fp32_quick is
# the reduced set run under compute-sanitizer on the device (scripts/gpu/tests.txt).
if(TINFER_HAVE_CUDA)
  add_executable(test_gemm_fp32 ${CMAKE_CURRENT_LIST_DIR}/test_sgemm.c)
  target_include_directories(test_gemm_fp32 PRIVATE ${TINFER_INCLUDE_DIRS})
  tinfer_lab_program(test_gemm_fp32)
  add_test(NAME gemm_fp32 COMMAND test_gemm_fp32)
  add_test(NAME gemm_fp32_quick COMMAND test_gemm_fp32 --quick)
  set_tests_properties(gemm_fp32 gemm_fp32_quick PROPERTIES LABELS gpu
                       SKIP_RETURN_CODE ${TINFER_TEST_SKIP} TIMEOUT 900)
endif()
