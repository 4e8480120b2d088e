/*
 * decode_step.cu — a whole decode step of a small Llama in ONE persistent kernel: embedding,
 * every layer (RMSNorm + QKV, RoPE + KV write + attention, O + residual, RMSNorm + gate/up +
 * SwiGLU, down + residual), the final RMSNorm and the LM head. The step-by-step path
 * (models/backend_cuda.c) runs the same ops as ~5 kernels a layer, and on a model as small as
 * SmolLM2-135M each kernel costs 5-7 µs of latency chain (launch, first loads from DRAM,
 * reductions, tail) for under 1 µs of weight bytes. Here no phase waits for DRAM (the weights
 * arrive ahead of time through shared memory) and no phase waits for a grid barrier (each waits
 * for exactly the values it reads, which carry the phase that wrote them).
 *
 * Grid: one block per SM, launched cooperatively (every block resident: blocks wait for each
 * other's values), of DS_THREADS compute threads and one producer warp. Block b of G owns output
 * rows [N b / G, N (b + 1) / G) of every matrix.
 *   weight ring   the block's slices of the weight matrices, in the order the step uses them
 *                 (layer 0's attn_norm + QKV rows, O rows, ffn_norm + gate/up rows, down rows,
 *                 layer 1's ..., then out_norm), are "tiles" that the producer warp copies
 *                 (cp.async, 16 bytes a lane) into a ring of S stages of shared memory, each
 *                 with a "full" mbarrier (the producer's copies landed) and an "empty" one (the
 *                 compute warps are done with it); tile t + S goes out as soon as tile t is
 *                 released, so the DRAM stream runs a layer or more ahead of the compute and
 *                 no compute warp ever issues a copy. The layer table is copied to shared
 *                 memory first, so issuing a tile reads nothing from global memory. The LM
 *                 head, read once and the largest matrix, is not staged: each warp reads 4 rows
 *                 at a time with every 16-byte load in flight together (streaming it through
 *                 the ring instead measured 5% slower for the LM head).
 *   flagged words every value one phase hands to another (the residual stream x, qkv, the
 *                 attention output, the SwiGLU output) is a 64-bit word: the value's 32 bits and
 *                 the 32-bit epoch of the phase that wrote it, stored and loaded whole (single-
 *                 copy atomic), as in NCCL's LL protocol. A reader polls its words until they
 *                 carry the epoch it expects: no barrier, no fence, and a phase starts as soon
 *                 as its own inputs exist (attention waits only for its head's q, k and v).
 *                 Epochs: bar[1] holds the step's first; phase k of the step writes epoch + k;
 *                 the block that finishes last advances it for the next launch. Every buffer is
 *                 written once a step and read in the next phase only, so it can be rewritten
 *                 five phases later, when every reader has long moved on; the residual stream
 *                 alternates between two buffers (phase D reads x_b, phase A x_a). Block b is
 *                 the only writer of its rows of x (the embedding, O and down all split x the
 *                 same way), so it keeps them in shared memory and never reads them back.
 *   GEMV phases   the block's rows from shared memory, one row per warp at a time (gate/up:
 *                 rows f and f + 8 together, their reductions overlapping), 8 BF16 per lane
 *                 per 16-byte read, dotted with each of the step's B token vectors, which
 *                 every block first stages in shared memory as BF16 (the normed x, the attention
 *                 output or the SwiGLU output: the same BF16 inputs the GEMV path feeds its
 *                 kernels); F32 sums, shuffle-reduced; the epilogue of gemm/cuda/bf16_epi.cuh
 *                 (bias, SwiGLU with __expf, residual add in F32, BF16 rounding where the step
 *                 path rounds). The instance for up to 8 tokens runs these on the tensor cores
 *                 instead, and so do the instances from 2 tokens the LM head
 *                 (decode_step_mma.cuh).
 *   attention     one (token, query head) item per block: q rotated (rope_cuda.cuh's arithmetic,
 *                 so the cache rows are the bits rope_kv writes), the token's own k / v row
 *                 rotated in shared memory and written to the cache by the item of the group's
 *                 first head; the cached keys and values go out as one round of loads (4 key
 *                 slots per lane group, D/8 lanes per key, 16 bytes each) before the step's own
 *                 row is even read, and were asked of L2 during the QKV phase; an online softmax
 *                 per lane group in the log2 domain, merged across lane groups by shuffles and
 *                 across warps in shared memory; F32 throughout, BF16 output. Keys are at most
 *                 TINFER_OP_CUDA_STEP_MAX_KEYS; longer contexts take the step path.
 *   greedy steps  a launch may run n_steps steps (tinfer_op_cuda_decode_steps): the block that
 *                 finishes a step last turns the gathered argmax into each token's next token,
 *                 in a flagged word that every block waits for, and the next step begins; the
 *                 producer warp streams the next step's first tiles during the LM head. So a
 *                 token costs one grid-wide meeting instead of a cooperative launch and the
 *                 ring's first loads from DRAM with nothing to overlap them.
 * Reference: the step path, op for op (tests/ops_cuda compares both on a random model, and
 * tests/model the whole backend with the CPU).
 */
