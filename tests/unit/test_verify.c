/*
 * Output comparison (src/eval/verify.c, kopt__compare): the threaded f32 scan of large
 * tensors must report what a plain element-by-element pass reports (largest absolute and
 * relative errors, the first mismatch and its coordinates), wherever in the tensor the
 * interesting element lies. And the verdicts from the numbers (src/eval/verdicts.c): a
 * median at or below zero is SUSPECT on any path, with or without work counts; failures
 * only at the check sizes are SHAPE_SPECIFIC.
 */
#include "ktest.h"

#include "../../src/eval/eval_int.h"
#include "../../src/eval/worker_int.h"
#include "../../src/eval/worker_priv.h"
#include "../../src/core/core_int.h"
#include "kopt/proc.h"

#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

enum { ROWS = 3000, COLS = 3001 };   /* 9,003,000 elements: three scan threads */

static float *got, *want;

static kopt_btensor tensor(void)
{
    kopt_btensor t;

    memset(&t, 0, sizeof(t));
    snprintf(t.name, sizeof(t.name), "y");
    t.dtype = KOPT_F32;
    t.count = (int64_t)ROWS * COLS;
    t.ndim = 2;
    t.shape[0] = ROWS;
    t.shape[1] = COLS;
    t.atol = 1e-5;
    t.rtol = 1e-4;
    return t;
}

static void fill(void)
{
    for (int64_t i = 0; i < (int64_t)ROWS * COLS; i++) {
        want[i] = (float)sin((double)i * 0.001) * 10.0f;
        got[i] = want[i];
    }
}

/* Brute force, the definition: the largest errors over every element. */
static void brute(const kopt_btensor *t, double *max_abs, double *max_rel)
{
    *max_abs = *max_rel = 0;
    for (int64_t i = 0; i < t->count; i++) {
        double e = fabs((double)got[i] - (double)want[i]);
        if (e > *max_abs)
            *max_abs = e;
        if (want[i] != 0 && e / fabs((double)want[i]) > *max_rel)
            *max_rel = e / fabs((double)want[i]);
    }
}

static void test_close_errors_match_brute_force(void)
{
    kopt_btensor t = tensor();
    kopt_check c;
    double ma, mr;
    /* small errors in every thread's part, the largest in the last part */
    int64_t at[] = {5, 3000000, 6000001, 9002999};

    fill();
    for (int k = 0; k < 4; k++)
        got[at[k]] = want[at[k]] + (float)(1e-6 * (k + 1));
    memset(&c, 0, sizeof(c));
    kopt__compare(&t, got, want, &c);
    brute(&t, &ma, &mr);
    CHECK_EQ_INT(c.mismatches, 0);
    CHECK_EQ_INT(c.first_index, -1);
    CHECK(c.max_abs_err == ma);
    CHECK(fabs(c.max_rel_err - mr) <= 1e-12 * mr);
    CHECK(ma > 3e-6);
}

static void test_mismatch_in_a_later_part(void)
{
    kopt_btensor t = tensor();
    kopt_check c;
    int64_t bad = (int64_t)2500 * COLS + 17;   /* in the third scan thread's part */

    fill();
    got[bad] = want[bad] + 1.0f;
    got[bad + 5] = NAN;
    memset(&c, 0, sizeof(c));
    kopt__compare(&t, got, want, &c);
    CHECK_EQ_INT(c.mismatches, 2);
    CHECK_EQ_INT(c.first_index, bad);
    CHECK_EQ_INT(c.first_coord[0], 2500);
    CHECK_EQ_INT(c.first_coord[1], 17);
    CHECK(fabs(c.first_got - c.first_want - 1.0) < 1e-5);
}

static void test_nan_where_the_reference_has_nan(void)
{
    kopt_btensor t = tensor();
    kopt_check c;

    fill();
    want[42] = got[42] = NAN;
    memset(&c, 0, sizeof(c));
    kopt__compare(&t, got, want, &c);
    CHECK_EQ_INT(c.mismatches, 0);
    got[43] = NAN;                 /* NaN where the reference has a number */
    kopt__compare(&t, got, want, &c);
    CHECK_EQ_INT(c.mismatches, 1);
    CHECK_EQ_INT(c.first_index, 43);
}

/* The timing's stopping rule: the median's 95% interval against the precision asked. */
static void test_median_precision(void)
{
    float v[400];
    uint64_t x = 88172645463325252ULL;

    /* tight samples: 1.000 +- 0.1%: known to 0.5% from a few dozen on */
    for (int i = 0; i < 400; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        v[i] = 1.0f + 0.002f * (float)((double)(x % 1000) / 1000.0 - 0.5);
    }
    qsort(v, 50, sizeof(float), wk_cmp_float);
    CHECK(wk_median_known(v, 50, 0.005));
    CHECK(!wk_median_known(v, 50, 0.00001));
    CHECK(!wk_median_known(v, 4, 0.5));          /* too few to say anything */
    /* wide samples: 1.0 .. 2.0 uniform: the median is not known to 1% from 50 runs */
    for (int i = 0; i < 400; i++)
        v[i] = 1.0f + (float)i / 400.0f;
    CHECK(!wk_median_known(v, 400, 0.01));
    CHECK(wk_median_known(v, 400, 0.1));
}

/* A correct candidate whose timed median is at or below zero after the timer's cost is
 * taken off did no measurable work: SUSPECT, whether or not the problem has work counts or
 * the device its ceilings; a positive median without a bound stays as it was. */
