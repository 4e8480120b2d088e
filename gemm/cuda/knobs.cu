/*
 * knobs.cu — the GEMM rungs' measurement knobs (knobs.h): one struct, every field unset until a
 * program sets it.
 */
#include "gemm/cuda/knobs.h"

#define U TINFER_KNOB_UNSET
static tinfer_gemm_knobs g_knobs = {U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U};
static_assert(sizeof(tinfer_gemm_knobs) == 21 * sizeof(int),
              "every knob is initialised unset above");
#undef U

extern "C" tinfer_gemm_knobs tinfer_gemm_knobs_unset(void) {
    tinfer_gemm_knobs k;
    int *f = (int *)&k;
    for (size_t i = 0; i < sizeof k / sizeof(int); i++)
        f[i] = TINFER_KNOB_UNSET;
    return k;
}

extern "C" const tinfer_gemm_knobs *tinfer_gemm_knobs_get(void) { return &g_knobs; }

extern "C" void tinfer_gemm_knobs_set(const tinfer_gemm_knobs *k) {
    g_knobs = k ? *k : tinfer_gemm_knobs_unset();
}

extern "C" int tinfer_knob_int(int v, int dflt, int lo, int hi) {
    if (v == TINFER_KNOB_UNSET) return dflt;
    return v < lo || v > hi ? -2 : v;
}
