/*
 * test_convert_quant.c — known-answer tests for the converter's block dequantization (F16, Q4_0,
 * Q4_1, Q5_0, Q5_1, Q8_0 on hand-built blocks) and the Q/K RoPE row un-permutation.
 *
 * Expected values are worked out by hand from the block layouts in
 * ggml-common.h and written as literals; every comparison is exact because each value is a small
 * integer times a power-of-two scale (exactly representable in float).
 */
#include "test_util.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "quant.h"
#include "gguf.h"


static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

static void test_f16(void) {
    /* bit pattern -> value (IEEE 754 binary16) */
    const struct { uint16_t h; float v; } cases[] = {
        {0x0000, 0.0f},        {0x3C00, 1.0f},           {0xC000, -2.0f},
        {0x3800, 0.5f},        {0x0001, 5.9604645e-08f}, /* smallest subnormal 2^-24 */
        {0x03FF, 6.0975552e-05f}, /* largest subnormal 1023 * 2^-24 */
        {0x8001, -5.9604645e-08f},
        {0x0400, 6.1035156e-05f}, /* smallest normal 2^-14 */
        {0x7BFF, 65504.0f},    {0x3555, 0.33325195f},
    };
    enum { N = sizeof cases / sizeof cases[0] };
    uint8_t buf[2 * N];
    float out[N];
    for (int i = 0; i < N; i++) put16(buf + 2 * i, cases[i].h);
    CHECK(quant_dequantize(GGML_T_F16, buf, N, out), "F16 dequantize failed");
    for (int i = 0; i < N; i++)
        CHECK(out[i] == cases[i].v, "F16 0x%04x -> %.9g, want %.9g", cases[i].h, out[i],
              cases[i].v);
    uint8_t sp[6];
    put16(sp, 0x7C00);     /* +inf */
    put16(sp + 2, 0x7E00); /* NaN */
    put16(sp + 4, 0x8000); /* -0 */
    CHECK(quant_dequantize(GGML_T_F16, sp, 3, out), "F16 specials");
    CHECK(isinf(out[0]) && out[0] > 0, "F16 0x7C00 should be +inf");
    CHECK(isnan(out[1]), "F16 0x7E00 should be NaN");
    CHECK(out[2] == 0.0f && signbit(out[2]), "F16 0x8000 should be -0");
}

static void test_q8_0(void) {
    uint8_t b[34];
    put16(b, 0x3800); /* d = 0.5 */
    for (int j = 0; j < 32; j++) b[2 + j] = (uint8_t)(int8_t)(j - 16);
    b[2 + 5] = (uint8_t)(int8_t)-128;
    b[2 + 6] = 127;
    float y[32];
    CHECK(quant_dequantize(GGML_T_Q8_0, b, 32, y), "Q8_0 dequantize failed");
    CHECK(y[0] == -8.0f && y[16] == 0.0f && y[31] == 7.5f, "Q8_0 got %g %g %g", y[0], y[16], y[31]);
    CHECK(y[5] == -64.0f && y[6] == 63.5f, "Q8_0 extremes got %g %g", y[5], y[6]);
    for (int j = 7; j < 32; j++) CHECK(y[j] == 0.5f * (float)(j - 16), "Q8_0 y[%d] = %g", j, y[j]);
}

static void test_q4_1(void) {
    uint8_t b[40]; /* two blocks: the second checks the block stride */
    put16(b, 0x4000);      /* d = 2 */
    put16(b + 2, 0xBC00);  /* m = -1 */
    for (int j = 0; j < 16; j++) b[4 + j] = (uint8_t)(j | ((15 - j) << 4));
    put16(b + 20, 0x3C00); /* d = 1 */
    put16(b + 22, 0x4500); /* m = 5 */
    for (int j = 0; j < 16; j++) b[24 + j] = 0xF0; /* low nibble 0, high 15 */
    float y[64];
    CHECK(quant_dequantize(GGML_T_Q4_1, b, 64, y), "Q4_1 dequantize failed");
    /* low nibbles fill y[0..15], high nibbles y[16..31] */
    CHECK(y[0] == -1.0f && y[1] == 1.0f && y[15] == 29.0f, "Q4_1 low half %g %g %g", y[0], y[1],
          y[15]);
    CHECK(y[16] == 29.0f && y[17] == 27.0f && y[31] == -1.0f, "Q4_1 high half %g %g %g", y[16],
          y[17], y[31]);
    CHECK(y[32] == 5.0f && y[47] == 5.0f && y[48] == 20.0f && y[63] == 20.0f,
          "Q4_1 block 2 %g %g %g %g", y[32], y[47], y[48], y[63]);
}