static void test_no_measurable_work_is_suspect(void)
{
    kopt_eval_result r;
    kopt_bound b;
    kopt_problem prob;

    memset(&b, 0, sizeof(b));
    memset(&prob, 0, sizeof(prob));
    for (int has_work = 0; has_work < 2; has_work++) {
        memset(&r, 0, sizeof(r));
        b.has_work = has_work;
        b.bytes = 1e9;
        r.timing.n = 50;
        r.timing.median_ms = 0;
        r.timing.raw_median_ms = 0.0017;
        r.timing.overhead_ms = 0.0039;
        CHECK_EQ_INT(kopt__speed_of_light(&r, &b, &prob, 1.0), 1);
        CHECK_EQ_INT(r.verdict, KOPT_VERDICT_SUSPECT);
        CHECK_STR_CONTAINS(r.message, "no measurable work");
    }
    memset(&r, 0, sizeof(r));
    r.timing.n = 50;
    r.timing.median_ms = -1e-6;               /* below zero as well */
    CHECK_EQ_INT(kopt__speed_of_light(&r, &b, &prob, 1.0), 1);
    memset(&r, 0, sizeof(r));
    r.timing.n = 50;
    r.timing.median_ms = 0.5;                 /* measurable, no ceilings: no bound to judge */
    r.verdict = KOPT_VERDICT_OK;
    CHECK_EQ_INT(kopt__speed_of_light(&r, &b, &prob, 1.0), 0);
    CHECK_EQ_INT(r.verdict, KOPT_VERDICT_OK);
}

/* Ceilings measured low (other work on the GPU while they were measured) do not make a
 * correct kernel timed alone "faster than the device allows": the guard raises each to 90%
 * of the spec-derived rate (an H100 SXM: 3352 GB/s from 2619 MHz x 5120 bits x 2), while
 * the reported roofline keeps the measured ones; a time faster than the spec rate is still
 * SUSPECT, and says that the floor was used. */
static void test_guard_floor(void)
{
    kopt_eval_result r;
    kopt_bound b;
    kopt_problem prob;
    kopt_ceilings g;
    const double measured[] = {3100, 2000, 2000}, median[] = {0.25, 0.33, 0.2};
    const int suspect[] = {1, 0, 1};

    memset(&b, 0, sizeof(b));
    memset(&prob, 0, sizeof(prob));
    prob.compute = KOPT_COMPUTE_FP32;
    b.has_work = 1;
    b.bytes = 1e9;
    b.flops = 1e6;
    for (int i = 0; i < 3; i++) {
        memset(&r, 0, sizeof(r));
        r.device.cc_major = 9;
        r.device.sm_count = 132;
        r.device.clock_khz = 1980000;
        r.device.mem_clock_khz = 2619000;
        r.device.mem_bus_width = 5120;
        r.ceilings.valid = 1;
        r.ceilings.dram_copy_gbs = r.ceilings.dram_read_gbs = measured[i];
        r.ceilings.gflops[KOPT_COMPUTE_FP32] = 62000;
        r.ceilings.measured[KOPT_COMPUTE_FP32] = 1;
        r.timing.n = 50;
        r.timing.median_ms = median[i];
        r.verdict = KOPT_VERDICT_OK;
        CHECK_EQ_INT(kopt__speed_of_light(&r, &b, &prob, 1.1), suspect[i]);
        CHECK_EQ_INT(r.verdict, suspect[i] ? KOPT_VERDICT_SUSPECT : KOPT_VERDICT_OK);
        CHECK_NEAR(r.roofline.bound_ms, 1e9 / (measured[i] * 1e6), 1e-9);   /* as measured */
        kopt__guard_ceilings(&g, &r.ceilings, &r.device);
        CHECK_NEAR(g.dram_copy_gbs, measured[i] < 3000 ? 0.9 * 3352.32 : measured[i], 0.01);
        CHECK_NEAR(g.gflops[KOPT_COMPUTE_FP32], 62000, 1e-9);   /* above 90% of 66.9 TFLOP/s */
        if (i == 2)
            CHECK_STR_CONTAINS(r.message, "none below 90% of the spec rate");
        if (i == 0)
            CHECK(strstr(r.message, "spec rate") == NULL);
    }
}

/* An FP32 contraction whose tolerance admits TF32: the speed-of-light check holds it to the
 * TF32 tensor-core rate, and the result keeps that roofline (fast_roofline, what the
 * planner's headroom is measured against); a tight tolerance keeps FP32's and none. */
static void test_fast_roofline(void)
{
    kopt_eval_result r;
    kopt_bound b;
    kopt_problem prob;
    kopt_btensor out;

    memset(&b, 0, sizeof(b));
    memset(&prob, 0, sizeof(prob));
    memset(&out, 0, sizeof(out));
    prob.compute = KOPT_COMPUTE_FP32;
    out.role = KOPT_ROLE_OUTPUT;
    out.rtol = 1e-2;
    b.ntensors = 1;
    b.tensors = &out;
    b.has_work = 1;
    b.flops = 2.0 * 4096 * 4096 * 4096;      /* 137.4 GFLOP */
    b.bytes = 2e8;
    for (int tight = 0; tight < 2; tight++) {
        memset(&r, 0, sizeof(r));
        r.ceilings.valid = 1;
        r.ceilings.dram_copy_gbs = r.ceilings.dram_read_gbs = r.ceilings.dram_write_gbs = 3000;
        r.ceilings.gflops[KOPT_COMPUTE_FP32] = 50000;
        r.ceilings.gflops[KOPT_COMPUTE_TF32] = 400000;
        r.ceilings.measured[KOPT_COMPUTE_FP32] = r.ceilings.measured[KOPT_COMPUTE_TF32] = 1;
        r.timing.n = 50;
        r.timing.median_ms = tight ? 3.0 : 1.0;  /* TF32 at 1 ms: below FP32's 2.75 ms bound */
        r.verdict = KOPT_VERDICT_OK;
        out.rtol = tight ? 1e-5 : 1e-2;
        CHECK_EQ_INT(kopt__speed_of_light(&r, &b, &prob, 1.0), 0);
        CHECK_EQ_INT(r.verdict, KOPT_VERDICT_OK);
        CHECK_NEAR(r.roofline.bound_ms, b.flops / 5e10, 1e-9);
        CHECK_EQ_INT(r.fast_roofline.valid, !tight);
        if (!tight) {
            CHECK_EQ_INT(r.fast_compute, KOPT_COMPUTE_TF32);
            CHECK_NEAR(r.fast_roofline.bound_ms, b.flops / 4e11, 1e-9);
            CHECK_NEAR(r.fast_roofline.pct_of_bound, 100 * b.flops / 4e11, 1e-6);   /* 34.4 */
        }
    }
}

