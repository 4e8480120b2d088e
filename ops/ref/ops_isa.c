/* ops_isa.c — the run-time SIMD choice shared by the CPU ops (see ops_simd.h) and its test
 * switch tinfer_ops_cpu_force_isa (ops_cpu.h). */
#include "ops/ref/ops_cpu.h"
#include "ops/ref/ops_simd.h"

#include <string.h>

static int g_forced = -1; /* -1 automatic, 0 scalar, 1 avx2 */

static bool cpu_avx2(void) {
#ifdef TINFER_OPS_X86
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

bool tinfer_ops_cpu_isa_avx2(void) { return g_forced >= 0 ? g_forced == 1 : cpu_avx2(); }

int tinfer_ops_cpu_force_isa(const char *isa) {
    if (!isa || !isa[0]) {
        g_forced = -1;
        return 0;
    }
    if (!strcmp(isa, "scalar")) {
        g_forced = 0;
        return 0;
    }
    if (!strcmp(isa, "avx2") && cpu_avx2()) {
        g_forced = 1;
        return 0;
    }
    return -1;
}

const char *tinfer_ops_cpu_isa(void) { return tinfer_ops_cpu_isa_avx2() ? "avx2" : "scalar"; }
