/*
 * Tuning runs as text for people and JSON for programs (kopt tune, and the same for other
 * callers of the run API): the progress line, the result of each shape, the search spaces,
 * and the stored tuning runs.
 */
#include "run_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

void kopt_run_tune_progress_text(const kopt_run_tune *t, int shape,
                                 const kopt_tune_space *space, const kopt_tune_progress *p,
                                 char *buf, size_t n)
{
    size_t done = p->evaluated + p->cached, at;
    char *label = NULL;

    if (p->budget)
        at = (size_t)snprintf(buf, n, "%zu/%zu evals", done, p->budget);
    else
        at = (size_t)snprintf(buf, n, "%zu evals", done);
    if (t->nshapes > 1)
        at += (size_t)snprintf(buf + at, at < n ? n - at : 0, " (shape %d/%d)", shape + 1,
                               t->nshapes);
    at += (size_t)snprintf(buf + at, at < n ? n - at : 0, ", %zu cached, %zu failed, %.1f s",
                           p->cached, p->failed, p->elapsed_s);
    if (p->has_best) {
        label = kopt_tune_space_label(space, p->best_point);
        snprintf(buf + at, at < n ? n - at : 0, "; best %.4g %s %s",
                 p->best_objective, t->objective == KOPT_TUNE_ENERGY ? "mJ" : "ms",
                 label ? label : "?");
        free(label);
    }
}

void kopt__run_print_json(FILE *f, json_t *j)
{
    char *t = j ? json_dumps(j, JSON_INDENT(2)) : NULL;

    fprintf(f, "%s\n", t ? t : json_is_array(j) ? "[]" : "{}");
    free(t);
    json_decref(j);
}

void kopt__run_print_text(FILE *f, char *text)
{
    fprintf(f, "%s\n", text ? text : "{}");
    free(text);
}

static char *dump(json_t *j)
{
    char *text = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
    json_decref(j);
    return text;
}

static json_t *space_json(const kopt_tune_space *s, const kopt_tune_space_summary *sum,
                          const char *limits)
{
    json_t *o = json_object(), *params = json_array(), *reasons = json_array(), *cons;

    for (int i = 0; i < s->nparams; i++) {
        json_t *vals = json_array();
        for (int v = 0; v < s->params[i].nvalues; v++)
            json_array_append_new(vals, json_integer(s->params[i].values[v]));
        json_array_append_new(params, json_pack("{s:s, s:o, s:s}", "name", s->params[i].name,
                                                "values", vals, "role", s->params[i].role));
    }
    cons = json_array();
    for (int i = 0; i < s->nconstraints; i++)
        json_array_append_new(cons, json_string(s->constraints[i]));
    for (int i = 0; i < sum->nreasons && i < KOPT__RUN_SPACE_REASONS; i++)
        json_array_append_new(reasons, json_pack("{s:s, s:I}", "reason", sum->reasons[i].text,
                                                 "count", (json_int_t)sum->reasons[i].n));
    json_object_set_new(o, "params", params);
    json_object_set_new(o, "constraints", cons);
    json_object_set_new(o, "points", json_integer((json_int_t)s->npoints));
    json_object_set_new(o, "valid", json_integer((json_int_t)sum->valid));
    json_object_set_new(o, "valid_exact", json_boolean(sum->exact));
    json_object_set_new(o, "scanned", json_integer((json_int_t)sum->scanned));
    json_object_set_new(o, "limits", json_string(limits));
    json_object_set_new(o, "pruned", reasons);
    return o;
}

static json_t *outcome_json(const kopt_tune_outcome *o)
{
    json_t *j = json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:i, s:i, s:i, s:s, s:s}",
                          "state", kopt_tune_state_name(o->state), "time_ms", o->time_ms,
                          "energy_mj", o->energy_mj, "power_w", o->power_w,
                          "compile_ms", o->compile_ms, "eval_ms", o->eval_ms,
                          "registers", o->registers, "spill_bytes", o->spill_bytes,
                          "smem_bytes", o->smem_bytes, "verdict", o->verdict,
                          "message", o->message);
    return j ? j : json_object();
}

static json_t *params_json(const kopt_tune_space *s, uint64_t point)
{
    json_t *o = json_object();
    int idx[KOPT_TUNE_MAX_PARAMS];

    kopt_tune_space_decode(s, point, idx);
    for (int i = 0; i < s->nparams; i++)
        json_object_set_new(o, s->params[i].name, json_integer(s->params[i].values[idx[i]]));
    return o;
}