static void test_wrong_only_at_check_sizes_is_shape_specific(void)
{
    kopt_eval_result r;
    kopt_check checks[3];

    memset(&r, 0, sizeof(r));
    memset(checks, 0, sizeof(checks));
    r.checks = checks;
    r.nchecks = 3;
    snprintf(checks[0].sizes_label, sizeof(checks[0].sizes_label), "main");
    snprintf(checks[1].sizes_label, sizeof(checks[1].sizes_label), "check");
    snprintf(checks[2].sizes_label, sizeof(checks[2].sizes_label), "check");
    snprintf(checks[1].tensor, sizeof(checks[1].tensor), "y");
    checks[1].mismatches = 7;
    kopt__wrong_verdict(&r, "the reference");
    CHECK_EQ_INT(r.verdict, KOPT_VERDICT_SHAPE_SPECIFIC);
    CHECK_STR_CONTAINS(r.message, "written for one shape");
    CHECK_EQ_STR(kopt_verdict_name(r.verdict), "SHAPE_SPECIFIC");
    checks[0].mismatches = 1;                 /* wrong at the main sizes too: WRONG */
    kopt__wrong_verdict(&r, "the reference");
    CHECK_EQ_INT(r.verdict, KOPT_VERDICT_WRONG);
}

/* The PyTorch worker's census and clock as the parent reads them (src/eval/torch_checks.c):
 * library kernels told from the candidate's own by their names, the lowest precision a
 * library kernel's name shows; libkopt's samples replace the Python-reported ones, and a
 * difference between the two is reported. Names as CUPTI gave them on an H200 (torch 2.11). */
static void test_torch_census_and_clock(void)
{
    const char *result =
        "{\"phases\": [{\"samples_ms\": [0.5, 0.25], \"event_overhead_ms\": 0.01, "
        "\"clock\": \"libkopt\", \"kernels\": ["
        "\"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_\", "
        "\"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1\", "
        "\"scale_add_kernel\", \"_Z11my_softmaxPKfPfi\"]}]}";
    kopt__worker_run run;
    kopt_eval_result r;
    char msg[512] = "";

    memset(&run, 0, sizeof(run));
    memset(&r, 0, sizeof(r));
    run.result = json_loads(result, 0, NULL);
    CHECK(run.result != NULL);
    run.clock = json_pack("[{s:s, s:i, s:s, s:[f, f], s:[f, f, f]}]", "event", "clock", "phase",
                          0, "clock", "cuda events (libkopt)", "samples_ms", 0.5, 0.25,
                          "overhead_ms", 0.002, 0.004, 0.003);
    CHECK_EQ_INT(kopt__torch_clock_apply(&run, msg, sizeof(msg)), 0);
    CHECK_NEAR(json_number_value(json_object_get(json_array_get(json_object_get(run.result,
               "phases"), 0), "event_overhead_ms")), 0.003, 1e-12);
    kopt__torch_census(&r, &run);
    CHECK_EQ_INT(r.census, 1);
    CHECK_EQ_INT(r.kernels_launched, 4);
    CHECK_EQ_INT(r.own_kernels, 2);
    CHECK_EQ_STR(r.own_kernel_names, "scale_add_kernel _Z11my_softmaxPKfPfi");
    CHECK_EQ_STR(r.precision, "bf16");
    CHECK_STR_CONTAINS(r.timer, "libkopt");
    CHECK(kopt__kernel_from_library("ampere_sgemm_128x64_nn"));
    CHECK(kopt__kernel_from_library("_ZN7cutlass6KernelI"));
    CHECK(!kopt__kernel_from_library("vector_add"));
    /* the worker's Python reported other numbers than libkopt kept: named */
    json_real_set(json_array_get(json_object_get(json_array_get(json_object_get(run.result,
                  "phases"), 0), "samples_ms"), 1), 0.00025);
    json_real_set(json_array_get(json_object_get(json_array_get(run.clock, 0), "samples_ms"),
                  1), 0.25);
    CHECK_EQ_INT(kopt__torch_clock_apply(&run, msg, sizeof(msg)), 1);
    CHECK_STR_CONTAINS(msg, "differ from those libkopt's clock kept");
    json_decref(run.result);
    json_decref(run.clock);
}

/* The lowest precision a SASS listing computes at (src/eval/torch_checks.c): the recorded
 * H200 listing of examples/gemm_bf16/fast.cu (BF16 HMMA), and lines as cuobjdump and
 * nvdisasm print them. */
