/* The search space of a template candidate: the cross product of its params' values as
 * mixed-radix point ids (never materialized), checked point by point against the
 * template's constraints and the device's limits (threads, shared memory, registers per
 * block). Scans reuse one table of the point's values, so they allocate nothing per point. */
#include "kopt/tune.h"

#include "kopt/device.h"
#include "../problem/parse_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An expression the check evaluates (a part of a constraint, a block dimension, a smem
 * size), with the params it names. When their value combinations are few, its value at
 * each of them is computed once at create time, so a scan looks values up instead of
 * parsing. A constraint "a && b && c" is split into its parts, so that each part, naming
 * fewer params, can have a table. */
#define MEMO_MAX_ENTRIES ((size_t)1 << 16)
typedef struct memo {
    const char *text;          /* NULL: no expression here */
    char *owned;               /* text, when it is a part of a constraint */
    int constraint;            /* the constraint a part belongs to */
    int ndeps;
    int dep[KOPT_TUNE_MAX_PARAMS];     /* params it names */
    uint64_t mul[KOPT_TUNE_MAX_PARAMS];/* entry = sum(idx[dep[k]] * mul[k]) */
    size_t n;                  /* entries; 0: not tabled, evaluate every time */
    int64_t *value;
    unsigned char *ok;         /* 0: evaluation failed there */
} memo;

/* A space as made by kopt_tune_space_create: the public part first, then what the
 * constraints also see but that is not a dimension of the space (the template's fixed
 * params), and the expressions: the constraints' parts in order, then four per launch
 * step (block[0..2], smem). */
typedef struct space_priv {
    kopt_tune_space pub;
    kopt_vars fixed;
    int nparts;
    int nmemos;
    memo *memos;
} space_priv;

static const kopt_vars *fixed_of(const kopt_tune_space *s)
{
    return &((const space_priv *)s)->fixed;
}

static const memo *memo_of(const kopt_tune_space *s, int i)
{
    return &((const space_priv *)s)->memos[i];
}

static int nparts_of(const kopt_tune_space *s)
{
    return ((const space_priv *)s)->nparts;
}

#define MEMO_BLOCK(s, step, d) (nparts_of(s) + 4 * (step) + (d))
#define MEMO_SMEM(s, step) (nparts_of(s) + 4 * (step) + 3)

/* The names and values a point's expressions see: its params, then the sizes, then the
 * template's fixed params. Holds pointers into itself: never copy one after init. */
typedef struct point_env {
    char *names[KOPT_TUNE_MAX_PARAMS];
    int64_t values[KOPT_TUNE_MAX_PARAMS];
    int idx[KOPT_TUNE_MAX_PARAMS];
    kopt_vars vars;
    kopt_env env;
} point_env;

static void point_env_init(point_env *pe, const kopt_tune_space *s)
{
    for (int i = 0; i < s->nparams; i++)
        pe->names[i] = s->params[i].name;
    pe->vars.n = s->nparams;
    pe->vars.names = pe->names;
    pe->vars.values = pe->values;
    pe->env.n = 3;
    pe->env.tables[0] = &pe->vars;
    pe->env.tables[1] = &s->sizes;
    pe->env.tables[2] = fixed_of(s);
}

static void point_env_set(point_env *pe, const kopt_tune_space *s, uint64_t point)
{
    kopt_tune_space_decode(s, point, pe->idx);
    for (int i = 0; i < s->nparams; i++)
        pe->values[i] = s->params[i].values[pe->idx[i]];
}

/* Move to the next point in enumeration order (the last param fastest). */
static void point_env_step(point_env *pe, const kopt_tune_space *s)
{
    for (int i = s->nparams - 1; i >= 0; i--) {
        if (++pe->idx[i] < s->params[i].nvalues) {
            pe->values[i] = s->params[i].values[pe->idx[i]];
            return;
        }
        pe->idx[i] = 0;
        pe->values[i] = s->params[i].values[0];
    }
}

/* Evaluate expression `m` at the point (from its table when it has one); on failure
 * write why (with the evaluator's message), naming it as constraint, or as block[d]
 * (d >= 0) or smem (d == -1) of launch `step`. */
