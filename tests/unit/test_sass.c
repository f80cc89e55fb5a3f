/*
 * Unit tests of the SASS reader (src/profile/sass.c): the counting rules on hand-written
 * text, the recorded nvdisasm / cuobjdump output of every example and planted kernel
 * (tests/data/sass/, see its README.md), line info mapped back to the .cu sources, malformed
 * and truncated text, kernel lookup, finding and running nvdisasm (a stand-in script, then
 * the real one when installed), and the planted kernels of tests/profile/planted/ (metadata,
 * and compiled with NVRTC when it loads).
 */
#include "ktest.h"

#include "kopt/compile.h"
#include "kopt/profile.h"

#include <dirent.h>

#define SASS_DIR KOPT_TEST_DATA_DIR "/sass"
#define PLANTED_DIR KOPT_TEST_DATA_DIR "/../profile/planted"

static kopt_ctx *ctx;
static char *tmp;

/* ---- helpers ------------------------------------------------------------------------ */

static kopt_sass *parse_text(const char *text)
{
    kopt_sass *s = NULL;
    if (kopt_sass_parse(&s, ctx, text, "inline.sass") != KOPT_OK)
        KTEST_FAIL("parse failed: %s", kopt_errmsg(ctx));
    return s;
}

/* A fixture of tests/data/sass/, parsed; NULL (and a failed check) when it cannot be. */
static kopt_sass *fixture(const char *name)
{
    char path[1024];
    char *text;
    kopt_sass *s = NULL;

    snprintf(path, sizeof(path), "%s/%s.sass", SASS_DIR, name);
    text = ktest_read_file(path);
    if (!text) {
        KTEST_FAIL("cannot read the fixture %s", path);
        return NULL;
    }
    if (kopt_sass_parse(&s, ctx, text, path) != KOPT_OK)
        KTEST_FAIL("%s: %s", path, kopt_errmsg(ctx));
    free(text);
    return s;
}

static int sum5(const int *w)
{
    return w[0] + w[1] + w[2] + w[3] + w[4];
}

static int tensor_count(const kopt_sass_counts *k)
{
    return k->hmma + k->hgmma + k->imma + k->igmma + k->qgmma + k->dmma;
}

/* Every count of two kernels, compared field by field (line tables excluded). */
static void check_same_counts(const kopt_sass_counts *a, const kopt_sass_counts *b)
{
    CHECK_EQ_STR(a->kernel, b->kernel);
    CHECK_EQ_INT(a->instructions, b->instructions);
    for (int w = 0; w < KOPT_SASS_NWIDTH; w++) {
        CHECK_EQ_INT(a->ldg[w], b->ldg[w]);
        CHECK_EQ_INT(a->stg[w], b->stg[w]);
        CHECK_EQ_INT(a->lds[w], b->lds[w]);
        CHECK_EQ_INT(a->sts[w], b->sts[w]);
    }
    CHECK_EQ_INT(a->ldg_constant, b->ldg_constant);
    CHECK_EQ_INT(a->ldsm, b->ldsm);
    CHECK_EQ_INT(a->ldl, b->ldl);
    CHECK_EQ_INT(a->stl, b->stl);
    CHECK_EQ_INT(tensor_count(a), tensor_count(b));
    CHECK_EQ_INT(a->ffma, b->ffma);
    CHECK_EQ_INT(a->fmul, b->fmul);
    CHECK_EQ_INT(a->fadd, b->fadd);
    CHECK_EQ_INT(a->dfma + a->dmul + a->dadd, b->dfma + b->dmul + b->dadd);
    CHECK_EQ_INT(a->hfma2 + a->hmul2 + a->hadd2, b->hfma2 + b->hmul2 + b->hadd2);
    CHECK_EQ_INT(a->ldgsts, b->ldgsts);
    CHECK_EQ_INT(a->tma, b->tma);
    CHECK_EQ_INT(a->atomics, b->atomics);
    CHECK_EQ_INT(a->barriers, b->barriers);
    CHECK_EQ_INT(a->branches, b->branches);
    CHECK_EQ_INT(a->conversions, b->conversions);
    CHECK_EQ_INT(a->mufu, b->mufu);
}

/* Line `n` (1-based) of a source file, into buf; 0 when there is no such line. */
static int source_line(const char *path, int n, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    int i = 0, ok = 0;

    if (!f)
        return 0;
    while (fgets(buf, (int)cap, f))
        if (++i == n) {
            ok = 1;
            break;
        }
    fclose(f);
    return ok;
}

/* Where a file named in line info lives in this checkout: the fixtures were recorded in
 * another folder, so match on the path below the repository root. */
static void local_source(const char *recorded, char *out, size_t cap)
{
    const char *ex = strstr(recorded, "examples/");
    const char *pl = strstr(recorded, "tests/profile/planted/");

    if (ex)
        snprintf(out, cap, "%s/%s", KOPT_EXAMPLES_DIR, ex + strlen("examples/"));
    else if (pl)
        snprintf(out, cap, "%s/%s", PLANTED_DIR, pl + strlen("tests/profile/planted/"));
    else
        snprintf(out, cap, "%s", recorded);
}

/* ---- counting rules on hand-written text --------------------------------------------- */

