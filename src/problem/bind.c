/* Binding: evaluate a problem + candidate at one concrete size set (shapes, launch
 * dimensions, arguments, work counts, constraints). The result is plain data that the
 * worker protocol carries. */
#include "parse_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kopt_bound_free(kopt_bound *b)
{
    if (!b)
        return;
    kopt_vars_free(&b->sizes);
    for (int i = 0; i < b->nlaunches; i++)
        free(b->launches[i].args);
    free(b->launches);
    free(b->tensors);
    free(b);
}

kopt_status kopt_sizes_resolve(kopt_vars *out, kopt_ctx *ctx, const kopt_problem *p,
                               const kopt_vars *overrides)
{
    kopt_vars_free(out);
    if (kopt_vars_copy(out, &p->sizes) != KOPT_OK)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "sizes");
    for (int i = 0; overrides && i < overrides->n; i++) {
        if (kopt_vars_find(&p->sizes, overrides->names[i]) < 0)
            return kopt_seterr(ctx, KOPT_E_INVALID, "size '%s' is not one of %s's sizes",
                               overrides->names[i], p->name);
        if (overrides->values[i] < 0)
            return kopt_seterr(ctx, KOPT_E_INVALID, "size %s=%lld must be >= 0",
                               overrides->names[i], (long long)overrides->values[i]);
        kopt_vars_set(out, overrides->names[i], overrides->values[i]);
    }
    return KOPT_OK;
}

static kopt_status bind_tensor(kopt_ctx *ctx, const kopt_tensor_spec *t, const kopt_env *env,
                               const kopt_problem *p, kopt_btensor *bt)
{
    __int128 count = 1;

    snprintf(bt->name, sizeof(bt->name), "%s", t->name);
    bt->dtype = t->dtype;
    bt->role = t->role;
    bt->ndim = t->ndim;
    bt->init = t->init;
    bt->atol = t->has_tol ? t->atol : p->has_tol ? p->atol : kopt_dtype_default_tol(t->dtype);
    bt->rtol = t->has_tol ? t->rtol : p->has_tol ? p->rtol : kopt_dtype_default_tol(t->dtype);
    for (int d = 0; d < t->ndim; d++) {
        if (kopt_expr_eval(ctx, t->shape[d], env, &bt->shape[d]) != KOPT_OK)
            return kopt_adderr(ctx, KOPT_E_INVALID, "tensor %s shape[%d]", t->name, d);
        if (bt->shape[d] < 0)
            return kopt_seterr(ctx, KOPT_E_INVALID, "tensor %s shape[%d] = %lld is negative",
                               t->name, d, (long long)bt->shape[d]);
        count *= bt->shape[d];
        if (count > ((__int128)1 << 40))
            return kopt_seterr(ctx, KOPT_E_INVALID, "tensor %s is too large", t->name);
    }
    bt->count = (int64_t)count;
    bt->bytes = (size_t)bt->count * kopt_dtype_size(t->dtype);
    return KOPT_OK;
}

static int find_bound(const kopt_bound *b, const char *name)
{
    for (int i = 0; i < b->ntensors; i++)
        if (strcmp(b->tensors[i].name, name) == 0)
            return i;
    return -1;
}

