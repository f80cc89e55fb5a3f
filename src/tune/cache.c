/*
 * The tuning cache (tune.h): every outcome of a space's points, in a hash map from point id
 * to outcome plus the order of insertion, with a persist hook called on every put (the
 * store commits each outcome before the next evaluation starts). Also kopt's own cache
 * file (JSON, see docs/tuning.md), which is validated field by field on loading, the
 * state names, and the objective of an outcome.
 *
 * Outcomes live in fixed-size blocks that never move, so the pointer kopt_tune_cache_get
 * returns stays valid while the cache grows.
 */
#include "kopt/tune.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_SHIFT 10
#define BLOCK_SIZE ((size_t)1 << BLOCK_SHIFT)
#define SLOT_EMPTY SIZE_MAX

#define CACHE_FORMAT "kopt-tune-cache"
#define CACHE_VERSION 1

typedef struct entry {
    uint64_t point;
    kopt_tune_outcome outcome;
} entry;

struct kopt_tune_cache {
    const kopt_tune_space *space;
    kopt_tune_key key;
    char *template_path;
    size_t n;
    entry **blocks;           /* n entries in blocks of BLOCK_SIZE, insertion order */
    size_t nblocks;
    size_t *slots;            /* open addressing: index of the entry, SLOT_EMPTY when free */
    size_t nslots;            /* a power of two, kept at most half full */
    kopt_tune_persist_fn persist;
    void *persist_user;
};

/* ---- states and objectives ----------------------------------------------------------- */

static const char *const state_names[KOPT_TUNE_STATE_COUNT] = {
    "ok", "pruned", "compile_error", "resources", "failed",
};

const char *kopt_tune_state_name(kopt_tune_state s)
{
    return (int)s >= 0 && s < KOPT_TUNE_STATE_COUNT ? state_names[s] : "?";
}

int kopt_tune_state_parse(const char *name)
{
    for (int i = 0; name && i < KOPT_TUNE_STATE_COUNT; i++)
        if (strcmp(name, state_names[i]) == 0)
            return i;
    return -1;
}

double kopt_tune_outcome_objective(const kopt_tune_outcome *o, kopt_tune_objective obj)
{
    double v;

    if (!o || o->state != KOPT_TUNE_OK)
        return INFINITY;
    v = obj == KOPT_TUNE_ENERGY ? o->energy_mj : o->time_ms;
    return v > 0 && isfinite(v) ? v : INFINITY;
}

/* ---- the map --------------------------------------------------------------------------- */

static size_t hash_point(uint64_t p)
{
    p ^= p >> 33;
    p *= 0xff51afd7ed558ccdULL;
    p ^= p >> 33;
    p *= 0xc4ceb9fe1a85ec53ULL;
    p ^= p >> 33;
    return (size_t)p;
}

static entry *entry_at(const kopt_tune_cache *c, size_t i)
{
    return &c->blocks[i >> BLOCK_SHIFT][i & (BLOCK_SIZE - 1)];
}

/* The slot holding `point`, or the free slot where it would go. */
static size_t find_slot(const kopt_tune_cache *c, uint64_t point)
{
    size_t mask = c->nslots - 1, i = hash_point(point) & mask;

    while (c->slots[i] != SLOT_EMPTY && entry_at(c, c->slots[i])->point != point)
        i = (i + 1) & mask;
    return i;
}

static int grow_slots(kopt_tune_cache *c)
{
    size_t n = c->nslots ? c->nslots * 2 : 64, *old = c->slots, oldn = c->nslots;

    c->slots = malloc(n * sizeof(*c->slots));
    if (!c->slots) {
        c->slots = old;
        return -1;
    }
    c->nslots = n;
    for (size_t i = 0; i < n; i++)
        c->slots[i] = SLOT_EMPTY;
    for (size_t i = 0; i < oldn; i++)
        if (old[i] != SLOT_EMPTY)
            c->slots[find_slot(c, entry_at(c, old[i])->point)] = old[i];
    free(old);
    return 0;
}

kopt_status kopt_tune_cache_create(kopt_tune_cache **out, kopt_ctx *ctx,
                                   const kopt_tune_space *space, const kopt_tune_key *key)
{
    kopt_tune_cache *c = calloc(1, sizeof(*c));

    *out = NULL;
    if (!c || grow_slots(c) != 0) {
        kopt_tune_cache_free(c);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "tuning cache");
    }
    c->space = space;
    if (key)
        c->key = *key;
    *out = c;
    return KOPT_OK;
}

