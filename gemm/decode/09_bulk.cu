/*
 * 09_bulk.cu — decode rung 9: the weight streamed by the TMA through a ring of shared-memory
 * stages into one block per SM that owns its output columns whole, so the X of a stage is
 * small next to its W and M = 8 costs about what M = 1 costs (sm_90a).
 *
 * Why: rung 05 gives a block 16 columns; at M = 8 each stage then carries 8 token rows of X per
 * 16 weight rows, a third of the stage, and Llama QKV at M = 8 took +14% over M = 1
 * (gemm/decode/README.md, "Rung 09"). Here block b owns columns [b N' / G, (b + 1) N' / G) of G =
 * SMs blocks (47 for QKV's 6144), so X is 8 rows per 47. The first aim was different: blocks of
 * half an SM, so that two grids share every SM and the next call's weight (args.w_static) is read
 * while this one runs, as the session-14 read probes suggested (`coresident`,
 * --gemv09-coresident 1). That lost on QKV (below); the deep ring of one block per SM is the
 * default.
 *
 * A stage is a k-tile of 256 columns: for each of its four 64-column chunks one TMA box of the
 * block's C = ceil(N' / G) weight rows (two with SwiGLU: gate and up rows), 128-byte swizzle, in
 * a 1024-byte aligned slot of ceil(C / 8) x 1024 B; then one box of the pass's token rows of X,
 * 256 columns wide, unswizzled (512 B per row). All land on the stage's full barrier; the TMA
 * fills rows past N or M and columns past K with zeros. Auto stages: as many as fit the SM (9 for
 * QKV at M = 1, 8 at M = 8), or half of it when coresident (4 / 3). G grows past the SM count
 * only where a block would own more than 64 rows.
 * Warps: 8 consumers and 1 producer. Consumer warps 2c and 2c + 1 share chunk c of every stage:
 * lane (g, t) reads logical 16-byte granule q = 2t + (w & 1) of rows g and g + 8 of each 16-row
 * group and of token row g, and runs rung 04's permuted-k mma.sync m16n8k16 on them (the same k
 * for A and B, so any granule order is a valid k order). Under the swizzle the granule sits at
 * q ^ (row & 7); rows 2i and 2i + 1 of one 8-lane phase then read granules of opposite parity:
 * no bank conflicts on W (the X rows, 512 B apart, meet 2-way conflicts on one load of 2C / 16 + 1
 * per stage). Each consumer warp arrives on the stage's empty barrier once it has read it; the
 * producer refills it after all 8. After the loop the consumers' partial sums meet in the stage
 * area and one thread per output runs the epilogue.
 * PDL (sm_90): launch_dependents first; with args.w_static the producer issues the W boxes of
 * the first S stages, then griddepcontrol.wait, then their X boxes; every other thread waits at
 * its start (X is read only from the stages, R / bias / Y after the wait).
 * Rows of a W slot past the block's own columns hold a neighbour's rows, zeros or stale bytes and
 * only feed outputs that are not stored.
 * Measured (H200, session 15, `tinfer-bench-gemm-bf16 bulk --w-static`, stream / graph us; % of
 * the copy rate at M = 1; gemm/decode/README.md "Rung 09"), call 7, the final form:
 *   QKV M = 1 / 2 / 4 / 8: 13.56 / 13.59 / 13.89 / 14.16 (graph 12.69 / 12.66 / 12.80 / 13.03;
 *   86.9% / 92.8% at M = 1), rung 05 13.42 / 13.56 / 14.80 / 15.33 (12.76 / 12.89 / 13.85 /
 *   14.48): M = 8 +4.4% over M = 1, rung 05 +14.2%.
 *   down M = 1 / 4 / 8: 30.13 / 29.95 / 30.00 (29.46 / 29.55 / 29.63), rung 06 29.56 / 30.73 /
 *   31.56 (28.41 / 29.82 / 30.79); coresident within 1% of the default here.
 *   gate/up (448 blocks of 64 columns, more than one per SM) M = 1 62.1 against rung 05 55.5.
 * The coresident form (calls 2, 3, 6, 7): QKV M = 1 14.2-14.9 (graph 13.4-14.1), M = 8 15.0-16.7;
 * the next grid's early weight does not make up for the smaller ring, and two blocks per SM (each a
 * quarter SM) are slower still (16.2). Forms tried and replaced (calls 1-5, QKV M = 1 stream):
 * one 512-byte bulk copy (cp.async.bulk, 1-D) per row and k-tile: ~13 B/ns per block, 29.1 us;
 * 256-column unswizzled W boxes 15.1; 512-column k-tiles 15.4-15.8; 64-column stages read by one
 * warp pair each (12 stages of 7 KB) 15.7, down 46.8. Without the early weight: +0.6-1.6 us.
 * Constraints: K % 8 == 0, 16-byte aligned rows (bf16.h): the TMA's 16-byte stride rule. Tokens:
 * passes of 8 (grid.y); larger M re-streams W once per pass.
 */
