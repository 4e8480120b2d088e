/*
 * omp_policy.h — what every example program that runs the model does first (header-only).
 *
 * OpenMP threads spin briefly, then sleep, between parallel regions, unless the user chose a
 * wait policy (OMP_WAIT_POLICY or GOMP_SPINCOUNT). Decode runs ~120 short parallel regions per
 * token (one per GEMV), so how a waiting thread waits decides decode speed:
 *   - libgomp's default spins ~300,000 times before sleeping: when another process holds one of
 *     the cores, the spinning thread and the busy process share it and every region's join waits
 *     for a descheduled thread (decode fell to 2 tok/s on a loaded 2-core VM);
 *   - OMP_WAIT_POLICY=passive sleeps at once: safe under load, but every region pays a futex
 *     wake (on the quiet 2-core Xeon, SmolLM2 tg64: 67 tok/s against 105 with active spinning);
 *   - GOMP_SPINCOUNT=10000 (this default) spins a short while, then sleeps: 101 tok/s quiet, and
 *     44 tok/s with one core taken by a busy loop, as passive (44; active: 30).
 * (tinfer-bench -p 0 -n 64, 2 threads; gemm/cpu/README.md "Waiting between parallel regions".)
 * libgomp reads the variables once, when it is loaded, so setting one means running the program
 * again with it set (once: the variable is then set). The re-run keeps the program's name for
 * ps / top / pkill (the kernel would otherwise name it after /proc/self/exe).
 */
#ifndef TINFER_EXAMPLES_OMP_POLICY_H
#define TINFER_EXAMPLES_OMP_POLICY_H

#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

static inline void tinfer_example_omp_policy(char **argv, const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    if (setenv("GOMP_SPINCOUNT", "10000", 1) != 0) return;
    execv("/proc/self/exe", argv);
    unsetenv("GOMP_SPINCOUNT"); /* exec failed (no /proc): carry on with the default */
}

#endif
