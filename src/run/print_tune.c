/* Tuning runs as text, as kopt tune prints them (and any other caller of the run API): the
 * result of each shape with the best per shape, the search spaces, the stored tuning runs,
 * the strategies, the progress display and the command that resumes an interrupted run.
 * The JSON of the same things is run_json.c's. */
#include "run_tune_int.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the space -------------------------------------------------------------------------- */

static void print_space(FILE *f, const kopt_tune_space *s, const kopt_tune_space_summary *sum,
                        const char *limits)
{
    fprintf(f, "space      %d params, %llu points; %s%llu valid%s\n", s->nparams,
            (unsigned long long)s->npoints, sum->exact ? "" : "at least ",
            (unsigned long long)sum->valid,
            sum->exact ? "" : " (counted among the first points only)");
    if (!sum->exact)
        fprintf(f, "           (scanned %llu of %llu points)\n",
                (unsigned long long)sum->scanned, (unsigned long long)s->npoints);
    for (int i = 0; i < s->nparams; i++) {
        const kopt_param_spec *p = &s->params[i];
        fprintf(f, "  param    %-12s", p->name);
        for (int v = 0; v < p->nvalues; v++)
            fprintf(f, "%s%lld", v ? "," : " ", (long long)p->values[v]);
        fprintf(f, "  (%d value%s%s%s)\n", p->nvalues, p->nvalues == 1 ? "" : "s",
                p->role[0] ? ", role " : "", p->role);
    }
    for (int i = 0; i < s->nconstraints; i++)
        fprintf(f, "  require  %s\n", s->constraints[i]);
    fprintf(f, "limits     %s\n", limits);
    for (int i = 0; i < sum->nreasons && i < KOPT__RUN_SPACE_REASONS; i++)
        fprintf(f, "  pruned   %llu: %s\n", (unsigned long long)sum->reasons[i].n,
                sum->reasons[i].text);
    if (sum->nreasons > KOPT__RUN_SPACE_REASONS || sum->other_reasons)
        fprintf(f, "  pruned   ... and %d more reason(s)\n",
                sum->nreasons - KOPT__RUN_SPACE_REASONS > 0
                    ? sum->nreasons - KOPT__RUN_SPACE_REASONS : 1);
}

void kopt_run_tune_space_print(FILE *f, const kopt_run_tune *t, int skipped, int json)
{
    if (json) {
        kopt__run_print_text(f, kopt_run_tune_space_json(t, skipped));
        return;
    }
    fprintf(f, "problem    %s (%s)\n", t->prob->name, t->prob->path);
    fprintf(f, "template   %s\n", t->tmpl_path);
    for (int i = 0; i < t->nshapes; i++) {
        kopt_tune_space_summary sum;
        kopt_tune_space_summarize(t->shapes[i].space, KOPT__RUN_SPACE_SCAN_LIMIT, &sum);
        fprintf(f, "sizes      %s\n", t->shapes[i].key.sizes);
        print_space(f, t->shapes[i].space, &sum, t->limits_text);
    }
    if (skipped)
        fprintf(f, "verdict    SKIPPED: no GPU here; nothing was tuned\n");
}

/* ---- the result ------------------------------------------------------------------------- */

/* Scale-out: what each slot evaluated. */
static void print_scale(FILE *f, const kopt_run_tune *t)
{
    for (int i = 0; i < t->nslots; i++) {
        const kopt_scale_slot_stats *s = &t->slots[i];
        char where[160];
        if (strcmp(s->kind, "mpi") == 0)
            snprintf(where, sizeof(where), "rank %d (%s %d on %s)", s->where.rank,
                     s->where.name[0] ? s->where.name : "GPU", s->where.device, s->where.host);
        else
            snprintf(where, sizeof(where), "%s %d (%s)", s->kind, s->where.device,
                     s->where.name[0] ? s->where.name : "?");
        fprintf(f, "%s %-40s %4d evaluations, busy %.1f s%s\n", i ? "          " : "slots     ",
                where, s->jobs, s->busy_s, s->lost ? "; LOST (its evaluation went back to the "
                "queue)" : "");
    }
    if (t->mixed[0])
        fprintf(f, "  mixed    the GPUs differ (%s): times compared within one model only; %d "
                "finalist(s) re-timed on slot 0\n", t->mixed, t->retimed);
}

