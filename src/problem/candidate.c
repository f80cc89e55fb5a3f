/* Candidates: a .cu file with an optional leading front matter block (JSON) giving its
 * launch plan, params, constraints, scratch buffers, options and mode. */
#include "parse_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void param_spec_free(kopt_param_spec *p)
{
    free(p->name);
    free(p->values);
    p->name = NULL;
    p->values = NULL;
    p->nvalues = 0;
}

void kopt_candidate_free(kopt_candidate *c)
{
    if (!c)
        return;
    free(c->path);
    free(c->dir);
    free(c->source);
    kopt__plan_free(&c->plan);
    kopt_vars_free(&c->params);
    for (int i = 0; i < c->ntemplate_params; i++)
        param_spec_free(&c->template_params[i]);
    free(c->template_params);
    kopt__strv_free(c->nconstraints, c->constraints);
    for (int i = 0; i < c->nscratch; i++)
        kopt__tensor_free(&c->scratch[i]);
    free(c->scratch);
    kopt__strv_free(c->noptions, c->options);
    kopt__strv_free(c->nincludes, c->includes);
    kopt__strv_free(c->nlibraries, c->libraries);
    free(c);
}

/* 1-based line number of position `pos` in `text`. */
static int line_of(const char *text, const char *pos)
{
    int line = 1;
    for (const char *s = text; s < pos; s++)
        line += *s == '\n';
    return line;
}

/* ---- template params ------------------------------------------------------------------ */

#define MAX_PARAM_VALUES 1000000

static const char *const param_roles[] = {"threads", "vector", "tile", "work", "stages",
                                          "unroll", "other", NULL};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Element i of `arr` as an integer; the error names the element. */
static kopt_status int_at(kopt_where *w, json_t *arr, size_t i, int64_t *out)
{
    json_t *x = json_array_get(arr, i);
    size_t saved;
    kopt_status rc;

    if (json_is_integer(x)) {
        *out = json_integer_value(x);
        return KOPT_OK;
    }
    saved = kopt__push_index(w, (int)i);
    rc = kopt__bad(w, "expected an integer");
    kopt__pop(w, saved);
    return rc;
}

/* [v, v, ...]: integers, at least one, no repeats. */
static kopt_status parse_value_list(kopt_where *w, json_t *arr, kopt_param_spec *p)
{
    size_t n = json_array_size(arr);
    int64_t *sorted = NULL;
    kopt_status rc = KOPT_OK;

    if (!json_is_array(arr))
        return kopt__bad(w, "expected a list of integers");
    if (n == 0)
        return kopt__bad(w, "empty list: give at least one value");
    if (n > MAX_PARAM_VALUES)
        return kopt__bad(w, "%zu values, more than %d", n, MAX_PARAM_VALUES);
    p->values = malloc(n * sizeof(*p->values));
    sorted = malloc(n * sizeof(*sorted));
    if (!p->values || !sorted) {
        free(sorted);
        return kopt_seterr(w->ctx, KOPT_E_NOMEM, "param values");
    }
    for (size_t i = 0; i < n && rc == KOPT_OK; i++)
        rc = int_at(w, arr, i, &p->values[i]);
    if (rc == KOPT_OK) {
        p->nvalues = (int)n;
        memcpy(sorted, p->values, n * sizeof(*sorted));
        qsort(sorted, n, sizeof(*sorted), cmp_i64);
        for (size_t i = 1; i < n && rc == KOPT_OK; i++)
            if (sorted[i] == sorted[i - 1])
                rc = kopt__bad(w, "value %lld is listed more than once", (long long)sorted[i]);
    }
    free(sorted);
    return rc;
}

