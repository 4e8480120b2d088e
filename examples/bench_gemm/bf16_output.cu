/*
 * bf16_output.cu — the BF16 benchmark's files (`tinfer-bench-gemm bf16 --json F --png PREFIX`,
 * bf16.cu): the JSON records with the run's provenance, and the two PNG charts (chart.c).
 */
extern "C" { /* chart.h is a C header without C++ guards */
#include "examples/bench_gemm/chart.h"
}
#include "examples/bench_gemm/bf16_internal.h"

#include <string.h>
#include <time.h>

/* The run's provenance goes with its records: GPU, SMs, compute capability, driver, UTC date,
 * the copy rate the GB/s figures are measured against, the timing mode and the set run. */
void write_json(const char *path, const std::vector<rec> &rs, const cudaDeviceProp &prop, const char *set) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "error: cannot write %s\n", path);
        return;
    }
    int drv = 0;
    if (cudaDriverGetVersion(&drv) != cudaSuccess) drv = 0;
    char date[32] = "unknown";
    const time_t now = time(NULL);
    struct tm tmv;
    if (gmtime_r(&now, &tmv)) strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    fprintf(f,
            "{\n  \"gpu\": \"%s\",\n  \"n_sm\": %d,\n  \"sm\": %d%d,\n  \"cuda_driver\": %d,\n  \"date\": \"%s\",\n"
            "  \"set\": \"%s\",\n  \"copy_gbs\": %.1f,\n  \"timing\": \"%s\",\n  \"w_static\": %s,\n  \"records\": [\n",
            prop.name, prop.multiProcessorCount, prop.major, prop.minor, drv, date, set, g_copy_gbs, g_graph ? "graph" : "stream",
            g_w_static ? "true" : "false");
    for (size_t i = 0; i < rs.size(); i++) {
        const rec &r = rs[i];
        fprintf(f,
                "    {\"set\": \"%s\", \"shape\": \"%s\", \"kernel\": \"%s\", \"M\": %lld, \"N\": %lld, \"K\": %lld, "
                "\"us\": %.3f, \"tflops\": %.2f, \"gbs\": %.1f, \"pct_cublas\": %.1f, \"pct_copy\": %.1f, "
                "\"diff_vs_cublas\": %.2e, \"pct_best_ref\": %.1f, \"host_us\": %.2f%s%s%s}%s\n",
                r.set.c_str(), r.shape.c_str(), r.kernel.c_str(), (long long)r.M, (long long)r.N, (long long)r.K, r.us,
                r.tflops, r.gbs, r.pct_cublas, r.pct_copy, r.diff, r.pct_best, r.host_us,
                r.route.empty() ? "" : ", \"route\": \"", r.route.c_str(), r.route.empty() ? "" : "\"",
                i + 1 < rs.size() ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    fclose(f);
}

/* Charts: for one model shape, TFLOP/s (and GB/s) vs M for auto and cuBLAS. */
void write_charts(const char *prefix, const std::vector<rec> &rs) {
    const char *shapes[] = {"llama_qkv", "llama_gateup", "llama_down", "smol_gateup", "smol_lmhead"};
    const char *kernels[] = {"auto", "cublas"};
    for (int which = 0; which < 2; which++) {
        std::vector<std::vector<double>> xs, ys;
        std::vector<std::string> names;
        for (const char *sh : shapes)
            for (const char *kn : kernels) {
                std::vector<double> x, y;
                for (const rec &r : rs)
                    if (r.set == "model" && r.shape == sh && r.kernel == kn) {
                        x.push_back((double)r.M);
                        y.push_back(which == 0 ? r.tflops : r.gbs);
                    }
                if (x.empty()) continue;
                xs.push_back(x);
                ys.push_back(y);
                names.push_back(std::string(sh) + " " + (strcmp(kn, "auto") ? "cuBLAS" : "ours"));
            }
        if (xs.empty()) continue;
        std::vector<tinfer_chart_series> ser(xs.size());
        for (size_t i = 0; i < xs.size(); i++) {
            ser[i].name = names[i].c_str();
            ser[i].x = xs[i].data();
            ser[i].y = ys[i].data();
            ser[i].n = (int32_t)xs[i].size();
        }
        tinfer_chart_spec sp;
        memset(&sp, 0, sizeof sp);
        sp.title = which == 0 ? "BF16 GEMM TFLOP/s vs M (H200): ours (auto) vs cuBLAS" : "BF16 GEMM GB/s vs M: ours vs cuBLAS";
        sp.x_label = "M (tokens)";
        sp.y_label = which == 0 ? "TFLOP/s" : "GB/s (weights + activations)";
        sp.log2_x = 1;
        std::string path = std::string(prefix) + (which == 0 ? "_tflops.png" : "_gbs.png");
        char eb[256];
        if (tinfer_chart_write_png(path.c_str(), &sp, ser.data(), (int32_t)ser.size(), eb, sizeof eb) != 0)
            fprintf(stderr, "warning: chart %s: %s\n", path.c_str(), eb);
    }
}
