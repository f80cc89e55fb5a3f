/* The live evaluator: candidates through one evaluation session of the run (GPU work one
 * at a time), a correct one profiled for its roofline class and the micro-tools' advice,
 * templates tuned by kopt's own tuner. One GPU of several (spread, kopt optimize --gpus)
 * evaluates and profiles on a thread of its own without touching the run, and keeps each
 * result until the search's thread commits it (stores it through the run). */
#include "search_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* spread: a result evaluated on the GPU's thread, waiting to be committed */
typedef struct deferred {
    struct deferred *next;
    char tag[32];
    kopt_candidate *cand;
    kopt_eval_result *r;
    kopt_run_profile *p;        /* NULL: not profiled */
} deferred;

typedef struct live {
    kopt_run *run;
    kopt_ctx *ctx;
    const kopt_problem *prob;
    kopt_search_live_opts o;
    kopt_run_session *session;
    char workdir[4096];
    char arch[24];              /* what the session compiles for (known after the first) */
    kopt_ceilings ceil;         /* spread: this GPU's */
    pthread_mutex_t mu;         /* spread: guards pending and arch (--overlap compiles ahead
                                 * on the search's thread while this GPU's thread evaluates) */
    deferred *pending;
    struct prep *ahead;         /* the compiles ahead (live_prepare), newest first; those
                                 * finished are joined at the next prepare, all at close */
} live;

static void prep_join(live *l);

static void deferred_free(deferred *d)
{
    if (!d)
        return;
    kopt_run_profile_free(d->p);
    kopt_eval_result_free(d->r);
    kopt_candidate_free(d->cand);
    free(d);
}

