/*
 * probe_hops.cu — two device facts that bound the design of a fused decode step
 * (ops/cuda/decode_step.cu): a lab probe, not a test.
 *   stream   DRAM read bandwidth by the number of SMs streaming (one block per SM, each its own
 *            slice of a 2 GiB buffer, far past L2, through a ring of 6 x 32 KB shared-memory
 *            stages), filled either by one warp's 16-byte cp.async (the step's weight ring) or by
 *            one thread's bulk copies (cp.async.bulk); median of 5 timed runs.
 *   cluster  one exchange between the blocks of a thread-block cluster: every block writes W
 *            words into every block's shared memory (distributed shared memory), then the cluster
 *            barrier; mean over 20,000 rounds, best of 3.
 * A step of one small model on one 16-block cluster would need its 5 hops a layer to beat the
 * flagged-word hop between all SMs (~1 us); these numbers say whether they can, and how much
 * bandwidth 16 SMs have for the weights.
 *
 *   probe-hops
 * Exit 77 without a GPU, 1 on a CUDA error.
 */
#include "gemm/cuda/mbar.cuh"
#include "test_ops_cuda.h" /* CK */

#include <algorithm>
#include <cooperative_groups.h>
#include <vector>

namespace cg = cooperative_groups;

#define PH_STAGES 6
#define PH_STAGE (32u * 1024u)

/* Block b streams per_block bytes of src from b * per_block: the ring's producer is warp 0
 * (BULK: lane 0 alone, two 16 KB bulk copies a stage; else every lane, 16 bytes at a time), the
 * consumer warp 1 waits for each stage and frees it at once (one byte read, so the stage is used). */
template <bool BULK>
static __global__ void __launch_bounds__(64, 1)
    stream_kernel(const unsigned char *src, size_t per_block, unsigned long long *sink) {
    extern __shared__ __align__(128) unsigned char sm[];
    uint64_t *full = (uint64_t *)(sm + (size_t)PH_STAGES * PH_STAGE), *empty = full + PH_STAGES;
    const int tid = threadIdx.x, lane = tid & 31;
    if (tid == 0) {
        for (int s = 0; s < PH_STAGES; s++) {
            mbar_init(&full[s], BULK ? 1 : 32);
            mbar_init(&empty[s], 32);
        }
        mbar_init_fence();
    }
    __syncthreads();
    const unsigned char *base = src + (size_t)blockIdx.x * per_block;
    const int n = (int)(per_block / PH_STAGE);
    if (tid < 32) {
        for (int t = 0; t < n; t++) {
            const int s = t % PH_STAGES;
            if (t >= PH_STAGES) mbar_wait(&empty[s], (uint32_t)(t / PH_STAGES - 1) & 1u);
            unsigned char *dst = sm + (size_t)s * PH_STAGE;
            const unsigned char *g = base + (size_t)t * PH_STAGE;
            if (BULK) {
                if (lane == 0) {
                    mbar_expect_tx(&full[s], PH_STAGE);
                    for (uint32_t o = 0; o < PH_STAGE; o += 16384)
                        bulk_g2s(dst + o, g + o, 16384, &full[s]);
                }
            } else {
                for (uint32_t o = (uint32_t)lane * 16; o < PH_STAGE; o += 512)
                    cp_async16_cg(dst + o, g + o);
                cp_async_arrive(&full[s]);
            }
        }
    } else {
        unsigned long long acc = 0;
        for (int t = 0; t < n; t++) {
            const int s = t % PH_STAGES;
            mbar_wait(&full[s], (uint32_t)(t / PH_STAGES) & 1u);
            acc += sm[(size_t)s * PH_STAGE + lane * 16];
            mbar_arrive(&empty[s]);
        }
        if (acc == 1) *sink = acc; /* never (every byte is 0x5a): keeps the reads */
    }
}

/* Rounds of: every block writes its W words into every block's buffer, then the cluster
 * barrier; the next round reads what arrived, so no round can be skipped. */
