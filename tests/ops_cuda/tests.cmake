# tests/ops_cuda: the CUDA ops (ops/cuda/ops_cuda.h) against their CPU references (ops/ref/);
# label gpu, exit 77 (skipped) without a GPU. Links cudart, base/status.c, the ops objects and
# gemm/cuda/device.cu (device probe, the launch check's debug switch) but not the runtime
# library, so the binary runs on the device image, which lacks cJSON/PCRE2.
if(TINFER_HAVE_CUDA)
  add_executable(test-ops-cuda ${CMAKE_CURRENT_LIST_DIR}/test_ops_cuda.cu
                 ${CMAKE_CURRENT_LIST_DIR}/test_ops_cuda_attn.cu
                 ${CMAKE_CURRENT_LIST_DIR}/test_decode_step.cu
                 ${CMAKE_CURRENT_LIST_DIR}/test_lm_argmax.cu
                 ${PROJECT_SOURCE_DIR}/gemm/cuda/device.cu ${TINFER_BASE_SRC})
  target_include_directories(test-ops-cuda PRIVATE ${TINFER_INCLUDE_DIRS})
  target_compile_options(test-ops-cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -lineinfo>)
  target_link_libraries(test-ops-cuda PRIVATE tinfer_ops_cuda tinfer_ops CUDA::cudart ${MATH_LIB})
  # probe-decode-step: a lab probe (no pass/fail beyond a CUDA error or a NaN): where the fused
  # decode step's time goes, phase by phase; run by scripts/gpu/run.sh as a benchmark
  add_executable(probe-decode-step ${CMAKE_CURRENT_LIST_DIR}/probe_decode_step.cu
                 ${PROJECT_SOURCE_DIR}/gemm/cuda/device.cu ${TINFER_BASE_SRC})
  target_include_directories(probe-decode-step PRIVATE ${TINFER_INCLUDE_DIRS})
  target_compile_options(probe-decode-step PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -lineinfo>)
  target_link_libraries(probe-decode-step PRIVATE tinfer_ops_cuda tinfer_ops CUDA::cudart ${MATH_LIB})
  # probe-hops: a lab probe of two device facts the fused step's design rests on (DRAM stream
  # per SM count, a cluster's shared-memory exchange); run by scripts/gpu/run.sh as a benchmark
  add_executable(probe-hops ${CMAKE_CURRENT_LIST_DIR}/probe_hops.cu)
  target_include_directories(probe-hops PRIVATE ${TINFER_INCLUDE_DIRS})
  target_compile_options(probe-hops PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -lineinfo>)
  target_link_libraries(probe-hops PRIVATE CUDA::cudart)
  # probe-wide-step: a lab probe of a persistent step for 16-64 tokens with grid barriers
  # between its phases (a skeleton: real GEMMs and attention, no norm weights or RoPE)
  add_executable(probe-wide-step ${CMAKE_CURRENT_LIST_DIR}/probe_wide_step.cu ${TINFER_BASE_SRC})
  target_include_directories(probe-wide-step PRIVATE ${TINFER_INCLUDE_DIRS})
  target_compile_options(probe-wide-step PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -lineinfo>)
  target_link_libraries(probe-wide-step PRIVATE CUDA::cudart ${MATH_LIB})
  add_test(NAME ops_cuda COMMAND test-ops-cuda)
  set_tests_properties(ops_cuda PROPERTIES LABELS gpu SKIP_RETURN_CODE ${TINFER_TEST_SKIP})
endif()
