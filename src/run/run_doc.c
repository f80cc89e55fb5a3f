/*
 * Stored runs as documents (kopt report, kopt mcp's resources and queries): a run's row and
 * everything linked to it as one JSON object; single stored items; and importing what was
 * recorded elsewhere (a profile report, a device's measured ceilings) into a run, so
 * reports of recorded work render without a GPU.
 */
#include "run_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- JSON of rows ----------------------------------------------------------------------- */

json_t *kopt__run_row_json(const kopt_store_run *r)
{
    json_t *o = json_pack("{s:I, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "id", (json_int_t)r->id,
                          "kind", r->kind, "status", r->status, "command", r->command,
                          "started_at", r->started_at, "finished_at", r->finished_at,
                          "kopt_version", r->kopt_version, "host", r->host);
    json_t *dev = json_pack("{s:s, s:s, s:s, s:i, s:s, s:i, s:i}", "name", r->device_name,
                            "uuid", r->device_uuid, "cc", r->device_cc, "driver_version",
                            r->driver_version, "nvrtc_version", r->nvrtc_version, "clock_khz",
                            r->clock_khz, "mem_clock_khz", r->mem_clock_khz);

    if (!o)
        return json_object();
    json_object_set_new(o, "parent_id", r->parent_id ? json_integer((json_int_t)r->parent_id)
                                                     : json_null());
    json_object_set_new(o, "device", dev ? dev : json_object());
    json_object_set_new(o, "summary", json_string(r->summary));
    json_object_set_new(o, "evaluations", json_integer((json_int_t)r->nevals));
    json_object_set_new(o, "profiles", json_integer((json_int_t)r->nprofiles));
    json_object_set_new(o, "tune_runs", json_integer((json_int_t)r->ntune_runs));
    return o;
}

/* Parse JSON text the store made (takes it) into *into[key]; NULL text: rc. */
static kopt_status attach(json_t *into, const char *key, char *text, kopt_status rc)
{
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;

    free(text);
    if (!rc && !j)
        rc = KOPT_E_ERROR;
    json_object_set_new(into, key, j ? j : json_array());
    return rc;
}

/* Add to `uuids` (an object used as a set) the device UUID of each item of `arr` under
 * `field` (a string, or an object's "uuid"). */
static void collect_uuids(json_t *uuids, json_t *arr, const char *field)
{
    size_t i;
    json_t *v;

    json_array_foreach(arr, i, v) {
        const char *u = json_string_value(json_object_get(v, field));
        if (u && u[0])
            json_object_set_new(uuids, u, json_true());
    }
}

static kopt_status document(kopt_run *q, kopt_ctx *ctx, int64_t id, json_t **out)
{
    kopt_store_run row;
    json_t *doc = json_object(), *uuids = json_object(), *devs = json_array(), *one;
    const char *uuid;
    char *text = NULL;
    kopt_status rc;
    void *iter;

    *out = NULL;
    if ((rc = kopt_store_run_get(q->store, ctx, id, &row)) != KOPT_OK)
        goto done;
    json_object_set_new(doc, "run", kopt__run_row_json(&row));
    rc = kopt_store_evals_json(q->store, ctx, id, 0, &text);
    rc = attach(doc, "evaluations", text, rc);
    if (!rc) {
        rc = kopt_store_profiles_json(q->store, ctx, id, 0, &text);
        rc = attach(doc, "profiles", text, rc);
    }
    if (!rc) {
        rc = kopt_store_tune_runs_json(q->store, ctx, id, 0, &text);
        rc = attach(doc, "tune_runs", text, rc);
    }
    if (rc)
        goto done;
    /* the devices the run's rows name, with their ceilings */
    if (row.device_uuid[0])
        json_object_set_new(uuids, row.device_uuid, json_true());
    collect_uuids(uuids, json_object_get(doc, "evaluations"), "device_uuid");
    collect_uuids(uuids, json_object_get(doc, "tune_runs"), "device_uuid");
    for (iter = json_object_iter(uuids); iter; iter = json_object_iter_next(uuids, iter)) {
        uuid = json_object_iter_key(iter);
        if ((rc = kopt_store_devices_json(q->store, ctx, uuid, &text)) != KOPT_OK)
            goto done;
        one = json_loads(text, 0, NULL);
        free(text);
        json_array_extend(devs, one);
        json_decref(one);
    }
    json_object_set_new(doc, "devices", devs);
    devs = NULL;
    json_object_set_new(doc, "reader", json_pack("{s:s}", "kopt_version",
#ifdef KOPT_VERSION
                                                 KOPT_VERSION
#else
                                                 ""
#endif
                                                 ));
    *out = doc;
    doc = NULL;
done:
    if (rc == KOPT_E_ERROR && !kopt_errmsg(ctx)[0])
        kopt_seterr(ctx, rc, "run %lld: stored rows are not valid JSON", (long long)id);
    json_decref(doc);
    json_decref(uuids);
    json_decref(devs);
    return rc;
}