/* nvdisasm -c -g layout: predicates, .reuse, encodings, widths, padding, look-alikes. */
static const char *const RULES_SASS =
    "\t.target\tsm_90a\n"
    "//--------------------- .text.k                 --------------------------\n"
    "\t.section\t.text.k,\"ax\",@progbits\n"
    "        .global         k\n"
    "k:\n"
    ".text.k:\n"
    "\t//## File \"/src/k.cu\", line 10\n"
    "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
    "        /*0010*/              @!P0 LDG.E R2, desc[UR4][R2.64] ;\n"
    "        /*0020*/               @P1 LDG.E.U8 R3, desc[UR4][R4.64] ;\n"
    "        /*0030*/                   LDG.E.S16 R3, desc[UR4][R4.64] ;\n"
    "        /*0040*/                   LDG.E.64.CONSTANT R4, desc[UR4][R4.64] ;\n"
    "        /*0050*/                   LDG.E.128 R8, desc[UR4][R6.64] ;  /* 0x0000000406087981 */\n"
    "                                                                     /* 0x000ea2000c1e1d00 */\n"
    "        /*0060*/                   LDG.E.LTC128B.128.CONSTANT R8, desc[UR4][R6.64] ;\n"
    "\t//## File \"/src/k.cu\", line 11\n"
    "        /*0070*/                   STG.E.64 desc[UR4][R2.64], R4 ;\n"
    "        /*0080*/                   STS.U16 [R0], R3 ;\n"
    "        /*0090*/                   LDS.U.128 R12, [R0.reuse+0x10] ;\n"
    "        /*00a0*/                   LDSM.16.MT88.4 R16, [R0] ;\n"
    "        /*00b0*/                   STL [R1], R2 ;\n"
    "        /*00c0*/                   LDL.LU.64 R2, [R1] ;\n"
    "        /*00d0*/                   LDGSTS.E.BYPASS.128 [R0], desc[UR4][R2.64] ;\n"
    "        /*00e0*/                   HMMA.16816.F32.BF16 R20, R16, R18, R20 ;\n"
    "        /*00f0*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24 ;\n"
    "        /*0100*/                   FFMA R2, R3.reuse, R4, R2 ;\n"
    "        /*0110*/                   FFMA32I R2, R3, 1.5, R2 ;\n"
    "        /*0120*/                   FMUL.FTZ R2, R2, R3 ;\n"
    "        /*0130*/                   FADD R2, R2, -R3 ;\n"
    "        /*0140*/                   DFMA R2, R2, R4, R6 ;\n"
    "        /*0150*/                   DADD R2, R2, R4 ;\n"
    "        /*0160*/                   HFMA2.MMA R5, -RZ, RZ, 0, 0 ;\n"
    "        /*0170*/                   HFMA2 R5, R5, R6, R7 ;\n"
    "        /*0180*/                   HADD2.F32 R5, -RZ, R6.H0_H0 ;\n"
    "        /*0188*/                   HADD2 R5, R5, R6 ;\n"
    "\t//## File \"/src/k.cu\", line 12 inlined at \"/src/k.cu\", line 40\n"
    "        /*0190*/                   ATOMS.ADD RZ, [R0], R2 ;\n"
    "        /*01a0*/                   REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR4][R2.64], R5 ;\n"
    "        /*01b0*/                   REDUX.SUM UR4, R2 ;\n"
    "        /*01c0*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;\n"
    "        /*01d0*/                   BSSY B0, `(.L_x_1) ;\n"
    "        /*01e0*/                   WARPSYNC.ALL ;\n"
    "        /*01f0*/               @P0 BRA `(.L_x_1) ;\n"
    "        /*0200*/                   CALL.REL.NOINC `($__internal_0) ;\n"
    "        /*0210*/                   F2F.F32.F64 R2, R4 ;\n"
    "        /*0220*/                   I2FP.F32.S32 R2, R3 ;\n"
    "        /*0230*/                   F2FP.BF16.F32.PACK_AB R2, R3, R4 ;\n"
    "        /*0240*/                   I2I.U8.S32.SAT R2, R3 ;\n"
    "        /*0250*/                   MUFU.EX2 R2, R3 ;\n"
    "        /*0260*/                   UTMALDG.2D [UR8], [UR4] ;\n"
    ".L_x_1:\n"
    "        /*0270*/                   BSYNC B0 ;\n"
    "        /*0280*/                   EXIT ;\n"
    ".L_x_2:\n"
    "        /*0290*/                   BRA `(.L_x_2);\n"
    "        /*02a0*/                   NOP;\n"
    "        /*02b0*/                   NOP;\n"
    "\n"
    "//--------------------- .nv.constant0.k         --------------------------\n"
    "\t.section\t.nv.constant0.k,\"a\",@progbits\n"
    "        /*0000*/ \t.byte\t0x00, 0x00, 0x00, 0x00\n"
    "        /*0004*/                   LDG.E R2, desc[UR4][R2.64] ;\n";

