/*
 * test_loader_dtype.c — the F16/BF16 <-> F32 helpers of base/dtype.h that the loader relies on
 * to widen stored weights. Known answers come from the IEEE-754 binary16 and bfloat16 encodings;
 * the exhaustive checks compare every one of the 65536 bit patterns against an independent
 * formula (ldexp of sign, exponent and mantissa), so no expected value comes from the code under
 * test.
 */
#define _XOPEN_SOURCE 700

#include "base/dtype.h"
#include "loader_test_util.h"

#include <math.h>

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* binary16: sign, 5-bit exponent (bias 15), 10-bit mantissa; subnormals are m * 2^-24. */
static double f16_reference(uint16_t h) {
    int s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v;
    if (e == 0) v = ldexp((double)m, -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = ldexp((double)(1024 + m), e - 25);
    return s ? -v : v;
}

static void test_f16(void) {
    CHECK(tinfer_f16_to_f32(0x3C00) == 1.0f);
    CHECK(tinfer_f16_to_f32(0xC000) == -2.0f);
    CHECK(tinfer_f16_to_f32(0x7BFF) == 65504.0f);         /* largest finite half */
    CHECK(tinfer_f16_to_f32(0x0400) == ldexpf(1.0f, -14)); /* smallest normal */
    CHECK(tinfer_f16_to_f32(0x0001) == ldexpf(1.0f, -24)); /* smallest subnormal */
    CHECK(tinfer_f16_to_f32(0x03FF) == ldexpf(1023.0f, -24)); /* largest subnormal */
    CHECK(tinfer_f16_to_f32(0x8001) == -ldexpf(1.0f, -24));
    CHECK(isinf(tinfer_f16_to_f32(0x7C00)) && tinfer_f16_to_f32(0x7C00) > 0);
    CHECK(isinf(tinfer_f16_to_f32(0xFC00)) && tinfer_f16_to_f32(0xFC00) < 0);
    CHECK(isnan(tinfer_f16_to_f32(0x7E00)) && isnan(tinfer_f16_to_f32(0x7C01)));
    CHECK(bits(tinfer_f16_to_f32(0x8000)) == 0x80000000u); /* -0 keeps its sign */
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float got = tinfer_f16_to_f32((uint16_t)h);
        double want = f16_reference((uint16_t)h);
        bool ok = isnan(want) ? isnan(got) : ((double)got == want && !signbit(got) == !signbit(want));
        if (!ok && bad++ < 5) fprintf(stderr, "f16 0x%04x -> %g, want %g\n", h, got, want);
    }
    CHECK(bad == 0);
}

static void test_bf16(void) {
    CHECK(tinfer_bf16_to_f32(0x3F80) == 1.0f);
    CHECK(tinfer_bf16_to_f32(0xC000) == -2.0f);
    CHECK(tinfer_bf16_to_f32(0x0001) == ldexpf(1.0f, -133)); /* smallest bf16 subnormal */
    CHECK(isinf(tinfer_bf16_to_f32(0x7F80)) && isnan(tinfer_bf16_to_f32(0x7FC0)));
    /* f32 -> bf16 rounds to nearest, ties to even (the upper 16 bits of the f32 encoding) */
    CHECK(tinfer_f32_to_bf16(1.0f) == 0x3F80);
    CHECK(tinfer_f32_to_bf16(from_bits(0x3F808000u)) == 0x3F80); /* tie, even below: down */
    CHECK(tinfer_f32_to_bf16(from_bits(0x3F818000u)) == 0x3F82); /* tie, odd below: up */
    CHECK(tinfer_f32_to_bf16(from_bits(0x3F808001u)) == 0x3F81); /* above the tie: up */
    CHECK(tinfer_f32_to_bf16(from_bits(0x3F807FFFu)) == 0x3F80); /* below the tie: down */
    CHECK(tinfer_f32_to_bf16(from_bits(0xBF818000u)) == 0xBF82); /* ties are sign-symmetric */
    CHECK(tinfer_f32_to_bf16(from_bits(0x7F7FFFFFu)) == 0x7F80); /* FLT_MAX rounds to inf */
    CHECK(tinfer_f32_to_bf16(INFINITY) == 0x7F80 && tinfer_f32_to_bf16(-INFINITY) == 0xFF80);
    CHECK(tinfer_f32_to_bf16(-0.0f) == 0x8000);
    CHECK(tinfer_f32_to_bf16(from_bits(0x00008000u)) == 0x0000); /* subnormal tie to even 0 */
    CHECK(tinfer_f32_to_bf16(from_bits(0x00018000u)) == 0x0002);
    /* NaN stays NaN, including payloads that rounding would carry into infinity */
    uint16_t n1 = tinfer_f32_to_bf16(NAN), n2 = tinfer_f32_to_bf16(from_bits(0x7F800001u)),
             n3 = tinfer_f32_to_bf16(from_bits(0xFFFFFFFFu));
    CHECK((n1 & 0x7F80) == 0x7F80 && (n1 & 0x7F) != 0);
    CHECK((n2 & 0x7F80) == 0x7F80 && (n2 & 0x7F) != 0);
    CHECK((n3 & 0x7F80) == 0x7F80 && (n3 & 0x7F) != 0);
    /* every bf16 pattern widens exactly and narrows back to itself (NaN: to a NaN) */
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = tinfer_bf16_to_f32((uint16_t)h);
        uint16_t back = tinfer_f32_to_bf16(f);
        bool ok = bits(f) == h << 16 &&
                  (isnan(f) ? ((back & 0x7F80) == 0x7F80 && (back & 0x7F)) : back == h);
        if (!ok && bad++ < 5) fprintf(stderr, "bf16 0x%04x -> 0x%04x\n", h, back);
    }
    CHECK(bad == 0);
    /* round-to-nearest on a sweep: the result is one of the two neighbours and the nearer one */
    bad = 0;
    for (uint32_t u = 0x3F800000u; u < 0x3F800000u + (1u << 20); u += 7) {
        float f = from_bits(u);
        uint16_t r = tinfer_f32_to_bf16(f);
        float lo = from_bits(u & 0xFFFF0000u), hi = from_bits((u & 0xFFFF0000u) + 0x10000u);
        float got = tinfer_bf16_to_f32(r);
        double dlo = (double)f - lo, dhi = (double)hi - f;
        float want = dlo < dhi ? lo : dhi < dlo ? hi : (((u >> 16) & 1) ? hi : lo);
        if (got != want && bad++ < 5) fprintf(stderr, "rne 0x%08x -> 0x%04x\n", u, r);
    }
    CHECK(bad == 0);
}

int main(void) {
    test_f16();
    test_bf16();
    if (g_failures) {
        fprintf(stderr, "test_loader_dtype: %d failure(s)\n", g_failures);
        return 1;
    }
    printf("test_loader_dtype: all checks passed\n");
    return 0;
}