static kopt_status dump_out(json_t *j, char **out, kopt_ctx *ctx)
{
    *out = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
    json_decref(j);
    return *out ? KOPT_OK : kopt_seterr(ctx, KOPT_E_NOMEM, "JSON of a stored run");
}

kopt_status kopt_run_document_json(kopt_ctx *ctx, const char *db_path, int64_t id, char **out)
{
    kopt_run *q = NULL;
    json_t *doc = NULL;
    kopt_status rc = kopt__run_open_query(&q, ctx, db_path);

    *out = NULL;
    if (!rc && (rc = document(q, ctx, id, &doc)) == KOPT_OK)
        rc = dump_out(doc, out, ctx);
    kopt_run_close(q);
    return rc;
}

kopt_status kopt_run_item_json(kopt_ctx *ctx, const char *db_path, const char *what, int64_t id,
                               char **out)
{
    kopt_run *q = NULL;
    kopt_status rc = kopt__run_open_query(&q, ctx, db_path);
    char *text = NULL;
    json_t *arr = NULL, *item;

    *out = NULL;
    if (rc)
        goto done;
    if (strcmp(what, "evaluation") == 0)
        rc = kopt_store_evals_json(q->store, ctx, 0, id, &text);
    else if (strcmp(what, "profile") == 0)
        rc = kopt_store_profiles_json(q->store, ctx, 0, id, &text);
    else if (strcmp(what, "tune_run") == 0)
        rc = kopt_store_tune_runs_json(q->store, ctx, 0, id, &text);
    else
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "unknown kind of stored item '%s' (evaluation, "
                         "profile, tune_run)", what);
    if (rc)
        goto done;
    arr = json_loads(text, 0, NULL);
    if (!(item = json_array_get(arr, 0))) {
        rc = kopt_seterr(ctx, KOPT_E_NOT_FOUND, "no %s %lld in %s", what, (long long)id,
                         db_path);
        goto done;
    }
    rc = dump_out(json_incref(item), out, ctx);
done:
    free(text);
    json_decref(arr);
    kopt_run_close(q);
    return rc;
}

kopt_status kopt_run_list_json(kopt_ctx *ctx, const char *db_path, const char *kind, int limit,
                               char **out)
{
    kopt_store_run *runs = NULL;
    json_t *arr = json_array();
    int n = 0;
    kopt_status rc = kopt_run_list(ctx, db_path, kind, limit, &runs, &n);

    *out = NULL;
    for (int i = 0; !rc && i < n; i++)
        json_array_append_new(arr, kopt__run_row_json(&runs[i]));
    free(runs);
    if (rc) {
        json_decref(arr);
        return rc;
    }
    return dump_out(arr, out, ctx);
}

kopt_status kopt_run_last(kopt_ctx *ctx, const char *db_path, const char *kind, int64_t *id)
{
    kopt_store_run *runs = NULL;
    int n = 0;
    kopt_status rc = kopt_run_list(ctx, db_path, kind, 1, &runs, &n);

    *id = 0;
    if (!rc && n == 0)
        rc = kopt_seterr(ctx, KOPT_E_NOT_FOUND, "no %s%srun in %s", kind ? kind : "",
                         kind ? " " : "", db_path);
    if (!rc)
        *id = runs[0].id;
    free(runs);
    return rc;
}

/* ---- importing recorded work ------------------------------------------------------------ */