static void test_sass_precision(void)
{
    char *text = NULL, out[16];
    size_t len = 0;
    kopt_ctx *ctx = kopt_ctx_new();
    char path[1024];

    snprintf(path, sizeof(path), "%s/sass/gemm_bf16_fast.sass", KOPT_TEST_DATA_DIR);
    if (CHECK_EQ_INT(kopt_file_read(ctx, path, &text, &len), KOPT_OK)) {
        kopt__sass_precision(text, out, sizeof(out));
        CHECK_EQ_STR(out, "bf16");
    }
    free(text);
    kopt__sass_precision("        /*0050*/  FFMA R1, R2, R3, R4 ;\n"
                         "        /*0060*/  LDG.E.128 R4, [R2.64] ;\n", out, sizeof(out));
    CHECK_EQ_STR(out, "");                        /* FP32 only */
    kopt__sass_precision("  /*0070*/  @P0 HMMA.1684.F32.TF32 R4, R8, R12, R4 ;\n"
                         "  /*0080*/  HFMA2 R2, R3, R4, R5 ;\n", out, sizeof(out));
    CHECK_EQ_STR(out, "fp16");                    /* the lowest of tf32 and fp16 */
    kopt__sass_precision("Function : _Z4gemmv\n  /*0090*/  QGMMA.64x128x32.F32.E4M3.E4M3 R24, "
                         "gdesc[UR4], R24 ;\n", out, sizeof(out));
    CHECK_EQ_STR(out, "fp8");
    /* ptxas puts constants in registers with HFMA2.MMA Rd, -RZ, RZ, a, b: a move, not FP16
     * arithmetic (recorded FP32 kernels have them); a real one (x * 1 + x) still counts */
    for (int i = 0; i < 2; i++) {
        static const char *const fp32[] = {"sgemm_fast.sass", "layernorm_fast.sass"};
        snprintf(path, sizeof(path), "%s/sass/%s", KOPT_TEST_DATA_DIR, fp32[i]);
        text = NULL;
        if (CHECK_EQ_INT(kopt_file_read(ctx, path, &text, &len), KOPT_OK) &&
            CHECK(strstr(text, "HFMA2.MMA") != NULL)) {
            kopt__sass_precision(text, out, sizeof(out));
            CHECK_EQ_STR(out, "");
        }
        free(text);
    }
    kopt__sass_precision("  /*00d0*/  HFMA2.MMA R6, -RZ, RZ, 1.125, -9232 ;\n"
                         "  /*00e0*/  HFMA2 R7, -RZ, RZ, 0, 0 ;\n", out, sizeof(out));
    CHECK_EQ_STR(out, "");
    kopt__sass_precision("  /*0150*/  HFMA2.MMA R0, R0, 1, 1, R0 ;\n", out, sizeof(out));
    CHECK_EQ_STR(out, "fp16");
    kopt__sass_precision("  /*0150*/  HFMA2.MMA R0, -RZ, R3, 1, 1 ;\n", out, sizeof(out));
    CHECK_EQ_STR(out, "fp16");                    /* one factor a register: arithmetic */
    /* rounding to a narrower float, as nvdisasm 13.0 lists ptxas's code for __float2bfloat16,
     * __float2half, __floats2bfloat162_rn, __floats2half2_rn (sm_90, then sm_80) */
    {
        static const struct { const char *line, *want; } conv[] = {
            {"F2F.BF16.F32 R0, R2 ;", "bf16"},
            {"F2FP.BF16.F32.PACK_AB R7, R7, R0 ;", "bf16"},
            {"F2FP.F16.F32.PACK_AB R0, RZ, R2 ;", "fp16"},
            {"F2FP.BF16.PACK_AB R0, RZ, R2 ;", "bf16"},
            {"F2FP.PACK_AB R7, R7, R0 ;", "fp16"},
            {"F2F.F16.F32 R0, R2 ;", "fp16"},
            {"F2F.F64.F32 R4, R2 ;", ""},             /* wider */
            {"F2I.NTZ R7, R2 ;", ""},                  /* to an integer: not a float */
            {"SHF.L.U32 R0, R0, 0x10, RZ ;", ""},      /* bf16 -> f32 widening */
        };
        for (size_t i = 0; i < sizeof(conv) / sizeof(conv[0]); i++) {
            char line[128];
            snprintf(line, sizeof(line), "        /*0040*/  %s\n", conv[i].line);
            kopt__sass_precision(line, out, sizeof(out));
            if (!CHECK_EQ_STR(out, conv[i].want))
                fprintf(stderr, "  for %s\n", conv[i].line);
        }
    }
    kopt_ctx_free(ctx);
}

/* A binary's SASS is read once a process: the same file again (same size and mtime) takes
 * the precision from memory, with no cuobjdump run; a changed file is read again. A stand-in
 * cuobjdump counts its runs in a file. */
/* A stand-in cuobjdump in a new folder `dir` (a mkdtemp template), set as $KOPT_CUOBJDUMP:
 * it prints the SASS line `sass` and counts its runs in `count` (dir/runs); `bin` is
 * dir/cand.so. 0 when the folder could not be made. stand_in_end takes it all away. */
