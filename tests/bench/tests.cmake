# tests/bench: tinfer-bench and the random weights it measures with (label unit).
#  - random_weights: a directory holding only config.json loads with random_weights; the same
#    seed gives the same logits on any thread count, another seed others.
#  - bench_cli: every test kind on the tiny fixture, JSON out (the batched decode test named).
#  - bench_random: tinfer-bench --random-weights on the config-only directory, CSV out.
#  - bench_tp: --tp 1,2: each test once per value (json field tp; the 2-shard rows' route).
#  - bench_greedy: --greedy 3: the decode tests through tinfer_decode_greedy (one sequence) and
#    tinfer_decode_greedy_batch (two), 3 steps a call (rows tg8-g3 and tg8@b2-g3, 8 tokens: two
#    full calls and one of 2).
#  - bench_argmax: --argmax: the decode tests ask for each sequence's argmax only (rows
#    tg4-argmax and tg4@b2-argmax).
#  - bench_micro: --micro 2 names its batched rows (tg4@b2-m2-argmax); --micro 5 is refused.
#  - bench_png: tinfer-bench --png on the tiny fixture writes both charts as PNG files
#    (check_png.cmake), into the build tree (tests/bench-png-*.png).
set(_cfg_only ${CMAKE_CURRENT_BINARY_DIR}/config-only)
configure_file(${PROJECT_SOURCE_DIR}/tests/model/fixtures/tiny-llama/config.json
               ${_cfg_only}/config.json COPYONLY)
add_executable(test_random_weights ${CMAKE_CURRENT_LIST_DIR}/test_random_weights.c)
target_link_libraries(test_random_weights PRIVATE tinfer ${MATH_LIB})
add_test(NAME random_weights COMMAND test_random_weights ${_cfg_only})
add_test(NAME bench_cli COMMAND tinfer-bench -m ${PROJECT_SOURCE_DIR}/tests/model/fixtures/tiny-llama
                                -p 32 -n 4 --batch 1,2 -r 2 -o json --no-peak)
set_tests_properties(bench_cli PROPERTIES PASS_REGULAR_EXPRESSION "\"test\": \"tg4@b2\", \"n_prompt\": 0, \"n_gen\": 4, \"batch\": 2, \"avg_ts\": [1-9]")
add_test(NAME bench_random COMMAND tinfer-bench -m ${_cfg_only} --random-weights -p 16 -n 2 -r 1
                                   -o csv --no-peak)
set_tests_properties(bench_random PROPERTIES PASS_REGULAR_EXPRESSION "random weights.*,tg2,0,2,1,[1-9]")
add_test(NAME bench_png COMMAND ${CMAKE_COMMAND} -DBENCH=$<TARGET_FILE:tinfer-bench>
                                 -DMODEL=${PROJECT_SOURCE_DIR}/tests/model/fixtures/tiny-llama
                                 -DPREFIX=${CMAKE_CURRENT_BINARY_DIR}/bench-png
                                 -P ${CMAKE_CURRENT_LIST_DIR}/check_png.cmake)
# bench_tp: --tp 1,2 runs every test on the one-rank and the 2-shard model, as rows of their own.
add_test(NAME bench_tp COMMAND tinfer-bench -m ${PROJECT_SOURCE_DIR}/tests/model/fixtures/tiny-llama
                               --backend cpu --tp 1,2 -p 16 -n 2 -r 1 -o json --no-peak)
set_tests_properties(bench_tp PROPERTIES PASS_REGULAR_EXPRESSION
                     "\"test\": \"pp16\".*\"tp\": 1}.*\"test\": \"tg2\".*\"route\": \"tp 2: [^\"]*\".*\"tp\": 2}")
add_test(NAME bench_greedy COMMAND tinfer-bench -m ${PROJECT_SOURCE_DIR}/tests/model/fixtures/tiny-llama
                                   -p 0 -n 8 --batch 1,2 -r 2 -o json --no-peak --greedy 3)
set_tests_properties(bench_greedy PROPERTIES PASS_REGULAR_EXPRESSION
                     "\"test\": \"tg8-g3\", \"n_prompt\": 0, \"n_gen\": 8, \"batch\": 1, \"avg_ts\": [1-9].*\"test\": \"tg8@b2-g3\", \"n_prompt\": 0, \"n_gen\": 8, \"batch\": 2, \"avg_ts\": [1-9]")
add_test(NAME bench_argmax COMMAND tinfer-bench -m ${PROJECT_SOURCE_DIR}/tests/model/fixtures/tiny-llama
                                   -p 0 -n 4 --batch 1,2 -r 1 -o json --no-peak --argmax)
set_tests_properties(bench_argmax PROPERTIES PASS_REGULAR_EXPRESSION
                     "\"test\": \"tg4-argmax\", \"n_prompt\": 0, \"n_gen\": 4, \"batch\": 1, \"avg_ts\": [1-9].*\"test\": \"tg4@b2-argmax\", \"n_prompt\": 0, \"n_gen\": 4, \"batch\": 2, \"avg_ts\": [1-9]")
add_test(NAME bench_micro COMMAND tinfer-bench -m ${PROJECT_SOURCE_DIR}/tests/model/fixtures/tiny-llama
                                  -p 0 -n 4 --batch 2 -r 1 -o json --no-peak --argmax --micro 2)
set_tests_properties(bench_micro PROPERTIES PASS_REGULAR_EXPRESSION
                     "\"test\": \"tg4@b2-m2-argmax\", \"n_prompt\": 0, \"n_gen\": 4, \"batch\": 2, \"avg_ts\": [1-9]")
add_test(NAME bench_micro_bad COMMAND tinfer-bench -m ${PROJECT_SOURCE_DIR}/tests/model/fixtures/tiny-llama
                                      --micro 5)
set_tests_properties(bench_micro_bad PROPERTIES PASS_REGULAR_EXPRESSION "error: --micro: '5' is not auto, 1, 2, 3 or 4")
set_tests_properties(random_weights bench_cli bench_random bench_png bench_tp bench_greedy bench_argmax
                     bench_micro bench_micro_bad PROPERTIES LABELS unit
                     TIMEOUT 120)
