/*
 * src/run: the run API, which every verb, optimize, bench and mcp go through (evaluate,
 * profile, tune, resume, replay; docs/internals/run.md). Calls go one way: run_profile.c ->
 * run_eval.c -> run_served.c -> serve_proto.c; run_profile.c -> run_profile_program.c ->
 * run_profile_store.c <- run_doc.c; run_tune.c -> run_scale.c -> run_tune_setup.c <-
 * run_json.c; and nearly all of them -> run.c, which calls none of them.
 * This file: a run: its store, its row in the runs table with the command line and environment, the
 * device ceilings it knows, its final status; and the queries of stored runs.
 */
#include "run_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *kopt_run_kind_name(kopt_run_kind k)
{
    static const char *const names[] = {"eval", "profile", "tune", "optimize", "bench", "mcp"};
    return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

const char *kopt_run_status_name(kopt_run_status s)
{
    static const char *const names[] = {"running", "ok", "failed", "interrupted", "skipped"};
    return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

kopt_status kopt__run_fail(kopt_run *run, kopt_run_fault f, kopt_status rc)
{
    if (run)
        run->fault = f;
    return rc;
}

/* The command line as one string, as a shell reads it: arguments with other characters
 * than these in single quotes (a quote in one as '\''). */
static void command_line(char *buf, size_t n, int argc, char *const *argv)
{
    size_t at = 0;

    buf[0] = '\0';
    for (int i = 0; argv && i < argc && at + 1 < n; i++) {
        const char *a = argv[i];
        int plain = a[0] && strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                      "0123456789_-=,./:+@%") == strlen(a);
        if (i)
            buf[at++] = ' ';
        if (plain) {
            at += (size_t)snprintf(buf + at, n - at, "%s", a);
            continue;
        }
        at += (size_t)snprintf(buf + at, n - at, "'");
        for (const char *c = a; *c && at < n; c++)
            at += (size_t)snprintf(buf + at, n - at, *c == '\'' ? "'\\''" : "%c", *c);
        if (at < n)
            at += (size_t)snprintf(buf + at, n - at, "'");
    }
    if (at >= n)
        buf[n - 1] = '\0';
}

/* What is known without a CUDA context: kopt, host, NVRTC, and the device through NVML
 * (probed on a context of its own: the caller's error message stays). */
static void note_env(kopt_run *run, const kopt_run_opts *o)
{
    kopt_store_run *e = &run->env;
    kopt_device_info dev;
    int count = 0, major = 0, minor = 0;
    kopt_ctx *ctx = kopt_ctx_new();

    snprintf(e->kind, sizeof(e->kind), "%s", kopt_run_kind_name(o->kind));
    command_line(e->command, sizeof(e->command), o->argc, o->argv);
    e->parent_id = o->parent_id;
#ifdef KOPT_VERSION
    snprintf(e->kopt_version, sizeof(e->kopt_version), "%s", KOPT_VERSION);
#endif
    if (gethostname(e->host, sizeof(e->host)) != 0)
        e->host[0] = '\0';
    e->host[sizeof(e->host) - 1] = '\0';
    if (kopt_compile_nvrtc_version(ctx, &major, &minor) == KOPT_OK)
        snprintf(e->nvrtc_version, sizeof(e->nvrtc_version), "%d.%d", major, minor);
    memset(&dev, 0, sizeof(dev));
    if (kopt_device_nvml(ctx, o->device, &dev, &count) == KOPT_OK && o->device < count) {
        snprintf(e->device_name, sizeof(e->device_name), "%s", dev.name);
        snprintf(e->device_uuid, sizeof(e->device_uuid), "%s", dev.uuid);
        snprintf(e->device_cc, sizeof(e->device_cc), "%d.%d", dev.cc_major, dev.cc_minor);
    }
    kopt_ctx_free(ctx);
}

kopt_status kopt_run_open(kopt_run **out, kopt_ctx *ctx, const kopt_run_opts *opts)
{
    kopt_run_opts o = KOPT_RUN_OPTS_INIT;
    kopt_run *run;
    kopt_status rc = KOPT_OK;

    *out = NULL;
    if (opts)
        o = *opts;
    if (!(run = calloc(1, sizeof(*run))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "run");
    run->kind = o.kind;
    if (o.cache_dir && !(run->cache_dir = strdup(o.cache_dir))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "run");
        goto fail;
    }
    if (o.db_path) {
        rc = kopt_store_open(&run->store, ctx, o.db_path);
        if (rc == KOPT_OK && !(run->db_path = strdup(o.db_path)))
            rc = kopt_seterr(ctx, KOPT_E_NOMEM, "run");
        if (rc != KOPT_OK && !o.db_optional)
            goto fail;
        if (rc != KOPT_OK) {
            kopt_log(ctx, KOPT_LOG_WARN, "nothing will be stored: %s", kopt_errmsg(ctx));
            kopt_store_close(run->store);
            run->store = NULL;
            rc = KOPT_OK;
        }
    }
    note_env(run, &o);
    if (run->store && !o.no_record &&
        (rc = kopt_store_run_begin(run->store, ctx, &run->env, &run->id)) != KOPT_OK) {
        if (!o.db_optional)
            goto fail;
        kopt_log(ctx, KOPT_LOG_WARN, "run not recorded: %s", kopt_errmsg(ctx));
        rc = KOPT_OK;
    }
    run->env.id = run->id;
    run->finished = !run->id;   /* nothing to finish without a row */
    *out = run;
    return KOPT_OK;
fail:
    run->finished = 1;
    kopt_run_close(run);
    return rc;
}

kopt_status kopt_run_finish(kopt_run *run, kopt_ctx *ctx, kopt_run_status status,
                            const char *summary)
{
    kopt_status rc = KOPT_OK;

    if (!run || run->finished)
        return KOPT_OK;
    run->finished = 1;
    snprintf(run->env.status, sizeof(run->env.status), "%s", kopt_run_status_name(status));
    snprintf(run->env.summary, sizeof(run->env.summary), "%s", summary ? summary : "");
    if (run->store && run->id)
        rc = kopt_store_run_finish(run->store, ctx, run->id, run->env.status, summary);
    return rc;
}

void kopt_run_close(kopt_run *run)
{
    if (!run)
        return;
    if (!run->finished && run->store && run->id) {
        kopt_ctx *quiet = kopt_ctx_new();   /* the caller's error message stays */
        kopt_store_run_finish(run->store, quiet, run->id, kopt_run_status_name(KOPT_RUN_FAILED),
                              NULL);
        kopt_ctx_free(quiet);
    }
    kopt_store_close(run->store);
    free(run->db_path);
    free(run->cache_dir);
    free(run);
}

int64_t kopt_run_id(const kopt_run *run)
{
    return run ? run->id : 0;
}

kopt_store *kopt_run_store(kopt_run *run)
{
    return run ? run->store : NULL;
}

const char *kopt_run_db_path(const kopt_run *run)
{
    return run ? run->db_path : NULL;
}

const kopt_store_run *kopt_run_env(const kopt_run *run)
{
    return run ? &run->env : NULL;
}

kopt_run_fault kopt_run_last_fault(const kopt_run *run)
{
    return run ? run->fault : KOPT_RUN_FAULT_NONE;
}

/* ---- ceilings and the environment ------------------------------------------------------ */

static kopt__run_ceilings *ceil_slot(kopt_run *run, int device)
{
    for (int i = 0; i < run->nceil; i++)
        if (run->ceil[i].device == device)
            return &run->ceil[i];
    if (run->nceil == KOPT__RUN_MAX_DEVICES)
        return NULL;
    memset(&run->ceil[run->nceil], 0, sizeof(run->ceil[0]));
    run->ceil[run->nceil].device = device;
    return &run->ceil[run->nceil++];
}

const kopt_ceilings *kopt__run_known_ceilings(kopt_run *run, kopt_ctx *ctx, int device)
{
    kopt__run_ceilings *slot = ceil_slot(run, device);
    kopt_device_info dev;
    int found = 0, count = 0;

    if (!slot)
        return NULL;
    if (slot->c.valid)
        return &slot->c;
    /* by NVML's UUID, as the store keys them */
    if (run->store && kopt_device_nvml(ctx, device, &dev, &count) == KOPT_OK &&
        device < count &&
        kopt_store_get_ceilings(run->store, ctx, dev.uuid, &slot->c, &found) == KOPT_OK &&
        found)
        return &slot->c;
    memset(&slot->c, 0, sizeof(slot->c));
    return NULL;
}

kopt_status kopt_run_ceilings(kopt_run *run, kopt_ctx *ctx, int device, kopt_ceilings *out)
{
    return kopt_run_ceilings_many(run, ctx, &device, 1, out);
}

/* One device's measurement: on its own thread (own context) when several are measured. */
typedef struct measure_job {
    int device, known, threaded;
    const char *cache_dir;
    kopt_ctx *ctx;
    pthread_t thread;
    kopt_device_info dev;
    kopt_ceilings c;
    kopt_status rc;
} measure_job;

static void *measure_thread(void *arg)
{
    measure_job *j = arg;
    j->rc = kopt_device_measure(j->ctx, j->device, j->cache_dir, &j->dev, &j->c);
    return NULL;
}

struct kopt__run_ceilings_wave {
    kopt_run *run;
    int n;
    measure_job jobs[];              /* one per device; known ones are not measured */
};

kopt__run_ceilings_wave *kopt__run_ceilings_begin(kopt_run *run, kopt_ctx *ctx,
                                                  const int *devices, int n, int threaded)
{
    kopt__run_ceilings_wave *w =
        calloc(1, sizeof(*w) + (size_t)(n > 0 ? n : 0) * sizeof(measure_job));

    if (!w) {
        kopt_seterr(ctx, KOPT_E_NOMEM, "ceilings");
        return NULL;
    }
    w->run = run;
    w->n = n;
    for (int i = 0; i < n; i++) {
        measure_job *j = &w->jobs[i];
        const kopt_ceilings *known = kopt__run_known_ceilings(run, ctx, devices[i]);
        j->device = devices[i];
        if ((j->known = known != NULL)) {
            j->c = *known;
            continue;
        }
        j->cache_dir = run->cache_dir;
        j->ctx = threaded || n > 1 ? kopt_ctx_new() : ctx;
        if (!j->ctx) {
            j->ctx = ctx;
            j->rc = kopt_seterr(ctx, KOPT_E_NOMEM, "ceilings of GPU %d", j->device);
            continue;
        }
        j->threaded = (threaded || n > 1) &&
                      pthread_create(&j->thread, NULL, measure_thread, j) == 0;
        if (!j->threaded)
            measure_thread(j);
    }
    return w;
}

void kopt__run_ceilings_end(kopt__run_ceilings_wave *w, kopt_ctx *ctx, kopt_ceilings *out)
{
    for (int i = 0; w && i < w->n; i++) {
        measure_job *j = &w->jobs[i];
        kopt__run_ceilings *slot;
        if (j->known) {
            out[i] = j->c;
            continue;
        }
        if (j->threaded)
            pthread_join(j->thread, NULL);
        out[i] = j->c;
        if (j->rc == KOPT_OK && w->run->store)
            kopt_store_put_device(w->run->store, ctx, &j->dev, &out[i]);
        if (out[i].valid && (slot = ceil_slot(w->run, j->device)) != NULL)
            slot->c = out[i];
        if (!out[i].valid)
            kopt_log(ctx, KOPT_LOG_WARN, "device ceilings not measured: %s",
                     kopt_errmsg(j->ctx));
        if (j->ctx != ctx)
            kopt_ctx_free(j->ctx);
    }
    free(w);
}

kopt_status kopt_run_ceilings_many(kopt_run *run, kopt_ctx *ctx, const int *devices, int n,
                                   kopt_ceilings *out)
{
    kopt__run_ceilings_wave *w = kopt__run_ceilings_begin(run, ctx, devices, n, 0);

    if (!w)
        return KOPT_E_NOMEM;
    kopt__run_ceilings_end(w, ctx, out);
    return KOPT_OK;
}

void kopt__run_note_result(kopt_run *run, kopt_ctx *ctx, int device, const kopt_eval_result *r)
{
    kopt__run_ceilings *slot;

    if (!r->has_device)
        return;
    slot = ceil_slot(run, device);
    if (slot && !slot->c.valid && r->ceilings.valid) {   /* measured by this evaluation */
        kopt_device_info dev = r->device;
        int count = 0;
        slot->c = r->ceilings;
        /* keyed by NVML's UUID (the worker did not report the device when it stopped
         * before running anything) */
        if (run->store && (dev.uuid[0] || (kopt_device_nvml(ctx, device, &dev, &count) ==
                                           KOPT_OK && device < count)))
            kopt_store_put_device(run->store, ctx, &dev, &r->ceilings);
    }
    if (!run->env_from_worker && r->device.name[0]) {
        kopt_store_run *e = &run->env;
        run->env_from_worker = 1;
        snprintf(e->device_name, sizeof(e->device_name), "%s", r->device.name);
        snprintf(e->device_uuid, sizeof(e->device_uuid), "%s", r->device.uuid);
        snprintf(e->device_cc, sizeof(e->device_cc), "%d.%d", r->device.cc_major,
                 r->device.cc_minor);
        e->driver_version = r->device.driver_version;
        e->clock_khz = r->device.clock_khz;
        e->mem_clock_khz = r->device.mem_clock_khz;
        if (run->store && run->id &&
            kopt_store_run_set_env(run->store, ctx, run->id, e) != KOPT_OK)
            kopt_log(ctx, KOPT_LOG_WARN, "run environment not stored: %s", kopt_errmsg(ctx));
    }
}

void kopt__run_set_parent(kopt_run *run, kopt_ctx *ctx, int64_t parent)
{
    if (!run->id || parent == run->id)
        return;
    run->env.parent_id = parent;
    if (kopt_store_run_set_env(run->store, ctx, run->id, &run->env) != KOPT_OK)
        kopt_log(ctx, KOPT_LOG_WARN, "run's parent not stored: %s", kopt_errmsg(ctx));
}

/* ---- torch.compile baselines (docs/kernelbench.md) -------------------------------------- */

kopt_torch_baseline *kopt__run_load_baselines(kopt_run *run, kopt_ctx *ctx,
                                              const kopt_problem *prob, kopt_eval_opts *o)
{
    kopt_torch_baseline *v = NULL;
    int n = 0;

    if (!run->store || !prob->ref_torch || !o->torch_compile || o->no_timing ||
        o->torch_baselines)
        return NULL;
    if (kopt_store_torch_baselines(run->store, ctx, prob->hash, KOPT__RUN_MAX_BASELINES, &v,
                                   &n) != KOPT_OK) {
        kopt_log(ctx, KOPT_LOG_WARN, "torch.compile baselines not read: %s", kopt_errmsg(ctx));
        return NULL;
    }
    o->torch_baselines = v;
    o->ntorch_baselines = n;
    return v;
}

/* A torch.compile baseline this evaluation measured and trusted (its outputs agreed with
 * eager's, it was timed, with eager), stored under its key when the evaluation's verdict is
 * OK: a candidate that failed any check never leaves a baseline behind for later runs. */
static void store_baseline(kopt_run *run, kopt_ctx *ctx, kopt_eval_result *r)
{
    kopt_torch_baseline *b = &r->compile_baseline;

    if (!run->store || !r->torch_ref || !r->compile_fresh || !r->has_compile ||
        r->verdict != KOPT_VERDICT_OK || !b->torch_version[0] || !b->device[0] ||
        !(b->eager_ms > 0) || !(b->timing.median_ms > 0))
        return;
    if (kopt_store_torch_baseline_put(run->store, ctx, b, run->id, r->eval_id, &b->id) !=
        KOPT_OK)
        kopt_log(ctx, KOPT_LOG_WARN, "torch.compile baseline not stored: %s", kopt_errmsg(ctx));
}

void kopt__run_store_eval(kopt_run *run, kopt_ctx *ctx, const kopt_problem *prob,
                          const kopt_candidate *cand, kopt_eval_result *r, const char *tag)
{
    kopt_candidate *ref = NULL;
    char *js;

    if (!run->store || r->verdict == KOPT_VERDICT_ERROR)
        return;
    /* the reference is stored as the candidate of its own evaluation */
    if (!cand && kopt_candidate_from_reference(&ref, ctx, prob) != KOPT_OK) {
        kopt_log(ctx, KOPT_LOG_WARN, "evaluation not stored: %s", kopt_errmsg(ctx));
        return;
    }
    js = kopt_eval_result_json(r);
    if (kopt_store_put_eval_in_run(run->store, ctx, run->id, tag, prob, cand ? cand : ref, r, js,
                                   &r->eval_id) != KOPT_OK)
        kopt_log(ctx, KOPT_LOG_WARN, "evaluation not stored: %s", kopt_errmsg(ctx));
    free(js);
    kopt_candidate_free(ref);
    store_baseline(run, ctx, r);
}

/* ---- stored runs ------------------------------------------------------------------------- */

kopt_status kopt__run_open_query(kopt_run **out, kopt_ctx *ctx, const char *db_path)
{
    kopt_run_opts o = KOPT_RUN_OPTS_INIT;

    *out = NULL;
    if (!db_path)
        return kopt_seterr(ctx, KOPT_E_INVALID, "no store given");
    o.db_path = db_path;
    o.no_record = 1;
    return kopt_run_open(out, ctx, &o);
}

/* Close a query's run and return rc. */
static kopt_status query_done(kopt_run *q, kopt_status rc)
{
    kopt_run_close(q);
    return rc;
}

kopt_status kopt_run_list(kopt_ctx *ctx, const char *db_path, const char *kind, int limit,
                          kopt_store_run **out, int *n)
{
    kopt_run *q = NULL;
    kopt_status rc = kopt__run_open_query(&q, ctx, db_path);

    *out = NULL;
    *n = 0;
    return query_done(q, rc ? rc : kopt_store_runs(q->store, ctx, kind, limit, out, n));
}

kopt_status kopt_run_get(kopt_ctx *ctx, const char *db_path, int64_t id, kopt_store_run *out)
{
    kopt_run *q = NULL;
    kopt_status rc = kopt__run_open_query(&q, ctx, db_path);

    return query_done(q, rc ? rc : kopt_store_run_get(q->store, ctx, id, out));
}

kopt_status kopt_run_tune_list(kopt_ctx *ctx, const char *db_path, kopt_store_tune_run **out,
                               int *n)
{
    kopt_run *q = NULL;
    kopt_status rc = kopt__run_open_query(&q, ctx, db_path);

    *out = NULL;
    *n = 0;
    return query_done(q, rc ? rc : kopt_store_tune_runs(q->store, ctx, out, n));
}

kopt_status kopt_run_tool_stats(kopt_ctx *ctx, const char *db_path, kopt_tool_stats **out,
                                int *n)
{
    kopt_run *q = NULL;
    kopt_status rc = kopt__run_open_query(&q, ctx, db_path);

    *out = NULL;
    *n = 0;
    return query_done(q, rc ? rc : kopt_store_tool_stats(q->store, ctx, out, n));
}