/* [lo, hi] or [lo, hi, step], inclusive. */
static kopt_status parse_range(kopt_where *w, json_t *arr, kopt_param_spec *p)
{
    int64_t b[3] = {0, 0, 1};
    size_t n = json_array_size(arr);
    uint64_t count;
    kopt_status rc;

    if (!json_is_array(arr) || n < 2 || n > 3)
        return kopt__bad(w, "expected [lo, hi] or [lo, hi, step]");
    for (size_t i = 0; i < n; i++)
        if ((rc = int_at(w, arr, i, &b[i])) != KOPT_OK)
            return rc;
    if (b[0] > b[1])
        return kopt__bad(w, "lo %lld is greater than hi %lld", (long long)b[0], (long long)b[1]);
    if (b[2] <= 0)
        return kopt__bad(w, "step must be positive, got %lld", (long long)b[2]);
    count = ((uint64_t)b[1] - (uint64_t)b[0]) / (uint64_t)b[2] + 1;
    if (count > MAX_PARAM_VALUES)
        return kopt__bad(w, "%llu values, more than %d", (unsigned long long)count,
                         MAX_PARAM_VALUES);
    if (!(p->values = malloc(count * sizeof(*p->values))))
        return kopt_seterr(w->ctx, KOPT_E_NOMEM, "param values");
    for (uint64_t i = 0; i < count; i++)
        p->values[i] = b[0] + (int64_t)i * b[2];
    p->nvalues = (int)count;
    return KOPT_OK;
}

/* [lo, hi]: the powers of two from lo to hi; both bounds must be powers of two. */
static kopt_status parse_pow2(kopt_where *w, json_t *arr, kopt_param_spec *p)
{
    int64_t b[2];
    kopt_status rc;

    if (!json_is_array(arr) || json_array_size(arr) != 2)
        return kopt__bad(w, "expected [lo, hi] (powers of two)");
    for (size_t i = 0; i < 2; i++) {
        if ((rc = int_at(w, arr, i, &b[i])) != KOPT_OK)
            return rc;
        if (b[i] <= 0 || (b[i] & (b[i] - 1)) != 0) {
            size_t saved = kopt__push_index(w, (int)i);
            rc = kopt__bad(w, "%lld is not a power of two", (long long)b[i]);
            kopt__pop(w, saved);
            return rc;
        }
    }
    if (b[0] > b[1])
        return kopt__bad(w, "lo %lld is greater than hi %lld", (long long)b[0], (long long)b[1]);
    if (!(p->values = malloc(64 * sizeof(*p->values))))
        return kopt_seterr(w->ctx, KOPT_E_NOMEM, "param values");
    for (int64_t x = b[0];; x *= 2) {
        p->values[p->nvalues++] = x;
        if (x == b[1])
            break;
    }
    return KOPT_OK;
}

/* {"values" | "range" | "pow2": [...], "role": "..."} */
static kopt_status parse_param_object(kopt_where *w, json_t *obj, kopt_param_spec *p)
{
    static const char *const keys[] = {"values", "range", "pow2", "role", NULL};
    static const char *const forms[] = {"values", "range", "pow2"};
    json_t *role = json_object_get(obj, "role"), *body = NULL;
    const char *form = NULL;
    size_t saved;
    kopt_status rc;

    if ((rc = kopt__check_keys(w, obj, keys)) != KOPT_OK)
        return rc;
    for (int i = 0; i < 3; i++) {
        json_t *b = json_object_get(obj, forms[i]);
        if (!b)
            continue;
        if (form)
            return kopt__bad(w, "give only one of \"%s\" and \"%s\"", form, forms[i]);
        form = forms[i];
        body = b;
    }
    if (!form)
        return kopt__bad(w, "expected \"values\", \"range\" or \"pow2\"");
    if (role) {
        int known = 0;
        saved = kopt__push(w, "role");
        for (const char *const *r = param_roles; json_is_string(role) && *r; r++)
            known |= strcmp(*r, json_string_value(role)) == 0;
        if (!json_is_string(role))
            rc = kopt__bad(w, "expected a string");
        else if (!known)
            rc = kopt__bad(w, "unknown role '%s' (expected one of: threads, vector, tile, work, "
                              "stages, unroll, other)", json_string_value(role));
        else
            snprintf(p->role, sizeof(p->role), "%s", json_string_value(role));
        kopt__pop(w, saved);
        if (rc != KOPT_OK)
            return rc;
    }
    saved = kopt__push(w, form);
    if (strcmp(form, "values") == 0)
        rc = parse_value_list(w, body, p);
    else if (strcmp(form, "range") == 0)
        rc = parse_range(w, body, p);
    else
        rc = parse_pow2(w, body, p);
    kopt__pop(w, saved);
    return rc;
}

/* One entry of "params": an integer (fixed), or a list/range/pow2 (a template param,
 * unless it has a single value, which makes it fixed). */
