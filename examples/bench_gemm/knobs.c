/*
 * knobs.c — tinfer-bench-gemm's flags for the GEMM rungs' measurement knobs (knobs.h). Each flag
 * sets one field of tinfer_gemm_knobs; the ranges are the ones the launchers accept (a value the
 * launcher would reject is refused here, before any GPU work).
 */
#include "examples/bench_gemm/knobs.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct knob_flag {
    const char *flag;
    size_t off;              /* offsetof(tinfer_gemm_knobs, field) */
    int lo, hi, hole;        /* integer values lo..hi except hole (-1: none) */
    const char *const *name; /* named values (index = value), NULL-terminated; NULL: an integer */
    const char *help;
} knob_flag;

static const char *const epi_names[] = {"lines", "regs", "tma", NULL};
static const char *const splitred_names[] = {"async", "barrier", NULL};
static const char *const skinny_names[] = {"auto", "wide", "deep", "wide1", NULL};

#define OFF(f) offsetof(tinfer_gemm_knobs, f)
static const knob_flag knob_flags[] = {
    {"--gemv-pdl", OFF(gemv_pdl), 0, 4, -1, NULL,
     "decode rungs 04/05/06/08/09: 0 plain launches; 1..4 programmatic dependent launch with\n"
     "launch_dependents 1 at the start, 2 after the main loop (default), 3 never (block exit),\n"
     "4 once the last k-tile's loads are issued"},
    {"--gemv05-prefetch", OFF(gemv05_prefetch), 0, 4096, -1, NULL,
     "rungs 05/06: W k-tiles per row prefetched into L2 before the PDL wait (default 0)"},
    {"--gemv05-xstage", OFF(gemv05_xstage), 0, 2, -1, NULL,
     "rungs 05/06: 0 never stage X in shared memory; 1 from M = 1 (default); 2 from M = 2"},
    {"--gemv05-stages", OFF(gemv05_stages), 3, 8, -1, NULL,
     "rungs 05/06: the X-staged kernel's stage count (default: the most that fit)"},
    {"--gemv05-bps", OFF(gemv05_bps), 3, 4, -1, NULL,
     "rungs 05/06: blocks per SM the X-staged kernel's stages are sized for (default: 4, or 3\n"
     "for a w_static grid that fills 3 but not 4 per SM)"},
    {"--gemv06-split", OFF(gemv06_split), 2, 4, 3, NULL,
     "rung 06's cluster size: 2 (default) or 4"},
    {"--gemv-early-w", OFF(gemv_early_w), 0, 2, -1, NULL,
     "rungs 05/06: W read before the PDL wait for args.w_static calls: 0 never, 1 by grid size\n"
     "(default), 2 always"},
    {"--gemv09-bps", OFF(gemv09_bps), 1, 2, -1, NULL, "rung 09: blocks per SM per grid"},
    {"--gemv09-stages", OFF(gemv09_stages), 0, 16, 1, NULL,
     "rung 09: ring stages, 2..16 (0: auto)"},
    {"--gemv09-early", OFF(gemv09_early), 0, 1, -1, NULL,
     "rung 09: 0 no W loads before the PDL wait"},
    {"--gemv09-coresident", OFF(gemv09_coresident), 0, 1, -1, NULL,
     "rung 09: 1 sizes the auto ring for two grids per SM"},
    {"--gemm-wgmma-epi", OFF(gemm_wgmma_epi), 0, 0, -1, epi_names,
     "rung 03's BF16 epilogue: whole-line stores (default), the register-direct store, or the\n"
     "TMA-store epilogue"},
    {"--gemm-wgmma-pdl", OFF(gemm_wgmma_pdl), 0, 1, -1, NULL,
     "rungs 02-06 never / always with programmatic dependent launch (default: for K <= 2048)"},
    {"--gemm-early-w", OFF(gemm_early_w), 0, 1, -1, NULL,
     "0: rungs 02 / 04 wait before every weight load even for args.w_static calls (default 1)"},
    {"--gemm-wgmma-mapcache", OFF(gemm_wgmma_mapcache), 0, 1, -1, NULL,
     "0: the TMA rungs encode their tensor maps on every call (default 1: cached)"},
    {"--gemm-wgmma-mc", OFF(gemm_wgmma_mc), 0, 1, -1, NULL,
     "1: rung 03's picked 128x72 tiles multicast X over clusters of 2 (measured slower; default "
     "0)"},
    {"--gemm-wgmma-splitred", OFF(gemm_wgmma_splitred), 0, 0, -1, splitred_names,
     "rungs 03 / 05 split-K partial sums: st.async onto the owner's mbarrier (default), or DSMEM\n"
     "stores and a second cluster barrier"},
    {"--gemm-skinny-stages", OFF(gemm_skinny_stages), 0, 0, -1, skinny_names,
     "rung 05's stage ring: split kernel wide, persistent deep (default); wide: two CTAs per SM;\n"
     "deep: one; wide1: the wide ring on a persistent grid of one CTA per SM"},
    {"--gemm-skinny-ksub", OFF(gemm_skinny_ksub), 1, 4, 3, NULL,
     "rung 05's 64-wide k-blocks per stage: 1, 2 or 4 (default: gemm/bf16.h)"},
    {"--gemm-tiny-wg", OFF(gemm_tiny_wg), 1, 2, -1, NULL,
     "rung 06's consumer warpgroups for every call that leaves them to the pick or the default\n"
     "(default: two for its 16-token tiles and its ring, one elsewhere)"},
    {"--gemm-tiny-wg2-lag", OFF(gemm_tiny_wg2_lag), 0, 1, -1, NULL,
     "1: in rung 06's rings of two warpgroups each keeps one k-block's wgmmas in flight and\n"
     "releases the slot before it (default 0)"},
};
#undef OFF