void kopt_tune_cache_free(kopt_tune_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nblocks; i++)
        free(c->blocks[i]);
    free(c->blocks);
    free(c->slots);
    free(c->template_path);
    free(c);
}

const kopt_tune_key *kopt_tune_cache_key(const kopt_tune_cache *c)
{
    return &c->key;
}

const kopt_tune_space *kopt_tune_cache_space(const kopt_tune_cache *c)
{
    return c->space;
}

kopt_status kopt_tune_cache_set_template(kopt_tune_cache *c, kopt_ctx *ctx, const char *path)
{
    char *copy = NULL;

    if (path && !(copy = strdup(path)))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "tuning cache");
    free(c->template_path);
    c->template_path = copy;
    return KOPT_OK;
}

const char *kopt_tune_cache_template(const kopt_tune_cache *c)
{
    return c->template_path;
}

const kopt_tune_outcome *kopt_tune_cache_get(const kopt_tune_cache *c, uint64_t point)
{
    size_t s;

    if (!c || c->n == 0)
        return NULL;
    s = find_slot(c, point);
    return c->slots[s] == SLOT_EMPTY ? NULL : &entry_at(c, c->slots[s])->outcome;
}

/* Insert or replace without calling the persist hook. */
static kopt_status put_quiet(kopt_tune_cache *c, kopt_ctx *ctx, uint64_t point,
                             const kopt_tune_outcome *o)
{
    size_t s;
    entry *e;

    if ((c->n + 1) * 2 > c->nslots && grow_slots(c) != 0)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "tuning cache");
    s = find_slot(c, point);
    if (c->slots[s] != SLOT_EMPTY) {
        entry_at(c, c->slots[s])->outcome = *o;
        return KOPT_OK;
    }
    if ((c->n >> BLOCK_SHIFT) >= c->nblocks) {
        entry **blocks = realloc(c->blocks, (c->nblocks + 1) * sizeof(*blocks));
        if (!blocks)
            return kopt_seterr(ctx, KOPT_E_NOMEM, "tuning cache");
        c->blocks = blocks;
        if (!(c->blocks[c->nblocks] = malloc(BLOCK_SIZE * sizeof(entry))))
            return kopt_seterr(ctx, KOPT_E_NOMEM, "tuning cache");
        c->nblocks++;
    }
    e = entry_at(c, c->n);
    e->point = point;
    e->outcome = *o;
    c->slots[s] = c->n++;
    return KOPT_OK;
}

kopt_status kopt_tune_cache_put(kopt_tune_cache *c, kopt_ctx *ctx, uint64_t point,
                                const kopt_tune_outcome *o)
{
    kopt_status rc = put_quiet(c, ctx, point, o);
    char *label;

    if (rc != KOPT_OK || !c->persist)
        return rc;
    if (!(label = kopt_tune_space_label(c->space, point)))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "tuning cache");
    rc = c->persist(c->persist_user, ctx, label, o);
    free(label);
    return rc;
}

size_t kopt_tune_cache_count(const kopt_tune_cache *c)
{
    return c ? c->n : 0;
}

void kopt_tune_cache_entry(const kopt_tune_cache *c, size_t i, uint64_t *point,
                           const kopt_tune_outcome **o)
{
    const entry *e = entry_at(c, i);

    if (point)
        *point = e->point;
    if (o)
        *o = &e->outcome;
}

void kopt_tune_cache_set_persist(kopt_tune_cache *c, kopt_tune_persist_fn fn, void *user)
{
    c->persist = fn;
    c->persist_user = user;
}

/* ---- labels ---------------------------------------------------------------------------- */

/* "32, 64, 128" (at most 12 values, then "... (N values)"). */
static void describe_values(const kopt_param_spec *p, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int i = 0; i < p->nvalues && used < len; i++) {
        if (i == 10 && p->nvalues > 12) {
            snprintf(buf + used, len - used, ", ..., %lld (%d values)",
                     (long long)p->values[p->nvalues - 1], p->nvalues);
            return;
        }
        used += (size_t)snprintf(buf + used, len - used, "%s%lld", i ? ", " : "",
                                 (long long)p->values[i]);
    }
}