static kopt_status parse_param(kopt_where *w, kopt_candidate *c, const char *name, json_t *x)
{
    kopt_param_spec p;
    kopt_status rc;

    memset(&p, 0, sizeof(p));
    if (json_is_integer(x))
        return kopt_vars_set(&c->params, name, json_integer_value(x)) == KOPT_OK
                   ? KOPT_OK : kopt_seterr(w->ctx, KOPT_E_NOMEM, "params");
    if (json_is_array(x))
        rc = parse_value_list(w, x, &p);
    else if (json_is_object(x))
        rc = parse_param_object(w, x, &p);
    else
        rc = kopt__bad(w, "expected an integer, a list of integers, or an object with "
                          "\"values\", \"range\" or \"pow2\"");
    if (rc == KOPT_OK && p.nvalues == 1) {
        if (kopt_vars_set(&c->params, name, p.values[0]) != KOPT_OK)
            rc = kopt_seterr(w->ctx, KOPT_E_NOMEM, "params");
    } else if (rc == KOPT_OK) {
        if (!(p.name = strdup(name)))
            rc = kopt_seterr(w->ctx, KOPT_E_NOMEM, "params");
        else {
            c->template_params[c->ntemplate_params++] = p;
            return KOPT_OK;
        }
    }
    param_spec_free(&p);
    return rc;
}

static kopt_status parse_front_matter(kopt_where *w, kopt_candidate *c, const char *json_text,
                                      const kopt_problem *prob)
{
    static const char *const keys[] = {"launches", "params", "constraints", "scratch", "options",
                                       "includes", "mode", "libraries", NULL};
    json_t *root = NULL, *v, *x;
    char *mode = NULL;
    const char *key;
    size_t i, saved;
    kopt_status rc;

    if ((rc = kopt__load_json(w->ctx, json_text, w->file, &root)) != KOPT_OK)
        return kopt_adderr(w->ctx, rc, "front matter");
    if ((rc = kopt__check_keys(w, root, keys)) != KOPT_OK ||
        (rc = kopt__get_str(w, root, "mode", 0, &mode)) != KOPT_OK ||
        (rc = kopt__get_str_array(w, root, "options", &c->noptions, &c->options)) != KOPT_OK ||
        (rc = kopt__get_str_array(w, root, "includes", &c->nincludes, &c->includes)) != KOPT_OK ||
        (rc = kopt__get_str_array(w, root, "libraries", &c->nlibraries, &c->libraries)) !=
            KOPT_OK ||
        (rc = kopt__get_str_array(w, root, "constraints", &c->nconstraints, &c->constraints)) !=
            KOPT_OK)
        goto cleanup;
    if (mode && strcmp(mode, "host") != 0 && strcmp(mode, "device") != 0) {
        saved = kopt__push(w, "mode");
        rc = kopt__bad(w, "expected \"device\" or \"host\", got '%s'", mode);
        goto cleanup;
    }
    c->host_mode = mode && strcmp(mode, "host") == 0;
    if ((v = json_object_get(root, "params"))) {
        saved = kopt__push(w, "params");
        if (!json_is_object(v)) {
            rc = kopt__bad(w, "expected an object of NAME: integer, list or range");
            goto cleanup;
        }
        c->template_params = calloc(json_object_size(v) + 1, sizeof(*c->template_params));
        if (!c->template_params) {
            rc = kopt_seterr(w->ctx, KOPT_E_NOMEM, "params");
            goto cleanup;
        }
        json_object_foreach(v, key, x) {
            size_t s2 = kopt__push(w, key);
            if (!kopt__is_ident(key))
                rc = kopt__bad(w, "'%s' is not a valid macro name", key);
            else if (kopt_vars_find(&prob->sizes, key) >= 0)
                rc = kopt__bad(w, "'%s' is already a size name of the problem", key);
            else
                rc = parse_param(w, c, key, x);
            kopt__pop(w, s2);
            if (rc != KOPT_OK)
                goto cleanup;
        }
        kopt__pop(w, saved);
    }
    if ((v = json_object_get(root, "scratch"))) {
        saved = kopt__push(w, "scratch");
        if (!json_is_array(v)) {
            rc = kopt__bad(w, "expected an array of buffers");
            goto cleanup;
        }
        c->scratch = calloc(json_array_size(v) + 1, sizeof(*c->scratch));
        json_array_foreach(v, i, x) {
            size_t s2 = kopt__push_index(w, (int)i);
            kopt_tensor_spec *t = &c->scratch[i];
            c->nscratch++;
            rc = kopt__parse_tensor(w, x, t, 1);
            if (rc == KOPT_OK && (kopt_problem_find_tensor(prob, t->name) >= 0 ||
                                  kopt_vars_find(&prob->sizes, t->name) >= 0))
                rc = kopt__bad(w, "name '%s' is already used by the problem", t->name);
            for (int j = 0; rc == KOPT_OK && j < (int)i; j++)
                if (strcmp(c->scratch[j].name, t->name) == 0)
                    rc = kopt__bad(w, "duplicate scratch name '%s'", t->name);
            kopt__pop(w, s2);
            if (rc != KOPT_OK)
                goto cleanup;
        }
        kopt__pop(w, saved);
    }
    if ((v = json_object_get(root, "launches"))) {
        saved = kopt__push(w, "launches");
        rc = kopt__parse_plan(w, v, &c->plan);
        kopt__pop(w, saved);
        if (rc != KOPT_OK)
            goto cleanup;
    }
cleanup:
    free(mode);
    json_decref(root);
    return rc;
}

