# check_png.cmake — ctest bench_png: runs tinfer-bench with --png PREFIX and checks that both
# charts exist and start with the PNG signature.
#   cmake -DBENCH=<tinfer-bench> -DMODEL=<dir> -DPREFIX=<path prefix> -P check_png.cmake
foreach(_png batch roofline)
  file(REMOVE ${PREFIX}-${_png}.png) # a stale file from an earlier run must not pass
endforeach()
execute_process(COMMAND ${BENCH} -m ${MODEL} -p 32 -n 4 --batch 1,2 -r 1 --no-peak --png ${PREFIX}
                RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "tinfer-bench --png exited with ${_rc}")
endif()
foreach(_png batch roofline)
  set(_f ${PREFIX}-${_png}.png)
  if(NOT EXISTS ${_f})
    message(FATAL_ERROR "${_f} was not written")
  endif()
  file(READ ${_f} _head LIMIT 8 HEX)
  if(NOT _head STREQUAL "89504e470d0a1a0a")
    message(FATAL_ERROR "${_f} does not start with the PNG signature (${_head})")
  endif()
endforeach()
message(STATUS "bench_png: ${PREFIX}-batch.png and ${PREFIX}-roofline.png are PNG files")