static int stand_in_cuobjdump(char *dir, const char *sass, char *tool, char *bin, char *count,
                              size_t n)
{
    FILE *f;

    if (!CHECK(mkdtemp(dir) != NULL))
        return 0;
    snprintf(tool, n, "%s/cuobjdump", dir);
    snprintf(bin, n, "%s/cand.so", dir);
    snprintf(count, n, "%s/runs", dir);
    f = fopen(tool, "w");
    /* as cuobjdump: -elf lists the sections (a kernel's .text twice, and its relocations),
     * -sass -fun disassembles the functions named: kopt reads each of the two apart, at once
     * (one cuobjdump per function: it is ~0.2 s a function), _Z1kv at FP32 and _Z2kxv at
     * `sass`, so the precision says both were read; any other call is recorded as wrong. The
     * read of _Z1kv records "run" (once a read). STANDIN_FAIL: the disassembly fails ("fail"
     * recorded, once a read); STANDIN_SLEEP: it takes that long; STANDIN_ORDER: a file where
     * each disassembly writes "start" before its sleep and "end" after */
    fprintf(f, "#!/bin/sh\n"
               "if [ \"$1\" = -elf ]; then\n"
               "  printf '  11 PROGBITS .text._Z1kv\\n  12 PROGBITS .text._Z2kxv\\n"
               "  13 REL .rel.text._Z1kv\\n.text._Z1kv\\n'; exit 0\nfi\n"
               "case \"$*\" in\n"
               "  \"-sass -fun _Z1kv %s\") first=1 ;;\n"
               "  \"-sass -fun _Z2kxv %s\") first= ;;\n"
               "  *) echo \"unexpected: $*\" >> '%s'; exit 0 ;;\n"
               "esac\n"
               "if [ -n \"$STANDIN_FAIL\" ]; then\n"
               "  [ -n \"$first\" ] && echo fail >> '%s'; sleep \"${STANDIN_SLEEP:-0}\"; exit 3\nfi\n"
               "[ -n \"$STANDIN_ORDER\" ] && echo start >> \"$STANDIN_ORDER\"\n"
               "sleep \"${STANDIN_SLEEP:-0}\"\n"
               "[ -n \"$STANDIN_ORDER\" ] && echo end >> \"$STANDIN_ORDER\"\n"
               "if [ -n \"$first\" ]; then echo run >> '%s'; echo '  /*0070*/  FFMA R1, R2, R3, R4 ;'\n"
               "else echo '  /*0070*/  %s ;'; fi\n", bin, bin, count, count, count, sass);
    fclose(f);
    chmod(tool, 0755);
    f = fopen(bin, "w");              /* a size of its own (the cache keys on it too) */
    fprintf(f, "not really a shared object: %s", sass);
    fclose(f);
    setenv("KOPT_CUOBJDUMP", tool, 1);
    return 1;
}

static void stand_in_end(const char *dir, const char *tool, const char *bin, const char *count)
{
    unsetenv("KOPT_CUOBJDUMP");
    unlink(tool);
    unlink(bin);
    unlink(count);
    rmdir(dir);
}

static void test_binary_precision_read_once(void)
{
    char dir[] = "/tmp/kopt-test-precision-XXXXXX", tool[1200], bin[1200], count[1200];
    kopt__precision_job j;
    char *text = NULL;
    size_t len = 0;
    kopt_ctx *ctx = kopt_ctx_new();
    FILE *f;

    if (!stand_in_cuobjdump(dir, "HMMA.1684.F32.TF32 R4, R8, R12, R4", tool, bin, count,
                            sizeof(tool))) {
        kopt_ctx_free(ctx);
        return;
    }
    for (int round = 0; round < 3; round++) {
        if (round == 2) {                /* changed: read again */
            f = fopen(bin, "a");
            fputs(", longer now", f);
            fclose(f);
        }
        kopt__binary_precision_start(&j, bin);
        CHECK_EQ_INT(j.cached, round == 1);
        kopt__binary_precision_wait(&j);
        CHECK_EQ_STR(j.out, "tf32");
        CHECK_EQ_STR(j.note, "");
    }
    if (CHECK_EQ_INT(kopt_file_read(ctx, count, &text, &len), KOPT_OK))
        CHECK_EQ_STR(text, "run\nrun\n");   /* rounds 0 and 2 ran it, round 1 did not */
    free(text);
    stand_in_end(dir, tool, bin, count);
    kopt_ctx_free(ctx);
}

/* A binary's functions are read at once, each by a cuobjdump of its own: both stand-in
 * reads start before either ends (each sleeps 0.5 s; read one after the other, the first
 * would end before the second starts). */
static void test_binary_precision_reads_functions_at_once(void)
{
    char dir[] = "/tmp/kopt-test-atonce-XXXXXX", tool[1200], bin[1200], count[1200],
         order[1300], out[16], note[300];
    char *text = NULL;
    size_t len = 0;
    kopt_ctx *ctx = kopt_ctx_new();

    if (!stand_in_cuobjdump(dir, "HMMA.1684.F32.TF32 R4, R8, R12, R4", tool, bin, count,
                            sizeof(tool))) {
        kopt_ctx_free(ctx);
        return;
    }
    snprintf(order, sizeof(order), "%s/order", dir);
    setenv("STANDIN_ORDER", order, 1);
    setenv("STANDIN_SLEEP", "0.5", 1);
    kopt__binary_precision(ctx, bin, out, sizeof(out), note, sizeof(note));
    unsetenv("STANDIN_ORDER");
    unsetenv("STANDIN_SLEEP");
    CHECK_EQ_STR(note, "");
    CHECK_EQ_STR(out, "tf32");                 /* _Z2kxv's: both read */
    if (CHECK_EQ_INT(kopt_file_read(ctx, order, &text, &len), KOPT_OK))
        CHECK_EQ_STR(text, "start\nstart\nend\nend\n");
    free(text);
    unlink(order);
    stand_in_end(dir, tool, bin, count);
    kopt_ctx_free(ctx);
}

/* The real tools on a real shared object (nvcc, cuobjdump, nvdisasm; skipped without them):
 * only the cubins with functions disassembled (-fun, the .text sections -elf lists) read the
 * precision all of cuobjdump -sass reads, and the precision `want`. 1: run, 0: skipped. */
