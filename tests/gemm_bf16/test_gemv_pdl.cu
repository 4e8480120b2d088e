/*
 * test_gemv_pdl.cu — decode rungs 04/05/06 launched with programmatic dependent launch (PDL) read
 * only data the previous kernel on the stream has finished writing.
 *
 * With PDL (knob gemv_pdl, gemm/decode/05_cp_async.cu) a GEMV block may start while the
 * previous kernel still runs; only griddepcontrol.wait orders it after that kernel's writes. So:
 * on one stream, a writer kernel fills X (or, separately, W) with NEW values and the GEMV is
 * launched right after it with no synchronisation; the output must match a double-precision CPU
 * reference computed from the NEW values. Stale inputs are independent random values, so one
 * stale k-tile moves the normalized error far past the tolerance. The writer comes in two forms:
 * plain (the dependent may start as its blocks exit), and "early" (it calls
 * griddepcontrol.launch_dependents first, then spins ~20 us before writing, so the GEMV's blocks
 * are resident long before the data exists: any read issued before the wait sees old values).
 * Repeated ITERS times per (rung 04/05/06, M = 1/8, X/W, plain/early), fresh values each time; the
 * output is pre-filled with NaN, so an unwritten element fails too. Rungs 05/06 also run with
 * args.w_static (W promised unwritten by work in flight) and a new X: they then issue their first
 * W loads before the wait (knob gemv_early_w 2, set below: at any grid size), and must still see
 * the new X.
 * A probe kernel (PDL-launched after the early writer) reads X before and after its own
 * griddepcontrol.wait: stale values after the wait fail the test (the ordering the GEMV relies
 * on); stale values before it are counted and printed, to show the overlap is real here.
 * The same checks run on the prefill rung 03 (wgmma), PDL-launched for short K and here always
 * (knob gemm_wgmma_pdl 1, set below): its own pick at this shape (split-K over a cluster: 4 tiles, K = 4096)
 * and the persistent kernel with 128 x 256 tiles forced; and on rung 05 (skinny, ids 32 / 33): its own
 * pick (split 8 over a cluster: 8 tiles) and unsplit; and on rungs 04 / 02 (mma.sync, ids 34 / 35): rung
 * 04's own pick (split-K over a cluster) and rung 02 (no split); and on rung 03 in 128 x 72 tiles
 * whose clusters of 2 multicast X (id 36); and on rung 06 (tiny, ids 37 / 38, K = 576): its own pick
 * 16-token tiles in clusters of 8 multicasting W, K split over 3 CTAs (id 39), and 64-token
 * tiles split over 2 (id 40), and those split 2 through a ring of 2 stages (id 41), and 16-token
 * tiles in clusters of 4 multicasting W through a ring of 3 stages (id 42), and with two
 * consumer warpgroups: 64-token tiles split 2 through a ring of 2 stages (id 45), 32-token tiles
 * unsplit (id 46); W loads before the wait under args.w_static.
 * Every rung but 04 (GEMV) also
 * runs with args.w_static and a new X: GEMV rungs 05 / 06 and prefill rungs 02 / 04 then issue
 * their first stages' W loads before the wait and must still see the new X (the TMA rungs ignore
 * the flag and must too).
 * Decode rung 08 (persistent, short rows) runs the same checks at K = 576 (its first tile's W
 * loads go before the wait with args.w_static). Decode rung 09 (ids 9, 43, 44: its own ring,
 * and rings of 2 and 3 stages) calls launch_dependents first and, with args.w_static, fills its
 * ring with W before the wait.
 * Also printed: rungs 05/06's launch choice per M (stages, X rows staged, shared memory, blocks
 * per SM from cudaOccupancyMaxActiveBlocksPerMultiprocessor), which must be >= 1.
 * The launcher's PDL mode is the knob gemv_pdl, from `--gemv-pdl N` (unset: the default, which
 * must be a PDL mode on sm_90, checked here; 1..4 pick where launch_dependents sits; 0 runs the
 * same checks without PDL). Exit: 0 pass, 1 fail, 2 bad arguments, 77 no GPU (ctest: skipped).
 */