static json_t *point_json(const kopt_tune_space *s, uint64_t point, const kopt_tune_outcome *o)
{
    char *label = kopt_tune_space_label(s, point);
    json_t *j = json_pack("{s:I, s:s, s:o}", "point", (json_int_t)point, "label",
                          label ? label : "", "params", params_json(s, point));
    free(label);
    if (o)
        json_object_set_new(j, "outcome", outcome_json(o));
    return j;
}

static json_t *key_json(const kopt_tune_key *k)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "problem", k->problem, "problem_hash",
                     k->problem_hash, "template_hash", k->template_hash, "sizes", k->sizes,
                     "device", k->device, "device_uuid", k->device_uuid);
}

static json_t *shape_json(const kopt_run_tune_shape *sr)
{
    const kopt_tune_result *r = sr->res;
    json_t *o = json_object(), *conv = json_array(), *pareto = json_array(), *evals;

    json_object_set_new(o, "sizes", json_string(sr->key.sizes));
    json_object_set_new(o, "key", key_json(&sr->key));
    json_object_set_new(o, "strategy", json_string(sr->strategy));
    json_object_set_new(o, "options", sr->options[0] ? json_string(sr->options) : json_null());
    json_object_set_new(o, "seed", json_integer((json_int_t)sr->seed));
    json_object_set_new(o, "budget", json_integer(sr->budget));
    json_object_set_new(o, "resumed", json_boolean(sr->resumed));
    json_object_set_new(o, "run_id", sr->tune_run_id ? json_integer((json_int_t)sr->tune_run_id)
                                                     : json_null());
    json_object_set_new(o, "points", json_integer((json_int_t)sr->space->npoints));
    json_object_set_new(o, "stored_before", json_integer((json_int_t)sr->loaded));
    json_object_set_new(o, "reevaluated", json_integer((json_int_t)sr->reevaluated));
    if (!r) {
        json_object_set_new(o, "stop", json_null());
        return o;
    }
    json_object_set_new(o, "stop", json_string(kopt_tune_stop_name(r->stop)));
    json_object_set_new(o, "evaluated", json_integer((json_int_t)r->evaluated));
    json_object_set_new(o, "cached", json_integer((json_int_t)r->cached));
    json_object_set_new(o, "failed", json_integer((json_int_t)r->failed));
    json_object_set_new(o, "elapsed_s", json_real(r->elapsed_s));
    json_object_set_new(o, "eval_s", json_real(r->eval_s));
    json_object_set_new(o, "compile_wait_s", json_real(r->compile_wait_s));
    json_object_set_new(o, "first_eval_s", json_real(r->first_eval_s));
    json_object_set_new(o, "best", r->has_best ? point_json(sr->space, r->best_point, &r->best)
                                               : json_null());
    for (size_t i = 0; i < r->nimprovements; i++)
        json_array_append_new(conv, json_pack("{s:I, s:f}", "evaluations",
                                              (json_int_t)r->best_after[i], "objective",
                                              r->best_value[i]));
    json_object_set_new(o, "convergence", conv);
    for (size_t i = 0; i < r->npareto; i++)
        json_array_append_new(pareto, point_json(sr->space, r->pareto[i],
                                                 kopt_tune_cache_get(sr->cache, r->pareto[i])));
    json_object_set_new(o, "pareto", pareto);
    evals = json_array();
    for (size_t i = 0; i < sr->nevaluated; i++) {
        char *label = kopt_tune_space_label(sr->space, sr->evaluated[i]);
        json_array_append_new(evals, json_string(label ? label : ""));
        free(label);
    }
    json_object_set_new(o, "evaluated_points", evals);
    json_object_set_new(o, "cache_entries",
                        json_integer((json_int_t)kopt_tune_cache_count(sr->cache)));
    if (sr->final) {
        const kopt_eval_result *f = sr->final;
        json_t *fj = json_pack("{s:s, s:s, s:f, s:f}", "verdict", kopt_verdict_name(f->verdict),
                               "message", f->message, "median_ms", f->timing.median_ms,
                               "speedup", f->speedup);
        if (f->roofline.valid)
            json_object_set_new(fj, "pct_of_roofline", json_real(f->roofline.pct_of_bound));
        json_object_set_new(o, "final_check", fj);
    } else {
        json_object_set_new(o, "final_check", json_null());
    }
    json_object_set_new(o, "out", sr->out_path[0] ? json_string(sr->out_path) : json_null());
    json_object_set_new(o, "record", sr->record_path[0] ? json_string(sr->record_path)
                                                        : json_null());
    return o;
}

