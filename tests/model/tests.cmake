# tests/model: the model-level tests.
#  - tiny_llama / tiny_qwen2 (label unit): the CPU forward against HF transformers on tiny
#    random-weight models committed under fixtures/ (scripts/make-tiny-llama.py).
#  The tests against F32 references run with TINFER_GEMM_FORCE=f32 (no AMX BF16 prefill GEMM,
#  gemm/cpu/gemm_cpu.h); smollm2_greedy_amx checks the AMX path with BF16 tolerances.
#  - smollm2_greedy (label model): the converted SmolLM2-135M-Instruct against HF greedy output
#    (fixtures/smollm2_greedy.json, scripts/make-model-fixtures.py); skipped (77) when the
#    converted model is absent (scripts/get-model.sh makes it).
set(TINFER_MODEL_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})

add_executable(test_model_tiny ${TINFER_MODEL_TEST_DIR}/test_tiny.c)
target_link_libraries(test_model_tiny PRIVATE tinfer PkgConfig::CJSON ${MATH_LIB})
foreach(m llama qwen2)
  add_test(NAME tiny_${m} COMMAND test_model_tiny ${TINFER_MODEL_TEST_DIR}/fixtures/tiny-${m})
  set_tests_properties(tiny_${m} PROPERTIES LABELS unit TIMEOUT 60 ENVIRONMENT TINFER_GEMM_FORCE=f32)
endforeach()

add_executable(test_model_smollm2 ${TINFER_MODEL_TEST_DIR}/test_smollm2.c)
target_link_libraries(test_model_smollm2 PRIVATE tinfer PkgConfig::CJSON ${MATH_LIB})
add_test(NAME smollm2_greedy
         COMMAND test_model_smollm2 ${CMAKE_BINARY_DIR}/models/smollm2-135m-instruct
                 ${TINFER_MODEL_TEST_DIR}/fixtures/smollm2_greedy.json)
set_tests_properties(smollm2_greedy PROPERTIES LABELS model TIMEOUT 600
                     SKIP_RETURN_CODE ${TINFER_TEST_SKIP} ENVIRONMENT TINFER_GEMM_FORCE=f32)
# The same on the AMX prefill GEMM with BF16 tolerances; skipped (77) where AMX is not used.
add_test(NAME smollm2_greedy_amx
         COMMAND test_model_smollm2 ${CMAKE_BINARY_DIR}/models/smollm2-135m-instruct
                 ${TINFER_MODEL_TEST_DIR}/fixtures/smollm2_greedy.json amx)
set_tests_properties(smollm2_greedy_amx PROPERTIES LABELS model TIMEOUT 600
                     SKIP_RETURN_CODE ${TINFER_TEST_SKIP})

# q8_load (label unit): models/llama.c loading Q8_0 weights from an in-memory tensor source,
# good and bad inputs.
add_executable(test_q8_load ${TINFER_MODEL_TEST_DIR}/test_q8_load.c)
target_include_directories(test_q8_load PRIVATE ${TINFER_INCLUDE_DIRS})
target_link_libraries(test_q8_load PRIVATE tinfer ${MATH_LIB})
add_test(NAME q8_load COMMAND test_q8_load)
set_tests_properties(q8_load PROPERTIES LABELS unit TIMEOUT 30)

# perf_model: per-op time of prefill and decode (a measuring tool, not a ctest test).
add_executable(perf_model ${TINFER_MODEL_TEST_DIR}/perf_model.c)
target_include_directories(perf_model PRIVATE ${TINFER_INCLUDE_DIRS} ${PROJECT_SOURCE_DIR}/runtime)
target_link_libraries(perf_model PRIVATE tinfer)

# q8_accuracy: one model's logits against another's over a text (Q8_0 against BF16, CUDA against
# the CPU; a measuring tool, not a ctest test).
add_executable(q8_accuracy ${TINFER_MODEL_TEST_DIR}/q8_accuracy.c)
target_include_directories(q8_accuracy PRIVATE ${TINFER_INCLUDE_DIRS})
# the shared library: packed for the GPU check (the real model's CUDA-vs-CPU logits)
target_link_libraries(q8_accuracy PRIVATE tinfer_shared ${MATH_LIB})