static int real_object_precision(const char *src, const char *want)
{
    char dir[] = "/tmp/kopt-test-realso-XXXXXX", cu[600] = "", so[600] = "", out[16], note[300],
         all[16], *text = NULL, *nvcc = kopt_find_program(NULL, "nvcc"),
         *tool = kopt_find_program("KOPT_TEST_CUOBJDUMP", "cuobjdump");
    kopt_ctx *ctx = kopt_ctx_new();
    int code = -1, ran = 0;
    FILE *f;

    if (!nvcc || !tool || !mkdtemp(dir)) {
        KTEST_SKIP(!nvcc ? "nvcc not found (the CUDA toolkit's)"
                         : "cuobjdump not found (the CUDA toolkit's; or pip install "
                           "nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm, then "
                           "KOPT_TEST_CUOBJDUMP and NVDISASM_PATH)");
        goto done;
    }
    snprintf(cu, sizeof(cu), "%s/cand.cu", dir);
    snprintf(so, sizeof(so), "%s/cand.so", dir);
    if ((f = fopen(cu, "w"))) {
        fputs(src, f);
        fclose(f);
    }
    {
        const char *argv[] = {nvcc, "-shared", "-Xcompiler", "-fPIC", "-O3",
                              "-gencode=arch=compute_90,code=sm_90", "-o", so, cu, NULL};
        if (!CHECK_EQ_INT(kopt_proc_run(ctx, argv, 300, &code, &text), KOPT_OK) ||
            !CHECK_EQ_INT(code, 0)) {
            printf("  nvcc: %s\n", text ? text : kopt_errmsg(ctx));
            goto done;
        }
        free(text);
        text = NULL;
    }
    {
        const char *argv[] = {tool, "-sass", so, NULL};   /* every cubin, as before */
        if (kopt_proc_run(ctx, argv, 60, &code, &text) != KOPT_OK || code != 0) {
            printf("  cuobjdump -sass: exit %d: %.300s\n", code, text ? text : "");
            KTEST_SKIP("cuobjdump -sass failed (nvdisasm on PATH or NVDISASM_PATH?)");
            goto done;
        }
        kopt__sass_precision(text, all, sizeof(all));
    }
    setenv("KOPT_CUOBJDUMP", tool, 1);       /* the one kopt uses, for this case only */
    kopt__binary_precision(ctx, so, out, sizeof(out), note, sizeof(note));
    unsetenv("KOPT_CUOBJDUMP");
    ran = 1;
    CHECK_EQ_STR(note, "");
    CHECK_EQ_STR(all, want);
    CHECK_EQ_STR(out, all);
done:
    if (so[0]) {
        unlink(so);
        unlink(cu);
        rmdir(dir);
    }
    free(text);
    free(nvcc);
    free(tool);
    kopt_ctx_free(ctx);
    return ran;
}

static void test_binary_precision_of_a_real_object(void)
{
    /* HADD2 in a device function a kernel calls; a kernel at FP64 */
    if (!real_object_precision(
            "#include <cuda_fp16.h>\n"
            "__device__ __noinline__ __half2 twice(__half2 x) { return __hadd2(x, x); }\n"
            "__global__ void halves(__half2 *y) { y[threadIdx.x] = twice(y[threadIdx.x]); }\n"
            "__global__ void wide(double *y) { y[threadIdx.x] *= 3.0; }\n"
            "extern \"C\" int kopt_candidate_run(const void *io) {\n"
            "  (void)io; halves<<<1, 32>>>(0); wide<<<1, 32>>>(0); return 0; }\n", "fp16"))
        return;
    /* FP32 only, with constants ptxas writes as HFMA2.MMA: no lower precision */
    real_object_precision(
        "__global__ void fp32(const float *x, float *y) { y[threadIdx.x] = x[threadIdx.x] * 3.f"
        " + 1.f; }\n"
        "extern \"C\" int kopt_candidate_run(const void *io) {\n"
        "  (void)io; fp32<<<1, 32>>>(0, 0); return 0; }\n", "");
    /* FP32 arithmetic on a value rounded to bf16 (F2F.BF16.F32, widened back by a shift) */
    real_object_precision(
        "#include <cuda_bf16.h>\n"
        "__global__ void via_bf16(const float *x, float *y) {\n"
        "  y[threadIdx.x] = __bfloat162float(__float2bfloat16(x[threadIdx.x])) * 2.f; }\n"
        "extern \"C\" int kopt_candidate_run(const void *io) {\n"
        "  (void)io; via_bf16<<<1, 32>>>(0, 0); return 0; }\n", "bf16");
}

/* kopt_eval_read_ahead (kopt optimize's compiles ahead) reads a host-mode candidate's SASS
 * of a PyTorch problem into memory in a thread of its own, so that its evaluation finds it
 * there or waits for it (no second cuobjdump run), and reads it itself when that read
 * failed; nothing for a device-code problem or a device-code candidate. */
static void test_read_ahead(void)
{
    char dir[] = "/tmp/kopt-test-readahead-XXXXXX", tool[1200], bin[1200], count[1200];
    FILE *f;
    kopt_problem prob;
    kopt_compiled comp;
    kopt__precision_job j;
    char *text = NULL;
    size_t len = 0;
    kopt_ctx *ctx = kopt_ctx_new();

    if (!stand_in_cuobjdump(dir, "HFMA2 R4, R8, R12, R4", tool, bin, count, sizeof(tool))) {
        kopt_ctx_free(ctx);
        return;
    }
    memset(&prob, 0, sizeof(prob));
    memset(&comp, 0, sizeof(comp));
    comp.host_mode = 1;
    comp.binary_path = bin;
    kopt_eval_read_ahead(&prob, &comp);        /* a device-code problem: nothing read */
    prob.ref_torch = 1;
    comp.host_mode = 0;
    kopt_eval_read_ahead(&prob, &comp);        /* a device-code candidate: nothing */
    CHECK(access(count, F_OK) != 0);
    comp.host_mode = 1;
    setenv("STANDIN_SLEEP", "1", 1);
    kopt_eval_read_ahead(&prob, &comp);        /* read once, in a thread: not waited for */
    CHECK(access(count, F_OK) != 0);           /* returned before the tool answered */
    kopt__binary_precision_start(&j, bin);     /* the evaluation's: the read under way */
    CHECK_EQ_INT(j.cached, 1);
    CHECK_EQ_INT(j.started, 0);
    kopt__binary_precision_wait(&j);
    CHECK_EQ_STR(j.out, "fp16");
    CHECK_EQ_STR(j.note, "");
    kopt__binary_precision_start(&j, bin);     /* a later one: from memory */
    CHECK_EQ_INT(j.cached, 1);
    kopt__binary_precision_wait(&j);
    CHECK_EQ_STR(j.out, "fp16");
    if (CHECK_EQ_INT(kopt_file_read(ctx, count, &text, &len), KOPT_OK))
        CHECK_EQ_STR(text, "run\n");
    free(text);
    text = NULL;
    unlink(count);
    /* a read ahead that fails while an evaluation waits for it: the evaluation reads */
    if ((f = fopen(bin, "a"))) {               /* another binary: read again */
        fputs(", rebuilt", f);
        fclose(f);
    }
    setenv("STANDIN_FAIL", "1", 1);
    kopt_eval_read_ahead(&prob, &comp);
    for (int i = 0; i < 200 && access(count, F_OK) != 0; i++)
        usleep(50000);                          /* its tool started (and sleeps) */
    unsetenv("STANDIN_FAIL");
    unsetenv("STANDIN_SLEEP");
    kopt__binary_precision_start(&j, bin);
    CHECK_EQ_INT(j.cached, 1);
    kopt__binary_precision_wait(&j);
    CHECK_EQ_INT(j.cached, 0);                 /* read by itself after all */
    CHECK_EQ_STR(j.out, "fp16");
    CHECK_EQ_STR(j.note, "");
    if (CHECK_EQ_INT(kopt_file_read(ctx, count, &text, &len), KOPT_OK))
        CHECK_EQ_STR(text, "fail\nrun\n");
    free(text);
    stand_in_end(dir, tool, bin, count);
    kopt_ctx_free(ctx);
}

