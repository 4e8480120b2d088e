# tests/loader: the safetensors / config.json loaders on good and bad inputs (label unit), and a
# libFuzzer target for both parsers. The unit tests compile the loader sources directly (not the
# whole libtinfer) so they test exactly these units and build even while other folders change.
set(TINFER_LOADER_DIR ${CMAKE_CURRENT_LIST_DIR})
set(TINFER_LOADER_SRC ${PROJECT_SOURCE_DIR}/runtime/safetensors.c
    ${PROJECT_SOURCE_DIR}/runtime/config.c ${PROJECT_SOURCE_DIR}/runtime/textfile.c
    ${TINFER_BASE_SRC})

foreach(t loader_safetensors loader_config loader_dtype)
  add_executable(test_${t} ${TINFER_LOADER_DIR}/test_${t}.c ${TINFER_LOADER_SRC})
  target_include_directories(test_${t} PRIVATE ${TINFER_INCLUDE_DIRS} ${PROJECT_SOURCE_DIR}/runtime
                                               ${TINFER_LOADER_DIR})
  target_link_libraries(test_${t} PRIVATE PkgConfig::CJSON ${MATH_LIB})
  add_test(NAME ${t} COMMAND test_${t})
  set_tests_properties(${t} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()

# ---- libFuzzer target (clang only; the main build uses gcc, so clang is invoked directly) ----
if(TINFER_FUZZ)
  find_program(TINFER_CLANG NAMES clang clang-18 clang-17 clang-16 clang-15 clang-14)
  set(TINFER_FUZZ_OK OFF)
  if(TINFER_CLANG)
    # Probe once: clang without its compiler-rt fuzzer runtime cannot link -fsanitize=fuzzer.
    set(_probe_dir ${CMAKE_BINARY_DIR}/fuzz_probe)
    file(MAKE_DIRECTORY ${_probe_dir})
    file(WRITE ${_probe_dir}/probe.c
         "#include <stdint.h>\n#include <stddef.h>\n"
         "int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n")
    execute_process(COMMAND ${TINFER_CLANG} -fsanitize=fuzzer,address,undefined
                            ${_probe_dir}/probe.c -o ${_probe_dir}/probe
                    RESULT_VARIABLE _probe_rc OUTPUT_QUIET ERROR_QUIET)
    if(_probe_rc EQUAL 0)
      set(TINFER_FUZZ_OK ON)
    endif()
  endif()
  if(TINFER_FUZZ_OK)
    set(_fuzz_bin ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/fuzz_safetensors)
    set(_fuzz_src ${TINFER_LOADER_DIR}/fuzz_safetensors.c ${TINFER_LOADER_SRC})
    add_custom_command(
      OUTPUT ${_fuzz_bin}
      COMMAND ${TINFER_CLANG} -std=c11 -g -O1 -Wall -Wextra -Werror
              -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
              -I${PROJECT_SOURCE_DIR} -I${PROJECT_SOURCE_DIR}/include -I${PROJECT_SOURCE_DIR}/runtime ${CJSON_CFLAGS}
              ${_fuzz_src} ${CJSON_LDFLAGS} -lm -o ${_fuzz_bin}
      DEPENDS ${_fuzz_src} ${PROJECT_SOURCE_DIR}/runtime/safetensors.h
              ${PROJECT_SOURCE_DIR}/runtime/config.h ${PROJECT_SOURCE_DIR}/base/error.h
              ${PROJECT_SOURCE_DIR}/base/dtype.h ${PROJECT_SOURCE_DIR}/include/tinfer.h
              ${PROJECT_SOURCE_DIR}/models/llama_config.h
      COMMAND_EXPAND_LISTS VERBATIM
      COMMENT "Building libFuzzer target fuzz_safetensors with ${TINFER_CLANG}")
    add_custom_target(fuzz_safetensors ALL DEPENDS ${_fuzz_bin})
    # A fixed-seed, fixed-count run (500k inputs, ~15 s) from a fresh copy of the committed seeds:
    # deterministic, so CI judges the code rather than the luck of the draw. New finds come from
    # longer random-seed runs by hand (build/bin/fuzz_safetensors -dict=tests/loader/fuzz.dict
    # -max_total_time=600 DIR); each find is fixed and its input added to corpus/. libFuzzer
    # writes new inputs into its first corpus directory, which must not be the source tree.
    set(_fuzz_work ${CMAKE_CURRENT_BINARY_DIR}/loader_fuzz_corpus)
    add_test(NAME loader_fuzz_short
             COMMAND sh -c "rm -rf '${_fuzz_work}' && mkdir -p '${_fuzz_work}' && cp '${TINFER_LOADER_DIR}'/corpus/* '${_fuzz_work}'/ && '${_fuzz_bin}' -dict='${TINFER_LOADER_DIR}/fuzz.dict' -seed=1 -runs=500000 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 '${_fuzz_work}'")
    set_tests_properties(loader_fuzz_short PROPERTIES LABELS unit TIMEOUT 120)
    message(STATUS "tinfer: loader fuzzer fuzz_safetensors with ${TINFER_CLANG}")
  else()
    message(STATUS "tinfer: loader fuzzer skipped (no clang with -fsanitize=fuzzer found)")
  endif()
else()
  message(STATUS "tinfer: loader fuzzer skipped (TINFER_FUZZ=OFF)")
endif()
