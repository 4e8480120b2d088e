/*
 * lm_argmax.cu — greedy picks straight from the LM head: ids[r] = argmax_j x[r] · W[j] over the
 * vocabulary, without writing the logits. Reference: the LM head's GEMM (gemm/bf16.h) followed by
 * tinfer_op_cuda_argmax (elementwise.cu), whose rule it keeps (ties to the lowest index, NaN never
 * wins, a row where nothing wins gives 0).
 *
 * Why: a greedy decode step of many sequences wants one id a row, yet the GEMM writes every
 * logit (64 SmolLM2 rows: 12.6 MB of F32) for the argmax to read back, and the GEMM's tiles at
 * 64 rows of 49,152 x 576 are not the shape it is fastest at. Here the weight is read once, from
 * DRAM straight into registers, and only a 64-bit word a (row, block) leaves the SMs.
 *
 * Kernel: one block per SM (8 warps), persistent. The block stages all n <= 64 rows of X in
 * shared memory (a row stride of 32 mod 64 elements: the 8 lanes of a quarter warp read distinct
 * banks), zero rows up to a multiple of 8. Each warp then takes 16 weight rows at a time, the
 * grid's warps in turn across the vocabulary, and multiplies them by every staged row on the
 * tensor cores (mma.sync m16n8k16, BF16 in, F32 accumulate): the 16 rows are the A operand, read
 * from global memory with no L1 allocation, 4 chunks of 32 k (two 16-byte loads a lane each) in
 * flight; the rows of X are the B operand, n / 8 tiles of 8 from shared memory. The logical k of
 * the mma is permuted, as in decode rung 04 and the fused step (a dot product may sum K in any
 * order), so that lane (g = lane / 4, t = lane % 4) needs physical k = 8t .. 8t + 7 of weight
 * rows g, g + 8 and X row g of a tile: one 16-byte load each per 32 of K. A lane keeps its best
 * (value, index) for each X row it holds (rows 2t, 2t + 1 of each tile); at the end the warp's 8
 * lanes of a row, then the block's 8 warps, reduce to one key (am_key: ordered value, complemented
 * index), which joins the row's word ws[2 r] by atomicMax; the row's last block (the count in
 * ws[2 r + 1]) writes the id and leaves both words zero, as tinfer_op_cuda_argmax_split does.
 *
 * Numerics: each logit is the F32 sum of the same BF16 products as the GEMM's, in another order,
 * so a pick can differ from argmax(GEMM) only where two logits of a row are within that
 * rounding; identical weight rows give bit-identical logits (the same operations in the same
 * order), so an exact tie still goes to the lower index.
 */
#include "gemm/cuda/cuda_check.h"
#include "ops/cuda/ops_cuda.h"
#include "ops/cuda/ops_cuda_util.cuh"

#include <limits.h>
#include <math.h>

using namespace tops;

#define LMA_WARPS 8
#define LMA_CHUNKS 4 /* chunks of 32 k of the weight rows in flight a warp */

