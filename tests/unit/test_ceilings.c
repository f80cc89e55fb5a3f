/*
 * Unit tests of the device ceilings without a GPU: the worker's answer parsed by
 * kopt_ceilings_parse (fixtures in tests/data/ceilings/ and malformed text), the
 * spec-derived fallback (kopt_ceilings_fill_spec), and, when NVRTC loads, kopt's runtime
 * module with the ceiling microbenchmarks compiled for sm_90a, sm_89, sm_80 and sm_100: every
 * kernel present, the wgmma kernels real on sm_90a (registers and shared memory in the
 * ptxas report) and compiled out elsewhere. And the speed-of-light guard's rate
 * (kopt__guard_compute): FP32 work at a tolerance that TF32 rounding passes is bounded at the
 * TF32 tensor-core rate, tighter tolerances and other precisions at their own. And
 * CUDA_VISIBLE_DEVICES read as CUDA reads it (kopt__visible_map).
 */
#include "ktest.h"

#include "kopt/compile.h"
#include "kopt/device.h"

#include "../../src/eval/eval_int.h"

#include <dirent.h>
#include <jansson.h>

static kopt_ctx *ctx;

/* ---- parsing the worker's answer ---------------------------------------------------------- */

/* The "ceilings" object of a recorded result event, as JSON text (caller frees). */
static char *fixture_ceilings(const char *name, json_t **obj)
{
    char path[1024];
    char *text, *out = NULL;
    json_t *ev;

    *obj = NULL;
    snprintf(path, sizeof(path), "%s/ceilings/%s", KOPT_TEST_DATA_DIR, name);
    text = ktest_read_file(path);
    if (!text) {
        KTEST_FAIL("cannot read the fixture %s", path);
        return NULL;
    }
    ev = json_loads(text, 0, NULL);
    free(text);
    if (!CHECK(json_is_object(json_object_get(ev, "ceilings")))) {
        json_decref(ev);
        return NULL;
    }
    *obj = json_incref(json_object_get(ev, "ceilings"));
    out = json_dumps(*obj, JSON_COMPACT);
    json_decref(ev);
    return out;
}

/* Each field that kopt_ceilings_parse reads: absent means 0 and not measured. */
static void check_against_json(const char *name, json_t *j, const kopt_ceilings *c)
{
    static const char *const rates[KOPT_NCOMPUTE] = {"fp32_gflops", "fp64_gflops",
        "fp16_tc_gflops", "bf16_tc_gflops", "tf32_tc_gflops", "fp8_tc_gflops", NULL};
    const struct { const char *field; double got; int measured; } bw[] = {
        {"dram_copy_gbs", c->dram_copy_gbs, c->dram_copy_gbs > 0},
        {"dram_read_gbs", c->dram_read_gbs, c->dram_read_gbs > 0},
        {"dram_write_gbs", c->dram_write_gbs, c->dram_write_gbs > 0},
        {"l2_gbs", c->l2_gbs, c->l2_measured},
        {"smem_gbs", c->smem_gbs, c->smem_measured},
    };

    CHECK_EQ_INT(c->valid, 1);
    for (int i = 0; i < KTEST_COUNT(bw); i++) {
        json_t *v = json_object_get(j, bw[i].field);
        if (!CHECK_NEAR(bw[i].got, v ? json_number_value(v) : 0, 1e-9) ||
            !CHECK_EQ_INT(bw[i].measured, v != NULL))
            fprintf(stderr, "  ^ %s: %s\n", name, bw[i].field);
    }
    for (int k = 0; k < KOPT_NCOMPUTE; k++) {
        json_t *v = rates[k] ? json_object_get(j, rates[k]) : NULL;
        if (!CHECK_NEAR(c->gflops[k], v ? json_number_value(v) : 0, 1e-9) ||
            !CHECK_EQ_INT(c->measured[k], v != NULL))
            fprintf(stderr, "  ^ %s: compute %d\n", name, k);
    }
    CHECK_EQ_STR(c->measured_at, "");
}