static int knob_value(const knob_flag *f, const char *v, int *out) {
    if (f->name) {
        for (int j = 0; f->name[j]; j++)
            if (!strcmp(v, f->name[j])) return *out = j, 0;
        return -1;
    }
    char *end = NULL;
    const long x = strtol(v, &end, 10);
    if (!*v || *end || x < f->lo || x > f->hi || x == f->hole) return -1;
    *out = (int)x;
    return 0;
}

static void knob_values(FILE *fp, const knob_flag *f) {
    if (f->name) {
        for (int j = 0; f->name[j]; j++)
            fprintf(fp, "%s%s", j ? "|" : "", f->name[j]);
    } else if (f->hole < 0) {
        fprintf(fp, "%d..%d", f->lo, f->hi);
    } else { /* every value listed: 2|4, 0|2|3|...: short ranges only have a hole */
        for (int v = f->lo, first = 1; v <= f->hi; v++) {
            if (v == f->hole) continue;
            if (f->hi - f->lo > 4 && v > f->hole + 1) {
                fprintf(fp, "..%d", f->hi);
                break;
            }
            fprintf(fp, "%s%d", first ? "" : "|", v);
            first = 0;
        }
    }
}

int tinfer_bench_knob_flag(int argc, char **argv, int *i, tinfer_gemm_knobs *k) {
    for (size_t n = 0; n < sizeof knob_flags / sizeof knob_flags[0]; n++) {
        const knob_flag *f = &knob_flags[n];
        if (strcmp(argv[*i], f->flag)) continue;
        int v = 0;
        if (*i + 1 >= argc || knob_value(f, argv[*i + 1], &v) != 0) {
            fprintf(stderr, "error: %s takes ", f->flag);
            knob_values(stderr, f);
            fprintf(stderr, "%s%s\n", *i + 1 < argc ? ", not " : "",
                    *i + 1 < argc ? argv[*i + 1] : "");
            return -1;
        }
        *(int *)((char *)k + f->off) = v;
        *i += 1;
        return 1;
    }
    return 0;
}

void tinfer_bench_knobs_help(FILE *fp) {
    fprintf(fp,
            "measurement knobs (gemm/cuda/knobs.h; unset: the default the measurements chose):\n");
    for (size_t n = 0; n < sizeof knob_flags / sizeof knob_flags[0]; n++) {
        const knob_flag *f = &knob_flags[n];
        fprintf(fp, "  %s ", f->flag);
        knob_values(fp, f);
        fprintf(fp, "\n      ");
        for (const char *c = f->help; *c; c++) {
            if (*c == '\n')
                fputs("\n      ", fp);
            else
                fputc(*c, fp);
        }
        fprintf(fp, "\n");
    }
}