#include "gemm/cuda/bf16_epi.cuh"
#include "gemm/cuda/cuda_check.h"
#include "gemm/cuda/device.h"
#include "gemm/cuda/knobs.h"
#include "gemm/cuda/ptx.cuh"
#include "gemm/cuda/sm90.cuh"
#include "gemm/cuda/tma.h"
#include "gemm/decode/gemv_bf16_internal.h"

#include <stdlib.h>
#include <string.h>

/* k-columns per stage, per W box (one 128-byte row: the 128-byte swizzle's) and W boxes per stage
 */
#define G09_KT 256
#define G09_KC 64
#define G09_CHUNKS (G09_KT / G09_KC)
#define G09_CONSUMERS 8
#define G09_THREADS ((G09_CONSUMERS + 1) * 32)
/* Weight rows per block: at most 4 groups of 16. */
#define G09_MAX_RG 4
/* Stages of the ring: at most 16 (the barrier area holds 2 x 16 barriers). */
#define G09_MAX_STAGES 16
#define G09_BAR_BYTES 256
/* Token rows per pass (one n8 mma tile). */
#define G09_NT 8

using tdec::mma_16816;

namespace {

/* Launch parameters shared by host and device. */
struct g09_params {
    int32_t nblk;   /* blocks along x (column ranges) */
    int32_t cbox;   /* C: rows per W box, the most columns any block owns */
    int32_t parts;  /* W boxes per chunk: 1, or 2 with SwiGLU (gate, up) */
    int32_t xrows;  /* token rows per X box: min(M, 8) */
    int32_t stages; /* S */
    int32_t early;  /* 1: W of the first S stages before griddepcontrol.wait (args.w_static) */
    int32_t pdl;    /* launched with programmatic stream serialization */
};

/* Rows per W slot (a multiple of 8, so every slot starts 1024-byte aligned: the swizzle's
 * repeat), bytes of one W slot, and of one stage: 4 x parts W slots and the X box (xrows x
 * 512 B), rounded to 1024. */
__host__ __device__ inline int32_t g09_rows_per_part(const g09_params &p) {
    return (p.cbox + 7) / 8 * 8;
}
__host__ __device__ inline uint32_t g09_part_bytes(const g09_params &p) {
    return (uint32_t)g09_rows_per_part(p) * (G09_KC * 2);
}
__host__ __device__ inline uint32_t g09_stage_bytes(const g09_params &p) {
    const uint32_t b =
        G09_CHUNKS * (uint32_t)p.parts * g09_part_bytes(p) + (uint32_t)p.xrows * (G09_KT * 2);
    return (b + 1023u) / 1024u * 1024u;
}

} // namespace