#include "ops/cuda/decode_step_parts.cuh"
#include "ops/cuda/decode_step_mma.cuh"

#include <algorithm>
#include <string.h>

/* ---- the kernel ---- */

template <int D, int NB> /* NB: the most tokens this instance serves (1, 2 or 8) */
static __global__ void __launch_bounds__(DS_BLOCK, 1) decode_step_kernel(ds_args a) {
    extern __shared__ __align__(128) unsigned char ds_smem[];
    const tinfer_op_cuda_step_model &m = a.m;
    const tinfer_op_cuda_kv &kv = a.kv;
    const ds_ll &ll = a.ll;
    const int32_t B = a.n, E = m.n_embd, F = m.n_ff, V = m.n_vocab, NL = m.n_layer;
    const int32_t H = kv.n_head, HKV = kv.n_head_kv, Q = H * D, QKV = (H + 2 * HKV) * D;
    const int32_t KX = max(E, max(Q, F)); /* staged row length (a multiple of 8) */
    /* the staged rows' stride: padded for the tensor-core phases' fragment loads (mma_staged_ld); one
     * token's row needs none, and its instance keeps the code it was measured with */
    const int32_t LDX = NB == 1 ? KX : mma_staged_ld(KX);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int32_t G = gridDim.x, b = blockIdx.x;
    /* this block's rows of each matrix. Where it costs the others no rows (ds_na), the NA
     * blocks that take the step's (token, head) attention items get no QKV rows: they wait for
     * q, k and v from phase A's other blocks, instead of finishing rows of their own first. */
    const int32_t NA = ds_na(B * H, QKV, G);
    const int32_t q0 = b < NA ? 0 : part(QKV, b - NA, G - NA);
    const int32_t q1 = b < NA ? 0 : part(QKV, b - NA + 1, G - NA);
    const int32_t e0 = part(E, b, G), e1 = part(E, b + 1, G), RE = e1 - e0;
    const int32_t f0 = part(F, b, G), f1 = part(F, b + 1, G);
    const int32_t v0 = part(V, b, G), v1 = part(V, b + 1, G);
    /* the step's epochs: phase k (0 embed, then A..E of each layer) writes ep0 + k; a step
     * after it in the same launch starts at ep0 + 5 NL + 2 (ep0 + 5 NL + 1: the picks it gets) */
    const uint32_t ep_launch = max(1u, __ldcg(&a.b.bar[1])); /* 0 is every word's initial flag */
    const uint32_t ep_stride = 5u * (uint32_t)NL + 2u;
    uint32_t ep0 = ep_launch;
    auto ep = [&](int32_t l, int32_t k) { return ep0 + 1u + 5u * (uint32_t)l + (uint32_t)k; };

    ds_ring R;
    R.st = ds_smem;
    R.S = a.n_stages;
    R.bytes = a.stage_bytes;
    R.full = (uint64_t *)(ds_smem + (size_t)R.S * R.bytes);
    R.empty = R.full + DS_MAX_STAGES;
    R.n_tiles = 4 * NL + (a.n_out > 0 ? 1 : 0);
    uint64_t *am = R.empty + DS_MAX_STAGES;                                /* [W][MAX_B] */
    uint16_t *xs = (uint16_t *)(am + DS_WARPS * DS_MAX_B);                 /* [B][LDX] */
    float *cs = (float *)(xs + (size_t)DS_MAX_B * LDX);                    /* [B][D/2] */
    float *sn = cs + DS_MAX_B * (D / 2);                                   /* [B][D/2] */
    float *red = sn + DS_MAX_B * (D / 2);                                  /* [(W + 1) * MAX_B] */
    float *xo = red + (DS_WARPS + 1) * DS_MAX_B;                           /* [B][RE] own x */
    tinfer_op_cuda_step_layer *Ls = (tinfer_op_cuda_step_layer *)(xo + a.xr_floats); /* [NL] */
    ds_att_smem<D> &S = *(ds_att_smem<D> *)(Ls + NL);
    ds_meta &M = *(ds_meta *)(&S + 1);
    float *mr = (float *)(&M + 1); /* [DS_MMA_RED]: the tensor-core phases' (NB > 1) */
    R.layers = Ls;
    R.q0 = q0, R.q1 = q1, R.e0 = e0, R.e1 = e1, R.f0 = f0, R.f1 = f1;

    /* the layer table and the ring's barriers; then the producer warp streams the tiles */
    for (int32_t i = tid; i < NL * (int32_t)(sizeof *Ls / 8); i += DS_BLOCK)
        ((uint64_t *)Ls)[i] = ((const uint64_t *)m.layers)[i];
    if (tid == 0) {
        for (int32_t s = 0; s < R.S; s++) {
            mbar_init(&R.full[s], DS_RING_ISSUERS);
            mbar_init(&R.empty[s], DS_THREADS);
        }
        mbar_init_fence();
    }
    __syncthreads(); /* the whole block (the producer warp included), the last time */
    if (warp == DS_WARPS) {
        ring_produce(a, R, lane);
        return;
    }
    /* The launch's steps: one, or n_steps greedy steps, each fed the one before's picks. */
    const int32_t NS = a.n_steps;
    R.t0 = 0;
    for (int32_t st = 0; st < NS; st++) {
        trace_at(a, 0, DS_T_WEIGHTS);
        trace_at(a, 0, DS_T_INPUTS);
        /* 0. x_a = embed(tok), the block's own rows (kept in xo too); the RoPE table of each
         * token's position (every block, own copy) */
        if (tid < B * RE) {
            const int32_t j = tid / RE, e = e0 + tid % RE, t = st ? M.tok[j] : a.tok[j];
            const float v = t >= 0 && t < V ? bf16_to_f32(m.tok_embd[(int64_t)t * E + e])
                                            : __int_as_float(0x7fc00000);
            xo[tid] = v;
            ll_put(ll.xa + (int64_t)j * E + e, __float_as_uint(v), ep0);
        }
        if (tid < B) {
            M.pos[tid] = a.pos[tid] + st, M.seq[tid] = a.seq[tid];
            M.out_rows[tid] = tid < a.n_out ? a.out_rows[tid] : 0;
        }
        for (int32_t i = tid; i < B * (D / 2); i += DS_THREADS) {
            const int32_t j = i / (D / 2), p = a.pos[j] + st;
            rope_table(p, m.inv_freq, D / 2, cs + j * (D / 2), sn + j * (D / 2), i % (D / 2),
                       D / 2);
        }
        ds_sync(); /* xo, M, cs, sn complete */
        trace_at(a, 0, DS_T_COMPUTED);
        trace_at(a, 0, DS_T_DONE);

        /* The several-token instances run each layer as two halves of one code path (attention:
         * A, B, C; feed-forward: D, E), so that its norm, staging and residual phases are inlined
         * once, not twice: the loop is the kernel's working set in the instruction cache (the head
         * of decode_step_mma.cuh). The one-token instance keeps the loop it was measured with (the
         * halves there: 339 against 335 us a step, H100, probe-decode-step --batch 1). */
        if constexpr (NB > 1)
            for (int32_t l = 0; l < NL; l++) {
                const tinfer_op_cuda_step_layer &L = Ls[l];
                const uint32_t ep_x = l ? ep(l - 1, 4) : ep0; /* x_a's epoch */
                for (int32_t h = 0; h < 2; h++) {
                    const int32_t t = 4 * l + 2 * h;     /* QKV or gate/up; O or down follows */
                    const int32_t k = 1 + 5 * l + 3 * h; /* trace slot of phase A or D */
                    /* A. xb = rmsnorm(x_a) · attn_norm; qkv = xb · Wqkv^T (+ b)   qkv [B, QKV]
                     * D. xb = rmsnorm(x_b) · ffn_norm; act = silu(xb Wg^T) * (xb Wu^T) act [B, F]
                     */
                    if (h == 0) prefetch_kv(a, M, l); /* phase B's cached keys and values */
                    const uint16_t *W = ring_wait(R, t);
                    trace_at(a, k, DS_T_WEIGHTS);
                    if (h == 1 || q1 > q0) /* else an attention block: nothing to compute in A */
                        phase_norm<NB>(xs, LDX, h ? ll.xb : ll.xa, h ? ep(l, 2) : ep_x, W, NULL, B,
                                       E, m.eps, red);
                    trace_at(a, k, DS_T_INPUTS);
                    if (h == 0) {
                        if (q1 > q0)
                            phase_gemv<DS_LL_BF16, NB>(xs, LDX, B, W + E, q1 - q0, E, q0, L.bqkv,
                                                       NULL, ll.qkv, QKV, ep(l, 0), mr, warp, lane);
                    } else {
                        phase_swiglu<NB>(xs, LDX, B, W + E, f1 - f0, E, f0, ll.act, F, ep(l, 3), mr,
                                         warp, lane);
                    }
                    ds_sync(); /* stage t used */
                    trace_at(a, k, DS_T_COMPUTED);
                    ring_release(R, t);
                    trace_at(a, k, DS_T_DONE);
                    if (h == 0) /* B. RoPE, the KV row, attention                    att [B, Q] */
                        phase_attention<D>(a, M, l, k + 1, B * H, b, G, cs, sn, ep(l, 0), ep(l, 1),
                                           S);
                    /* C. x_b = x_a + att · Wo^T (+ bo)                          x [B, E]
                     * E. x_a = x_b + act · Wdown^T                              x [B, E] */
                    const int32_t kr = k + 2 - h, Kr = h ? F : Q;
                    phase_copy<NB>(xs, LDX, h ? ll.act : ll.att, ep(l, 1 + 2 * h), Kr, B);
                    trace_at(a, kr, DS_T_INPUTS);
                    W = ring_wait(R, t + 1);
                    trace_at(a, kr, DS_T_WEIGHTS);
                    phase_gemv<DS_LL_RESIDUAL, NB>(xs, LDX, B, W, RE, Kr, e0, h ? NULL : L.bo, xo,
                                                   h ? ll.xa : ll.xb, E, ep(l, 2 + 2 * h), mr, warp,
                                                   lane);
                    ds_sync();
                    trace_at(a, kr, DS_T_COMPUTED);
                    ring_release(R, t + 1);
                    trace_at(a, kr, DS_T_DONE);
                }
            }
        else
            for (int32_t l = 0; l < NL; l++) {
                const tinfer_op_cuda_step_layer &L = Ls[l];
                const int32_t t = 4 * l; /* this layer's QKV tile; O, gate/up and down follow */
                const uint32_t ep_x = l ? ep(l - 1, 4) : ep0; /* x_a's epoch */
                const int32_t k = 1 + 5 * l;                  /* trace slot of phase A */
                /* A. xb = rmsnorm(x_a) · attn_norm; qkv = xb · Wqkv^T (+ b)         qkv [B, QKV] */
                prefetch_kv(a, M, l); /* phase B's cached keys and values, asked of L2 */
                const uint16_t *W = ring_wait(R, t); /* attn_norm, then the QKV rows */
                trace_at(a, k, DS_T_WEIGHTS);
                if (q1 > q0) { /* else an attention block: nothing to compute in A */
                    phase_norm<NB>(xs, LDX, ll.xa, ep_x, W, NULL, B, E, m.eps, red);
                    trace_at(a, k, DS_T_INPUTS);
                    phase_gemv<DS_LL_BF16, NB>(xs, LDX, B, W + E, q1 - q0, E, q0, L.bqkv, NULL,
                                               ll.qkv, QKV, ep(l, 0), mr, warp, lane);
                } else
                    trace_at(a, k, DS_T_INPUTS);
                ds_sync(); /* stage t used */
                trace_at(a, k, DS_T_COMPUTED);
                ring_release(R, t);
                trace_at(a, k, DS_T_DONE);
                /* B. RoPE, the KV row, attention of every (token, head)           att [B, Q] */
                phase_attention<D>(a, M, l, k + 1, B * H, b, G, cs, sn, ep(l, 0), ep(l, 1), S);
                /* C. x_b = x_a + att · Wo^T (+ bo)                                x [B, E] */
                phase_copy<NB>(xs, LDX, ll.att, ep(l, 1), Q, B);
                trace_at(a, k + 2, DS_T_INPUTS);
                W = ring_wait(R, t + 1);
                trace_at(a, k + 2, DS_T_WEIGHTS);
                phase_gemv<DS_LL_RESIDUAL, NB>(xs, LDX, B, W, RE, Q, e0, L.bo, xo, ll.xb, E,
                                               ep(l, 2), mr, warp, lane);
                ds_sync();
                trace_at(a, k + 2, DS_T_COMPUTED);
                ring_release(R, t + 1);
                trace_at(a, k + 2, DS_T_DONE);
                /* D. xb = rmsnorm(x_b) · ffn_norm; act = silu(xb · Wg^T) * (xb · Wu^T)   act [B, F]
                 */
                W = ring_wait(R, t + 2); /* ffn_norm, then the gate and up rows */
                trace_at(a, k + 3, DS_T_WEIGHTS);
                phase_norm<NB>(xs, LDX, ll.xb, ep(l, 2), W, NULL, B, E, m.eps, red);
                trace_at(a, k + 3, DS_T_INPUTS);
                phase_swiglu<NB>(xs, LDX, B, W + E, f1 - f0, E, f0, ll.act, F, ep(l, 3), mr, warp,
                                 lane);
                ds_sync();
                trace_at(a, k + 3, DS_T_COMPUTED);
                ring_release(R, t + 2);
                trace_at(a, k + 3, DS_T_DONE);
                /* E. x_a = x_b + act · Wdown^T                                    x [B, E] */
                phase_copy<NB>(xs, LDX, ll.act, ep(l, 3), F, B);
                trace_at(a, k + 4, DS_T_INPUTS);
                W = ring_wait(R, t + 3);
                trace_at(a, k + 4, DS_T_WEIGHTS);
                phase_gemv<DS_LL_RESIDUAL, NB>(xs, LDX, B, W, RE, F, e0, NULL, xo, ll.xa, E,
                                               ep(l, 4), mr, warp, lane);
                ds_sync();
                trace_at(a, k + 4, DS_T_COMPUTED);
                ring_release(R, t + 3);
                trace_at(a, k + 4, DS_T_DONE);
            }
        /* the rows that want logits: final rmsnorm, LM head                  logits [n_out, V] */
        const int32_t kh = 1 + 5 * NL; /* trace slot of the LM head */
        if (a.n_out > 0) {
            const uint16_t *W = ring_wait(R, 4 * NL); /* out_norm */
            trace_at(a, kh, DS_T_WEIGHTS);
            phase_norm<NB>(xs, LDX, ll.xa, ep(NL - 1, 4), W, M.out_rows, a.n_out, E, m.eps, red);
            ring_release(R, 4 * NL); /* staged: the next step's first tile may take the stage */
            trace_at(a, kh, DS_T_INPUTS);
            phase_lm_head<NB>(xs, LDX, a.n_out, m.lm_head, v0, v1, E, a.b.logits, V, am, warp,
                              lane);
            ds_sync();
            if (a.b.ids && tid < a.n_out) { /* the block's pick for token tid, into the grid's */
                uint64_t best = 0;
                for (int wi = 0; wi < DS_WARPS; wi++)
                    best = max(best, am[wi * DS_MAX_B + tid]);
                if (best) atomicMax((unsigned long long *)&a.b.amax[tid], (unsigned long long)best);
            }
        } else {
            trace_at(a, kh, DS_T_WEIGHTS);
            trace_at(a, kh, DS_T_INPUTS);
        }
        ds_sync();
        trace_at(a, kh, DS_T_COMPUTED);
        trace_at(a, kh, DS_T_DONE);
        /* the last block to finish the step hands out its greedy picks, leaving amax zero;
         * after the launch's last step it moves the epoch on for the next launch (every block
         * read this one's at its start, before any block could finish); before another step
         * it hands each token its pick as the step's token, in a flagged word, and every block
         * waits for them (the grid's only meeting: the picks need every block's LM-head rows) */
        const bool more = st + 1 < NS;
        const uint32_t ep_pick = ep(NL - 1, 4) + 1u;
        if (tid == 0) {
            __threadfence(); /* the block's writes (the KV rows, amax) before it counts done */
            if (atomicAdd(&a.b.bar[0], 1u) == (uint32_t)G - 1) {
                __threadfence();
                int32_t pick[DS_MAX_B] = {0};
#pragma unroll
                for (int32_t j = 0; j < DS_MAX_B; j++) {
                    if (j >= a.n_out || !a.b.ids) break;
                    pick[j] = am_key_index(atomicExch((unsigned long long *)&a.b.amax[j], 0ull));
                    a.b.ids[(int64_t)st * a.n_out + j] = pick[j];
                }
                a.b.bar[0] = 0; /* every block has counted */
                if (!more) {
                    const bool wrap = ep_pick > 0xf0000000u; /* far from wrapping */
                    a.b.bar[1] = wrap ? 1u : ep_pick;
                    /* epochs start again at 1: no flagged word may keep one a later step could
                     * match before its writer has run (a token absent for billions of epochs).
                     * Every block is done with them; one thread, once in ~26M steps. */
                    if (wrap)
                        for (uint64_t *w = ll.xa; w < ll.tok + a.b.n_max; w++)
                            *w = 0;
                } else {
                    __threadfence(); /* the count and amax reset before any block goes on */
#pragma unroll
                    for (int32_t j = 0; j < DS_MAX_B; j++)
                        if (j < a.n_out) ll_put(ll.tok + M.out_rows[j], (uint32_t)pick[j], ep_pick);
                }
            }
        }
        if (more) {
            if (tid < B) {
                const int64_t o[1] = {tid};
                const bool on[1] = {true};
                uint64_t w[1] = {ll_load(ll.tok + tid)};
                ll_settle_n(ll.tok, o, on, w, ep_pick);
                M.tok[tid] = (int32_t)(uint32_t)w[0];
                __threadfence(); /* the other blocks' KV rows, read by the next step */
            }
            ds_sync();
            ep0 += ep_stride;
            R.t0 += R.n_tiles;
        }
    }
}

