/*
 * omp_policy.h — what every example program that runs the model does first (header-only).
 *
 * OpenMP threads sleep instead of spinning between parallel regions unless the user chose a wait
 * policy. Decode runs ~120 short parallel regions per token (one per GEMV); with libgomp's default
 * spin-waiting, when another process holds one of the cores the spinning threads and the busy
 * process share it and every region's join waits for a descheduled thread, so decode on the
 * 2-core development VM fell to 2 tok/s with other builds running, against 24-38 tok/s with
 * OMP_WAIT_POLICY=passive in the same minutes (gemm/cpu/README.md). libgomp reads the variable
 * once, when it is loaded, so setting it means running the program again with it set (once: the
 * variable is then set). The re-run keeps the program's name for ps / top / pkill (the kernel
 * would otherwise name it after /proc/self/exe).
 */
#ifndef TINFER_EXAMPLES_OMP_POLICY_H
#define TINFER_EXAMPLES_OMP_POLICY_H

#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

static inline void tinfer_example_omp_passive(char **argv, const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
    execv("/proc/self/exe", argv);
    unsetenv("OMP_WAIT_POLICY"); /* exec failed (no /proc): carry on with the default */
}

#endif