template <int RG>
static __global__ void __launch_bounds__(G09_THREADS, 2)
    gemv09_kernel(tinfer_gemm_bf16_args a, const __grid_constant__ CUtensorMap map_w,
                  const __grid_constant__ CUtensorMap map_x, g09_params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(16) unsigned char g09_sm[];
    /* barriers first, then the stages from the next 1024-byte boundary (the launch adds
     * G09_BAR_BYTES + 1008 bytes for this) */
    uint64_t *const full = reinterpret_cast<uint64_t *>(g09_sm), *const empty =
                                                                     full + G09_MAX_STAGES;
    unsigned char *const stage0 =
        g09_sm + G09_BAR_BYTES + ((1024u - ((smem_u32(g09_sm) + G09_BAR_BYTES) & 1023u)) & 1023u);
    const uint32_t stage_bytes = g09_stage_bytes(p), part_bytes = g09_part_bytes(p);
    const uint32_t chunk_bytes = (uint32_t)p.parts * part_bytes, xoff = G09_CHUNKS * chunk_bytes;
    const int S = p.stages, rp = g09_rows_per_part(p);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const bool swi = a.swiglu != 0;
    const int64_t nout = tinfer_gemm_bf16_nout(a), F = a.N / 2;
    const int64_t c0 = (int64_t)blockIdx.x * nout / p.nblk,
                  c1 = ((int64_t)blockIdx.x + 1) * nout / p.nblk;
    const int ncol = (int)(c1 - c0); /* >= 1: nblk <= nout */
    const int m0 = (int)blockIdx.y * G09_NT;
    const int xv = (int)(a.M - m0 < G09_NT ? a.M - m0 : G09_NT); /* token rows of this pass */
    const int nkt = (int)((a.K + G09_KT - 1) / G09_KT);          /* K < 2^31 (launcher) */

    if (p.pdl)
        tdec::pdl_launch_dependents(); /* the next grid may take the other half of the SM now */
    if (threadIdx.x == 0) {
        for (int s = 0; s < S; s++) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], G09_CONSUMERS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (warp ==
        G09_CONSUMERS) { /* producer: lane i < 4 x parts sends W box i, the next lane the X box */
        const int nbox = G09_CHUNKS * p.parts;
        const uint32_t tx =
            (uint32_t)nbox * (uint32_t)p.cbox * (G09_KC * 2) + (uint32_t)p.xrows * (G09_KT * 2);
        auto expect = [&](int kt) {
            if (lane == 0) mbar_expect_tx(&full[kt % S], tx);
            __syncwarp();
        };
        auto issue_w = [&](int kt) {
            if (lane < nbox) {
                const int ch = lane % G09_CHUNKS, part = lane / G09_CHUNKS;
                tma_load_2d(stage0 + (size_t)(kt % S) * stage_bytes + ch * chunk_bytes +
                                part * part_bytes,
                            &map_w, kt * G09_KT + ch * G09_KC, (int32_t)(c0 + (part ? F : 0)),
                            &full[kt % S]);
            }
        };
        auto issue_x = [&](int kt) {
            if (lane == nbox)
                tma_load_2d(stage0 + (size_t)(kt % S) * stage_bytes + xoff, &map_x, kt * G09_KT, m0,
                            &full[kt % S]);
        };
        const int npro = nkt < S ? nkt : S;
        if (p.early) {
            /* args.w_static: nothing in flight on the stream writes W */
            for (int kt = 0; kt < npro; kt++) {
                expect(kt);
                issue_w(kt);
            }
            tdec::pdl_wait();
            for (int kt = 0; kt < npro; kt++)
                issue_x(kt);
        } else {
            tdec::pdl_wait();
            for (int kt = 0; kt < npro; kt++) {
                expect(kt);
                issue_w(kt);
                issue_x(kt);
            }
        }
        for (int kt = npro; kt < nkt; kt++) {
            mbar_wait(&empty[kt % S],
                      (uint32_t)((kt / S - 1) & 1)); /* its previous round consumed */
            expect(kt);
            issue_w(kt);
            issue_x(kt);
        }
        return;
    }

    tdec::pdl_wait(); /* R, bias and Y are touched only after the previous grid completed */
    const int g = lane / 4, t = lane % 4;
    const int ch = warp / 2, q = 2 * t + (warp & 1); /* chunk and logical granule of this lane */
    /* staged row r (16 rg + g or + 8 + g, clamped into the slots): part r / rp, row r % rp,
     * and rp % 8 == 0, so the slot row's & 7 is r & 7 = g */
    uint32_t offa[RG], offb[RG];
    auto row_off = [&](int r) -> uint32_t {
        const int last = p.parts * rp - 1, rr = r < last ? r : last;
        return ch * chunk_bytes + (uint32_t)(rr / rp) * part_bytes + (uint32_t)(rr % rp) * 128 +
               (uint32_t)((q ^ (rr & 7)) * 16);
    };
#pragma unroll
    for (int rg = 0; rg < RG; rg++) {
        offa[rg] = row_off(16 * rg + g);
        offb[rg] = row_off(16 * rg + 8 + g);
    }
    const uint32_t offx =
        xoff + (uint32_t)(g < p.xrows ? g : 0) * (G09_KT * 2) + (uint32_t)(ch * G09_KC + q * 8) * 2;
    float acc[RG][4];
#pragma unroll
    for (int rg = 0; rg < RG; rg++)
#pragma unroll
        for (int i = 0; i < 4; i++)
            acc[rg][i] = 0.f;
    const uint4 z = make_uint4(0, 0, 0, 0);
    /* outside K, N or M the TMA wrote zeros; token rows past the box are zero registers */
    for (int kt = 0, st = 0, ph = 0; kt < nkt; kt++) {
        mbar_wait(&full[st], (uint32_t)ph);
        const unsigned char *sb = stage0 + (size_t)st * stage_bytes;
        const uint4 xb = g < p.xrows ? *reinterpret_cast<const uint4 *>(sb + offx) : z;
#pragma unroll
        for (int rg = 0; rg < RG; rg++) {
            const uint4 w0 = *reinterpret_cast<const uint4 *>(sb + offa[rg]);
            const uint4 w1 = *reinterpret_cast<const uint4 *>(sb + offb[rg]);
            mma_16816(acc[rg], w0.x, w1.x, w0.y, w1.y, xb.x, xb.y);
            mma_16816(acc[rg], w0.z, w1.z, w0.w, w1.w, xb.z, xb.w);
        }
        __syncwarp();
        if (lane == 0) mbar_arrive(&empty[st]);
        if (++st == S) {
            st = 0;
            ph ^= 1;
        }
    }
    /* Every stage has landed and been read by all consumers once they pass this barrier, so the
     * stage area becomes the reduction buffer: red[warp][staged row][token]. */
    float *const red = reinterpret_cast<float *>(stage0);
    bar_sync(1, G09_CONSUMERS * 32);
#pragma unroll
    for (int rg = 0; rg < RG; rg++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int row = 16 * rg + g + 8 * (i >> 1), tok = 2 * t + (i & 1);
            red[(warp * RG * 16 + row) * G09_NT + tok] = acc[rg][i];
        }
    bar_sync(1, G09_CONSUMERS * 32);
    for (int o = threadIdx.x; o < ncol * xv; o += G09_CONSUMERS * 32) {
        const int c = o % ncol, tok = o / ncol;
        float sg = 0.f, su = 0.f;
#pragma unroll
        for (int w = 0; w < G09_CONSUMERS; w++) {
            sg += red[(w * RG * 16 + c) * G09_NT + tok];
            if (swi) su += red[(w * RG * 16 + rp + c) * G09_NT + tok];
        }
        tinfer_bf16_epi_store(a, m0 + tok, c0 + c, sg, su);
    }
#else
    (void)a;
    (void)map_w;
    (void)map_x;
    (void)p;
#endif
}