/* ---- host ---- */

/* The shared-memory plan for a grid of G blocks: the ring stage (the largest tile any block
 * gets), how many stages fit beside the rest, the LM-head rows a tile. */
struct ds_plan {
    uint32_t stage_bytes;
    int32_t n_stages, xr_floats;
    size_t smem;
};

static bool ds_plan_for(const tinfer_op_cuda_step_model *m, const tinfer_op_cuda_kv *kv,
                        int32_t G, ds_plan *P) {
    const int64_t D = kv->head_dim, Q = (int64_t)kv->n_head * D;
    const int64_t QKV = Q + 2 * (int64_t)kv->n_head_kv * D, E = m->n_embd, F = m->n_ff;
    if (G < 1 || E < 8 || E > NORM_PER_THREAD * DS_THREADS) return false; /* stage_norm's */
    auto most = [G](int64_t N) { return (N + G - 1) / G; }; /* rows a block gets at most */
    if (DS_MAX_B * most(E) > DS_THREADS) return false; /* embed: an own row of x a thread */
    const int64_t xr = (DS_MAX_B * most(E) + 3) / 4 * 4;   /* floats, 16-byte multiple */
    int64_t tile = E + most(QKV) * E; /* ring tiles (tile_of), in elements; ds_na keeps it */
    tile = std::max(tile, most(E) * Q);
    tile = std::max(tile, E + 2 * most(F) * E);
    tile = std::max(tile, most(E) * F);
    tile = (tile * 2 + 127) / 128 * 128; /* bytes, stages 128-byte aligned */
    const int64_t LDX = mma_staged_ld((int32_t)std::max(E, std::max(Q, F)));
    const size_t att = D == 64 ? sizeof(ds_att_smem<64>) : sizeof(ds_att_smem<128>);
    const size_t rest = DS_MAX_STAGES * 16 + DS_WARPS * DS_MAX_B * 8 +
                        (size_t)DS_MAX_B * (size_t)LDX * 2 + (size_t)DS_MMA_RED * 4 +
                        2 * (size_t)DS_MAX_B * (size_t)(D / 2) * 4 +
                        (size_t)(DS_WARPS + 1) * DS_MAX_B * 4 + (size_t)xr * 4 +
                        (size_t)m->n_layer * sizeof(tinfer_op_cuda_step_layer) + att +
                        sizeof(ds_meta) + 16;
    if (rest + 2 * (size_t)tile > TINFER_OP_CUDA_STEP_MAX_SMEM) return false;
    P->stage_bytes = (uint32_t)tile;
    P->n_stages = (int32_t)std::min<int64_t>(DS_MAX_STAGES,
                                             (TINFER_OP_CUDA_STEP_MAX_SMEM - rest) / tile);
    P->xr_floats = (int32_t)xr;
    P->smem = (size_t)P->n_stages * (size_t)tile + rest;
    return true;
}