static int eval_at(const kopt_tune_space *s, const point_env *pe, const memo *m, int step,
                   int d, int64_t *v, char *why, size_t whylen)
{
    const char *text = m->text;
    char what[320];
    kopt_ctx *tmp;

    if (m->n) {
        size_t e = 0;
        for (int k = 0; k < m->ndeps; k++)
            e += (size_t)pe->idx[m->dep[k]] * (size_t)m->mul[k];
        if (m->ok[e]) {
            *v = m->value[e];
            return 1;
        }
    } else if (kopt_expr_eval(NULL, text, &pe->env, v) == KOPT_OK) {
        return 1;
    }
    if (why && whylen) {
        /* only now is a context worth making: the message says what went wrong */
        if (step < 0)
            snprintf(what, sizeof(what), "constraint");
        else if (d >= 0)
            snprintf(what, sizeof(what), "launch %d (%s) block[%d]", step,
                     s->plan.steps[step].kernel, d);
        else
            snprintf(what, sizeof(what), "launch %d (%s) smem", step, s->plan.steps[step].kernel);
        tmp = kopt_ctx_new();
        kopt_expr_eval(tmp, text, &pe->env, v);
        snprintf(why, whylen, "%s cannot be evaluated: %s", what,
                 tmp ? kopt_errmsg(tmp) : "out of memory");
        kopt_ctx_free(tmp);
    }
    return 0;
}

#define WHY(...) ((why && whylen) ? (void)snprintf(why, whylen, __VA_ARGS__) : (void)0)

/* 1 when the point in `pe` passes the constraints and the device limits. */
static int check_point(const kopt_tune_space *s, const point_env *pe, char *why, size_t whylen)
{
    const kopt_tune_limits *lim = &s->limits;
    int want_threads = lim->max_threads_per_block > 0 || lim->max_threads_per_sm > 0 ||
                       (lim->regs_per_sm > 0 && lim->min_regs_per_thread > 0);
    int64_t v;

    for (int i = 0; i < nparts_of(s); i++) {
        const memo *m = memo_of(s, i);
        if (!eval_at(s, pe, m, -1, 0, &v, why, whylen))
            return 0;
        if (!v) {
            WHY("constraint '%s' fails", s->constraints[m->constraint]);
            return 0;
        }
    }
    for (int i = 0; i < s->plan.n; i++) {
        const kopt_launch *l = &s->plan.steps[i];
        int64_t threads = 1;
        if (l->is_memset)
            continue;
        for (int d = 0; want_threads && d < l->nblock; d++) {
            if (!eval_at(s, pe, memo_of(s, MEMO_BLOCK(s, i, d)), i, d, &v, why, whylen))
                return 0;
            if (v <= 0 || v > 1 << 20) {
                WHY("launch %d (%s): block[%d] = %lld is out of range", i, l->kernel, d,
                    (long long)v);
                return 0;
            }
            threads *= v;
        }
        if (lim->max_threads_per_block > 0 && threads > lim->max_threads_per_block) {
            WHY("launch %d (%s): %lld threads per block exceed %d", i, l->kernel,
                (long long)threads, lim->max_threads_per_block);
            return 0;
        }
        if (lim->max_threads_per_sm > 0 && threads > lim->max_threads_per_sm) {
            WHY("launch %d (%s): %lld threads per block exceed the %d threads of an SM", i,
                l->kernel, (long long)threads, lim->max_threads_per_sm);
            return 0;
        }
        if (lim->regs_per_sm > 0 && lim->min_regs_per_thread > 0 &&
            threads * lim->min_regs_per_thread > lim->regs_per_sm) {
            WHY("launch %d (%s): %lld threads per block x %d registers exceed the %d registers "
                "of an SM", i, l->kernel, (long long)threads, lim->min_regs_per_thread,
                lim->regs_per_sm);
            return 0;
        }
        if (lim->max_smem_per_block > 0 && l->smem) {
            if (!eval_at(s, pe, memo_of(s, MEMO_SMEM(s, i)), i, -1, &v, why, whylen))
                return 0;
            if (v > lim->max_smem_per_block) {
                WHY("launch %d (%s): %lld bytes of shared memory per block exceed %d", i,
                    l->kernel, (long long)v, lim->max_smem_per_block);
                return 0;
            }
        }
    }
    if (why && whylen)
        why[0] = '\0';
    return 1;
}

/* ---- create / free ------------------------------------------------------------------- */