/* One shape's lines: how it stopped, the store, convergence, the Pareto set, the final
 * check, the files written. */
static void print_shape(FILE *f, int i, const kopt_run_tune_shape *sr)
{
    const kopt_tune_result *r = sr->res;

    fprintf(f, "shape %-4d %s: stopped (%s) after %zu evaluations (%zu new, %zu cached, "
            "%zu failed) in %.1f s%s\n", i + 1, sr->key.sizes, kopt_tune_stop_name(r->stop),
            r->evaluated + r->cached, r->evaluated, r->cached, r->failed, r->elapsed_s,
            sr->resumed ? "; resumed" : "");
    if (sr->loaded)
        fprintf(f, "  store    %zu outcomes known before the run, %zu evaluated again\n",
                sr->loaded, sr->reevaluated);
    if (r->nimprovements)
        fprintf(f, "  converge %zu improvements; the last after %zu evaluations\n",
                r->nimprovements, r->best_after[r->nimprovements - 1]);
    if (r->npareto > 1) {
        fprintf(f, "  pareto   %zu points (time vs energy):", r->npareto);
        for (size_t p = 0; p < r->npareto && p < 6; p++) {
            const kopt_tune_outcome *o = kopt_tune_cache_get(sr->cache, r->pareto[p]);
            if (o)
                fprintf(f, " %.4f ms/%.3f mJ", o->time_ms, o->energy_mj);
        }
        fprintf(f, "%s\n", r->npareto > 6 ? " ..." : "");
    }
    if (sr->final && sr->final->verdict == KOPT_VERDICT_OK)
        fprintf(f, "  checked  the winner as kopt eval would: OK, median %.4f ms, %.2fx the "
                "reference%s%.1f%% of the roofline bound\n", sr->final->timing.median_ms,
                sr->final->speedup, sr->final->roofline.valid ? ", " : "",
                sr->final->roofline.valid ? sr->final->roofline.pct_of_bound : 0.0);
    else if (sr->final)
        fprintf(f, "  checked  the winner as kopt eval would: %s: %s\n",
                kopt_verdict_name(sr->final->verdict), sr->final->message);
    if (sr->out_path[0])
        fprintf(f, "  wrote    %s\n", sr->out_path);
    if (sr->record_path[0])
        fprintf(f, "  recorded %s\n", sr->record_path);
    if (sr->kt_path[0])
        fprintf(f, "  exported %s (Kernel Tuner cache)\n", sr->kt_path);
    if (sr->t4_path[0])
        fprintf(f, "  exported %s (T4)\n", sr->t4_path);
}

/* The table of the best configuration of each shape. */
static void print_best(FILE *f, const kopt_run_tune *t)
{
    fprintf(f, "\nbest per shape:\n  %-3s %-28s %12s %12s  %s\n", "#", "sizes",
            t->objective == KOPT_TUNE_ENERGY ? "energy mJ" : "time ms", "1st/best", "params");
    for (int i = 0; i < t->nrun; i++) {
        const kopt_run_tune_shape *sr = &t->shapes[i];
        const kopt_tune_result *r = sr->res;
        char *label;
        double first = INFINITY, best;
        if (!r || !r->has_best) {
            fprintf(f, "  %-3d %-28s %12s %12s  (no correct configuration)\n", i + 1,
                    sr->key.sizes, "-", "-");
            continue;
        }
        best = kopt_tune_outcome_objective(&r->best, t->objective);
        for (size_t k = 0; k < r->n && !isfinite(first); k++)
            first = kopt_tune_outcome_objective(&r->outcomes[k], t->objective);
        label = kopt_tune_space_label(sr->space, r->best_point);
        fprintf(f, "  %-3d %-28s %12.4f %11.2fx  %s\n", i + 1, sr->key.sizes, best,
                isfinite(first) && best > 0 ? first / best : 1.0, label ? label : "?");
        free(label);
    }
}

