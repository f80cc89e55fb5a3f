/* Read a profile back from the JSON kopt writes: the "metrics" array of `kopt profile --json`
 * (one object per profiled kernel: kernel, grid, block, metrics) or that whole report, so a
 * recorded CUPTI profile can be analyzed again without a GPU. */
#include "kopt/profile.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "grid": [x, y, z], three integers >= 0. */
static kopt_status read_dim(kopt_ctx *ctx, const char *path, int k, json_t *obj,
                            const char *field, int out[3])
{
    json_t *a = json_object_get(obj, field);

    if (!json_is_array(a) || json_array_size(a) != 3)
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s: metrics[%d].%s: expected an array of 3 "
                           "integers", path, k, field);
    for (int d = 0; d < 3; d++) {
        json_t *v = json_array_get(a, (size_t)d);
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > 0x7fffffff)
            return kopt_seterr(ctx, KOPT_E_INVALID, "%s: metrics[%d].%s[%d]: expected an "
                               "integer from 0 to 2^31-1", path, k, field, d);
        out[d] = (int)json_integer_value(v);
    }
    return KOPT_OK;
}

static kopt_status read_kernel(kopt_ctx *ctx, const char *path, int k, json_t *obj,
                               kopt_kernel_profile *kp)
{
    json_t *name = json_object_get(obj, "kernel"), *ms = json_object_get(obj, "metrics");
    json_t *dyn = json_object_get(obj, "dyn_smem"), *v;
    const char *key;
    kopt_status rc;

    if (!json_is_object(obj))
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s: metrics[%d]: expected an object", path, k);
    if (!json_is_string(name) || strlen(json_string_value(name)) >= sizeof(kp->kernel))
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s: metrics[%d].kernel: expected a string "
                           "of at most %zu bytes", path, k, sizeof(kp->kernel) - 1);
    snprintf(kp->kernel, sizeof(kp->kernel), "%s", json_string_value(name));
    if ((rc = read_dim(ctx, path, k, obj, "grid", kp->grid)) != KOPT_OK ||
        (rc = read_dim(ctx, path, k, obj, "block", kp->block)) != KOPT_OK)
        return rc;
    if (dyn && (!json_is_integer(dyn) || json_integer_value(dyn) < 0 ||
                json_integer_value(dyn) > 0x7fffffff))
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s: metrics[%d].dyn_smem: expected an "
                           "integer >= 0", path, k);
    kp->dyn_smem = dyn ? (int)json_integer_value(dyn) : 0;
    if (!json_is_object(ms))
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s: metrics[%d].metrics: expected an object "
                           "of metric name -> number", path, k);
    json_object_foreach(ms, key, v) {
        if (!json_is_number(v))
            return kopt_seterr(ctx, KOPT_E_INVALID, "%s: metrics[%d].metrics.%s: expected a "
                               "number", path, k, key);
        if (kopt_metrics_set(&kp->metrics, key, json_number_value(v)) != KOPT_OK)
            return kopt_seterr(ctx, KOPT_E_NOMEM, "%s: metrics[%d]: out of memory", path, k);
    }
    return KOPT_OK;
}

kopt_status kopt_profile_from_json(kopt_profile **out, kopt_ctx *ctx, const char *text,
                                   const char *path)
{
    json_error_t err;
    json_t *root = NULL, *arr;
    kopt_profile *p = NULL;
    kopt_status rc = KOPT_OK;
    int n;

    *out = NULL;
    if (!path)
        path = "(profile JSON)";
    if (!text) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s: no text", path);
        goto done;
    }
    if (!(root = json_loads(text, 0, &err))) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s:%d:%d: %s", path, err.line, err.column,
                         err.text);
        goto done;
    }
    arr = json_is_object(root) ? json_object_get(root, "metrics") : root;
    if (!json_is_array(arr)) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s: expected the \"metrics\" array of kopt "
                         "profile --json (or the whole report holding it)", path);
        goto done;
    }
    n = (int)json_array_size(arr);
    if (n == 0) {
        rc = kopt_seterr(ctx, KOPT_E_NOT_FOUND, "%s: no profiled kernel in \"metrics\"", path);
        goto done;
    }
    if (!(p = calloc(1, sizeof(*p))) || !(p->kernels = calloc((size_t)n, sizeof(*p->kernels)))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "%s: out of memory", path);
        goto done;
    }
    snprintf(p->source, sizeof(p->source), "fixture");
    for (int k = 0; k < n; k++) {
        p->nkernels = k + 1;   /* what is filled so far is freed on error */
        if ((rc = read_kernel(ctx, path, k, json_array_get(arr, (size_t)k), &p->kernels[k])) !=
            KOPT_OK)
            goto done;
    }
    *out = p;
    p = NULL;
done:
    kopt_profile_free(p);
    json_decref(root);
    return rc;
}