/* one block per SM with the deepest ring that fits, W before the wait: faster than the two-grid
 * sizing on QKV, level on down (file comment) */
const tinfer_gemv09_cfg tinfer_gemv09_default = {1, 0, 1, 0};

template <int RG>
static tinfer_status g09_launch(const tinfer_gemm_bf16_args *a, const CUtensorMap &map_w,
                                const CUtensorMap &map_x, const g09_params &p, size_t smem,
                                const tinfer_cuda_facts &d, cudaStream_t s, tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    static int attr_dev = -1;
    if (attr_dev != d.device) { /* the opt-in covers the device's whole per-block limit once */
        TINFER_CUDA_TRY(err, cudaFuncSetAttribute(gemv09_kernel<RG>,
                                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                  d.smem_per_block_optin));
        TINFER_CUDA_TRY(err, cudaFuncSetAttribute(gemv09_kernel<RG>,
                                                  cudaFuncAttributePreferredSharedMemoryCarveout,
                                                  (int)cudaSharedmemCarveoutMaxShared));
        attr_dev = d.device;
    }
    {
        cudaLaunchConfig_t cfg;
        cudaLaunchAttribute attr[1];
        memset(&cfg, 0, sizeof cfg);
        cfg.gridDim = dim3((unsigned)p.nblk, (unsigned)((a->M + G09_NT - 1) / G09_NT));
        cfg.blockDim = dim3(G09_THREADS);
        cfg.dynamicSmemBytes = smem;
        cfg.stream = s;
        cfg.attrs = attr;
        if (p.pdl) {
            attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            attr[0].val.programmaticStreamSerializationAllowed = 1;
            cfg.numAttrs = 1;
        }
        TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&cfg, gemv09_kernel<RG>, *a, map_w, map_x, p));
        TINFER_CUDA_LAUNCH_CHECK(err, "gemv09_kernel");
    }