/* NT tiles of 8 rows of X (n <= 8 NT). */
template <int NT>
static __global__ void __launch_bounds__(LMA_WARPS * 32, 1)
    lm_argmax_kernel(int32_t *__restrict__ ids, const uint16_t *__restrict__ X, int64_t ldx,
                     const uint16_t *__restrict__ W, int64_t ldw, int32_t n, int32_t V, int32_t E,
                     unsigned long long *__restrict__ ws) {
    extern __shared__ __align__(16) uint8_t lma_smem[];
    const int32_t ldxs = mma_staged_ld(E);
    uint16_t *xs = (uint16_t *)lma_smem;                                     /* [8 NT][ldxs] */
    uint64_t *am = (uint64_t *)(lma_smem + (size_t)NT * 8 * ldxs * 2);      /* [warps][8 NT] */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    tops_pdl_enter();

    /* X into shared memory: rows past n and k in [E, roundup32(E)) zero */
    const int32_t E32 = (E + 31) / 32 * 32, per_row = E32 / 8;
    for (int32_t i = threadIdx.x; i < NT * 8 * per_row; i += blockDim.x) {
        const int32_t r = i / per_row, k = (i - r * per_row) * 8;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (r < n && k < E) v = *(const uint4 *)(X + (int64_t)r * ldx + k);
        *(uint4 *)(xs + (int64_t)r * ldxs + k) = v;
    }
    __syncthreads();

    float bv[NT][2];
    int32_t bi[NT][2];
#pragma unroll
    for (int tt = 0; tt < NT; tt++)
#pragma unroll
        for (int i = 0; i < 2; i++)
            bv[tt][i] = -INFINITY, bi[tt][i] = INT_MAX;
    const uint4 z = make_uint4(0, 0, 0, 0);
    const int64_t stride = (int64_t)gridDim.x * LMA_WARPS * 16;
    for (int64_t n0 = ((int64_t)blockIdx.x * LMA_WARPS + warp) * 16; n0 < V; n0 += stride) {
        const bool ok0 = n0 + g < V, ok1 = n0 + g + 8 < V;
        const uint16_t *w0 = W + (ok0 ? n0 + g : 0) * ldw;
        const uint16_t *w1 = W + (ok1 ? n0 + g + 8 : 0) * ldw;
        float acc[NT][4];
#pragma unroll
        for (int tt = 0; tt < NT; tt++)
#pragma unroll
            for (int c = 0; c < 4; c++)
                acc[tt][c] = 0.0f;
        for (int32_t c0 = 0; c0 < E; c0 += LMA_CHUNKS * 32) {
            uint4 wa[LMA_CHUNKS], wb[LMA_CHUNKS];
#pragma unroll
            for (int u = 0; u < LMA_CHUNKS; u++) {
                const int32_t k = c0 + u * 32 + t * 8;
                wa[u] = k < E ? ld_stream16(w0 + k) : z;
                wb[u] = k < E ? ld_stream16(w1 + k) : z;
            }
#pragma unroll
            for (int u = 0; u < LMA_CHUNKS; u++) {
                if (c0 + u * 32 >= E) break; /* uniform: the warp's last chunk */
                const int32_t k = c0 + u * 32 + t * 8;
#pragma unroll
                for (int tt = 0; tt < NT; tt++) {
                    const uint4 xv = *(const uint4 *)(xs + (int64_t)(tt * 8 + g) * ldxs + k);
                    const uint32_t a0[4] = {wa[u].x, wb[u].x, wa[u].y, wb[u].y};
                    const uint32_t a1[4] = {wa[u].z, wb[u].z, wa[u].w, wb[u].w};
                    mma16816(acc[tt], a0, xv.x, xv.y);
                    mma16816(acc[tt], a1, xv.z, xv.w);
                }
            }
        }
        /* accumulator c: weight row g + 8 (c >> 1), X row 8 tt + 2t + (c & 1) */
#pragma unroll
        for (int tt = 0; tt < NT; tt++)
#pragma unroll
            for (int c = 0; c < 4; c++) {
                const int32_t row = (int32_t)n0 + g + (c >> 1) * 8;
                if ((c >> 1 ? ok1 : ok0) && am_better(acc[tt][c], row, bv[tt][c & 1], bi[tt][c & 1]))
                    bv[tt][c & 1] = acc[tt][c], bi[tt][c & 1] = row;
            }
    }
    /* the warp's best of each X row over the 8 lanes holding it (lanes t, t + 4, ..., t + 28) */
#pragma unroll
    for (int tt = 0; tt < NT; tt++)
#pragma unroll
        for (int i = 0; i < 2; i++) {
#pragma unroll
            for (int o = 4; o < 32; o <<= 1) {
                const float ov = __shfl_xor_sync(0xffffffffu, bv[tt][i], o);
                const int32_t oi = __shfl_xor_sync(0xffffffffu, bi[tt][i], o);
                if (am_better(ov, oi, bv[tt][i], bi[tt][i])) bv[tt][i] = ov, bi[tt][i] = oi;
            }
            if (g == 0) am[warp * NT * 8 + tt * 8 + 2 * t + i] = am_key(bv[tt][i], bi[tt][i]);
        }
    __syncthreads();
    /* the block's best of X row r (the keys order as the rule), joined across the blocks */
    for (int32_t r = threadIdx.x; r < n; r += blockDim.x) {
        uint64_t k = 0;
#pragma unroll
        for (int w = 0; w < LMA_WARPS; w++)
            k = am[w * NT * 8 + r] > k ? am[w * NT * 8 + r] : k;
        am_join(ws, r, k, gridDim.x, ids);
    }
}

template <int NT> static size_t lma_smem_bytes(int32_t E) {
    return (size_t)NT * 8 * (size_t)mma_staged_ld(E) * 2 + (size_t)LMA_WARPS * NT * 8 * 8;
}

/* Launches the instance for NT tiles of X rows. The shared-memory opt-in (for the largest E), once
 * per device and instance (bit d: device d, d < 64; a larger ordinal asks every launch); host
 * threads racing to set a bit do so harmlessly. */