static void live_close(void *self)
{
    live *l = self;

    prep_join(l);
    while (l->pending) {
        deferred *d = l->pending;
        l->pending = d->next;
        deferred_free(d);
    }
    kopt_run_session_close(l->session);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

/* The candidate file of node `tag` in the work folder (written, so a person can look). */
static kopt_status parse_candidate(live *l, kopt_ctx *ctx, const char *source, const char *tag,
                                   const char *suffix, kopt_candidate **c, char *path,
                                   size_t plen)
{
    snprintf(path, plen, "%s/%s%s.cu", l->workdir, tag, suffix);
    kopt_file_write(ctx, path, source, strlen(source));
    return kopt_candidate_parse(c, ctx, source, path, l->prob);
}

/* The first failing check as a mismatch report. */
static char *mismatch_report(const kopt_eval_result *r)
{
    kopt_buf b = KOPT_BUF_INIT;

    for (int i = 0; i < r->nchecks; i++) {
        const kopt_check *c = &r->checks[i];
        if (!c->mismatches)
            continue;
        kopt_buf_printf(&b, "tensor %s (%s sizes, %s): %lld of %lld elements differ; first at "
                        "index %lld: got %g want %g; max abs error %g, max rel error %g (atol "
                        "%g, rtol %g)\n", c->tensor, c->sizes_label, c->run,
                        (long long)c->mismatches, (long long)c->count,
                        (long long)c->first_index, c->first_got, c->first_want, c->max_abs_err,
                        c->max_rel_err, c->atol, c->rtol);
        if (b.len > 2000)
            break;
    }
    return b.len ? kopt_buf_detach(&b) : NULL;
}

/* The share of the time no change can save beyond: 1 - the bound over the median, against
 * the fastest rate the problem admits (TF32 tensor cores for an FP32 contraction whose
 * tolerance admits them); 1 when not known. */
static double live_headroom(const kopt_eval_result *r)
{
    const kopt_roofline *h = r->fast_roofline.valid ? &r->fast_roofline : &r->roofline;

    return h->valid && h->pct_of_bound > 0 && h->pct_of_bound <= 100
               ? 1.0 - h->pct_of_bound / 100.0 : 1.0;
}

/* Resources of each kernel, the roofline position and the device's ceilings, for the
 * planner. */
static char *facts_of(const kopt_eval_result *r)
{
    kopt_buf b = KOPT_BUF_INIT;
    const kopt_ceilings *c = &r->ceilings;

    for (int i = 0; i < r->nkernels && i < 8; i++) {
        const kopt_kernel_resources *k = &r->kernels[i];
        kopt_buf_printf(&b, "kernel %s: %d registers/thread, %d B static shared memory, "
                        "%d B stack, spills: %d stores %d loads\n", k->name, k->registers,
                        k->static_smem, k->stack_frame, k->spill_stores, k->spill_loads);
    }
    if (r->roofline.valid) {
        const int mem = r->roofline.limiter && strcmp(r->roofline.limiter, "memory") == 0;
        kopt_buf_printf(&b, "roofline: %.1f%% of the %s bound (%.4f ms", r->roofline.pct_of_bound,
                        r->roofline.limiter ? r->roofline.limiter : "?", r->roofline.bound_ms);
        if (mem && r->roofline.pct_of_bound > 0)
            kopt_buf_printf(&b, ": the problem's bytes at %.0f GB/s, the fastest DRAM rate "
                            "measured on this device", r->roofline.achieved_gbs * 100.0 /
                            r->roofline.pct_of_bound);
        kopt_buf_printf(&b, "); %.0f GB/s, %.0f GFLOP/s achieved\n", r->roofline.achieved_gbs,
                        r->roofline.achieved_gflops);
        if (r->fast_roofline.valid && r->fast_roofline.pct_of_bound > 0)
            kopt_buf_printf(&b, "roofline at the %s tensor-core rate (the tolerance admits it; "
                            "kopt's speed-of-light check uses this bound): %.1f%% of the %s "
                            "bound (%.4f ms)\n", kopt_compute_name(r->fast_compute),
                            r->fast_roofline.pct_of_bound, r->fast_roofline.limiter,
                            r->fast_roofline.bound_ms);
        if (live_headroom(r) < 1.0)
            kopt_buf_printf(&b, "headroom: no change can save more than %.0f%% of the time "
                            "(the bound is the problem's own work at the device's best rate%s)\n",
                            100.0 * live_headroom(r), r->fast_roofline.valid ?
                            " the tolerance admits" : "");
    }
    if (r->has_device)
        kopt_buf_printf(&b, "device: %s (sm_%d%d, %d SMs)", r->device.name,
                        r->device.cc_major, r->device.cc_minor, r->device.sm_count);
    if (c->valid)
        kopt_buf_printf(&b, "; measured DRAM read %.0f, write %.0f, copy %.0f GB/s, FP32 %.0f "
                        "GFLOP/s%s, L2 %.0f GB/s, shared memory %.0f GB/s", c->dram_read_gbs,
                        c->dram_write_gbs, c->dram_copy_gbs,
                        c->gflops[KOPT_COMPUTE_FP32],
                        c->measured[KOPT_COMPUTE_FP32] ? "" : " (spec)", c->l2_gbs,
                        c->smem_gbs);
    return b.len ? kopt_buf_detach(&b) : NULL;
}

/* `source`: the candidate's text (a CuTe/CUTLASS one keeps more of its compile log, for
 * the debugger's summary of where in the templates it failed). */
static void from_result(kopt_search_outcome *out, const kopt_eval_result *r, const char *source)
{
    out->facts = facts_of(r);
    out->verdict = r->verdict;
    out->time_ms = r->timing.median_ms;
    out->energy_mj = r->has_energy ? r->energy_mj : 0.0;
    out->eval_id = r->eval_id;
    snprintf(out->message, sizeof(out->message), "%.1000s", r->message);
    if (r->verdict == KOPT_VERDICT_WRONG)
        out->log = mismatch_report(r);
    else if (r->compile_log && r->compile_log[0])
        out->log = strndup(r->compile_log, source && kopt_cutlass_used(source) ? 65536 : 8000);
    else if (r->worker_log && r->worker_log[0])
        out->log = strndup(r->worker_log, 4000);
}

/* The class and the advice (or raw metrics) of a correct candidate. Spread: detached, and
 * kept in *keep for the commit. */
static void profile(live *l, kopt_ctx *ctx, const kopt_candidate *c, const kopt_eval_result *r,
                    kopt_search_outcome *out, kopt_run_profile **keep)
{
    /* no advice can save more than the roofline leaves: its estimate is capped there */
    const double headroom = live_headroom(r);
    kopt_run_profile_opts po = KOPT_RUN_PROFILE_OPTS_INIT;
    kopt_run_profile *p = NULL;
    kopt_buf b = KOPT_BUF_INIT;

    po.eval = l->o.eval;
    po.profile.device = l->o.eval.device;
    po.detached = l->o.spread;
    if (kopt_run_profile_candidate(l->run, ctx, l->prob, c, &po, &p) != KOPT_OK || !p || !p->an) {
        /* the planner is told why it gets no class nor advice (a PyTorch program whose
         * kernels no GPU ran; CUPTI refused; ...) */
        if (p && p->stopped && p->eval)
            snprintf(out->profile_note, sizeof(out->profile_note), "the profile's correctness "
                     "check gave %s", kopt_verdict_name(p->eval->verdict));
        else
            snprintf(out->profile_note, sizeof(out->profile_note), "%s", kopt_errmsg(ctx));
        kopt_log(ctx, KOPT_LOG_WARN, "profile failed: %s", out->profile_note);
        kopt_run_profile_free(p);
        return;
    }
    snprintf(out->cls, sizeof(out->cls), "%s", kopt_class_name(p->an->cls.final));
    if (p->program) {                  /* a PyTorch program: what it runs, kernel by kernel */
        kopt_buf f = KOPT_BUF_INIT;
        kopt_buf_printf(&f, "%s%sthe program's kernels in one forward (kopt profile):\n%s",
                        out->facts ? out->facts : "", out->facts ? "\n" : "", p->program);
        free(out->facts);
        out->facts = kopt_buf_detach(&f);
    }
    if (l->o.no_tools) {
        char *m = kopt_run_profile_metrics_json(p->prof);
        kopt_buf_printf(&b, "%s", m ? m : "(no metrics)");
        free(m);
    } else {
        for (int i = 0; i < p->an->findings.n && i < 5; i++) {
            const kopt_finding *f = &p->an->findings.f[i];
            if (i == 0)
                snprintf(out->tool, sizeof(out->tool), "%s", f->tool);
            const int capped = f->gain > headroom;
            kopt_buf_printf(&b, "%s%s%s%s: %s (saves about %.0f%% of the time%s)%s%s\n",
                            f->tool, f->kernel[0] ? " [" : "", f->kernel,
                            f->kernel[0] ? "]" : "", f->title, (capped ? headroom : f->gain) * 100,
                            capped ? ", capped at the roofline's headroom" : "",
                            f->change ? " Change: " : "", f->change ? f->change : "");
        }
        if (!b.len)
            kopt_buf_printf(&b, "no micro-tool fired; class %s: %s\n", out->cls,
                            p->an->cls.reasoning);
    }
    out->advice = kopt_buf_detach(&b);
    if (keep)
        *keep = p;
    else
        kopt_run_profile_free(p);
}

/* Where the result was measured. */
static void where_of(const live *l, const kopt_eval_result *r, kopt_search_outcome *out)
{
    /* a candidate that did not compile never reached the GPU: it names none */
    if (!r->has_device || r->verdict == KOPT_VERDICT_COMPILE_ERROR || !r->device.name[0])
        return;
    out->where.known = 1;
    out->where.device = l->o.eval.device;
    snprintf(out->where.name, sizeof(out->where.name), "%.63s", r->device.name);
    gethostname(out->where.host, sizeof(out->where.host) - 1);
}

/* Spread: keep what the commit stores. Takes c and r (and p). */
static kopt_status defer(live *l, kopt_ctx *ctx, const char *tag, kopt_candidate *c,
                         kopt_eval_result *r, kopt_run_profile *p)
{
    deferred *d = calloc(1, sizeof(*d));

    if (!d) {
        kopt_run_profile_free(p);
        kopt_eval_result_free(r);
        kopt_candidate_free(c);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "evaluation of %s", tag);
    }
    snprintf(d->tag, sizeof(d->tag), "%s", tag);
    d->cand = c;
    d->r = r;
    d->p = p;
    pthread_mutex_lock(&l->mu);
    d->next = l->pending;
    l->pending = d;
    pthread_mutex_unlock(&l->mu);
    return KOPT_OK;
}

