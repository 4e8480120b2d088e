/*
 * 03_wgmma_ws_kernel.cuh — rung 03's kernel template, wgmma_ws_kernel (the algorithm:
 * 03_wgmma_ws.cu's file comment; its building blocks: 03_wgmma_ws.cuh): producer / consumer
 * warpgroups, the persistent tile walk, ping-pong consumers, split-K over a cluster with the
 * partial sums' reduction, X multicast and the epilogues. Included only by 03_wgmma_ws.cu, whose
 * launchers instantiate every configuration (nvcc's whole-program mode needs a kernel template's
 * definition in the translation unit that launches it).
 */
#ifndef TINFER_GEMM_TC_03_WGMMA_WS_KERNEL_CUH
#define TINFER_GEMM_TC_03_WGMMA_WS_KERNEL_CUH

#include "gemm/tc/03_wgmma_ws.cuh"
#include "gemm/tc/ws_trace.cuh"

/* BN: tile width (WsGeo). EPI 0: no bias, residual or SwiGLU (straight stores); 1: the general
 * epilogue. PP (BN = 128 only): ping-pong consumers — each consumer warpgroup computes whole
 * 128 x 128 tiles of its own (the CTA's even / odd tiles), so one's epilogue runs while the
 * other's wgmmas keep the tensor cores busy; without PP both consumers share each tile (64 rows
 * each) and the tensor cores idle during the epilogue. SPLIT (not with PP): split-K, one tile per
 * CTA, a cluster of ksplit CTAs per tile (the persistent kernel is the !SPLIT instantiation,
 * untouched by the split code). TS (persistent, BN 128 / 256, no residual): the TMA-store epilogue
 * (ws_store_tma) through map_y, the BF16 output's tensor map; other instantiations ignore map_y. */
