/*
 * main.c — tinfer-bench-gemm: kernel-level GEMM benchmarks against cuBLAS.
 *
 *   tinfer-bench-gemm [FP32 options]      the FP32 SGEMM ladder (fp32.c; --help lists options)
 *   tinfer-bench-gemm bf16 [options]      the BF16 tensor-core GEMMs (bf16.cu), when built in
 *   tinfer-bench-gemm route [options]     which BF16 kernel the dispatcher runs for a shape (route.c;
 *                                         host arithmetic, no GPU needed)
 *
 * bf16.cu defines extern "C" int tinfer_bench_gemm_bf16(int argc, char **argv) and is called with the
 * arguments after "bf16" (its argv[0] is "bf16"). Until that file exists the weak reference
 * below stays NULL and the subcommand says it is not built in.
 */
#include <stdio.h>
#include <string.h>

int tinfer_bench_gemm_fp32(int argc, char **argv);
int tinfer_bench_gemm_route(int argc, char **argv);
extern int tinfer_bench_gemm_bf16(int argc, char **argv) __attribute__((weak));

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "bf16") == 0) {
        if (!tinfer_bench_gemm_bf16) {
            fprintf(stderr, "error: the bf16 benchmark is not built into this binary\n");
            return 2;
        }
        return tinfer_bench_gemm_bf16(argc - 1, argv + 1);
    }
    if (argc > 1 && strcmp(argv[1], "route") == 0) return tinfer_bench_gemm_route(argc - 1, argv + 1);
    return tinfer_bench_gemm_fp32(argc, argv);
}
