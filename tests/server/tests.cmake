# tests/server: tinfer-server end to end on loopback (test_server.py: every endpoint, every bad
# input with its status and error code, streaming = plain text, batching equivalence, a 32 x 8
# load with the metrics totals, a full queue, disconnects, junk, drain on SIGTERM).
#  - server (label unit): the tiny fixture model.
#  - server_asan (label unit): the same against an AddressSanitizer + UBSan build of the server;
#    any sanitizer report (leaks at exit included) fails it.
#  - server_smollm2 (label model): the real model, shorter; skipped (77) when it is absent.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
set(_srv_src ${PROJECT_SOURCE_DIR}/examples/server/main.c ${PROJECT_SOURCE_DIR}/examples/server/http.c
             ${PROJECT_SOURCE_DIR}/examples/server/api.c ${PROJECT_SOURCE_DIR}/examples/server/sched.c)
add_executable(tinfer-server-asan ${_srv_src})
target_compile_options(tinfer-server-asan PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer
                       -fno-sanitize-recover=undefined)
target_link_options(tinfer-server-asan PRIVATE -fsanitize=address,undefined)
target_link_libraries(tinfer-server-asan PRIVATE tinfer PkgConfig::MHD PkgConfig::CJSON Threads::Threads)

set(_srv_test ${CMAKE_CURRENT_LIST_DIR}/test_server.py)
add_test(NAME server COMMAND ${Python3_EXECUTABLE} ${_srv_test} $<TARGET_FILE:tinfer-server>
                             $<TARGET_FILE:tinfer-loadgen> ${PROJECT_SOURCE_DIR}/tests/model/fixtures/tiny-llama)
add_test(NAME server_asan COMMAND ${Python3_EXECUTABLE} ${_srv_test} $<TARGET_FILE:tinfer-server-asan>
                                  $<TARGET_FILE:tinfer-loadgen> ${PROJECT_SOURCE_DIR}/tests/model/fixtures/tiny-llama --asan)
add_test(NAME server_smollm2 COMMAND ${Python3_EXECUTABLE} ${_srv_test} $<TARGET_FILE:tinfer-server>
                                     $<TARGET_FILE:tinfer-loadgen> ${CMAKE_BINARY_DIR}/models/smollm2-135m-instruct --real)
# F32 GEMMs (gemm/cpu/gemm_cpu.h): the batching check wants a request's text alone (M = 1, the
# GEMV) equal to its text in a batch, which the AMX path's BF16 activations would not keep on
# the random-weight fixture model.
set_tests_properties(server server_asan PROPERTIES LABELS unit TIMEOUT 300
                     ENVIRONMENT TINFER_GEMM_FORCE=f32)
set_tests_properties(server_smollm2 PROPERTIES LABELS model TIMEOUT 900 SKIP_RETURN_CODE ${TINFER_TEST_SKIP})

# the embedding example stays working: it generates from the tiny model and exits 0
add_test(NAME embed_example COMMAND tinfer-embed ${PROJECT_SOURCE_DIR}/tests/model/fixtures/tiny-llama "Hello")
set_tests_properties(embed_example PROPERTIES LABELS unit TIMEOUT 60 PASS_REGULAR_EXPRESSION ".")