static kopt_status live_commit(void *self, kopt_ctx *ctx, const char *tag,
                               kopt_search_outcome *out)
{
    live *l = self;
    deferred *d = NULL, **at;

    pthread_mutex_lock(&l->mu);
    for (at = &l->pending; *at; at = &(*at)->next)
        if (strcmp((*at)->tag, tag) == 0) {
            d = *at;
            *at = d->next;
            break;
        }
    pthread_mutex_unlock(&l->mu);
    if (!d)
        return KOPT_OK;   /* nothing reached the GPU (the candidate did not parse) */
    kopt_run_session_commit(l->session, ctx, d->cand, tag, d->r);
    out->eval_id = d->r->eval_id;
    if (d->p)
        kopt_run_profile_commit(l->run, ctx, d->p);
    deferred_free(d);
    return KOPT_OK;
}

static kopt_status live_evaluate(void *self, kopt_ctx *ctx, const char *source, const char *tag,
                                 kopt_search_outcome *out)
{
    live *l = self;
    kopt_candidate *c = NULL;
    kopt_eval_result *r = NULL;
    kopt_run_profile *p = NULL;
    char path[4200];
    kopt_status rc;

    memset(out, 0, sizeof(*out));
    /* the root is the reference itself: its own launch plan, options and mode */
    if (l->prob->ref_source && strcmp(source, l->prob->ref_source) == 0) {
        if ((rc = kopt_candidate_from_reference(&c, ctx, l->prob)) != KOPT_OK)
            return rc;
    } else if (parse_candidate(l, ctx, source, tag, "", &c, path, sizeof(path)) != KOPT_OK) {
        /* front matter kopt cannot read is the candidate's fault, as a compile error is */
        out->verdict = KOPT_VERDICT_COMPILE_ERROR;
        snprintf(out->message, sizeof(out->message), "%s", kopt_errmsg(ctx));
        out->log = strdup(kopt_errmsg(ctx));
        return KOPT_OK;
    }
    if (kopt_candidate_check_concrete(ctx, c) != KOPT_OK) {
        /* a template where a kernel was asked for: the reply's fault, typed like a compile
           error (only the templatizer's nodes are tuned) */
        out->verdict = KOPT_VERDICT_COMPILE_ERROR;
        snprintf(out->message, sizeof(out->message), "the candidate is a template, not a kernel "
                 "(%s); give every param a fixed value (#define) and drop the \"params\" "
                 "field of its front matter", kopt_errmsg(ctx));
        out->log = strdup(out->message);
        rc = KOPT_OK;
        goto out;
    }
    if (!l->session && !l->o.spread &&
        (rc = kopt_run_session_open(&l->session, l->run, ctx, l->prob, &l->o.eval, 1)) != KOPT_OK)
        goto out;
    if ((rc = l->o.spread ? kopt_run_session_eval_detached(l->session, ctx, c, &r)
                          : kopt_run_session_eval(l->session, ctx, c, tag, &r)) != KOPT_OK)
        goto out;
    from_result(out, r, source);
    where_of(l, r, out);
    if (r->arch[0]) {
        pthread_mutex_lock(&l->mu);
        snprintf(l->arch, sizeof(l->arch), "%s", r->arch);
        pthread_mutex_unlock(&l->mu);
    }
    if (r->verdict == KOPT_VERDICT_OK && !l->o.no_profile)
        profile(l, ctx, c, r, out, l->o.spread ? &p : NULL);
    else if (r->verdict == KOPT_VERDICT_OK)
        snprintf(out->profile_note, sizeof(out->profile_note), "profiling is off (--no-profile)");
    if (l->o.spread) {   /* stored by the commit, on the search's thread */
        rc = defer(l, ctx, tag, c, r, p);
        return rc;
    }
out:
    kopt_eval_result_free(r);
    kopt_candidate_free(c);
    return rc;
}