/* Where a step names a tensor: memset targets and arguments that are plain names. */
static kopt_status check_names(kopt_where *w, const kopt_candidate *c, const kopt_problem *p)
{
    kopt_vars all = KOPT_VARS_INIT, tp = KOPT_VARS_INIT;
    kopt_env env = {3, {&all, &c->params, &tp}};
    kopt_status rc = KOPT_OK;
    int64_t v;

    kopt_vars_copy(&all, &p->sizes);
    /* a template's params take their first value here; only names and syntax are checked */
    for (int i = 0; i < c->ntemplate_params; i++)
        kopt_vars_set(&tp, c->template_params[i].name, c->template_params[i].values[0]);
    for (int i = 0; rc == KOPT_OK && i < c->plan.n; i++) {
        const kopt_launch *l = &c->plan.steps[i];
        size_t s1 = kopt__push(w, "launches"), s2 = kopt__push_index(w, i);
        int found = 0;
        if (l->is_memset) {
            found = kopt_problem_find_tensor(p, l->memset_tensor) >= 0;
            for (int s = 0; s < c->nscratch; s++)
                found |= strcmp(c->scratch[s].name, l->memset_tensor) == 0;
            if (!found)
                rc = kopt__bad(w, "memset of unknown tensor '%s'", l->memset_tensor);
        }
        for (int a = 0; rc == KOPT_OK && a < l->nargs; a++) {
            const kopt_arg *arg = &l->args[a];
            int is_tensor = 0;
            if (!arg->text)
                continue;
            is_tensor = kopt_problem_find_tensor(p, arg->text) >= 0;
            for (int s = 0; s < c->nscratch; s++)
                is_tensor |= strcmp(c->scratch[s].name, arg->text) == 0;
            if (arg->kind == KOPT_ARG_INT && is_tensor)
                continue;
            if ((c->ntemplate_params ? kopt_expr_check(w->ctx, arg->text, &env)
                                     : kopt_expr_eval(w->ctx, arg->text, &env, &v)) != KOPT_OK)
                rc = kopt__bad(w, "args[%d]: '%s' is neither a tensor nor a valid expression (%s)",
                               a, arg->text, kopt_errmsg(w->ctx));
        }
        kopt__pop(w, s2);
        kopt__pop(w, s1);
    }
    for (int i = 0; rc == KOPT_OK && i < c->nconstraints; i++) {
        size_t s1 = kopt__push(w, "constraints"), s2 = kopt__push_index(w, i);
        if (kopt_expr_check(w->ctx, c->constraints[i], &env) != KOPT_OK)
            rc = kopt__bad(w, "%s", kopt_errmsg(w->ctx));
        kopt__pop(w, s2);
        kopt__pop(w, s1);
    }
    kopt_vars_free(&all);
    kopt_vars_free(&tp);
    return rc;
}