static void test_counting_rules(void)
{
    kopt_sass *s = parse_text(RULES_SASS);
    const kopt_sass_counts *k;

    if (!s)
        return;
    CHECK_EQ_INT(s->nkernels, 1);
    CHECK(s->text && strcmp(s->text, RULES_SASS) == 0);
    k = &s->kernels[0];
    CHECK_EQ_STR(k->kernel, "k");
    /* 45 instruction lines in .text.k, less 2 NOPs and the final self-branch; the LDG in the
     * constant section is outside any function */
    CHECK_EQ_INT(k->instructions, 42);
    CHECK_EQ_INT(k->ldg[0], 1);          /* .U8 */
    CHECK_EQ_INT(k->ldg[1], 1);          /* .S16 */
    CHECK_EQ_INT(k->ldg[2], 1);          /* no width: 32 bit, predicated */
    CHECK_EQ_INT(k->ldg[3], 1);          /* .64 */
    CHECK_EQ_INT(k->ldg[4], 2);          /* .128, also behind .LTC128B */
    CHECK_EQ_INT(k->ldg_constant, 2);
    CHECK_EQ_INT(k->stg[3], 1);
    CHECK_EQ_INT(sum5(k->stg), 1);
    CHECK_EQ_INT(k->sts[1], 1);
    CHECK_EQ_INT(k->lds[4], 1);
    CHECK_EQ_INT(sum5(k->lds) + sum5(k->sts), 2);
    CHECK_EQ_INT(k->ldsm, 1);
    CHECK_EQ_INT(k->ldl, 1);
    CHECK_EQ_INT(k->stl, 1);
    CHECK_EQ_INT(k->ldgsts, 1);
    CHECK_EQ_INT(k->hmma, 1);
    CHECK_EQ_INT(k->hgmma, 1);
    CHECK_EQ_INT(k->imma + k->igmma + k->qgmma + k->dmma, 0);
    CHECK_EQ_INT(k->ffma, 2);            /* FFMA and FFMA32I */
    CHECK_EQ_INT(k->fmul, 1);
    CHECK_EQ_INT(k->fadd, 1);
    CHECK_EQ_INT(k->dfma, 1);
    CHECK_EQ_INT(k->dadd, 1);
    CHECK_EQ_INT(k->dmul, 0);
    CHECK_EQ_INT(k->hfma2, 1);           /* HFMA2.MMA -RZ, RZ is a constant move */
    CHECK_EQ_INT(k->hadd2, 1);           /* HADD2.F32 is a half -> float conversion */
    CHECK_EQ_INT(k->atomics, 2);         /* ATOMS, REDG; not REDUX */
    CHECK_EQ_INT(k->barriers, 1);        /* BAR; not BSSY/BSYNC/WARPSYNC */
    CHECK_EQ_INT(k->branches, 1);        /* the @P0 BRA; not CALL, not the self-loop */
    CHECK_EQ_INT(k->conversions, 4);     /* HADD2.F32, F2F, I2FP, F2FP; not I2I */
    CHECK_EQ_INT(k->mufu, 1);
    CHECK_EQ_INT(k->tma, 1);

    /* line info: lines 10, 11 and 12 (the innermost position of an inlined call) */
    if (CHECK_EQ_INT(k->nlines, 3)) {
        CHECK_EQ_STR(k->lines[0].file, "/src/k.cu");
        CHECK_EQ_INT(k->lines[0].line, 10);
        CHECK_EQ_INT(k->lines[0].instructions, 7);
        CHECK_EQ_INT(k->lines[0].global_loads, 6);
        CHECK_EQ_INT(k->lines[1].line, 11);
        CHECK_EQ_INT(k->lines[1].global_stores, 1);
        CHECK_EQ_INT(k->lines[1].shared_accesses, 3);
        CHECK_EQ_INT(k->lines[1].local_accesses, 2);
        CHECK_EQ_INT(k->lines[1].global_loads, 1);    /* LDGSTS */
        CHECK_EQ_INT(k->lines[1].tensor, 2);
        CHECK_EQ_INT(k->lines[2].line, 12);
        CHECK_EQ_INT(k->lines[2].shared_accesses, 1); /* ATOMS */
        CHECK_EQ_INT(k->lines[2].branches, 1);
        CHECK_EQ_INT(k->lines[0].instructions + k->lines[1].instructions +
                     k->lines[2].instructions, k->instructions);
    }
    kopt_sass_free(s);
}

/* cuobjdump -sass layout: `Function : name`, numeric branch targets, encodings below. */
static void test_cuobjdump_layout(void)
{
    const char *text =
        "\n\tcode for sm_90a\n\t.target\tsm_90a\n\n"
        "\t\tFunction : _Z4gemmILi128EEvPKfPf\n"
        "\t.headerflags\t@\"EF_CUDA_ACCELERATORS EF_CUDA_SM90\"\n"
        "        /*0000*/                   LDC R1, c[0x0][0x28] ;                 /* 0x00000a00ff017b82 */\n"
        "                                                                          /* 0x000fe20000000800 */\n"
        "        /*0010*/                   LDG.E.128 R4, desc[UR4][R2.64] ;       /* 0x0000000402047981 */\n"
        "                                                                          /* 0x000ea2000c1e1d00 */\n"
        "        /*0020*/               @P0 BRA 0x10 ;                             /* 0x0000000000008947 */\n"
        "        /*0030*/                   EXIT ;                                 /* 0x000000000000794d */\n"
        "        /*0040*/                   BRA 0x40;                              /* 0xfffffffc00fc7947 */\n"
        "        /*0050*/                   NOP;                                   /* 0x0000000000007918 */\n"
        "\t\t..........\n\n\n"
        "\t\tFunction : other\n"
        "        /*0000*/                   STG.E desc[UR4][R2.64], R5 ;           /* 0x0000000502007986 */\n";
    kopt_sass *s = parse_text(text);

    if (!s)
        return;
    if (CHECK_EQ_INT(s->nkernels, 2)) {
        CHECK_EQ_STR(s->kernels[0].kernel, "_Z4gemmILi128EEvPKfPf");
        CHECK_EQ_INT(s->kernels[0].instructions, 4);
        CHECK_EQ_INT(s->kernels[0].ldg[4], 1);
        CHECK_EQ_INT(s->kernels[0].branches, 1);
        CHECK_EQ_INT(s->kernels[0].nlines, 0);
        CHECK_EQ_STR(s->kernels[1].kernel, "other");
        CHECK_EQ_INT(s->kernels[1].instructions, 1);
        CHECK_EQ_INT(s->kernels[1].stg[2], 1);
    }
    kopt_sass_free(s);
}