/* Spread: this GPU gets ready beside the root's evaluation on another one. The reference is
 * evaluated once as a candidate, the result dropped (neither profiled nor stored), so the
 * session keeps its reference run and starts its workers for the next candidate now. */
static kopt_status live_warm(void *self, kopt_ctx *ctx)
{
    live *l = self;
    kopt_candidate *c = NULL;
    kopt_eval_result *r = NULL;
    kopt_status rc;

    if (!l->session)
        return kopt_seterr(ctx, KOPT_E_INVALID, "GPU %d: no evaluation session to warm",
                           l->o.eval.device);
    if ((rc = kopt_candidate_from_reference(&c, ctx, l->prob)) == KOPT_OK &&
        (rc = kopt_run_session_eval_detached(l->session, ctx, c, &r)) == KOPT_OK &&
        r->verdict != KOPT_VERDICT_OK)
        rc = kopt_seterr(ctx, KOPT_E_ERROR, "GPU %d: the reference evaluated as %s: %s",
                         l->o.eval.device, kopt_verdict_name(r->verdict), r->message);
    kopt_eval_result_free(r);
    kopt_candidate_free(c);
    return rc;
}

static kopt_status live_tune(void *self, kopt_ctx *ctx, const char *source, const char *tag,
                             int budget, kopt_search_outcome *out)
{
    live *l = self;
    kopt_run_tune_opts to;
    kopt_run_tune *t = NULL;
    char tpath[4200], opath[4200];
    kopt_status rc;

    memset(out, 0, sizeof(*out));
    snprintf(tpath, sizeof(tpath), "%s/%s-template.cu", l->workdir, tag);
    snprintf(opath, sizeof(opath), "%s/%s-tuned.cu", l->workdir, tag);
    if ((rc = kopt_file_write(ctx, tpath, source, strlen(source))) != KOPT_OK)
        return rc;
    kopt_run_tune_opts_default(&to);
    to.problem_path = l->prob->path;
    to.template_path = tpath;
    to.budget = budget;
    to.objective = l->o.objective;
    to.eval.device = l->o.eval.device;
    to.eval.arch = l->o.eval.arch;
    to.eval.cache_dir = l->o.eval.cache_dir;
    to.out = opath;
    to.fresh = 1;
    if (kopt_run_tune_open(&t, l->run, ctx, &to) != KOPT_OK || !t->has_device) {
        out->verdict = t ? KOPT_VERDICT_SKIPPED : KOPT_VERDICT_COMPILE_ERROR;
        snprintf(out->message, sizeof(out->message), "tune: %s",
                 t ? t->why_no_device : kopt_errmsg(ctx));
        out->log = strdup(out->message);
        kopt_run_tune_free(t);
        return KOPT_OK;
    }
    if (kopt_run_tune_go(t, ctx) != KOPT_OK || !t->shapes[0].final) {
        out->verdict = KOPT_VERDICT_COMPILE_ERROR;
        snprintf(out->message, sizeof(out->message), "tune found no working point: %s",
                 kopt_errmsg(ctx));
        out->log = strdup(out->message);
        kopt_run_tune_free(t);
        return KOPT_OK;
    }
    from_result(out, t->shapes[0].final, source);
    where_of(l, t->shapes[0].final, out);
    kopt_run_tune_free(t);
    if (kopt_file_read(ctx, opath, &out->tuned_source, NULL) != KOPT_OK)
        out->verdict = KOPT_VERDICT_ERROR;
    return KOPT_OK;
}