kopt_status kopt_tune_label_parse(const kopt_tune_space *s, kopt_ctx *ctx, const char *label,
                                  uint64_t *point)
{
    int idx[KOPT_TUNE_MAX_PARAMS];
    const char *p = label;

    for (int i = 0; i < s->nparams; i++)
        idx[i] = -1;
    while (*p) {
        const char *comma = strchr(p, ','), *eq = strchr(p, '=');
        size_t itemlen = comma ? (size_t)(comma - p) : strlen(p), namelen;
        char *end, vals[256];
        long long v;
        int k, j;

        if (!eq || eq > p + itemlen || eq == p)
            return kopt_seterr(ctx, KOPT_E_INVALID, "'%s': '%.*s' is not NAME=VALUE", label,
                               (int)itemlen, p);
        namelen = (size_t)(eq - p);
        for (k = 0; k < s->nparams; k++)
            if (strlen(s->params[k].name) == namelen &&
                strncmp(s->params[k].name, p, namelen) == 0)
                break;
        if (k == s->nparams)
            return kopt_seterr(ctx, KOPT_E_INVALID, "'%s': %.*s is not a param of the template",
                               label, (int)namelen, p);
        if (idx[k] >= 0)
            return kopt_seterr(ctx, KOPT_E_INVALID, "'%s': %s is given twice", label,
                               s->params[k].name);
        v = strtoll(eq + 1, &end, 10);
        if (end == eq + 1 || end != p + itemlen)
            return kopt_seterr(ctx, KOPT_E_INVALID, "'%s': the value of %s is not an integer",
                               label, s->params[k].name);
        for (j = 0; j < s->params[k].nvalues; j++)
            if (s->params[k].values[j] == v)
                break;
        if (j == s->params[k].nvalues) {
            describe_values(&s->params[k], vals, sizeof(vals));
            return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "'%s' is not in the space (%s takes %s)",
                               label, s->params[k].name, vals);
        }
        idx[k] = j;
        p += itemlen;
        if (*p == ',')
            p++;
    }
    for (int k = 0; k < s->nparams; k++)
        if (idx[k] < 0)
            return kopt_seterr(ctx, KOPT_E_INVALID, "'%s' lacks %s", label, s->params[k].name);
    *point = kopt_tune_space_encode(s, idx);
    return KOPT_OK;
}

/* ---- writing ----------------------------------------------------------------------------- */

static json_t *jnum(double v)
{
    return json_real(isfinite(v) ? v : 0.0);
}

static json_t *key_json(const kopt_tune_key *k)
{
    json_t *j = json_object();

    json_object_set_new(j, "problem", json_string(k->problem));
    json_object_set_new(j, "problem_hash", json_string(k->problem_hash));
    json_object_set_new(j, "template_hash", json_string(k->template_hash));
    json_object_set_new(j, "sizes", json_string(k->sizes));
    json_object_set_new(j, "device", json_string(k->device));
    json_object_set_new(j, "device_uuid", json_string(k->device_uuid));
    return j;
}

static json_t *outcome_json(const kopt_tune_outcome *o)
{
    json_t *j = json_object(), *f = json_array();

    json_object_set_new(j, "state", json_string(kopt_tune_state_name(o->state)));
    json_object_set_new(j, "time_ms", jnum(o->time_ms));
    json_object_set_new(j, "energy_mj", jnum(o->energy_mj));
    json_object_set_new(j, "power_w", jnum(o->power_w));
    json_object_set_new(j, "compile_ms", jnum(o->compile_ms));
    json_object_set_new(j, "eval_ms", jnum(o->eval_ms));
    json_object_set_new(j, "registers", json_integer(o->registers));
    json_object_set_new(j, "spill_bytes", json_integer(o->spill_bytes));
    json_object_set_new(j, "smem_bytes", json_integer(o->smem_bytes));
    json_object_set_new(j, "verdict", json_string(o->verdict));
    json_object_set_new(j, "message", json_string(o->message));
    for (int i = 0; i < o->nfindings && i < KOPT_TUNE_MAX_FINDINGS; i++) {
        json_t *x = json_object();
        json_object_set_new(x, "tool", json_string(o->findings[i].tool));
        json_object_set_new(x, "gain", jnum(o->findings[i].gain));
        json_array_append_new(f, x);
    }
    json_object_set_new(j, "findings", f);
    return j;
}

