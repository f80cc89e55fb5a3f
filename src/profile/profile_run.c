/*
 * Profiling one candidate (kopt_profile_run, kopt_profile_import): build eval's worker job
 * for the candidate at the main sizes (kopt__eval_job), then either run it with op
 * "profile" (CUPTI range profiler in the worker, src/eval/worker_profile.c) and read the
 * metrics from its result, or run it under ncu (the job's "wrap") and parse ncu's CSV log.
 * The calling process never creates a CUDA context.
 */
#include "kopt/profile.h"
#include "kopt/compile.h"
#include "kopt/device.h"
#include "kopt/proc.h"
#include "../eval/eval_int.h"
#include "../eval/worker_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- merging the worker's result ------------------------------------------------------ */

static kopt_kernel_profile *add_kernel(kopt_profile *p, const char *name)
{
    kopt_kernel_profile *k = realloc(p->kernels, (size_t)(p->nkernels + 1) * sizeof(*k));
    if (!k)
        return NULL;
    p->kernels = k;
    k = &p->kernels[p->nkernels++];
    memset(k, 0, sizeof(*k));
    snprintf(k->kernel, sizeof(k->kernel), "%s", name);
    return k;
}

/* The n-th kernel of a set is the n-th launch: the same entry when the names agree. */
static kopt_kernel_profile *kernel_for(kopt_profile *p, size_t n, const char *name)
{
    if (n < (size_t)p->nkernels && strcmp(p->kernels[n].kernel, name) == 0)
        return &p->kernels[n];
    return add_kernel(p, name);
}

static kopt_status from_result(kopt_profile *p, kopt_ctx *ctx, json_t *result)
{
    json_t *sets = json_object_get(json_object_get(result, "profile"), "sets"), *s;
    size_t i;

    snprintf(p->source, sizeof(p->source), "cupti");
    json_array_foreach(sets, i, s) {
        json_t *ks = json_object_get(s, "kernels"), *k;
        size_t j;
        if (p->nsets < (int)(sizeof(p->sets) / sizeof(p->sets[0]))) {
            snprintf(p->sets[p->nsets].name, sizeof(p->sets[0].name), "%s",
                     json_string_value(json_object_get(s, "name")) ?: "custom");
            p->sets[p->nsets].passes = (int)json_integer_value(json_object_get(s, "passes"));
            p->sets[p->nsets].collect_ms = json_number_value(json_object_get(s, "collect_ms"));
            p->sets[p->nsets].setup_ms = json_number_value(json_object_get(s, "setup_ms"));
            p->sets[p->nsets].repeat_ms = json_number_value(json_object_get(s, "repeat_ms"));
            {
                static const char *const step[5] = {"begin", "launches_and_sync", "stop",
                                                    "decode", "evaluate"};
                json_t *st = json_object_get(s, "steps_ms");
                for (int q = 0; q < 5; q++)
                    p->sets[p->nsets].steps_ms[q] = json_number_value(json_object_get(st,
                                                                                   step[q]));
            }
            p->nsets++;
        }
        p->collect_ms += json_number_value(json_object_get(s, "collect_ms"));
        p->passes += (int)json_integer_value(json_object_get(s, "passes"));
        json_array_foreach(ks, j, k) {
            const char *name = json_string_value(json_object_get(k, "name")) ?: "?", *mn;
            kopt_kernel_profile *kp = kernel_for(p, j, name);
            json_t *v, *g = json_object_get(k, "grid"), *b = json_object_get(k, "block");
            if (!kp)
                return kopt_seterr(ctx, KOPT_E_NOMEM, "profile");
            for (int d = 0; d < 3; d++) {
                if (json_array_size(g) == 3)
                    kp->grid[d] = (int)json_integer_value(json_array_get(g, (size_t)d));
                if (json_array_size(b) == 3)
                    kp->block[d] = (int)json_integer_value(json_array_get(b, (size_t)d));
            }
            if (json_object_get(k, "smem"))
                kp->dyn_smem = (int)json_integer_value(json_object_get(k, "smem"));
            json_object_foreach(json_object_get(k, "metrics"), mn, v)
                if (kopt_metrics_set(&kp->metrics, mn, json_number_value(v)) != KOPT_OK)
                    return kopt_seterr(ctx, KOPT_E_NOMEM, "profile metrics");
        }
    }
    return KOPT_OK;
}

