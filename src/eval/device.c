/* Device discovery: NVML in the calling process (no CUDA context) to pick the compile
 * target; a worker process for full properties and for measuring ceilings. */
#include "kopt/device.h"
#include "kopt/compile.h"
#include "eval_int.h"
#include "worker_int.h"
#include "../cuda/cuda_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int kopt__visible_map(const char *env, int n, const char *const *uuids, int *map, int max)
{
    int count = 0;
    const char *s = env;

    if (!env) {
        for (int i = 0; i < n && i < max; i++)
            map[count++] = i;
        return count;
    }
    while (*s && count < max) {
        char tok[96];
        size_t len = strcspn(s, ",");
        size_t a = 0, b = len;
        int found = -1;
        while (a < b && (s[a] == ' ' || s[a] == '\t'))
            a++;
        while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t'))
            b--;
        if (b - a == 0 || b - a >= sizeof(tok))
            break;
        memcpy(tok, s + a, b - a);
        tok[b - a] = 0;
        if (strspn(tok, "0123456789") == strlen(tok)) {
            long v = strtol(tok, NULL, 10);
            found = v < n ? (int)v : -1;
        } else if (strncmp(tok, "GPU-", 4) == 0) {
            for (int i = 0; i < n; i++)     /* a unique prefix of a UUID names its GPU */
                if (uuids[i] && strncmp(uuids[i], tok, strlen(tok)) == 0) {
                    if (found >= 0) {
                        found = -1;
                        break;
                    }
                    found = i;
                }
        }
        for (int i = 0; i < count && found >= 0; i++)
            if (map[i] == found)
                found = -1;                 /* a repeated GPU ends the list, as in CUDA */
        if (found < 0)
            break;                          /* CUDA uses the entries before the first bad one */
        map[count++] = found;
        s += len;
        if (*s == ',')
            s++;
    }
    return count;
}

/* What NVML said of each ordinal, kept for the process (a GPU's name, UUID and compute
 * capability do not change while it runs): NVML's start and stop take 10-180 ms, and kopt
 * serve opens a run, which asks, for every request. Keyed by CUDA_VISIBLE_DEVICES too. */
#define NVML_SEEN 16
static struct {
    int ordinal, count, mig;
    char visible[256];
    kopt_device_info info;
} nvml_seen[NVML_SEEN];
static int nvml_nseen;
static pthread_mutex_t nvml_mu = PTHREAD_MUTEX_INITIALIZER;

static kopt_status nvml_query(kopt_ctx *ctx, int ordinal, kopt_device_info *out, int *count,
                              int *mig);

static kopt_status device_nvml(kopt_ctx *ctx, int ordinal, kopt_device_info *out, int *count,
                               int *mig)
{
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    int n = 0, m = 0;
    kopt_status rc;

    if (!env)
        env = "";
    pthread_mutex_lock(&nvml_mu);
    for (int i = 0; i < nvml_nseen; i++)
        if (nvml_seen[i].ordinal == ordinal && strcmp(nvml_seen[i].visible, env) == 0) {
            *out = nvml_seen[i].info;
            if (count)
                *count = nvml_seen[i].count;
            if (mig)
                *mig = nvml_seen[i].mig;
            pthread_mutex_unlock(&nvml_mu);
            return KOPT_OK;
        }
    pthread_mutex_unlock(&nvml_mu);
    rc = nvml_query(ctx, ordinal, out, &n, &m);
    if (count)
        *count = n;
    if (mig)
        *mig = m;
    if (rc == KOPT_OK && strlen(env) < sizeof(nvml_seen[0].visible)) {
        pthread_mutex_lock(&nvml_mu);
        if (nvml_nseen < NVML_SEEN) {
            nvml_seen[nvml_nseen].ordinal = ordinal;
            nvml_seen[nvml_nseen].count = n;
            nvml_seen[nvml_nseen].mig = m;
            snprintf(nvml_seen[nvml_nseen].visible, sizeof(nvml_seen[0].visible), "%s", env);
            nvml_seen[nvml_nseen++].info = *out;
        }
        pthread_mutex_unlock(&nvml_mu);
    }
    return rc;
}

kopt_status kopt_device_nvml(kopt_ctx *ctx, int ordinal, kopt_device_info *out, int *count)
{
    return device_nvml(ctx, ordinal, out, count, NULL);
}

int kopt__device_mig(int ordinal)
{
    kopt_device_info info;
    int mig = 1;

    return device_nvml(NULL, ordinal, &info, NULL, &mig) == KOPT_OK ? mig : 1;
}

static kopt_status nvml_query(kopt_ctx *ctx, int ordinal, kopt_device_info *out, int *count,
                              int *mig)
{
    const kopt_nvml_api *nv;
    kopt_nvml_device dev;
    unsigned n = 0;
    int map[KOPT_MAX_VISIBLE], nvis;
    char uuid[KOPT_MAX_VISIBLE][96];
    const char *uuids[KOPT_MAX_VISIBLE];
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    kopt_status rc;

    memset(out, 0, sizeof(*out));
    if (count)
        *count = 0;
    if ((rc = kopt__nvml_load(ctx, &nv)) != KOPT_OK)
        return kopt_seterr(ctx, KOPT_E_NO_DEVICE, "no NVIDIA driver: %s", kopt_errmsg(ctx));
    if (nv->nvmlInit_v2() != 0)
        return kopt_seterr(ctx, KOPT_E_NO_DEVICE, "NVML could not start (no GPU?)");
    if (nv->nvmlDeviceGetCount_v2(&n) != 0 || n == 0) {
        nv->nvmlShutdown();
        return kopt_seterr(ctx, KOPT_E_NO_DEVICE, "no GPU found");
    }
    if (n > KOPT_MAX_VISIBLE)
        n = KOPT_MAX_VISIBLE;
    /* NVML numbers every GPU of the host; CUDA (and so the worker) only those
     * CUDA_VISIBLE_DEVICES lets it see, renumbered from 0: map CUDA's ordinal to NVML's */
    for (unsigned i = 0; i < n; i++) {
        uuid[i][0] = 0;
        if (env && nv->nvmlDeviceGetHandleByIndex_v2(i, &dev) == 0)
            nv->nvmlDeviceGetUUID(dev, uuid[i], sizeof(uuid[i]));
        uuids[i] = uuid[i];
    }
    nvis = kopt__visible_map(env, (int)n, uuids, map, KOPT_MAX_VISIBLE);
    if (count)
        *count = nvis;
    if (ordinal < 0 || ordinal >= nvis) {
        nv->nvmlShutdown();
        if (env)
            return kopt_seterr(ctx, KOPT_E_NO_DEVICE, "GPU %d does not exist (%d visible: "
                               "CUDA_VISIBLE_DEVICES=%s)", ordinal, nvis, env);
        return kopt_seterr(ctx, KOPT_E_NO_DEVICE, "GPU %d does not exist (%u found)", ordinal, n);
    }
    if (nv->nvmlDeviceGetHandleByIndex_v2((unsigned)map[ordinal], &dev) == 0) {
        nv->nvmlDeviceGetName(dev, out->name, sizeof(out->name));
        nv->nvmlDeviceGetUUID(dev, out->uuid, sizeof(out->uuid));
        nv->nvmlDeviceGetCudaComputeCapability(dev, &out->cc_major, &out->cc_minor);
        unsigned cur = 0, pending = 0;
        *mig = nv->nvmlDeviceGetMigMode && nv->nvmlDeviceGetMigMode(dev, &cur, &pending) == 0 &&
               cur == 1;
    }
    out->ordinal = ordinal;
    nv->nvmlShutdown();
    return KOPT_OK;
}

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
