/* The live evaluator: a point of a template's space becomes a concrete candidate
 * (kopt_candidate_instantiate), is compiled (NVRTC, into the shared compile cache; prepare
 * does this ahead on the driver's worker threads), screened for resources (spills, zero
 * occupancy, shared memory), then verified and timed at the space's sizes in the run's
 * evaluation session (kopt_eval_session: one seed, the reference run once, one serving
 * worker), or by kopt_eval_run for each point with one_shot.
 * With want_findings the static micro-tools (SASS and resources, with the device and the
 * measured time when there is one) rank what to change next. */
#include "kopt/tune.h"

#include "kopt/analyze.h"
#include "kopt/compile.h"
#include "kopt/eval.h"
#include "kopt/profile.h"

#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What prepare learned about a point, for evaluate: its compile time (evaluate then sees a
 * cache hit) or its compile error (not cached on disk, so not compiled twice). */
typedef struct prepared {
    uint64_t point;
    double compile_ms;
    int failed;
    char message[256];
} prepared;

typedef struct live {
    const kopt_problem *prob;        /* borrowed */
    const kopt_candidate *tmpl;      /* borrowed */
    const kopt_tune_space *space;    /* borrowed */
    kopt_eval_opts eval;             /* our copy; its pointers are the caller's */
    kopt_tune_live_opts opts;
    char arch[24];
    int cc_major, cc_minor;          /* of the device (9.0 when none is seen) */
    kopt_tune_where where;           /* the device, recorded on every outcome */
    kopt_eval_session *session;      /* opened at the first evaluation (NULL: one_shot) */
    pthread_mutex_t lock;            /* guards memo */
    prepared *memo;
    size_t nmemo, capmemo;
} live;

/* ---- helpers ---------------------------------------------------------------------------- */

/* The first line of `text` that reports an error (else its first non-empty line). */
static void first_error_line(const char *text, char *out, size_t n)
{
    const char *line = NULL, *first = NULL, *s = text ? text : "";

    while (*s) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (!first && len > 0)
            first = s;
        for (size_t i = 0; !line && i + 5 <= len; i++)
            if (strncmp(s + i, "error", 5) == 0)
                line = s;
        if (line)
            break;
        s += len + (e ? 1 : 0);
    }
    if (!line)
        line = first ? first : "";
    snprintf(out, n, "%.*s", (int)strcspn(line, "\n"), line);
}

static kopt_status instantiate(live *L, kopt_ctx *ctx, uint64_t point, kopt_candidate **out)
{
    kopt_vars vals = KOPT_VARS_INIT;
    kopt_status rc;

    *out = NULL;
    if ((rc = kopt_tune_space_values(L->space, point, &vals)) == KOPT_OK)
        rc = kopt_candidate_instantiate(out, ctx, L->tmpl, &vals);
    kopt_vars_free(&vals);
    return rc;
}

static void compile_opts(const live *L, kopt_compile_opts *co)
{
    kopt_compile_opts init = KOPT_COMPILE_OPTS_INIT;
    *co = init;
    co->arch = L->arch;
    co->cache_dir = L->eval.cache_dir;
}

static void memo_put(live *L, uint64_t point, double compile_ms, int failed, const char *msg)
{
    pthread_mutex_lock(&L->lock);
    if (L->nmemo == L->capmemo) {
        size_t cap = L->capmemo ? 2 * L->capmemo : 64;
        prepared *m = realloc(L->memo, cap * sizeof(*m));
        if (!m) {                      /* only an optimization: forget it */
            pthread_mutex_unlock(&L->lock);
            return;
        }
        L->memo = m;
        L->capmemo = cap;
    }
    L->memo[L->nmemo].point = point;
    L->memo[L->nmemo].compile_ms = compile_ms;
    L->memo[L->nmemo].failed = failed;
    snprintf(L->memo[L->nmemo].message, sizeof(L->memo[L->nmemo].message), "%s", msg ? msg : "");
    L->nmemo++;
    pthread_mutex_unlock(&L->lock);
}