void kopt_tune_space_free(kopt_tune_space *s)
{
    space_priv *sp = (space_priv *)s;

    if (!s)
        return;
    for (int i = 0; s->params && i < s->nparams; i++) {
        free(s->params[i].name);
        free(s->params[i].values);
    }
    free(s->params);
    kopt__strv_free(s->nconstraints, s->constraints);
    kopt_vars_free(&s->sizes);
    kopt__plan_free(&s->plan);
    kopt_vars_free(&sp->fixed);
    for (int i = 0; i < sp->nmemos; i++) {
        free(sp->memos[i].owned);
        free(sp->memos[i].value);
        free(sp->memos[i].ok);
    }
    free(sp->memos);
    free(sp);
}

/* Which params `m` names (checking it with each param left out in turn), and its table
 * when the combinations of their values are few enough. */
static kopt_status memo_build(const kopt_tune_space *s, memo *m)
{
    point_env pe;
    kopt_vars without = KOPT_VARS_INIT;
    kopt_env env;
    size_t n = 1;

    if (!m->text)
        return KOPT_OK;
    point_env_init(&pe, s);
    point_env_set(&pe, s, 0);
    env = pe.env;
    env.tables[0] = &without;
    for (int i = 0; i < s->nparams; i++) {
        without.n = 0;
        for (int j = 0; j < s->nparams; j++)
            if (j != i) {
                pe.names[without.n] = s->params[j].name;
                pe.values[without.n++] = s->params[j].values[0];
            }
        without.names = pe.names;
        without.values = pe.values;
        if (kopt_expr_check(NULL, m->text, &env) != KOPT_OK)
            m->dep[m->ndeps++] = i;
    }
    point_env_init(&pe, s);
    point_env_set(&pe, s, 0);
    for (int k = m->ndeps - 1; k >= 0; k--) {
        size_t nv = (size_t)s->params[m->dep[k]].nvalues;
        m->mul[k] = n;
        if (n > MEMO_MAX_ENTRIES / nv)
            return KOPT_OK;              /* too many: evaluate at every point */
        n *= nv;
    }
    m->value = malloc(n * sizeof(*m->value));
    m->ok = malloc(n);
    if (!m->value || !m->ok)
        return KOPT_E_NOMEM;
    for (size_t e = 0; e < n; e++) {
        for (int k = 0; k < m->ndeps; k++) {
            int d = m->dep[k];
            pe.idx[d] = (int)((e / m->mul[k]) % (size_t)s->params[d].nvalues);
            pe.values[d] = s->params[d].values[pe.idx[d]];
        }
        m->ok[e] = kopt_expr_eval(NULL, m->text, &pe.env, &m->value[e]) == KOPT_OK;
    }
    m->n = n;
    return KOPT_OK;
}

/* Where `text` splits into top-level "&&" parts: writes the parts' start offsets and
 * lengths and returns how many (1: no split). Only an and-chain splits: with a top-level
 * "||" or "?:" the text stays whole. Arithmetic errors in a part behind a false one make
 * the point invalid either way, so the split never changes which points are valid. */
static int split_and(const char *text, size_t *start, size_t *len, int max)
{
    int depth = 0, n = 0;
    size_t from = 0, i;

    for (i = 0; text[i]; i++) {
        char ch = text[i];
        if (ch == '(')
            depth++;
        else if (ch == ')')
            depth--;
        else if (depth == 0 && (ch == '?' || (ch == '|' && text[i + 1] == '|')))
            return 1;
        else if (depth == 0 && ch == '&' && text[i + 1] == '&') {
            if (n + 1 >= max)
                return 1;
            start[n] = from;
            len[n++] = i - from;
            from = i + 2;
            i++;
        }
    }
    start[n] = from;
    len[n++] = i - from;
    return n;
}

