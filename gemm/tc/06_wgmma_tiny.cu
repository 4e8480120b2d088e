/*
 * 06_wgmma_tiny.cu — prefill rung 6 (sm_90a): the small GEMM of a small model, one 64-row weight
 * tile x BT tokens per CTA, every k-block in flight at once, the weight tile multicast to the CTAs
 * of the other token tiles.
 *
 * Why: SmolLM2's layer weights are 0.7-3.5 MB. At 32-512 tokens rungs 03 / 04 need 4.3-4.7 us of
 * device time per call where cuBLAS needs 3.3-3.9 (gemm/tc/RUNG06.md). Rung 03 gives such a
 * shape a handful of 128 x 72 CTAs, each pulling ~225 KB through one SM; its split-K reduction
 * costs 1.9-2.5 us. cuBLAS (H200 session 10, SmolLM2 O 576 x 576 at M = 128) runs 80 CTAs of
 * 64 x 16 in clusters of 8. Here the work is spread the same way, in rung 05's operand-swapped
 * form (W is wgmma's 64-row A operand, the tokens its N):
 *  - CTA (row tile w, token tile t): 64 outputs (64 W rows; with SwiGLU 32 outputs: the 32 gate
 *    rows j0.. stacked over the 32 up rows F + j0.., one 64-row operand, so a fused gate/up CTA
 *    carries the bytes and the CTA count of a plain one) x BT = 16, 32 or 64 tokens, over all of K
 *    (or 48, plain outputs, multicast with two warpgroups only: a CTA then takes the
 *    14 KB per k-block of cuBLAS's 48-output x 64-token tiles on SmolLM2 down at 512 tokens, 99
 *    CTAs where 64 x 64 gives 72; gemm/tc/RUNG06.md; forced only, not picked until
 *    measured).
 *  - Every k-block has its own slot in shared memory (W rows + X box), so nothing is reused: the
 *    producer thread issues every TMA load at once and there are no empty barriers; the consumer
 *    warpgroup waits for each slot's full barrier in turn. One CTA holds up to
 *    tinfer_gemm_bf16_tiny_max_k of K.
 *  - Longer K (SmolLM2 down, K = 1536) is split over a cluster of f CTAs, each holding its share
 *    of the k-blocks: ranks >= 1 push their accumulators into rank 0's reduction area with
 *    st.async, counted on a barrier rank 0 armed at init (so no cluster barrier after the main
 *    loop); rank 0 adds them in rank order (deterministic) and runs the epilogue.
 *  - Or (measured slower, not picked): a ring of S < k-blocks slots, refilled as the consumers
 *    release them (empty barriers), so one CTA takes any K and two CTAs of a split share an SM;
 *    also with the W box multicast over a cluster of token tiles (each slot's empty barrier then
 *    counts the release of every CTA of the cluster). Session 11: it streams a CTA's k-blocks at
 *    about half the rate cuBLAS's deep-ring kernels reach (SmolLM2 down M = 512, 72 unsplit
 *    64 x 64 CTAs through 12 stages: 10.4 us; multicast over 2-8: 11.0-11.3 us, session 12).
 *  - The producer warp's lanes share the TMA issues (lane l: slots l, l + 32, ..; in a ring's
 *    later rounds 4 lanes): one thread's TMA requests are served one after another at ~0.3 us
 *    per barrier step (tma_bw.cu), and spreading them made the plain tile 2-12% faster
 *    (session 12).
 *  - The consumers fence once and then issue every k-block's wgmmas without waiting for the
 *    previous group (a ring waits for it, to release the slot): with a fence and a wait at
 *    every k-block ptxas kept the loop off the uniform datapath, and the plain tile took 2-15%
 *    longer on most cells (session 13). A ring still lands its k-blocks about half as fast as
 *    the plain tile (~380-440 vs ~190 ns per 16 KB, trace builds), its first round included:
 *    its consumers' step (commit, wait for the previous group, release the slot) costs 60-100 ns
 *    more, and the wgmmas' shared-memory reads slow the loads' writes in both (gemm/tc/RUNG06.md,
 *    "Why a CTA streams at half cuBLAS's rate").
 *  - Two consumer warpgroups (tinfer_gemm_bf16_tiny_cfg, wgs = 2; an even ring or none):
 *    warpgroup g computes k-blocks g, g + 2, .. into its own accumulators; in a ring each
 *    waits for its own k-block's wgmmas and releases that slot at once while the other keeps the
 *    tensor cores busy; at the end warpgroup 1 hands its sums to warpgroup 0 through the idle
 *    slots and leaves. A deep ring gains most: SmolLM2 down M = 512, 72 unsplit 64 x 64 CTAs
 *    through 12 stages, 9.63 -> 6.47 us (graph; cuBLAS 5.22, rung 03 7.55), M = 2048 through 6
 *    stages 20.5 -> 16.9; short split rings lose (4 stages, split 3: 7.24 -> 10.30), and the
 *    slot-per-k-block tiles move -14% .. +55% by cell (16 / 32-token tiles at <= 256 tokens
 *    mostly 2-11% faster, 64-token 1-4% slower; H200, gemm/tc/RUNG06.md). The pick
 *    takes the 12-stage ring with two warpgroups for plain outputs of a K past one CTA's slots
 *    where no split fits one wave (bf16.h, TINFER_GEMM_BF16_TINY_RING_*), and two warpgroups for
 *    its 16-token tiles, then unsplit where K fits (TINFER_GEMM_BF16_TINY_WG16: 3-14% faster on
 *    SmolLM2 QKV / O at 16-128 tokens than one warpgroup split 3); one for its 32- and 64-token
 *    tiles.
 *  - Or (measured slower, off by default): the token tiles of a row tile form a cluster of c CTAs
 *    (c <= 8), rank r loads the W box of k-blocks kb with kb % c == r and multicasts it to all c
 *    CTAs, so the weight tile leaves L2 once per cluster; each CTA loads its own X boxes. Each
 *    slot's barrier expects its W and X bytes, whichever CTA issued them. With one warpgroup it
 *    lost wherever measured (sessions 10-11); two warpgroups may multicast too (in a ring each
 *    releases its slot in every CTA of the cluster; warpgroup 1 meets the closing cluster
 *    barrier before it leaves; not yet measured), the form of cuBLAS's deep-ring kernels
 *    (clusters of 8).
 *  - PDL: launch_dependents at the start; with args.w_static the W loads go before
 *    griddepcontrol.wait (the weights are not written by the kernels in flight), X after.
 *  - Epilogue: accumulators to shared memory as [token][row] (the slots are idle by then), each
 *    thread stores 8 consecutive outputs of one token (tinfer_bf16_epi_store8: bias, SwiGLU of row
 *    r and r + 32, residual, 16-byte stores when aligned).
 *  - The plain tile, the multicast and the split are separate kernels (template MODE): with the
 *    split's code in the same kernel the plain tile ran 10-17% slower (gemm/tc/RUNG06.md).
 * Ragged M / N / K: TMA zero-fills rows and columns outside the matrices; only tokens < M and
 * outputs < N' are stored. Constraints: those of rung 03 (K % 8 == 0, ldx % 8 == 0, ldw % 8 == 0, X
 * and W 16-byte aligned); sm_90 only; K up to 8 CTAs' worth (TINFER_ERR_UNSUPPORTED beyond).
 * Measured (H200, session 13 call 6, graph timing, us, the pick against the faster of cuBLAS /
 * cublasLt; gemm/tc/RUNG06.md "The pick"): SmolLM2 QKV M = 16 / 32 / 64 / 128 / 256 / 512 2.44 /
 * 2.73 / 2.87 / 3.04 / 3.22 / 3.98 (3.33 / 3.34 / 3.36 / 3.43 / 3.63 / 3.93), O M = 128 / 256 / 512
 * 3.13 / 3.27 / 3.48 (3.35 / 3.43 / 3.66), gate/up M = 32 / 64 / 128 3.15 / 3.34 / 3.88 (3.78 /
 * 3.86 / 4.02), fused gate/up + SwiGLU M = 32 / 64 / 128 3.47 / 3.65 / 4.40 (the plain GEMM: 3.78 /
 * 3.86 / 4.01), down (split) M = 16 / 32 / 64 / 128 / 256 2.91 / 3.13 / 3.19 / 3.64 / 4.20
 * (4.70-4.90); W multicast lost (session 11: QKV M = 512 over 2 / 4 CTAs 5.44 / 5.64 vs 4.45).
 */
