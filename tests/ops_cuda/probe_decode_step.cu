/*
 * probe_decode_step.cu — where the fused decode step's time goes (ops/cuda/decode_step.cu): a
 * lab probe, not a test. Random BF16 weights of a Llama configuration (SmolLM2-135M's unless
 * told otherwise) and a random KV cache of `ctx` rows per sequence on the device; the step is
 * timed (CUDA events, median of reps) and then run once with its phase trace, from which each
 * phase gets two numbers, averaged over the layers:
 *   path     from the previous phase's end (its last block) to this phase's end (the phase's
 *            share of the critical path),
 *   inputs   from the previous phase's end to the moment the last block had this phase's
 *            inputs staged (how long the values take to travel between blocks);
 * and three spans of a block's own, the largest over the blocks: weights (from entering the
 * phase until its weight tile had landed), compute (inputs and weights there until its outputs
 * were written), tail (issuing the next tile).
 *
 *   probe-decode-step [--batch 1,8] [--ctx 64] [--reps 20] [--l2-persist MiB] [--steps S]
 *                     [--config E,H,HKV,D,F,L,V]   (default 576,9,3,64,1536,30,49152)
 * --steps also times S greedy steps (each fed the last one's picks) both ways, in alternating
 * rounds: S launches back to back (tinfer_op_cuda_decode_step), and one launch of S steps
 * (tinfer_op_cuda_decode_steps); us a step, median of reps.
 * --l2-persist keeps up to that many MiB of the LM head in L2 from step to step (a persisting
 * access-policy window over it on the step's stream).
 * Exit 77 without a GPU, 1 on a CUDA error or a non-finite logit.
 */
#include "test_ops_cuda.h" /* CK, and the ops header */

#include <algorithm>

/* dst[i] = BF16 of a uniform value in [-scale, scale) from a hash of (i, seed); scale 0: 1.0 */
static __global__ void fill_bf16(uint16_t *dst, size_t n, uint32_t seed, float scale) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ (uint32_t)(i >> 32) ^ seed * 40503u;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        const float v = scale == 0.0f ? 1.0f : ((float)(h & 0xffffu) / 32768.0f - 1.0f) * scale;
        dst[i] = (uint16_t)(__float_as_uint(v) >> 16);
    }
}

static uint16_t *dev_bf16(size_t n, uint32_t seed, float scale) {
    uint16_t *p = NULL;
    CK(cudaMalloc((void **)&p, n * 2));
    fill_bf16<<<1024, 256>>>(p, n, seed, scale);
    CK(cudaGetLastError());
    return p;
}

static int parse_list(const char *s, int *out, int cap) {
    int n = 0;
    for (const char *p = s; *p && n < cap;) {
        out[n++] = atoi(p);
        p = strchr(p, ',');
        if (!p) break;
        p++;
    }
    return n;
}

