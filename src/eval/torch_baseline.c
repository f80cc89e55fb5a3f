/*
 * The torch.compile baseline of a PyTorch reference, kept across runs (docs/kernelbench.md,
 * "Baselines and timing"): the key an evaluation's baseline is stored under, and which of
 * the baselines measured before (opts.torch_baselines) it may use instead of timing
 * torch.compile again. The store itself is the run's (src/run, src/store/baselines.c).
 */
#include "eval_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern char **environ;

#ifndef KOPT_VERSION
#define KOPT_VERSION "unknown"
#endif

static int by_string(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The environment that changes what torch.compile makes (TORCHINDUCTOR_*, TORCHDYNAMO_*,
 * TORCH_COMPILE_*; the workers inherit it), as the first 16 hex digits of the SHA-256 of
 * its sorted NAME=VALUE lines; "" when none is set. */
static void compile_env_digest(char out[17])
{
    static const char *const prefixes[] = {"TORCHINDUCTOR_", "TORCHDYNAMO_", "TORCH_COMPILE_"};
    const char **v = NULL;
    size_t n = 0, cap = 0, len = 1;
    char *text = NULL, hex[65];

    out[0] = '\0';
    for (char **e = environ; e && *e; e++) {
        int hit = 0;
        for (size_t k = 0; k < sizeof(prefixes) / sizeof(prefixes[0]); k++)
            hit |= strncmp(*e, prefixes[k], strlen(prefixes[k])) == 0;
        if (!hit)
            continue;
        if (n == cap) {
            const char **g = realloc(v, (cap = cap ? 2 * cap : 8) * sizeof(*v));
            if (!g)
                goto unreadable;
            v = g;
        }
        v[n++] = *e;
        len += strlen(*e) + 1;
    }
    if (!n)
        return;
    qsort(v, n, sizeof(*v), by_string);
    if (!(text = malloc(len)))
        goto unreadable;
    for (size_t i = 0, at = 0; i < n; i++)
        at += (size_t)snprintf(text + at, len - at, "%s\n", v[i]);
    kopt_sha256_hex(text, strlen(text), hex);
    snprintf(out, 17, "%.16s", hex);
    free(text);
    free(v);
    return;
unreadable:            /* no memory: a key no stored baseline has */
    snprintf(out, 17, "unreadable");
    free(v);
}

void kopt__torch_baseline_key(kopt_torch_baseline *key, const kopt_problem *prob,
                              const kopt_vars *sizes, const kopt_eval_opts *o, int cpu,
                              const kopt_device_info *nvml)
{
    char env[17];
    size_t at = 0;

    memset(key, 0, sizeof(*key));
    snprintf(key->problem_hash, sizeof(key->problem_hash), "%s", prob->hash);
    if (cpu)
        snprintf(key->device, sizeof(key->device), "cpu");
    else if (nvml && nvml->uuid[0])
        snprintf(key->device, sizeof(key->device), "%s", nvml->uuid);
    else if (nvml)
        snprintf(key->device, sizeof(key->device), "%.100s cc %d.%d", nvml->name,
                 nvml->cc_major, nvml->cc_minor);
    for (int i = 0; i < sizes->n && at < sizeof(key->sizes); i++)
        at += (size_t)snprintf(key->sizes + at, sizeof(key->sizes) - at, "%s%s=%lld",
                               i ? "," : "", sizes->names[i], (long long)sizes->values[i]);
    compile_env_digest(env);
    snprintf(key->settings, sizeof(key->settings), "kopt %s; warmup_ms %g, budget_ms %g, reps "
             "%d:%d, flush_l2 %d, precision %g; torch.compile mode default; env %s",
             KOPT_VERSION, o->warmup_ms, o->budget_ms, o->min_reps, o->max_reps, !o->no_flush,
             o->precision > 0 ? o->precision : 0.0, env[0] ? env : "-");
}

/* 1 when b was stored under `key` (the torch version aside). */
static int same_key(const kopt_torch_baseline *b, const kopt_torch_baseline *key)
{
    return key->device[0] && strcmp(b->problem_hash, key->problem_hash) == 0 &&
           strcmp(b->device, key->device) == 0 && strcmp(b->sizes, key->sizes) == 0 &&
           strcmp(b->settings, key->settings) == 0;
}

int kopt__torch_baseline_candidates(const kopt_eval_opts *o, const kopt_torch_baseline *key)
{
    int n = 0;

    for (int i = 0; o->torch_baselines && i < o->ntorch_baselines; i++)
        n += same_key(&o->torch_baselines[i], key) && o->torch_baselines[i].timing.n > 0 &&
             o->torch_baselines[i].timing.median_ms > 0;
    return n;
}

const kopt_torch_baseline *kopt__torch_baseline_pick(const kopt_eval_opts *o,
                                                     const kopt_torch_baseline *key,
                                                     const char *torch_version,
                                                     double eager_ms, char *why, size_t nwhy)
{
    /* the CPU build's wall-clock times move with the machine's load: not compared */
    int cpu = strcmp(key->device, "cpu") == 0;

    why[0] = '\0';
    if (!torch_version || !torch_version[0]) {
        snprintf(why, nwhy, "the reference's worker did not report its torch version");
        return NULL;
    }
    for (int i = 0; o->torch_baselines && i < o->ntorch_baselines; i++) {
        const kopt_torch_baseline *b = &o->torch_baselines[i];
        double ratio;
        if (!same_key(b, key) || b->timing.n <= 0 || !(b->timing.median_ms > 0))
            continue;
        if (strcmp(b->torch_version, torch_version) != 0) {
            if (!why[0])
                snprintf(why, nwhy, "the cached one is of torch %s, the reference runs %s",
                         b->torch_version, torch_version);
            continue;
        }
        if (!(eager_ms > 0) || !(b->eager_ms > 0)) {
            snprintf(why, nwhy, "eager was not timed %s", eager_ms > 0 ? "with the cached one"
                                                                       : "in this run");
            return NULL;
        }
        ratio = eager_ms / b->eager_ms;
        if (!cpu &&
            (ratio > KOPT_BASELINE_EAGER_DRIFT || ratio < 1 / KOPT_BASELINE_EAGER_DRIFT)) {
            snprintf(why, nwhy, "eager took %.4g ms when the cached one was measured (%s), "
                     "%.4g ms now: more than %gx apart", b->eager_ms, b->measured_at, eager_ms,
                     KOPT_BASELINE_EAGER_DRIFT);
            return NULL;     /* the newest of this version decides */
        }
        return b;
    }
    if (!why[0])
        snprintf(why, nwhy, "none cached for this key");
    return NULL;
}

void kopt__utc_now(char *out, size_t n)
{
    time_t now = time(NULL);
    struct tm tm;

    if (gmtime_r(&now, &tm))
        strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
    else
        snprintf(out, n, "unknown");
}

void kopt__torch_best_baseline(kopt_eval_result *r)
{
    double eager = r->ref_timing.n ? r->ref_timing.median_ms : 0;
    double comp = r->has_compile ? r->compile_timing.median_ms : 0;

    r->baseline_ms = r->speedup_best = 0;
    r->baseline_is_compile = 0;
    if (!(eager > 0) || !(comp > 0))
        return;
    r->baseline_is_compile = comp < eager;
    r->baseline_ms = fmin(eager, comp);
    if (r->timing.n && r->timing.median_ms > 0)
        r->speedup_best = r->baseline_ms / r->timing.median_ms;
}