kopt_status kopt_run_import_device(kopt_run *run, kopt_ctx *ctx, const char *path)
{
    char *text = NULL;
    json_t *root = NULL, *d;
    kopt_device_info dev;
    kopt_ceilings c;
    kopt_store_run *e = &run->env;
    kopt_status rc;

    memset(&dev, 0, sizeof(dev));
    if ((rc = kopt_file_read(ctx, path, &text, NULL)) != KOPT_OK)
        return kopt__run_fail(run, KOPT_RUN_FAULT_INPUT, rc);
    root = json_loads(text, 0, NULL);
    free(text);
    text = json_dumps(json_object_get(root, "ceilings"), JSON_COMPACT);   /* NULL: none */
    if ((rc = kopt_ceilings_parse(ctx, text ? text : "", &c)) != KOPT_OK)
        goto done;
    d = json_object_get(root, "device");
    if (!json_is_object(d) || !json_string_value(json_object_get(d, "uuid"))) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s: no \"device\" object with a \"uuid\"", path);
        goto done;
    }
    snprintf(dev.name, sizeof(dev.name), "%s", json_string_value(json_object_get(d, "name")));
    snprintf(dev.uuid, sizeof(dev.uuid), "%s", json_string_value(json_object_get(d, "uuid")));
    dev.cc_major = (int)json_integer_value(json_object_get(d, "cc_major"));
    dev.cc_minor = (int)json_integer_value(json_object_get(d, "cc_minor"));
    dev.sm_count = (int)json_integer_value(json_object_get(d, "sm_count"));
    dev.clock_khz = (int)json_integer_value(json_object_get(d, "clock_khz"));
    dev.mem_clock_khz = (int)json_integer_value(json_object_get(d, "mem_clock_khz"));
    dev.driver_version = (int)json_integer_value(json_object_get(d, "driver_version"));
    kopt_ceilings_fill_spec(&c, &dev);
    snprintf(c.measured_at, sizeof(c.measured_at), "recorded");
    if (run->store && (rc = kopt_store_put_device(run->store, ctx, &dev, &c)) != KOPT_OK)
        goto done;
    snprintf(e->device_name, sizeof(e->device_name), "%s", dev.name);
    snprintf(e->device_uuid, sizeof(e->device_uuid), "%s", dev.uuid);
    snprintf(e->device_cc, sizeof(e->device_cc), "%d.%d", dev.cc_major, dev.cc_minor);
    e->driver_version = dev.driver_version;
    e->clock_khz = dev.clock_khz;
    e->mem_clock_khz = dev.mem_clock_khz;
    run->env_from_worker = 1;
    if (run->store && run->id)
        rc = kopt_store_run_set_env(run->store, ctx, run->id, e);
done:
    if (rc)
        kopt_adderr(ctx, rc, "%s", path);
    json_decref(root);
    free(text);
    return rc ? kopt__run_fail(run, KOPT_RUN_FAULT_INPUT, rc) : KOPT_OK;
}

static kopt_verdict verdict_named(const char *name)
{
    for (int v = 0; v < KOPT_VERDICT_COUNT; v++)
        if (name && strcmp(kopt_verdict_name((kopt_verdict)v), name) == 0)
            return (kopt_verdict)v;
    return KOPT_VERDICT_ERROR;
}

/* The evaluation a recorded report began with, as far as the report tells it (root: the
 * report), stored in the run; *out owned by the caller. */
static kopt_status import_eval(kopt_run *run, kopt_ctx *ctx, const kopt_problem *prob,
                               const kopt_candidate *subject, int is_reference, json_t *root,
                               const char *path, kopt_eval_result **out)
{
    kopt_eval_result *r = calloc(1, sizeof(*r));
    json_t *roof = json_object_get(root, "roofline");
    const char *msg = json_string_value(json_object_get(root, "message"));
    const char *arch = json_string_value(json_object_get(root, "arch"));
    const char *limiter = json_string_value(json_object_get(roof, "limiter"));

    *out = NULL;
    if (!r)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "imported evaluation");
    r->verdict = verdict_named(json_string_value(json_object_get(root, "verdict")));
    snprintf(r->message, sizeof(r->message), "imported from %s: %s", path, msg ? msg : "");
    snprintf(r->arch, sizeof(r->arch), "%s", arch ? arch : "");
    r->timing.median_ms = json_number_value(json_object_get(root, "median_ms"));
    r->timing.n = r->timing.median_ms > 0;
    r->is_reference = is_reference;
    if (json_is_object(roof) && r->timing.median_ms > 0) {
        double s = r->timing.median_ms / 1e3;
        r->roofline.valid = 1;
        r->roofline.achieved_gbs = json_number_value(json_object_get(roof, "achieved_gbs"));
        r->roofline.achieved_gflops =
            json_number_value(json_object_get(roof, "achieved_gflops"));
        r->roofline.bytes = r->roofline.achieved_gbs * 1e9 * s;
        r->roofline.flops = r->roofline.achieved_gflops * 1e9 * s;
        r->roofline.bound_ms = json_number_value(json_object_get(roof, "bound_ms"));
        r->roofline.pct_of_bound = json_number_value(json_object_get(roof, "pct_of_bound"));
        r->roofline.limiter = limiter && strcmp(limiter, "compute") == 0 ? "compute" : "memory";
        r->roofline.compute_source = "measured";
    }
    snprintf(r->problem_hash, sizeof(r->problem_hash), "%s", prob->hash);
    snprintf(r->candidate_hash, sizeof(r->candidate_hash), "%s", subject->hash);
    if (run->env.device_uuid[0]) {
        int found = 0;
        r->has_device = 1;
        snprintf(r->device.uuid, sizeof(r->device.uuid), "%s", run->env.device_uuid);
        snprintf(r->device.name, sizeof(r->device.name), "%s", run->env.device_name);
        kopt_store_get_ceilings(run->store, ctx, run->env.device_uuid, &r->ceilings, &found);
    }
    kopt__run_store_eval(run, ctx, prob, subject, r, "imported");
    *out = r;
    return KOPT_OK;
}