static __global__ void cluster_kernel(int rounds, int W, float *out, unsigned long long *ns) {
    __shared__ float buf[2][16 * 256];
    cg::cluster_group cl = cg::this_cluster();
    const int r = (int)cl.block_rank(), C = (int)cl.num_blocks();
    float acc = 0.0f;
    cl.sync();
    uint64_t t0, t1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (int it = 0; it < rounds; it++) {
        float *mine = buf[it & 1];
        for (int t = threadIdx.x; t < W * C; t += blockDim.x) {
            float *dst = cl.map_shared_rank(mine, t / W);
            dst[r * W + t % W] = acc + (float)t;
        }
        cl.sync();
        if (W) acc += mine[(threadIdx.x * 7) % (W * C)];
    }
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    if (threadIdx.x == 0) {
        out[blockIdx.x] = acc;
        if (blockIdx.x == 0) *ns = t1 - t0;
    }
}

int main(void) {
    cudaDeviceProp prop;
    if (!probe_device(&prop)) return 77;
    printf("probe-hops: %s, %d SMs\n", prop.name, prop.multiProcessorCount);

    const size_t total = (size_t)2 << 30;
    unsigned char *buf = NULL;
    unsigned long long *sink = NULL;
    CK(cudaMalloc((void **)&buf, total));
    CK(cudaMalloc((void **)&sink, 8));
    CK(cudaMemset(buf, 0x5a, total));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const size_t smem = (size_t)PH_STAGES * PH_STAGE + 2 * PH_STAGES * 8;
    CK(cudaFuncSetAttribute(stream_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)smem));
    CK(cudaFuncSetAttribute(stream_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)smem));
    printf("\nstream: DRAM -> shared memory, one block per SM (GB/s in all, per SM)\n");
    for (int bulk = 0; bulk < 2; bulk++)
        for (int G : {1, 4, 8, 16, 32, 66, 132}) {
            if (G > prop.multiProcessorCount) continue;
            const size_t per = std::min(total / G, (size_t)256 << 20) / PH_STAGE * PH_STAGE;
            std::vector<float> ms;
            for (int rep = 0; rep < 6; rep++) {
                CK(cudaEventRecord(e0));
                if (bulk)
                    stream_kernel<true><<<G, 64, smem>>>(buf, per, sink);
                else
                    stream_kernel<false><<<G, 64, smem>>>(buf, per, sink);
                CK(cudaGetLastError());
                CK(cudaEventRecord(e1));
                CK(cudaEventSynchronize(e1));
                float t = 0;
                CK(cudaEventElapsedTime(&t, e0, e1));
                if (rep) ms.push_back(t); /* the first is a warm-up */
            }
            std::sort(ms.begin(), ms.end());
            const double gbs = (double)per * G / (ms[ms.size() / 2] * 1e-3) / 1e9;
            printf("  %-8s %3d SMs: %7.1f GB/s  %6.1f per SM\n", bulk ? "bulk" : "cp.async", G,
                   gbs, gbs / G);
        }

    float *out = NULL;
    unsigned long long *d_ns = NULL;
    CK(cudaMalloc((void **)&out, 64 * sizeof(float)));
    CK(cudaMalloc((void **)&d_ns, 8));
    CK(cudaFuncSetAttribute(cluster_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    printf("\ncluster: W words a block into every block's shared memory, then the barrier (ns a "
           "round)\n");
    for (int C : {2, 4, 8, 16}) {
        cudaLaunchConfig_t cfg = {};
        cudaLaunchAttribute at[1];
        at[0].id = cudaLaunchAttributeClusterDimension;
        at[0].val.clusterDim.x = (unsigned)C;
        at[0].val.clusterDim.y = 1;
        at[0].val.clusterDim.z = 1;
        cfg.attrs = at;
        cfg.numAttrs = 1;
        cfg.blockDim = dim3(256);
        cfg.gridDim = dim3((unsigned)C);
        printf("  %2d blocks:", C);
        for (int W : {0, 8, 36, 64, 192}) {
            const int rounds = 20000;
            double best = 1e30;
            for (int rep = 0; rep < 3; rep++) {
                CK(cudaLaunchKernelEx(&cfg, cluster_kernel, rounds, W, out, d_ns));
                CK(cudaDeviceSynchronize());
                unsigned long long h = 0;
                CK(cudaMemcpy(&h, d_ns, 8, cudaMemcpyDeviceToHost));
                best = std::min(best, (double)h / rounds);
            }
            printf("  W %3d %5.0f", W, best);
        }
        printf("\n");
    }
    return 0;
}