/* An error status and message for a worker that gave no result. */
static kopt_status worker_error(kopt_ctx *ctx, const kopt__worker_run *run, const char *how)
{
    const char *kind = json_string_value(json_object_get(run->error, "kind"));
    const char *msg = json_string_value(json_object_get(run->error, "message"));

    if (run->timed_out)
        return kopt_seterr(ctx, KOPT_E_TIMEOUT, "the profiling worker made no progress (%s; "
                           "last step: %s)", how, run->last_progress[0] ? run->last_progress :
                           "starting");
    if (kind && strcmp(kind, "profile") == 0)
        return kopt_seterr(ctx, KOPT_E_UNSUPPORTED, "CUPTI could not profile: %s (it needs "
                           "permission to read GPU performance counters, and no other "
                           "profiler attached)", msg ? msg : "?");
    if (kind && strcmp(kind, "nodevice") == 0)
        return kopt_seterr(ctx, KOPT_E_NO_DEVICE, "no usable GPU: %s", msg ? msg : "?");
    if (kind)
        return kopt_seterr(ctx, KOPT_E_ERROR, "the profiling worker failed (%s, %s): %s", how,
                           kind, msg ? msg : "?");
    return kopt_seterr(ctx, KOPT_E_ERROR, "the profiling worker (%s) ended without a result "
                       "(exit %d, signal %d)%s%s", how, run->exit_code, run->signal,
                       run->log && run->log[0] ? ": " : "", run->log ? run->log : "");
}

/* ---- ncu -------------------------------------------------------------------------------- */

/* Drop kopt's own kernels (input generation, poisoning, memset steps) from a profile. */
static void drop_kopt_kernels(kopt_profile *p)
{
    int n = 0;
    for (int i = 0; i < p->nkernels; i++) {
        const char *name = p->kernels[i].kernel;
        if (strncmp(name, "kopt_", 5) == 0 || strstr(name, " kopt_")) {
            kopt_metrics_clear(&p->kernels[i].metrics);
            continue;
        }
        p->kernels[n++] = p->kernels[i];
    }
    p->nkernels = n;
}

/* Run `job` under ncu (one run of the candidate); the CSV log text in *log. */
static kopt_status run_under_ncu(kopt_ctx *ctx, json_t *job, size_t shm, double timeout_s,
                                 const kopt_ncu_opts *no_in, char **log, double *wall_ms)
{
    char path[] = "/tmp/kopt-ncu-XXXXXX";
    kopt_ncu_opts no = *no_in;
    kopt__worker_run run;
    json_t *wrap = json_array();
    char **argv = NULL;
    size_t len = 0;
    int fd;
    kopt_status rc;

    memset(&run, 0, sizeof(run));
    *log = NULL;
    if ((fd = mkstemp(path)) < 0) {
        json_decref(wrap);
        return kopt_seterr(ctx, KOPT_E_IO, "temporary file for ncu's log");
    }
    close(fd);
    no.log_file = path;
    if ((rc = kopt_ncu_argv(&argv, NULL, ctx, &no)) != KOPT_OK)
        goto cleanup;
    for (int i = 0; argv[i]; i++)
        json_array_append_new(wrap, json_string(argv[i]));
    json_object_set(job, "wrap", wrap);
    if ((rc = kopt__worker_spawn(ctx, job, shm, timeout_s, &run)) != KOPT_OK)
        goto cleanup;
    *wall_ms = run.wall_ms;
    if (!run.result) {
        rc = worker_error(ctx, &run, "under ncu");
        goto cleanup;
    }
    if ((rc = kopt_file_read(ctx, path, log, &len)) != KOPT_OK)
        kopt_adderr(ctx, rc, "ncu's log");
cleanup:
    json_object_del(job, "wrap");
    json_decref(wrap);
    kopt_ncu_argv_free(argv);
    kopt__worker_run_free(&run);
    unlink(path);
    return rc;
}

