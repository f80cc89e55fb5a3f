/* The GPUs this process may use, from NVML (no CUDA context): which NVML device each CUDA
 * ordinal is under CUDA_VISIBLE_DEVICES, its name, UUID, compute capability and MIG mode,
 * asked once a process (device.c starts the workers that tell the rest). */
#include "kopt/device.h"
#include "eval_int.h"
#include "../cuda/cuda_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

kopt_status kopt__device_nvml_mig(int ordinal, kopt_device_info *out, int *mig)
{
    return device_nvml(NULL, ordinal, out, NULL, mig);
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