static void test_parse_every_fixture(void)
{
    char dir[1024];
    DIR *d;
    struct dirent *e;
    int n = 0;

    snprintf(dir, sizeof(dir), "%s/ceilings", KOPT_TEST_DATA_DIR);
    d = opendir(dir);
    if (!CHECK(d != NULL))
        return;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        json_t *j;
        char *text;
        kopt_ceilings c;
        if (len < 5 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        text = fixture_ceilings(e->d_name, &j);
        if (text && CHECK_EQ_INT(kopt_ceilings_parse(ctx, text, &c), KOPT_OK))
            check_against_json(e->d_name, j, &c);
        free(text);
        json_decref(j);
        n++;
    }
    closedir(d);
    CHECK(n >= 2);
}

static kopt_device_info device(int major, int minor, int sms, int clock_khz)
{
    kopt_device_info d;
    memset(&d, 0, sizeof(d));
    d.cc_major = major;
    d.cc_minor = minor;
    d.sm_count = sms;
    d.clock_khz = clock_khz;
    return d;
}

static void test_parse_hopper_answer(void)
{
    json_t *j;
    char *text = fixture_ceilings("worker_result_synthetic_sm90.json", &j);
    kopt_ceilings c;
    kopt_device_info h200 = device(9, 0, 132, 1980000);

    if (!text)
        return;
    CHECK_EQ_INT(kopt_ceilings_parse(ctx, text, &c), KOPT_OK);
    /* fp64 is the worker's best of FMA and tensor cores, not the FMA rate */
    CHECK_NEAR(c.gflops[KOPT_COMPUTE_FP64], 60511.75, 1e-9);
    /* ... and both paths keep their own names and rates */
    CHECK_NEAR(c.fp64_fma_gflops, 31877.0, 1e-9);
    CHECK_NEAR(c.fp64_tc_gflops, 60511.75, 1e-9);
    CHECK_NEAR(c.gflops[KOPT_COMPUTE_BF16], 903456.5, 1e-9);
    CHECK_NEAR(c.gflops[KOPT_COMPUTE_FP8], 1789004.0, 1e-9);
    CHECK_EQ_INT(c.measured[KOPT_COMPUTE_INT], 0);
    CHECK_NEAR(c.l2_gbs, 10744.5, 1e-9);
    CHECK_NEAR(c.smem_gbs, 31560.0, 1e-9);
    kopt_ceilings_fill_spec(&c, &h200);
    /* measured values stay; int32 comes from the table: 128/SM/clock x 132 x 1.98 GHz */
    CHECK_NEAR(c.gflops[KOPT_COMPUTE_BF16], 903456.5, 1e-9);
    CHECK_NEAR(c.smem_gbs, 31560.0, 1e-9);
    CHECK_EQ_INT(c.smem_measured, 1);
    CHECK_NEAR(c.gflops[KOPT_COMPUTE_INT], 128.0 * 132 * 1.98, 1e-6);
    CHECK_EQ_INT(c.measured[KOPT_COMPUTE_INT], 0);
    free(text);
    json_decref(j);
}