#include "gemm/cuda/bf16_epi.cuh"
#include "gemm/cuda/cuda_check.h"
#include "gemm/cuda/device.h"
#include "gemm/cuda/knobs.h"
#include "gemm/cuda/ptx.cuh"
#include "gemm/cuda/sm90.cuh"
#include "gemm/tc/gemm_bf16_tc_internal.h"

#include <string.h>
#include <type_traits>

/* Per-k-block timestamps (%globaltimer, ns) for builds configured with -DTINFER_WS_TRACE=ON
 * (measurement only; elsewhere TY_MARK is empty and the kernel is unchanged). CTA b < TY_TRACE_CTAS:
 *   consumer thread 32, ty_trace_c[b][]: 0 entry, 1 after griddepcontrol.wait, 2 + i k-block i
 *   landed (full barrier passed), 30 + i (a ring only) k-block i's wgmmas complete (i < 28), 58
 *   main loop done, 59 its epilogue stores done;
 *   producer lane 31, ty_trace_p[b][]: 0 the first round's loads issued, 30 after
 *   griddepcontrol.wait, 31 entry.
 * The stamps come from threads that issue no mbarrier arrive: an arrive has .release semantics,
 * so a stamp stored before the consumers' release or the producer's expect_tx would hold it back
 * until the store completes (session 13).
 * tinfer_ty_trace_read / _clear copy them out / zero them (bench set "tytrace"). */
#define TY_TRACE_CTAS 512
#ifdef TINFER_WS_TRACE
__device__ unsigned long long ty_trace_c[TY_TRACE_CTAS][64];
__device__ unsigned long long ty_trace_p[TY_TRACE_CTAS][32];
template <int W> static __device__ __forceinline__ void ty_mark(unsigned long long (*arr)[W], int slot) {
    if (blockIdx.x >= TY_TRACE_CTAS || slot >= W) return;
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
    arr[blockIdx.x][slot] = t;
}
#define TY_MARK(cond, arr, slot)                                                                   \
    do {                                                                                           \
        if (cond) ty_mark(arr, slot);                                                              \
    } while (0)
/* tinfer_ty_trace_flags(f): parts of the kernel switched off or moved, to find what limits the
 * rate at which a CTA's k-blocks land (bench set "tybisect"); the results are wrong unless f = 0.
 * TYF_NOMMA the consumers skip their wgmmas (the loads and barriers alone); TYF_LATEW the W loads
 * after the PDL wait, each with its slot's X load; TYF_NOGDC no griddepcontrol instructions;
 * TYF_POLL1 only consumer thread 0 waits on the full barriers; TYF_RELNOW a ring slot released
 * as soon as it landed (not one k-block behind);
 * TYF_PSLEEP the producer's ring waits poll test_wait with a 100 ns sleep between polls (instead
 * of try_wait); TYF_PLATE the producer's ring lanes sleep until the first round has landed before
 * they wait on any empty barrier; TYF_ROUND1 a ring runs its first round only (kslots k-blocks);
 * TYF_NOREL (with TYF_ROUND1) its consumers release no slot. With the switches ptxas serializes
 * the wgmmas of the 16-token ring kernels (C7520), which tybisect does not time. */
__device__ int ty_trace_flags;
extern "C" int tinfer_ty_trace_flags(int f) {
    return cudaMemcpyToSymbol(ty_trace_flags, &f, sizeof f) == cudaSuccess ? 0 : -1;
}
#define TY_TF(bit) (ty_tf & (bit))
#define TY_TF_READ const int ty_tf = ty_trace_flags /* once, into a register */
extern "C" int tinfer_ty_trace_read(unsigned long long *c, unsigned long long *p) {
    if (cudaMemcpyFromSymbol(c, ty_trace_c, sizeof ty_trace_c) != cudaSuccess) return -1;
    return cudaMemcpyFromSymbol(p, ty_trace_p, sizeof ty_trace_p) == cudaSuccess ? 0 : -1;
}
extern "C" int tinfer_ty_trace_clear(void) {
    static unsigned long long z[TY_TRACE_CTAS][64];
    if (cudaMemcpyToSymbol(ty_trace_c, z, sizeof ty_trace_c) != cudaSuccess) return -1;
    return cudaMemcpyToSymbol(ty_trace_p, z, sizeof ty_trace_p) == cudaSuccess ? 0 : -1;
}
#else
#define TY_TF(bit) 0
#define TY_TF_READ
#define TY_MARK(cond, arr, slot)                                                                   \
    do {                                                                                           \
    } while (0)
#endif

enum { TYF_NOMMA = 1, TYF_LATEW = 4, TYF_NOGDC = 8, TYF_POLL1 = 16, TYF_RELNOW = 32, TYF_PSLEEP = 64, TYF_PLATE = 128,
       TYF_ROUND1 = 256, TYF_NOREL = 512 };