/* The report at `path`: its text parsed (*root) and the subject (cand, or the reference in
 * *ref). */
static kopt_status open_report(kopt_run *run, kopt_ctx *ctx, const kopt_problem *prob,
                               const kopt_candidate *cand, const char *path, char **text,
                               json_t **root, kopt_candidate **ref)
{
    json_error_t err;
    kopt_status rc;

    *root = NULL;
    *ref = NULL;
    if (!run->store)
        return kopt_seterr(ctx, KOPT_E_INVALID, "importing a recording needs a store");
    if ((rc = kopt_file_read(ctx, path, text, NULL)) != KOPT_OK)
        return rc;
    if (!(*root = json_loads(*text, 0, &err)) || !json_is_object(*root))
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s:%d: not a JSON object: %s", path, err.line,
                           err.text);
    return cand ? KOPT_OK : kopt_candidate_from_reference(ref, ctx, prob);
}

kopt_status kopt_run_import_eval(kopt_run *run, kopt_ctx *ctx, const kopt_problem *prob,
                                 const kopt_candidate *cand, const char *report_path,
                                 int64_t *eval_id)
{
    char *text = NULL;
    json_t *root = NULL;
    kopt_candidate *ref = NULL;
    kopt_eval_result *r = NULL;
    kopt_status rc = open_report(run, ctx, prob, cand, report_path, &text, &root, &ref);

    if (!rc)
        rc = import_eval(run, ctx, prob, cand ? cand : ref, !cand, root, report_path, &r);
    if (eval_id)
        *eval_id = r ? r->eval_id : 0;
    kopt_eval_result_free(r);
    kopt_candidate_free(ref);
    json_decref(root);
    free(text);
    return rc ? kopt__run_fail(run, KOPT_RUN_FAULT_INPUT, rc) : KOPT_OK;
}

kopt_status kopt_run_import_profile(kopt_run *run, kopt_ctx *ctx, const kopt_problem *prob,
                                    const kopt_candidate *cand, const kopt_candidate *parent,
                                    const char *report_path, int64_t *profile_id)
{
    char *text = NULL, *mjs = NULL;
    json_t *root = NULL, *fs, *f;
    kopt_profile *prof = NULL;
    kopt_eval_result *r = NULL;
    kopt_candidate *ref = NULL;
    kopt_store_finding *found = NULL;
    kopt_store_profile sp;
    const char *source;
    size_t i, nf;
    kopt_status rc;

    if (profile_id)
        *profile_id = 0;
    if ((rc = open_report(run, ctx, prob, cand, report_path, &text, &root, &ref)) != KOPT_OK ||
        (rc = kopt_profile_from_json(&prof, ctx, text, report_path)) != KOPT_OK ||
        (rc = import_eval(run, ctx, prob, cand ? cand : ref, !cand, root, report_path, &r)) !=
        KOPT_OK)
        goto done;
    /* the profile and its findings */
    fs = json_object_get(root, "findings");
    nf = json_array_size(fs);
    if (!(found = calloc(nf + 1, sizeof(*found)))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "imported findings");
        goto done;
    }
    json_array_foreach(fs, i, f) {
        found[i].tool = json_string_value(json_object_get(f, "tool"));
        found[i].kernel = json_string_value(json_object_get(f, "kernel"));
        found[i].title = json_string_value(json_object_get(f, "title"));
        found[i].gain = json_number_value(json_object_get(f, "gain"));
        found[i].confidence = json_number_value(json_object_get(f, "confidence"));
    }
    mjs = kopt_run_profile_metrics_json(prof);
    source = json_string_value(json_object_get(root, "metrics_source"));
    memset(&sp, 0, sizeof(sp));
    sp.problem_hash = prob->hash;
    sp.candidate_hash = (cand ? cand : ref)->hash;
    sp.eval_id = r->eval_id;
    sp.source = source ? source : "imported";
    sp.median_ms = r->timing.median_ms;
    sp.metrics_json = mjs;
    sp.baseline_hash = parent ? parent->hash : NULL;
    sp.run_id = run->id;
    rc = kopt_store_put_profile(run->store, ctx, &sp, found, (int)nf, profile_id, NULL);
done:
    free(found);
    free(mjs);
    kopt_eval_result_free(r);
    kopt_candidate_free(ref);
    kopt_profile_free(prof);
    json_decref(root);
    free(text);
    return rc ? kopt__run_fail(run, KOPT_RUN_FAULT_INPUT, rc) : KOPT_OK;
}
