/* Load and validate a problem folder: problem.json and its reference source. */
#include "parse_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void kopt_problem_free(kopt_problem *p)
{
    if (!p)
        return;
    free(p->dir);
    free(p->path);
    free(p->name);
    free(p->description);
    kopt_vars_free(&p->sizes);
    kopt_vars_free(&p->check_sizes);
    for (int i = 0; i < p->ntensors; i++)
        kopt__tensor_free(&p->tensors[i]);
    free(p->tensors);
    free(p->ref_path);
    free(p->ref_source);
    kopt__plan_free(&p->ref_plan);
    kopt__strv_free(p->nref_options, p->ref_options);
    free(p->work_flops);
    free(p->work_bytes);
    free(p);
}

int kopt_problem_find_tensor(const kopt_problem *p, const char *name)
{
    for (int i = 0; i < p->ntensors; i++)
        if (strcmp(p->tensors[i].name, name) == 0)
            return i;
    return -1;
}

static kopt_status parse_tensors(kopt_where *w, kopt_problem *p, json_t *arr)
{
    json_t *v;
    size_t i, saved = kopt__push(w, "tensors");
    kopt_status rc = KOPT_OK;
    int outputs = 0;

    if (!arr) {
        rc = kopt__bad(w, "missing (required)");
        goto done;
    }
    if (!json_is_array(arr) || json_array_size(arr) == 0) {
        rc = kopt__bad(w, "expected a non-empty array of tensors");
        goto done;
    }
    p->tensors = calloc(json_array_size(arr), sizeof(*p->tensors));
    if (!p->tensors) {
        rc = kopt_seterr(w->ctx, KOPT_E_NOMEM, "tensors");
        goto done;
    }
    json_array_foreach(arr, i, v) {
        size_t s2 = kopt__push_index(w, (int)i);
        kopt_tensor_spec *t = &p->tensors[i];
        p->ntensors++;
        rc = kopt__parse_tensor(w, v, t, 0);
        if (rc == KOPT_OK && kopt_problem_find_tensor(p, t->name) != (int)i)
            rc = kopt__bad(w, "duplicate tensor name '%s'", t->name);
        if (rc == KOPT_OK && kopt_vars_find(&p->sizes, t->name) >= 0)
            rc = kopt__bad(w, "tensor name '%s' is also a size name", t->name);
        kopt__pop(w, s2);
        if (rc != KOPT_OK)
            goto done;
        outputs += t->role == KOPT_ROLE_OUTPUT || t->role == KOPT_ROLE_INOUT;
    }
    if (!outputs)
        rc = kopt__bad(w, "no tensor has role output or inout: nothing would be checked");
done:
    kopt__pop(w, saved);
    return rc;
}

/* Every shape evaluates to a non-negative integer under `sizes`. */
static kopt_status check_shapes(kopt_where *w, const kopt_problem *p, const kopt_vars *sizes,
                                const char *which)
{
    kopt_env env = {1, {sizes}};

    for (int i = 0; i < p->ntensors; i++)
        for (int d = 0; d < p->tensors[i].ndim; d++) {
            int64_t v;
            size_t s1 = kopt__push(w, "tensors"), s2 = kopt__push_index(w, i);
            size_t s3 = kopt__push(w, "shape"), s4 = kopt__push_index(w, d);
            kopt_status rc = kopt_expr_eval(w->ctx, p->tensors[i].shape[d], &env, &v);
            if (rc != KOPT_OK)
                rc = kopt__bad(w, "%s", kopt_errmsg(w->ctx));
            else if (v < 0)
                rc = kopt__bad(w, "'%s' is %lld at the %s sizes (must be >= 0)",
                               p->tensors[i].shape[d], (long long)v, which);
            kopt__pop(w, s4);
            kopt__pop(w, s3);
            kopt__pop(w, s2);
            kopt__pop(w, s1);
            if (rc != KOPT_OK)
                return rc;
        }
    return KOPT_OK;
}

