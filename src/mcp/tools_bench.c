/*
 * The MCP tool bench: kopt bench PROBLEMS --candidates DIR --json in-process (kopt_kb_bench,
 * kopt/kb.h), the same suite the CLI runs: each problem's candidate evaluated against
 * PyTorch eager and torch.compile, rows stored as they finish, KernelBench's metrics. Its
 * structured result is kopt bench --json's document; cancelling ends the suite after the
 * current evaluation (what was done stays stored: resume it). Its schema is in tools.c.
 */
#include "mcp_int.h"

#include "kopt/kb.h"
#include "kopt/scale.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A positive number argument (given: *out set); the message names the field. */
static kopt_status num_arg(kopt__mcp_call *c, kopt_ctx *ctx, const char *k, double *out)
{
    json_t *v = json_object_get(c->args, k);

    if (!v)
        return KOPT_OK;
    if (json_number_value(v) <= 0)
        return kopt_seterr(ctx, KOPT_E_INVALID, "arguments.%s: above 0", k);
    *out = json_number_value(v);
    return KOPT_OK;
}

/* The evaluation options kopt bench takes as flags (kopt eval's), from the arguments. */
static kopt_status eval_args(kopt__mcp_call *c, kopt_ctx *ctx, kopt_eval_opts *eo)
{
    json_t *trials = json_object_get(c->args, "trials"), *dev = json_object_get(c->args, "device");
    const char *reps = kopt__mcp_arg_str(c, "reps");
    double pct;
    char tail;
    kopt_status rc;

    if (trials) {
        if (json_integer_value(trials) < 1 || json_integer_value(trials) > 16)
            return kopt_seterr(ctx, KOPT_E_INVALID, "arguments.trials: 1 to 16");
        eo->trials = (int)json_integer_value(trials);
    }
    if (dev) {
        if (json_integer_value(dev) < 0 || json_integer_value(dev) > 64)
            return kopt_seterr(ctx, KOPT_E_INVALID, "arguments.device: 0 to 64");
        eo->device = (int)json_integer_value(dev);
    }
    if ((rc = num_arg(c, ctx, "budget_ms", &eo->budget_ms)) != KOPT_OK ||
        (rc = num_arg(c, ctx, "timeout", &eo->timeout_s)) != KOPT_OK)
        return rc;
    if (json_object_get(c->args, "precision")) {   /* percent of the median, as --precision */
        pct = json_number_value(json_object_get(c->args, "precision"));
        if (pct < 0 || pct >= 100)
            return kopt_seterr(ctx, KOPT_E_INVALID, "arguments.precision: 0 or more, below "
                               "100 (percent of the median)");
        eo->precision = pct / 100.0;
    }
    if (reps && (sscanf(reps, "%d:%d%c", &eo->min_reps, &eo->max_reps, &tail) != 2 ||
                 eo->min_reps < 1 || eo->max_reps < eo->min_reps))
        return kopt_seterr(ctx, KOPT_E_INVALID, "arguments.reps: MIN:MAX, 1 <= MIN <= MAX "
                           "(got '%s')", reps);
    eo->no_flush = json_is_true(json_object_get(c->args, "no_flush"));
    eo->skip_check_sizes = json_is_true(json_object_get(c->args, "no_check_sizes"));
    eo->arch = kopt__mcp_arg_str(c, "arch");
    eo->cache_dir = kopt__mcp_opts(c)->cache_dir;
    return KOPT_OK;
}

/* The arguments into *o (the GPUs of "gpus" in gpus[]); the message names the field. */
static kopt_status bench_args(kopt__mcp_call *c, kopt_ctx *ctx, kopt_kb_bench_opts *o,
                              int *gpus)
{
    const char *kind = kopt__mcp_arg_str(c, "kind"), *spec = kopt__mcp_arg_str(c, "gpus");
    json_t *resume = json_object_get(c->args, "resume");
    kopt_status rc;

    if (kind && strcmp(kind, "auto") && strcmp(kind, "cu") && strcmp(kind, "py") &&
        strcmp(kind, "reference"))
        return kopt_seterr(ctx, KOPT_E_INVALID, "arguments.kind: auto, cu, py or reference "
                           "(got '%s')", kind);
    o->problems = kopt__mcp_arg_str(c, "problems");
    o->candidates = kopt__mcp_arg_str(c, "candidates");
    o->kind = kind;
    o->no_compile = json_is_true(json_object_get(c->args, "no_compile"));
    if (resume) {
        if (json_integer_value(resume) < 1)
            return kopt_seterr(ctx, KOPT_E_INVALID, "arguments.resume: a stored suite's id "
                               "(1 or more)");
        if (o->problems || o->candidates)
            return kopt_seterr(ctx, KOPT_E_INVALID, "arguments.resume: a resumed suite keeps "
                               "its problems and candidates folders; give neither");
        if (!kopt__mcp_opts(c)->db_path)
            return kopt_seterr(ctx, KOPT_E_INVALID, "arguments.resume: this server has no "
                               "store (kopt mcp --no-store); a suite lives in the store");
        o->resume = json_integer_value(resume);
    } else if (!o->problems) {
        return kopt_seterr(ctx, KOPT_E_INVALID, "arguments.problems: required (a problem "
                           "folder or a folder of them), unless resume");
    } else if (!kopt__mcp_is_dir(o->problems)) {
        return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "arguments.problems: no folder '%s'",
                           o->problems);
    }
    if (o->candidates && !kopt__mcp_is_dir(o->candidates))
        return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "arguments.candidates: no folder '%s'",
                           o->candidates);
    if (!o->resume && !o->candidates && (!kind || strcmp(kind, "reference")))
        return kopt_seterr(ctx, KOPT_E_INVALID, "arguments.candidates: required (the "
                           "candidates' folder), unless kind is reference");
    if ((rc = eval_args(c, ctx, &o->eval)) != KOPT_OK)
        return rc;
    if (spec) {    /* as kopt bench --gpus: each problem on the first free GPU */
        if ((rc = kopt__mcp_gpus_arg(c, ctx, kopt_scale_gpus_here(), gpus, KOPT_SCALE_MAX_SLOTS,
                                     &o->ngpus)) != KOPT_OK)
            return rc;
        o->gpus = gpus;
        o->eval.device = gpus[0];
    }
    return KOPT_OK;
}