static kopt_status profile_ncu(kopt_profile **out, kopt_ctx *ctx, json_t *job, size_t shm,
                               const kopt_profile_opts *o, const char *const *metrics)
{
    kopt_ncu_opts no = KOPT_NCU_OPTS_INIT;
    kopt_profile *p = NULL;
    char *log = NULL;
    double wall = 0;
    kopt_status rc;

    json_object_set_new(job, "profile", json_pack("{s:[], s:b}", "sets", "warmup", 0));
    no.metrics = metrics;
    no.lock_clocks = o->ncu_lock_clocks;
    no.page = "raw";
    if ((rc = run_under_ncu(ctx, job, shm, o->timeout_s * 10, &no, &log, &wall)) != KOPT_OK)
        goto cleanup;
    if ((rc = kopt_ncu_parse_raw_csv(&p, ctx, log, "ncu log")) != KOPT_OK)
        goto cleanup;
    drop_kopt_kernels(p);
    snprintf(p->source, sizeof(p->source), "ncu");
    p->nsets = 1;
    snprintf(p->sets[0].name, sizeof(p->sets[0].name), "ncu");
    p->sets[0].collect_ms = p->collect_ms = wall;
    if (o->ncu_rules) {
        kopt_ncu_opts nd = KOPT_NCU_OPTS_INIT;
        free(log);
        log = NULL;
        nd.set = "detailed";
        nd.lock_clocks = o->ncu_lock_clocks;
        nd.page = "details";
        if ((rc = run_under_ncu(ctx, job, shm, o->timeout_s * 10, &nd, &log, &wall)) != KOPT_OK ||
            (rc = kopt_ncu_parse_details_csv(p, ctx, log, "ncu details log")) != KOPT_OK) {
            kopt_adderr(ctx, rc, "ncu's own rules (--ncu-rules)");
            goto cleanup;
        }
        p->nsets = 2;
        snprintf(p->sets[1].name, sizeof(p->sets[1].name), "ncu-details");
        p->sets[1].collect_ms = wall;
        p->collect_ms += wall;
    }
    *out = p;
    p = NULL;
cleanup:
    kopt_profile_free(p);
    free(log);
    return rc;
}

/* ---- the entry points -------------------------------------------------------------------- */

/* The union of the requested sets (NULL-terminated, names borrowed); caller frees the array. */
static const char **union_metrics(unsigned sets)
{
    int n = 0, cap = 0;
    const char **m = NULL;
    const char *const *lists[2] = {sets & KOPT_PROFILE_SET_ROOFLINE ? kopt_metrics_roofline : NULL,
                                   sets & KOPT_PROFILE_SET_RULES ? kopt_metrics_rules : NULL};

    for (int l = 0; l < 2; l++)
        for (int i = 0; lists[l] && lists[l][i]; i++) {
            int dup = 0;
            for (int j = 0; j < n; j++)
                dup |= strcmp(m[j], lists[l][i]) == 0;
            if (dup)
                continue;
            if (n + 2 > cap) {
                const char **g = realloc(m, (size_t)(cap = cap * 2 + 32) * sizeof(*m));
                if (!g) {
                    free(m);
                    return NULL;
                }
                m = g;
            }
            m[n++] = lists[l][i];
            m[n] = NULL;
        }
    return m;
}