/* A tool as an NVIDIA CUDA wheel installs it (kopt__find_pip_program: cuobjdump when neither
 * $KOPT_CUOBJDUMP, PATH nor the toolkit has it): found in nvidia/cu13/bin of a folder on
 * python3's path; a name no wheel has, or one with a slash, is not. */
static void test_find_pip_program(void)
{
    char dir[] = "/tmp/kopt-test-pip-XXXXXX", bin[600] = "", tool[700] = "";
    char *old = NULL, *env = NULL, *found = NULL;
    const char *pp = getenv("PYTHONPATH");
    kopt_ctx *ctx = kopt_ctx_new();
    FILE *f;

    if (!CHECK(mkdtemp(dir) != NULL))
        goto done;
    old = pp ? strdup(pp) : NULL;
    snprintf(bin, sizeof(bin), "%s/nvidia/cu13/bin", dir);
    snprintf(tool, sizeof(tool), "%s/kopt-pip-probe", bin);
    CHECK_EQ_INT(kopt_mkdirs(ctx, bin), KOPT_OK);
    if ((f = fopen(tool, "w"))) {
        fputs("#!/bin/sh\n", f);
        fclose(f);
    }
    chmod(tool, 0755);
    /* nvidia without __init__.py: a namespace package, merged with any installed one */
    if (asprintf(&env, "%s%s%s", dir, pp && pp[0] ? ":" : "", pp ? pp : "") < 0)
        goto done;
    setenv("PYTHONPATH", env, 1);
    found = kopt__find_pip_program(ctx, "kopt-pip-probe");
    if (!found && system("python3 -c 1 >/dev/null 2>&1") != 0) {
        KTEST_SKIP("no python3");
    } else if (CHECK(found != NULL)) {
        CHECK_EQ_STR(found, tool);
    }
    free(found);
    CHECK(kopt__find_pip_program(ctx, "kopt-no-such-tool") == NULL);
    CHECK(kopt__find_pip_program(ctx, "cu13/bin/kopt-pip-probe") == NULL);
    chmod(tool, 0644);                 /* not executable: not it */
    CHECK(kopt__find_pip_program(ctx, "kopt-pip-probe") == NULL);
done:
    ktest_restore_env("PYTHONPATH", old);
    unlink(tool);
    rmdir(bin);
    snprintf(bin, sizeof(bin), "%s/nvidia/cu13", dir);
    rmdir(bin);
    snprintf(bin, sizeof(bin), "%s/nvidia", dir);
    rmdir(bin);
    rmdir(dir);
    free(old);
    free(env);
    kopt_ctx_free(ctx);
}

/* Checks made while the candidate is timed (kopt__early_checks) must be the checks made
 * afterwards: the same entries in the same order, the same failures. Two phases of two
 * trials and two outputs, laid out as kopt__layout does; trial 1 of phase 0 wrong in one
 * element, phase 1's repeat different from its trial 0. */
enum { EN = 1000, ETRIALS = 2 };

static void early_phase(phase_plan *ph, kopt_bound *b, kopt_btensor *ts, size_t base, int timed)
{
    memset(ts, 0, 3 * sizeof(*ts));
    for (int i = 0; i < 3; i++) {
        snprintf(ts[i].name, sizeof(ts[i].name), "%s", i == 0 ? "x" : i == 1 ? "y" : "z");
        ts[i].role = i == 0 ? KOPT_ROLE_INPUT : KOPT_ROLE_OUTPUT;
        ts[i].dtype = KOPT_F32;
        ts[i].count = EN;
        ts[i].ndim = 1;
        ts[i].shape[0] = EN;
        ts[i].bytes = EN * sizeof(float);
        ts[i].atol = 1e-5;
        ts[i].rtol = 1e-4;
    }
    memset(b, 0, sizeof(*b));
    b->ntensors = 3;
    b->tensors = ts;
    memset(ph, 0, sizeof(*ph));
    ph->label = base ? "check" : "main";
    ph->ref = ph->cand = b;
    ph->ntrials = ETRIALS;
    ph->seeds[0] = 11;
    ph->seeds[1] = 12;
    ph->timed = timed;
    ph->slot = 2 * EN * sizeof(float);
    ph->base = base;
}