static kopt_status memos_build(space_priv *sp)
{
    kopt_tune_space *s = &sp->pub;
    size_t start[64], len[64];
    int total = 0, m = 0;

    for (int i = 0; i < s->nconstraints; i++)
        total += split_and(s->constraints[i], start, len, 64);
    sp->nparts = total;
    sp->nmemos = total + 4 * s->plan.n;
    if (!(sp->memos = calloc((size_t)sp->nmemos + 1, sizeof(*sp->memos))))
        return KOPT_E_NOMEM;
    for (int i = 0; i < s->nconstraints; i++) {
        int n = split_and(s->constraints[i], start, len, 64);
        for (int k = 0; k < n; k++, m++) {
            sp->memos[m].constraint = i;
            if (n == 1) {
                sp->memos[m].text = s->constraints[i];
                continue;
            }
            if (!(sp->memos[m].owned = strndup(s->constraints[i] + start[k], len[k])))
                return KOPT_E_NOMEM;
            sp->memos[m].text = sp->memos[m].owned;
        }
    }
    for (int i = 0; i < s->plan.n; i++) {
        const kopt_launch *l = &s->plan.steps[i];
        if (l->is_memset)
            continue;
        for (int d = 0; d < l->nblock; d++)
            sp->memos[MEMO_BLOCK(s, i, d)].text = l->block[d];
        sp->memos[MEMO_SMEM(s, i)].text = l->smem;
    }
    for (int i = 0; i < sp->nmemos; i++)
        if (memo_build(s, &sp->memos[i]) != KOPT_OK)
            return KOPT_E_NOMEM;
    return KOPT_OK;
}

/* Every constraint and every launch's block and smem must parse and name only params,
 * sizes and fixed params (any value will do for the check). */
static kopt_status check_names(kopt_ctx *ctx, const kopt_tune_space *s, const char *path)
{
    point_env pe;
    kopt_status rc;

    point_env_init(&pe, s);
    point_env_set(&pe, s, 0);
    for (int i = 0; i < s->nconstraints; i++)
        if ((rc = kopt_expr_check(ctx, s->constraints[i], &pe.env)) != KOPT_OK)
            return kopt_adderr(ctx, KOPT_E_INVALID, "%s: constraints[%d] '%s'", path, i,
                               s->constraints[i]);
    for (int i = 0; i < s->plan.n; i++) {
        const kopt_launch *l = &s->plan.steps[i];
        if (l->is_memset)
            continue;
        for (int d = 0; d < l->nblock; d++)
            if ((rc = kopt_expr_check(ctx, l->block[d], &pe.env)) != KOPT_OK)
                return kopt_adderr(ctx, KOPT_E_INVALID, "%s: launches[%d].block[%d]", path, i,
                                   d);
        if (l->smem && (rc = kopt_expr_check(ctx, l->smem, &pe.env)) != KOPT_OK)
            return kopt_adderr(ctx, KOPT_E_INVALID, "%s: launches[%d].smem", path, i);
    }
    return KOPT_OK;
}

kopt_status kopt_tune_space_create(kopt_tune_space **out, kopt_ctx *ctx,
                                   const kopt_candidate *tmpl, const kopt_vars *sizes,
                                   const kopt_tune_limits *limits)
{
    space_priv *sp = NULL;
    kopt_tune_space *s;
    const uint64_t max_points = (uint64_t)1 << 62;
    kopt_status rc = KOPT_OK;

    *out = NULL;
    if (!tmpl || tmpl->ntemplate_params == 0)
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s is not a template: none of its params has "
                           "several values", tmpl ? tmpl->path : "(null)");
    if (tmpl->ntemplate_params > KOPT_TUNE_MAX_PARAMS)
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s: %d template params, at most %d can be "
                           "tuned", tmpl->path, tmpl->ntemplate_params, KOPT_TUNE_MAX_PARAMS);
    if (!(sp = calloc(1, sizeof(*sp))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "space");
    s = &sp->pub;
    if (!(s->params = calloc((size_t)tmpl->ntemplate_params, sizeof(*s->params))))
        goto nomem;
    s->npoints = 1;
    for (int i = 0; i < tmpl->ntemplate_params; i++) {
        const kopt_param_spec *p = &tmpl->template_params[i];
        kopt_param_spec *d = &s->params[s->nparams++];
        *d = *p;
        d->name = strdup(p->name);
        d->values = malloc((size_t)p->nvalues * sizeof(*d->values));
        if (!d->name || !d->values)
            goto nomem;
        memcpy(d->values, p->values, (size_t)p->nvalues * sizeof(*d->values));
        if (s->npoints >= (max_points + (uint64_t)p->nvalues - 1) / (uint64_t)p->nvalues) {
            rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s: the space has 2^62 points or more (at "
                             "param '%s'): narrow the params", tmpl->path, p->name);
            goto fail;
        }
        s->npoints *= (uint64_t)p->nvalues;
    }
    s->radix[s->nparams - 1] = 1;
    for (int i = s->nparams - 2; i >= 0; i--)
        s->radix[i] = s->radix[i + 1] * (uint64_t)s->params[i + 1].nvalues;
    if (tmpl->nconstraints &&
        !(s->constraints = calloc((size_t)tmpl->nconstraints + 1, sizeof(char *))))
        goto nomem;
    for (int i = 0; i < tmpl->nconstraints; i++, s->nconstraints++)
        if (!(s->constraints[i] = strdup(tmpl->constraints[i])))
            goto nomem;
    if (kopt_vars_copy(&s->sizes, sizes) != KOPT_OK ||
        kopt_vars_copy(&sp->fixed, &tmpl->params) != KOPT_OK ||
        kopt__plan_copy(&s->plan, &tmpl->plan) != KOPT_OK)
        goto nomem;
    if (limits)
        s->limits = *limits;
    if ((rc = check_names(ctx, s, tmpl->path)) != KOPT_OK)
        goto fail;
    if (memos_build(sp) != KOPT_OK)
        goto nomem;
    *out = s;
    return KOPT_OK;
nomem:
    rc = kopt_seterr(ctx, KOPT_E_NOMEM, "space");
fail:
    kopt_tune_space_free(&sp->pub);
    return rc;
}