static int memo_get(live *L, uint64_t point, prepared *out)
{
    int found = 0;

    pthread_mutex_lock(&L->lock);
    for (size_t i = L->nmemo; i-- > 0;)
        if (L->memo[i].point == point) {
            *out = L->memo[i];
            found = 1;
            break;
        }
    pthread_mutex_unlock(&L->lock);
    return found;
}

/* Compile `cand`; a compile error is an outcome (out->state, message), not a status. */
static kopt_status compile_point(live *L, kopt_ctx *ctx, const kopt_candidate *cand,
                                 kopt_compiled **comp, char *msg, size_t msglen)
{
    kopt_compile_opts co;
    kopt_status rc;

    compile_opts(L, &co);
    rc = kopt_compile(comp, ctx, cand, &co);
    if (rc == KOPT_E_COMPILE) {
        const char *detail = kopt_errdetail(ctx);
        first_error_line(detail && detail[0] ? detail : kopt_errmsg(ctx), msg, msglen);
    }
    return rc;
}

/* ---- trace ------------------------------------------------------------------------------ */

/* KOPT_TUNE_TRACE=FILE: one JSON line per evaluation appended to FILE (where its time went:
 * the parent's steps before the session, the session's own trace of parent and worker
 * steps, and the workers' start step by step when it started them), one per compile done
 * ahead ("prepare": when it started and ended, on the same clock as the evaluations'
 * start_ms), and one per step of the run around them (kopt_tune_trace_step), to see what grows when several GPUs evaluate at once
 * and what a first run waits for. One write per line, with O_APPEND, so the threads' lines
 * do not interleave. Takes (and frees) `line`. */
static void trace_write(json_t *line)
{
    const char *path = getenv("KOPT_TUNE_TRACE");
    char *text = line && path && *path ? json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(5))
                                       : NULL;
    int fd;

    if (text && (fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644)) >= 0) {
        size_t n = strlen(text);
        text[n] = '\n';               /* json_dumps's terminator becomes the line's end */
        if (write(fd, text, n + 1) < 0) { /* a diagnostic: a failed write loses one line */ }
        close(fd);
    }
    free(text);
    json_decref(line);
}

static int tracing(void)
{
    const char *path = getenv("KOPT_TUNE_TRACE");
    return path && *path;
}

void kopt_tune_trace_step(const char *step, double start_ms)
{
    if (tracing())
        trace_write(json_pack("{s:s, s:f, s:f}", "step", step, "start_ms", start_ms,
                              "end_ms", kopt_now_ms()));
}

static void trace_line(const live *L, uint64_t point, double t_start, double prep_ms,
                       double eval_ms, const kopt_eval_result *res)
{
    json_t *line;

    if (!tracing())
        return;
    line = json_pack("{s:I, s:i, s:f, s:f, s:f}", "point", (json_int_t)point,
                     "device", L->eval.device, "start_ms", t_start, "prep_ms", prep_ms,
                     "eval_ms", eval_ms);
    if (line && res && res->trace)
        json_object_set_new(line, "trace", json_loads(res->trace, 0, NULL));
    if (line && res) {   /* the workers' start step by step, when this evaluation started them */
        char *text = kopt_eval_result_json(res);
        json_t *all = text ? json_loads(text, 0, NULL) : NULL;
        json_t *wall = json_object_get(all, "wall_ms");
        json_t *ref = json_object_get(wall, "reference_setup_steps");
        json_t *cand = json_object_get(wall, "candidate_setup_steps");
        if (json_is_object(ref) || json_is_object(cand))
            json_object_set_new(line, "setup", json_pack("{s:O, s:O}", "reference",
                                                         ref ? ref : json_null(), "candidate",
                                                         cand ? cand : json_null()));
        json_decref(all);
        free(text);
    }
    trace_write(line);
}

/* ---- prepare ---------------------------------------------------------------------------- */

