/* Evaluations served by a running `kopt serve` (kopt_eval_opts.server): the candidate is
 * evaluated in a session the server keeps for this problem and plan (`kopt eval
 * --session=NAME --json --no-store` sent over its socket), so the reference's outputs and
 * time, the torch.compile baseline and the workers started ahead are shared by every process
 * that sends there (kopt optimize --resume / --evaluate steps, kopt bench runs); the result
 * comes back as JSON (kopt_eval_result_from_json) and is stored here, through the run. */
#include "run_int.h"

#include "kopt/serve.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARGS_MAX 64

typedef struct served_args {
    int n;
    char *v[ARGS_MAX];
} served_args;

static void add(served_args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(served_args *a, const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;

    if (a->n >= ARGS_MAX - 1)
        return;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) >= 0)
        a->v[a->n++] = s;
    va_end(ap);
}

static void args_free(served_args *a)
{
    for (int i = 0; i < a->n; i++)
        free(a->v[i]);
    a->n = 0;
}

int kopt__run_servable(const kopt_eval_opts *o, const kopt_problem *prob,
                       const kopt_candidate *cand)
{
    const kopt_eval_opts d = KOPT_EVAL_OPTS_INIT;

    /* what `kopt eval` cannot be told on its command line is evaluated here, and so is the
     * reference as a candidate (a session's candidates are files of their own) */
    return o->server && o->server[0] && cand && cand->path && cand->source &&
           !(prob->ref_path && strcmp(cand->path, prob->ref_path) == 0) &&
           !o->no_ref_timing && !o->pool && o->warmup_ms == d.warmup_ms &&
           o->suspect_margin == d.suspect_margin && o->no_prestart == d.no_prestart;
}

/* `kopt eval`'s options for what `o` asks (those left at their defaults are not given). */
static void eval_options(served_args *a, const kopt_eval_opts *o)
{
    const kopt_eval_opts d = KOPT_EVAL_OPTS_INIT;

    if (o->trials != d.trials)
        add(a, "--trials=%d", o->trials);
    if (o->seed)
        add(a, "--seed=%llu", (unsigned long long)o->seed);
    for (int i = 0; o->sizes && i < o->sizes->n; i++)
        add(a, "--size=%s=%lld", o->sizes->names[i], (long long)o->sizes->values[i]);
    if (o->skip_check_sizes)
        add(a, "--no-check-sizes");
    if (o->no_timing)
        add(a, "--no-time");
    if (o->timeout_s != d.timeout_s)
        add(a, "--timeout=%.17g", o->timeout_s);
    if (o->budget_ms != d.budget_ms)
        add(a, "--budget-ms=%.17g", o->budget_ms);
    if (o->min_reps != d.min_reps || o->max_reps != d.max_reps)
        add(a, "--reps=%d:%d", o->min_reps, o->max_reps);
    if (o->no_flush)
        add(a, "--no-flush");
    add(a, "--device=%d", o->device);
    if (o->arch && o->arch[0])
        add(a, "--arch=%s", o->arch);
    if (o->cache_dir && o->cache_dir[0])
        add(a, "--cache-dir=%s", o->cache_dir);
    if (o->no_sandbox)
        add(a, "--no-sandbox");
    if (o->sandbox_cpu_s != d.sandbox_cpu_s || o->sandbox_fsize_mb != d.sandbox_fsize_mb ||
        o->sandbox_as_extra_mb != d.sandbox_as_extra_mb)
        add(a, "--limits=cpu=%.17g,fsize=%.17g,as=%.17g", o->sandbox_cpu_s, o->sandbox_fsize_mb,
            o->sandbox_as_extra_mb);
    if (o->sanitize)
        add(a, "--sanitize=%s%s%s%s%s", o->sanitize & KOPT_SANITIZE_MEMCHECK ? "memcheck" : "",
            (o->sanitize & KOPT_SANITIZE_MEMCHECK) && (o->sanitize & ~1u) ? "," : "",
            o->sanitize & KOPT_SANITIZE_RACECHECK ? "racecheck" : "",
            (o->sanitize & KOPT_SANITIZE_RACECHECK) && (o->sanitize & KOPT_SANITIZE_INITCHECK)
                ? "," : "",
            o->sanitize & KOPT_SANITIZE_INITCHECK ? "initcheck" : "");
    if (o->energy_s > 0)
        add(a, "--energy=%.17g", o->energy_s);
    add(a, o->torch_compile ? "--compile" : "--no-compile");
    if (o->precision != d.precision)
        add(a, "--precision=%.17g", o->precision * 100.0);
}

/* The file the server reads the candidate from: its own, when that still holds its source;
 * else the source written to a file of its own in $TMPDIR (its name its hash). */
static kopt_status candidate_file(kopt_ctx *ctx, const kopt_candidate *cand, char *path,
                                  size_t n)
{
    char *text = NULL;
    size_t len = 0;
    const char *base = getenv("TMPDIR"), *dot;

    if (kopt_file_read(ctx, cand->path, &text, &len) == KOPT_OK && len == strlen(cand->source) &&
        memcmp(text, cand->source, len) == 0) {
        free(text);
        snprintf(path, n, "%s", cand->path);
        return KOPT_OK;
    }
    free(text);
    dot = strrchr(cand->path, '.');
    snprintf(path, n, "%s/kopt-served-%s%s", base && base[0] ? base : "/tmp", cand->hash,
             dot && !strchr(dot, '/') ? dot : ".cu");
    return kopt_file_write(ctx, path, cand->source, strlen(cand->source));
}

kopt_status kopt__run_served_eval(kopt_ctx *ctx, const kopt_problem *prob,
                                  const kopt_candidate *cand, const kopt_eval_opts *o,
                                  kopt_eval_result **out)
{
    served_args a = {0};
    char cpath[4200], name[40], hex[65], *text = NULL, *err = NULL;
    kopt_hash *h;
    int code = 0;
    kopt_status rc;

    *out = NULL;
    if ((rc = candidate_file(ctx, cand, cpath, sizeof(cpath))) != KOPT_OK)
        return rc;
    if (!(h = kopt_hash_new()))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "served evaluation");
    add(&a, "eval");
    add(&a, "--json");
    add(&a, "--no-store");
    eval_options(&a, o);
    /* the session: one per problem and plan (the server keeps it while it is used) */
    kopt_hash_add_str(h, prob->path);
    for (int i = 0; i < a.n; i++)
        kopt_hash_add_str(h, a.v[i]);
    kopt_hash_hex(h, hex);
    snprintf(name, sizeof(name), "run-%.16s", hex);
    add(&a, "--session=%s", name);
    add(&a, "%s", prob->path);
    add(&a, "%s", cpath);
    if ((rc = kopt_serve_call(ctx, o->server, a.n, a.v, &code, &text, &err)) != KOPT_OK)
        goto done;
    if (!text || !strchr(text, '{')) {
        size_t len = err ? strlen(err) : 0;
        while (len && (err[len - 1] == '\n' || err[len - 1] == ' '))
            err[--len] = '\0';
        rc = kopt_seterr(ctx, KOPT_E_ERROR, "kopt serve at %s did not evaluate %s (exit %d): "
                         "%.1500s", o->server, cand->path, code,
                         len ? err : "it printed nothing");
        goto done;
    }
    if ((rc = kopt_eval_result_from_json(out, ctx, text)) != KOPT_OK)
        kopt_seterr(ctx, rc, "kopt serve at %s answered with a result kopt cannot read: %s",
                    o->server, kopt_errmsg(ctx));
done:
    free(text);
    free(err);
    args_free(&a);
    return rc;
}