#define TY_BK 64
#define TY_SLAB (64 * TY_BK * 2) /* one k-block's 64 W rows (wgmma's A operand) */
/* CW consumer warpgroups (warps 0 .. 4 CW - 1) and the producer warp (4 CW) */
static constexpr int ty_threads(int cw) { return 32 * (4 * cw + 1); }
#define TY_SMEM_MAX 232448     /* the 227 KB per-block limit */
#define TY_MAX_KB 31           /* k-block slots per CTA at most: their barriers + the split's fit TY_BAR_BYTES */
#define TY_RING_MAX 15         /* ring stages at most: full + empty barriers + the split's fit TY_BAR_BYTES */
#define TY_BAR_BYTES 256

/* A CTA's shared memory: kslots k-block slots (at least the epilogue scratch), the (ksplit - 1)
 * partial sums pushed to a split owner, the 1024-byte alignment slack, the barriers. One formula
 * for the kernel (TyGeo) and the host (ty_geo). */
static constexpr int ty_slots_bytes(int kslots, int kb_bytes, int scr_bytes) {
    return kslots * kb_bytes > scr_bytes ? kslots * kb_bytes : scr_bytes;
}
static constexpr int ty_smem_bytes(int kslots, int ksplit, int kb_bytes, int red_bytes, int scr_bytes) {
    return ty_slots_bytes(kslots, kb_bytes, scr_bytes) + (ksplit - 1) * red_bytes + 1024 + TY_BAR_BYTES;
}

template <int BT> struct TyGeo {
    static_assert(BT == 16 || BT == 32 || BT == 48 || BT == 64, "token tile 16, 32, 48 or 64");
    static constexpr int X_BYTES = BT * TY_BK * 2;
    static constexpr int KB_BYTES = TY_SLAB + X_BYTES; /* one k-block's slot */
    static constexpr int RS = 64 + 4;                  /* scratch floats per token (+4: banks) */
    static constexpr int SCR_BYTES = (BT * RS * 4 + 1023) / 1024 * 1024; /* the epilogue scratch, over the idle slots */
    static constexpr int MAX_KB = (TY_SMEM_MAX - 1024 - TY_BAR_BYTES) / KB_BYTES > TY_MAX_KB
                                      ? TY_MAX_KB
                                      : (TY_SMEM_MAX - 1024 - TY_BAR_BYTES) / KB_BYTES;
    /* one CTA's accumulators, pushed to the owner of a split tile: 128 threads x BT / 2 floats */
    static constexpr int RED_BYTES = 128 * (BT / 2) * 4;
    /* the k-block slots (at least the scratch), the (ksplit - 1) pushed partial sums (split
     * owner), the barriers */
    static constexpr int slots(int kslots) { return ty_slots_bytes(kslots, KB_BYTES, SCR_BYTES); }
    static constexpr int smem(int kslots, int ksplit = 1) {
        return ty_smem_bytes(kslots, ksplit, KB_BYTES, RED_BYTES, SCR_BYTES);
    }
    static_assert(KB_BYTES % 1024 == 0, "slots keep the 1024-byte swizzle alignment");
    static_assert((MAX_KB + 1) * 8 <= TY_BAR_BYTES, "full barriers of every slot and the split barrier fit");
    static_assert(smem(1, 1) <= TY_SMEM_MAX, "one k-block and the scratch fit");
};

/* What a launch does beyond the plain tile: nothing, W multicast over a cluster of token tiles,
 * or K split over a cluster. Each is its own kernel, so the plain one carries no cluster code. */
enum { TY_PLAIN = 0, TY_MCAST = 1, TY_SPLIT = 2 };

/* gx: CTAs per row tile (token tiles rounded up to the cluster size c); grid = row tiles x gx x
 * ksplit. ksplit > 1 (then c = 1): a cluster of ksplit CTAs shares a tile, rank r over k-blocks
 * [r kper, (r + 1) kper); ranks >= 1 push their accumulators into rank 0's reduction area with
 * st.async counted on its barrier, rank 0 adds them in rank order. kslots: k-block slots; without
 * RING kslots = kper (a slot per k-block), with RING a ring of kslots < kper stages, each slot
 * refilled once the consumers release it (empty barriers). */