static void test_parse_partial_answer(void)
{
    json_t *j;
    char *text = fixture_ceilings("worker_result_synthetic_sm80_partial.json", &j);
    kopt_ceilings c;
    kopt_device_info a100 = device(8, 0, 108, 1410000);

    if (!text)
        return;
    CHECK_EQ_INT(kopt_ceilings_parse(ctx, text, &c), KOPT_OK);
    CHECK_EQ_INT(c.l2_measured, 1);
    CHECK_EQ_INT(c.smem_measured, 0);
    CHECK_EQ_INT(c.measured[KOPT_COMPUTE_FP64], 1);
    for (int k = KOPT_COMPUTE_FP16; k <= KOPT_COMPUTE_FP8; k++)
        CHECK_EQ_INT(c.measured[k], 0);
    kopt_ceilings_fill_spec(&c, &a100);
    /* spec-derived: shared memory 128 B/SM/clock, fp16 2048 FLOP/SM/clock; no fp8 on sm_80 */
    CHECK_NEAR(c.smem_gbs, 128.0 * 108 * 1.41, 1e-6);
    CHECK_EQ_INT(c.smem_measured, 0);
    CHECK_NEAR(c.gflops[KOPT_COMPUTE_FP16], 2048.0 * 108 * 1.41, 1e-6);
    CHECK_NEAR(c.gflops[KOPT_COMPUTE_FP8], 0, 0);
    CHECK_NEAR(c.gflops[KOPT_COMPUTE_FP64], 9601.5, 1e-9);   /* measured: kept */
    CHECK_NEAR(c.l2_gbs, 5120.75, 1e-9);
    free(text);
    json_decref(j);
}

/* The answer recorded on an H200: everything measured, each rate between half and all of
 * the spec-derived peak for the device it names (132 SMs at 1.98 GHz). */
static void test_parse_recorded_h200(void)
{
    json_t *j;
    char *text = fixture_ceilings("worker_result_h200.json", &j);
    kopt_ceilings c, spec;
    kopt_device_info h200 = device(9, 0, 132, 1980000);

    if (!text)
        return;
    CHECK_EQ_INT(kopt_ceilings_parse(ctx, text, &c), KOPT_OK);
    memset(&spec, 0, sizeof(spec));
    kopt_ceilings_fill_spec(&spec, &h200);
    for (int k = KOPT_COMPUTE_FP32; k <= KOPT_COMPUTE_FP8; k++) {
        if (!CHECK_EQ_INT(c.measured[k], 1) || !CHECK(c.gflops[k] <= spec.gflops[k] * 1.01) ||
            !CHECK(c.gflops[k] >= spec.gflops[k] * 0.5))
            fprintf(stderr, "  ^ compute %d: %.0f measured, %.0f spec\n", k, c.gflops[k],
                    spec.gflops[k]);
    }
    CHECK_EQ_INT(c.l2_measured, 1);
    CHECK_EQ_INT(c.smem_measured, 1);
    CHECK(c.smem_gbs <= spec.smem_gbs * 1.01 && c.smem_gbs >= spec.smem_gbs * 0.5);
    /* HBM3e: 4.8 TB/s on the sheet; a read stream reaches most of it */
    CHECK(c.dram_read_gbs > 3500 && c.dram_read_gbs < 4800);
    CHECK(c.dram_copy_gbs > 3000 && c.dram_copy_gbs <= c.dram_read_gbs);
    free(text);
    json_decref(j);
}

static void test_parse_bad_input(void)
{
    kopt_ceilings c;

    CHECK_EQ_INT(kopt_ceilings_parse(ctx, "[1, 2]", &c), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "ceilings");
    CHECK_EQ_INT(kopt_ceilings_parse(ctx, "{\"l2_gbs\": ", &c), KOPT_E_INVALID);
    CHECK_EQ_INT(c.valid, 0);
    CHECK_EQ_INT(kopt_ceilings_parse(ctx, NULL, &c), KOPT_E_INVALID);
    /* wrong types and non-positive numbers are not measurements */
    CHECK_EQ_INT(kopt_ceilings_parse(ctx, "{\"l2_gbs\": -5, \"smem_gbs\": 0, \"fp32_gflops\": "
                                          "\"fast\", \"bf16_tc_gflops\": 12, \"int_gflops\": 7}",
                                     &c), KOPT_OK);
    CHECK_EQ_INT(c.l2_measured, 0);
    CHECK_NEAR(c.l2_gbs, 0, 0);
    CHECK_EQ_INT(c.smem_measured, 0);
    CHECK_EQ_INT(c.measured[KOPT_COMPUTE_FP32], 0);
    CHECK_EQ_INT(c.measured[KOPT_COMPUTE_BF16], 1);
    CHECK_NEAR(c.gflops[KOPT_COMPUTE_BF16], 12, 0);
    CHECK_EQ_INT(c.measured[KOPT_COMPUTE_INT], 0);      /* never read from the worker */
}