#include "gemm/bf16.h"
#include "gemm/cuda/device.h"
#include "gemm/cuda/knobs.h"
#include "gemm/decode/gemv_bf16_internal.h"
#include "gemm/tc/gemm_bf16_tc_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* F32 output, FP32 accumulation over K = 4096 terms of size <= 1: rounding grows like
 * sqrt(K) * 2^-24 relative (~4e-6); 2e-4 is test_gemm_bf16's F32 bound (25x margin for the tensor
 * cores' accumulation). A stale input gives an error of order 1. */
#define TOL_F32 2e-4
#define ITERS 20
#define N_COLS 1000 /* ragged: 62.5 tiles of 16 columns */
#define K_DIM 4096  /* 16 k-tiles: rung 06 splits them 8 / 8 */
#define M_MAX 8
/* Writer spin before its stores, in clock cycles: ~20 us at the H200's ~1.98 GHz, longer than a
 * GEMV block's start-up, so an early read would see the old values. */
#define SPIN_CYCLES 40000ll

/* Value of element i for a seed: an integer in [-128, 127] / 128, exact in BF16 (8 significant
 * bits), so host and device agree bit for bit. */
static __host__ __device__ inline uint16_t val_bits(uint64_t i, uint32_t seed) {
    uint32_t h = (uint32_t)i * 2654435761u ^ (uint32_t)(i >> 32) * 0x9e3779b9u ^ seed;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    const float f = (float)((int)(h >> 24) - 128) / 128.0f;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

static __global__ void writer_kernel(uint16_t *p, size_t n, uint32_t seed, int early) {
#if __CUDA_ARCH__ >= 900
    if (early) {
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
        const long long t0 = clock64();
        while (clock64() - t0 < SPIN_CYCLES) {
        }
    }
#endif
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = val_bits(i, seed);
}

/* Reads a sample of p before and after griddepcontrol.wait; counts values that are not yet the
 * seed's. Launched with PDL after an early writer. */
static __global__ void probe_kernel(const uint16_t *p, size_t n, uint32_t seed, unsigned *stale) {
    const size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * 97 % n;
    const uint16_t before = *(volatile const uint16_t *)&p[i];
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    const uint16_t after = *(volatile const uint16_t *)&p[i];
    if (before != val_bits(i, seed)) atomicAdd(&stale[0], 1u);
    if (after != val_bits(i, seed)) atomicAdd(&stale[1], 1u);
}

static double bf(uint16_t h) { return (double)tinfer_bf16_to_f32(h); }

int main(int argc, char **argv) {
    tinfer_gemm_knobs knobs = tinfer_gemm_knobs_unset();
    if (argc == 3 && !strcmp(argv[1], "--gemv-pdl") && argv[2][0] >= '0' && argv[2][0] <= '4' && !argv[2][1])
        knobs.gemv_pdl = argv[2][0] - '0';
    else if (argc != 1) {
        fprintf(stderr, "usage: test-gemv-pdl [--gemv-pdl 0..4]\n");
        return 2;
    }
    /* rung 03 takes PDL by K (short K only); check its ordering at this test's K = 4096 too */
    knobs.gemm_wgmma_pdl = 1;
    /* rungs 05 / 06 read W before the wait for w_static calls at any grid size (the default rule
     * takes only grids that fill the SMs, larger than this test's) */
    knobs.gemv_early_w = 2;
    tinfer_gemm_knobs_set(&knobs);
    tinfer_device_info info;
    tinfer_err err;
    tinfer_status st = tinfer_device_probe(0, &info, &err);
    if (st == TINFER_ERR_NO_DEVICE) {
        printf("skip: %s\n", err.msg);
        return 77;
    }
    if (st != TINFER_OK) {
        printf("FAIL device: %s\n", err.msg);
        return 1;
    }
    const bool sm90 = info.cc_major >= 9;
    const bool pdl_set = knobs.gemv_pdl != TINFER_KNOB_UNSET;
    char pdl_text[24];
    snprintf(pdl_text, sizeof pdl_text, "%d", knobs.gemv_pdl);
    printf("device %s sm_%d%d, %d SMs; --gemv-pdl %s\n", info.name, info.cc_major, info.cc_minor, info.n_sm,
           pdl_set ? pdl_text : "(unset: default)");
    int fails = 0, runs = 0;

    /* launch choice per M */
    for (int cl = 0; cl < (sm90 ? 2 : 1); cl++)
        for (int swi = 0; swi < 2; swi++)
            for (int64_t M : {1, 2, 3, 4, 6, 8, 9, 16}) {
                tinfer_gemv05_info gi;
                if (tinfer_gemv05_config(M, swi, cl, &gi, &err) != TINFER_OK) {
                    printf("FAIL config rung %s M=%lld: %s\n", cl ? "06" : "05", (long long)M, err.msg);
                    fails++;
                    continue;
                }
                printf("config rung %s%s M=%2lld: stages %d, X rows staged %d, tokens/pass %d, smem %d B, "
                       "blocks/SM %d, pdl %d\n",
                       cl ? "06" : "05", swi ? " swiglu" : "", (long long)M, gi.stages, gi.x_rows, gi.tokens_per_pass,
                       gi.smem_bytes, gi.blocks_per_sm, gi.pdl);
                if (gi.blocks_per_sm < 1) {
                    printf("FAIL config: the kernel does not fit an SM\n");
                    fails++;
                }
                if (sm90 && !pdl_set && gi.pdl == 0) {
                    printf("FAIL config: PDL is off by default on sm_90\n");
                    fails++;
                }
            }

    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const size_t nx = (size_t)M_MAX * K_DIM, nw = (size_t)N_COLS * K_DIM, ny = (size_t)M_MAX * N_COLS;
    uint16_t *dX, *dW;
    float *dY;
    unsigned *dStale;
    CK(cudaMalloc(&dX, nx * 2));
    CK(cudaMalloc(&dW, nw * 2));
    CK(cudaMalloc(&dY, ny * 4));
    CK(cudaMalloc(&dStale, 2 * sizeof(unsigned)));
    std::vector<uint16_t> hX(nx), hW(nw);
    std::vector<float> hY(ny);
    std::vector<double> ref(ny);
    uint32_t seed = 0x1234567u;
    const int wblocks = 2 * info.n_sm;

    /* negative control and wait check: probe after an early writer */
    if (sm90) {
        unsigned total_before = 0, total_after = 0, hs[2];
        for (int it = 0; it < ITERS; it++) {
            seed = seed * 1664525u + 1013904223u;
            CK(cudaMemsetAsync(dStale, 0, 2 * sizeof(unsigned), s));
            writer_kernel<<<wblocks, 256, 0, s>>>(dX, nx, seed, 1);
            CK(cudaGetLastError());
            cudaLaunchConfig_t cfg;
            cudaLaunchAttribute attr[1];
            memset(&cfg, 0, sizeof cfg);
            cfg.gridDim = dim3(64);
            cfg.blockDim = dim3(256);
            cfg.stream = s;
            attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            attr[0].val.programmaticStreamSerializationAllowed = 1;
            cfg.attrs = attr;
            cfg.numAttrs = 1;
            CK(cudaLaunchKernelEx(&cfg, probe_kernel, (const uint16_t *)dX, nx, seed, dStale));
            CK(cudaMemcpyAsync(hs, dStale, sizeof hs, cudaMemcpyDeviceToHost, s));
            CK(cudaStreamSynchronize(s));
            total_before += hs[0];
            total_after += hs[1];
        }
        printf("probe: %u stale reads before griddepcontrol.wait, %u after (of %d x %d reads)\n", total_before,
               total_after, ITERS, 64 * 256);
        runs++;
        if (total_after) {
            printf("FAIL probe: stale values after griddepcontrol.wait\n");
            fails++;
        }
        if (!total_before) printf("note: no overlap observed before the wait (the GEMV checks below are then weaker)\n");
    }

    /* 4, 5, 6: decode rungs; 30: rung 03 with its own pick (split-K here), 31: rung 03 persistent
     * 128 x 256 (no split); 32 / 33: prefill rung 05 with its own pick (split) / unsplit; 34 / 35:
     * prefill rung 04 with its own pick (split) / rung 02 (runs without PDL off sm_90); 36: rung 03
     * in 72-wide tiles with X multicast over clusters of 2; 37 / 38 / 39: prefill rung 06 with its
     * own pick / 16-token tiles in clusters of 8 (W multicast) / K split over 3 CTAs; 40: rung 06
     * in 64-token tiles, K split over 2; 41: the same through a ring of 2 stages; 42: 16-token
     * tiles in clusters of 4 (W multicast) through a ring of 3 stages; 9: decode rung 09 (its
     * ring holds all 16 k-tiles here), 43 / 44: rung 09 through rings of 2 / 3 stages; 45 / 46:
     * rung 06 with two consumer warpgroups, as 41 / 32-token tiles unsplit.
     * The result lines say "rung 30..46". */
    const tinfer_gemv09_cfg g09_two = {1, 2, 1, 0}, g09_three = {1, 3, 1, 1};
    for (int kernel : {4, 5, 6, 8, 9, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46}) {
        /* rungs 08 and 06 take short rows only (rung 08: K <= 1024, longer ones run rung 04;
         * rung 06: every k-block in shared memory): their K is 576, with the same row strides */
        const int64_t kd = kernel == 8 || (kernel >= 37 && kernel <= 42) || kernel >= 45 ? 576 : K_DIM;
        if (kernel != 5 && kernel != 4 && kernel != 8 && kernel != 35 && !sm90) {
            printf("skip kernel %d: needs sm_90\n", kernel);
            continue;
        }
        for (int64_t M : {1, 8})
            for (int target = 0; target < 2; target++) /* 0: writer writes X, 1: W */
                for (int early = 0; early < (sm90 ? 2 : 1); early++)
                for (int wst = 0; wst < 2; wst++) { /* args.w_static: W read before the wait */
                    if (wst && (target == 1 || kernel == 4)) continue; /* a W writer breaks the promise */
                    /* both inputs from a base seed, synchronously */
                    seed = seed * 1664525u + 1013904223u;
                    writer_kernel<<<wblocks, 256, 0, s>>>(dX, nx, seed, 0);
                    for (size_t i = 0; i < nx; i++) hX[i] = val_bits(i, seed);
                    seed = seed * 1664525u + 1013904223u;
                    writer_kernel<<<wblocks, 256, 0, s>>>(dW, nw, seed, 0);
                    for (size_t i = 0; i < nw; i++) hW[i] = val_bits(i, seed);
                    CK(cudaGetLastError());
                    CK(cudaStreamSynchronize(s));
                    int bad = 0;
                    double worst = 0;
                    for (int it = 0; it < ITERS && !bad; it++) {
                        seed = seed * 1664525u + 1013904223u;
                        uint16_t *dst = target ? dW : dX;
                        std::vector<uint16_t> &hdst = target ? hW : hX;
                        const size_t n = target ? nw : nx;
                        CK(cudaMemsetAsync(dY, 0xff, ny * 4, s)); /* NaN: unwritten outputs fail */
                        writer_kernel<<<wblocks, 256, 0, s>>>(dst, n, seed, early);
                        CK(cudaGetLastError());
                        tinfer_gemm_bf16_args a;
                        memset(&a, 0, sizeof a);
                        a.M = M;
                        a.N = N_COLS;
                        a.K = kd;
                        a.X = dX;
                        a.ldx = K_DIM;
                        a.W = dW;
                        a.ldw = K_DIM;
                        a.Y = dY;
                        a.ldy = N_COLS;
                        a.y_dtype = TINFER_DTYPE_F32;
                        a.w_static = wst;
                        const tinfer_status rs =
                            kernel == 30   ? tinfer_gemm_bf16_wgmma_ws_split(&a, TINFER_GEMM_BF16_WGMMA_CFG_AUTO, 0, s, &err)
                            : kernel == 31 ? tinfer_gemm_bf16_wgmma_ws_split(&a, TINFER_GEMM_BF16_WGMMA_CFG_256, 1, s, &err)
                            : kernel == 32 ? tinfer_gemm_bf16_skinny(&a, 0, 0, s, &err)
                            : kernel == 33 ? tinfer_gemm_bf16_skinny(&a, 0, 1, s, &err)
                            : kernel == 34 ? tinfer_gemm_bf16_mma_split(&a, TINFER_GEMM_BF16_MMA_CFG_AUTO, TINFER_GEMM_BF16_MMA_SPLIT_AUTO, s, &err)
                            : kernel == 35 ? tinfer_gemm_bf16_mma(&a, TINFER_GEMM_BF16_MMA_CFG_AUTO, s, &err)
                            : kernel == 36 ? tinfer_gemm_bf16_wgmma_ws_split(&a, TINFER_GEMM_BF16_WGMMA_CFG_72MC, 1, s, &err)
                            : kernel == 37 ? tinfer_gemm_bf16_tiny(&a, 0, 0, 0, s, &err)
                            : kernel == 38 ? tinfer_gemm_bf16_tiny(&a, 16, 8, 1, s, &err)
                            : kernel == 39 ? tinfer_gemm_bf16_tiny(&a, 16, 1, 3, s, &err)
                            : kernel == 40 ? tinfer_gemm_bf16_tiny(&a, 64, 1, 2, s, &err)
                            : kernel == 41 ? tinfer_gemm_bf16_tiny_ring(&a, 64, 1, 2, 2, s, &err)
                            : kernel == 42 ? tinfer_gemm_bf16_tiny_ring(&a, 16, 4, 1, 3, s, &err)
                            : kernel == 43 ? tinfer_gemv_bf16_bulk_cfg(&a, &g09_two, s, &err)
                            : kernel == 44 ? tinfer_gemv_bf16_bulk_cfg(&a, &g09_three, s, &err)
                            : kernel == 45 ? tinfer_gemm_bf16_tiny_cfg(&a, 64, 1, 2, 2, 2, s, &err)
                            : kernel == 46 ? tinfer_gemm_bf16_tiny_cfg(&a, 32, 1, 1, 0, 2, s, &err)
                                           : tinfer_gemv_bf16((tinfer_gemv_bf16_kernel)kernel, &a, s, &err);
                        if (rs != TINFER_OK) {
                            printf("FAIL rung %02d: %s\n", kernel, err.msg);
                            return 1;
                        }
                        CK(cudaMemcpyAsync(hY.data(), dY, (size_t)M * N_COLS * 4, cudaMemcpyDeviceToHost, s));
                        for (size_t i = 0; i < n; i++) hdst[i] = val_bits(i, seed); /* while the GPU runs */
                        CK(cudaStreamSynchronize(s));
                        double num = 0, den = 0;
                        for (int64_t m = 0; m < M; m++)
                            for (int64_t j = 0; j < N_COLS; j++) {
                                double acc = 0;
                                const uint16_t *xr = &hX[(size_t)m * K_DIM], *wr = &hW[(size_t)j * K_DIM];
                                for (int64_t k = 0; k < kd; k++) acc += bf(xr[k]) * bf(wr[k]);
                                const double o = hY[(size_t)m * N_COLS + j];
                                if (!isfinite(o)) {
                                    printf("FAIL rung %02d M=%lld %s %s iter %d: non-finite output at (%lld, %lld)\n",
                                           kernel, (long long)M, target ? "W" : "X", early ? "early" : "plain", it,
                                           (long long)m, (long long)j);
                                    bad = 1;
                                    m = M;
                                    break;
                                }
                                num += (o - acc) * (o - acc);
                                den += acc * acc;
                            }
                        const double nerr = den > 0 ? sqrt(num / den) : sqrt(num);
                        if (nerr > worst) worst = nerr;
                        if (!bad && !(nerr <= TOL_F32)) {
                            printf("FAIL rung %02d M=%lld %s %s iter %d: nerr %.3g (tol %.1g): stale input read\n",
                                   kernel, (long long)M, target ? "W" : "X", early ? "early" : "plain", it, nerr,
                                   TOL_F32);
                            bad = 1;
                        }
                    }
                    runs++;
                    fails += bad;
                    printf("%s rung %02d M=%lld new %s, %s writer%s: %d launches, worst nerr %.2e\n", bad ? "FAIL" : "ok  ",
                           kernel, (long long)M, target ? "W" : "X", early ? "early" : "plain", wst ? ", w_static" : "",
                           ITERS, worst);
                }
    }
    CK(cudaFree(dX));
    CK(cudaFree(dW));
    CK(cudaFree(dY));
    CK(cudaFree(dStale));
    CK(cudaStreamDestroy(s));
    printf("%s: %d checks, %d failed\n", fails ? "FAIL" : "PASS", runs, fails);
    return fails ? 1 : 0;
}