template <int NT>
static tinfer_status lma_launch(int32_t *ids, const uint16_t *X, int64_t ldx, const uint16_t *W,
                                int64_t ldw, int32_t n, int32_t V, int32_t E,
                                unsigned long long *ws, int32_t grid, cudaStream_t stream,
                                tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    static unsigned long long attr_devs;
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    const unsigned long long bit = dev >= 0 && dev < 64 ? 1ull << dev : 0;
    if (e == cudaSuccess && !(__atomic_load_n(&attr_devs, __ATOMIC_ACQUIRE) & bit))
        e = cudaFuncSetAttribute(lm_argmax_kernel<NT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)lma_smem_bytes<NT>(TINFER_OP_CUDA_LM_ARGMAX_MAX_E));
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return tinfer_err_set(err, TINFER_ERR_CUDA, "lm_argmax: shared memory opt-in: %s",
                              cudaGetErrorString(e));
    }
    __atomic_fetch_or(&attr_devs, bit, __ATOMIC_RELEASE);
    TOPS_LAUNCH(err, "lm_argmax_kernel", lm_argmax_kernel<NT>, grid, LMA_WARPS * 32,
                lma_smem_bytes<NT>(E), stream, ids, X, ldx, W, ldw, n, V, E, ws);
cleanup:
    return status;
}

extern "C" bool tinfer_op_cuda_lm_argmax_takes(int32_t n, int32_t E) {
    return n >= 1 && n <= TINFER_OP_CUDA_LM_ARGMAX_MAX_N && E >= 8 && E % 8 == 0 &&
           E <= TINFER_OP_CUDA_LM_ARGMAX_MAX_E;
}

extern "C" tinfer_status tinfer_op_cuda_lm_argmax(int32_t *ids, const uint16_t *X, int64_t ldx,
                                                  const uint16_t *W, int64_t ldw, int32_t n,
                                                  int32_t V, int32_t E, unsigned long long *ws,
                                                  cudaStream_t stream, tinfer_err *err) {
    TOPS_REQUIRE(err, n >= 0 && n <= TINFER_OP_CUDA_LM_ARGMAX_MAX_N, "lm_argmax",
                 "n=%d rows (at most %d)", n, TINFER_OP_CUDA_LM_ARGMAX_MAX_N);
    TOPS_REQUIRE(err, V >= 1 && E >= 8 && E % 8 == 0 && E <= TINFER_OP_CUDA_LM_ARGMAX_MAX_E,
                 "lm_argmax", "V=%d E=%d (E a multiple of 8, at most %d)", V, E,
                 TINFER_OP_CUDA_LM_ARGMAX_MAX_E);
    TOPS_REQUIRE(err, ldx >= E && ldx % 8 == 0 && ldw >= E && ldw % 8 == 0, "lm_argmax",
                 "ldx=%lld ldw=%lld for E=%d (multiples of 8)", (long long)ldx, (long long)ldw, E);
    if (n == 0) return TINFER_OK;
    TOPS_REQUIRE(err, ids && X && W && ws, "lm_argmax", "NULL pointer");
    TOPS_REQUIRE(err, tops_host_aligned(X, 16) && tops_host_aligned(W, 16), "lm_argmax",
                 "X and W must be 16-byte aligned");
    tinfer_cuda_facts f;
    const tinfer_status st = tinfer_cuda_current_facts(&f, err);
    if (st != TINFER_OK) return st;
    /* a block an SM, no more than the 16-row tiles give the warps */
    const int64_t tiles = ((int64_t)V + 15) / 16;
    int64_t grid = (tiles + LMA_WARPS - 1) / LMA_WARPS;
    if (grid > f.n_sm) grid = f.n_sm;
    switch ((n + 7) / 8) {
    case 1: return lma_launch<1>(ids, X, ldx, W, ldw, n, V, E, ws, (int32_t)grid, stream, err);
    case 2: return lma_launch<2>(ids, X, ldx, W, ldw, n, V, E, ws, (int32_t)grid, stream, err);
    case 3: return lma_launch<3>(ids, X, ldx, W, ldw, n, V, E, ws, (int32_t)grid, stream, err);
    case 4: return lma_launch<4>(ids, X, ldx, W, ldw, n, V, E, ws, (int32_t)grid, stream, err);
    case 5: return lma_launch<5>(ids, X, ldx, W, ldw, n, V, E, ws, (int32_t)grid, stream, err);
    case 6: return lma_launch<6>(ids, X, ldx, W, ldw, n, V, E, ws, (int32_t)grid, stream, err);
    case 7: return lma_launch<7>(ids, X, ldx, W, ldw, n, V, E, ws, (int32_t)grid, stream, err);
    default: return lma_launch<8>(ids, X, ldx, W, ldw, n, V, E, ws, (int32_t)grid, stream, err);
    }
}