extern "C" size_t tinfer_op_cuda_step_ll_words(const tinfer_op_cuda_step_model *m,
                                               const tinfer_op_cuda_kv *kv, int32_t n_max) {
    const int64_t Q = (int64_t)kv->n_head * kv->head_dim;
    const int64_t QKV = Q + 2 * (int64_t)kv->n_head_kv * kv->head_dim;
    return (size_t)n_max * (size_t)(2 * (int64_t)m->n_embd + QKV + Q + m->n_ff + 1);
}

extern "C" bool tinfer_op_cuda_step_ok(const tinfer_op_cuda_step_model *m,
                                       const tinfer_op_cuda_kv *kv, int32_t n, int32_t max_len,
                                       int32_t grid) {
    if (!m || !kv || n < 1 || n > DS_MAX_B || max_len > DS_MAX_KEYS) return false;
    if (kv->head_dim != 64 && kv->head_dim != 128) return false;
    if (kv->n_head_kv < 1 || kv->n_head % kv->n_head_kv) return false;
    const int64_t Q = (int64_t)kv->n_head * kv->head_dim;
    if (m->n_embd % 8 || m->n_ff % 8 || Q % 8) return false;
    if (Q < DS_THREADS || m->n_ff < DS_THREADS) return false; /* stage_copy's stepping */
    ds_plan P;
    return ds_plan_for(m, kv, grid, &P);
}