void kopt_run_tune_print(FILE *f, const kopt_run_tune *t, int json)
{
    const kopt_run_tune_shape *runs = t->shapes;
    const kopt_run_tune_opts *o = &t->priv->o;

    if (json) {
        kopt__run_print_text(f, kopt_run_tune_json(t));
        return;
    }

    fprintf(f, "problem    %s (%s)\n", t->prob->name, t->prob->path);
    fprintf(f, "template   %s: %d params\n", t->tmpl_path, t->tmpl->ntemplate_params);
    fprintf(f, "device     %s%s\n", runs[0].key.device[0] ? runs[0].key.device : "unknown",
            t->replay ? " (replayed: no GPU used)" : "");
    fprintf(f, "strategy   %s%s%s (seed %llu), objective %s, budget ", runs[0].strategy,
            runs[0].options[0] ? " " : "", runs[0].options,
            (unsigned long long)runs[0].seed, kopt_run_tune_objective_name(t->objective));
    if (runs[0].budget)
        fprintf(f, "%d evaluations", runs[0].budget);
    else
        fprintf(f, "unbounded");
    if (o->seconds > 0)
        fprintf(f, ", %.0f s", o->seconds);
    fprintf(f, "\n");
    if (!t->replay)
        fprintf(f, "compile    %d thread(s)%s, %d point(s) asked ahead (%s; %d usable CPU(s))\n",
                t->compile_threads, t->compile_helpers > 0 ? " with helper processes" : "",
                t->lookahead, (o->given & KOPT_RUN_TUNE_GIVEN_COMPILE_THREADS) ? "as given"
                : "by default", t->cpus_usable);
    for (int i = 0; i < t->nrun; i++)
        if (runs[i].res)
            print_shape(f, i, &runs[i]);
    print_scale(f, t);
    if (t->held_back[0])
        fprintf(f, "held back %s\n", t->held_back);
    print_best(f, t);
}

/* ---- stored runs, strategies ------------------------------------------------------------- */

kopt_status kopt_run_tune_runs_print(FILE *f, kopt_ctx *ctx, const char *db_path, int json)
{
    kopt_store_tune_run *v = NULL;
    int n = 0;
    kopt_status rc = kopt_run_tune_list(ctx, db_path, &v, &n);

    if (rc != KOPT_OK)
        return rc;
    if (json) {
        kopt__run_print_text(f, kopt_run_tune_runs_json(v, n));
        free(v);
        return KOPT_OK;
    }
    fprintf(f, "%-5s %-20s %-12s %-24s %-12s %-11s %6s  %s\n", "run", "created", "problem",
            "sizes", "strategy", "stop", "evals", "best");
    for (int i = 0; i < n; i++)
        fprintf(f, "%-5lld %-20.20s %-12.12s %-24.24s %-12.12s %-11s %6lld  %s\n",
                (long long)v[i].id, v[i].created_at, v[i].key.problem, v[i].key.sizes,
                v[i].strategy, v[i].finished ? v[i].stop : "unfinished",
                (long long)v[i].nevals, v[i].best_label);
    if (!n)
        fprintf(f, "(no tuning runs in %s)\n", db_path);
    free(v);
    return KOPT_OK;
}

void kopt_run_tune_strategies_print(FILE *f, int json)
{
    json_t *arr = json ? json_array() : NULL;

    for (int i = 0; kopt_tune_strategies[i]; i++) {
        const kopt_tune_strategy *s = kopt_tune_strategies[i];
        if (arr)
            json_array_append_new(arr, json_pack("{s:s, s:s, s:b}", "name", s->name, "summary",
                                                 s->summary, "wants_findings",
                                                 s->wants_findings));
        else
            fprintf(f, "%-16s %s\n", s->name, s->summary);
    }
    if (arr)
        kopt__run_print_json(f, arr);
}