static void test_fill_spec(void)
{
    kopt_ceilings c;
    kopt_device_info h200 = device(9, 0, 132, 1980000), turing = device(7, 5, 40, 1500000);

    memset(&c, 0, sizeof(c));
    c.gflops[KOPT_COMPUTE_FP32] = 1.0;
    c.measured[KOPT_COMPUTE_FP32] = 1;
    c.l2_gbs = 77.0;                 /* stale, not measured: cleared (the L2 has no spec) */
    kopt_ceilings_fill_spec(&c, &h200);
    CHECK_NEAR(c.gflops[KOPT_COMPUTE_FP32], 1.0, 0);
    CHECK_NEAR(c.gflops[KOPT_COMPUTE_BF16], 4096.0 * 132 * 1.98, 1e-6);
    CHECK_NEAR(c.gflops[KOPT_COMPUTE_FP64], 256.0 * 132 * 1.98, 1e-6);
    CHECK_NEAR(c.smem_gbs, 128.0 * 132 * 1.98, 1e-6);
    CHECK_NEAR(c.l2_gbs, 0, 0);
    /* an architecture without a table row: nothing invented */
    memset(&c, 0, sizeof(c));
    kopt_ceilings_fill_spec(&c, &turing);
    for (int k = 0; k < KOPT_NCOMPUTE; k++)
        CHECK_NEAR(c.gflops[k], 0, 0);
    CHECK_NEAR(c.smem_gbs, 0, 0);
}

/* ---- the runtime module ------------------------------------------------------------------- */

static const char *const ceiling_kernels[] = {
    "kopt_l2_read", "kopt_smem_read", "kopt_fma_f64", "kopt_mma_f16", "kopt_mma_bf16",
    "kopt_mma_tf32", "kopt_mma_fp8", "kopt_mma_f64", "kopt_wgmma_f16", "kopt_wgmma_bf16",
    "kopt_wgmma_tf32", "kopt_wgmma_fp8",
};

/* Compile the runtime module for `arch` into a fresh cache; NULL (skipped) without NVRTC. */
static kopt_compiled *compile_runtime(const char *arch)
{
    kopt_compile_opts o = KOPT_COMPILE_OPTS_INIT;
    kopt_compiled *c = NULL;
    char *cache = ktest_tmpdir("ceilings");
    kopt_status rc;

    o.arch = arch;
    o.cache_dir = cache;
    o.no_cache = 1;
    rc = kopt_compile_runtime(&c, ctx, &o);
    if (rc == KOPT_E_NO_DEVICE) {
        KTEST_SKIP("NVRTC not available");
    } else if (!CHECK_EQ_INT(rc, KOPT_OK)) {
        fprintf(stderr, "  %s: %s\n%s\n", arch, kopt_errmsg(ctx), kopt_errdetail(ctx));
    } else {
        for (int i = 0; i < KTEST_COUNT(ceiling_kernels); i++)
            if (!CHECK(kopt_compiled_kernel(c, ceiling_kernels[i]) != NULL))
                fprintf(stderr, "  ^ %s missing for %s\n", ceiling_kernels[i], arch);
    }
    if (cache)
        ktest_rmtree(cache);
    free(cache);
    return c;
}

static const kopt_kernel_info *kernel(const kopt_compiled *c, const char *name)
{
    static const kopt_kernel_info none;
    const kopt_kernel_info *k = kopt_compiled_kernel(c, name);
    return k ? k : &none;
}