/* ---- recorded fixtures -------------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static void test_every_fixture_parses(void)
{
    DIR *d = opendir(SASS_DIR);
    struct dirent *e;
    int files = 0;

    if (!CHECK(d != NULL))
        return;
    while ((e = readdir(d))) {
        char name[512];
        kopt_sass *s;
        int cuobjdump;
        if (!ends_with(e->d_name, ".sass"))
            continue;
        files++;
        snprintf(name, sizeof(name), "%.*s", (int)(strlen(e->d_name) - 5), e->d_name);
        cuobjdump = strstr(name, "cuobjdump") != NULL;
        if (!(s = fixture(name)))
            continue;
        CHECK(s->nkernels >= 1);
        for (int i = 0; i < s->nkernels; i++) {
            const kopt_sass_counts *k = &s->kernels[i];
            int in_lines = 0;
            if (!CHECK(k->kernel[0] != '\0') || !CHECK(k->instructions > 10) ||
                !CHECK(sum5(k->ldg) + sum5(k->stg) + k->ldgsts >= 1))
                fprintf(stderr, "  ^ %s kernel %d\n", name, i);
            for (int j = 0; j < k->nlines; j++) {
                in_lines += k->lines[j].instructions;
                CHECK(k->lines[j].line > 0);
                CHECK(ends_with(k->lines[j].file, ".cu") || ends_with(k->lines[j].file, ".h") ||
                      ends_with(k->lines[j].file, ".hpp"));
                if (j > 0 && strcmp(k->lines[j - 1].file, k->lines[j].file) == 0)
                    CHECK(k->lines[j - 1].line < k->lines[j].line);   /* sorted, unique */
            }
            /* recorded with -lineinfo and --print-line-info: nearly every instruction has a
             * source line (cuobjdump prints none) */
            if (cuobjdump) {
                CHECK_EQ_INT(k->nlines, 0);
            } else if (!CHECK(in_lines <= k->instructions && in_lines * 10 >= k->instructions * 9)) {
                fprintf(stderr, "  ^ %s: %d of %d instructions have a line\n", name, in_lines,
                        k->instructions);
            }
        }
        kopt_sass_free(s);
    }
    closedir(d);
    CHECK(files >= 24);
    printf("  %d fixtures\n", files);
}

static void test_examples_fast_vs_reference(void)
{
    kopt_sass *fast, *ref;
    const kopt_sass_counts *f, *r;

    /* sgemm: the fast kernel tiles through shared memory with float4 reads and a register
     * block of FFMAs; the naive one reads global memory only */
    fast = fixture("sgemm_fast");
    ref = fixture("sgemm_reference");
    if (fast && ref && CHECK((f = kopt_sass_kernel(fast, "sgemm_fast")) != NULL) &&
        CHECK((r = kopt_sass_kernel(ref, "sgemm_ref")) != NULL)) {
        CHECK(f->ffma >= 64);
        CHECK(f->lds[4] > 0);
        CHECK(f->barriers >= 1);
        CHECK_EQ_INT(f->ldl + f->stl, 0);
        CHECK_EQ_INT(tensor_count(f), 0);
        CHECK(r->ffma > 0);
        CHECK_EQ_INT(sum5(r->lds) + sum5(r->sts) + r->barriers, 0);
    }
    kopt_sass_free(fast);
    kopt_sass_free(ref);

    /* gemm_bf16: the fast kernel uses tensor cores fed by ldmatrix and cp.async */
    fast = fixture("gemm_bf16_fast");
    ref = fixture("gemm_bf16_reference");
    if (fast && ref && CHECK((f = kopt_sass_kernel(fast, "gemm_bf16_fast")) != NULL) &&
        CHECK((r = kopt_sass_kernel(ref, "gemm_bf16_ref")) != NULL)) {
        CHECK(f->hmma + f->hgmma > 0);
        CHECK(f->ldsm > 0);
        CHECK(f->ldgsts > 0);
        CHECK_EQ_INT(tensor_count(r), 0);
        CHECK(r->ldg[1] > 0);            /* bf16 read as 16-bit words */
        CHECK(r->ffma > 0);
    }
    kopt_sass_free(fast);
    kopt_sass_free(ref);

    /* transpose: the fast kernel stages a tile in shared memory behind a barrier; the naive
     * one is one 32-bit load and one 32-bit store */
    fast = fixture("transpose_fast");
    ref = fixture("transpose_reference");
    if (fast && ref && CHECK((f = kopt_sass_kernel(fast, "transpose_fast")) != NULL) &&
        CHECK((r = kopt_sass_kernel(ref, "transpose_ref")) != NULL)) {
        CHECK(f->barriers >= 1);
        CHECK(f->lds[2] > 0);
        CHECK(f->sts[2] > 0);
        CHECK_EQ_INT(sum5(r->lds) + sum5(r->sts) + r->barriers, 0);
        CHECK_EQ_INT(r->ldg[2], 1);
        CHECK_EQ_INT(r->stg[2], 1);
        CHECK_EQ_INT(sum5(r->ldg) + sum5(r->stg), 2);
    }
    kopt_sass_free(fast);
    kopt_sass_free(ref);

    /* vector_add: float4 in the fast kernel; the reference is two loads, an add, a store */
    fast = fixture("vector_add_fast");
    ref = fixture("vector_add_reference");
    if (fast && ref && CHECK((f = kopt_sass_kernel(fast, "vector_add_fast")) != NULL) &&
        CHECK((r = kopt_sass_kernel(ref, "vector_add_ref")) != NULL)) {
        CHECK(f->ldg[4] > 0);
        CHECK(f->stg[4] > 0);
        CHECK_EQ_INT(r->ldg[2], 2);
        CHECK_EQ_INT(r->stg[2], 1);
        CHECK_EQ_INT(r->fadd, 1);
        CHECK_EQ_INT(r->ldg[4] + r->stg[4] + r->branches, 0);
    }
    kopt_sass_free(fast);
    kopt_sass_free(ref);

    /* reduce_sum reference: two kernels, double accumulation, a barrier per tree level */
    ref = fixture("reduce_sum_reference");
    if (ref && CHECK_EQ_INT(ref->nkernels, 2) &&
        CHECK((r = kopt_sass_kernel(ref, "reduce_sum_partial")) != NULL)) {
        CHECK(r->dadd > 0);
        CHECK(r->barriers >= 8);         /* one before the tree, one per level (8 levels) */
        CHECK(r->conversions > 0);       /* float -> double */
        CHECK(kopt_sass_kernel(ref, "reduce_sum_final") != NULL);
    }
    kopt_sass_free(ref);

    /* softmax fast: exponentials on the MUFU unit */
    fast = fixture("softmax_fast");
    if (fast && CHECK((f = kopt_sass_kernel(fast, "softmax_fast")) != NULL))
        CHECK(f->mufu > 0);
    kopt_sass_free(fast);
}