template <int BT, bool SW, int MODE, bool RING, int CW>
static __global__ void __launch_bounds__(ty_threads(CW), 1)
    ty_kernel(const __grid_constant__ CUtensorMap map_w, const __grid_constant__ CUtensorMap map_x,
              tinfer_gemm_bf16_args a, int32_t gx, int32_t kblocks, int32_t c_arg, int32_t ksplit_arg, int32_t kper,
              int32_t kslots, int32_t v16, int32_t early, int32_t lag) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using G = TyGeo<BT>;
    constexpr int OW = SW ? 32 : 64; /* outputs per row tile */
    const int32_t c = MODE == TY_MCAST ? c_arg : 1, ksplit = MODE == TY_SPLIT ? ksplit_arg : 1;
    extern __shared__ uint8_t ty_smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)ty_smem_raw + 1023) & ~(uintptr_t)1023);
    TY_MARK(threadIdx.x == 32, ty_trace_c, 0);
    TY_TF_READ;
    uint8_t *red = smem + G::slots(kslots);
    uint64_t *full = (uint64_t *)(red + (ksplit - 1) * G::RED_BYTES);
    uint64_t *empty = full + kslots;                      /* RING */
    uint64_t *redbar = full + (RING ? 2 : 1) * kslots;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int32_t tile = (int32_t)blockIdx.x / ksplit, rk = (int32_t)blockIdx.x % ksplit;
    const int32_t tw = tile / gx, tt = tile % gx;
    const int32_t rank = tt % c; /* clusters of c consecutive token tiles of one row tile (W multicast) */
    const int32_t kb0 = rk * kper, kb1 = kb0 + kper < kblocks ? kb0 + kper : kblocks;
    /* TYF_ROUND1: a ring's first round only (timing; the result is wrong) */
    const int32_t nkb = RING && TY_TF(TYF_ROUND1) && kb1 - kb0 > kslots ? kslots : kb1 - kb0;
    /* the k-blocks whose slots are free at the start: all of them, or the ring's first round */
    const int32_t pre = RING && kslots < nkb ? kslots : nkb;

    if (threadIdx.x == 0) {
        for (int32_t i = 0; i < kslots; i++) {
            mbar_init(&full[i], 1); /* the local producer's arrive.expect_tx */
            /* the consumer warpgroup's release; with multicast every CTA's of the cluster, since
             * the W box of a slot lands in all of them */
            if constexpr (RING) mbar_init(&empty[i], (uint32_t)c);
        }
        if constexpr (MODE == TY_SPLIT) mbar_init(redbar, 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        /* split owner: its one arrival, and the bytes the other ranks push */
        if constexpr (MODE == TY_SPLIT)
            if (rk == 0) mbar_expect_tx(redbar, (uint32_t)((ksplit - 1) * G::RED_BYTES));
    }
    /* every CTA's barriers exist before any peer multicasts into it or pushes to it */
    if constexpr (MODE != TY_PLAIN) cluster_sync_all();
    else __syncthreads();

    if (warp == 4 * CW) {
        /* The producer warp's lanes share the loads: one thread's TMA requests are served one
         * barrier step after another, ~0.3 us each whatever their size (tma_bw.cu;
         * gemm/tc/RUNG06.md), so a CTA fed by one thread got ~50 B/ns; lane l takes slots l, l +
         * 32, .. */
        if (lane == 0) {
            asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&map_w) : "memory");
            asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&map_x) : "memory");
        }
        /* W rows of the slab: plain 64 tw.. (one 64-row box); SwiGLU gate 32 tw.. over up
         * F + 32 tw.. (two 32-row boxes; gate rows past F read up rows: their outputs are
         * >= N' and not stored) */
        const int32_t row0 = tw * OW, row1 = (int32_t)(a.N / 2) + tw * OW;
        const uint16_t mask = (uint16_t)((1u << c) - 1u);
        for (int32_t i = lane; i < pre; i += 32) mbar_expect_tx(&full[i], (uint32_t)G::KB_BYTES);
        /* k-block kb's W rows into slot s (with multicast: the k-blocks of this rank, into every
         * CTA of the cluster) */
        auto load_w1 = [&](int32_t kb, int32_t s) {
            uint8_t *slot = smem + s * G::KB_BYTES;
            for (int h = 0; h < (SW ? 2 : 1); h++) {
                if constexpr (MODE == TY_MCAST) tma_load_2d_mc(slot + h * (TY_SLAB / 2), &map_w, kb * TY_BK, h ? row1 : row0, &full[s], mask);
                else tma_load_2d(slot + h * (TY_SLAB / 2), &map_w, kb * TY_BK, h ? row1 : row0, &full[s]);
            }
        };
        auto load_w = [&]() {
            for (int32_t i = lane; i < pre; i += 32)
                if (MODE != TY_MCAST || i % c == rank) load_w1(kb0 + i, i);
        };
        TY_MARK(lane == 31, ty_trace_p, 31);
        const bool latew = TY_TF(TYF_LATEW) != 0;
        if (early && !latew) load_w();
        if (!TY_TF(TYF_NOGDC)) {
            if (lane == 0) tdec::pdl_launch_dependents();
            tdec::pdl_wait();
        }
        TY_MARK(lane == 31, ty_trace_p, 30);
        if (!early && !latew) load_w();
        for (int32_t i = lane; i < pre; i += 32) {
            if (latew && (MODE != TY_MCAST || i % c == rank)) load_w1(kb0 + i, i);
            tma_load_2d(smem + i * G::KB_BYTES + TY_SLAB, &map_x, (kb0 + i) * TY_BK, tt * BT, &full[i]);
        }
        TY_MARK(lane == 31, ty_trace_p, 0);
        /* later rounds: use u of slot s once the consumers (of every CTA of the cluster) released
         * use u - 1; lane l of the first nl takes rounds' k-blocks pre + l, pre + l + nl, .. With
         * nl <= kslots a batch of nl lanes waits only for k-blocks earlier batches issued, so the
         * lanes may run converged. A peer's W box may land before this CTA's expect_tx: the phase
         * still needs that arrival. */
        if constexpr (RING) {
            const int32_t nl = kslots < 4 ? kslots : 4;
            if (TY_TF(TYF_PLATE) && lane < nl)
                while (!mbar_test(&full[kslots - 1], 0)) __nanosleep(200);
            if (lane < nl)
                for (int32_t i = pre + lane; i < nkb; i += nl) {
                    const int32_t s = i % kslots, u = i / kslots;
                    if (TY_TF(TYF_PSLEEP))
                        while (!mbar_test(&empty[s], (uint32_t)(u - 1) & 1)) __nanosleep(100);
                    else mbar_wait(&empty[s], (uint32_t)(u - 1) & 1);
                    mbar_expect_tx(&full[s], (uint32_t)G::KB_BYTES);
                    if (MODE != TY_MCAST || i % c == rank) load_w1(kb0 + i, s);
                    tma_load_2d(smem + s * G::KB_BYTES + TY_SLAB, &map_x, (kb0 + i) * TY_BK, tt * BT, &full[s]);
                }
        }
    } else {
        /* the consumers touch global memory only in the epilogue, after the previous kernel */
        if (!TY_TF(TYF_NOGDC)) tdec::pdl_wait();
        TY_MARK(threadIdx.x == 32, ty_trace_c, 1);
        /* The epilogue's thread takes items idx = threadIdx.x + 128 q (token idx / (OW / 8), outputs
         * 8 (idx % (OW / 8)) ..). What it reads besides the accumulators (the split RMSNorm's row
         * words, the residual) goes out now and lands while the main loop runs, instead of opening
         * the epilogue with an L2 round trip (H100, SmolLM2 decode at 16 sequences: +2.7%). */
        constexpr int NE = (BT * (OW / 8) + 127) / 128;
        const tinfer_epi8 e = tinfer_epi8_make(a, v16 != 0);
        tinfer_epi8_pre pre[NE] = {};
        if (threadIdx.x < 128 && (MODE != TY_SPLIT || rk == 0) && (e.rss || e.R)) {
#pragma unroll
            for (int q = 0; q < NE; q++) {
                const int idx = threadIdx.x + 128 * q, tok = idx / (OW / 8), r = 8 * (idx % (OW / 8));
                const int64_t m = (int64_t)tt * BT + tok, j0 = (int64_t)tw * OW + r;
                if (idx < BT * (OW / 8) && m < e.M && j0 < e.nout) tinfer_bf16_epi_pre8(e, a, m, j0, pre[q]);
            }
        }
        /* consumer warpgroup wg takes k-blocks wg, wg + CW, .. */
        const int32_t wg = CW == 2 ? __shfl_sync(0xffffffffu, warp / 4, 0) : 0;
        float d[BT / 2];
        /* with two warpgroups each starts from zero: one may have no k-block at all */
        if constexpr (CW == 2)
#pragma unroll
            for (int j = 0; j < BT / 2; j++) d[j] = 0.f;
        fence_acc(d);
        /* Two accumulator chains for 16- and 32-token tiles without a ring: even k16 steps into
         * d, odd ones into d2, summed after the loop, so consecutive wgmmas do not wait on each
         * other's accumulators. Measured on the fence-once loop (H200, gemm/tc/RUNG06.md,
         * "The consumer loop: fence once"): picked 16- / 32-token cells 1-6% faster; 64-token tiles
         * within 1.3% and rings up to 4% slower with it, so those keep one chain. */
        constexpr bool TWO = !RING && BT <= 32 && CW == 1;
        float d2[BT / 2]; /* unused (and dropped) without TWO */
        if constexpr (TWO) fence_acc(d2);
        /* One wgmma.fence before the loop, none in it: same-shape wgmmas on the same accumulators
         * are ordered without one (HOPPER_GEMM_NOTES section 2). A slot per k-block is never
         * refilled, so its k-blocks' wgmma groups queue up with no wait until the last; only a
         * ring waits for k-block i - 1's group at step i, to release its slot. With the fence (and
         * the wait) at every step ptxas kept the loop in per-thread registers behind a
         * WARPSYNC.ALL; this way it runs on the uniform datapath (ptxas still places its own
         * warpgroup.arrive in the loop: the C7519 note) and the plain tile got 2-15% faster on
         * most cells (H200, gemm/tc/RUNG06.md). */
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        /* TYF_RELNOW: release k-block i's slot at step i, else i - 1's (after its wgmmas) */
        const int32_t rlag = TY_TF(TYF_RELNOW) ? 0 : 1;
        /* MMA false: the loads and barriers alone (TYF_NOMMA; a loop of its own, so that no
         * wgmma sits on a divergent path, which would make ptxas serialize them) */
        auto mainloop = [&](auto mma) {
            for (int32_t i = wg; i < nkb; i += CW) {
                const int32_t s = RING ? i % kslots : i;
                if (CW == 2 || !TY_TF(TYF_POLL1) || threadIdx.x == 0) mbar_wait(&full[s], RING ? (uint32_t)(i / kslots) & 1 : 0);
                TY_MARK(threadIdx.x == 32 && i < 28, ty_trace_c, 2 + i);
                const uint8_t *slot = smem + s * G::KB_BYTES;
                if constexpr (decltype(mma)::value) {
#pragma unroll
                    for (int kk = 0; kk < TY_BK / 16; kk++) {
                        const uint64_t da = wgmma_desc(slot + kk * 32), db = wgmma_desc(slot + TY_SLAB + kk * 32);
                        if (TWO && kk % 2) wgmma_m64xn<BT>(d2, da, db, i != 0 || kk > 1); /* d2 starts at kk = 1 */
                        else wgmma_m64xn<BT>(d, da, db, CW == 2 || i != 0 || kk != 0);
                    }
                }
                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                /* two warpgroups: each waits for its own k-block and releases its slot at once
                 * (the other one keeps the tensor cores busy meanwhile); with multicast, in every
                 * CTA of the cluster (thread r of the warpgroup arrives on rank r's barrier) */
                if constexpr (RING && CW == 2) {
                    const int32_t ct = threadIdx.x % 128;
                    auto release = [&](int32_t slot) {
                        if constexpr (MODE == TY_MCAST) {
                            if (ct < c) mbar_arrive_remote(cluster_map(&empty[slot], (uint32_t)ct));
                        } else if (ct == 0) mbar_arrive(&empty[slot]);
                    };
                    if (lag) { /* keep this k-block's group in flight, release the previous one's slot (rings >= 4) */
                        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                        if (i >= 2) release((i - 2) % kslots);
                    } else {
                        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
                        release(s);
                    }
                    continue;
                }
                if constexpr (RING) asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                TY_MARK(RING && threadIdx.x == 32 && i > 0 && i <= 28, ty_trace_c, 30 + i - 1);
                /* ring: k-block i - 1's wgmmas are done, its slot may be refilled */
                if constexpr (RING && MODE == TY_MCAST) {
                    if (i >= rlag && threadIdx.x < c) mbar_arrive_remote(cluster_map(&empty[(i - rlag) % kslots], threadIdx.x));
                } else if constexpr (RING) {
                    if (i >= rlag && threadIdx.x == 0 && !TY_TF(TYF_NOREL)) mbar_arrive(&empty[(i - rlag) % kslots]);
                }
            }
        };
        if (TY_TF(TYF_NOMMA)) mainloop(std::false_type{});
        else mainloop(std::true_type{});
        if (CW == 1 && TY_TF(TYF_POLL1)) asm volatile("bar.sync 1, 128;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        fence_acc(d);
        /* Two warpgroups: once both are done with every slot, warpgroup 1 hands its sums to
         * warpgroup 0 through the idle slots ([register][thread], BT x 256 bytes: within the
         * epilogue scratch) and leaves; warpgroup 0 goes on alone, as with one. */
        if constexpr (CW == 2) {
            float *xch = (float *)smem;
            const int ct = threadIdx.x % 128;
            asm volatile("bar.sync 2, 256;" ::: "memory");
            if (wg == 1) {
#pragma unroll
                for (int j = 0; j < BT / 2; j++) xch[j * 128 + ct] = d[j];
            }
            asm volatile("bar.sync 2, 256;" ::: "memory");
            if (wg == 1) { /* with multicast it still meets the cluster's closing barrier */
                if constexpr (MODE == TY_MCAST) cluster_sync_all();
                return;
            }
#pragma unroll
            for (int j = 0; j < BT / 2; j++) d[j] += xch[j * 128 + ct];
            asm volatile("bar.sync 1, 128;" ::: "memory"); /* the exchange area becomes the scratch */
        }
        if constexpr (TWO) {
            fence_acc(d2);
#pragma unroll
            for (int j = 0; j < BT / 2; j++) d[j] += d2[j];
        }
        TY_MARK(threadIdx.x == 32 && nkb <= 28, ty_trace_c, 30 + nkb - 1);
        TY_MARK(threadIdx.x == 32, ty_trace_c, 58);
        if constexpr (MODE == TY_SPLIT) {
            /* chunk j of 4 accumulators (registers 4j..) sits at (j, thread) in 16-byte units,
             * pusher rk at chunk (rk - 1) BT / 8 + j: each warp writes 512 bytes in a row */
            constexpr int NCH = BT / 8;
            if (rk != 0) {
                const uint32_t bar = cluster_map(redbar, 0);
                const uint32_t base = cluster_map(red + ((rk - 1) * NCH) * 2048 + threadIdx.x * 16, 0);
#pragma unroll
                for (int j = 0; j < NCH; j++)
                    st_async_f4(base + j * 2048, make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]), bar);
                return;
            }
            mbar_wait(redbar, 0);
            for (int32_t r = 1; r < ksplit; r++) /* rank order: deterministic */
#pragma unroll
                for (int j = 0; j < NCH; j++) {
                    const float4 v = *(const float4 *)(red + ((r - 1) * NCH + j) * 2048 + threadIdx.x * 16);
                    d[4 * j] += v.x; d[4 * j + 1] += v.y; d[4 * j + 2] += v.z; d[4 * j + 3] += v.w;
                }
        }
        /* Every slot has landed and been read: the slots become the scratch [token][64 rows].
         * Register i: row 16 warp + g + 8 ((i >> 1) & 1), token 8 (i >> 2) + 2t + (i & 1) (m64nBT
         * layout); rows RS floats apart put lanes (g, t) on banks g + 8t + const. With SwiGLU
         * rows 0..31 are gate, 32..63 the matching up rows. */
        float *scr = (float *)smem;
        const int g = lane / 4, t = lane % 4;