/* Names used by launch steps exist; expressions parse and evaluate at the default sizes. */
static kopt_status check_plan(kopt_where *w, const kopt_problem *p, const kopt_plan *plan,
                              const kopt_env *env)
{
    for (int i = 0; i < plan->n; i++) {
        const kopt_launch *l = &plan->steps[i];
        size_t s1 = kopt__push_index(w, i);
        kopt_status rc = KOPT_OK;
        int64_t v;

        if (l->is_memset) {
            if (kopt_problem_find_tensor(p, l->memset_tensor) < 0)
                rc = kopt__bad(w, "memset of unknown tensor '%s'", l->memset_tensor);
        }
        for (int d = 0; rc == KOPT_OK && d < l->ngrid + l->nblock + 1; d++) {
            const char *e = d < l->ngrid ? l->grid[d]
                          : d < l->ngrid + l->nblock ? l->block[d - l->ngrid] : l->smem;
            if (e && kopt_expr_eval(w->ctx, e, env, &v) != KOPT_OK)
                rc = kopt__bad(w, "%s: %s", d < l->ngrid ? "grid"
                                            : d < l->ngrid + l->nblock ? "block" : "smem",
                               kopt_errmsg(w->ctx));
        }
        for (int a = 0; rc == KOPT_OK && a < l->nargs; a++) {
            const kopt_arg *arg = &l->args[a];
            if (!arg->text)
                continue;
            if (arg->kind == KOPT_ARG_INT && kopt_problem_find_tensor(p, arg->text) >= 0)
                continue;
            if (kopt_expr_eval(w->ctx, arg->text, env, &v) != KOPT_OK)
                rc = kopt__bad(w, "args[%d]: '%s' is neither a tensor nor a valid expression "
                                  "(%s)", a, arg->text, kopt_errmsg(w->ctx));
        }
        kopt__pop(w, s1);
        if (rc != KOPT_OK)
            return rc;
    }
    return KOPT_OK;
}

static kopt_status parse_reference(kopt_where *w, kopt_problem *p, json_t *ref)
{
    static const char *const keys[] = {"source", "launches", "options", "mode", NULL};
    static const char *const torch_keys[] = {"pytorch", NULL};
    char *mode = NULL, *src = NULL;
    size_t saved = kopt__push(w, "reference");
    kopt_status rc = KOPT_OK;
    kopt_env env = {1, {&p->sizes}};

    if (!ref) {
        rc = kopt__bad(w, "missing (required: {\"source\": ..., \"launches\": [...]} or "
                       "{\"pytorch\": \"model.py\"})");
        goto done;
    }
    if (!json_is_object(ref)) {
        rc = kopt__bad(w, "expected an object");
        goto done;
    }
    if (json_object_get(ref, "pytorch")) {   /* docs/kernelbench.md */
        if ((rc = kopt__check_keys(w, ref, torch_keys)) != KOPT_OK ||
            (rc = kopt__get_str(w, ref, "pytorch", 1, &src)) != KOPT_OK)
            goto done;
        p->ref_torch = 1;
        p->ref_path = kopt_path_join(p->dir, src);
        if (kopt_file_read(w->ctx, p->ref_path, &p->ref_source, NULL) != KOPT_OK) {
            size_t s2 = kopt__push(w, "pytorch");
            rc = kopt__bad(w, "cannot read the PyTorch reference: %s", kopt_errmsg(w->ctx));
            kopt__pop(w, s2);
            goto done;
        }
        for (int i = 0; i < p->ntensors; i++) {
            const char *f = p->tensors[i].pytorch;
            size_t s2 = kopt__push(w, "pytorch");
            if (!f || !(strncmp(f, "input:", 6) == 0 || strncmp(f, "param:", 6) == 0 ||
                        strncmp(f, "buffer:", 7) == 0 || strncmp(f, "output:", 7) == 0))
                rc = kopt__bad(w, "tensors[%d] ('%s'): a PyTorch reference needs each tensor's "
                               "\"pytorch\" field: \"input:I\", \"param:NAME\", "
                               "\"buffer:NAME\" or \"output:I\"", i, p->tensors[i].name);
            kopt__pop(w, s2);
            if (rc != KOPT_OK)
                goto done;
        }
        goto done;
    }
    if ((rc = kopt__check_keys(w, ref, keys)) != KOPT_OK ||
        (rc = kopt__get_str(w, ref, "source", 1, &src)) != KOPT_OK ||
        (rc = kopt__get_str(w, ref, "mode", 0, &mode)) != KOPT_OK ||
        (rc = kopt__get_str_array(w, ref, "options", &p->nref_options, &p->ref_options)) !=
            KOPT_OK)
        goto done;
    if (mode && strcmp(mode, "host") != 0 && strcmp(mode, "device") != 0) {
        rc = kopt__bad(w, "mode: expected \"device\" or \"host\", got '%s'", mode);
        goto done;
    }
    p->ref_host_mode = mode && strcmp(mode, "host") == 0;
    p->ref_path = kopt_path_join(p->dir, src);
    if (!p->ref_host_mode || json_object_get(ref, "launches")) {
        size_t s2 = kopt__push(w, "launches");
        json_t *l = json_object_get(ref, "launches");
        rc = l ? kopt__parse_plan(w, l, &p->ref_plan) : kopt__bad(w, "missing (required)");
        if (rc == KOPT_OK)
            rc = check_plan(w, p, &p->ref_plan, &env);
        kopt__pop(w, s2);
        if (rc != KOPT_OK)
            goto done;
    }
    if (kopt_file_read(w->ctx, p->ref_path, &p->ref_source, NULL) != KOPT_OK) {
        size_t s2 = kopt__push(w, "source");
        rc = kopt__bad(w, "cannot read the reference source: %s", kopt_errmsg(w->ctx));
        kopt__pop(w, s2);
    }
done:
    kopt__pop(w, saved);
    free(mode);
    free(src);
    return rc;
}