void kopt_tune_limits_from_device(kopt_tune_limits *out, const kopt_device_info *dev)
{
    memset(out, 0, sizeof(*out));
    out->min_regs_per_thread = 16;
    if (!dev)
        return;
    out->max_threads_per_block = dev->max_threads_per_block;
    out->max_smem_per_block = dev->max_smem_per_block_optin;
    out->regs_per_sm = dev->regs_per_sm;
    out->max_threads_per_sm = dev->max_threads_per_sm;
}

/* ---- points ---------------------------------------------------------------------------- */

void kopt_tune_space_decode(const kopt_tune_space *s, uint64_t point, int *idx)
{
    for (int i = 0; i < s->nparams; i++)
        idx[i] = (int)((point / s->radix[i]) % (uint64_t)s->params[i].nvalues);
}

uint64_t kopt_tune_space_encode(const kopt_tune_space *s, const int *idx)
{
    uint64_t p = 0;
    for (int i = 0; i < s->nparams; i++)
        p += (uint64_t)idx[i] * s->radix[i];
    return p;
}

kopt_status kopt_tune_space_values(const kopt_tune_space *s, uint64_t point, kopt_vars *out)
{
    int idx[KOPT_TUNE_MAX_PARAMS];

    kopt_vars_free(out);
    kopt_tune_space_decode(s, point, idx);
    for (int i = 0; i < s->nparams; i++)
        if (kopt_vars_set(out, s->params[i].name, s->params[i].values[idx[i]]) != KOPT_OK)
            return KOPT_E_NOMEM;
    return KOPT_OK;
}

kopt_status kopt_tune_space_find(const kopt_tune_space *s, kopt_ctx *ctx, const kopt_vars *vals,
                                 uint64_t *point)
{
    int idx[KOPT_TUNE_MAX_PARAMS];

    for (int i = 0; i < s->nparams; i++) {
        const kopt_param_spec *p = &s->params[i];
        int k = kopt_vars_find(vals, p->name);
        if (k < 0)
            return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "no value for param '%s'", p->name);
        idx[i] = -1;
        for (int v = 0; v < p->nvalues && idx[i] < 0; v++)
            if (p->values[v] == vals->values[k])
                idx[i] = v;
        if (idx[i] < 0)
            return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "param '%s': %lld is not one of its values",
                               p->name, (long long)vals->values[k]);
    }
    *point = kopt_tune_space_encode(s, idx);
    return KOPT_OK;
}

char *kopt_tune_space_label(const kopt_tune_space *s, uint64_t point)
{
    kopt_buf b = KOPT_BUF_INIT;
    int idx[KOPT_TUNE_MAX_PARAMS];

    kopt_tune_space_decode(s, point, idx);
    for (int i = 0; i < s->nparams; i++)
        if (kopt_buf_printf(&b, "%s%s=%lld", i ? "," : "", s->params[i].name,
                            (long long)s->params[i].values[idx[i]]) != 0) {
            kopt_buf_free(&b);
            return NULL;
        }
    return b.ptr ? kopt_buf_detach(&b) : strdup("");
}

/* ---- validity and enumeration ------------------------------------------------------------ */

