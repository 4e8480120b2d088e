/*
 * test_ops_cuda.h — what the two halves of test-ops-cuda share: the seeded generator, checked
 * CUDA calls, device buffers with guard bands, the failure counter.
 */
#ifndef TINFER_TEST_OPS_CUDA_H
#define TINFER_TEST_OPS_CUDA_H

#include "base/dtype.h"
#include "ops/cuda/ops_cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* An entry point that must succeed. */
#define CKT(call)                                                                                  \
    do {                                                                                           \
        tinfer_err e_;                                                                             \
        e_.msg[0] = 0;                                                                             \
        tinfer_status s_ = (call);                                                                 \
        if (s_ != TINFER_OK) {                                                                     \
            fprintf(stderr, "%s:%d: %s: status %d: %s\n", __FILE__, __LINE__, #call, (int)s_,      \
                    e_.msg);                                                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* The probes' start: device 0's properties; false (after printing SKIP: the probe then exits 77)
 * where there is no GPU. */
static inline bool probe_device(cudaDeviceProp *prop) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("SKIP: no CUDA device\n");
        return false;
    }
    CK(cudaGetDeviceProperties(prop, 0));
    return true;
}

/* Elements of sentinel before and after every output buffer. */
#define GUARD 64
#define SENT_F32 0x7FBFFFFFu /* a NaN: an unwritten output element fails the NaN check */
#define SENT_BF16 ((uint16_t)0x7FBFu)
#define SENT_I32 0x7EADBEEF

extern int g_fail;
extern int g_cases;
extern cudaStream_t g_stream;

uint32_t rnd_u32(void);
/* Uniform in [-scale, scale), never exactly 0 (a zero input could hide an unwritten output). */
float rnd_f(float scale);
static inline uint16_t rnd_bf16(float scale) { return tinfer_f32_to_bf16(rnd_f(scale)); }

/* A device buffer of n elements of T with GUARD sentinel elements on each side (p: the first
 * element inside). `off` extra elements shift p (0 keeps it 16-byte aligned; 1 misaligns it). */
template <typename T> struct dbuf {
    T *base = nullptr;
    T *p = nullptr;
    size_t n = 0, off = 0;
    T sent;
    void alloc(size_t count, T sentinel, size_t offset = 0) {
        n = count;
        off = offset;
        sent = sentinel;
        CK(cudaMalloc(&base, (n + off + 2 * GUARD) * sizeof(T)));
        std::vector<T> h(n + off + 2 * GUARD, sentinel);
        CK(cudaMemcpy(base, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
        /* a pageable copy may return before its DMA lands, and the kernels run on a
         * non-blocking stream: wait, or the fill can land after (and over) a kernel's output */
        CK(cudaDeviceSynchronize());
        p = base + GUARD + off;
    }
    void put(const T *src, size_t count) {
        CK(cudaMemcpy(p, src, count * sizeof(T), cudaMemcpyHostToDevice));
        CK(cudaDeviceSynchronize()); /* as in alloc */
    }
    void put(const std::vector<T> &v) { put(v.data(), v.size()); }
    std::vector<T> get() const {
        std::vector<T> h(n);
        CK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
        return h;
    }
    /* 0 when both guard bands still hold the sentinel. */
    int guards_ok(const char *label) const {
        std::vector<T> h(n + off + 2 * GUARD);
        CK(cudaMemcpy(h.data(), base, h.size() * sizeof(T), cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < h.size(); i++) {
            if (i >= GUARD + off && i < GUARD + off + n) continue;
            if (memcmp(&h[i], &sent, sizeof(T))) {
                printf("FAIL %s: guard element %lld overwritten\n", label,
                       (long long)i - (long long)(GUARD + off));
                return 1;
            }
        }
        return 0;
    }
    void free_() {
        if (base) CK(cudaFree(base));
        base = p = nullptr;
    }
};

/* Records one case's verdict (nonzero bad = failed) and prints a line for failures. */
void verdict(const char *label, int bad);
/* The lowest index of a row's maximum, NaN skipped; 0 for a row of only NaN (the argmax rule). */
int32_t argmax_ref(const float *r, int32_t V);

void test_attention_all(int quick);
void test_attention_decode_rope_all(int quick);
void test_decode_step_all(int quick);
void test_decode_step_host(void);
void test_lm_argmax_all(int quick);
void test_lm_argmax_host(void);

#endif