/* ---- while it runs, and after an interruption -------------------------------------------- */

void kopt_run_tune_meter_init(kopt_run_tune_meter *m, const kopt_run_tune *t, FILE *out,
                              int enabled)
{
    memset(m, 0, sizeof(*m));
    m->t = t;
    m->out = out;
    m->enabled = enabled;
    m->tty = isatty(fileno(out));
    m->max_seconds = t ? t->priv->o.seconds : 0;
}

void kopt_run_tune_meter_show(void *user, int shape, int nshapes, const kopt_tune_space *space,
                              const kopt_tune_progress *p)
{
    kopt_run_tune_meter *m = user;
    char line[512];
    size_t done;
    int tenth = -1;

    (void)nshapes;
    if (!m->enabled)
        return;
    if (!p) {                  /* the shape ended */
        if (m->drew)
            fprintf(m->out, "\n");
        m->drew = 0;
        return;
    }
    if (shape != m->shape) {
        m->shape = shape;
        m->last_tenth = 0;
        m->last_count = 0;
    }
    done = p->evaluated + p->cached;
    if (m->tty) {
        int width = 24, fill;
        double frac = p->budget ? (double)done / (double)p->budget
                    : m->max_seconds > 0 ? p->elapsed_s / m->max_seconds : 0;
        char bar[32];
        if (frac > 1)
            frac = 1;
        fill = (int)(frac * width + 0.5);
        for (int i = 0; i < width; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[width] = '\0';
        kopt_run_tune_progress_text(m->t, shape, space, p, line, sizeof(line));
        fprintf(m->out, "\r\033[K[%s] %.*s", bar, 150, line);
        fflush(m->out);
        m->drew = 1;
        return;
    }
    /* a log, not a terminal: one line per 10% of the budget (or every 50 evaluations) */
    if (p->budget)
        tenth = (int)(10 * done / p->budget);
    else if (m->max_seconds > 0)
        tenth = (int)(10 * p->elapsed_s / m->max_seconds);
    if (tenth >= 0 ? tenth <= m->last_tenth : done < m->last_count + 50)
        return;
    m->last_tenth = tenth;
    m->last_count = done;
    kopt_run_tune_progress_text(m->t, shape, space, p, line, sizeof(line));
    fprintf(m->out, "kopt tune: %s\n", line);
}

/* The command that continues an interrupted run: "kopt tune" and the verb's arguments
 * (argv[0] is the verb), quoted where a shell needs it, without --fresh, with --resume. */
static void resume_command(int argc, char *const *argv, char *buf, size_t n)
{
    size_t at = (size_t)snprintf(buf, n, "kopt tune");
    int has_resume = 0;

    for (int i = 1; i < argc && at < n; i++) {
        const char *s = argv[i];
        int plain = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                              "0123456789_-=,./:+") == strlen(s);
        has_resume |= strcmp(s, "--resume") == 0;
        if (strcmp(s, "--fresh") == 0)
            continue;
        at += (size_t)snprintf(buf + at, n - at, plain ? " %s" : " '%s'", s);
    }
    if (!has_resume && at < n)
        snprintf(buf + at, n - at, " --resume");
}

void kopt_run_tune_print_stopped(FILE *f, const kopt_run_tune *t, int argc, char *const *argv)
{
    char cmd[4096];

    resume_command(argc, argv, cmd, sizeof(cmd));
    fprintf(f, "kopt tune: interrupted; the best so far is above%s. Continue with:\n  %s\n",
            kopt_run_store(t->priv->run) ? " and every outcome is stored"
                                         : " (no store: nothing was kept)", cmd);
}

int kopt_run_tune_mpi(kopt_run_tune_opts *o, kopt_ctx *ctx, kopt_scale_mpi **mpi)
{
    *mpi = NULL;
    if (o->replay || !kopt_scale_mpi_launched())
        return 0;
    if (kopt_scale_mpi_open(mpi, ctx) != KOPT_OK)
        return -1;
    o->mpi = *mpi;
    return kopt_scale_mpi_rank(*mpi);
}