static void test_early_checks_are_the_late_checks(void)
{
    static kopt_btensor ts[2][3];
    kopt_bound b[2];
    phase_plan ph[2];
    size_t size;
    float *g, *w;
    kopt_eval_result late, early_r;
    kopt__early_checks e;
    kopt_check rep_late, rep_early;
    int cap = kopt__checks_capacity(ETRIALS, 3), fl = 0, fe = 0;

    early_phase(&ph[0], &b[0], ts[0], 0, 1);
    early_phase(&ph[1], &b[1], ts[1], kopt__phase_size(&ph[0]), 0);
    size = kopt__phase_size(&ph[0]) + kopt__phase_size(&ph[1]);
    g = malloc(size);
    w = malloc(size);
    CHECK(g && w);
    for (int p = 0; p < 2; p++)            /* every run of a phase the same outputs */
        for (int run = 0; run < ETRIALS + 2; run++)
            for (size_t i = 0; i < ph[p].slot / sizeof(float); i++) {
                size_t at = kopt__out_at(&ph[p], run) / sizeof(float) + i;
                w[at] = g[at] = (float)(i % 97) * 0.5f + 1.0f + (float)p;
            }
    ((float *)((char *)g + kopt__out_at(&ph[0], 1)))[EN + 17] += 1.0f;   /* trial 1, z */
    ((float *)((char *)g + kopt__out_at(&ph[1], ETRIALS)))[3] -= 2.0f;   /* repeat, y */
    memset(&late, 0, sizeof(late));
    memset(&early_r, 0, sizeof(early_r));
    late.checks = calloc((size_t)cap, sizeof(kopt_check));
    early_r.checks = calloc((size_t)cap, sizeof(kopt_check));
    CHECK(late.checks && early_r.checks);

    setenv("KOPT_EARLY_CHECKS", "0", 1);
    CHECK_EQ_INT(kopt__early_checks_init(&e, ph, 2, (unsigned char *)w, cap), 0);
    unsetenv("KOPT_EARLY_CHECKS");
    CHECK_EQ_INT(kopt__early_checks_init(&e, ph, 2, (unsigned char *)w, cap), 1);
    kopt__early_checks_on_trials(&e, 0, (unsigned char *)g);
    kopt__early_checks_on_trials(&e, 1, (unsigned char *)g);
    kopt__early_checks_on_trials(&e, 2, (unsigned char *)g);   /* no such phase: ignored */
    CHECK(e.done[0] && e.done[1]);
    for (int p = 0; p < 2; p++) {
        int a = kopt__check_repeat(&ph[p], (unsigned char *)g, &rep_late, NULL);
        int c = kopt__early_repeat(&e, p, &ph[p], (unsigned char *)g, &rep_early);
        CHECK_EQ_INT(c, a);
        CHECK_EQ_INT(a, p == 1);
        if (a) {
            CHECK_EQ_STR(rep_early.tensor, rep_late.tensor);
            CHECK_EQ_INT((int)rep_early.first_index, (int)rep_late.first_index);
        }
        fl += kopt__compare_phase(&late, &ph[p], (unsigned char *)g, (unsigned char *)w, NULL);
        fe += kopt__early_compare(&early_r, &e, p, &ph[p], (unsigned char *)g,
                                  (unsigned char *)w);
    }
    CHECK_EQ_INT(fe, fl);
    CHECK_EQ_INT(fl, 1);
    /* phase 0: 2 trials + timed, 2 outputs each; phase 1 (untimed): 2 trials */
    CHECK_EQ_INT(late.nchecks, 10);
    CHECK_EQ_INT(early_r.nchecks, late.nchecks);
    for (int i = 0; i < late.nchecks; i++) {
        CHECK_EQ_STR(early_r.checks[i].tensor, late.checks[i].tensor);
        CHECK_EQ_STR(early_r.checks[i].run, late.checks[i].run);
        CHECK_EQ_STR(early_r.checks[i].sizes_label, late.checks[i].sizes_label);
        CHECK_EQ_INT((int)early_r.checks[i].mismatches, (int)late.checks[i].mismatches);
    }
    CHECK_EQ_STR(late.checks[3].run, "trial 1");
    CHECK_EQ_INT((int)late.checks[3].mismatches, 1);
    /* a phase not checked early is checked afterwards in full */
    e.done[1] = 0;
    early_r.nchecks = 0;
    fe = kopt__early_compare(&early_r, &e, 1, &ph[1], (unsigned char *)g, (unsigned char *)w);
    CHECK_EQ_INT(fe, 0);
    CHECK_EQ_INT(early_r.nchecks, 4);
    kopt__early_checks_free(&e);
    free(late.checks);
    free(early_r.checks);
    free(g);
    free(w);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_close_errors_match_brute_force),
        KTEST(test_mismatch_in_a_later_part),
        KTEST(test_nan_where_the_reference_has_nan),
        KTEST(test_median_precision),
        KTEST(test_no_measurable_work_is_suspect), KTEST(test_fast_roofline),
        KTEST(test_guard_floor),
        KTEST(test_wrong_only_at_check_sizes_is_shape_specific),
        KTEST(test_torch_census_and_clock),
        KTEST(test_sass_precision),
        KTEST(test_binary_precision_read_once),
        KTEST(test_read_ahead),
        KTEST(test_binary_precision_reads_functions_at_once),
        KTEST(test_find_pip_program),
        KTEST(test_binary_precision_of_a_real_object),
        KTEST(test_early_checks_are_the_late_checks),
    };
    int rc;

    got = malloc(sizeof(float) * ROWS * COLS);
    want = malloc(sizeof(float) * ROWS * COLS);
    if (!got || !want)
        return 1;
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    free(got);
    free(want);
    return rc;
}
