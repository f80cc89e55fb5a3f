/* JSON field readers and the parsers shared by problem.json and candidate front matter. */
#include "parse_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

kopt_status kopt__bad(kopt_where *w, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (w->field[0])
        return kopt_seterr(w->ctx, KOPT_E_INVALID, "%s: %s: %s", w->file, w->field, msg);
    return kopt_seterr(w->ctx, KOPT_E_INVALID, "%s: %s", w->file, msg);
}

size_t kopt__push(kopt_where *w, const char *name)
{
    size_t saved = strlen(w->field);

    snprintf(w->field + saved, sizeof(w->field) - saved, "%s%s", saved ? "." : "", name);
    return saved;
}

size_t kopt__push_index(kopt_where *w, int i)
{
    size_t saved = strlen(w->field);

    snprintf(w->field + saved, sizeof(w->field) - saved, "[%d]", i);
    return saved;
}

void kopt__pop(kopt_where *w, size_t saved)
{
    w->field[saved] = '\0';
}

int kopt__is_ident(const char *s)
{
    if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
        return 0;
    for (s++; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return 0;
    return 1;
}

kopt_status kopt__check_keys(kopt_where *w, json_t *obj, const char *const *allowed)
{
    const char *key;
    json_t *v;

    json_object_foreach(obj, key, v) {
        int ok = 0;
        (void)v;
        for (const char *const *a = allowed; *a; a++)
            if (strcmp(*a, key) == 0)
                ok = 1;
        if (!ok) {
            kopt_buf list = KOPT_BUF_INIT;
            kopt_status rc;
            for (const char *const *a = allowed; *a; a++)
                kopt_buf_printf(&list, "%s%s", a == allowed ? "" : ", ", *a);
            rc = kopt__bad(w, "unknown field '%s' (expected one of: %s)", key,
                           kopt_buf_cstr(&list));
            kopt_buf_free(&list);
            return rc;
        }
    }
    return KOPT_OK;
}

static const char *type_name(json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

kopt_status kopt__get_str(kopt_where *w, json_t *obj, const char *key, int required, char **out)
{
    json_t *v = json_object_get(obj, key);
    size_t saved;
    kopt_status rc = KOPT_OK;

    *out = NULL;
    if (!v) {
        if (!required)
            return KOPT_OK;
        saved = kopt__push(w, key);
        rc = kopt__bad(w, "missing (required)");
        kopt__pop(w, saved);
        return rc;
    }
    saved = kopt__push(w, key);
    if (!json_is_string(v))
        rc = kopt__bad(w, "expected a string, got %s", type_name(v));
    else if (!(*out = strdup(json_string_value(v))))
        rc = kopt_seterr(w->ctx, KOPT_E_NOMEM, "string");
    kopt__pop(w, saved);
    return rc;
}

kopt_status kopt__get_expr_value(kopt_where *w, json_t *v, char **out)
{
    char tmp[32];

    *out = NULL;
    if (json_is_integer(v)) {
        snprintf(tmp, sizeof(tmp), "%lld", (long long)json_integer_value(v));
        *out = strdup(tmp);
    } else if (json_is_string(v)) {
        if (!json_string_value(v)[0])
            return kopt__bad(w, "empty expression");
        *out = strdup(json_string_value(v));
    } else {
        return kopt__bad(w, "expected an integer or an expression string, got %s",
                         type_name(v));
    }
    return *out ? KOPT_OK : kopt_seterr(w->ctx, KOPT_E_NOMEM, "string");
}

kopt_status kopt__get_number(kopt_where *w, json_t *obj, const char *key, int required,
                             double *out)
{
    json_t *v = json_object_get(obj, key);
    size_t saved;
    kopt_status rc = KOPT_OK;

    if (!v)
        return required ? (saved = kopt__push(w, key), rc = kopt__bad(w, "missing (required)"),
                           kopt__pop(w, saved), rc)
                        : KOPT_OK;
    saved = kopt__push(w, key);
    if (!json_is_number(v))
        rc = kopt__bad(w, "expected a number, got %s", type_name(v));
    else if (!isfinite(json_number_value(v)))
        rc = kopt__bad(w, "not a finite number");
    else
        *out = json_number_value(v);
    kopt__pop(w, saved);
    return rc;
}

kopt_status kopt__get_str_array(kopt_where *w, json_t *obj, const char *key, int *n, char ***out)
{
    json_t *arr = json_object_get(obj, key), *v;
    size_t saved, i;
    kopt_status rc = KOPT_OK;

    *n = 0;
    *out = NULL;
    if (!arr)
        return KOPT_OK;
    saved = kopt__push(w, key);
    if (!json_is_array(arr)) {
        rc = kopt__bad(w, "expected an array of strings, got %s", type_name(arr));
        goto done;
    }
    *out = calloc(json_array_size(arr) + 1, sizeof(char *));
    if (!*out) {
        rc = kopt_seterr(w->ctx, KOPT_E_NOMEM, "array");
        goto done;
    }
    json_array_foreach(arr, i, v) {
        if (!json_is_string(v)) {
            size_t s2 = kopt__push_index(w, (int)i);
            rc = kopt__bad(w, "expected a string, got %s", type_name(v));
            kopt__pop(w, s2);
            goto done;
        }
        (*out)[(*n)++] = strdup(json_string_value(v));
    }
done:
    kopt__pop(w, saved);
    return rc;
}

kopt_status kopt__parse_vars(kopt_where *w, json_t *obj, kopt_vars *vars, int allow_negative)
{
    const char *key;
    json_t *v;

    if (!json_is_object(obj))
        return kopt__bad(w, "expected an object of NAME: integer, got %s", type_name(obj));
    json_object_foreach(obj, key, v) {
        size_t saved = kopt__push(w, key);
        kopt_status rc = KOPT_OK;
        if (!kopt__is_ident(key))
            rc = kopt__bad(w, "'%s' is not a valid name (letters, digits, _)", key);
        else if (!json_is_integer(v))
            rc = kopt__bad(w, "expected an integer, got %s", type_name(v));
        else if (!allow_negative && json_integer_value(v) < 0)
            rc = kopt__bad(w, "must be >= 0, got %lld", (long long)json_integer_value(v));
        else if (kopt_vars_set(vars, key, json_integer_value(v)) != KOPT_OK)
            rc = kopt_seterr(w->ctx, KOPT_E_NOMEM, "vars");
        kopt__pop(w, saved);
        if (rc != KOPT_OK)
            return rc;
    }
    return KOPT_OK;
}

static kopt_status parse_dims(kopt_where *w, json_t *obj, const char *key, int required,
                              char **dims, int *n, int max)
{
    json_t *arr = json_object_get(obj, key), *v;
    size_t saved, i;
    kopt_status rc = KOPT_OK;

    *n = 0;
    if (!arr) {
        if (!required)
            return KOPT_OK;
        saved = kopt__push(w, key);
        rc = kopt__bad(w, "missing (required)");
        kopt__pop(w, saved);
        return rc;
    }
    saved = kopt__push(w, key);
    if (json_is_integer(arr) || json_is_string(arr)) {   /* "grid": "B" is one dimension */
        rc = kopt__get_expr_value(w, arr, &dims[0]);
        *n = rc == KOPT_OK;
    } else if (!json_is_array(arr) || json_array_size(arr) > (size_t)max ||
               (required && json_array_size(arr) == 0)) {
        rc = kopt__bad(w, "expected an array of %s%d expressions", required ? "1 to " : "0 to ",
                       max);
    } else {
        json_array_foreach(arr, i, v) {
            size_t s2 = kopt__push_index(w, (int)i);
            rc = kopt__get_expr_value(w, v, &dims[i]);
            kopt__pop(w, s2);
            if (rc != KOPT_OK)
                break;
            (*n)++;
        }
    }
    kopt__pop(w, saved);
    return rc;
}

static kopt_status parse_arg(kopt_where *w, json_t *v, kopt_arg *a)
{
    static const struct { const char *key; kopt_arg_kind kind; } typed[] = {
        {"f32", KOPT_ARG_F32}, {"f64", KOPT_ARG_F64}, {"i32", KOPT_ARG_I32}, {"i64", KOPT_ARG_I64},
    };
    const char *key;
    json_t *x;

    if (json_is_string(v) || json_is_integer(v)) {
        a->kind = KOPT_ARG_INT;   /* tensor names are recognized at bind time */
        return kopt__get_expr_value(w, v, &a->text);
    }
    if (!json_is_object(v) || json_object_size(v) != 1)
        return kopt__bad(w, "expected a tensor name, an expression, or {\"f32\"|\"f64\"|"
                            "\"i32\"|\"i64\": value}");
    json_object_foreach(v, key, x) {
        for (size_t i = 0; i < sizeof(typed) / sizeof(typed[0]); i++)
            if (strcmp(key, typed[i].key) == 0) {
                a->kind = typed[i].kind;
                if (json_is_number(x)) {
                    a->number = json_number_value(x);
                    if ((a->kind == KOPT_ARG_I32 || a->kind == KOPT_ARG_I64) &&
                        !json_is_integer(x))
                        return kopt__bad(w, "'%s' needs an integer", key);
                    return KOPT_OK;
                }
                return kopt__get_expr_value(w, x, &a->text);
            }
        return kopt__bad(w, "unknown argument type '%s' (expected f32, f64, i32, i64)", key);
    }
    return KOPT_OK;
}

static kopt_status parse_step(kopt_where *w, json_t *o, kopt_launch *l)
{
    static const char *const launch_keys[] = {"kernel", "grid", "block", "smem", "args", NULL};
    static const char *const memset_keys[] = {"memset", "value", NULL};
    json_t *args, *v, *smem;
    size_t i, saved;
    kopt_status rc;

    if (!json_is_object(o))
        return kopt__bad(w, "expected an object (a launch or a memset step)");
    if (json_object_get(o, "memset")) {
        l->is_memset = 1;
        if ((rc = kopt__check_keys(w, o, memset_keys)) != KOPT_OK ||
            (rc = kopt__get_str(w, o, "memset", 1, &l->memset_tensor)) != KOPT_OK)
            return rc;
        l->memset_value = 0;
        return kopt__get_number(w, o, "value", 0, &l->memset_value);
    }
    if ((rc = kopt__check_keys(w, o, launch_keys)) != KOPT_OK ||
        (rc = kopt__get_str(w, o, "kernel", 1, &l->kernel)) != KOPT_OK ||
        (rc = parse_dims(w, o, "grid", 1, l->grid, &l->ngrid, 3)) != KOPT_OK ||
        (rc = parse_dims(w, o, "block", 1, l->block, &l->nblock, 3)) != KOPT_OK)
        return rc;
    if ((smem = json_object_get(o, "smem"))) {
        saved = kopt__push(w, "smem");
        rc = kopt__get_expr_value(w, smem, &l->smem);
        kopt__pop(w, saved);
        if (rc != KOPT_OK)
            return rc;
    }
    args = json_object_get(o, "args");
    saved = kopt__push(w, "args");
    if (!args) {
        rc = kopt__bad(w, "missing (required; use [] for a kernel without parameters)");
        goto done;
    }
    if (!json_is_array(args)) {
        rc = kopt__bad(w, "expected an array");
        goto done;
    }
    l->args = calloc(json_array_size(args) + 1, sizeof(*l->args));
    if (!l->args) {
        rc = kopt_seterr(w->ctx, KOPT_E_NOMEM, "args");
        goto done;
    }
    json_array_foreach(args, i, v) {
        size_t s2 = kopt__push_index(w, (int)i);
        rc = parse_arg(w, v, &l->args[i]);
        kopt__pop(w, s2);
        if (rc != KOPT_OK)
            goto done;
        l->nargs++;
    }
    rc = KOPT_OK;
done:
    kopt__pop(w, saved);
    return rc;
}

kopt_status kopt__parse_plan(kopt_where *w, json_t *arr, kopt_plan *plan)
{
    json_t *v;
    size_t i;
    kopt_status rc = KOPT_OK;

    if (!json_is_array(arr) || json_array_size(arr) == 0)
        return kopt__bad(w, "expected a non-empty array of launch steps");
    plan->steps = calloc(json_array_size(arr), sizeof(*plan->steps));
    if (!plan->steps)
        return kopt_seterr(w->ctx, KOPT_E_NOMEM, "plan");
    json_array_foreach(arr, i, v) {
        size_t saved = kopt__push_index(w, (int)i);
        plan->n++;
        rc = parse_step(w, v, &plan->steps[i]);
        kopt__pop(w, saved);
        if (rc != KOPT_OK)
            return rc;
    }
    return KOPT_OK;
}

static kopt_status parse_init(kopt_where *w, json_t *o, kopt_init *init)
{
    static const char *const keys[] = {"dist", "mean", "std", "low", "high", NULL};
    char *dist = NULL;
    kopt_status rc;

    if (!json_is_object(o))
        return kopt__bad(w, "expected an object like {\"dist\": \"normal\", \"mean\": 0, "
                            "\"std\": 1}");
    if ((rc = kopt__check_keys(w, o, keys)) != KOPT_OK ||
        (rc = kopt__get_str(w, o, "dist", 1, &dist)) != KOPT_OK)
        return rc;
    if (strcmp(dist, "normal") == 0) {
        init->dist = KOPT_DIST_NORMAL;
        init->a = 0;
        init->b = 1;
        if ((rc = kopt__get_number(w, o, "mean", 0, &init->a)) == KOPT_OK &&
            (rc = kopt__get_number(w, o, "std", 0, &init->b)) == KOPT_OK && init->b <= 0)
            rc = kopt__bad(w, "std must be > 0");
    } else if (strcmp(dist, "uniform") == 0 || strcmp(dist, "int") == 0) {
        init->dist = dist[0] == 'u' ? KOPT_DIST_UNIFORM : KOPT_DIST_INT;
        if ((rc = kopt__get_number(w, o, "low", 1, &init->a)) == KOPT_OK &&
            (rc = kopt__get_number(w, o, "high", 1, &init->b)) == KOPT_OK) {
            if (init->b < init->a)
                rc = kopt__bad(w, "high (%g) is below low (%g)", init->b, init->a);
            else if (init->dist == KOPT_DIST_INT &&
                     (init->a != floor(init->a) || init->b != floor(init->b)))
                rc = kopt__bad(w, "low and high of an int distribution must be integers");
        }
    } else {
        rc = kopt__bad(w, "unknown dist '%s' (expected normal, uniform, int)", dist);
    }
    free(dist);
    return rc;
}

kopt_status kopt__parse_tensor(kopt_where *w, json_t *o, kopt_tensor_spec *t, int scratch_only)
{
    static const char *const keys[] = {"name", "dtype", "shape", "role", "init", "tolerance",
                                       "pytorch", NULL};
    static const char *const tol_keys[] = {"atol", "rtol", NULL};
    char *dtype = NULL, *role = NULL;
    json_t *shape, *v;
    size_t i, saved;
    kopt_status rc;

    if (!json_is_object(o))
        return kopt__bad(w, "expected an object with name, dtype, shape, role");
    if ((rc = kopt__check_keys(w, o, keys)) != KOPT_OK ||
        (rc = kopt__get_str(w, o, "name", 1, &t->name)) != KOPT_OK ||
        (rc = kopt__get_str(w, o, "dtype", 1, &dtype)) != KOPT_OK ||
        (rc = kopt__get_str(w, o, "role", !scratch_only, &role)) != KOPT_OK ||
        (rc = kopt__get_str(w, o, "pytorch", 0, &t->pytorch)) != KOPT_OK)
        goto cleanup;
    saved = kopt__push(w, "name");
    if (!kopt__is_ident(t->name))
        rc = kopt__bad(w, "'%s' is not a C identifier", t->name);
    kopt__pop(w, saved);
    if (rc != KOPT_OK)
        goto cleanup;
    saved = kopt__push(w, "dtype");
    if (kopt_dtype_from_name(dtype, &t->dtype) != 0)
        rc = kopt__bad(w, "unknown dtype '%s' (expected f32, f16, bf16, f64, i32, i64)", dtype);
    kopt__pop(w, saved);
    if (rc != KOPT_OK)
        goto cleanup;
    t->role = KOPT_ROLE_SCRATCH;
    if (role) {
        saved = kopt__push(w, "role");
        if (strcmp(role, "input") == 0) t->role = KOPT_ROLE_INPUT;
        else if (strcmp(role, "output") == 0) t->role = KOPT_ROLE_OUTPUT;
        else if (strcmp(role, "inout") == 0 || strcmp(role, "input-output") == 0)
            t->role = KOPT_ROLE_INOUT;
        else if (strcmp(role, "scratch") == 0) t->role = KOPT_ROLE_SCRATCH;
        else
            rc = kopt__bad(w, "unknown role '%s' (expected input, output, inout, scratch)", role);
        if (rc == KOPT_OK && scratch_only && t->role != KOPT_ROLE_SCRATCH)
            rc = kopt__bad(w, "a candidate's extra buffers can only be scratch");
        kopt__pop(w, saved);
        if (rc != KOPT_OK)
            goto cleanup;
    }
    shape = json_object_get(o, "shape");
    saved = kopt__push(w, "shape");
    if (!shape) {
        rc = kopt__bad(w, "missing (required; [] for a single element)");
    } else if (!json_is_array(shape) || json_array_size(shape) > KOPT_MAX_DIMS) {
        rc = kopt__bad(w, "expected an array of at most %d expressions", KOPT_MAX_DIMS);
    } else {
        json_array_foreach(shape, i, v) {
            size_t s2 = kopt__push_index(w, (int)i);
            rc = kopt__get_expr_value(w, v, &t->shape[i]);
            kopt__pop(w, s2);
            if (rc != KOPT_OK)
                break;
            t->ndim++;
        }
    }
    kopt__pop(w, saved);
    if (rc != KOPT_OK)
        goto cleanup;
    if (kopt_dtype_is_float(t->dtype)) {
        t->init.dist = KOPT_DIST_NORMAL;
        t->init.a = 0;
        t->init.b = 1;
    } else {
        t->init.dist = KOPT_DIST_INT;
        t->init.a = -100;
        t->init.b = 100;
    }
    if ((v = json_object_get(o, "init"))) {
        saved = kopt__push(w, "init");
        if (t->role == KOPT_ROLE_OUTPUT || t->role == KOPT_ROLE_SCRATCH)
            rc = kopt__bad(w, "only input and inout tensors are initialized (this one is %s)",
                           kopt_role_name(t->role));
        else
            rc = parse_init(w, v, &t->init);
        if (rc == KOPT_OK && !kopt_dtype_is_float(t->dtype) && t->init.dist != KOPT_DIST_INT)
            rc = kopt__bad(w, "an integer tensor needs {\"dist\": \"int\", ...}");
        kopt__pop(w, saved);
        if (rc != KOPT_OK)
            goto cleanup;
    }
    if ((v = json_object_get(o, "tolerance"))) {
        saved = kopt__push(w, "tolerance");
        t->has_tol = 1;
        t->atol = t->rtol = kopt_dtype_default_tol(t->dtype);
        if (!json_is_object(v))
            rc = kopt__bad(w, "expected {\"atol\": x, \"rtol\": y}");
        else if ((rc = kopt__check_keys(w, v, tol_keys)) == KOPT_OK &&
                 (rc = kopt__get_number(w, v, "atol", 0, &t->atol)) == KOPT_OK &&
                 (rc = kopt__get_number(w, v, "rtol", 0, &t->rtol)) == KOPT_OK &&
                 (t->atol < 0 || t->rtol < 0))
            rc = kopt__bad(w, "atol and rtol must be >= 0");
        kopt__pop(w, saved);
    }
cleanup:
    free(dtype);
    free(role);
    return rc;
}

kopt_status kopt__load_json(kopt_ctx *ctx, const char *text, const char *file, json_t **out)
{
    json_error_t err;

    *out = json_loads(text, JSON_REJECT_DUPLICATES, &err);
    if (!*out)
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s:%d:%d: invalid JSON: %s", file, err.line,
                           err.column, err.text);
    if (!json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s: expected a JSON object at the top", file);
    }
    return KOPT_OK;
}

void kopt__strv_free(int n, char **v)
{
    for (int i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

void kopt__tensor_free(kopt_tensor_spec *t)
{
    free(t->name);
    free(t->pytorch);
    for (int i = 0; i < KOPT_MAX_DIMS; i++)
        free(t->shape[i]);
}

void kopt__plan_free(kopt_plan *plan)
{
    for (int i = 0; i < plan->n; i++) {
        kopt_launch *l = &plan->steps[i];
        free(l->kernel);
        for (int d = 0; d < 3; d++) {
            free(l->grid[d]);
            free(l->block[d]);
        }
        free(l->smem);
        for (int a = 0; a < l->nargs; a++)
            free(l->args[a].text);
        free(l->args);
        free(l->memset_tensor);
    }
    free(plan->steps);
    plan->steps = NULL;
    plan->n = 0;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

kopt_status kopt__plan_copy(kopt_plan *dst, const kopt_plan *src)
{
    dst->steps = calloc((size_t)src->n + 1, sizeof(*dst->steps));
    if (!dst->steps)
        return KOPT_E_NOMEM;
    dst->n = src->n;
    for (int i = 0; i < src->n; i++) {
        const kopt_launch *s = &src->steps[i];
        kopt_launch *d = &dst->steps[i];
        *d = *s;
        d->kernel = dup_or_null(s->kernel);
        for (int k = 0; k < 3; k++) {
            d->grid[k] = dup_or_null(s->grid[k]);
            d->block[k] = dup_or_null(s->block[k]);
        }
        d->smem = dup_or_null(s->smem);
        d->memset_tensor = dup_or_null(s->memset_tensor);
        d->args = calloc((size_t)s->nargs + 1, sizeof(*d->args));
        if (!d->args)
            return KOPT_E_NOMEM;
        for (int a = 0; a < s->nargs; a++) {
            d->args[a] = s->args[a];
            d->args[a].text = dup_or_null(s->args[a].text);
        }
    }
    return KOPT_OK;
}