int kopt_tune_space_valid(const kopt_tune_space *s, uint64_t point, char *why, size_t whylen)
{
    point_env pe;

    if (point >= s->npoints) {
        WHY("point %llu is outside the space (%llu points)", (unsigned long long)point,
            (unsigned long long)s->npoints);
        return 0;
    }
    point_env_init(&pe, s);
    point_env_set(&pe, s, point);
    return check_point(s, &pe, why, whylen);
}

/* The first valid point in [from, to), or -1. */
static int scan(const kopt_tune_space *s, uint64_t from, uint64_t to, uint64_t *out)
{
    point_env pe;

    if (from >= to)
        return -1;
    point_env_init(&pe, s);
    point_env_set(&pe, s, from);
    for (uint64_t p = from; p < to; p++, point_env_step(&pe, s))
        if (check_point(s, &pe, NULL, 0)) {
            *out = p;
            return 0;
        }
    return -1;
}

int kopt_tune_space_next_valid(const kopt_tune_space *s, uint64_t from, uint64_t *out)
{
    if (s->npoints == 0)
        return -1;
    from %= s->npoints;
    if (scan(s, from, s->npoints, out) == 0)
        return 0;
    return scan(s, 0, from, out);
}

int kopt_tune_space_random_valid(const kopt_tune_space *s, kopt_rng *rng, uint64_t *out)
{
    if (s->npoints == 0)
        return -1;
    for (int i = 0; i < 64; i++) {
        uint64_t p = kopt_rng_below(rng, s->npoints);
        if (kopt_tune_space_valid(s, p, NULL, 0)) {
            *out = p;
            return 0;
        }
    }
    return kopt_tune_space_next_valid(s, kopt_rng_below(rng, s->npoints), out);
}

uint64_t kopt_tune_space_count_valid(const kopt_tune_space *s, uint64_t limit, int *exact)
{
    uint64_t n = s->npoints, count = 0;
    point_env pe;

    if (limit && limit < n)
        n = limit;
    if (exact)
        *exact = n == s->npoints;
    if (n == 0)
        return 0;
    point_env_init(&pe, s);
    point_env_set(&pe, s, 0);
    for (uint64_t p = 0; p < n; p++, point_env_step(&pe, s))
        count += (uint64_t)check_point(s, &pe, NULL, 0);
    return count;
}

int kopt_tune_space_neighbors(const kopt_tune_space *s, uint64_t point, uint64_t *out, int max)
{
    int idx[KOPT_TUNE_MAX_PARAMS], n = 0;

    if (point >= s->npoints)
        return 0;
    kopt_tune_space_decode(s, point, idx);
    for (int i = 0; i < s->nparams && n < max; i++)
        for (int dir = -1; dir <= 1 && n < max; dir += 2) {
            int j = idx[i] + dir;
            uint64_t q;
            if (j < 0 || j >= s->params[i].nvalues)
                continue;
            q = point + (uint64_t)((int64_t)dir * (int64_t)s->radix[i]);
            if (kopt_tune_space_valid(s, q, NULL, 0))
                out[n++] = q;
        }
    return n;
}

void kopt_tune_space_summarize(const kopt_tune_space *s, uint64_t scan_limit,
                               kopt_tune_space_summary *sum)
{
    uint64_t limit = s->npoints < scan_limit ? s->npoints : scan_limit;

    memset(sum, 0, sizeof(*sum));
    for (uint64_t p = 0; p < limit; p++) {
        char why[160];
        int k;
        why[0] = '\0';
        if (kopt_tune_space_valid(s, p, why, sizeof(why))) {
            sum->valid++;
            continue;
        }
        for (k = 0; k < sum->nreasons; k++)
            if (strcmp(sum->reasons[k].text, why) == 0)
                break;
        if (k == sum->nreasons) {
            if (k == (int)(sizeof(sum->reasons) / sizeof(sum->reasons[0]))) {
                sum->other_reasons++;
                continue;
            }
            snprintf(sum->reasons[k].text, sizeof(sum->reasons[k].text), "%s", why);
            sum->nreasons++;
        }
        sum->reasons[k].n++;
    }
    sum->scanned = limit;
    sum->exact = limit == s->npoints;
    for (int i = 1; i < sum->nreasons; i++)   /* most frequent first (insertion sort) */
        for (int j = i; j > 0 && sum->reasons[j].n > sum->reasons[j - 1].n; j--) {
            kopt_tune_space_reason t = sum->reasons[j];
            sum->reasons[j] = sum->reasons[j - 1];
            sum->reasons[j - 1] = t;
        }
}