static kopt_status live_prepare(void *user, kopt_ctx *ctx, uint64_t point)
{
    live *L = user;
    kopt_candidate *cand = NULL;
    kopt_compiled *comp = NULL;
    prepared seen;
    char msg[256] = "";
    kopt_status rc;

    double t0 = kopt_now_ms();

    if (memo_get(L, point, &seen))
        return KOPT_OK;
    if ((rc = instantiate(L, ctx, point, &cand)) != KOPT_OK)
        return rc;
    rc = compile_point(L, ctx, cand, &comp, msg, sizeof(msg));
    if (tracing())
        trace_write(json_pack("{s:I, s:f, s:f, s:b, s:f}", "prepare", (json_int_t)point,
                              "start_ms", t0, "end_ms", kopt_now_ms(),
                              "cache_hit", rc == KOPT_OK && comp->cache_hit,
                              "compile_ms", rc == KOPT_OK ? comp->compile_ms : 0.0));
    if (rc == KOPT_OK)
        memo_put(L, point, comp->cache_hit ? 0.0 : comp->compile_ms, 0, NULL);
    else if (rc == KOPT_E_COMPILE) {
        memo_put(L, point, 0.0, 1, msg);
        rc = KOPT_OK;                  /* a bad configuration, not a failure of kopt */
    }
    kopt_compiled_free(comp);
    kopt_candidate_free(cand);
    return rc;
}

/* ---- resources -------------------------------------------------------------------------- */

/* The kernel infos of the bound launches: fills the outcome with the costliest kernel
 * (the launch with the most threads in all) and returns 1 with a message when the
 * configuration cannot run well: spills (unless allowed), shared memory beyond the block
 * limit, or no block fitting on an SM (registers x threads, shared memory, warps). */
static int check_resources(live *L, kopt_ctx *ctx, const kopt_compiled *comp,
                           const kopt_bound *b, kopt_tune_outcome *out)
{
    const kopt_tune_limits *lim = &L->space->limits;
    kopt_device_info dev;
    double most = -1;

    memset(&dev, 0, sizeof(dev));
    dev.cc_major = L->cc_major;        /* the architecture's values fill what limits lack */
    dev.cc_minor = L->cc_minor;
    dev.regs_per_sm = lim->regs_per_sm;
    dev.max_threads_per_sm = lim->max_threads_per_sm;
    dev.max_threads_per_block = lim->max_threads_per_block;
    dev.max_smem_per_block_optin = lim->max_smem_per_block;
    for (int i = 0; i < b->nlaunches; i++) {
        const kopt_blaunch *l = &b->launches[i];
        const kopt_kernel_info *k;
        int64_t threads;
        int smem, spill;
        kopt_occupancy occ;
        if (l->is_memset || !(k = kopt_compiled_kernel(comp, l->kernel)))
            continue;
        threads = l->block[0] * l->block[1] * l->block[2];
        smem = k->static_smem + (int)l->smem;
        spill = k->spill_stores + k->spill_loads;
        if ((double)threads * (double)(l->grid[0] * l->grid[1] * l->grid[2]) > most) {
            most = (double)threads * (double)(l->grid[0] * l->grid[1] * l->grid[2]);
            out->registers = k->registers;
            out->spill_bytes = spill;
            out->smem_bytes = smem;
        }
        if (spill > 0 && !L->opts.allow_spills) {
            snprintf(out->message, sizeof(out->message), "%.120s spills (%d B stores, %d B loads; "
                     "%d registers)", l->kernel, k->spill_stores, k->spill_loads, k->registers);
            return 1;
        }
        if (lim->max_smem_per_block > 0 && smem > lim->max_smem_per_block) {
            snprintf(out->message, sizeof(out->message), "%.120s needs %d B of shared memory per "
                     "block; the device allows %d", l->kernel, smem, lim->max_smem_per_block);
            return 1;
        }
        if (lim->regs_per_sm > 0 && (int64_t)k->registers * threads > lim->regs_per_sm) {
            snprintf(out->message, sizeof(out->message), "%.120s: %d registers x %lld threads "
                     "exceed the %d registers of an SM", l->kernel, k->registers,
                     (long long)threads, lim->regs_per_sm);
            return 1;
        }
        if (kopt_occupancy_compute(&occ, ctx, &dev, (int)threads, k->registers, smem) ==
                KOPT_OK && occ.blocks == 0) {
            snprintf(out->message, sizeof(out->message), "%.120s: no block fits on an SM "
                     "(limited by %.60s)", l->kernel, occ.limiter);
            return 1;
        }
    }
    return 0;
}