int main(int argc, char **argv) {
    int batches[8] = {1, 8}, n_b = 2, ctx = 64, reps = 20, l2_mb = 0, n_steps = 0;
    int cfg[7] = {576, 9, 3, 64, 1536, 30, 49152};
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--batch"))
            n_b = parse_list(argv[i + 1], batches, 8);
        else if (!strcmp(argv[i], "--ctx"))
            ctx = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps"))
            n_steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--l2-persist"))
            l2_mb = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--config")) {
            if (parse_list(argv[i + 1], cfg, 7) != 7) {
                fprintf(stderr, "--config: E,H,HKV,D,F,L,V\n");
                return 2;
            }
        } else {
            fprintf(stderr, "unknown option %s\n", argv[i]);
            return 2;
        }
    }
    cudaDeviceProp prop;
    if (!probe_device(&prop)) return 77;
    const int E = cfg[0], H = cfg[1], HKV = cfg[2], D = cfg[3], F = cfg[4], L = cfg[5], V = cfg[6];
    const int Q = H * D, KVD = HKV * D, QKV = Q + 2 * KVD, N_CTX = 1024, MAXB = 8;
    const int grid = prop.multiProcessorCount;

    /* the model: random weights, unit norms, tied LM head */
    std::vector<tinfer_op_cuda_step_layer> hl(L);
    std::vector<void *> owned;
    uint32_t seed = 1;
    uint16_t *ones = dev_bf16((size_t)E, 0, 0.0f);
    owned.push_back(ones);
    for (int l = 0; l < L; l++) {
        uint16_t *wqkv = dev_bf16((size_t)QKV * E, seed++, 0.05f),
                 *wo = dev_bf16((size_t)E * Q, seed++, 0.05f),
                 *wgu = dev_bf16((size_t)2 * F * E, seed++, 0.05f),
                 *wdown = dev_bf16((size_t)E * F, seed++, 0.05f);
        owned.insert(owned.end(), {wqkv, wo, wgu, wdown});
        hl[l] = {ones, wqkv, NULL, wo, NULL, ones, wgu, wdown};
    }
    tinfer_op_cuda_step_layer *dl = NULL;
    CK(cudaMalloc((void **)&dl, L * sizeof *dl));
    CK(cudaMemcpy(dl, hl.data(), L * sizeof *dl, cudaMemcpyHostToDevice));
    uint16_t *embd = dev_bf16((size_t)V * E, seed++, 0.5f);
    std::vector<float> inv(D / 2);
    for (int j = 0; j < D / 2; j++)
        inv[j] = 1.0f / (float)pow(10000.0, (double)(2 * j) / D);
    float *d_inv = NULL;
    CK(cudaMalloc((void **)&d_inv, inv.size() * 4));
    CK(cudaMemcpy(d_inv, inv.data(), inv.size() * 4, cudaMemcpyHostToDevice));
    const tinfer_op_cuda_step_model m = {L, E, F, V, 1e-5f, dl, embd, ones, embd, d_inv};

    /* the context: a random cache of MAXB sequences, the step's buffers */
    const size_t cache = (size_t)MAXB * L * N_CTX * KVD;
    tinfer_op_cuda_kv kv = {dev_bf16(cache, seed++, 1.0f), dev_bf16(cache, seed++, 1.0f), MAXB, L,
                            N_CTX, H, HKV, D};
    tinfer_op_cuda_step_bufs b;
    const size_t ll_bytes = tinfer_op_cuda_step_ll_words(&m, &kv, MAXB) * 8;
    CK(cudaMalloc((void **)&b.logits, (size_t)MAXB * V * 4));
    CK(cudaMalloc((void **)&b.bar, 8));
    CK(cudaMemset(b.bar, 0, 8));
    CK(cudaMalloc((void **)&b.ll, ll_bytes));
    CK(cudaMemset(b.ll, 0, ll_bytes));
    b.n_max = MAXB;
    CK(cudaMalloc((void **)&b.amax, MAXB * 8)); /* greedy picks in the step, as the backend has */
    CK(cudaMemset(b.amax, 0, MAXB * 8));
    const int S = std::max(1, n_steps);
    CK(cudaMalloc((void **)&b.ids, (size_t)S * MAXB * 4));
    int32_t h_meta[4 * MAXB], *d_meta = NULL;
    for (int j = 0; j < MAXB; j++) {
        h_meta[j] = (j * 7919 + 13) % V; /* tok */
        h_meta[MAXB + j] = ctx;           /* pos: ctx cached rows before it */
        h_meta[2 * MAXB + j] = j;         /* seq */
        h_meta[3 * MAXB + j] = j;         /* out_rows */
    }
    CK(cudaMalloc((void **)&d_meta, sizeof h_meta));
    CK(cudaMemcpy(d_meta, h_meta, sizeof h_meta, cudaMemcpyHostToDevice));
    const int n_ph = TINFER_OP_CUDA_STEP_PHASES(L);
    uint64_t *d_trace = NULL;
    CK(cudaMalloc((void **)&d_trace, (size_t)n_ph * grid * 4 * 8));
    std::vector<uint64_t> tr((size_t)n_ph * grid * 4);
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    if (l2_mb > 0) { /* keep up to l2_mb MiB of the LM head in L2 across steps */
        const size_t want = std::min((size_t)l2_mb << 20, (size_t)prop.persistingL2CacheMaxSize);
        const size_t lm = (size_t)V * E * 2;
        const size_t win = std::min(lm, (size_t)prop.accessPolicyMaxWindowSize);
        CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, want));
        cudaStreamAttrValue at = {};
        at.accessPolicyWindow.base_ptr = embd;
        at.accessPolicyWindow.num_bytes = win;
        at.accessPolicyWindow.hitRatio = std::min(1.0f, (float)want / (float)win);
        at.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
        at.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
        CK(cudaStreamSetAttribute(st, cudaStreamAttributeAccessPolicyWindow, &at));
        printf("L2: %.1f of %.1f MiB persisting (max %.1f), window %.1f MiB of the LM head's "
               "%.1f, hit ratio %.2f\n",
               want / 1048576.0, prop.l2CacheSize / 1048576.0,
               prop.persistingL2CacheMaxSize / 1048576.0, win / 1048576.0, lm / 1048576.0,
               at.accessPolicyWindow.hitRatio);
    }
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaDeviceSynchronize());

    printf("probe-decode-step: %s, %d SMs; E %d, heads %d/%d x %d, F %d, %d layers, V %d; %d "
           "cached rows\n",
           prop.name, grid, E, H, HKV, D, F, L, V, ctx);
    /* S greedy steps of B sequences from position ctx: S launches, then one launch of S steps,
     * in alternating rounds; the picks of both ways must agree */
    int bad = 0;
    auto greedy_steps = [&](int B) {
        if (!tinfer_op_cuda_step_ok(&m, &kv, B, ctx + S, grid)) {
            printf("  %d greedy steps: over the fused step's keys\n", S);
            return;
        }
        std::vector<int32_t> hpos((size_t)S * B);
        for (int k = 0; k < S; k++)
            for (int j = 0; j < B; j++)
                hpos[(size_t)k * B + j] = ctx + k;
        int32_t *d_pos = NULL;
        CK(cudaMalloc((void **)&d_pos, hpos.size() * 4));
        CK(cudaMemcpy(d_pos, hpos.data(), hpos.size() * 4, cudaMemcpyHostToDevice));
        tinfer_err err;
        err.msg[0] = 0;
        tinfer_op_cuda_step_bufs bk = b;
        auto run = [&](bool one) {
            tinfer_status rc = TINFER_OK;
            if (one)
                rc = tinfer_op_cuda_decode_steps(&m, &kv, &b, d_meta, d_pos, d_meta + 2 * MAXB,
                                                 d_meta + 3 * MAXB, B, B, S, ctx + S, NULL, st,
                                                 &err);
            for (int k = 0; k < S && !one && rc == TINFER_OK; k++) {
                bk.ids = b.ids + (size_t)k * B;
                rc = tinfer_op_cuda_decode_step(
                    &m, &kv, &bk, k ? b.ids + (size_t)(k - 1) * B : d_meta, d_pos + (size_t)k * B,
                    d_meta + 2 * MAXB, d_meta + 3 * MAXB, B, B, ctx + S, NULL, st, &err);
            }
            if (rc != TINFER_OK) {
                fprintf(stderr, "decode_steps: %s\n", err.msg);
                exit(1);
            }
        };
        std::vector<float> ms[2];
        std::vector<int32_t> picks[2];
        for (int r = -1; r < reps; r++)
            for (int one = 0; one < 2; one++) {
                float t = 0;
                CK(cudaEventRecord(e0, st));
                run(one);
                CK(cudaEventRecord(e1, st));
                CK(cudaEventSynchronize(e1));
                CK(cudaEventElapsedTime(&t, e0, e1));
                if (r >= 0) ms[one].push_back(t);
                picks[one].resize((size_t)S * B);
                CK(cudaMemcpy(picks[one].data(), b.ids, picks[one].size() * 4,
                              cudaMemcpyDeviceToHost));
            }
        for (auto &v : ms)
            std::sort(v.begin(), v.end());
        printf("  %d greedy steps: %.1f us a step in %d launches, %.1f in one (median of %d)\n", S,
               1e3 * ms[0][reps / 2] / S, S, 1e3 * ms[1][reps / 2] / S, reps);
        if (picks[0] != picks[1]) {
            printf("  the picks of one launch differ from those of %d launches\n", S);
            bad = 1;
        }
        CK(cudaFree(d_pos));
    };
    for (int bi = 0; bi < n_b; bi++) {
        const int B = batches[bi];
        if (!tinfer_op_cuda_step_ok(&m, &kv, B, ctx + 1, grid)) {
            printf("batch %d: not supported by the fused step\n", B);
            continue;
        }
        tinfer_err err;
        err.msg[0] = 0;
        auto step = [&](uint64_t *trace) {
            const tinfer_status rc =
                tinfer_op_cuda_decode_step(&m, &kv, &b, d_meta, d_meta + MAXB, d_meta + 2 * MAXB,
                                           d_meta + 3 * MAXB, B, B, ctx + 1, trace, st, &err);
            if (rc != TINFER_OK) {
                fprintf(stderr, "decode_step: %s\n", err.msg);
                exit(1);
            }
        };
        for (int w = 0; w < 3; w++)
            step(NULL);
        std::vector<float> ms(reps);
        for (int r = 0; r < reps; r++) {
            CK(cudaEventRecord(e0, st));
            step(NULL);
            CK(cudaEventRecord(e1, st));
            CK(cudaEventSynchronize(e1));
            CK(cudaEventElapsedTime(&ms[r], e0, e1));
        }
        std::sort(ms.begin(), ms.end());
        step(d_trace);
        CK(cudaStreamSynchronize(st));
        CK(cudaMemcpy(tr.data(), d_trace, tr.size() * 8, cudaMemcpyDeviceToHost));
        std::vector<float> lg((size_t)B * V);
        CK(cudaMemcpy(lg.data(), b.logits, lg.size() * 4, cudaMemcpyDeviceToHost));
        for (float v : lg)
            if (!isfinite(v)) {
                bad = 1;
                break;
            }

        auto at = [&](int k, int blk, int w) {
            return (double)tr[((size_t)k * grid + blk) * 4 + w];
        };
        const char *names[7] = {"embed",           "A rmsnorm+qkv",     "B rope+kv+attention",
                                "C o+residual",    "D rmsnorm+gate/up", "E down+residual",
                                "LM head"};
        /* phase k, from the previous phase's last "done" (prev): path = its own last "done";
         * inputs = its last block to have the inputs staged; and the slowest block's own spans:
         * weights (entering the phase until its tile had landed), compute (inputs and weights
         * there until the outputs were written), tail (issuing the next tile) */
        enum { PATH, INP, WGT, CMP, TAIL, NCOL };
        double sum[7][NCOL] = {{0}}, cnt[7] = {0}, total = 0;
        auto last = [&](int k, int w) {
            double t = 0;
            for (int blk = 0; blk < grid; blk++)
                t = std::max(t, at(k, blk, w));
            return t;
        };
        for (int k = 1; k < n_ph; k++) {
            const int t = k == n_ph - 1 ? 6 : 1 + (k - 1) % 5;
            const double prev = last(k - 1, 3);
            double wgt = 0, cmp = 0, tail = 0;
            for (int blk = 0; blk < grid; blk++) {
                const double in = at(k - 1, blk, 3); /* the block entered the phase */
                const double ready = std::max(at(k, blk, 0), at(k, blk, 1));
                wgt = std::max(wgt, at(k, blk, 0) - in);
                cmp = std::max(cmp, at(k, blk, 2) - ready);
                tail = std::max(tail, at(k, blk, 3) - at(k, blk, 2));
            }
            sum[t][PATH] += last(k, 3) - prev;
            sum[t][INP] += last(k, 1) - prev;
            sum[t][WGT] += wgt;
            sum[t][CMP] += cmp;
            sum[t][TAIL] += tail;
            cnt[t]++;
            total += last(k, 3) - prev;
        }
        printf("\nbatch %d: step %.1f us (median of %d; min %.1f), tok/s %.0f\n", B,
               1e3 * ms[reps / 2], reps, 1e3 * ms[0], B / (1e-3 * ms[reps / 2]));
        printf("  %-22s %8s %8s %8s %8s %8s   (us, mean of layers; the last four: slowest "
               "block)\n",
               "phase", "path", "inputs", "weights", "compute", "tail");
        for (int t = 1; t < 7; t++) {
            printf("  %-22s", names[t]);
            for (int c = 0; c < NCOL; c++)
                printf(" %8.2f", sum[t][c] / cnt[t] / 1e3);
            printf("\n");
        }
        printf("  embed (start to last write) %.2f us; embed to end %.1f us over %d phases\n",
               (last(0, 3) - last(0, 1)) / 1e3, total / 1e3, n_ph - 1);
        if (n_steps > 1) greedy_steps(B);
    }
    for (void *p : owned)
        cudaFree(p);
    if (bad) {
        printf("FAIL: a non-finite logit, or greedy picks that differ between the two ways\n");
        return 1;
    }
    return 0;
}