#pragma unroll
        for (int i = 0; i < BT / 2; i++) scr[(8 * (i >> 2) + 2 * t + (i & 1)) * G::RS + 16 * warp + g + 8 * ((i >> 1) & 1)] = d[i];
        asm volatile("bar.sync 1, 128;" ::: "memory");
#pragma unroll
        for (int q = 0; q < NE; q++) {
            const int idx = threadIdx.x + 128 * q, tok = idx / (OW / 8), r = 8 * (idx % (OW / 8));
            if (idx >= BT * (OW / 8)) break;
            const int64_t m = (int64_t)tt * BT + tok, j0 = (int64_t)tw * OW + r;
            if (m >= e.M || j0 >= e.nout) continue;
            float v[8], u[8];
            const float *p = scr + tok * G::RS + r;
#pragma unroll
            for (int k = 0; k < 8; k++) {
                v[k] = p[k];
                u[k] = SW ? p[32 + k] : 0.f;
            }
            tinfer_bf16_epi_store8(e, a, m, j0, v, u, &pre[q]);
        }
        TY_MARK(threadIdx.x == 32, ty_trace_c, 59);
    }
    /* no CTA leaves while a peer may still multicast into it */
    if constexpr (MODE == TY_MCAST) cluster_sync_all();
#else
    (void)map_w; (void)map_x; (void)a; (void)gx; (void)kblocks; (void)c_arg; (void)ksplit_arg; (void)kslots; (void)v16; (void)early;
    (void)lag;
    __trap();