static kopt_status bind_launch(kopt_ctx *ctx, const kopt_launch *l, const kopt_env *env,
                               kopt_bound *b, kopt_blaunch *bl, int index)
{
    bl->is_memset = l->is_memset;
    if (l->is_memset) {
        bl->tensor = find_bound(b, l->memset_tensor);
        bl->value = l->memset_value;
        if (bl->tensor < 0)
            return kopt_seterr(ctx, KOPT_E_INVALID, "launch %d: memset of unknown tensor '%s'",
                               index, l->memset_tensor);
        return KOPT_OK;
    }
    snprintf(bl->kernel, sizeof(bl->kernel), "%s", l->kernel);
    for (int d = 0; d < 3; d++) {
        bl->grid[d] = bl->block[d] = 1;
        if (d < l->ngrid && kopt_expr_eval(ctx, l->grid[d], env, &bl->grid[d]) != KOPT_OK)
            return kopt_adderr(ctx, KOPT_E_INVALID, "launch %d (%s) grid[%d]", index, l->kernel, d);
        if (d < l->nblock && kopt_expr_eval(ctx, l->block[d], env, &bl->block[d]) != KOPT_OK)
            return kopt_adderr(ctx, KOPT_E_INVALID, "launch %d (%s) block[%d]", index, l->kernel,
                               d);
    }
    bl->smem = 0;
    if (l->smem && kopt_expr_eval(ctx, l->smem, env, &bl->smem) != KOPT_OK)
        return kopt_adderr(ctx, KOPT_E_INVALID, "launch %d (%s) smem", index, l->kernel);
    /* CUDA's own limits; the device's (shared memory, registers) are checked at launch */
    if (bl->grid[0] < 1 || bl->grid[1] < 1 || bl->grid[2] < 1 || bl->block[0] < 1 ||
        bl->block[1] < 1 || bl->block[2] < 1 || bl->grid[0] > INT32_MAX ||
        bl->grid[1] > 65535 || bl->grid[2] > 65535 ||
        bl->block[0] * bl->block[1] * bl->block[2] > 1024 || bl->block[2] > 64)
        return kopt_seterr(ctx, KOPT_E_INVALID, "launch %d (%s): grid %lldx%lldx%lld, block "
                           "%lldx%lldx%lld is not a valid launch at these sizes (grid >= 1 and "
                           "at most 2^31-1 x 65535 x 65535; block >= 1, at most 1024 threads, "
                           "z at most 64)", index, l->kernel, (long long)bl->grid[0],
                           (long long)bl->grid[1], (long long)bl->grid[2],
                           (long long)bl->block[0], (long long)bl->block[1],
                           (long long)bl->block[2]);
    if (bl->smem < 0 || bl->smem > INT32_MAX)
        return kopt_seterr(ctx, KOPT_E_INVALID, "launch %d (%s): dynamic shared memory %lld bytes "
                           "is out of range", index, l->kernel, (long long)bl->smem);
    bl->args = calloc((size_t)l->nargs + 1, sizeof(*bl->args));
    if (!bl->args)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "args");
    bl->nargs = l->nargs;
    for (int a = 0; a < l->nargs; a++) {
        const kopt_arg *arg = &l->args[a];
        kopt_barg *ba = &bl->args[a];
        ba->kind = arg->kind;
        ba->tensor = -1;
        if (arg->kind == KOPT_ARG_INT && (ba->tensor = find_bound(b, arg->text)) >= 0) {
            ba->kind = KOPT_ARG_TENSOR;
            continue;
        }
        if (!arg->text) {
            ba->fval = arg->number;
            ba->ival = (int64_t)arg->number;
            if (ba->kind == KOPT_ARG_I32 && (arg->number > INT32_MAX || arg->number < INT32_MIN))
                return kopt_seterr(ctx, KOPT_E_INVALID, "launch %d (%s) args[%d] = %.0f does not "
                                   "fit in i32", index, l->kernel, a, arg->number);
            continue;
        }
        if (kopt_expr_eval(ctx, arg->text, env, &ba->ival) != KOPT_OK)
            return kopt_adderr(ctx, KOPT_E_INVALID, "launch %d (%s) args[%d]", index, l->kernel, a);
        ba->fval = (double)ba->ival;
        if (ba->kind == KOPT_ARG_I32 && (ba->ival > INT32_MAX || ba->ival < INT32_MIN))
            return kopt_seterr(ctx, KOPT_E_INVALID, "launch %d (%s) args[%d] = %lld does not fit "
                               "in i32", index, l->kernel, a, (long long)ba->ival);
    }
    return KOPT_OK;
}

kopt_status kopt_bind(kopt_bound **out, kopt_ctx *ctx, const kopt_problem *p,
                      const kopt_candidate *c, const kopt_vars *sizes)
{
    kopt_bound *b = calloc(1, sizeof(*b));
    kopt_env env;
    kopt_status rc = KOPT_OK;
    int n;

    *out = NULL;
    if (!b)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "bound");
    if ((rc = kopt_candidate_check_concrete(ctx, c)) != KOPT_OK)
        return free(b), rc;
    kopt_vars_copy(&b->sizes, sizes);
    env.n = 2;
    env.tables[0] = &b->sizes;
    env.tables[1] = &c->params;
    for (int i = 0; i < c->nconstraints; i++) {
        int64_t v;
        if ((rc = kopt_expr_eval(ctx, c->constraints[i], &env, &v)) != KOPT_OK) {
            kopt_adderr(ctx, rc, "%s: constraint %d", c->path, i);
            goto cleanup;
        }
        if (!v) {
            rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s: constraint '%s' does not hold at these "
                             "sizes", c->path, c->constraints[i]);
            goto cleanup;
        }
    }
    n = p->ntensors + c->nscratch;
    b->tensors = calloc((size_t)n + 1, sizeof(*b->tensors));
    b->launches = calloc((size_t)c->plan.n + 1, sizeof(*b->launches));
    if (!b->tensors || !b->launches) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "bound");
        goto cleanup;
    }
    for (int i = 0; i < n; i++) {
        const kopt_tensor_spec *t = i < p->ntensors ? &p->tensors[i]
                                                    : &c->scratch[i - p->ntensors];
        if ((rc = bind_tensor(ctx, t, &env, p, &b->tensors[i])) != KOPT_OK)
            goto cleanup;
        b->ntensors++;
    }
    for (int i = 0; i < c->plan.n; i++) {
        b->nlaunches++;
        if ((rc = bind_launch(ctx, &c->plan.steps[i], &env, b, &b->launches[i], i)) != KOPT_OK)
            goto cleanup;
    }
    if (p->work_flops || p->work_bytes) {
        int64_t f = 0, by = 0;
        kopt_env senv = {1, {&b->sizes}};
        if ((p->work_flops && (rc = kopt_expr_eval(ctx, p->work_flops, &senv, &f)) != KOPT_OK) ||
            (p->work_bytes && (rc = kopt_expr_eval(ctx, p->work_bytes, &senv, &by)) != KOPT_OK)) {
            kopt_adderr(ctx, rc, "work");
            goto cleanup;
        }
        b->has_work = 1;
        b->flops = (double)f;
        b->bytes = (double)by;
    }
    *out = b;
    b = NULL;
cleanup:
    kopt_bound_free(b);
    return rc;
}