kopt_status kopt_candidate_parse(kopt_candidate **out, kopt_ctx *ctx, const char *text,
                                 const char *path, const kopt_problem *prob)
{
    kopt_where w = {ctx, path, ""};
    kopt_candidate *c = NULL;
    const char *s = text, *end;
    kopt_status rc = KOPT_OK;

    *out = NULL;
    c = calloc(1, sizeof(*c));
    if (!c)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "candidate");
    c->path = strdup(path);
    c->dir = kopt_path_dir(path);
    c->source = strdup(text);
    while (isspace((unsigned char)*s))
        s++;
    if (strncmp(s, "/*@kopt", 7) == 0) {
        char *json;
        c->has_front_matter = 1;
        end = strstr(s, "*/");
        if (!end) {
            rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s:%d: front matter '/*@kopt' is not closed "
                                                  "by '*/'", path, line_of(text, s));
            goto cleanup;
        }
        json = strndup(s + 7, (size_t)(end - s - 7));
        /* JSON line numbers are relative to the block; say which line the block starts on */
        rc = parse_front_matter(&w, c, json, prob);
        free(json);
        if (rc != KOPT_OK) {
            if (strstr(kopt_errmsg(ctx), "invalid JSON"))
                kopt_adderr(ctx, rc, "(front matter starts on line %d, JSON lines counted from "
                                     "there)", line_of(text, s));
            goto cleanup;
        }
    } else if (strstr(text, "@kopt")) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s:%d: '@kopt' found, but the front matter must "
                                              "be the first thing in the file, as /*@kopt {...} */",
                         path, line_of(text, strstr(text, "@kopt")));
        goto cleanup;
    }
    if (c->plan.n == 0 && !c->host_mode) {
        if (prob->ref_plan.n == 0) {
            rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s: no launch plan: the reference has none "
                                                  "(host mode), so give \"launches\"", path);
            goto cleanup;
        }
        if (kopt__plan_copy(&c->plan, &prob->ref_plan) != KOPT_OK) {
            rc = kopt_seterr(ctx, KOPT_E_NOMEM, "plan");
            goto cleanup;
        }
    }
    if ((rc = check_names(&w, c, prob)) != KOPT_OK)
        goto cleanup;
    kopt_sha256_hex(text, strlen(text), c->hash);
    *out = c;
    c = NULL;
cleanup:
    kopt_candidate_free(c);
    return rc;
}

/* A KernelBench-native candidate: a Python file defining ModelNew, for a problem whose
 * reference is a PyTorch program. The Python worker loads it; kopt reads nothing in it. */
static kopt_status torch_module(kopt_candidate **out, kopt_ctx *ctx, const char *text,
                                const char *path, const kopt_problem *prob)
{
    kopt_candidate *c;

    if (!prob->ref_torch)
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s: a Python candidate (ModelNew) needs a "
                           "problem with a PyTorch reference (\"reference\": {\"pytorch\": ...}); "
                           "%s has a CUDA reference", path, prob->path);
    if (!strstr(text, "class ModelNew") && !strstr(text, "class Model"))
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s: defines no class ModelNew (a KernelBench "
                           "candidate is a Python file with class ModelNew)", path);
    if (!(c = calloc(1, sizeof(*c))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "candidate");
    c->path = strdup(path);
    c->dir = kopt_path_dir(path);
    c->source = strdup(text);
    c->torch_module = 1;
    kopt_sha256_hex(text, strlen(text), c->hash);
    if (!c->path || !c->dir || !c->source) {
        kopt_candidate_free(c);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "candidate");
    }
    *out = c;
    return KOPT_OK;
}

kopt_status kopt_candidate_load(kopt_candidate **out, kopt_ctx *ctx, const char *path,
                                const kopt_problem *prob)
{
    char *text = NULL;
    kopt_status rc;

    *out = NULL;
    if ((rc = kopt_file_read(ctx, path, &text, NULL)) != KOPT_OK)
        return rc;
    if ((strlen(path) > 3 && strcmp(path + strlen(path) - 3, ".py") == 0))
        rc = torch_module(out, ctx, text, path, prob);
    else
        rc = kopt_candidate_parse(out, ctx, text, path, prob);
    free(text);
    return rc;
}

kopt_status kopt_candidate_from_reference(kopt_candidate **out, kopt_ctx *ctx,
                                          const kopt_problem *prob)
{
    kopt_candidate *c = calloc(1, sizeof(*c));

    *out = NULL;
    if (!c)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "candidate");
    c->is_reference = 1;
    c->path = strdup(prob->ref_path);
    c->dir = strdup(prob->dir);
    c->source = strdup(prob->ref_source);
    c->host_mode = prob->ref_host_mode;
    c->torch_module = prob->ref_torch;   /* a PyTorch reference runs as its own ModelNew */
    if (kopt__plan_copy(&c->plan, &prob->ref_plan) != KOPT_OK) {
        kopt_candidate_free(c);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "plan");
    }
    c->options = calloc((size_t)prob->nref_options + 1, sizeof(char *));
    for (int i = 0; i < prob->nref_options; i++)
        c->options[c->noptions++] = strdup(prob->ref_options[i]);
    kopt_sha256_hex(c->source, strlen(c->source), c->hash);
    *out = c;
    return KOPT_OK;
}