#endif
}

/* Host view of one tile geometry (TyGeo<BT>) */
struct ty_geo {
    int bt, kb_bytes, red_bytes, max_kb, scr_bytes;
    /* kslots <= TY_MAX_KB: callers check it first */
    int64_t smem(int64_t kslots, int32_t ksplit) const {
        return ty_smem_bytes((int)kslots, ksplit, kb_bytes, red_bytes, scr_bytes);
    }
};
template <int BT> static ty_geo ty_geo_of() {
    using G = TyGeo<BT>;
    return {BT, G::KB_BYTES, G::RED_BYTES, G::MAX_KB, G::SCR_BYTES};
}
static ty_geo ty_geo_get(int32_t bt) {
    return bt == 16 ? ty_geo_of<16>() : bt == 32 ? ty_geo_of<32>() : bt == 48 ? ty_geo_of<48>() : ty_geo_of<64>();
}

int64_t tinfer_gemm_bf16_tiny_max_k(int32_t bt) {
    if (bt != 16 && bt != 32 && bt != 48 && bt != 64) return 0;
    return (int64_t)ty_geo_get(bt).max_kb * TY_BK;
}

/* kblocks over ksplit ranks: the k-block slots per CTA (0 when some rank would have none, or a
 * CTA's slots and reduction area do not fit its shared memory) */
static int32_t ty_kslots(const ty_geo &g, int64_t kblocks, int32_t ksplit) {
    const int64_t kper = (kblocks + ksplit - 1) / ksplit;
    if ((kblocks + kper - 1) / kper != ksplit || kper > TY_MAX_KB || g.smem(kper, ksplit) > TY_SMEM_MAX) return 0;
    return (int32_t)kper;
}
/* The smallest split-K factor (1..TINFER_GEMM_BF16_TINY_MAX_SPLIT) whose CTAs hold their k-blocks */
static int32_t ty_min_split(const ty_geo &g, int64_t kblocks) {
    for (int32_t f = 1; f <= TINFER_GEMM_BF16_TINY_MAX_SPLIT; f++)
        if (ty_kslots(g, kblocks, f)) return f;
    return 0;
}

/* CTAs of this tile and split that share an SM: per_sm, or fewer where their shared memory does
 * not fit (228 KB per SM, 1 KB of it reserved per CTA); 0 when the split does not fit at all. */
static int64_t ty_per_sm(const ty_geo &g, int64_t kblocks, int32_t ksplit, int per_sm) {
    const int32_t kper = ty_kslots(g, kblocks, ksplit);
    if (!kper) return 0;
    const int64_t fit = (int64_t)(228 * 1024) / (g.smem(kper, ksplit) + 1024);
    return fit < per_sm ? fit : per_sm;
}

int32_t tinfer_gemm_bf16_tiny_pick(int64_t M, int64_t nout, int64_t K, int32_t swiglu, int32_t n_sm, int32_t *ksplit,
                                   int32_t *stages, int32_t *wgs) {
    if (ksplit) *ksplit = 0;
    if (stages) *stages = 0;
    if (wgs) *wgs = 0;
    if (n_sm <= 0 || M < 1 || nout < 1 || K < 1) return 0;
    /* row tiles of 64 outputs, or with SwiGLU 32 (32 gate rows over the 32 matching up rows) */
    const int64_t rows = swiglu ? (nout + 31) / 32 : (nout + 63) / 64, kblocks = (K + TY_BK - 1) / TY_BK;
    /* token tiles in order of preference, each with its CTAs-per-SM limit (bf16.h); the first
     * 64-token entry only for plain outputs of a K that one CTA holds
     * (TINFER_GEMM_BF16_TINY_PLAIN64_FIRST) */
    const struct { int32_t bt; int per; bool plain_unsplit; } tiers[] = {
        {16, TINFER_GEMM_BF16_TINY_CTAS16_PER_SM, false},
        {64, TINFER_GEMM_BF16_TINY_PLAIN64_FIRST ? TINFER_GEMM_BF16_TINY_CTAS64_PER_SM : 0, true},
        {32, TINFER_GEMM_BF16_TINY_CTAS32_PER_SM, false},
        {64, TINFER_GEMM_BF16_TINY_CTAS64_PER_SM, false}};
    for (const auto &t : tiers) {
        const ty_geo g = ty_geo_get(t.bt);
        const int32_t f0 = ty_min_split(g, kblocks);
        if (!f0 || t.per < 1 || (t.plain_unsplit && (swiglu || f0 != 1))) continue;
        /* the split factors, in order: 1 for a K that one CTA holds; else 16-token tiles split as
         * widely as the CTA limit allows (f0..TINFER_GEMM_BF16_TINY_MAX_SPLIT from the top), wider
         * ones as little (from f0 up; bf16.h) */
        const int64_t tiles = rows * ((M + t.bt - 1) / t.bt);
        const int32_t fmax = f0 == 1 ? 1 : TINFER_GEMM_BF16_TINY_MAX_SPLIT;
        for (int32_t j = 0; j <= fmax - f0; j++) {
            int32_t f = t.bt == 16 ? fmax - j : f0 + j;
            /* unsplit 16-token tiles may share an SM (bf16.h, _CTAS16_UNSPLIT_PER_SM) */
            const int per = t.bt == 16 && f == 1 ? TINFER_GEMM_BF16_TINY_CTAS16_UNSPLIT_PER_SM : t.per;
            const int64_t spm = ty_per_sm(g, kblocks, f, per);
            if (spm > 0 && tiles * f <= spm * n_sm) {
                /* 16-token tiles: TINFER_GEMM_BF16_TINY_WG16 consumer warpgroups; with one, a K
                 * that fits is split over TINFER_GEMM_BF16_TINY_SHORT_SPLIT all the same while
                 * those CTAs fit _SHORT_SPLIT_PER_SM per SM (bf16.h) */
                const int32_t wg = t.bt == 16 ? TINFER_GEMM_BF16_TINY_WG16 : TINFER_GEMM_BF16_TINY_WG;
                const int32_t fs = TINFER_GEMM_BF16_TINY_SHORT_SPLIT;
                if (t.bt == 16 && wg == 1 && f == 1 && kblocks >= 2 * fs &&
                    tiles * fs <= ty_per_sm(g, kblocks, fs, TINFER_GEMM_BF16_TINY_SHORT_SPLIT_PER_SM) * n_sm)
                    f = fs;
                if (ksplit) *ksplit = f;
                if (wgs) *wgs = wg;
                return t.bt;
            }
        }
    }
    /* Then, for plain outputs of a K past one CTA's 64-token slots (up to
     * TINFER_GEMM_BF16_TINY_RING_MAX_K): 64-token tiles unsplit, one CTA per SM in one wave, each
     * streaming all of K through a ring of TINFER_GEMM_BF16_TINY_RING_STAGES stages (bf16.h). */
    {
        const ty_geo g = ty_geo_get(64);
        const int64_t tiles = rows * ((M + 63) / 64);
        const int32_t st = TINFER_GEMM_BF16_TINY_RING_STAGES;
        if (st > 0 && !swiglu && K <= TINFER_GEMM_BF16_TINY_RING_MAX_K && kblocks > g.max_kb && kblocks > st &&
            tiles <= n_sm && g.smem(st, 1) <= TY_SMEM_MAX) {
            if (ksplit) *ksplit = 1;
            if (stages) *stages = st;
            if (wgs) *wgs = TINFER_GEMM_BF16_TINY_RING_WG;
            return 64;
        }
    }
    return 0;
}

