/*
 * knobs.h — tinfer-bench-gemm's command-line flags for the GEMM rungs' measurement knobs
 * (gemm/cuda/knobs.h): one flag per knob, e.g. `--gemv-pdl 0`, `--gemm-wgmma-epi tma`.
 */
#ifndef TINFER_BENCH_GEMM_KNOBS_H
#define TINFER_BENCH_GEMM_KNOBS_H

#include "gemm/cuda/knobs.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* argv[*i] as a knob flag: 1 when it is one (its value argv[*i + 1] stored in k, *i advanced past
 * it), 0 when argv[*i] is not a knob flag, -1 when the value is missing or out of range (a
 * one-line message on stderr). */
int tinfer_bench_knob_flag(int argc, char **argv, int *i, tinfer_gemm_knobs *k);
/* The knob flags with their values and what each does, for --help. */
void tinfer_bench_knobs_help(FILE *f);

#ifdef __cplusplus
}
#endif
#endif