/* ---- templates: refusing, instantiating and writing out ------------------------------- */

kopt_status kopt_candidate_check_concrete(kopt_ctx *ctx, const kopt_candidate *c)
{
    kopt_buf names = KOPT_BUF_INIT;
    kopt_status rc;

    if (!c || c->ntemplate_params == 0)
        return KOPT_OK;
    for (int i = 0; i < c->ntemplate_params; i++)
        kopt_buf_printf(&names, "%s%s", i ? ", " : "", c->template_params[i].name);
    rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s is a template (params %s): tune it with `kopt "
                     "tune`, or fix the params", c->path, kopt_buf_cstr(&names));
    kopt_buf_free(&names);
    return rc;
}

/* Every template param has a value in `values`, one of its own; no other names. */
static kopt_status check_values(kopt_ctx *ctx, const kopt_candidate *t, const kopt_vars *values)
{
    for (int i = 0; values && i < values->n; i++) {
        int known = 0;
        for (int j = 0; j < t->ntemplate_params; j++)
            known |= strcmp(t->template_params[j].name, values->names[i]) == 0;
        if (!known)
            return kopt_seterr(ctx, KOPT_E_INVALID, "%s: '%s' is not a template param of this "
                               "candidate", t->path, values->names[i]);
    }
    for (int j = 0; j < t->ntemplate_params; j++) {
        const kopt_param_spec *p = &t->template_params[j];
        int k = kopt_vars_find(values, p->name), listed = 0;
        kopt_buf list = KOPT_BUF_INIT;
        kopt_status rc;

        if (k < 0)
            return kopt_seterr(ctx, KOPT_E_INVALID, "%s: no value given for template param '%s'",
                               t->path, p->name);
        for (int v = 0; v < p->nvalues; v++)
            listed |= p->values[v] == values->values[k];
        if (listed)
            continue;
        for (int v = 0; v < p->nvalues && v < 8; v++)
            kopt_buf_printf(&list, "%s%lld", v ? ", " : "", (long long)p->values[v]);
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s: %s=%lld is not one of its values (%s%s)",
                         t->path, p->name, (long long)values->values[k], kopt_buf_cstr(&list),
                         p->nvalues > 8 ? ", ..." : "");
        kopt_buf_free(&list);
        return rc;
    }
    return KOPT_OK;
}

static char **strv_copy(int n, char *const *src)
{
    char **v = calloc((size_t)n + 1, sizeof(char *));
    for (int i = 0; v && i < n; i++)
        if (!(v[i] = strdup(src[i]))) {
            kopt__strv_free(i, v);
            return NULL;
        }
    return v;
}

static int tensor_copy(kopt_tensor_spec *d, const kopt_tensor_spec *s)
{
    *d = *s;
    d->name = s->name ? strdup(s->name) : NULL;
    d->pytorch = s->pytorch ? strdup(s->pytorch) : NULL;
    for (int i = 0; i < KOPT_MAX_DIMS; i++)
        d->shape[i] = s->shape[i] ? strdup(s->shape[i]) : NULL;
    if (s->name && !d->name)
        return -1;
    for (int i = 0; i < KOPT_MAX_DIMS; i++)
        if (s->shape[i] && !d->shape[i])
            return -1;
    return 0;
}