static void test_q4_0_q5(void) {
    uint8_t b[24];
    float y[32];
    put16(b, 0x3C00); /* Q4_0, d = 1 */
    for (int j = 0; j < 16; j++) b[2 + j] = (uint8_t)(j | (j << 4));
    CHECK(quant_dequantize(GGML_T_Q4_0, b, 32, y), "Q4_0 failed");
    CHECK(y[0] == -8.0f && y[15] == 7.0f && y[16] == -8.0f && y[31] == 7.0f, "Q4_0 %g %g %g %g",
          y[0], y[15], y[16], y[31]);

    put16(b, 0x3C00);        /* Q5_0, d = 1 */
    put32(b + 2, 0x00010001u); /* 5th bit set for value 0 and value 16 */
    memset(b + 6, 0xFF, 16);
    CHECK(quant_dequantize(GGML_T_Q5_0, b, 32, y), "Q5_0 failed");
    CHECK(y[0] == 15.0f && y[1] == -1.0f && y[16] == 15.0f && y[17] == -1.0f, "Q5_0 %g %g %g %g",
          y[0], y[1], y[16], y[17]);

    put16(b, 0x3800);        /* Q5_1, d = 0.5 */
    put16(b + 2, 0x3C00);    /* m = 1 */
    put32(b + 4, 0x80000000u); /* 5th bit only for value 31 */
    memset(b + 8, 0x21, 16); /* low nibble 1, high nibble 2 */
    CHECK(quant_dequantize(GGML_T_Q5_1, b, 32, y), "Q5_1 failed");
    CHECK(y[0] == 1.5f && y[15] == 1.5f && y[16] == 2.0f && y[30] == 2.0f && y[31] == 10.0f,
          "Q5_1 %g %g %g %g %g", y[0], y[15], y[16], y[30], y[31]);
}

static void test_rejects(void) {
    uint8_t b[64] = {0};
    float y[64];
    CHECK(!quant_dequantize(GGML_T_Q4_1, b, 16, y), "Q4_1 with a partial block must fail");
    CHECK(!quant_dequantize(12 /* Q4_K */, b, 256, y), "Q4_K is not supported");
    CHECK(!quant_supported(99), "type 99 unsupported");
}

/* GGUF stores q/k rows permuted by llama.cpp's permute(): reshape(n_head, 2, hd/2, in)
 * .swapaxes(1, 2), i.e. GGUF row h*hd + 2i + j holds HF row h*hd + j*hd/2 + i. Build the GGUF
 * order from known HF rows, undo it with quant_qk_src_row, and check every row came back. */
static void test_qk_permutation(void) {
    enum { NH = 3, HD = 8, HALF = HD / 2, ROWS = NH * HD };
    int hf[ROWS], gg[ROWS];
    for (int r = 0; r < ROWS; r++) hf[r] = 1000 + r;
    for (int h = 0; h < NH; h++)
        for (int i = 0; i < HALF; i++)
            for (int j = 0; j < 2; j++) gg[h * HD + 2 * i + j] = hf[h * HD + j * HALF + i];
    for (int r = 0; r < ROWS; r++) {
        int64_t src = quant_qk_src_row(r, HD);
        CHECK(src >= 0 && src < ROWS && gg[src] == 1000 + r, "HF row %d took GGUF row %lld", r,
              (long long)src);
    }
    /* head 0 by hand: HF rows 0..7 are GGUF rows 0,2,4,6 (first rotary half), 1,3,5,7 */
    const int want[HD] = {0, 2, 4, 6, 1, 3, 5, 7};
    for (int r = 0; r < HD; r++)
        CHECK(quant_qk_src_row(r, HD) == want[r], "head 0 row %d -> %lld want %d", r,
              (long long)quant_qk_src_row(r, HD), want[r]);
    CHECK(quant_qk_src_row(HD + 5, HD) == HD + 3, "head 1 row 5 -> %lld",
          (long long)quant_qk_src_row(HD + 5, HD));
}

int main(void) {
    test_f16();
    test_q8_0();
    test_q4_1();
    test_q4_0_q5();
    test_rejects();
    test_qk_permutation();
    if (test_failures) {
        fprintf(stderr, "%d check(s) failed\n", test_failures);
        return 1;
    }
    printf("test_convert_quant: all checks passed\n");
    return 0;
}