template <int BN, int EPI, bool PP, bool SPLIT, bool TS = false, bool MC = false>
static __global__ void __launch_bounds__(384, 1)
    wgmma_ws_kernel(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_w,
                    const __grid_constant__ CUtensorMap map_y, tinfer_gemm_bf16_args a, int32_t tiles_m,
                    int32_t tiles_n, int32_t kblocks, int32_t flags, int32_t ksplit) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    static_assert(!PP || BN == 128, "ping-pong tiles are 128 x 128 (128 accumulators per thread)");
    static_assert(!(PP && SPLIT), "no split-K with ping-pong consumers");
    static_assert(!TS || (!PP && !SPLIT), "the TMA-store epilogue is the persistent kernel's");
    static_assert(!MC || (!PP && !SPLIT && !TS), "X multicast: the persistent kernel with the scratch epilogue");
    using G = WsGeo<BN, TS>;
    constexpr int WS_STAGES = G::STAGES, WS_STAGE_BYTES = G::STAGE_BYTES, WS_B_BYTES = G::B_BYTES;
    constexpr int WS_BN = BN;
    extern __shared__ uint8_t ws_smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)ws_smem_raw + 1023) & ~(uintptr_t)1023);
    uint64_t *full = (uint64_t *)(smem + WS_STAGES * WS_STAGE_BYTES);
    uint64_t *empty = full + WS_STAGES;
    uint64_t *turn = empty + WS_STAGES; /* PP: turn[c] = consumer c may start its next mainloop */
    uint64_t *redb = turn + 2;          /* SPLIT: redb[o] = the owner's o-th unit's partial sums all landed */
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int32_t tiles = tiles_m * tiles_n;
    const int64_t F = a.N / 2;
    /* SPLIT: a cluster of ksplit CTAs along x shares tile blockIdx.x / ksplit, CTA rank r taking
     * k-blocks [kb0, kb1) (the launcher makes every share non-empty). */
    const int32_t rank = SPLIT ? (int32_t)(blockIdx.x % ksplit) : 0;
    const int32_t tile0 = SPLIT ? (int32_t)(blockIdx.x / ksplit) : (int32_t)blockIdx.x;
    const int32_t kper = SPLIT ? (kblocks + ksplit - 1) / ksplit : kblocks;
    const int32_t kb0 = rank * kper, kb1 = kb0 + kper < kblocks ? kb0 + kper : kblocks;
    /* MC: a cluster of 2 CTAs (rank mc_rank) walks pairs of tiles (tm, 2 p) and (tm, 2 p + 1):
     * both need the same X tile, so each loads its 64-row half and multicasts it to both. A
     * pair's second tile past N' (odd tiles_n) is computed from zero-filled W and not stored.
     * Otherwise the walk is over tiles: CTA b takes b, b + grid, ... (split: its one tile). */
    const int32_t mc_rank = MC ? (int32_t)(blockIdx.x % 2) : 0;
    const int32_t walk0 = MC ? (int32_t)(blockIdx.x / 2) : tile0;
    const int32_t wstep = MC ? (int32_t)(gridDim.x / 2) : SPLIT ? tiles : (int32_t)gridDim.x;
    const int32_t wcount = MC ? tiles_m * ((tiles_n + 1) / 2) : tiles;
    auto unit_coords = [&](int32_t u, int32_t &tm, int32_t &tn) {
        if (MC) {
            int32_t tn2;
            ws_tile_coords(u, tiles_m, (tiles_n + 1) / 2, tm, tn2);
            tn = 2 * tn2 + mc_rank;
        } else {
            ws_tile_coords(u, tiles_m, tiles_n, tm, tn);
        }
    };

    WS_TRACE(threadIdx.x == 0, 0);
    if (threadIdx.x == 0) {
        /* The descriptors are kernel parameters, never written by an earlier kernel: fetching them
         * now overlaps the barrier setup and the PDL wait instead of the first TMA load. */
        asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&map_x) : "memory");
        asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&map_w) : "memory");
        if (TS) asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&map_y) : "memory");
        for (int s = 0; s < WS_STAGES; s++) {
            mbar_init(&full[s], 1);           /* the producer's arrive.expect_tx */
            mbar_init(&empty[s], PP ? 1 : MC ? 4 : 2); /* one arrive per consumer warpgroup reading the stage (MC: of both CTAs) */
        }
        if (PP) {
            mbar_init(&turn[0], 1);
            mbar_init(&turn[1], 1);
        }
        if (SPLIT)
            for (int o = 0; o < 4; o++) mbar_init(&redb[o], 1); /* the owner warp's arrive.expect_tx */
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (MC) cluster_sync_all(); /* the peer's barriers exist before anything multicasts or arrives on them */
    /* Programmatic dependent launch (the launcher sets it for short K, ws_pdl; without it both
     * are no-ops): the CTA may have started while the previous kernel on the stream still
     * runs, so nothing global (X, W, bias, R, Y) is touched before the wait; only the barrier
     * setup above overlaps it. The grid is all resident at once (persistent: <= SMs; split: <=
     * the co-resident clusters), so the next kernel may launch at once: its CTAs can only take
     * SMs this one leaves idle, and wait in turn. */
    tdec::pdl_wait();
    tdec::pdl_launch_dependents();
    WS_TRACE(threadIdx.x == 0, 1);

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (tid != 0) {
            if (SPLIT) { /* the cluster barriers count every thread */
                cluster_sync_all();
                if (!(flags & WS_F_ASYNCRED)) cluster_sync_all();
            }
            if (MC) cluster_sync_all();
            return;
        }
        /* Stages are filled in the order the CTA's tiles are numbered; with PP consecutive tiles
         * belong to alternate consumers, which therefore find their stages in the same order. */
        uint32_t it = 0;
        for (int32_t u = walk0; u < wcount; u += wstep) {
            int32_t tm, tn;
            unit_coords(u, tm, tn);
            const int32_t row_a = tm * WS_BM;
            const int32_t row_b0 = a.swiglu ? tn * (WS_BN / 2) : tn * WS_BN;
            const int32_t row_b1 = a.swiglu ? (int32_t)F + tn * (WS_BN / 2) : tn * WS_BN + WS_BN / 2;
            for (int32_t kb = kb0; kb < kb1; kb++, it++) {
                const uint32_t s = it % WS_STAGES, ph = (it / WS_STAGES) & 1;
                mbar_wait(&empty[s], ph ^ 1);
                uint8_t *sa = smem + s * WS_STAGE_BYTES, *sb = sa + WS_A_BYTES;
                mbar_expect_tx(&full[s], WS_STAGE_BYTES); /* MC: the peer's X half counts here too */
                if (MC) /* this CTA's 64-row half of the X box (map_x has 64-row boxes), to both CTAs */
                    tma_load_2d_mc(sa + mc_rank * (64 * 128), &map_x, kb * WS_BK, row_a + 64 * mc_rank, &full[s], 0x3);
                else
                    tma_load_2d(sa, &map_x, kb * WS_BK, row_a, &full[s]);
                tma_load_2d(sb, &map_w, kb * WS_BK, row_b0, &full[s]);
                if (G::W_BOXES == 2) tma_load_2d(sb + WS_B_BYTES / 2, &map_w, kb * WS_BK, row_b1, &full[s]);
            }
        }
        WS_TRACE(true, 2);
        if (SPLIT) {
            cluster_sync_all();
            if (!(flags & WS_F_ASYNCRED)) cluster_sync_all();
        }
        /* MC: no CTA leaves while its peer may still multicast into it or arrive on its barriers */
        if (MC) cluster_sync_all();
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        WS_TRACE(threadIdx.x == 128, 3);
        const int c = wg - 1, warp = tid / 32, lane = tid % 32;
        WsEpi e;
        e.bias = a.bias;
        e.R = a.R;
        e.Y = a.Y;
        e.ldy = a.ldy;
        e.ldr = a.ldr;
        e.M = a.M;
        e.nout = a.swiglu ? F : a.N;
        e.F = F;
        e.sw = a.swiglu != 0;
        e.f32 = a.y_dtype == TINFER_DTYPE_F32;
        float(*scr)[16][33] = (float(*)[16][33])(smem + WS_STAGES * WS_STAGE_BYTES + WS_BAR_BYTES + (c * 4 + warp) * WS_SCR_WARP);
        (void)scr; /* unused by TS */
        /* whole-line stores: every whole tile; edge tiles too when N' % 8 == 0 */
        auto lines_mode = [&](bool inside) { return !(flags & WS_F_LINES) ? 0 : inside ? 1 : (flags & WS_F_N8) ? 2 : 0; };
        if constexpr (TS) {
            float d[G::NACC];
            uint32_t it = 0;
            uint8_t *obuf = smem + G::OUT_OFFSET + c * (64 * BN * 2);
            const int32_t ow = e.sw ? BN / 2 : BN;
            for (int32_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
                int32_t tm, tn;
                ws_tile_coords(tile, tiles_m, tiles_n, tm, tn);
                it = ws_mainloop<BN, WS_STAGES>(d, full, empty, smem, c, tid, it, kblocks);
                ws_store_tma<BN, EPI>(d, e, obuf, &map_y, tm * WS_BM + 64 * c, tn * ow, c, tid);
            }
            if (tid == 0) bulk_wait0(); /* the last stores complete before the CTA leaves */
        } else if constexpr (!PP && !SPLIT) {
            float d[G::NACC];
            uint32_t it = 0;
            const uint32_t peer_empty = MC ? cluster_map(empty, (uint32_t)(mc_rank ^ 1)) : 0;
            for (int32_t u = walk0; u < wcount; u += wstep) {
                int32_t tm, tn;
                unit_coords(u, tm, tn);
                it = ws_mainloop<BN, WS_STAGES, MC>(d, full, empty, smem, c, tid, it, kblocks, peer_empty);
                WS_TRACE(threadIdx.x == 128, 4);
                const bool inside = (int64_t)(tm + 1) * WS_BM <= a.M && (int64_t)(tn + 1) * (e.sw ? WS_BN / 2 : WS_BN) <= e.nout;
                const bool whole = (flags & WS_F_VEC) && inside;
                ws_store_slab<BN, EPI>(d, e, (int64_t)tm * WS_BM + 64 * c, tn, whole, lines_mode(inside), scr, warp, lane);
            }
            WS_TRACE(threadIdx.x == 128, 7);
            if (MC) cluster_sync_all(); /* the peer's last arrivals on this CTA's barriers are in */
        } else if constexpr (SPLIT) {
            /* Split-K: this CTA's one tile, k-blocks [kb0, kb1). A slab wholly below row M
             * (M <= 64, or a ragged last row of tiles) computes nothing: its warpgroup only hands
             * the stages back, so the other consumer's wgmmas have the tensor cores to themselves.
             * No tile loop: nothing redefines the accumulators after the reduction below, so
             * ptxas keeps the wgmmas pipelined (a loop around it serialized them: C7515). */
            float d[G::NACC];
            int32_t tm, tn;
            ws_tile_coords(tile0, tiles_m, tiles_n, tm, tn);
            const bool live = (int64_t)tm * WS_BM + 64 * c < a.M;
            if (!live) {
                for (int32_t kb = kb0, it = 0; kb < kb1; kb++, it++) {
                    const uint32_t s = it % WS_STAGES, ph = (it / WS_STAGES) & 1;
                    mbar_wait(&full[s], ph);
                    if (tid == 0) mbar_arrive(&empty[s]);
                }
            } else {
                ws_mainloop<BN, WS_STAGES>(d, full, empty, smem, c, tid, 0, kb1 - kb0);
            }
            WS_TRACE(threadIdx.x == 128, 4);
            /* The tile's 8 warp units of 16 rows (u = 4c + warp) are finished by rank
             * u % ksplit. Once every CTA of the cluster is past its mainloop (first cluster
             * barrier: both consumers' wgmmas done, every TMA load landed, so every stage area is
             * idle), each other rank pushes its partial sums for the unit into the owner's stage
             * area (slot: the owner's o-th unit, o = u / ksplit, and the pusher's index among the
             * other ranks), and the owner adds them from its own shared memory in rank order
             * (deterministic) before its epilogue. WS_F_ASYNCRED (default): the pushes are st.async
             * stores that count their bytes on the owner's barrier redb[o], whose owner warp
             * arrives with the (ksplit - 1) x NACC x 128 bytes it expects and waits; else (the
             * previous version, --gemm-wgmma-splitred barrier) posted DSMEM stores and a
             * second cluster barrier (release / acquire), whose release waits for every store of
             * every rank (MEMBAR.ALL.GPU behind the pushes in the profile). Pushing costs no round
             * trip per peer: pulling (the first version) had the owner warp wait for one DSMEM
             * round trip per peer. Units wholly below row M are skipped on both sides. */
            asm volatile("bar.sync 1, 256;" ::: "memory");
            const int u = 4 * c + warp;
            const bool unit_live = (int64_t)tm * WS_BM + 16 * u < a.M;
            const int32_t owner = u % ksplit;
            const bool own = owner == rank;
            constexpr int SLOT = (G::NACC / 4) * 32; /* float4s of one unit's partial sums */
            /* slot (o, p) of the owner: o = u / ksplit, p = pusher rank with the owner skipped */
            auto slot = [&](int32_t p) { return (size_t)((u / ksplit) * (ksplit - 1) + p) * SLOT + lane; };
            const bool async_red = (flags & WS_F_ASYNCRED) != 0;
            cluster_sync_all();
            WS_TRACE(threadIdx.x == 128, 5);
            if (unit_live && !own) {
                const int32_t p = rank < owner ? rank : rank - 1;
                const uint32_t base = cluster_map((const float4 *)smem + slot(p), (uint32_t)owner);
                if (async_red) {
                    const uint32_t bar = cluster_map(&redb[u / ksplit], (uint32_t)owner);
#pragma unroll
                    for (int j = 0; j < G::NACC / 4; j++)
                        st_async_f4(base + j * 32 * 16, make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]), bar);
                } else {
#pragma unroll
                    for (int j = 0; j < G::NACC / 4; j++)
                        st_cluster_f4(base + j * 32 * 16, make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]));
                }
            }
            if (!async_red) cluster_sync_all();
            if (unit_live && own) {
                if (async_red) {
                    if (lane == 0) mbar_expect_tx(&redb[u / ksplit], (uint32_t)((ksplit - 1) * SLOT * 16));
                    mbar_wait(&redb[u / ksplit], 0);
                }
                for (int32_t p = 0; p < ksplit - 1; p++) {
                    const float4 *src = (const float4 *)smem + slot(p);
#pragma unroll
                    for (int j = 0; j < G::NACC / 4; j++) {
                        const float4 v = src[j * 32];
                        d[4 * j] += v.x;
                        d[4 * j + 1] += v.y;
                        d[4 * j + 2] += v.z;
                        d[4 * j + 3] += v.w;
                    }
                }
            }
            WS_TRACE(threadIdx.x == 128, 6);
            if (unit_live && own) {
                const bool inside = (int64_t)(tm + 1) * WS_BM <= a.M && (int64_t)(tn + 1) * (e.sw ? WS_BN / 2 : WS_BN) <= e.nout;
                const bool whole = (flags & WS_F_VEC) && inside;
                ws_store_slab<BN, EPI>(d, e, (int64_t)tm * WS_BM + 64 * c, tn, whole, lines_mode(inside), scr, warp, lane);
            }
            WS_TRACE(threadIdx.x == 128, 7);
        } else {
            /* Ping-pong: consumer c takes the CTA's tiles j = c, c + 2, ...; tile j's k-blocks
             * are ring iterations j * kblocks ... (the producer's order). d0 / d1: rows 0-63 and
             * 64-127 of the tile (two m64n128k16 per k16 step, same B).
             * The mainloops alternate (consumer 0's tile 0, 1's tile 1, 0's tile 2, ...): before
             * its k-th tile, consumer 1 waits until consumer 0 has finished k + 1 mainloops and
             * consumer 0 (k >= 1) until consumer 1 has finished k. Besides handing the tensor
             * cores to one tile at a time, this keeps the parity waits sound: an mbarrier parity
             * wait only tells the current phase from the previous one, so a consumer must never
             * wait on a full barrier more than one phase ahead of it. Unordered, consumer 1 would
             * wait on phase 1 of a slot whose phase 0 had not completed yet and pass at once
             * (first H200 run of this kernel: hangs). With the order, every earlier use of the
             * slot has completed when a consumer waits. */
            float d0[64], d1[64];
            int64_t j = c;
            uint32_t k = 0; /* this consumer's tile count */
            for (int32_t tile = blockIdx.x + c * gridDim.x; tile < tiles; tile += 2 * gridDim.x, j += 2, k++) {
                int32_t tm, tn;
                ws_tile_coords(tile, tiles_m, tiles_n, tm, tn);
                if (c == 1) mbar_wait(&turn[1], k & 1);
                else if (k > 0) mbar_wait(&turn[0], (k - 1) & 1);
                uint64_t it = (uint64_t)j * (uint64_t)kblocks;
                uint32_t prev = 0;
                fence_acc(d0);
                fence_acc(d1);
                for (int32_t kb = 0; kb < kblocks; kb++, it++) {
                    const uint32_t s = (uint32_t)(it % WS_STAGES), ph = (uint32_t)(it / WS_STAGES) & 1;
                    mbar_wait(&full[s], ph);
                    const uint8_t *sa = smem + s * WS_STAGE_BYTES, *sb = sa + WS_A_BYTES;
                    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
                    for (int kk = 0; kk < WS_BK / 16; kk++) {
                        const uint64_t db = wgmma_desc(sb + kk * 32);
                        wgmma_m64n128k16(d0, wgmma_desc(sa + kk * 32), db, (kb | kk) != 0);
                        wgmma_m64n128k16(d1, wgmma_desc(sa + 64 * 128 + kk * 32), db, (kb | kk) != 0);
                    }
                    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                    if (kb > 0 && tid == 0) mbar_arrive(&empty[prev]);
                    prev = s;
                }
                /* every full barrier of this tile has completed (thread 0 waited on each) */
                if (tid == 0) mbar_arrive(&turn[c ^ 1]);
                asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
                fence_acc(d0);
                fence_acc(d1);
                if (tid == 0) mbar_arrive(&empty[prev]);
                const bool inside = (int64_t)(tm + 1) * WS_BM <= a.M && (int64_t)(tn + 1) * (e.sw ? WS_BN / 2 : WS_BN) <= e.nout;
                const bool whole = (flags & WS_F_VEC) && inside;
                ws_store_slab<BN, EPI>(d0, e, (int64_t)tm * WS_BM, tn, whole, lines_mode(inside), scr, warp, lane);
                ws_store_slab<BN, EPI>(d1, e, (int64_t)tm * WS_BM + 64, tn, whole, lines_mode(inside), scr, warp, lane);
            }
        }
    }
#else
    /* Built for a target without wgmma (the portable PTX): never silently do nothing. */
    (void)map_x; (void)map_w; (void)map_y; (void)a; (void)tiles_m; (void)tiles_n; (void)kblocks; (void)flags; (void)ksplit;
    __trap();
#endif
}

#endif