static kopt_status parse_work(kopt_where *w, kopt_problem *p, json_t *work)
{
    static const char *const keys[] = {"flops", "bytes", "compute", NULL};
    kopt_env env = {1, {&p->sizes}};
    size_t saved = kopt__push(w, "work");
    char *compute = NULL;
    kopt_status rc = KOPT_OK;
    int64_t v;

    p->compute = KOPT_COMPUTE_FP32;
    if (!json_is_object(work)) {
        rc = kopt__bad(w, "expected {\"flops\": expr, \"bytes\": expr}");
        goto done;
    }
    if ((rc = kopt__check_keys(w, work, keys)) != KOPT_OK)
        goto done;
    for (int k = 0; k < 2; k++) {
        const char *key = k ? "bytes" : "flops";
        json_t *e = json_object_get(work, key);
        char **dst = k ? &p->work_bytes : &p->work_flops;
        size_t s2;
        if (!e)
            continue;
        s2 = kopt__push(w, key);
        rc = kopt__get_expr_value(w, e, dst);
        if (rc == KOPT_OK && kopt_expr_eval(w->ctx, *dst, &env, &v) != KOPT_OK)
            rc = kopt__bad(w, "%s", kopt_errmsg(w->ctx));
        else if (rc == KOPT_OK && v < 0)
            rc = kopt__bad(w, "is negative (%lld)", (long long)v);
        kopt__pop(w, s2);
        if (rc != KOPT_OK)
            goto done;
    }
    if ((rc = kopt__get_str(w, work, "compute", 0, &compute)) != KOPT_OK || !compute)
        goto done;
    for (int c = 0; c <= KOPT_COMPUTE_COUNT; c++) {
        if (c == KOPT_COMPUTE_COUNT) {
            size_t s2 = kopt__push(w, "compute");
            rc = kopt__bad(w, "unknown '%s' (expected fp32, fp64, fp16, bf16, tf32, fp8, int)",
                           compute);
            kopt__pop(w, s2);
        } else if (strcmp(compute, kopt_compute_name((kopt_compute)c)) == 0) {
            p->compute = (kopt_compute)c;
            break;
        }
    }
done:
    free(compute);
    kopt__pop(w, saved);
    return rc;
}