/* ---- findings --------------------------------------------------------------------------- */

/* Static micro-tools over SASS (when nvdisasm is found) and resources, with the device,
 * its ceilings and the measured time when the evaluation had them. Best effort: whatever
 * fails leaves nfindings 0. */
static void static_findings(live *L, const kopt_compiled *comp, const kopt_bound *b,
                            const kopt_eval_result *res, kopt_tune_outcome *out)
{
    kopt_ctx *ctx = kopt_ctx_new();
    kopt_sass *sass = NULL;
    kopt_kernel_view *views = NULL;
    kopt_analysis *an = NULL;
    kopt_analysis_input in;
    int nv = 0;

    if (!ctx || comp->host_mode)
        goto cleanup;
    if (kopt_sass_from_cubin(&sass, ctx, comp->binary_path) != KOPT_OK)
        sass = NULL;                   /* no nvdisasm: the resource tools still run */
    if (kopt_analyze_views(&views, &nv, ctx, comp, b, sass, NULL) != KOPT_OK)
        goto cleanup;
    memset(&in, 0, sizeof(in));
    if (res && res->has_device) {
        in.dev = &res->device;
        in.ceil = res->ceilings.valid ? &res->ceilings : NULL;
        if (res->verdict == KOPT_VERDICT_OK)
            in.median_ms = res->timing.median_ms;
    }
    in.problem = L->prob->name;
    if (b->has_work) {
        in.flops = b->flops;
        in.bytes = b->bytes;
    }
    in.compute = (int)L->prob->compute;
    in.matmul_like = kopt_analyze_matmul_like(L->prob);
    in.nkernels = nv;
    in.kernels = views;
    if (kopt_analyze_run(&an, ctx, &in, NULL) != KOPT_OK)
        goto cleanup;
    for (int i = 0; i < an->findings.n && out->nfindings < KOPT_TUNE_MAX_FINDINGS; i++) {
        const kopt_finding *f = &an->findings.f[i];
        int dup = 0;
        for (int j = 0; j < out->nfindings; j++)   /* ranked: keep each tool's best */
            dup |= strcmp(out->findings[j].tool, f->tool) == 0;
        if (dup)
            continue;
        snprintf(out->findings[out->nfindings].tool, sizeof(out->findings[0].tool), "%.31s",
                 f->tool);
        out->findings[out->nfindings].gain = f->gain;
        out->nfindings++;
    }
cleanup:
    kopt_analysis_free(an);
    free(views);
    kopt_sass_free(sass);
    kopt_ctx_free(ctx);
}

/* ---- evaluate --------------------------------------------------------------------------- */

static void map_verdict(const kopt_eval_result *res, kopt_tune_outcome *out)
{
    snprintf(out->verdict, sizeof(out->verdict), "%s", kopt_verdict_name(res->verdict));
    if (res->verdict == KOPT_VERDICT_OK) {
        out->state = KOPT_TUNE_OK;
        out->time_ms = res->timing.median_ms;
        if (res->has_energy) {
            out->energy_mj = res->energy_mj;
            out->power_w = res->power_w;
        }
        return;
    }
    out->state = res->verdict == KOPT_VERDICT_COMPILE_ERROR ? KOPT_TUNE_COMPILE_ERROR
                                                             : KOPT_TUNE_FAILED;
    snprintf(out->message, sizeof(out->message), "%.*s", (int)strcspn(res->message, "\n"),
             res->message);
}