kopt_status kopt_tune_cache_write(const kopt_tune_cache *c, kopt_ctx *ctx, const char *path)
{
    const kopt_tune_space *s = c->space;
    json_t *root = json_object(), *params = json_object(), *entries = json_array();
    char *text = NULL;
    kopt_status rc = KOPT_OK;

    if (!root || !params || !entries) {
        json_decref(params);
        json_decref(entries);
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "%s", path);
        goto cleanup;
    }
    json_object_set_new(root, "format", json_string(CACHE_FORMAT));
    json_object_set_new(root, "version", json_integer(CACHE_VERSION));
    json_object_set_new(root, "key", key_json(&c->key));
    json_object_set_new(root, "template", json_string(c->template_path ? c->template_path : ""));
    for (int i = 0; i < s->nparams; i++) {
        json_t *vals = json_array();
        for (int k = 0; k < s->params[i].nvalues; k++)
            json_array_append_new(vals, json_integer(s->params[i].values[k]));
        json_object_set_new(params, s->params[i].name, vals);
    }
    json_object_set_new(root, "params", params);
    for (size_t i = 0; i < c->n; i++) {
        const entry *e = entry_at(c, i);
        char *label = kopt_tune_space_label(s, e->point);
        json_t *j = outcome_json(&e->outcome);
        json_t *row = json_object();
        if (!label || !j || !row) {
            free(label);
            json_decref(j);
            json_decref(row);
            json_decref(entries);
            rc = kopt_seterr(ctx, KOPT_E_NOMEM, "%s", path);
            goto cleanup;
        }
        json_object_set_new(row, "params", json_string(label));
        json_object_update(row, j);
        json_decref(j);
        json_array_append_new(entries, row);
        free(label);
    }
    json_object_set_new(root, "entries", entries);
    if (!(text = json_dumps(root, JSON_INDENT(1)))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "%s", path);
        goto cleanup;
    }
    rc = kopt_file_write(ctx, path, text, strlen(text));
cleanup:
    free(text);
    json_decref(root);
    return rc;
}

/* ---- reading ----------------------------------------------------------------------------- */

/* The base name of `path`, for messages ("cache.json: entries[3].state: ..."). */
static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static kopt_status bad(kopt_ctx *ctx, const char *path, const char *field, const char *fmt,
                       ...) KOPT_PRINTF(4, 5);