cleanup:
    return status;
}

tinfer_status tinfer_gemv_bf16_bulk_cfg(const tinfer_gemm_bf16_args *a, const tinfer_gemv09_cfg *c,
                                        cudaStream_t s, tinfer_err *err) {
    tinfer_cuda_facts d;
    tinfer_status st = tinfer_cuda_current_facts(&d, err);
    if (st != TINFER_OK) return st;
    if (d.cc_major < 9)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                              "gemv_bf16 09: the TMA needs sm_90 (device is sm_%d*)", d.cc_major);
    if (!c || c->blocks_per_sm < 1 || c->blocks_per_sm > 2 || c->stages < 0 ||
        c->stages > G09_MAX_STAGES || c->early < 0 || c->early > 1 || c->coresident < 0 ||
        c->coresident > 1)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "gemv_bf16 09: bad launch configuration");
    const int pdl_mode = tinfer_gemv_pdl_mode();
    if (pdl_mode == -2)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "gemv_bf16 09: knob gemv_pdl must be 0..4");
    const int64_t nout = tinfer_gemm_bf16_nout(*a), parts = a->swiglu ? 2 : 1;
    if ((a->M + G09_NT - 1) / G09_NT > 65535)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemv_bf16 09: M=%lld too large",
                              (long long)a->M);
    if (a->N > INT32_MAX || a->K > INT32_MAX)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemv_bf16 09: N=%lld K=%lld too large",
                              (long long)a->N, (long long)a->K);
    /* G: SMs x blocks per SM, more where a block would own more than 64 staged rows, fewer
     * where there are fewer columns than blocks */
    int64_t nblk = (int64_t)d.n_sm * c->blocks_per_sm;
    const int64_t cols_cap = 16 * G09_MAX_RG / parts;
    if ((nout + nblk - 1) / nblk > cols_cap) nblk = (nout + cols_cap - 1) / cols_cap;
    if (nblk > nout) nblk = nout;
    g09_params p;
    p.nblk = (int32_t)nblk;
    p.cbox = (int32_t)((nout + nblk - 1) / nblk);
    p.parts = (int32_t)parts;
    p.xrows = (int32_t)(a->M < G09_NT ? a->M : G09_NT);
    p.pdl = pdl_mode != 0;
    p.early = p.pdl && a->w_static && c->early;
    const size_t stage_bytes = g09_stage_bytes(p);
    const int64_t nkt = (a->K + G09_KT - 1) / G09_KT;
    const int rg = (int)((parts * g09_rows_per_part(p) + 15) / 16);
    const size_t red_bytes = (size_t)G09_CONSUMERS * 16 * rg * G09_NT * 4,
                 fixed = G09_BAR_BYTES + 1008;
    int S = c->stages;
    if (S == 0) { /* the most stages that keep 2 x blocks_per_sm blocks on an SM (two grids), or
                   * blocks_per_sm blocks (one grid) */
        const int64_t per_block =
            (int64_t)d.smem_per_sm / ((c->coresident ? 2 : 1) * c->blocks_per_sm) -
            d.smem_reserved - (int64_t)fixed;
        S = (int)(per_block / (int64_t)stage_bytes);
        if (S > G09_MAX_STAGES) S = G09_MAX_STAGES;
        if (S < 2) S = 2;
    }
    if (S > nkt) S = (int)nkt;
    p.stages = S;
    size_t smem = (size_t)S * stage_bytes;
    if (smem < red_bytes) smem = red_bytes;
    smem += fixed;
    if (smem > (size_t)d.smem_per_block_optin)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "gemv_bf16 09: %zu bytes of shared memory needed, %d available", smem,
                              d.smem_per_block_optin);
    CUtensorMap map_w, map_x;
    st = tinfer_gemm_bf16_tma_map(&map_w, a->W, a->N, a->K, a->ldw, (uint32_t)p.cbox, "W", err);
    if (st == TINFER_OK)
        st = tinfer_gemm_bf16_tma_map_box(&map_x, a->X, a->M, a->K, a->ldx, G09_KT,
                                          (uint32_t)p.xrows, "X", err);
    if (st != TINFER_OK) return st;
    switch (rg) {
    case 1: return g09_launch<1>(a, map_w, map_x, p, smem, d, s, err);
    case 2: return g09_launch<2>(a, map_w, map_x, p, smem, d, s, err);
    case 3: return g09_launch<3>(a, map_w, map_x, p, smem, d, s, err);
    default: return g09_launch<4>(a, map_w, map_x, p, smem, d, s, err);
    }
}