static kopt_status live_evaluate(void *user, kopt_ctx *ctx, uint64_t point, int want_findings,
                                 kopt_tune_outcome *out)
{
    live *L = user;
    kopt_candidate *cand = NULL;
    kopt_compiled *comp = NULL;
    kopt_bound *b = NULL;
    kopt_eval_result *res = NULL;
    prepared seen;
    int was_prepared;
    double t0, t_start = kopt_now_ms();
    kopt_status rc;

    memset(out, 0, sizeof(*out));
    out->where = L->where;
    /* A compile that failed in a prepare thread is compiled again here, on the driver's
     * thread, before it is called a COMPILE_ERROR: on the H200 machine (NVRTC 13.0, 12
     * threads) 3 of 274 points failed in prepare as if the -D params were missing. The
     * cause was kopt's: the CUDA include folder was rebuilt in a shared buffer on every
     * call, so a thread could read a torn "-I" that swallowed the next option (fixed in
     * src/cuda/loader.c; regression_include_dir_from_threads). The retry stays. */
    was_prepared = memo_get(L, point, &seen) && !seen.failed;
    if ((rc = instantiate(L, ctx, point, &cand)) != KOPT_OK)
        goto cleanup;
    t0 = kopt_now_ms();
    rc = compile_point(L, ctx, cand, &comp, out->message, sizeof(out->message));
    if (was_prepared)
        out->compile_ms = seen.compile_ms;      /* spent in prepare; this was a cache hit */
    else if (comp && !comp->cache_hit)
        out->compile_ms = comp->compile_ms;
    if (rc == KOPT_E_COMPILE) {
        out->compile_ms = kopt_now_ms() - t0;
        out->state = KOPT_TUNE_COMPILE_ERROR;
        snprintf(out->verdict, sizeof(out->verdict), "%s",
                 kopt_verdict_name(KOPT_VERDICT_COMPILE_ERROR));
        rc = KOPT_OK;
        goto cleanup;
    }
    if (rc != KOPT_OK)
        goto cleanup;

    /* the launch plan at the space's sizes: block sizes and dynamic shared memory */
    if ((rc = kopt_bind(&b, ctx, L->prob, cand, &L->space->sizes)) != KOPT_OK) {
        out->state = KOPT_TUNE_FAILED;
        snprintf(out->verdict, sizeof(out->verdict), "%s",
                 kopt_verdict_name(KOPT_VERDICT_LAUNCH_ERROR));
        snprintf(out->message, sizeof(out->message), "%.*s",
                 (int)strcspn(kopt_errmsg(ctx), "\n"), kopt_errmsg(ctx));
        rc = KOPT_OK;
        goto cleanup;
    }
    if (check_resources(L, ctx, comp, b, out)) {
        out->state = KOPT_TUNE_RESOURCES;
        goto cleanup;
    }

    t0 = kopt_now_ms();
    if (!L->opts.one_shot && !L->session &&
        (rc = kopt_eval_session_open(&L->session, ctx, L->prob, &L->eval)) != KOPT_OK)
        goto cleanup;
    rc = L->session ? kopt_eval_session_run(L->session, ctx, cand, &res)
                    : kopt_eval_run(&res, ctx, L->prob, cand, &L->eval);
    out->eval_ms = kopt_now_ms() - t0;
    trace_line(L, point, t_start, t0 - t_start, out->eval_ms, res);
    if (rc != KOPT_OK)
        goto cleanup;
    map_verdict(res, out);
    if (res->has_device) {             /* the clocks the worker saw */
        out->where.clock_mhz = res->device.clock_khz / 1000;
        out->where.mem_clock_mhz = res->device.mem_clock_khz / 1000;
        if (res->device.uuid[0])
            snprintf(out->where.uuid, sizeof(out->where.uuid), "%.47s", res->device.uuid);
    }
    if (want_findings || L->opts.findings)
        static_findings(L, comp, b, res, out);
cleanup:
    kopt_eval_result_free(res);
    kopt_bound_free(b);
    kopt_compiled_free(comp);
    kopt_candidate_free(cand);
    return rc;
}

