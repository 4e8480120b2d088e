/* bench_main.c — standalone driver for the BF16 GEMM benchmark (examples/bench_gemm/bf16.cu),
 * the same code `tinfer-bench-gemm bf16 ...` runs, built without the chart/JSON dependencies. */
int tinfer_bench_gemm_bf16(int argc, char **argv);

int main(int argc, char **argv) { return tinfer_bench_gemm_bf16(argc - 1, argv + 1); }