/* Knob gemm_tiny_wg2_lag 1: in a ring of >= 4 stages each of two consumer warpgroups keeps one
 * k-block's wgmmas in flight and releases the slot of its previous one (measurement; anything
 * else: off) */
static int ty_wg2_lag(void) { return tinfer_gemm_knobs_get()->gemm_tiny_wg2_lag == 1; }

template <int BT, bool SW, int MODE, bool RING, int CW>
static tinfer_status ty_launch(const tinfer_gemm_bf16_args *a, int32_t c, int32_t ksplit, int32_t kblocks, int32_t kper,
                               int32_t kslots, int dev, cudaStream_t s, tinfer_err *err) {
    using G = TyGeo<BT>;
    tinfer_status status = TINFER_OK;
    static int attr_dev = -1;
    CUtensorMap mw, mx;
    const int64_t tiles_t = (a->M + BT - 1) / BT, tiles_w = (tinfer_gemm_bf16_nout(*a) + (SW ? 31 : 63)) / (SW ? 32 : 64);
    const int64_t gx = (tiles_t + c - 1) / c * c;
    if (gx * tiles_w * ksplit > 0x7fffffff) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 tiny: too many tiles");
    if ((status = tinfer_gemm_bf16_tma_map(&mw, a->W, a->N, a->K, a->ldw, SW ? 32 : 64, "W", err)) != TINFER_OK) return status;
    if ((status = tinfer_gemm_bf16_tma_map(&mx, a->X, a->M, a->K, a->ldx, BT, "X", err)) != TINFER_OK) return status;
    if (attr_dev != dev) {
        TINFER_CUDA_TRY(err, cudaFuncSetAttribute(ty_kernel<BT, SW, MODE, RING, CW>, cudaFuncAttributeMaxDynamicSharedMemorySize, TY_SMEM_MAX));
        attr_dev = dev;
    }
    {
        const bool pdl = tinfer_gemm_bf16_wgmma_pdl_mode() != 0;
        cudaLaunchConfig_t lc;
        cudaLaunchAttribute attr[2];
        tinfer_tc_launch_cfg(&lc, attr, dim3((unsigned)(gx * tiles_w * ksplit)), ty_threads(CW), (size_t)G::smem(kslots, ksplit), s,
                             ksplit > 1 ? ksplit : c, pdl);
        TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, ty_kernel<BT, SW, MODE, RING, CW>, mw, mx, *a, (int32_t)gx, kblocks, c, ksplit, kper,
                                                kslots, (int32_t)tinfer_bf16_epi_v16_ok(*a), (int32_t)(pdl && a->w_static),
                                                (int32_t)(CW == 2 && RING && kslots >= 4 && ty_wg2_lag())));
        TINFER_CUDA_LAUNCH_CHECK(err, "ty_kernel");
    }
cleanup:
    return status;
}

template <int BT, bool SW>
static tinfer_status ty_launch_mode(const tinfer_gemm_bf16_args *a, int32_t c, int32_t ksplit, int32_t kblocks, int32_t kper,
                                    int32_t kslots, int32_t wgs, int dev, cudaStream_t s, tinfer_err *err) {
    const bool ring = kslots < kper;
#define TY_L(MODE, RING, CW) ty_launch<BT, SW, MODE, RING, CW>(a, c, ksplit, kblocks, kper, kslots, dev, s, err)
    /* multicast: one warpgroup not built for 48-token tiles */
    if (c > 1) {
        if (wgs == 2) return ring ? TY_L(TY_MCAST, true, 2) : TY_L(TY_MCAST, false, 2);
        if constexpr (BT == 48)
            return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 tiny: 48-token tiles multicast with two warpgroups only");
        else return ring ? TY_L(TY_MCAST, true, 1) : TY_L(TY_MCAST, false, 1);
    }
    if (ksplit > 1) {
        if (wgs == 2) return ring ? TY_L(TY_SPLIT, true, 2) : TY_L(TY_SPLIT, false, 2);
        return ring ? TY_L(TY_SPLIT, true, 1) : TY_L(TY_SPLIT, false, 1);
    }
    if (wgs == 2) return ring ? TY_L(TY_PLAIN, true, 2) : TY_L(TY_PLAIN, false, 2);
    return ring ? TY_L(TY_PLAIN, true, 1) : TY_L(TY_PLAIN, false, 1);
#undef TY_L
}

/* Knob gemm_tiny_wg 1 / 2: the consumer warpgroups of every call that leaves them to the pick or
 * the default, where two apply (anything else, or unset: 0, no override) */