/* Open the session and start its workers ahead (kopt_tune_evaluator.warm), so the first
 * evaluation does not wait for their CUDA contexts. */
static kopt_status live_warm(void *user, kopt_ctx *ctx)
{
    live *L = user;
    const char *off = getenv("KOPT_TUNE_WARM");   /* "0": not ahead (to measure what it saves) */
    kopt_status rc;

    if (L->opts.one_shot || (off && strcmp(off, "0") == 0))
        return KOPT_OK;
    if (!L->session && (rc = kopt_eval_session_open(&L->session, ctx, L->prob, &L->eval)) !=
        KOPT_OK)
        return rc;
    return kopt_eval_session_warm(L->session, ctx);
}

static void live_destroy(void *user)
{
    live *L = user;

    if (!L)
        return;
    kopt_eval_session_close(L->session);
    pthread_mutex_destroy(&L->lock);
    free(L->memo);
    free(L);
}

/* ---- creation --------------------------------------------------------------------------- */

kopt_status kopt_tune_evaluator_live(kopt_tune_evaluator **out, kopt_ctx *ctx,
                                     const kopt_problem *prob, const kopt_candidate *tmpl,
                                     const kopt_tune_space *space,
                                     const kopt_tune_live_opts *opts)
{
    kopt_tune_live_opts dflt = KOPT_TUNE_LIVE_OPTS_INIT;
    kopt_eval_opts eval_dflt = KOPT_EVAL_OPTS_INIT;
    kopt_tune_evaluator *e = NULL;
    live *L = NULL;
    kopt_device_info nvml;

    *out = NULL;
    if (!prob || !tmpl || !space)
        return kopt_seterr(ctx, KOPT_E_INVALID, "live evaluator: problem, template and space "
                           "are required");
    if (tmpl->host_mode)
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s: host-mode templates cannot be tuned "
                           "(params reach device code only)", tmpl->path);
    e = calloc(1, sizeof(*e));
    L = calloc(1, sizeof(*L));
    if (!e || !L) {
        free(e);
        free(L);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "live evaluator");
    }
    L->prob = prob;
    L->tmpl = tmpl;
    L->space = space;
    L->opts = opts ? *opts : dflt;
    L->eval = opts && opts->eval ? *opts->eval : eval_dflt;
    L->opts.eval = &L->eval;
    L->eval.sizes = &space->sizes;     /* measure where the space was pruned */
    if (L->opts.objective != KOPT_TUNE_TIME)
        L->eval.energy_s = L->opts.energy_s > 0 ? L->opts.energy_s : 1.0;
    else
        L->eval.energy_s = 0;
    /* the compile target kopt_eval_run will choose, so prepare fills the same cache entry */
    L->cc_major = 9;
    if (kopt_device_nvml(NULL, L->eval.device, &nvml, NULL) == KOPT_OK) {
        L->cc_major = nvml.cc_major;
        L->cc_minor = nvml.cc_minor;
        kopt_arch_for_cc(nvml.cc_major, nvml.cc_minor, L->arch);
        L->where.known = 1;
        snprintf(L->where.name, sizeof(L->where.name), "%.63s", nvml.name);
        snprintf(L->where.uuid, sizeof(L->where.uuid), "%.47s", nvml.uuid);
    } else {
        snprintf(L->arch, sizeof(L->arch), "sm_90a");
    }
    if (L->eval.arch)
        snprintf(L->arch, sizeof(L->arch), "%s", L->eval.arch);
    L->where.device = L->eval.device;
    gethostname(L->where.host, sizeof(L->where.host) - 1);
    pthread_mutex_init(&L->lock, NULL);
    e->user = L;
    e->prepare = live_prepare;
    e->evaluate = live_evaluate;
    e->destroy = live_destroy;
    e->warm = live_warm;
    *out = e;
    return KOPT_OK;
}