static kopt_status bad(kopt_ctx *ctx, const char *path, const char *field, const char *fmt,
                       ...)
{
    char what[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return kopt_seterr(ctx, KOPT_E_INVALID, "%s: %s: %s", base_name(path), field, what);
}

/* A string member copied into buf (must fit): absent is "" unless required. */
static kopt_status get_str(kopt_ctx *ctx, const char *path, const char *field, json_t *obj,
                           const char *key, int required, char *buf, size_t len)
{
    json_t *v = json_object_get(obj, key);
    char where[160];

    snprintf(where, sizeof(where), "%s%s%s", field, field[0] ? "." : "", key);
    buf[0] = '\0';
    if (!v) {
        if (required)
            return bad(ctx, path, where, "missing");
        return KOPT_OK;
    }
    if (!json_is_string(v))
        return bad(ctx, path, where, "expected a string");
    if (json_string_length(v) >= len)
        return bad(ctx, path, where, "longer than %zu characters", len - 1);
    memcpy(buf, json_string_value(v), json_string_length(v) + 1);
    return KOPT_OK;
}

/* A number member >= 0 (absent: 0). */
static kopt_status get_num(kopt_ctx *ctx, const char *path, const char *field, json_t *obj,
                           const char *key, double *out)
{
    json_t *v = json_object_get(obj, key);
    char where[160];

    *out = 0;
    if (!v)
        return KOPT_OK;
    snprintf(where, sizeof(where), "%s.%s", field, key);
    if (!json_is_number(v) || !(json_number_value(v) >= 0))
        return bad(ctx, path, where, "expected a number >= 0");
    *out = json_number_value(v);
    return KOPT_OK;
}

static kopt_status get_int(kopt_ctx *ctx, const char *path, const char *field, json_t *obj,
                           const char *key, int *out)
{
    json_t *v = json_object_get(obj, key);
    char where[160];

    *out = 0;
    if (!v)
        return KOPT_OK;
    snprintf(where, sizeof(where), "%s.%s", field, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
        return bad(ctx, path, where, "expected an integer >= 0");
    *out = (int)json_integer_value(v);
    return KOPT_OK;
}

/* The root of a cache file, its format and version checked; *root caller-owned. */
static kopt_status read_root(kopt_ctx *ctx, const char *path, json_t **root)
{
    json_error_t jerr;
    json_t *r, *v;
    char *text = NULL;
    size_t len;
    kopt_status rc;

    *root = NULL;
    if ((rc = kopt_file_read(ctx, path, &text, &len)) != KOPT_OK)
        return rc;
    r = json_loadb(text, len, 0, &jerr);
    free(text);
    if (!r)
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s: line %d: %s", base_name(path), jerr.line,
                           jerr.text);
    if (!json_is_object(r)) {
        json_decref(r);
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s: expected a JSON object", base_name(path));
    }
    v = json_object_get(r, "format");
    if (!json_is_string(v) || strcmp(json_string_value(v), CACHE_FORMAT) != 0) {
        json_decref(r);
        return bad(ctx, path, "format", "expected \"%s\" (not a kopt tuning cache)",
                   CACHE_FORMAT);
    }
    v = json_object_get(r, "version");
    if (!json_is_integer(v) || json_integer_value(v) < 1) {
        json_decref(r);
        return bad(ctx, path, "version", "expected a positive integer");
    }
    if (json_integer_value(v) > CACHE_VERSION) {
        long long version = (long long)json_integer_value(v);
        json_decref(r);
        return bad(ctx, path, "version", "%lld is newer than this kopt reads (%d)", version,
                   CACHE_VERSION);
    }
    *root = r;
    return KOPT_OK;
}

static kopt_status parse_key(kopt_ctx *ctx, const char *path, json_t *root, kopt_tune_key *k)
{
    json_t *j = json_object_get(root, "key");
    kopt_status rc;

    memset(k, 0, sizeof(*k));
    if (!json_is_object(j))
        return bad(ctx, path, "key", "expected an object");
    if ((rc = get_str(ctx, path, "key", j, "problem", 0, k->problem, sizeof(k->problem))) ||
        (rc = get_str(ctx, path, "key", j, "problem_hash", 1, k->problem_hash,
                      sizeof(k->problem_hash))) ||
        (rc = get_str(ctx, path, "key", j, "template_hash", 1, k->template_hash,
                      sizeof(k->template_hash))) ||
        (rc = get_str(ctx, path, "key", j, "sizes", 1, k->sizes, sizeof(k->sizes))) ||
        (rc = get_str(ctx, path, "key", j, "device", 1, k->device, sizeof(k->device))) ||
        (rc = get_str(ctx, path, "key", j, "device_uuid", 0, k->device_uuid,
                      sizeof(k->device_uuid))))
        return rc;
    return KOPT_OK;
}

kopt_status kopt_tune_key_compare(kopt_ctx *ctx, const char *what, const kopt_tune_key *have,
                                  const kopt_tune_key *want)
{
    static const struct {
        const char *name;
        size_t off;
    } fields[] = {
        {"device", offsetof(kopt_tune_key, device)},
        {"template_hash", offsetof(kopt_tune_key, template_hash)},
        {"sizes", offsetof(kopt_tune_key, sizes)},
        {"problem_hash", offsetof(kopt_tune_key, problem_hash)},
    };

    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        const char *h = (const char *)have + fields[i].off;
        const char *w = (const char *)want + fields[i].off;
        if (w[0] && strcmp(h, w) != 0)
            return kopt_seterr(ctx, KOPT_E_INVALID, "%s: key.%s differs: recorded \"%s\", "
                               "this run \"%s\" (outcomes of another %s are not reused)",
                               what, fields[i].name, h, w,
                               i == 0 ? "device" : i == 1 ? "template source" :
                               i == 2 ? "size set" : "problem");
    }
    return KOPT_OK;
}