kopt_status kopt_profile_run(kopt_profile **out, kopt_ctx *ctx, const kopt_problem *prob,
                             const kopt_candidate *cand, const kopt_profile_opts *opts)
{
    kopt_profile_opts o = KOPT_PROFILE_OPTS_INIT;
    kopt_eval_opts eo = KOPT_EVAL_OPTS_INIT;
    kopt_compile_opts co = KOPT_COMPILE_OPTS_INIT;
    kopt_candidate *ref = NULL;
    kopt_compiled *comp = NULL, *rt = NULL;
    kopt_bound *b = NULL;
    kopt_vars sizes = KOPT_VARS_INIT;
    kopt_device_info nvml;
    kopt__worker_run run;
    kopt_profile *p = NULL;
    const char **ncu_metrics = NULL;
    json_t *job = NULL;
    char arch[24];
    size_t shm = 0;
    unsigned sets;
    kopt_status rc;

    memset(&run, 0, sizeof(run));
    *out = NULL;
    if (opts)
        o = *opts;
    if (o.version != KOPT_PROFILE_OPTS_VERSION)
        return kopt_seterr(ctx, KOPT_E_INVALID, "kopt_profile_opts version %d (expected %d): "
                           "start from KOPT_PROFILE_OPTS_INIT", o.version,
                           KOPT_PROFILE_OPTS_VERSION);
    if ((rc = kopt_candidate_check_concrete(ctx, cand)) != KOPT_OK)
        return rc;
    sets = o.sets ? o.sets : KOPT_PROFILE_SET_ROOFLINE | KOPT_PROFILE_SET_RULES;
    if (o.timeout_s <= 0)
        o.timeout_s = 30;
    if ((rc = kopt_device_nvml(ctx, o.device, &nvml, NULL)) != KOPT_OK) {
        kopt_adderr(ctx, KOPT_E_NO_DEVICE, "profiling needs a GPU");
        return KOPT_E_NO_DEVICE;
    }
    if (o.arch)
        snprintf(arch, sizeof(arch), "%s", o.arch);
    else
        kopt_arch_for_cc(nvml.cc_major, nvml.cc_minor, arch);
    co.arch = arch;
    co.cache_dir = o.cache_dir;
    if (!cand) {
        if ((rc = kopt_candidate_from_reference(&ref, ctx, prob)) != KOPT_OK)
            goto cleanup;
        cand = ref;
    }
    if ((rc = kopt_sizes_resolve(&sizes, ctx, prob, o.sizes)) != KOPT_OK ||
        (rc = kopt_bind(&b, ctx, prob, cand, &sizes)) != KOPT_OK ||
        (rc = kopt_compile(&comp, ctx, cand, &co)) != KOPT_OK ||
        (rc = kopt_compile_runtime(&rt, ctx, &co)) != KOPT_OK)
        goto cleanup;
    eo.device = o.device;
    eo.timeout_s = o.timeout_s;
    if (!(job = kopt__eval_job(prob, b, comp, rt, &eo, o.seed ? o.seed : 1, &shm))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "profile job");
        goto cleanup;
    }
    json_object_set_new(job, "op", json_string("profile"));
    if (o.ncu) {
        if (!o.metrics && !(ncu_metrics = union_metrics(sets))) {
            rc = kopt_seterr(ctx, KOPT_E_NOMEM, "metric list");
            goto cleanup;
        }
        rc = profile_ncu(out, ctx, job, shm, &o, o.metrics ? o.metrics : ncu_metrics);
        goto cleanup;
    }
    {
        json_t *sj = json_array();
        if (o.metrics) {
            json_t *names = json_array();
            for (int i = 0; o.metrics[i]; i++)
                json_array_append_new(names, json_string(o.metrics[i]));
            json_array_append_new(sj, json_pack("{s:s, s:o}", "name", "custom", "metrics",
                                                names));
        } else {
            if (sets & KOPT_PROFILE_SET_ROOFLINE)
                json_array_append_new(sj, json_pack("{s:s}", "name", "roofline"));
            if (sets & KOPT_PROFILE_SET_RULES)
                json_array_append_new(sj, json_pack("{s:s}", "name", "rules"));
        }
        json_object_set_new(job, "profile", json_pack("{s:o, s:b, s:i}", "sets", sj, "warmup",
                                                      1, "repeat", o.repeat > 1 ? o.repeat : 1));
    }
    if ((rc = kopt__worker_spawn(ctx, job, shm, o.timeout_s, &run)) != KOPT_OK)
        goto cleanup;
    if (!run.result) {
        rc = worker_error(ctx, &run, "CUPTI range profiler");
        goto cleanup;
    }
    if (!(p = calloc(1, sizeof(*p)))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "profile");
        goto cleanup;
    }
    if ((rc = from_result(p, ctx, run.result)) != KOPT_OK)
        goto cleanup;
    *out = p;
    p = NULL;
cleanup:
    kopt_profile_free(p);
    kopt__worker_run_free(&run);
    json_decref(job);
    free(ncu_metrics);
    kopt_bound_free(b);
    kopt_vars_free(&sizes);
    kopt_compiled_free(comp);
    kopt_compiled_free(rt);
    kopt_candidate_free(ref);
    return rc;
}

/* Run `ncu -i REPORT --csv --page PAGE`; its output in *text. */
static kopt_status import_page(kopt_ctx *ctx, const char *report, const char *page, char **text)
{
    char **argv = NULL;
    int code = 0;
    kopt_status rc;

    *text = NULL;
    if ((rc = kopt_ncu_import_argv(&argv, NULL, ctx, report, page)) != KOPT_OK)
        return rc;
    rc = kopt_proc_run(ctx, (const char *const *)argv, 300, &code, text);
    kopt_ncu_argv_free(argv);
    if (rc == KOPT_OK && code != 0) {
        rc = kopt_seterr(ctx, KOPT_E_ERROR, "%s: ncu -i exited with %d: %.300s", report, code,
                         *text ? *text : "");
        free(*text);
        *text = NULL;
    }
    return rc;
}

kopt_status kopt_profile_import(kopt_profile **out, kopt_ctx *ctx, const char *report,
                                int with_rules)
{
    kopt_profile *p = NULL;
    char *text = NULL;
    kopt_status rc;

    *out = NULL;
    if ((rc = import_page(ctx, report, "raw", &text)) != KOPT_OK ||
        (rc = kopt_ncu_parse_raw_csv(&p, ctx, text, report)) != KOPT_OK)
        goto cleanup;
    drop_kopt_kernels(p);
    snprintf(p->source, sizeof(p->source), "ncu");
    if (with_rules) {
        free(text);
        text = NULL;
        if ((rc = import_page(ctx, report, "details", &text)) != KOPT_OK ||
            (rc = kopt_ncu_parse_details_csv(p, ctx, text, report)) != KOPT_OK)
            goto cleanup;
    }
    *out = p;
    p = NULL;
cleanup:
    kopt_profile_free(p);
    free(text);
    return rc;
}