template <int D, int NB>
static tinfer_status ds_launch(const ds_args &a, int32_t grid, size_t smem, cudaStream_t stream,
                               tinfer_err *err) {
    /* per instance: the shared-memory opt-in, once per device (bit d: device d, d < 64; a
     * larger ordinal asks every launch); several host threads may race to set a bit, harmlessly */
    static unsigned long long attr_devs;
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    const unsigned long long bit = dev >= 0 && dev < 64 ? 1ull << dev : 0;
    if (e == cudaSuccess && !(__atomic_load_n(&attr_devs, __ATOMIC_ACQUIRE) & bit))
        e = cudaFuncSetAttribute(decode_step_kernel<D, NB>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 TINFER_OP_CUDA_STEP_MAX_SMEM);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return tinfer_err_set(err, TINFER_ERR_CUDA, "decode_step: shared memory opt-in: %s",
                              cudaGetErrorString(e));
    }
    __atomic_fetch_or(&attr_devs, bit, __ATOMIC_RELEASE);
    void *args[] = {(void *)&a};
    e = cudaLaunchCooperativeKernel((const void *)decode_step_kernel<D, NB>, dim3(grid),
                                    dim3(DS_BLOCK), args, smem, stream);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return tinfer_err_set(err, TINFER_ERR_CUDA, "kernel decode_step failed at %s:%d: %s",
                              __FILE__, __LINE__, cudaGetErrorString(e));
    }
    return TINFER_OK;
}

