/*
 * tma.cu — TMA tensor maps of BF16 row-major matrices for the TMA-fed kernels of both GEMM
 * families (prefill rungs 03, 05, 06 in gemm/tc/, decode rung 09 in gemm/decode/): encoding
 * through the runtime's driver entry point, and a per-thread cache of encoded maps so that a
 * launch costs a lookup on the host. Declared in tma.h.
 */
#include "gemm/cuda/tma.h"

#include "gemm/cuda/knobs.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdlib.h>
#include <string.h>

/* cuTensorMapEncodeTiled through the runtime's driver entry point (no -lcuda needed). */
static PFN_cuTensorMapEncodeTiled_v12000 ws_encode_fn(void) {
    static PFN_cuTensorMapEncodeTiled_v12000 fn = NULL;
    if (!fn) {
        void *p = NULL;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) == cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = (PFN_cuTensorMapEncodeTiled_v12000)p;
        else
            (void)cudaGetLastError();
    }
    return fn;
}

/* Boxes of box_cols x box_rows; the 128-byte swizzle where a box row fits it (box_cols <= 64),
 * else none (decode rung 09's 256-column boxes). */
static tinfer_status ws_encode_map(CUtensorMap *map, const uint16_t *base, int64_t rows, int64_t K, int64_t ld,
                                   uint32_t box_cols, uint32_t box_rows, const char *what, tinfer_err *err) {
    PFN_cuTensorMapEncodeTiled_v12000 enc = ws_encode_fn();
    if (!enc) return tinfer_err_set(err, TINFER_ERR_CUDA, "gemm_bf16 wgmma: cuTensorMapEncodeTiled not available");
    const cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)ld * 2};
    const cuuint32_t box[2] = {box_cols, box_rows}, estr[2] = {1, 1};
    const CUtensorMapSwizzle swz = box_cols <= 64 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE;
    CUresult r = enc(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)base, dims, strides, box, estr,
                     CU_TENSOR_MAP_INTERLEAVE_NONE, swz, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 wgmma: tensor map for %s [%lld, %lld] ld %lld failed (CUresult %d)",
                              what, (long long)rows, (long long)K, (long long)ld, (int)r);
    return TINFER_OK;
}

/* Whether encoded maps are cached (on unless the measurement knob gemm_wgmma_mapcache is 0). */
static bool tma_map_cache_on(void) { return tinfer_gemm_knobs_get()->gemm_wgmma_mapcache != 0; }

/* A map depends only on (address, rows, K, ld, box), so a per-thread cache of encoded maps is
 * always valid (a reused address with the same shape encodes to the same map) and keeps the host
 * cost of a launch to a lookup. Sized for a model: every weight of a 32-layer model with four
 * projections (128 maps) plus its activation buffers stays cached, so decode and prefill steps
 * never re-encode (a 16-entry cache missed on every call of a model's layer sequence).
 * WS_MAP_SETS sets of WS_MAP_WAYS entries, round-robin within a set; allocated on a thread's
 * first call (45 KB), freed at thread exit; without memory the maps are simply not cached.
 * Knob gemm_wgmma_mapcache 0 encodes every map on every call (for measurement). */
#define WS_MAP_SETS 64
#define WS_MAP_WAYS 4
typedef struct ws_map_entry {
    const void *p;
    int64_t rows, K, ld;
    uint32_t box_rows, box_cols;
    CUtensorMap map;
} ws_map_entry;
struct WsMapCache {
    ws_map_entry *e = nullptr;
    uint8_t next[WS_MAP_SETS] = {};
    ~WsMapCache() { free(e); }
};
static thread_local WsMapCache ws_cache;

static tinfer_status ws_make_map_box(CUtensorMap *map, const uint16_t *base, int64_t rows, int64_t K, int64_t ld,
                                     uint32_t box_cols, uint32_t box_rows, const char *what, tinfer_err *err) {
    WsMapCache &c = ws_cache;
    if (!c.e && tma_map_cache_on()) c.e = (ws_map_entry *)calloc(WS_MAP_SETS * WS_MAP_WAYS, sizeof(ws_map_entry));
    /* set index: the address bits above the 256-byte alignment cudaMalloc gives, mixed with the shape */
    const uint64_t h = ((uint64_t)(uintptr_t)base >> 8) ^ ((uint64_t)(uintptr_t)base >> 20) ^ (uint64_t)rows ^
                       ((uint64_t)box_rows << 3) ^ ((uint64_t)box_cols << 5);
    ws_map_entry *set = c.e ? c.e + (h % WS_MAP_SETS) * WS_MAP_WAYS : nullptr;
    for (int i = 0; set && i < WS_MAP_WAYS; i++) {
        const ws_map_entry &e = set[i];
        if (e.p == base && e.rows == rows && e.K == K && e.ld == ld && e.box_rows == box_rows &&
            e.box_cols == box_cols) {
            *map = e.map;
            return TINFER_OK;
        }
    }
    tinfer_status st = ws_encode_map(map, base, rows, K, ld, box_cols, box_rows, what, err);
    if (st != TINFER_OK || !set) return st;
    uint8_t &nx = c.next[h % WS_MAP_SETS];
    ws_map_entry &e = set[nx];
    nx = (uint8_t)((nx + 1) % WS_MAP_WAYS);
    e.p = base;
    e.rows = rows;
    e.K = K;
    e.ld = ld;
    e.box_rows = box_rows;
    e.box_cols = box_cols;
    e.map = *map;
    return TINFER_OK;
}

tinfer_status tinfer_gemm_bf16_tma_map(CUtensorMap *map, const uint16_t *base, int64_t rows, int64_t K, int64_t ld,
                                       uint32_t box_rows, const char *what, tinfer_err *err) {
    return ws_make_map_box(map, base, rows, K, ld, 64, box_rows, what, err);
}
tinfer_status tinfer_gemm_bf16_tma_map_box(CUtensorMap *map, const uint16_t *base, int64_t rows,
                                           int64_t K, int64_t ld, uint32_t box_cols,
                                           uint32_t box_rows, const char *what, tinfer_err *err) {
    return ws_make_map_box(map, base, rows, K, ld, box_cols, box_rows, what, err);
}