static int32_t ty_env_wgs(void) {
    const int e = tinfer_knob_int(tinfer_gemm_knobs_get()->gemm_tiny_wg, 0, 1, 2);
    return e > 0 ? e : 0;
}

tinfer_status tinfer_gemm_bf16_tiny(const tinfer_gemm_bf16_args *a, int32_t bt, int32_t cluster, int32_t ksplit, cudaStream_t s,
                                    tinfer_err *err) {
    return tinfer_gemm_bf16_tiny_cfg(a, bt, cluster, ksplit, 0, 0, s, err);
}

tinfer_status tinfer_gemm_bf16_tiny_ring(const tinfer_gemm_bf16_args *a, int32_t bt, int32_t cluster, int32_t ksplit,
                                         int32_t stages, cudaStream_t s, tinfer_err *err) {
    return tinfer_gemm_bf16_tiny_cfg(a, bt, cluster, ksplit, stages, 0, s, err);
}

tinfer_status tinfer_gemm_bf16_tiny_cfg(const tinfer_gemm_bf16_args *a, int32_t bt, int32_t cluster, int32_t ksplit,
                                        int32_t stages, int32_t wgs, cudaStream_t s, tinfer_err *err) {
    tinfer_cuda_facts f;
    const tinfer_status fs = tinfer_cuda_current_facts(&f, err);
    if (fs != TINFER_OK) return fs;
    if (f.cc_major != 9)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 tiny: needs sm_90 (device %d is sm_%d*)", f.device, f.cc_major);
    if (a->M > INT32_MAX || a->N > INT32_MAX || a->K > INT32_MAX)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 tiny: dimension over 2^31");
    if (stages < 0 || stages > TY_RING_MAX)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 tiny: %d ring stages (1..%d, 0 = a slot per k-block)", (int)stages,
                              TY_RING_MAX);
    if (wgs < 0 || wgs > 2)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 tiny: %d consumer warpgroups (1, 2 or 0 = default)", (int)wgs);
    const int64_t nout = tinfer_gemm_bf16_nout(*a);
    const int32_t kblocks = (int32_t)((a->K + TY_BK - 1) / TY_BK);
    if (stages > 0 && ksplit == 0) ksplit = 1; /* a ring holds any K */
    const bool auto_tile = bt == 0;
    int32_t pf = 0, pst = 0, pwg = 0; /* the pick's tile, split factor, ring and warpgroups, computed once */
    const int32_t pbt = bt == 0 || ksplit == 0 ? tinfer_gemm_bf16_tiny_pick(a->M, nout, a->K, a->swiglu, f.n_sm, &pf, &pst, &pwg) : 0;
    /* the pick's ring (unsplit) where the caller left the tile and the ring to it */
    if (bt == 0 && pbt && pst > 0 && stages == 0 && ksplit <= 1 && (cluster == 0 ? TINFER_GEMM_BF16_TINY_CLUSTER : cluster) == 1) {
        stages = pst;
        ksplit = 1;
    }
    if (bt == 0) /* the pick's tile, or where it declines, 16 tokens while that is one CTA per SM */
        bt = pbt ? pbt : (nout + (a->swiglu ? 31 : 63)) / (a->swiglu ? 32 : 64) * ((a->M + 15) / 16) <= f.n_sm ? 16 : 32;
    if (bt != 16 && bt != 32 && bt != 48 && bt != 64)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 tiny: token tile %d (16, 32, 48, 64 or 0 = auto)", (int)bt);
    const ty_geo g = ty_geo_get(bt);
    if (cluster == 0) cluster = TINFER_GEMM_BF16_TINY_CLUSTER;
    if (cluster != 1 && cluster != 2 && cluster != 4 && cluster != 8)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 tiny: cluster %d (1, 2, 4, 8 or 0 = default)", (int)cluster);
    if (ksplit == 0) { /* the pick's factor for this tile, else the smallest whose CTAs hold their k-blocks */
        if (cluster != 1 || pbt != bt) pf = 0;
        ksplit = cluster > 1 ? 1 : pf ? pf : ty_min_split(g, kblocks);
        if (ksplit == 0)
            return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 tiny: K=%lld does not fit %d CTAs", (long long)a->K,
                                  TINFER_GEMM_BF16_TINY_MAX_SPLIT);
    }
    if (ksplit < 1 || ksplit > 8 || (ksplit > 1 && cluster > 1))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 tiny: split-K factor %d with cluster %d (1..8, split only without multicast)",
                              (int)ksplit, (int)cluster);
    if (ksplit > kblocks) ksplit = kblocks;
    const int32_t kper = (kblocks + ksplit - 1) / ksplit;
    ksplit = (kblocks + kper - 1) / kper; /* every rank gets some k-blocks */
    int32_t kslots;
    if (stages > 0 && stages < kper) { /* a ring */
        if (g.smem(stages, ksplit) > TY_SMEM_MAX)
            return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 tiny: %d ring stages split %d do not fit", (int)stages, (int)ksplit);
        kslots = stages;
        /* two warpgroups wait on a slot's barrier alternately: with an odd ring one could wait
         * for round u while the other's round u - 1 is still in flight, and the parity test
         * would pass it (the same parity) */
        if (wgs == 2 && stages % 2)
            return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 tiny: two consumer warpgroups need an even ring (%d stages)",
                                  (int)stages);
    } else if (!(kslots = ty_kslots(g, kblocks, ksplit)))
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 tiny: K=%lld split %d does not fit (%d k-blocks per CTA at most)",
                              (long long)a->K, (int)ksplit, g.max_kb);
    if (wgs == 0) { /* the switch, else the pick's where the call took the pick's tile, split and
                     * ring, else the default; the default is one with multicast, two only with an even
                     * ring (or none) */
        const bool as_picked = auto_tile && pbt && bt == pbt && ksplit == pf && (kslots < kper ? kslots : 0) == pst;
        const int32_t env = ty_env_wgs();
        wgs = env ? env : as_picked ? pwg : TINFER_GEMM_BF16_TINY_WG;
        if (cluster != 1 || (kslots < kper && kslots % 2)) wgs = 1;
    }
#define TY_GO(BT, SW) ty_launch_mode<BT, SW>(a, cluster, ksplit, kblocks, kper, kslots, wgs, f.device, s, err)
    if (bt == 16) return a->swiglu ? TY_GO(16, true) : TY_GO(16, false);
    if (bt == 32) return a->swiglu ? TY_GO(32, true) : TY_GO(32, false);
    if (bt == 48) { /* multicast with one warpgroup: refused by ty_launch_mode */
        if (a->swiglu) return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 tiny: 48-token tiles take plain outputs only");
        return TY_GO(48, false);
    }
    return a->swiglu ? TY_GO(64, true) : TY_GO(64, false);
#undef TY_GO
}