static kopt_status check_params(kopt_ctx *ctx, const char *path, json_t *root,
                                const kopt_tune_space *s)
{
    json_t *params = json_object_get(root, "params"), *vals;
    const char *name;
    char want[256], field[160];
    int i = 0;

    if (!json_is_object(params))
        return bad(ctx, path, "params", "expected an object of value lists");
    json_object_foreach(params, name, vals) {
        snprintf(field, sizeof(field), "params.%s", name);
        if (i >= s->nparams)
            return bad(ctx, path, field, "not a param of the template (it has %d)", s->nparams);
        if (strcmp(name, s->params[i].name) != 0)
            return bad(ctx, path, field, "the template's param %d is %s (the params and their "
                       "order must match)", i + 1, s->params[i].name);
        describe_values(&s->params[i], want, sizeof(want));
        if (!json_is_array(vals) || json_array_size(vals) != (size_t)s->params[i].nvalues)
            return bad(ctx, path, field, "the values differ from the template's (%s)", want);
        for (int k = 0; k < s->params[i].nvalues; k++) {
            json_t *v = json_array_get(vals, (size_t)k);
            if (!json_is_integer(v) || json_integer_value(v) != s->params[i].values[k])
                return bad(ctx, path, field, "the values differ from the template's (%s)",
                           want);
        }
        i++;
    }
    if (i < s->nparams) {
        snprintf(field, sizeof(field), "params.%s", s->params[i].name);
        return bad(ctx, path, field, "missing (the template has it)");
    }
    return KOPT_OK;
}

static kopt_status parse_entry(kopt_ctx *ctx, const char *path, const kopt_tune_space *s,
                               json_t *row, size_t idx, uint64_t *point, kopt_tune_outcome *o)
{
    char field[64], sub[96], label[1024], state[32];
    json_t *f;
    kopt_status rc;
    int st;

    memset(o, 0, sizeof(*o));
    snprintf(field, sizeof(field), "entries[%zu]", idx);
    if (!json_is_object(row))
        return bad(ctx, path, field, "expected an object");
    if ((rc = get_str(ctx, path, field, row, "params", 1, label, sizeof(label))) != KOPT_OK)
        return rc;
    if (kopt_tune_label_parse(s, ctx, label, point) != KOPT_OK)
        return kopt_adderr(ctx, KOPT_E_INVALID, "%s: %s.params", base_name(path), field);
    if ((rc = get_str(ctx, path, field, row, "state", 1, state, sizeof(state))) != KOPT_OK)
        return rc;
    if ((st = kopt_tune_state_parse(state)) < 0) {
        snprintf(sub, sizeof(sub), "%s.state", field);
        return bad(ctx, path, sub, "'%s' is not one of ok, pruned, compile_error, resources, "
                   "failed", state);
    }
    o->state = (kopt_tune_state)st;
    if ((rc = get_num(ctx, path, field, row, "time_ms", &o->time_ms)) ||
        (rc = get_num(ctx, path, field, row, "energy_mj", &o->energy_mj)) ||
        (rc = get_num(ctx, path, field, row, "power_w", &o->power_w)) ||
        (rc = get_num(ctx, path, field, row, "compile_ms", &o->compile_ms)) ||
        (rc = get_num(ctx, path, field, row, "eval_ms", &o->eval_ms)) ||
        (rc = get_int(ctx, path, field, row, "registers", &o->registers)) ||
        (rc = get_int(ctx, path, field, row, "spill_bytes", &o->spill_bytes)) ||
        (rc = get_int(ctx, path, field, row, "smem_bytes", &o->smem_bytes)) ||
        (rc = get_str(ctx, path, field, row, "verdict", 0, o->verdict, sizeof(o->verdict))))
        return rc;
    if (o->state == KOPT_TUNE_OK && !(o->time_ms > 0)) {
        snprintf(sub, sizeof(sub), "%s.time_ms", field);
        return bad(ctx, path, sub, "an \"ok\" entry needs a time > 0");
    }
    f = json_object_get(row, "message");
    if (f && !json_is_string(f)) {
        snprintf(sub, sizeof(sub), "%s.message", field);
        return bad(ctx, path, sub, "expected a string");
    }
    snprintf(o->message, sizeof(o->message), "%s", f ? json_string_value(f) : "");
    f = json_object_get(row, "findings");
    if (f) {
        snprintf(sub, sizeof(sub), "%s.findings", field);
        if (!json_is_array(f))
            return bad(ctx, path, sub, "expected a list of {tool, gain}");
        if (json_array_size(f) > KOPT_TUNE_MAX_FINDINGS)
            return bad(ctx, path, sub, "more than %d findings", KOPT_TUNE_MAX_FINDINGS);
        for (size_t i = 0; i < json_array_size(f); i++) {
            json_t *x = json_array_get(f, i), *g;
            char fx[128];
            snprintf(fx, sizeof(fx), "%s[%zu]", sub, i);
            if (!json_is_object(x))
                return bad(ctx, path, fx, "expected {tool, gain}");
            if ((rc = get_str(ctx, path, fx, x, "tool", 1, o->findings[i].tool,
                              sizeof(o->findings[i].tool))) != KOPT_OK)
                return rc;
            g = json_object_get(x, "gain");
            if (!json_is_number(g) || !(json_number_value(g) >= 0) ||
                json_number_value(g) > 1) {
                char gx[160];
                snprintf(gx, sizeof(gx), "%s.gain", fx);
                return bad(ctx, path, gx, "expected a number in [0, 1]");
            }
            o->findings[i].gain = json_number_value(g);
            o->nfindings++;
        }
    }
    return KOPT_OK;
}