static void test_planted_fixtures(void)
{
    kopt_sass *s;
    const kopt_sass_counts *k;

    if ((s = fixture("planted_sgemm_spills")) && CHECK((k = kopt_sass_kernel(s, "sgemm_spills")))) {
        CHECK(k->ldl > 0);
        CHECK(k->stl > 0);
        CHECK(k->ffma > 0);
    }
    kopt_sass_free(s);
    if ((s = fixture("planted_sgemm_unfused")) &&
        CHECK((k = kopt_sass_kernel(s, "sgemm_unfused")))) {
        CHECK(k->fmul >= 16);            /* one per k step of the unrolled 16-wide tile */
        CHECK(k->fadd >= 16);
        CHECK_EQ_INT(k->ffma, 0);
    }
    kopt_sass_free(s);
    if ((s = fixture("planted_softmax_fp64")) && CHECK((k = kopt_sass_kernel(s, "softmax_fp64")))) {
        CHECK(k->dfma + k->dmul + k->dadd > 0);
        CHECK(k->conversions > 0);       /* F2F between float and double */
    }
    kopt_sass_free(s);
    if ((s = fixture("planted_gemm_bf16_no_tensor_cores")) &&
        CHECK((k = kopt_sass_kernel(s, "gemm_bf16_cuda_cores")))) {
        CHECK_EQ_INT(tensor_count(k), 0);
        CHECK(k->ffma > 0);
    }
    kopt_sass_free(s);
    /* bank conflicts are address-dependent: statically the padded and unpadded transposes
     * issue the same accesses, which is why bank_conflicts needs counters */
    {
        kopt_sass *fast = fixture("transpose_fast");
        s = fixture("planted_transpose_bank_conflicts");
        if (s && fast && CHECK((k = kopt_sass_kernel(s, "transpose_bank_conflicts")))) {
            CHECK_EQ_INT(k->lds[2], fast->kernels[0].lds[2]);
            CHECK_EQ_INT(k->barriers, 1);
        }
        kopt_sass_free(fast);
        kopt_sass_free(s);
    }
    if ((s = fixture("planted_vector_add_strided")) &&
        CHECK((k = kopt_sass_kernel(s, "vector_add_strided")))) {
        CHECK(k->ldg[2] > 0);
        CHECK_EQ_INT(k->ldg[3] + k->ldg[4], 0);
    }
    kopt_sass_free(s);
    if ((s = fixture("planted_vector_add_divergent")) &&
        CHECK((k = kopt_sass_kernel(s, "vector_add_divergent"))))
        CHECK(k->branches >= 2);         /* the lane-parity branch and the odd lanes' loop */
    kopt_sass_free(s);
}

/* Instructions map back to the right lines of the .cu files: every line the parser reports
 * exists in the source, and the lines that do a given thing are the expected ones. */
static void test_line_info_maps_to_source(void)
{
    struct {
        const char *fixture, *kernel;
        int field;          /* 0 global stores, 1 shared, 2 local, 3 branches */
        const char *text;   /* a source line that must have such instructions */
        int all;            /* every line with such instructions contains `text` */
    } cases[] = {
        {"transpose_fast", "transpose_fast", 0, "__stcs(y", 1},
        {"transpose_fast", "transpose_fast", 1, "tile[", 1},
        /* spilled accumulators are reloaded where they are updated */
        {"planted_sgemm_spills", "sgemm_spills", 2, "acc[i][j] += av[i] * bv[j]", 0},
        {"planted_vector_add_divergent", "vector_add_divergent", 3, "if (threadIdx.x % 2 == 0)", 0},
        {"planted_vector_add_divergent", "vector_add_divergent", 3, "for (int k = 0; k < 32", 0},
    };

    for (int c = 0; c < KTEST_COUNT(cases); c++) {
        kopt_sass *s = fixture(cases[c].fixture);
        const kopt_sass_counts *k = s ? kopt_sass_kernel(s, cases[c].kernel) : NULL;
        int matched = 0;
        if (!CHECK(k != NULL) || !CHECK(k->nlines > 0)) {
            kopt_sass_free(s);
            continue;
        }
        for (int i = 0; i < k->nlines; i++) {
            const kopt_sass_line *l = &k->lines[i];
            const int v[] = {l->global_stores, l->shared_accesses, l->local_accesses, l->branches};
            char path[1024], text[1024];
            local_source(l->file, path, sizeof(path));
            if (!CHECK(source_line(path, l->line, text, sizeof(text)))) {
                fprintf(stderr, "  ^ %s:%d does not exist\n", path, l->line);
                continue;
            }
            if (!v[cases[c].field])
                continue;
            if (strstr(text, cases[c].text))
                matched++;
            else if (cases[c].all)
                KTEST_FAIL("%s: %s:%d is \"%.*s\"", cases[c].fixture, path, l->line,
                           (int)strcspn(text, "\n"), text);
        }
        if (!CHECK(matched >= 1))
            fprintf(stderr, "  ^ %s: no line \"%s\"\n", cases[c].fixture, cases[c].text);
        kopt_sass_free(s);
    }
}

/* cuobjdump -sass of the same cubin counts exactly as nvdisasm's output. */
static void test_cuobjdump_matches_nvdisasm(void)
{
    kopt_sass *a = fixture("transpose_fast");
    kopt_sass *b = fixture("transpose_fast.cuobjdump");

    if (a && b && CHECK_EQ_INT(a->nkernels, 1) && CHECK_EQ_INT(b->nkernels, 1)) {
        check_same_counts(&a->kernels[0], &b->kernels[0]);
        CHECK(a->kernels[0].nlines > 0);
        CHECK_EQ_INT(b->kernels[0].nlines, 0);
    }
    kopt_sass_free(a);
    kopt_sass_free(b);
}

/* ---- malformed and truncated input --------------------------------------------------- */