static void test_runtime_sm90a(void)
{
    kopt_compiled *c = compile_runtime("sm_90a");
    static const char *const wg[] = {"kopt_wgmma_f16", "kopt_wgmma_bf16", "kopt_wgmma_tf32",
                                     "kopt_wgmma_fp8"};

    if (!c)
        return;
    /* wgmma is compiled in: 128 accumulator registers per thread, A and B tiles in shared
     * memory (2 KB + 8 KB); and ptxas did not serialize the wgmmas */
    for (int i = 0; i < KTEST_COUNT(wg); i++) {
        if (!CHECK(kernel(c, wg[i])->registers >= 128) ||
            !CHECK_EQ_INT(kernel(c, wg[i])->static_smem, 10240))
            fprintf(stderr, "  ^ %s\n", wg[i]);
    }
    CHECK(c->log && strstr(c->log, "serialized") == NULL);
    CHECK_EQ_INT(kernel(c, "kopt_smem_read")->static_smem, 32768);
    CHECK(kernel(c, "kopt_smem_read")->registers <= 32);      /* 2 blocks of 1024 per SM */
    CHECK(kernel(c, "kopt_mma_f64")->registers >= 32);        /* 8 tiles of 4 doubles */
    CHECK(kernel(c, "kopt_mma_bf16")->registers >= 32);
    CHECK_EQ_INT(kernel(c, "kopt_l2_read")->spill_stores, 0);
    kopt_compiled_free(c);
}

static void test_runtime_sm80(void)
{
    kopt_compiled *c = compile_runtime("sm_80");

    if (!c)
        return;
    /* no wgmma before sm_90a, no fp8 mma.sync before sm_89: the bodies are compiled out */
    CHECK_EQ_INT(kernel(c, "kopt_wgmma_bf16")->static_smem, 0);
    CHECK(kernel(c, "kopt_wgmma_bf16")->registers < 32);
    CHECK(kernel(c, "kopt_mma_fp8")->registers < 16);
    CHECK(kernel(c, "kopt_mma_f16")->registers >= 32);
    CHECK(kernel(c, "kopt_mma_f64")->registers >= 32);
    CHECK_EQ_INT(kernel(c, "kopt_smem_read")->static_smem, 32768);
    kopt_compiled_free(c);
}

static void test_runtime_sm89_sm100(void)
{
    kopt_compiled *c = compile_runtime("sm_89");

    if (!c)
        return;
    CHECK(kernel(c, "kopt_mma_fp8")->registers >= 32);       /* native fp8 mma.sync */
    CHECK_EQ_INT(kernel(c, "kopt_wgmma_fp8")->static_smem, 0);
    kopt_compiled_free(c);
    c = compile_runtime("sm_100");
    if (c)
        CHECK_EQ_INT(kernel(c, "kopt_wgmma_bf16")->static_smem, 0);
    kopt_compiled_free(c);
}

/* KernelBench level 2 problem 9 as measured on an H100: 2*1024*8192*8192 FLOP, FP32 out at
 * atol = rtol = 1e-2; a cuBLAS TF32 candidate ran in 0.345 ms, under the FP32 FMA bound. */