kopt_status kopt_tune_cache_read_key(kopt_ctx *ctx, const char *path, kopt_tune_key *key,
                                     char **template_path)
{
    json_t *root = NULL, *t;
    kopt_status rc;

    if (template_path)
        *template_path = NULL;
    if ((rc = read_root(ctx, path, &root)) != KOPT_OK)
        return rc;
    if ((rc = parse_key(ctx, path, root, key)) != KOPT_OK)
        goto cleanup;
    t = json_object_get(root, "template");
    if (!json_is_string(t)) {
        rc = bad(ctx, path, "template", "expected the template's path");
        goto cleanup;
    }
    if (template_path && !(*template_path = strdup(json_string_value(t))))
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "%s", path);
cleanup:
    json_decref(root);
    return rc;
}

kopt_status kopt_tune_cache_load(kopt_tune_cache **out, kopt_ctx *ctx, const char *path,
                                 const kopt_tune_space *space, const kopt_tune_key *key)
{
    kopt_tune_cache *c = NULL;
    kopt_tune_key have;
    json_t *root = NULL, *entries, *t;
    kopt_status rc;

    *out = NULL;
    if ((rc = read_root(ctx, path, &root)) != KOPT_OK)
        return rc;
    if ((rc = parse_key(ctx, path, root, &have)) != KOPT_OK)
        goto cleanup;
    if (key && (rc = kopt_tune_key_compare(ctx, base_name(path), &have, key)) != KOPT_OK)
        goto cleanup;
    t = json_object_get(root, "template");
    if (!json_is_string(t)) {
        rc = bad(ctx, path, "template", "expected the template's path");
        goto cleanup;
    }
    if ((rc = check_params(ctx, path, root, space)) != KOPT_OK)
        goto cleanup;
    entries = json_object_get(root, "entries");
    if (!json_is_array(entries)) {
        rc = bad(ctx, path, "entries", "expected a list");
        goto cleanup;
    }
    if ((rc = kopt_tune_cache_create(&c, ctx, space, &have)) != KOPT_OK ||
        (rc = kopt_tune_cache_set_template(c, ctx, json_string_value(t))) != KOPT_OK)
        goto cleanup;
    for (size_t i = 0; i < json_array_size(entries); i++) {
        kopt_tune_outcome o;
        uint64_t point;
        if ((rc = parse_entry(ctx, path, space, json_array_get(entries, i), i, &point, &o)) !=
            KOPT_OK)
            goto cleanup;
        if (kopt_tune_cache_get(c, point)) {
            char field[64];
            snprintf(field, sizeof(field), "entries[%zu].params", i);
            rc = bad(ctx, path, field, "'%s' is recorded twice",
                     json_string_value(json_object_get(json_array_get(entries, i), "params")));
            goto cleanup;
        }
        if ((rc = put_quiet(c, ctx, point, &o)) != KOPT_OK)
            goto cleanup;
    }
    *out = c;
    c = NULL;
cleanup:
    kopt_tune_cache_free(c);
    json_decref(root);
    return rc;
}