static void test_malformed(void)
{
    static const char *const no_function[] = {
        "",
        "\n\n",
        "hello world\n",
        "        /*0000*/                   LDG.E R2, desc[UR4][R2.64] ;\n",   /* no header */
        "\t.section\t.nv.constant0.k,\"a\",@progbits\n/*0000*/ .byte 0x00\n",
        "\t.section\t.text.\n",                                                /* empty name */
        "Function :\n/*0000*/ FFMA R1, R2, R3, R4 ;\n",
        "\x01\x02\xff\xfe/*/**/*//*\n;;;;@@@\n",
    };
    kopt_sass *s = NULL;

    for (int i = 0; i < KTEST_COUNT(no_function); i++) {
        s = NULL;
        if (!CHECK_EQ_INT(kopt_sass_parse(&s, ctx, no_function[i], "bad.sass"), KOPT_E_INVALID))
            fprintf(stderr, "  ^ text %d\n", i);
        CHECK(s == NULL);
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), "bad.sass: no SASS function found");
    }
    CHECK_EQ_INT(kopt_sass_parse(&s, ctx, NULL, "null.sass"), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "null.sass");
    CHECK_EQ_INT(kopt_sass_parse(NULL, ctx, "x", "x"), KOPT_E_INVALID);

    /* malformed lines inside a function are skipped, the rest still counts */
    {
        const char *text =
            "Function : k\n"
            "//## File \"/a.cu\", line zero\n"          /* bad line number: no line info */
            "/*0000*/ FFMA R1, R2, R3, R4 ;\n"
            "//## File \"/a.cu, line 3\n"                /* no closing quote */
            "/*zz*/ FFMA R1, R2, R3, R4 ;\n"             /* not a hex offset */
            "/*0010 FFMA R1, R2, R3, R4 ;\n"             /* no closing comment */
            "/*0020*/ ;\n"                               /* no opcode */
            "/*0030*/ @P0\n"                             /* no opcode, no end */
            "/*0040*/ lowercase R1 ;\n"
            "//## File \"/a.cu\", line 7\n"
            "/*0050*/ FADD R1, R2, R3 ;\n"
            "/*0060*/ LDG.E.128 R4, desc[UR4][R2.64]\n"; /* cut before its ';' */
        s = parse_text(text);
        if (s && CHECK_EQ_INT(s->nkernels, 1)) {
            CHECK_EQ_INT(s->kernels[0].instructions, 2);
            CHECK_EQ_INT(s->kernels[0].ffma, 1);
            CHECK_EQ_INT(s->kernels[0].fadd, 1);
            CHECK_EQ_INT(sum5(s->kernels[0].ldg), 0);
            if (CHECK_EQ_INT(s->kernels[0].nlines, 1)) {
                CHECK_EQ_INT(s->kernels[0].lines[0].line, 7);
                CHECK_EQ_INT(s->kernels[0].lines[0].instructions, 1);
            }
        }
        kopt_sass_free(s);
    }
    /* a very long line and a kernel name longer than the struct holds */
    {
        kopt_buf b = KOPT_BUF_INIT;
        kopt_buf_printf(&b, "Function : ");
        for (int i = 0; i < 2000; i++)
            kopt_buf_append(&b, "n", 1);
        kopt_buf_printf(&b, "\n/*0000*/ FFMA R1, R2, R3, R4 ");
        for (int i = 0; i < 100000; i++)
            kopt_buf_append(&b, ", R5", 4);
        kopt_buf_printf(&b, " ;\n");
        s = parse_text(kopt_buf_cstr(&b));
        if (s && CHECK_EQ_INT(s->nkernels, 1)) {
            CHECK_EQ_INT(strlen(s->kernels[0].kernel), sizeof(s->kernels[0].kernel) - 1);
            CHECK_EQ_INT(s->kernels[0].ffma, 1);
        }
        kopt_sass_free(s);
        kopt_buf_free(&b);
    }
}

/* Every prefix of a fixture: no crash; either "no function yet" or a partial result that
 * never counts more than the whole text does, and grows as the text does. */
static void test_truncated(void)
{
    char path[1024];
    char *text;
    kopt_sass *full = NULL;
    int last = 0, invalid = 0, partial = 0;

    snprintf(path, sizeof(path), "%s/planted_vector_add_divergent.sass", SASS_DIR);
    text = ktest_read_file(path);
    if (!CHECK(text != NULL) || !CHECK_EQ_INT(kopt_sass_parse(&full, ctx, text, path), KOPT_OK)) {
        free(text);
        return;
    }
    for (size_t cut = 0; cut <= strlen(text); cut++) {
        char *part = strndup(text, cut);
        kopt_sass *s = NULL;
        kopt_status st = kopt_sass_parse(&s, ctx, part, "part.sass");
        if (st == KOPT_E_INVALID) {
            invalid++;
            CHECK_EQ_INT(last, 0);   /* once a function was seen, it stays seen */
        } else if (CHECK_EQ_INT(st, KOPT_OK) && CHECK_EQ_INT(s->nkernels, 1)) {
            const kopt_sass_counts *k = &s->kernels[0];
            partial++;
            if (k->instructions < last || k->instructions > full->kernels[0].instructions ||
                k->branches > full->kernels[0].branches || k->nlines > full->kernels[0].nlines) {
                KTEST_FAIL("prefix of %zu bytes: %d instructions (previous %d, full %d)", cut,
                           k->instructions, last, full->kernels[0].instructions);
                cut = strlen(text);
            }
            last = k->instructions;
        }
        kopt_sass_free(s);
        free(part);
    }
    CHECK(invalid > 0);
    CHECK(partial > 0);
    CHECK_EQ_INT(last, full->kernels[0].instructions);
    kopt_sass_free(full);
    free(text);
}

/* ---- lookup ---------------------------------------------------------------------------- */

