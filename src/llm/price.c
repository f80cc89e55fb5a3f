/* The price table: USD per million tokens by model-name prefix, built in and extended by a
 * user's JSON file ({"model-prefix": {"input": 2.5, "cached_input": 1.25, "output": 10}}).
 * The built-in prices are list prices at the time of writing: estimates, and said so in
 * docs/llm.md; a user's file overrides them. */
#include "llm_int.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    char *prefix;
    kopt_llm_price price;
} entry;

struct kopt__llm_prices {
    entry *e;
    int n;
};

static const struct {
    const char *prefix;
    double input, cached_input, output;
} builtin[] = {
    {"gpt-4o-mini", 0.15, 0.075, 0.60},
    {"gpt-4o", 2.50, 1.25, 10.00},
    {"gpt-4.1-nano", 0.10, 0.025, 0.40},
    {"gpt-4.1-mini", 0.40, 0.10, 1.60},
    {"gpt-4.1", 2.00, 0.50, 8.00},
    {"gpt-5-nano", 0.05, 0.005, 0.40},
    {"gpt-5-mini", 0.25, 0.025, 2.00},
    {"gpt-5", 1.25, 0.125, 10.00},
    {"o3-mini", 1.10, 0.55, 4.40},
    {"o3", 2.00, 0.50, 8.00},
    {"o4-mini", 1.10, 0.275, 4.40},
    {"claude-opus-4", 15.00, 1.50, 75.00},
    {"claude-sonnet-4", 3.00, 0.30, 15.00},
    {"claude-3-7-sonnet", 3.00, 0.30, 15.00},
    {"claude-3-5-sonnet", 3.00, 0.30, 15.00},
    {"claude-haiku-4", 1.00, 0.10, 5.00},
    {"claude-3-5-haiku", 0.80, 0.08, 4.00},
};

static kopt_status add(kopt__llm_prices *t, kopt_ctx *ctx, const char *prefix,
                       kopt_llm_price p)
{
    entry *e;

    for (int i = 0; i < t->n; i++)
        if (strcmp(t->e[i].prefix, prefix) == 0) {
            t->e[i].price = p;                /* a user's entry overrides the built-in one */
            return KOPT_OK;
        }
    e = realloc(t->e, (size_t)(t->n + 1) * sizeof(*e));
    if (!e)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "price table");
    t->e = e;
    if (!(e[t->n].prefix = strdup(prefix)))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "price table");
    e[t->n++].price = p;
    return KOPT_OK;
}

/* One number of a user's entry: >= 0, or absent (then `dflt`). -1 when invalid. */
static double field(json_t *o, const char *k, double dflt)
{
    json_t *v = json_object_get(o, k);
    if (!v)
        return dflt;
    if (!json_is_number(v) || json_number_value(v) < 0)
        return -1;
    return json_number_value(v);
}

static kopt_status load_file(kopt__llm_prices *t, kopt_ctx *ctx, const char *path)
{
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err), *v;
    const char *k;
    kopt_status rc = KOPT_OK;

    if (!j)
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s:%d: %s", path, err.line, err.text);
    if (!json_is_object(j)) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s: a price table is an object of models", path);
        goto cleanup;
    }
    json_object_foreach(j, k, v) {
        kopt_llm_price p;
        if (!json_is_object(v) || (p.input = field(v, "input", -1)) < 0 ||
            (p.output = field(v, "output", -1)) < 0 ||
            (p.cached_input = field(v, "cached_input", p.input)) < 0) {
            rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s: model '%s': want {\"input\": USD, "
                             "\"output\": USD[, \"cached_input\": USD]} per million tokens, "
                             "each >= 0", path, k);
            goto cleanup;
        }
        if ((rc = add(t, ctx, k, p)) != KOPT_OK)
            goto cleanup;
    }
cleanup:
    json_decref(j);
    return rc;
}

kopt_status kopt__llm_prices_load(kopt__llm_prices **out, kopt_ctx *ctx, const char *path)
{
    kopt__llm_prices *t = calloc(1, sizeof(*t));
    kopt_status rc = KOPT_OK;

    *out = NULL;
    if (!t)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "price table");
    for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++) {
        kopt_llm_price p = {builtin[i].input, builtin[i].cached_input, builtin[i].output};
        if ((rc = add(t, ctx, builtin[i].prefix, p)) != KOPT_OK)
            goto cleanup;
    }
    if (path && path[0] && (rc = load_file(t, ctx, path)) != KOPT_OK)
        goto cleanup;
    *out = t;
    t = NULL;
cleanup:
    kopt__llm_prices_free(t);
    return rc;
}

int kopt__llm_prices_find(const kopt__llm_prices *t, const char *model, kopt_llm_price *out)
{
    size_t best = 0;
    int found = -1;
    const char *m;

    if (!t || !model)
        return 0;
    /* "provider/model" names (OpenRouter) are matched on the part after the last '/' */
    m = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;
    for (int i = 0; i < t->n; i++) {
        size_t n = strlen(t->e[i].prefix);
        if (n > best && (strncmp(model, t->e[i].prefix, n) == 0 ||
                         strncmp(m, t->e[i].prefix, n) == 0)) {
            best = n;
            found = i;
        }
    }
    if (found < 0)
        return 0;
    *out = t->e[found].price;
    return 1;
}

void kopt__llm_prices_free(kopt__llm_prices *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n; i++)
        free(t->e[i].prefix);
    free(t->e);
    free(t);
}

double kopt_llm_cost(const kopt_llm_price *p, const kopt_llm_usage *u)
{
    int64_t cached = u->cached_tokens < u->prompt_tokens ? u->cached_tokens : u->prompt_tokens;
    double uncached = (double)(u->prompt_tokens - cached);

    return (uncached * p->input + (double)cached * p->cached_input +
            (double)u->completion_tokens * p->output) / 1e6;
}