kopt_status kopt_candidate_instantiate(kopt_candidate **out, kopt_ctx *ctx,
                                       const kopt_candidate *tmpl, const kopt_vars *values)
{
    kopt_candidate *c = NULL;
    kopt_status rc;
    int bad = 0;

    *out = NULL;
    if ((rc = check_values(ctx, tmpl, values)) != KOPT_OK)
        return rc;
    if (!(c = calloc(1, sizeof(*c))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "candidate");
    c->path = strdup(tmpl->path);
    c->dir = strdup(tmpl->dir);
    c->source = strdup(tmpl->source);
    c->is_reference = tmpl->is_reference;
    c->has_front_matter = tmpl->has_front_matter;
    c->host_mode = tmpl->host_mode;
    bad |= !c->path || !c->dir || !c->source;
    bad |= kopt__plan_copy(&c->plan, &tmpl->plan) != KOPT_OK;
    bad |= kopt_vars_copy(&c->params, &tmpl->params) != KOPT_OK;
    for (int j = 0; j < tmpl->ntemplate_params; j++) {
        const char *name = tmpl->template_params[j].name;
        bad |= kopt_vars_set(&c->params, name,
                             values->values[kopt_vars_find(values, name)]) != KOPT_OK;
    }
    c->nconstraints = tmpl->nconstraints;
    bad |= !(c->constraints = strv_copy(tmpl->nconstraints, tmpl->constraints));
    c->noptions = tmpl->noptions;
    bad |= !(c->options = strv_copy(tmpl->noptions, tmpl->options));
    c->nincludes = tmpl->nincludes;
    bad |= !(c->includes = strv_copy(tmpl->nincludes, tmpl->includes));
    c->nlibraries = tmpl->nlibraries;
    bad |= !(c->libraries = strv_copy(tmpl->nlibraries, tmpl->libraries));
    if (!c->constraints) c->nconstraints = 0;
    if (!c->options) c->noptions = 0;
    if (!c->includes) c->nincludes = 0;
    if (!c->libraries) c->nlibraries = 0;
    if ((c->scratch = calloc((size_t)tmpl->nscratch + 1, sizeof(*c->scratch)))) {
        for (int i = 0; i < tmpl->nscratch; i++, c->nscratch++)
            bad |= tensor_copy(&c->scratch[i], &tmpl->scratch[i]) != 0;
    } else {
        bad = 1;
    }
    memcpy(c->hash, tmpl->hash, sizeof(c->hash));
    if (bad) {
        kopt_candidate_free(c);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "instantiate %s", tmpl->path);
    }
    *out = c;
    return KOPT_OK;
}

/* Append `note` as `// ` comment lines (each line of it one comment line). */
static void append_note(kopt_buf *b, const char *note)
{
    const char *s = note;

    while (*s) {
        size_t n = strcspn(s, "\r\n");
        kopt_buf_append(b, "\n// ", 4);
        kopt_buf_append(b, s, n);
        s += n;
        s += strspn(s, "\r\n");
    }
}

kopt_status kopt_candidate_write_fixed(kopt_ctx *ctx, const kopt_candidate *tmpl,
                                       const kopt_vars *values, const char *path,
                                       const char *note)
{
    const char *src = tmpl->source, *start = src, *end;
    kopt_buf out = KOPT_BUF_INIT;
    json_t *root = NULL, *params;
    char *json = NULL, *dump = NULL;
    kopt_status rc;

    if ((rc = check_values(ctx, tmpl, values)) != KOPT_OK)
        return rc;
    while (isspace((unsigned char)*start))
        start++;
    if (tmpl->is_reference || strncmp(start, "/*@kopt", 7) != 0 ||
        !(end = strstr(start, "*/")))
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s: no /*@kopt */ front matter to fix the "
                           "params in", tmpl->path);
    if (!(json = strndup(start + 7, (size_t)(end - start - 7))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "front matter");
    if ((rc = kopt__load_json(ctx, json, tmpl->path, &root)) != KOPT_OK)
        goto cleanup;
    params = json_object_get(root, "params");
    for (int j = 0; j < tmpl->ntemplate_params; j++) {
        const char *name = tmpl->template_params[j].name;
        if (!json_is_object(params) ||
            json_object_set_new(params, name,
                                json_integer(values->values[kopt_vars_find(values, name)])) != 0) {
            rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s: front matter has no params.%s to fix",
                             tmpl->path, name);
            goto cleanup;
        }
    }
    if (!(dump = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "front matter");
        goto cleanup;
    }
    kopt_buf_append(&out, src, (size_t)(start - src));
    kopt_buf_printf(&out, "/*@kopt\n%s\n*/", dump);
    end += 2;
    if (note && *note) {
        append_note(&out, note);
        if (*end != '\n' && *end != '\r')
            kopt_buf_append(&out, "\n", 1);
    }
    if (kopt_buf_append(&out, end, strlen(end)) != 0) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "candidate text");
        goto cleanup;
    }
    rc = kopt_file_write(ctx, path, out.ptr, out.len);
cleanup:
    kopt_buf_free(&out);
    free(dump);
    free(json);
    json_decref(root);
    return rc;
}