static void test_kernel_lookup(void)
{
    kopt_sass *s = parse_text("Function : _Z4gemmILi128EEvPKfPf\n/*0000*/ EXIT ;\n"
                              "Function : gemm_small\n/*0000*/ EXIT ;\n"
                              "Function : softmax_fast\n/*0000*/ EXIT ;\n");
    if (!s)
        return;
    CHECK(kopt_sass_kernel(s, "softmax_fast") == &s->kernels[2]);
    CHECK(kopt_sass_kernel(s, "gemm<128>") == &s->kernels[0]);        /* launch-plan name */
    CHECK(kopt_sass_kernel(s, "_Z4gemmILi128EEvPKfPf") == &s->kernels[0]);
    CHECK(kopt_sass_kernel(s, "gemm_s") == &s->kernels[1]);           /* prefix */
    CHECK(kopt_sass_kernel(s, "softmax") == &s->kernels[2]);
    CHECK(kopt_sass_kernel(s, "layernorm") == NULL);
    CHECK(kopt_sass_kernel(s, "") == NULL);
    CHECK(kopt_sass_kernel(s, NULL) == NULL);
    CHECK(kopt_sass_kernel(NULL, "gemm") == NULL);
    kopt_sass_free(s);
    kopt_sass_free(NULL);
}

/* ---- nvdisasm ------------------------------------------------------------------------ */

/* A stand-in nvdisasm: records its arguments and prints a fixture (or fails). */
static void test_from_cubin_with_stand_in(void)
{
    char script[4096], *tool, *args;
    char argfile[1024], cubin[1024];
    kopt_sass *s = NULL, *expected;
    const char *saved = getenv("KOPT_NVDISASM");
    char *saved_copy = saved ? strdup(saved) : NULL;

    snprintf(cubin, sizeof(cubin), "%s/vector_add_reference.cubin", SASS_DIR);
    snprintf(argfile, sizeof(argfile), "%s/args.txt", tmp);
    snprintf(script, sizeof(script),
             "#!/bin/sh\nprintf '%%s\\n' \"$@\" > '%s'\ncat '%s/vector_add_reference.sass'\n",
             argfile, SASS_DIR);
    tool = ktest_write_file(tmp, "fake_nvdisasm", script);
    if (!tool || !CHECK(chmod(tool, 0755) == 0))
        goto cleanup;
    setenv("KOPT_NVDISASM", tool, 1);
    if (CHECK_EQ_INT(kopt_sass_from_cubin(&s, ctx, cubin), KOPT_OK) &&
        (expected = fixture("vector_add_reference"))) {
        check_same_counts(&s->kernels[0], &expected->kernels[0]);
        CHECK_EQ_INT(s->kernels[0].nlines, expected->kernels[0].nlines);
        kopt_sass_free(expected);
    } else {
        fprintf(stderr, "  %s\n", kopt_errmsg(ctx));
    }
    kopt_sass_free(s);
    s = NULL;
    args = ktest_read_file(argfile);
    if (CHECK(args != NULL)) {
        CHECK_STR_CONTAINS(args, "--print-line-info\n");
        CHECK_STR_CONTAINS(args, cubin);
    }
    free(args);

    /* a tool that fails: the status says so, with its output */
    snprintf(script, sizeof(script), "#!/bin/sh\necho 'nvdisasm fatal : boom'\nexit 3\n");
    free(tool);
    tool = ktest_write_file(tmp, "failing_nvdisasm", script);
    if (tool && CHECK(chmod(tool, 0755) == 0)) {
        setenv("KOPT_NVDISASM", tool, 1);
        CHECK_EQ_INT(kopt_sass_from_cubin(&s, ctx, cubin), KOPT_E_ERROR);
        CHECK(s == NULL);
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), "boom");
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), "exit 3");
    }
    /* KOPT_NVDISASM naming nothing runnable is an error, not a fall-back */
    setenv("KOPT_NVDISASM", "/nonexistent/nvdisasm", 1);
    CHECK_EQ_INT(kopt_sass_from_cubin(&s, ctx, cubin), KOPT_E_NOT_FOUND);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "KOPT_NVDISASM");
    /* no such cubin */
    CHECK_EQ_INT(kopt_sass_from_cubin(&s, ctx, "/nonexistent/k.cubin"), KOPT_E_NOT_FOUND);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "/nonexistent/k.cubin");
    CHECK_EQ_INT(kopt_sass_from_cubin(NULL, ctx, cubin), KOPT_E_INVALID);
cleanup:
    ktest_restore_env("KOPT_NVDISASM", saved_copy);
    free(saved_copy);
    free(tool);
}

/* The real nvdisasm (PATH, the CUDA toolkit or the Python package) on the recorded cubin
 * gives the counts of the recorded disassembly. */
static void test_from_cubin_live(void)
{
    char cubin[1024];
    kopt_sass *s = NULL, *expected;
    kopt_status st;

    snprintf(cubin, sizeof(cubin), "%s/vector_add_reference.cubin", SASS_DIR);
    st = kopt_sass_from_cubin(&s, ctx, cubin);
    if (st == KOPT_E_NOT_FOUND && strstr(kopt_errmsg(ctx), "nvdisasm not found")) {
        KTEST_SKIP("no nvdisasm");
        return;
    }
    if (!CHECK_EQ_INT(st, KOPT_OK)) {
        fprintf(stderr, "  %s\n%s\n", kopt_errmsg(ctx), kopt_errdetail(ctx));
        return;
    }
    if ((expected = fixture("vector_add_reference"))) {
        if (CHECK_EQ_INT(s->nkernels, 1)) {
            check_same_counts(&s->kernels[0], &expected->kernels[0]);
            CHECK_EQ_INT(s->kernels[0].nlines, expected->kernels[0].nlines);
        }
        kopt_sass_free(expected);
    }
    kopt_sass_free(s);
}

/* ---- planted kernels --------------------------------------------------------------- */

static const char *const TOOL_NAMES[] = {
    "uncoalesced_global", "sector_efficiency", "non_vectorized_loads", "bank_conflicts",
    "register_spills", "occupancy_limiter", "high_registers", "small_grid_tail", "warp_stalls",
    "divergence", "no_tensor_cores", "unfused_fp", "fp64_in_fp32", "dram_saturated",
    "missing_async_copy", NULL};

