/*
 * The device set of a scale-out run: `--gpus all|0,2,5` parsed against the GPUs present,
 * and whether the slots of a pool measure on the same device model and clocks (times from
 * different ones are not compared: docs/scale.md).
 */
#include "kopt/scale.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kopt_scale_gpus_here(void)
{
    kopt_device_info info;
    int count = 0;

    if (kopt_scale_standin_env() >= 0)
        return -1;
    if (kopt_device_nvml(NULL, 0, &info, &count) != KOPT_OK)
        return 0;
    return count;
}

kopt_status kopt_scale_devices_parse(kopt_ctx *ctx, const char *spec, int count, int *out,
                                     int max, int *n)
{
    const char *s = spec;

    *n = 0;
    if (!spec || !*spec)
        return kopt_seterr(ctx, KOPT_E_INVALID, "--gpus: empty (use all or a list: 0,2,5)");
    if (strcmp(spec, "all") == 0) {
        if (count <= 0)
            return kopt_seterr(ctx, KOPT_E_NO_DEVICE, "--gpus all: no GPU here");
        for (int i = 0; i < count && i < max; i++)
            out[(*n)++] = i;
        return KOPT_OK;
    }
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > 1 << 20 || (*end && *end != ','))
            return kopt_seterr(ctx, KOPT_E_INVALID, "--gpus %s: '%.*s' is not a GPU index "
                               "(use all or a list: 0,2,5)", spec, (int)strcspn(s, ","), s);
        if (count >= 0 && v >= count)
            return kopt_seterr(ctx, KOPT_E_INVALID, "--gpus %s: there is no GPU %ld (%d "
                               "here)", spec, v, count);
        for (int i = 0; i < *n; i++)
            if (out[i] == v)
                return kopt_seterr(ctx, KOPT_E_INVALID, "--gpus %s: GPU %ld named twice",
                                   spec, v);
        if (*n == max)
            return kopt_seterr(ctx, KOPT_E_INVALID, "--gpus %s: at most %d GPUs", spec, max);
        out[(*n)++] = (int)v;
        s = *end ? end + 1 : end;
        if (*end == ',' && !*s)
            return kopt_seterr(ctx, KOPT_E_INVALID, "--gpus %s: ends with a comma", spec);
    }
    return KOPT_OK;
}

/* Two slots measure alike when their device names match and, where both clocks are known,
 * the clocks do too. Slots that know nothing of their device (a rank not yet heard) are
 * not counted. */
int kopt_scale_pool_mixed(const kopt_scale_pool *p, char *buf, size_t n)
{
    int ns = kopt_scale_pool_size(p), mixed = 0, first = -1;
    kopt_scale_slot_stats *st;
    size_t at = 0;

    if (buf && n)
        buf[0] = '\0';
    if (ns < 2 || !(st = calloc((size_t)ns, sizeof(*st))))
        return 0;
    kopt_scale_pool_stats(p, st);
    for (int i = 0; i < ns; i++) {
        const kopt_tune_where *a, *b;
        if (!st[i].where.known || !st[i].where.name[0])
            continue;
        if (first < 0) {
            first = i;
            continue;
        }
        a = &st[first].where;
        b = &st[i].where;
        if (strcmp(a->name, b->name) != 0 ||
            (a->clock_mhz && b->clock_mhz && a->clock_mhz != b->clock_mhz) ||
            (a->mem_clock_mhz && b->mem_clock_mhz && a->mem_clock_mhz != b->mem_clock_mhz))
            mixed = 1;
    }
    for (int i = 0; mixed && buf && i < ns && at + 1 < n; i++)
        if (st[i].where.known && st[i].where.name[0])
            at += (size_t)snprintf(buf + at, n - at, "%sslot %d: %s", at ? ", " : "", i,
                                   st[i].where.name);
    free(st);
    return mixed;
}