kopt_status kopt_problem_parse(kopt_problem **out, kopt_ctx *ctx, const char *json_text,
                               const char *path, const char *dir)
{
    static const char *const keys[] = {"name", "description", "sizes", "check_sizes", "tensors",
                                       "reference", "tolerance", "work", "allow_libraries",
                                       "seed", NULL};
    static const char *const tol_keys[] = {"atol", "rtol", NULL};
    kopt_where w = {ctx, path, ""};
    kopt_problem *p = NULL;
    json_t *root = NULL, *v;
    kopt_status rc;
    kopt_hash *h;

    *out = NULL;
    if ((rc = kopt__load_json(ctx, json_text, path, &root)) != KOPT_OK)
        return rc;
    p = calloc(1, sizeof(*p));
    if (!p) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "problem");
        goto cleanup;
    }
    p->dir = strdup(dir);
    p->path = strdup(path);
    p->allow_libraries = 1;
    p->seed = 1234;
    if ((rc = kopt__check_keys(&w, root, keys)) != KOPT_OK ||
        (rc = kopt__get_str(&w, root, "name", 1, &p->name)) != KOPT_OK ||
        (rc = kopt__get_str(&w, root, "description", 0, &p->description)) != KOPT_OK)
        goto cleanup;
    for (const char *c = p->name; *c; c++)
        if (!(*c == '_' || *c == '-' || (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') ||
              (*c >= 'A' && *c <= 'Z')) || !p->name[0]) {
            kopt__push(&w, "name");
            rc = kopt__bad(&w, "'%s': use letters, digits, '_' and '-'", p->name);
            goto cleanup;
        }
    if (!p->name[0]) {
        kopt__push(&w, "name");
        rc = kopt__bad(&w, "empty");
        goto cleanup;
    }
    v = json_object_get(root, "sizes");
    kopt__push(&w, "sizes");
    if (!v) {
        rc = kopt__bad(&w, "missing (required; {} when the problem has no sizes)");
        goto cleanup;
    }
    if ((rc = kopt__parse_vars(&w, v, &p->sizes, 0)) != KOPT_OK)
        goto cleanup;
    kopt__pop(&w, 0);
    if ((v = json_object_get(root, "check_sizes"))) {
        kopt__push(&w, "check_sizes");
        p->has_check_sizes = 1;
        if ((rc = kopt__parse_vars(&w, v, &p->check_sizes, 0)) != KOPT_OK)
            goto cleanup;
        for (int i = 0; i < p->check_sizes.n; i++)
            if (kopt_vars_find(&p->sizes, p->check_sizes.names[i]) < 0) {
                rc = kopt__bad(&w, "'%s' is not one of the problem's sizes",
                               p->check_sizes.names[i]);
                goto cleanup;
            }
        kopt__pop(&w, 0);
    }
    if ((rc = parse_tensors(&w, p, json_object_get(root, "tensors"))) != KOPT_OK ||
        (rc = check_shapes(&w, p, &p->sizes, "default")) != KOPT_OK)
        goto cleanup;
    if (p->has_check_sizes) {
        kopt_vars all = KOPT_VARS_INIT;
        kopt_vars_copy(&all, &p->sizes);
        kopt_vars_copy(&all, &p->check_sizes);
        rc = check_shapes(&w, p, &all, "check");
        kopt_vars_free(&all);
        if (rc != KOPT_OK)
            goto cleanup;
    }
    if ((rc = parse_reference(&w, p, json_object_get(root, "reference"))) != KOPT_OK)
        goto cleanup;
    if ((v = json_object_get(root, "tolerance"))) {
        kopt__push(&w, "tolerance");
        p->has_tol = 1;
        p->atol = p->rtol = 0;
        if (!json_is_object(v)) {
            rc = kopt__bad(&w, "expected {\"atol\": x, \"rtol\": y}");
            goto cleanup;
        }
        if ((rc = kopt__check_keys(&w, v, tol_keys)) != KOPT_OK ||
            (rc = kopt__get_number(&w, v, "atol", 1, &p->atol)) != KOPT_OK ||
            (rc = kopt__get_number(&w, v, "rtol", 1, &p->rtol)) != KOPT_OK)
            goto cleanup;
        if (p->atol < 0 || p->rtol < 0) {
            rc = kopt__bad(&w, "atol and rtol must be >= 0");
            goto cleanup;
        }
        kopt__pop(&w, 0);
    }
    if ((v = json_object_get(root, "work")) && (rc = parse_work(&w, p, v)) != KOPT_OK)
        goto cleanup;
    if ((v = json_object_get(root, "allow_libraries"))) {
        kopt__push(&w, "allow_libraries");
        if (!json_is_boolean(v)) {
            rc = kopt__bad(&w, "expected true or false");
            goto cleanup;
        }
        p->allow_libraries = json_is_true(v);
        kopt__pop(&w, 0);
    }
    if ((v = json_object_get(root, "seed"))) {
        kopt__push(&w, "seed");
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            rc = kopt__bad(&w, "expected a non-negative integer");
            goto cleanup;
        }
        p->seed = (uint64_t)json_integer_value(v);
        kopt__pop(&w, 0);
    }
    h = kopt_hash_new();
    kopt_hash_add_str(h, json_text);
    kopt_hash_add_str(h, p->ref_source);
    kopt_hash_hex(h, p->hash);
    *out = p;
    p = NULL;
cleanup:
    kopt_problem_free(p);
    json_decref(root);
    return rc;
}

double kopt_problem_outputs_rtol(const kopt_problem *p)
{
    double r = 0;

    for (int i = 0; i < p->ntensors; i++) {
        const kopt_tensor_spec *t = &p->tensors[i];
        double v;
        if (t->role != KOPT_ROLE_OUTPUT && t->role != KOPT_ROLE_INOUT)
            continue;
        v = t->has_tol ? t->rtol : p->has_tol ? p->rtol : kopt_dtype_default_tol(t->dtype);
        if (r == 0 || v < r)
            r = v;
    }
    return r;
}

kopt_status kopt_problem_load(kopt_problem **out, kopt_ctx *ctx, const char *dir_or_json)
{
    struct stat st;
    char *path = NULL, *dir = NULL, *text = NULL;
    kopt_status rc;

    *out = NULL;
    if (stat(dir_or_json, &st) != 0)
        return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "%s: no such problem folder or file",
                           dir_or_json);
    if (S_ISDIR(st.st_mode)) {
        dir = strdup(dir_or_json);
        path = kopt_path_join(dir_or_json, "problem.json");
    } else {
        path = strdup(dir_or_json);
        dir = kopt_path_dir(dir_or_json);
    }
    if ((rc = kopt_file_read(ctx, path, &text, NULL)) == KOPT_OK)
        rc = kopt_problem_parse(out, ctx, text, path, dir);
    free(text);
    free(path);
    free(dir);
    return rc;
}