/* Measurement knobs (gemm/cuda/knobs.h, read on every call; a bad value fails the call with
 * TINFER_ERR_INVALID_ARG): --gemv09-bps 1|2 blocks per SM per grid, --gemv09-stages
 * (2..16, 0 auto), --gemv09-early 0 (no W before the wait), --gemv09-coresident 1
 * (auto stages sized for two grids per SM). */
tinfer_status tinfer_gemv_bf16_bulk(const tinfer_gemm_bf16_args *a, cudaStream_t s,
                                    tinfer_err *err) {
    const tinfer_gemm_knobs *k = tinfer_gemm_knobs_get();
    tinfer_gemv09_cfg c;
    c.blocks_per_sm = tinfer_knob_int(k->gemv09_bps, tinfer_gemv09_default.blocks_per_sm, 1, 2);
    c.stages = tinfer_knob_int(k->gemv09_stages, tinfer_gemv09_default.stages, 0, G09_MAX_STAGES);
    if (c.stages == 1) c.stages = -2;
    c.early = tinfer_knob_int(k->gemv09_early, tinfer_gemv09_default.early, 0, 1);
    c.coresident = tinfer_knob_int(k->gemv09_coresident, tinfer_gemv09_default.coresident, 0, 1);
    if (c.blocks_per_sm == -2 || c.stages == -2 || c.early == -2 || c.coresident == -2)
        return tinfer_err_set(
            err, TINFER_ERR_INVALID_ARG,
            "gemv_bf16 09: knob gemv09_bps must be 1..2, gemv09_stages 0 or 2..16, "
            "gemv09_early and gemv09_coresident 0..1");
    return tinfer_gemv_bf16_bulk_cfg(a, &c, s, err);
}