static void test_guard_rate(void)
{
    kopt_btensor t[2] = {{.role = KOPT_ROLE_INPUT, .rtol = 1e-9}, {.role = KOPT_ROLE_OUTPUT, .rtol = 1e-2}};
    kopt_bound b = {.ntensors = 2, .tensors = t, .has_work = 1,
                    .flops = 2.0 * 1024 * 8192 * 8192, .bytes = 4.0 * (1024 * 8192 * 2 + 8192 * 8192)};
    kopt_ceilings c = {.valid = 1, .dram_copy_gbs = 3000};
    kopt_roofline fp32, tf32;

    c.gflops[KOPT_COMPUTE_FP32] = 60000;
    c.gflops[KOPT_COMPUTE_TF32] = 480000;
    CHECK_EQ_INT(kopt__guard_compute(KOPT_COMPUTE_FP32, &b), KOPT_COMPUTE_TF32);
    kopt__roofline(&fp32, b.flops, b.bytes, KOPT_COMPUTE_FP32, &c, 0.345);
    kopt__roofline(&tf32, b.flops, b.bytes, KOPT_COMPUTE_TF32, &c, 0.345);
    CHECK(fp32.bound_ms > 0.345);   /* what made the TF32 candidate SUSPECT */
    CHECK(tf32.bound_ms < 0.345);
    t[1].rtol = 1e-4;               /* kopt's own f32 default: TF32 would fail it */
    CHECK_EQ_INT(kopt__guard_compute(KOPT_COMPUTE_FP32, &b), KOPT_COMPUTE_FP32);
    t[1].rtol = 1e-2;
    t[0].role = KOPT_ROLE_INOUT;    /* an in-out tensor is an output too */
    t[0].rtol = 1e-5;
    CHECK_EQ_INT(kopt__guard_compute(KOPT_COMPUTE_FP32, &b), KOPT_COMPUTE_FP32);
    CHECK_EQ_INT(kopt__guard_compute(KOPT_COMPUTE_FP64, &b), KOPT_COMPUTE_FP64);
    CHECK_EQ_INT(kopt__guard_compute(KOPT_COMPUTE_BF16, &b), KOPT_COMPUTE_BF16);
    b.ntensors = 0;
    CHECK_EQ_INT(kopt__guard_compute(KOPT_COMPUTE_FP32, &b), KOPT_COMPUTE_FP32);
}

/* CUDA_VISIBLE_DEVICES as CUDA reads it: kopt's NVML view of "GPU k" must be the GPU the
 * worker's CUDA calls ordinal k, or --gpus all names GPUs CUDA cannot see (a 2-GPU host with
 * CUDA_VISIBLE_DEVICES=1 ran into it). */
static void test_visible_devices(void)
{
    const char *uuids[4] = {"GPU-dcca26de-100d", "GPU-4d657904-b1eb", "GPU-4d99aaaa-0000",
                            "GPU-77777777-1111"};
    int map[8];

    CHECK_EQ_INT(kopt__visible_map(NULL, 4, uuids, map, 8), 4);
    CHECK_EQ_INT(map[3], 3);
    CHECK_EQ_INT(kopt__visible_map("1", 4, uuids, map, 8), 1);
    CHECK_EQ_INT(map[0], 1);
    CHECK_EQ_INT(kopt__visible_map("3, 0", 4, uuids, map, 8), 2);
    CHECK_EQ_INT(map[0], 3);
    CHECK_EQ_INT(map[1], 0);
    CHECK_EQ_INT(kopt__visible_map("", 4, uuids, map, 8), 0);
    CHECK_EQ_INT(kopt__visible_map("2,9,0", 4, uuids, map, 8), 1);   /* stops at 9 */
    CHECK_EQ_INT(kopt__visible_map("1,1", 4, uuids, map, 8), 1);     /* a repeat ends it */
    CHECK_EQ_INT(kopt__visible_map("GPU-77777777,GPU-dcca", 4, uuids, map, 8), 2);
    CHECK_EQ_INT(map[0], 3);
    CHECK_EQ_INT(map[1], 0);
    CHECK_EQ_INT(kopt__visible_map("GPU-4d", 4, uuids, map, 8), 0);  /* two GPUs match */
    CHECK_EQ_INT(kopt__visible_map("MIG-1234", 4, uuids, map, 8), 0);
    CHECK_EQ_INT(kopt__visible_map("0,1,2,3", 4, uuids, map, 2), 2); /* at most max */
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_parse_every_fixture), KTEST(test_parse_hopper_answer),
        KTEST(test_parse_partial_answer), KTEST(test_parse_recorded_h200),
        KTEST(test_parse_bad_input), KTEST(test_fill_spec),
        KTEST(test_runtime_sm90a), KTEST(test_runtime_sm80), KTEST(test_runtime_sm89_sm100),
        KTEST(test_guard_rate), KTEST(test_visible_devices),
    };
    int rc;

    ctx = kopt_ctx_new();
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    kopt_ctx_free(ctx);
    return rc;
}
