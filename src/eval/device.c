/* Device discovery: a worker process for full properties and for measuring ceilings (the
 * compile target and the GPU's name come from NVML in the calling process: nvml.c). */
#include "kopt/device.h"
#include "kopt/compile.h"
#include "eval_int.h"
#include "worker_int.h"
#include "../cuda/cuda_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Start a worker for a device-level operation ("devices" or "ceilings"). */
static kopt_status device_op(kopt_ctx *ctx, int ordinal, const char *op, const char *cache_dir,
                             kopt__worker_run *run)
{
    kopt_compile_opts co = KOPT_COMPILE_OPTS_INIT;
    kopt_compiled *rt = NULL;
    kopt_device_info nvml;
    json_t *job;
    kopt_status rc;
    char arch[24];

    memset(run, 0, sizeof(*run));   /* its callers free it whatever happens */
    if ((rc = kopt_device_nvml(ctx, ordinal, &nvml, NULL)) != KOPT_OK)
        return rc;
    kopt_arch_for_cc(nvml.cc_major, nvml.cc_minor, arch);
    co.arch = arch;
    co.cache_dir = cache_dir;
    if ((rc = kopt_compile_runtime(&rt, ctx, &co)) != KOPT_OK)
        return kopt_adderr(ctx, rc, "kopt's runtime kernels");
    job = json_pack("{s:s, s:i, s:s}", "op", op, "device", ordinal, "runtime", rt->binary_path);
    rc = kopt__worker_spawn(ctx, job, 0, 60, run);
    json_decref(job);
    kopt_compiled_free(rt);
    if (rc != KOPT_OK)
        return rc;
    if (!run->result) {
        const char *msg = run->error ? json_string_value(json_object_get(run->error, "message"))
                                     : NULL;
        return kopt_seterr(ctx, KOPT_E_CUDA, "device worker failed: %s",
                           msg ? msg : run->timed_out ? "timed out" : "it died");
    }
    return KOPT_OK;
}

kopt_status kopt_device_query(kopt_ctx *ctx, int ordinal, kopt_device_info *out)
{
    kopt__worker_run run;
    kopt_status rc = device_op(ctx, ordinal, "devices", NULL, &run);

    if (rc == KOPT_OK) {
        kopt__device_from_json(json_object_get(run.result, "device"), out);
        out->ordinal = ordinal;
    }
    kopt__worker_run_free(&run);
    return rc;
}

/* The worker's field for each kopt_compute rate (NULL: not measured). */
static const char *const rate_fields[KOPT_NCOMPUTE] = {
    "fp32_gflops", "fp64_gflops", "fp16_tc_gflops", "bf16_tc_gflops", "tf32_tc_gflops",
    "fp8_tc_gflops", NULL,
};

/* A positive number, or 0 (absent, not a number, NaN, negative). */
static double positive(json_t *c, const char *field)
{
    json_t *v = json_object_get(c, field);
    double x = json_is_number(v) ? json_number_value(v) : 0;
    return x > 0 ? x : 0;   /* NaN compares false */
}

static void ceilings_from_json(json_t *c, kopt_ceilings *out)
{
    memset(out, 0, sizeof(*out));
    out->valid = 1;
    out->dram_copy_gbs = positive(c, "dram_copy_gbs");
    out->dram_read_gbs = positive(c, "dram_read_gbs");
    out->dram_write_gbs = positive(c, "dram_write_gbs");
    out->l2_gbs = positive(c, "l2_gbs");
    out->l2_measured = out->l2_gbs > 0;
    out->smem_gbs = positive(c, "smem_gbs");
    out->smem_measured = out->smem_gbs > 0;
    for (int k = 0; k < KOPT_NCOMPUTE; k++) {
        out->gflops[k] = rate_fields[k] ? positive(c, rate_fields[k]) : 0;
        out->measured[k] = out->gflops[k] > 0;
    }
    out->fp64_fma_gflops = positive(c, "fp64_fma_gflops");
    out->fp64_tc_gflops = positive(c, "fp64_tc_gflops");
}

kopt_status kopt_ceilings_parse(kopt_ctx *ctx, const char *json_text, kopt_ceilings *out)
{
    json_error_t err;
    json_t *c = json_loads(json_text ? json_text : "", 0, &err);

    memset(out, 0, sizeof(*out));
    if (!json_is_object(c)) {
        json_decref(c);
        return kopt_seterr(ctx, KOPT_E_INVALID, "ceilings: %s", c ? "not a JSON object"
                                                                    : err.text);
    }
    ceilings_from_json(c, out);
    json_decref(c);
    return KOPT_OK;
}

kopt_status kopt_device_measure(kopt_ctx *ctx, int ordinal, const char *cache_dir,
                                kopt_device_info *dev, kopt_ceilings *out)
{
    kopt__worker_run run;
    kopt_status rc = device_op(ctx, ordinal, "ceilings", cache_dir, &run);
    json_t *c;
    const char *failed;
    time_t now = time(NULL);

    memset(out, 0, sizeof(*out));
    if (rc == KOPT_OK) {
        kopt__device_from_json(json_object_get(run.result, "device"), dev);
        dev->ordinal = ordinal;
        c = json_object_get(run.result, "ceilings");
        ceilings_from_json(c, out);
        if ((failed = json_string_value(json_object_get(c, "failed"))) != NULL)
            kopt_log(ctx, KOPT_LOG_WARN, "some ceilings were not measured: %s", failed);
        strftime(out->measured_at, sizeof(out->measured_at), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
        kopt_ceilings_fill_spec(out, dev);
    }
    kopt__worker_run_free(&run);
    return rc;
}