/* The instance for n tokens: NB 1 for one (the greedy decode of a single stream, the case the
 * fused step is for), NB 2 for two (CUDA-core phases, decode_step_mma.cuh's DS_CC_MAX), else NB 8
 * (tensor-core phases; its token loops skip the tokens past n). Three instances a head size,
 * each with every phase inlined, keep the kernel's code within reason. */
template <int D>
static tinfer_status ds_launch_n(const ds_args &a, int32_t grid, size_t smem, cudaStream_t stream,
                                 tinfer_err *err) {
    if (a.n <= 1) return ds_launch<D, 1>(a, grid, smem, stream, err);
    if (a.n <= DS_CC_MAX) return ds_launch<D, DS_CC_MAX>(a, grid, smem, stream, err);
    return ds_launch<D, 8>(a, grid, smem, stream, err);
}

extern "C" tinfer_status tinfer_op_cuda_decode_steps(const tinfer_op_cuda_step_model *m,
                                                     const tinfer_op_cuda_kv *kv,
                                                     const tinfer_op_cuda_step_bufs *b,
                                                     const int32_t *tok, const int32_t *pos,
                                                     const int32_t *seq, const int32_t *out_rows,
                                                     int32_t n, int32_t n_out, int32_t n_steps,
                                                     int32_t max_len, uint64_t *trace,
                                                     cudaStream_t stream, tinfer_err *err) {
    TOPS_REQUIRE(err, m && kv && b && tok && pos && seq && (n_out == 0 || out_rows),
                 "decode_step", "NULL argument");
    TOPS_REQUIRE(err, b->bar && b->ll && (n_out == 0 || b->logits), "decode_step",
                 "NULL buffer");
    TOPS_REQUIRE(err, !b->amax == !b->ids, "decode_step", "amax and ids: both or neither");
    TOPS_REQUIRE(err, n >= 1 && n <= DS_MAX_B, "decode_step", "n %d outside [1, %d]", n,
                 DS_MAX_B);
    TOPS_REQUIRE(err, n <= b->n_max, "decode_step", "n %d over the buffers' %d", n, b->n_max);
    TOPS_REQUIRE(err, n_out >= 0 && n_out <= n, "decode_step", "n_out %d outside [0, %d]", n_out,
                 n);
    TOPS_REQUIRE(err, max_len <= DS_MAX_KEYS, "decode_step", "max_len %d over %d", max_len,
                 DS_MAX_KEYS);
    TOPS_REQUIRE(err, n_steps >= 1 && n_steps <= TINFER_OP_CUDA_STEP_MAX_STEPS, "decode_step",
                 "n_steps %d outside [1, %d]", n_steps, TINFER_OP_CUDA_STEP_MAX_STEPS);
    TOPS_REQUIRE(err, n_steps == 1 || (b->ids && n_out == n && !trace), "decode_step",
                 "%d steps: each needs every token's greedy pick (ids, n_out = n) and no trace",
                 n_steps);
    tinfer_cuda_facts f; /* the grid: one block per SM */
    tinfer_status rc = tinfer_cuda_current_facts(&f, err);
    if (rc != TINFER_OK) return rc;
    TOPS_REQUIRE(err, tinfer_op_cuda_step_ok(m, kv, n, max_len, f.n_sm), "decode_step",
                 "shape not supported (n %d, max_len %d, head_dim %d): check "
                 "tinfer_op_cuda_step_ok first",
                 n, max_len, kv->head_dim);
    ds_plan P;
    (void)ds_plan_for(m, kv, f.n_sm, &P); /* true: step_ok said so */
    const int64_t E = m->n_embd, Q = (int64_t)kv->n_head * kv->head_dim;
    const int64_t QKV = Q + 2 * (int64_t)kv->n_head_kv * kv->head_dim, N = b->n_max;
    ds_args a;
    memset(&a, 0, sizeof a);
    a.m = *m;
    a.kv = *kv;
    a.b = *b;
    a.ll.xa = b->ll;
    a.ll.xb = a.ll.xa + N * E;
    a.ll.qkv = a.ll.xb + N * E;
    a.ll.att = a.ll.qkv + N * QKV;
    a.ll.act = a.ll.att + N * Q;
    a.ll.tok = a.ll.act + N * m->n_ff; /* [N]: tinfer_op_cuda_step_ll_words in all */
    a.tok = tok;
    a.pos = pos;
    a.seq = seq;
    a.out_rows = out_rows;
    a.n = n;
    a.n_out = n_out;
    a.n_steps = n_steps;
    a.trace = trace;
    a.stage_bytes = P.stage_bytes;
    a.n_stages = P.n_stages;
    a.xr_floats = P.xr_floats;
    return kv->head_dim == 64 ? ds_launch_n<64>(a, f.n_sm, P.smem, stream, err)
                              : ds_launch_n<128>(a, f.n_sm, P.smem, stream, err);
}

extern "C" tinfer_status tinfer_op_cuda_decode_step(const tinfer_op_cuda_step_model *m,
                                                    const tinfer_op_cuda_kv *kv,
                                                    const tinfer_op_cuda_step_bufs *b,
                                                    const int32_t *tok, const int32_t *pos,
                                                    const int32_t *seq, const int32_t *out_rows,
                                                    int32_t n, int32_t n_out, int32_t max_len,
                                                    uint64_t *trace, cudaStream_t stream,
                                                    tinfer_err *err) {
    return tinfer_op_cuda_decode_steps(m, kv, b, tok, pos, seq, out_rows, n, n_out, 1, max_len,
                                       trace, stream, err);
}