/* One line for the model: the suite, its correctness and speedups against eager. */
static void bench_summary(kopt_buf *t, json_t *doc, int64_t run_id)
{
    json_t *e = json_object_get(doc, "vs_eager");
    json_t *g = json_object_get(e, "geomean_speedup_correct");

    kopt_buf_printf(t, "suite %lld: %lld problem(s), %lld correct (%.1f%%); fast_1 %.3f",
                    (long long)json_integer_value(json_object_get(doc, "suite")),
                    (long long)json_integer_value(json_object_get(e, "problems")),
                    (long long)json_integer_value(json_object_get(e, "correct")),
                    100 * json_number_value(json_object_get(e, "correct_rate")),
                    json_number_value(json_object_get(json_object_get(e, "fast_p"), "fast_1")));
    if (json_is_number(g))
        kopt_buf_printf(t, ", geomean speedup %.3fx over the correct", json_number_value(g));
    if (json_is_true(json_object_get(doc, "interrupted")))
        kopt_buf_printf(t, "; interrupted: resume it with resume %lld",
                        (long long)json_integer_value(json_object_get(doc, "suite")));
    if (run_id)
        kopt_buf_printf(t, " (run %lld: kopt://run/%lld)", (long long)run_id,
                        (long long)run_id);
}

/* kopt bench's text (its head, each row as it finishes, the metrics), each line a progress
 * message: a FILE whose writes land here (fopencookie). */
typedef struct text_lines {
    kopt__mcp_call *c;
    kopt_buf line;
    int n;
} text_lines;

static ssize_t text_line_write(void *cookie, const char *buf, size_t size)
{
    text_lines *tl = cookie;
    const char *p = buf, *end = buf + size, *nl;

    while ((nl = memchr(p, '\n', (size_t)(end - p)))) {
        kopt_buf_append(&tl->line, p, (size_t)(nl - p));
        if (tl->line.len)
            kopt__mcp_progress(tl->c, ++tl->n, 0, kopt_buf_cstr(&tl->line));
        kopt_buf_free(&tl->line);
        p = nl + 1;
    }
    kopt_buf_append(&tl->line, p, (size_t)(end - p));   /* the rest of an unfinished line */
    return (ssize_t)size;
}

kopt_status kopt__mcp_t_bench(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out, kopt_buf *t)
{
    text_lines tl = {c, KOPT_BUF_INIT, 0};
    cookie_io_functions_t io = {NULL, text_line_write, NULL, NULL};
    const kopt_mcp_opts *mo = kopt__mcp_opts(c);
    kopt_kb_bench_opts o;
    kopt_run_opts ro = KOPT_RUN_OPTS_INIT;
    kopt_run *run = NULL;
    int gpus[KOPT_SCALE_MAX_SLOTS];
    char *argv[4] = {"mcp", "bench", NULL, NULL};
    kopt_status rc;

    kopt_kb_bench_opts_default(&o);
    if ((rc = bench_args(c, ctx, &o, gpus)) != KOPT_OK)
        return rc;
    argv[2] = (char *)o.problems;      /* NULL when resumed */
    argv[3] = (char *)o.candidates;
    ro.kind = KOPT_RUN_BENCH;
    ro.db_path = mo->db_path;
    ro.db_optional = !o.resume;
    ro.argc = 2 + (argv[2] != NULL) + (argv[2] && argv[3]);
    ro.argv = argv;
    ro.cache_dir = mo->cache_dir;
    ro.device = o.eval.device;
    ro.parent_id = o.resume;
    if ((rc = kopt_run_open(&run, ctx, &ro)) != KOPT_OK)
        return rc;
    o.db_path = mo->db_path;
    o.stop = &c->cancelled;
    kopt__mcp_progress(c, 0, 1, "evaluating the suite's problems, one row each");
    if ((o.text = fopencookie(&tl, "w", io)))
        setvbuf(o.text, NULL, _IOLBF, 0);
    rc = kopt_kb_bench(run, ctx, &o, out);
    if (o.text)
        fclose(o.text);            /* the last line out */
    kopt_buf_free(&tl.line);
    if (rc != KOPT_OK)
        goto done;
    kopt_run_finish(run, ctx, json_is_true(json_object_get(*out, "interrupted")) ?
                    KOPT_RUN_INTERRUPTED : KOPT_RUN_OK, NULL);
    json_object_set_new(*out, "run_id", json_integer((json_int_t)kopt_run_id(run)));
    kopt__mcp_progress(c, 1, 1, "done");
    bench_summary(t, *out, kopt_run_id(run));
done:
    kopt_run_close(run);
    return rc;
}