# probe-timeline: a decode step's kernels as they run (CUDA graphs, PDL) from CUPTI's activity
# records, and the GPU's idle share of the host's step period (a lab probe, not a ctest test;
# run by scripts/gpu/run.sh as a benchmark).
if(TINFER_HAVE_CUDA AND TARGET CUDA::cupti)
  add_executable(probe-timeline ${TINFER_MODEL_TEST_DIR}/probe_timeline.c)
  target_include_directories(probe-timeline PRIVATE ${TINFER_INCLUDE_DIRS})
  target_link_libraries(probe-timeline PRIVATE tinfer_shared CUDA::cupti)
endif()

# test_cuda_plan (label unit): the CUDA backend's memory plan, host arithmetic only.
add_executable(test_cuda_plan ${TINFER_MODEL_TEST_DIR}/test_cuda_plan.c ${PROJECT_SOURCE_DIR}/models/cuda_plan.c)
target_include_directories(test_cuda_plan PRIVATE ${TINFER_INCLUDE_DIRS})
add_test(NAME cuda_plan COMMAND test_cuda_plan)
set_tests_properties(cuda_plan PROPERTIES LABELS unit TIMEOUT 30)

# gpu_model (label gpu; skipped without a GPU): the CUDA backend against the CPU backend on
# random-weight models of committed configs (a small one with head_dim 64, SmolLM2-135M's):
# logits within the BF16 bound, prefill = decode, greedy tokens, batched = alone.
add_executable(test_gpu_model ${TINFER_MODEL_TEST_DIR}/test_gpu_model.c)
# the shared library: the GPU pack carries the kernels once, not once per program
target_link_libraries(test_gpu_model PRIVATE tinfer_shared ${MATH_LIB})
add_test(NAME gpu_model COMMAND test_gpu_model ${TINFER_MODEL_TEST_DIR}/fixtures/config-small64
                                ${TINFER_MODEL_TEST_DIR}/fixtures/config-smollm2)
set_tests_properties(gpu_model PROPERTIES LABELS gpu TIMEOUT 600 SKIP_RETURN_CODE ${TINFER_TEST_SKIP})

# tp (label unit): tensor parallelism on the CPU (models/backend_tp.c) against the unsplit model:
# the tiny fixtures, a random-weight config-small64 model and a Q8_0 model the test writes, at
# tp 2 and 4: logits of a multi-sequence prefill + decode run, 32 greedy tokens; the split's
# errors. F32 GEMMs (TINFER_GEMM_FORCE=f32) as the other model tests: the bound is about summation
# order only.
add_executable(test_tp ${TINFER_MODEL_TEST_DIR}/test_tp.c)
target_include_directories(test_tp PRIVATE ${TINFER_INCLUDE_DIRS} ${PROJECT_SOURCE_DIR}/runtime)
target_link_libraries(test_tp PRIVATE tinfer ${MATH_LIB})
add_test(NAME tp COMMAND test_tp ${TINFER_MODEL_TEST_DIR}/fixtures/tiny-llama
                             ${TINFER_MODEL_TEST_DIR}/fixtures/tiny-qwen2
                             ${TINFER_MODEL_TEST_DIR}/fixtures/config-small64
                             ${CMAKE_CURRENT_BINARY_DIR}/tp-work)
set_tests_properties(tp PROPERTIES LABELS unit TIMEOUT 120 ENVIRONMENT TINFER_GEMM_FORCE=f32)

# gpu_tp1 (label gpu) and gpu_tp2 / gpu_tp4 (label gpu-multi): tensor parallelism on CUDA
# (models/tp_nccl.c) against the same model without it: tp 1 bit for bit, tp 2 and 4 within
# the summation-order bound; greedy and batched decode. Skipped (77) without a GPU, without NCCL
# in the build, or with fewer GPUs than ranks.
add_executable(test_gpu_tp ${TINFER_MODEL_TEST_DIR}/test_gpu_tp.c)
target_link_libraries(test_gpu_tp PRIVATE tinfer_shared ${MATH_LIB})
add_test(NAME gpu_tp1 COMMAND test_gpu_tp ${TINFER_MODEL_TEST_DIR}/fixtures/config-small64 1)
set_tests_properties(gpu_tp1 PROPERTIES LABELS gpu TIMEOUT 300 SKIP_RETURN_CODE ${TINFER_TEST_SKIP})
foreach(n 2 4)
  add_test(NAME gpu_tp${n} COMMAND test_gpu_tp ${TINFER_MODEL_TEST_DIR}/fixtures/config-small64 ${n})
  set_tests_properties(gpu_tp${n} PROPERTIES LABELS gpu-multi TIMEOUT 300
                       SKIP_RETURN_CODE ${TINFER_TEST_SKIP})
endforeach()