char *kopt_run_tune_json(const kopt_run_tune *t)
{
    int n = t->nrun;
    const char *mode = t->replay ? "replay" : "live";
    json_t *o = json_object(), *shapes = json_array();

    json_object_set_new(o, "mode", json_string(mode));
    json_object_set_new(o, "problem", json_string(t->prob->name));
    json_object_set_new(o, "template", json_string(t->tmpl_path));
    json_object_set_new(o, "device", json_string(t->shapes[0].key.device));
    json_object_set_new(o, "objective", json_string(kopt_run_tune_objective_name(t->objective)));
    for (int i = 0; i < n; i++)
        json_array_append_new(shapes, shape_json(&t->shapes[i]));
    /* the first shape's fields at the top level: the common one-shape case reads easily */
    if (n > 0) {
        json_t *first = json_array_get(shapes, 0);
        const char *k;
        json_t *v;
        json_object_foreach(first, k, v)
            if (!json_object_get(o, k))
                json_object_set(o, k, v);
    }
    json_object_set_new(o, "shapes", shapes);
    if (t->gpu_count > 0) {            /* live: where the GPUs' time went */
        json_object_set_new(o, "gpu_time", json_pack("{s:i, s:f, s:f, s:f}", "gpus",
                                                     t->gpu_count, "busy", t->gpu_busy,
                                                     "compile_wait", t->gpu_compile_wait,
                                                     "idle", t->gpu_idle));
        json_object_set_new(o, "held_back", t->held_back[0] ? json_string(t->held_back)
                                                            : json_null());
    }
    if (t->nslots > 0) {               /* scale-out: who evaluated what (docs/scale.md) */
        json_t *slots = json_array();
        for (int i = 0; i < t->nslots; i++) {
            const kopt_scale_slot_stats *st = &t->slots[i];
            json_array_append_new(slots, json_pack(
                "{s:s, s:i, s:s, s:s, s:i, s:i, s:f, s:b, s:i}", "kind", st->kind,
                "device", st->where.device, "name", st->where.name, "host", st->where.host,
                "rank", st->where.rank, "evaluations", st->jobs, "busy_s", st->busy_s,
                "lost", st->lost, "requeued", st->requeued));
        }
        json_object_set_new(o, "slots", slots);
        json_object_set_new(o, "mixed_gpus", t->mixed[0] ? json_string(t->mixed) : json_null());
        json_object_set_new(o, "retimed", json_integer(t->retimed));
    }
    if (!t->replay && t->nrun > 0) {   /* live: the compile depth as run (docs/scale.md) */
        json_object_set_new(o, "compile_threads", json_integer(t->compile_threads));
        json_object_set_new(o, "lookahead", json_integer(t->lookahead));
        json_object_set_new(o, "compile_helpers", json_integer(t->compile_helpers));
        json_object_set_new(o, "cpus_usable", json_integer(t->cpus_usable));
    }
    return dump(o);
}

char *kopt_run_tune_space_json(const kopt_run_tune *t, int skipped)
{
    json_t *jo = json_object(), *arr = json_array();

    for (int i = 0; i < t->nshapes; i++) {
        kopt_tune_space_summary sum;
        json_t *sj;
        kopt_tune_space_summarize(t->shapes[i].space, KOPT__RUN_SPACE_SCAN_LIMIT, &sum);
        sj = space_json(t->shapes[i].space, &sum, t->limits_text);
        json_object_set_new(sj, "sizes", json_string(t->shapes[i].key.sizes));
        json_object_set_new(sj, "key", key_json(&t->shapes[i].key));
        json_array_append_new(arr, sj);
    }
    json_object_set_new(jo, "problem", json_string(t->prob->name));
    json_object_set_new(jo, "template", json_string(t->tmpl_path));
    json_object_set_new(jo, "skipped", json_boolean(skipped));
    json_object_set_new(jo, "reason", skipped ? json_string(t->why_no_device) : json_null());
    json_object_set_new(jo, "space", json_copy(json_array_get(arr, 0)));
    json_object_set_new(jo, "shapes", arr);
    return dump(jo);
}

char *kopt_run_tune_runs_json(const kopt_store_tune_run *v, int n)
{
    json_t *arr = json_array();

    for (int i = 0; i < n; i++) {
        json_t *r = json_pack("{s:I, s:s, s:o, s:s, s:s, s:s, s:I, s:s, s:i, s:b, s:s, "
                              "s:s, s:f, s:I}", "id", (json_int_t)v[i].id, "created_at",
                              v[i].created_at, "key", key_json(&v[i].key), "template",
                              v[i].template_path, "strategy", v[i].strategy, "options",
                              v[i].options, "seed", (json_int_t)v[i].seed, "objective",
                              v[i].objective, "budget", v[i].max_evals, "finished",
                              v[i].finished, "stop", v[i].stop, "best", v[i].best_label,
                              "best_value", v[i].best_value, "evaluations",
                              (json_int_t)v[i].nevals);
        json_array_append_new(arr, r ? r : json_object());
    }
    return dump(arr);
}