/* The value of a "// key: value" line (caller frees), or NULL. */
static char *header_value(const char *src, const char *key)
{
    char pat[64];
    const char *p;

    snprintf(pat, sizeof(pat), "\n// %s:", key);
    if (!(p = strstr(src, pat)))
        return NULL;
    p += strlen(pat);
    while (*p == ' ')
        p++;
    return strndup(p, strcspn(p, "\r\n"));
}

static int known_tool(const char *name, size_t n)
{
    for (int i = 0; TOOL_NAMES[i]; i++)
        if (strlen(TOOL_NAMES[i]) == n && strncmp(TOOL_NAMES[i], name, n) == 0)
            return 1;
    return 0;
}

/* Each planted kernel names its problem and the tools that should fire, loads as a
 * candidate of that problem, compiles for sm_90a (when NVRTC loads), and has its SASS
 * fixture. */
static void test_planted_kernels(void)
{
    DIR *d = opendir(PLANTED_DIR);
    struct dirent *e;
    int n = 0, compiled = 0, have_nvrtc = 1;
    char *cache = kopt_path_join(tmp, "cache");
    const char *required[] = {"bank_conflicts", "uncoalesced_global", "register_spills",
                              "divergence", "no_tensor_cores", "unfused_fp", "fp64_in_fp32"};
    int seen[7] = {0};

    if (!CHECK(d != NULL)) {
        free(cache);
        return;
    }
    while ((e = readdir(d))) {
        char path[1024], probdir[1024], fix[1024];
        char *src, *prob_line = NULL, *plants = NULL;
        kopt_problem *p = NULL;
        kopt_candidate *c = NULL;
        kopt_compiled *cc = NULL;
        if (!ends_with(e->d_name, ".cu"))
            continue;
        n++;
        snprintf(path, sizeof(path), "%s/%s", PLANTED_DIR, e->d_name);
        if (!CHECK((src = ktest_read_file(path)) != NULL))
            continue;
        prob_line = header_value(src, "problem");
        plants = header_value(src, "plants");
        if (!CHECK(prob_line && strncmp(prob_line, "examples/", 9) == 0) || !CHECK(plants)) {
            fprintf(stderr, "  ^ %s\n", path);
            goto next;
        }
        /* every planted tool is a known micro-tool name */
        for (const char *t = plants; *t;) {
            size_t len = strcspn(t, ", ");
            if (len && !known_tool(t, len))
                KTEST_FAIL("%s: unknown tool '%.*s'", path, (int)len, t);
            for (int i = 0; i < 7; i++)
                if (len == strlen(required[i]) && strncmp(t, required[i], len) == 0)
                    seen[i] = 1;
            t += len;
            t += strspn(t, ", ");
        }
        snprintf(fix, sizeof(fix), "%s/planted_%.*s.sass", SASS_DIR,
                 (int)(strlen(e->d_name) - 3), e->d_name);
        if (!CHECK(access(fix, R_OK) == 0))
            fprintf(stderr, "  ^ no SASS fixture %s\n", fix);
        snprintf(probdir, sizeof(probdir), "%s/%s", KOPT_EXAMPLES_DIR, prob_line + 9);
        if (!CHECK_EQ_INT(kopt_problem_load(&p, ctx, probdir), KOPT_OK) ||
            !CHECK_EQ_INT(kopt_candidate_load(&c, ctx, path, p), KOPT_OK)) {
            fprintf(stderr, "  %s: %s\n", path, kopt_errmsg(ctx));
            goto next;
        }
        CHECK(c->has_front_matter);
        if (have_nvrtc) {
            kopt_compile_opts o = KOPT_COMPILE_OPTS_INIT;
            kopt_status st;
            o.cache_dir = cache;
            o.arch = "sm_90a";
            st = kopt_compile(&cc, ctx, c, &o);
            if (st == KOPT_E_NO_DEVICE) {
                have_nvrtc = 0;
                printf("  skipped compiling: NVRTC not available (%s)\n", kopt_errmsg(ctx));
            } else if (CHECK_EQ_INT(st, KOPT_OK)) {
                compiled++;
                CHECK(cc->nkernels >= 1);
                if (strstr(plants, "register_spills"))   /* ptxas' report says so too */
                    CHECK(cc->kernels[0].spill_stores > 0);
            } else {
                fprintf(stderr, "  %s: %s\n%s\n", path, kopt_errmsg(ctx), kopt_errdetail(ctx));
            }
        }
    next:
        kopt_compiled_free(cc);
        kopt_candidate_free(c);
        kopt_problem_free(p);
        free(prob_line);
        free(plants);
        free(src);
    }
    closedir(d);
    for (int i = 0; i < 7; i++)
        if (!CHECK(seen[i]))
            fprintf(stderr, "  ^ no planted kernel for %s\n", required[i]);
    CHECK(n >= 7);
    printf("  %d planted kernels, %d compiled\n", n, compiled);
    free(cache);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_counting_rules),
        KTEST(test_cuobjdump_layout),
        KTEST(test_every_fixture_parses),
        KTEST(test_examples_fast_vs_reference),
        KTEST(test_planted_fixtures),
        KTEST(test_line_info_maps_to_source),
        KTEST(test_cuobjdump_matches_nvdisasm),
        KTEST(test_malformed),
        KTEST(test_truncated),
        KTEST(test_kernel_lookup),
        KTEST(test_from_cubin_with_stand_in),
        KTEST(test_from_cubin_live),
        KTEST(test_planted_kernels),
    };
    int rc;

    ctx = kopt_ctx_new();
    tmp = ktest_tmpdir("sass");
    if (!ctx || !tmp)
        return 1;
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    ktest_rmtree(tmp);
    free(tmp);
    kopt_ctx_free(ctx);
    return rc;
}