/* ---- compiling ahead, in parallel ---------------------------------------------------------- */

typedef struct prep {
    struct prep *next_prep;     /* the one started before */
    live *l;
    char **sources, **tags;     /* owned copies: the search's nodes may move meanwhile */
    char arch[24];
    int n, next, host, nthreads;
    int finished;               /* threads that ended (under lock) */
    pthread_t th[8];
    pthread_mutex_t lock;
} prep;

static void *prep_worker(void *arg)
{
    prep *p = arg;
    kopt_ctx *ctx = kopt_ctx_new();

    for (;;) {
        kopt_candidate *c = NULL;
        kopt_compiled *comp = NULL;
        kopt_compile_opts co = KOPT_COMPILE_OPTS_INIT;
        char path[4200];
        int i;
        pthread_mutex_lock(&p->lock);
        i = p->next++;
        pthread_mutex_unlock(&p->lock);
        if (i >= p->n || !ctx)
            break;
        co.arch = p->arch;
        co.cache_dir = p->l->o.eval.cache_dir;
        /* the file evaluate will write and parse, so the compile cache key is the same;
         * host-mode candidates too (nvcc, ~2 s each: a KernelBench ModelNew's kernels),
         * which evaluate otherwise compiled one GPU slot at a time (KOPT_PREPARE_HOST=0:
         * not, to compare), and what their evaluation reads of the binary (cuobjdump) */
        if (parse_candidate(p->l, ctx, p->sources[i], p->tags[i], "", &c, path,
                            sizeof(path)) == KOPT_OK &&
            !c->ntemplate_params && (!c->host_mode || p->host) &&
            kopt_compile(&comp, ctx, c, &co) == KOPT_OK)   /* errors come with the eval */
            kopt_eval_read_ahead(p->l->prob, comp);
        kopt_compiled_free(comp);
        kopt_candidate_free(c);
    }
    kopt_ctx_free(ctx);
    pthread_mutex_lock(&p->lock);
    p->finished++;
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static void prep_free(prep *p)
{
    for (int i = 0; i < p->n; i++) {
        free(p->sources[i]);
        free(p->tags[i]);
    }
    free(p->sources);
    free(p->tags);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

static int prep_done(prep *p)
{
    int done;

    pthread_mutex_lock(&p->lock);
    done = p->finished == p->nthreads;
    pthread_mutex_unlock(&p->lock);
    return done;
}

/* The compiles ahead, joined: all of them (`all`: before the evaluator closes), else those
 * that have finished (a step's may still run while the next step's start: --overlap). */
static void prep_reap(live *l, int all)
{
    prep **at = &l->ahead;

    while (*at) {
        prep *p = *at;
        if (!all && !prep_done(p)) {
            at = &p->next_prep;
            continue;
        }
        for (int i = 0; i < p->nthreads; i++)
            pthread_join(p->th[i], NULL);
        *at = p->next_prep;
        prep_free(p);
    }
}

static void prep_join(live *l)
{
    prep_reap(l, 1);
}

/* What this evaluator's evaluations compile for before one has run in this process (a
 * resumed step: kopt optimize --resume, optimize_step, kopt.optimize's steps; with a server
 * too, which compiles for the same device): the --arch override, else the device's compute
 * capability through NVML (no CUDA context made). Empty when neither is known: then nothing
 * is compiled ahead until the first evaluation says. A wrong guess costs CPU only: the
 * evaluation compiles for its own arch. */
static void arch_before_first(const live *l, char arch[24])
{
    kopt_device_info info;
    int count = 0;

    if (l->o.eval.arch && l->o.eval.arch[0])
        snprintf(arch, 24, "%s", l->o.eval.arch);
    else if (l->o.eval.device >= 0 &&
             kopt_device_nvml(NULL, l->o.eval.device, &info, &count) == KOPT_OK &&
             info.cc_major > 0)
        kopt_arch_for_cc(info.cc_major, info.cc_minor, arch);
}

/* Compile the step's candidates ahead, up to 8 at once, and return at once: an evaluation
 * starts as soon as its own candidate is compiled (kopt_compile waits for a compile under
 * way of the same candidate, compile_inflight.c), not when the step's slowest is. */
static void live_prepare(void *self, kopt_ctx *ctx, const char *const *sources,
                         const char *const *tags, int n)
{
    live *l = self;
    const char *host = getenv("KOPT_PREPARE_HOST"), *wait;
    prep *p;
    int ok = 1;

    char arch[24];

    (void)ctx;
    prep_reap(l, 0);
    pthread_mutex_lock(&l->mu);
    snprintf(arch, sizeof(arch), "%s", l->arch);
    pthread_mutex_unlock(&l->mu);
    if (!arch[0] && n > 0)
        arch_before_first(l, arch);
    if (!arch[0] || n <= 0 || !(p = calloc(1, sizeof(*p))))
        return;
    p->l = l;
    p->host = !(host && strcmp(host, "0") == 0);
    snprintf(p->arch, sizeof(p->arch), "%s", arch);
    pthread_mutex_init(&p->lock, NULL);
    p->sources = calloc((size_t)n, sizeof(char *));
    p->tags = calloc((size_t)n, sizeof(char *));
    ok = p->sources && p->tags;
    for (int i = 0; ok && i < n; i++) {
        ok = (p->sources[i] = strdup(sources[i])) && (p->tags[i] = strdup(tags[i]));
        p->n = i + 1;
    }
    if (!ok) {
        prep_free(p);
        return;
    }
    pthread_mutex_lock(&p->lock);   /* nthreads is read by prep_done */
    for (int i = 0; i < (n < 8 ? n : 8); i++)
        p->nthreads += pthread_create(&p->th[p->nthreads], NULL, prep_worker, p) == 0;
    pthread_mutex_unlock(&p->lock);
    p->next_prep = l->ahead;
    l->ahead = p;
    if ((wait = getenv("KOPT_PREPARE_WAIT")) && strcmp(wait, "1") == 0)
        prep_join(l);                  /* the step waits for its compiles (to compare) */
}

kopt_status kopt_search_evaluator_live(kopt_search_evaluator *out, kopt_ctx *ctx,
                                       kopt_run *run, const kopt_problem *prob,
                                       const kopt_search_live_opts *o)
{
    live *l = calloc(1, sizeof(*l));
    kopt_status rc;

    memset(out, 0, sizeof(*out));
    if (!l)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "evaluator");
    pthread_mutex_init(&l->mu, NULL);
    l->run = run;
    l->ctx = ctx;
    l->prob = prob;
    l->o = *o;
    l->o.eval.energy_s = o->energy_s;
    snprintf(l->workdir, sizeof(l->workdir), "%s", o->workdir ? o->workdir : ".");
    kopt_mkdirs(ctx, l->workdir);
    if (l->o.spread) {
        /* one GPU of several: its own ceilings, its session (and worker) now, on this
         * thread; evaluations then need nothing of the run until they are committed */
        if (kopt_run_ceilings(run, ctx, l->o.eval.device, &l->ceil) == KOPT_OK && l->ceil.valid)
            l->o.eval.ceilings = &l->ceil;
        if ((rc = kopt_run_session_open(&l->session, run, ctx, prob, &l->o.eval, 1)) != KOPT_OK) {
            live_close(l);
            return rc;
        }
        /* its workers (a PyTorch reference: the zygote, importing torch) start now, beside
         * the other GPUs' and the root's evaluation, not at this GPU's first evaluation */
        if (!(l->o.eval.server && l->o.eval.server[0]) &&
            kopt_eval_session_warm(kopt_run_session_eval_session(l->session), ctx) != KOPT_OK)
            kopt_log(ctx, KOPT_LOG_INFO, "optimize: GPU %d's workers not started ahead: %s",
                     l->o.eval.device, kopt_errmsg(ctx));
    }
    out->api_version = KOPT_SEARCH_API_VERSION;
    out->name = "live";
    out->self = l;
    out->evaluate = live_evaluate;
    out->tune = live_tune;
    out->close = live_close;
    out->prepare = live_prepare;
    out->commit = l->o.spread ? live_commit : NULL;
    out->warm = l->o.spread ? live_warm : NULL;
    return KOPT_OK;
}
