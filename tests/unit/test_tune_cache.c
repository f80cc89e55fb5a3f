/*
 * Unit tests of the tuning cache: the in-memory map (replacement, insertion order, stable
 * pointers, the persist hook), kopt's cache file (a round trip of every field, every load
 * error naming its file and field, a key or params mismatch refused), the exports to Kernel
 * Tuner's cache format and to T4 (parsed back and checked value by value), the replay
 * evaluator, and the store's tuning tables (round trip, runs, migration from a v2 store).
 */
#include "ktest.h"
#include "tune_fixture.h"

#include "kopt/store.h"
#include "kopt/tune.h"

#include <jansson.h>
#include <math.h>
#include <sqlite3.h>

static kopt_ctx *ctx;
static char *tmp;
static kopt_problem *prob;
static kopt_candidate *tmpl;        /* BM {32,64,128} x BN {16,32} x V {1,2,4}, BM*BN <= 2048 */
static kopt_tune_space *space;

static const char *const TEMPLATE =
    "/*@kopt\n{\"params\": {\"BM\": [32, 64, 128], \"BN\": [16, 32], \"V\": {\"pow2\": [1, 4]}},"
    " \"constraints\": [\"BM*BN <= 2048\"]}\n*/\n"
    "__global__ void k(const float *x, float *y, int n) {}\n";

static kopt_tune_key test_key(void)
{
    kopt_tune_key k;

    memset(&k, 0, sizeof(k));
    snprintf(k.problem, sizeof(k.problem), "tc");
    snprintf(k.problem_hash, sizeof(k.problem_hash), "%s", prob->hash);
    snprintf(k.template_hash, sizeof(k.template_hash), "%s", tmpl->hash);
    snprintf(k.sizes, sizeof(k.sizes), "B=4,N=1024");
    snprintf(k.device, sizeof(k.device), "NVIDIA H200");
    snprintf(k.device_uuid, sizeof(k.device_uuid), "GPU-1234");
    return k;
}

static uint64_t point_of(const char *label)
{
    uint64_t p = UINT64_MAX;

    if (kopt_tune_label_parse(space, ctx, label, &p) != KOPT_OK)
        KTEST_FAIL("label %s: %s", label, kopt_errmsg(ctx));
    return p;
}

/* Five outcomes, one per state, each field set to something distinct. */
static void sample_outcomes(kopt_tune_outcome o[5])
{
    memset(o, 0, 5 * sizeof(*o));
    o[0].state = KOPT_TUNE_OK;
    o[0].time_ms = 0.123456789012345;
    o[0].energy_mj = 2.5;
    o[0].power_w = 301.25;
    o[0].compile_ms = 812.5;
    o[0].eval_ms = 1520.75;
    o[0].registers = 40;
    o[0].spill_bytes = 0;
    o[0].smem_bytes = 8192;
    o[0].nfindings = 2;
    snprintf(o[0].findings[0].tool, sizeof(o[0].findings[0].tool), "uncoalesced_access");
    o[0].findings[0].gain = 0.25;
    snprintf(o[0].findings[1].tool, sizeof(o[0].findings[1].tool), "low_occupancy");
    o[0].findings[1].gain = 0.0625;
    snprintf(o[0].verdict, sizeof(o[0].verdict), "OK");
    o[1].state = KOPT_TUNE_COMPILE_ERROR;
    o[1].compile_ms = 95.5;
    snprintf(o[1].verdict, sizeof(o[1].verdict), "COMPILE_ERROR");
    snprintf(o[1].message, sizeof(o[1].message), "t.cu(3): error: \"V\" is \\ undefined");
    o[2].state = KOPT_TUNE_RESOURCES;
    o[2].registers = 255;
    o[2].spill_bytes = 128;
    o[2].compile_ms = 101;
    snprintf(o[2].message, sizeof(o[2].message), "spills 128 bytes");
    o[3].state = KOPT_TUNE_FAILED;
    o[3].eval_ms = 33.25;
    snprintf(o[3].verdict, sizeof(o[3].verdict), "WRONG");
    snprintf(o[3].message, sizeof(o[3].message), "y[17] differs");
    o[4].state = KOPT_TUNE_OK;
    o[4].time_ms = 0.5;
    o[4].compile_ms = 700;
    o[4].eval_ms = 900;
    snprintf(o[4].verdict, sizeof(o[4].verdict), "OK");
}

static const char *const SAMPLE_LABELS[5] = {
    "BM=64,BN=16,V=2", "BM=32,BN=32,V=4", "BM=128,BN=16,V=1", "BM=32,BN=16,V=1",
    "BM=64,BN=32,V=1",
};

static int same_outcome(const kopt_tune_outcome *a, const kopt_tune_outcome *b)
{
    int ok = a->state == b->state && a->time_ms == b->time_ms &&
             a->energy_mj == b->energy_mj && a->power_w == b->power_w &&
             a->compile_ms == b->compile_ms && a->eval_ms == b->eval_ms &&
             a->registers == b->registers && a->spill_bytes == b->spill_bytes &&
             a->smem_bytes == b->smem_bytes && a->nfindings == b->nfindings &&
             strcmp(a->verdict, b->verdict) == 0 && strcmp(a->message, b->message) == 0;
    for (int i = 0; ok && i < a->nfindings; i++)
        ok = strcmp(a->findings[i].tool, b->findings[i].tool) == 0 &&
             a->findings[i].gain == b->findings[i].gain;
    return ok;
}

static kopt_tune_cache *sample_cache(void)
{
    kopt_tune_key k = test_key();
    kopt_tune_cache *c = NULL;
    kopt_tune_outcome o[5];

    sample_outcomes(o);
    if (!CHECK_EQ_INT(kopt_tune_cache_create(&c, ctx, space, &k), KOPT_OK))
        return NULL;
    CHECK_EQ_INT(kopt_tune_cache_set_template(c, ctx, "examples/tc/tune.cu"), KOPT_OK);
    for (int i = 0; i < 5; i++)
        CHECK_EQ_INT(kopt_tune_cache_put(c, ctx, point_of(SAMPLE_LABELS[i]), &o[i]), KOPT_OK);
    return c;
}

/* ---- states, objectives, the map ----------------------------------------------------- */

static void test_states_and_objective(void)
{
    kopt_tune_outcome o;

    for (int s = 0; s < KOPT_TUNE_STATE_COUNT; s++)
        CHECK_EQ_INT(kopt_tune_state_parse(kopt_tune_state_name((kopt_tune_state)s)), s);
    CHECK_EQ_STR(kopt_tune_state_name(KOPT_TUNE_COMPILE_ERROR), "compile_error");
    CHECK_EQ_INT(kopt_tune_state_parse("great"), -1);
    CHECK_EQ_INT(kopt_tune_state_parse(NULL), -1);
    memset(&o, 0, sizeof(o));
    o.state = KOPT_TUNE_OK;
    o.time_ms = 1.5;
    CHECK(kopt_tune_outcome_objective(&o, KOPT_TUNE_TIME) == 1.5);
    CHECK(kopt_tune_outcome_objective(&o, KOPT_TUNE_TIME_ENERGY) == 1.5);
    CHECK(isinf(kopt_tune_outcome_objective(&o, KOPT_TUNE_ENERGY)));   /* not measured */
    o.energy_mj = 7;
    CHECK(kopt_tune_outcome_objective(&o, KOPT_TUNE_ENERGY) == 7);
    o.state = KOPT_TUNE_FAILED;
    CHECK(isinf(kopt_tune_outcome_objective(&o, KOPT_TUNE_TIME)));
}

static char persist_last[128];
static kopt_status count_persist(void *user, kopt_ctx *c, const char *label,
                                 const kopt_tune_outcome *o)
{
    (void)c;
    (void)o;
    (*(int *)user)++;
    snprintf(persist_last, sizeof(persist_last), "%s", label);
    return KOPT_OK;
}

static void test_map(void)
{
    kopt_tune_cache *c = NULL;
    kopt_tune_outcome o;
    const kopt_tune_outcome *first, *got;
    uint64_t p;
    int user = 0;

    if (!CHECK_EQ_INT(kopt_tune_cache_create(&c, ctx, space, NULL), KOPT_OK))
        return;
    memset(&o, 0, sizeof(o));
    CHECK(kopt_tune_cache_get(c, 3) == NULL);
    o.time_ms = 1;
    CHECK_EQ_INT(kopt_tune_cache_put(c, ctx, 3, &o), KOPT_OK);
    first = kopt_tune_cache_get(c, 3);
    /* thousands of (made-up) point ids: the map grows, earlier pointers stay valid */
    for (uint64_t i = 100; i < 5100; i++) {
        o.time_ms = (double)i;
        if (kopt_tune_cache_put(c, ctx, i * 7919, &o) != KOPT_OK)
            break;
    }
    CHECK_EQ_INT(kopt_tune_cache_count(c), 5001);
    CHECK(kopt_tune_cache_get(c, 3) == first);
    CHECK(first->time_ms == 1);
    got = kopt_tune_cache_get(c, 4242 * 7919);
    CHECK(got && got->time_ms == 4242);
    CHECK(kopt_tune_cache_get(c, 4242) == NULL);
    kopt_tune_cache_entry(c, 1, &p, &got);
    CHECK_EQ_INT(p, 100 * 7919);                 /* insertion order */
    /* replacing keeps the count and the position */
    o.time_ms = 2;
    CHECK_EQ_INT(kopt_tune_cache_put(c, ctx, 3, &o), KOPT_OK);
    CHECK_EQ_INT(kopt_tune_cache_count(c), 5001);
    kopt_tune_cache_entry(c, 0, &p, &got);
    CHECK(p == 3 && got->time_ms == 2);
    /* the persist hook sees every put with its label */
    kopt_tune_cache_set_persist(c, count_persist, &user);
    CHECK_EQ_INT(kopt_tune_cache_put(c, ctx, point_of("BM=128,BN=16,V=4"), &o), KOPT_OK);
    CHECK_EQ_INT(user, 1);
    CHECK_EQ_STR(persist_last, "BM=128,BN=16,V=4");
    kopt_tune_cache_free(c);
    kopt_tune_cache_free(NULL);
}

static void test_labels(void)
{
    uint64_t p = 0;
    int idx[3];

    CHECK_EQ_INT(kopt_tune_label_parse(space, ctx, "V=4,BM=128,BN=32", &p), KOPT_OK);
    kopt_tune_space_decode(space, p, idx);
    CHECK(idx[0] == 2 && idx[1] == 1 && idx[2] == 2);
    CHECK_EQ_INT(kopt_tune_label_parse(space, ctx, "BM=96,BN=16,V=1", &p), KOPT_E_NOT_FOUND);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "'BM=96,BN=16,V=1' is not in the space (BM takes 32, "
                       "64, 128)");
    CHECK_EQ_INT(kopt_tune_label_parse(space, ctx, "BM=32,V=1", &p), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "lacks BN");
    CHECK_EQ_INT(kopt_tune_label_parse(space, ctx, "BM=32,BX=1,BN=16,V=1", &p), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "BX is not a param");
    CHECK_EQ_INT(kopt_tune_label_parse(space, ctx, "BM=32,BM=64,BN=16,V=1", &p), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "BM is given twice");
    CHECK_EQ_INT(kopt_tune_label_parse(space, ctx, "BM=3x,BN=16,V=1", &p), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "not an integer");
    CHECK_EQ_INT(kopt_tune_label_parse(space, ctx, "BM,BN=16,V=1", &p), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "not NAME=VALUE");
}

/* ---- kopt's cache file ------------------------------------------------------------------ */

static void test_file_round_trip(void)
{
    kopt_tune_cache *c = sample_cache(), *back = NULL;
    char *path = kopt_path_join(tmp, "round.json"), *tpath = NULL;
    kopt_tune_key k = test_key(), rk;

    if (!c)
        goto cleanup;
    if (!CHECK_EQ_INT(kopt_tune_cache_write(c, ctx, path), KOPT_OK) ||
        !CHECK_EQ_INT(kopt_tune_cache_load(&back, ctx, path, space, &k), KOPT_OK)) {
        fprintf(stderr, "  %s\n", kopt_errmsg(ctx));
        goto cleanup;
    }
    CHECK_EQ_INT(kopt_tune_cache_count(back), 5);
    for (size_t i = 0; i < 5; i++) {
        uint64_t pa, pb;
        const kopt_tune_outcome *a, *b;
        kopt_tune_cache_entry(c, i, &pa, &a);
        kopt_tune_cache_entry(back, i, &pb, &b);
        CHECK_EQ_INT(pa, pb);                    /* same order */
        if (!CHECK(same_outcome(a, b)))
            fprintf(stderr, "  entry %zu differs after the round trip\n", i);
    }
    CHECK_EQ_STR(kopt_tune_cache_template(back), "examples/tc/tune.cu");
    CHECK(memcmp(kopt_tune_cache_key(back), &k, sizeof(k)) == 0);
    /* the key alone */
    CHECK_EQ_INT(kopt_tune_cache_read_key(ctx, path, &rk, &tpath), KOPT_OK);
    CHECK_EQ_STR(rk.device, "NVIDIA H200");
    CHECK_EQ_STR(rk.device_uuid, "GPU-1234");
    CHECK_EQ_STR(rk.sizes, "B=4,N=1024");
    CHECK_EQ_STR(rk.template_hash, tmpl->hash);
    CHECK_EQ_STR(tpath, "examples/tc/tune.cu");
    /* loading without a key takes the file's */
    kopt_tune_cache_free(back);
    back = NULL;
    CHECK_EQ_INT(kopt_tune_cache_load(&back, ctx, path, space, NULL), KOPT_OK);
cleanup:
    kopt_tune_cache_free(c);
    kopt_tune_cache_free(back);
    free(path);
    free(tpath);
}

/* Write the sample cache, change it with `edit` (a JSON path and a value), load it: the
 * load must fail with a message that contains `want`. */
typedef struct bad_case {
    const char *what;
    void (*edit)(json_t *root);
    const char *want;
} bad_case;

static json_t *entry0(json_t *r) { return json_array_get(json_object_get(r, "entries"), 0); }
static void e_format(json_t *r) { json_object_set_new(r, "format", json_string("other")); }
static void e_version(json_t *r) { json_object_set_new(r, "version", json_integer(2)); }
static void e_nokey(json_t *r) { json_object_del(r, "key"); }
static void e_keydev(json_t *r)
{
    json_object_set_new(json_object_get(r, "key"), "device", json_integer(3));
}
static void e_notemplate(json_t *r) { json_object_del(r, "template"); }
static void e_values(json_t *r)
{
    json_array_remove(json_object_get(json_object_get(r, "params"), "BM"), 2);
}
static void e_order(json_t *r)
{
    json_t *p = json_object_get(r, "params"), *bm = json_incref(json_object_get(p, "BM"));
    json_object_del(p, "BM");
    json_object_set_new(p, "BM", bm);     /* now BN, V, BM */
}
static void e_missing_param(json_t *r) { json_object_del(json_object_get(r, "params"), "V"); }
static void e_entries(json_t *r) { json_object_set_new(r, "entries", json_object()); }
static void e_label(json_t *r)
{
    json_object_set_new(json_array_get(json_object_get(r, "entries"), 1), "params",
                        json_string("BM=96,BN=32,V=4"));
}
static void e_label_missing(json_t *r) { json_object_del(entry0(r), "params"); }
static void e_state(json_t *r) { json_object_set_new(entry0(r), "state", json_string("great")); }
static void e_time(json_t *r) { json_object_set_new(entry0(r), "time_ms", json_string("fast")); }
static void e_time0(json_t *r) { json_object_set_new(entry0(r), "time_ms", json_real(0)); }
static void e_regs(json_t *r) { json_object_set_new(entry0(r), "registers", json_integer(-1)); }
static void e_verdict(json_t *r) { json_object_set_new(entry0(r), "verdict", json_integer(0)); }
static void e_message(json_t *r) { json_object_set_new(entry0(r), "message", json_true()); }
static void e_gain(json_t *r)
{
    json_object_set_new(json_array_get(json_object_get(entry0(r), "findings"), 1), "gain",
                        json_real(2.0));
}
static void e_tool(json_t *r)
{
    json_object_del(json_array_get(json_object_get(entry0(r), "findings"), 0), "tool");
}
static void e_dup(json_t *r)
{
    json_object_set_new(json_array_get(json_object_get(r, "entries"), 2), "params",
                        json_string("BM=64,BN=16,V=2"));
}
static void e_not_json(json_t *r) { (void)r; }

static void test_load_errors(void)
{
    static const bad_case cases[] = {
        {"not JSON", e_not_json, "cache.json: line"},
        {"format", e_format, "cache.json: format:"},
        {"version", e_version, "cache.json: version: 2 is newer"},
        {"no key", e_nokey, "cache.json: key: expected an object"},
        {"key.device", e_keydev, "cache.json: key.device: expected a string"},
        {"template", e_notemplate, "cache.json: template:"},
        {"values", e_values, "cache.json: params.BM: the values differ from the template's "
                             "(32, 64, 128)"},
        {"order", e_order, "cache.json: params.BN: the template's param 1 is BM"},
        {"missing param", e_missing_param, "cache.json: params.V: missing"},
        {"entries", e_entries, "cache.json: entries: expected a list"},
        {"label", e_label, "cache.json: entries[1].params: 'BM=96,BN=32,V=4' is not in the "
                           "space (BM takes 32, 64, 128)"},
        {"no label", e_label_missing, "cache.json: entries[0].params: missing"},
        {"state", e_state, "cache.json: entries[0].state: 'great' is not one of"},
        {"time", e_time, "cache.json: entries[0].time_ms: expected a number"},
        {"time 0", e_time0, "cache.json: entries[0].time_ms: an \"ok\" entry needs a time"},
        {"registers", e_regs, "cache.json: entries[0].registers: expected an integer"},
        {"verdict", e_verdict, "cache.json: entries[0].verdict: expected a string"},
        {"message", e_message, "cache.json: entries[0].message: expected a string"},
        {"gain", e_gain, "cache.json: entries[0].findings[1].gain: expected a number in [0, 1]"},
        {"tool", e_tool, "cache.json: entries[0].findings[0].tool: missing"},
        {"duplicate", e_dup, "cache.json: entries[2].params: 'BM=64,BN=16,V=2' is recorded "
                             "twice"},
    };
    kopt_tune_cache *c = sample_cache(), *back = NULL;
    char *good = kopt_path_join(tmp, "good.json"), *bad = kopt_path_join(tmp, "cache.json");
    kopt_tune_key k = test_key();

    if (!c || !CHECK_EQ_INT(kopt_tune_cache_write(c, ctx, good), KOPT_OK))
        goto cleanup;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *root = json_load_file(good, 0, NULL);
        kopt_status rc;
        if (!CHECK(root != NULL))
            break;
        cases[i].edit(root);
        if (cases[i].edit == e_not_json) {
            char *w = ktest_write_file(tmp, "cache.json", "{\"format\": \"kopt-tune-cache\",");
            free(w);
        } else {
            CHECK_EQ_INT(json_dump_file(root, bad, JSON_INDENT(1)), 0);
        }
        json_decref(root);
        rc = kopt_tune_cache_load(&back, ctx, bad, space, &k);
        if (!CHECK(rc == KOPT_E_INVALID && back == NULL))
            fprintf(stderr, "  case '%s' loaded (status %d)\n", cases[i].what, rc);
        else if (!CHECK_STR_CONTAINS(kopt_errmsg(ctx), cases[i].want))
            fprintf(stderr, "  case '%s'\n", cases[i].what);
        kopt_tune_cache_free(back);
        back = NULL;
    }
cleanup:
    kopt_tune_cache_free(c);
    free(good);
    free(bad);
}

static void test_key_mismatch(void)
{
    static const char *const fields[] = {"device", "template_hash", "sizes", "problem_hash"};
    kopt_tune_cache *c = sample_cache(), *back = NULL;
    char *path = kopt_path_join(tmp, "keyed.json");

    if (!c || !CHECK_EQ_INT(kopt_tune_cache_write(c, ctx, path), KOPT_OK))
        goto cleanup;
    for (int i = 0; i < 4; i++) {
        kopt_tune_key k = test_key();
        char want[64];
        if (i == 0)
            snprintf(k.device, sizeof(k.device), "NVIDIA H100 80GB HBM3");
        else if (i == 1)
            k.template_hash[0] = k.template_hash[0] == 'a' ? 'b' : 'a';
        else if (i == 2)
            snprintf(k.sizes, sizeof(k.sizes), "B=8,N=1024");
        else
            k.problem_hash[1] = k.problem_hash[1] == 'a' ? 'b' : 'a';
        CHECK_EQ_INT(kopt_tune_cache_load(&back, ctx, path, space, &k), KOPT_E_INVALID);
        CHECK(back == NULL);
        snprintf(want, sizeof(want), "keyed.json: key.%s differs", fields[i]);
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), want);
    }
    {   /* another GPU of the same model, and fields the caller leaves empty: accepted */
        kopt_tune_key k = test_key();
        snprintf(k.device_uuid, sizeof(k.device_uuid), "GPU-other");
        k.sizes[0] = '\0';
        CHECK_EQ_INT(kopt_tune_cache_load(&back, ctx, path, space, &k), KOPT_OK);
        kopt_tune_cache_free(back);
        back = NULL;
    }
cleanup:
    kopt_tune_cache_free(c);
    free(path);
}

/* ---- exports ---------------------------------------------------------------------------- */

static int count_invalid_points(void)
{
    int n = 0;
    for (uint64_t p = 0; p < space->npoints; p++)
        n += !kopt_tune_space_valid(space, p, NULL, 0);
    return n;
}

static void test_export_kt(void)
{
    kopt_tune_cache *c = sample_cache();
    char *path = kopt_path_join(tmp, "kt.json");
    kopt_tune_outcome o[5];
    json_t *root = NULL, *cache, *e, *v;
    const char *key;
    int ninvalid = 0, nfilled;

    sample_outcomes(o);
    if (!c || !CHECK_EQ_INT(kopt_tune_cache_write_kt(c, ctx, path, "k"), KOPT_OK))
        goto cleanup;
    root = json_load_file(path, 0, NULL);
    if (!CHECK(root != NULL))
        goto cleanup;
    CHECK_EQ_STR(json_string_value(json_object_get(root, "device_name")), "NVIDIA H200");
    CHECK_EQ_STR(json_string_value(json_object_get(root, "kernel_name")), "k");
    v = json_object_get(root, "problem_size");
    CHECK(json_array_size(v) == 2 && json_integer_value(json_array_get(v, 0)) == 4 &&
          json_integer_value(json_array_get(v, 1)) == 1024);
    v = json_object_get(root, "tune_params_keys");
    CHECK(json_array_size(v) == 3);
    CHECK_EQ_STR(json_string_value(json_array_get(v, 0)), "BM");
    CHECK_EQ_STR(json_string_value(json_array_get(v, 2)), "V");
    v = json_object_get(json_object_get(root, "tune_params"), "V");
    CHECK(json_array_size(v) == 3 && json_integer_value(json_array_get(v, 2)) == 4);
    CHECK_EQ_STR(json_string_value(json_object_get(root, "objective")), "time");
    cache = json_object_get(root, "cache");
    if (!CHECK(json_is_object(cache)))
        goto cleanup;
    /* the OK entry: keyed by its values in param order */
    e = json_object_get(cache, "64,16,2");
    if (CHECK(json_is_object(e))) {
        CHECK_EQ_INT(json_integer_value(json_object_get(e, "BM")), 64);
        CHECK_EQ_INT(json_integer_value(json_object_get(e, "BN")), 16);
        CHECK_EQ_INT(json_integer_value(json_object_get(e, "V")), 2);
        CHECK(json_number_value(json_object_get(e, "time")) == o[0].time_ms);
        v = json_object_get(e, "times");
        CHECK(json_array_size(v) == 1 && json_number_value(json_array_get(v, 0)) == o[0].time_ms);
        CHECK(json_number_value(json_object_get(e, "compile_time")) == o[0].compile_ms);
        CHECK(json_number_value(json_object_get(e, "benchmark_time")) == o[0].eval_ms);
        CHECK(json_is_number(json_object_get(e, "verification_time")) &&
              json_number_value(json_object_get(e, "verification_time")) == 0);
        CHECK(json_number_value(json_object_get(e, "strategy_time")) == 0);
        CHECK(json_number_value(json_object_get(e, "framework_time")) == 0);
        CHECK(json_is_string(json_object_get(e, "timestamp")));
        CHECK_NEAR(json_number_value(json_object_get(e, "nvml_energy")), 0.0025, 1e-15);
        CHECK(json_object_get(e, "__error__") == NULL);
    }
    e = json_object_get(cache, "32,32,4");
    CHECK_EQ_STR(json_string_value(json_object_get(e, "time")), "CompilationFailedConfig");
    CHECK_EQ_STR(json_string_value(json_object_get(e, "__error__")), "CompilationFailedConfig");
    e = json_object_get(cache, "128,16,1");
    CHECK_EQ_STR(json_string_value(json_object_get(e, "time")), "RuntimeFailedConfig");
    e = json_object_get(cache, "32,16,1");
    CHECK_EQ_STR(json_string_value(json_object_get(e, "time")), "RuntimeFailedConfig");
    /* a valid point the cache lacks is absent; pruned ones are filled in as InvalidConfig */
    CHECK(json_object_get(cache, "32,16,2") == NULL);
    e = json_object_get(cache, "128,32,4");
    CHECK_EQ_STR(json_string_value(json_object_get(e, "time")), "InvalidConfig");
    nfilled = 0;
    json_object_foreach(cache, key, e) {
        const char *t = json_string_value(json_object_get(e, "time"));
        nfilled += t && strcmp(t, "InvalidConfig") == 0;
        (void)key;
    }
    ninvalid = count_invalid_points();
    CHECK(ninvalid > 0);
    CHECK_EQ_INT(nfilled, ninvalid);
    CHECK_EQ_INT(json_object_size(cache), 5 + ninvalid);
cleanup:
    json_decref(root);
    kopt_tune_cache_free(c);
    free(path);
}

static const char *measurement(json_t *r, const char *name, double *value)
{
    json_t *m = json_object_get(r, "measurements"), *x;
    size_t i;

    json_array_foreach(m, i, x) {
        if (strcmp(json_string_value(json_object_get(x, "name")), name) == 0) {
            *value = json_number_value(json_object_get(x, "value"));
            return json_string_value(json_object_get(x, "unit"));
        }
    }
    return NULL;
}

static void test_export_t4(void)
{
    static const char *const invalidity[5] = {"correct", "compile", "runtime", "correctness",
                                              "correct"};
    kopt_tune_cache *c = sample_cache();
    char *path = kopt_path_join(tmp, "t4.json");
    kopt_tune_outcome o[5];
    json_t *root = NULL, *results;
    double v = 0;

    sample_outcomes(o);
    if (!c || !CHECK_EQ_INT(kopt_tune_cache_write_t4(c, ctx, path, KOPT_TUNE_TIME), KOPT_OK))
        goto cleanup;
    root = json_load_file(path, 0, NULL);
    if (!CHECK(root != NULL))
        goto cleanup;
    CHECK_EQ_STR(json_string_value(json_object_get(root, "schema_version")), "1.0.0");
    results = json_object_get(root, "results");
    if (!CHECK_EQ_INT(json_array_size(results), 5))
        goto cleanup;
    for (size_t i = 0; i < 5; i++) {
        json_t *r = json_array_get(results, i), *conf = json_object_get(r, "configuration");
        json_t *times = json_object_get(r, "times");
        uint64_t p = point_of(SAMPLE_LABELS[i]);
        int idx[3];
        kopt_tune_space_decode(space, p, idx);
        CHECK_EQ_INT(json_integer_value(json_object_get(conf, "BM")),
                     space->params[0].values[idx[0]]);
        CHECK_EQ_INT(json_integer_value(json_object_get(conf, "V")),
                     space->params[2].values[idx[2]]);
        CHECK_EQ_STR(json_string_value(json_array_get(json_object_get(r, "objectives"), 0)),
                     "time");
        CHECK_EQ_STR(json_string_value(json_object_get(r, "invalidity")), invalidity[i]);
        CHECK_EQ_INT(json_integer_value(json_object_get(r, "correctness")), i == 3 ? 0 : 1);
        CHECK(json_number_value(json_object_get(times, "compilation")) == o[i].compile_ms);
        CHECK(json_number_value(json_object_get(times, "benchmark")) == o[i].eval_ms);
        CHECK(json_is_number(json_object_get(times, "search_algorithm")));
        CHECK(json_is_string(json_object_get(r, "timestamp")));
        if (o[i].state == KOPT_TUNE_OK) {
            CHECK_EQ_STR(measurement(r, "time", &v), "ms");
            CHECK(v == o[i].time_ms);
            CHECK(json_number_value(json_array_get(json_object_get(times, "runtimes"), 0)) ==
                  o[i].time_ms);
        } else {
            CHECK(measurement(r, "time", &v) == NULL);
            CHECK_EQ_INT(json_array_size(json_object_get(times, "runtimes")), 0);
        }
    }
    CHECK_EQ_STR(measurement(json_array_get(results, 0), "energy", &v), "mJ");
    CHECK(v == 2.5);
cleanup:
    json_decref(root);
    kopt_tune_cache_free(c);
    free(path);
}

/* ---- replay ------------------------------------------------------------------------------ */

static void test_replay(void)
{
    kopt_tune_cache *c = sample_cache();
    kopt_tune_evaluator *e = NULL;
    kopt_tune_outcome got, o[5];

    sample_outcomes(o);
    if (!c || !CHECK_EQ_INT(kopt_tune_evaluator_replay(&e, ctx, space, c), KOPT_OK))
        goto cleanup;
    CHECK(e->prepare == NULL);
    CHECK_EQ_INT(e->evaluate(e->user, ctx, point_of(SAMPLE_LABELS[0]), 0, &got), KOPT_OK);
    CHECK(same_outcome(&got, &o[0]));
    /* pruned and not recorded: answered from the space */
    CHECK_EQ_INT(e->evaluate(e->user, ctx, point_of("BM=128,BN=32,V=2"), 0, &got), KOPT_OK);
    CHECK_EQ_INT(got.state, KOPT_TUNE_PRUNED);
    CHECK_STR_CONTAINS(got.message, "BM*BN <= 2048");
    /* valid and not recorded: an error naming the point */
    CHECK_EQ_INT(e->evaluate(e->user, ctx, point_of("BM=32,BN=16,V=4"), 0, &got),
                 KOPT_E_NOT_FOUND);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "BM=32,BN=16,V=4 is not in the recorded cache");
cleanup:
    kopt_tune_evaluator_free(e);
    kopt_tune_evaluator_free(NULL);
    kopt_tune_cache_free(c);
}

/* ---- the store ---------------------------------------------------------------------------- */

static void test_store_round_trip(void)
{
    char *path = kopt_path_join(tmp, "tune.db");
    kopt_store *s = NULL;
    kopt_tune_cache *c = NULL, *back = NULL;
    kopt_tune_key k = test_key(), other = test_key();
    kopt_store_tune_sink sink;
    kopt_store_tune_run run, *runs = NULL;
    kopt_tune_outcome o[5];
    int64_t id = 0, id2 = 0;
    size_t n = 99;
    int found = -1, nruns = 0;

    sample_outcomes(o);
    if (!CHECK_EQ_INT(kopt_store_open(&s, ctx, path), KOPT_OK))
        goto cleanup;
    CHECK_EQ_INT(kopt_store_schema_version(s), KOPT_STORE_SCHEMA_VERSION);
    CHECK_EQ_INT(kopt_store_tune_begin(s, ctx, &k, "examples/tc/tune.cu", "random", "x=1", 42,
                                       KOPT_TUNE_TIME_ENERGY, 50, &id), KOPT_OK);
    CHECK(id > 0);
    /* every put goes to the store through the persist hook */
    if (!CHECK_EQ_INT(kopt_tune_cache_create(&c, ctx, space, &k), KOPT_OK))
        goto cleanup;
    sink.store = s;
    sink.run_id = id;
    sink.key = k;
    kopt_tune_cache_set_persist(c, kopt_store_tune_persist, &sink);
    for (int i = 0; i < 5; i++)
        CHECK_EQ_INT(kopt_tune_cache_put(c, ctx, point_of(SAMPLE_LABELS[i]), &o[i]), KOPT_OK);
    /* replacing a label keeps one row */
    CHECK_EQ_INT(kopt_tune_cache_put(c, ctx, point_of(SAMPLE_LABELS[4]), &o[4]), KOPT_OK);
    CHECK_EQ_INT(kopt_tune_cache_create(&back, ctx, space, &k), KOPT_OK);
    CHECK_EQ_INT(kopt_store_tune_load(s, ctx, back, &n), KOPT_OK);
    CHECK_EQ_INT(n, 5);
    for (int i = 0; i < 5; i++) {
        const kopt_tune_outcome *b = kopt_tune_cache_get(back, point_of(SAMPLE_LABELS[i]));
        if (!CHECK(b && same_outcome(b, &o[i])))
            fprintf(stderr, "  outcome %d differs after the store\n", i);
    }
    kopt_tune_cache_free(back);
    back = NULL;
    /* another key sees nothing */
    snprintf(other.device, sizeof(other.device), "NVIDIA H100");
    {
        kopt_tune_cache *o2 = NULL;
        CHECK_EQ_INT(kopt_tune_cache_create(&o2, ctx, space, &other), KOPT_OK);
        CHECK_EQ_INT(kopt_store_tune_load(s, ctx, o2, &n), KOPT_OK);
        CHECK_EQ_INT(n, 0);
        kopt_tune_cache_free(o2);
    }
    /* runs: unfinished, then finished */
    CHECK_EQ_INT(kopt_store_tune_find_unfinished(s, ctx, &k, &run, &found), KOPT_OK);
    CHECK_EQ_INT(found, 1);
    CHECK_EQ_INT(run.id, id);
    CHECK_EQ_STR(run.strategy, "random");
    CHECK_EQ_STR(run.options, "x=1");
    CHECK_EQ_INT(run.seed, 42);
    CHECK_EQ_STR(run.objective, "time_energy");
    CHECK_EQ_INT(run.max_evals, 50);
    CHECK_EQ_INT(run.nevals, 5);
    CHECK_EQ_STR(run.key.device_uuid, "GPU-1234");
    CHECK_EQ_INT(kopt_store_tune_find_unfinished(s, ctx, &other, &run, &found), KOPT_OK);
    CHECK_EQ_INT(found, 0);
    CHECK_EQ_INT(kopt_store_tune_finish(s, ctx, id, KOPT_TUNE_STOP_BUDGET, SAMPLE_LABELS[0],
                                        o[0].time_ms), KOPT_OK);
    CHECK_EQ_INT(kopt_store_tune_find_unfinished(s, ctx, &k, &run, &found), KOPT_OK);
    CHECK_EQ_INT(found, 0);
    CHECK_EQ_INT(kopt_store_tune_finish(s, ctx, 9999, KOPT_TUNE_STOP_BUDGET, NULL, 0),
                 KOPT_E_NOT_FOUND);
    CHECK_EQ_INT(kopt_store_tune_begin(s, ctx, &other, "t2.cu", "annealing", NULL, 7,
                                       KOPT_TUNE_TIME, 0, &id2), KOPT_OK);
    CHECK_EQ_INT(kopt_store_tune_runs(s, ctx, &runs, &nruns), KOPT_OK);
    if (CHECK_EQ_INT(nruns, 2)) {
        CHECK_EQ_INT(runs[0].id, id2);           /* newest first */
        CHECK_EQ_INT(runs[1].finished, 1);
        CHECK_EQ_STR(runs[1].stop, "budget");
        CHECK_EQ_STR(runs[1].best_label, SAMPLE_LABELS[0]);
        CHECK(runs[1].best_value == o[0].time_ms);
        CHECK_EQ_INT(runs[0].finished, 0);
    }
    CHECK_EQ_INT(kopt_store_tune_get_run(s, ctx, id, &run), KOPT_OK);
    CHECK_EQ_STR(run.template_path, "examples/tc/tune.cu");
    CHECK_EQ_STR(run.key.template_hash, tmpl->hash);
    CHECK_EQ_STR(run.key.sizes, "B=4,N=1024");
    CHECK_EQ_INT(kopt_store_tune_get_run(s, ctx, 12345, &run), KOPT_E_NOT_FOUND);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "12345");
cleanup:
    free(runs);
    kopt_tune_cache_free(c);
    kopt_tune_cache_free(back);
    kopt_store_close(s);
    free(path);
}

/* A store as schema version 2 left it (tables of versions 1 and 2, one evaluation). */
static void test_store_migration_from_v2(void)
{
    static const char v2[] =
        "CREATE TABLE devices (uuid TEXT PRIMARY KEY, name TEXT NOT NULL, cc TEXT NOT NULL,"
        "  sm_count INTEGER, info_json TEXT, ceilings_json TEXT, measured_at TEXT);"
        "CREATE TABLE problems (hash TEXT PRIMARY KEY, name TEXT NOT NULL, path TEXT,"
        "  first_seen TEXT);"
        "CREATE TABLE candidates (hash TEXT PRIMARY KEY, problem_hash TEXT, path TEXT,"
        "  source TEXT NOT NULL, is_reference INTEGER NOT NULL DEFAULT 0);"
        "CREATE TABLE evaluations (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT,"
        "  problem_hash TEXT NOT NULL, candidate_hash TEXT, device_uuid TEXT, arch TEXT,"
        "  sizes_json TEXT, seed INTEGER, verdict TEXT NOT NULL, message TEXT,"
        "  median_ms REAL, min_ms REAL, p10_ms REAL, p90_ms REAL, reps INTEGER,"
        "  ref_median_ms REAL, speedup REAL, pct_of_bound REAL, achieved_gbs REAL,"
        "  achieved_gflops REAL, compile_cache_hit INTEGER, compile_ms REAL, verify_ms REAL,"
        "  time_ms REAL, total_ms REAL, compile_log TEXT, result_json TEXT);"
        "CREATE TABLE profiles (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT,"
        "  problem_hash TEXT NOT NULL, candidate_hash TEXT NOT NULL, eval_id INTEGER,"
        "  source TEXT, median_ms REAL, collect_ms REAL, passes INTEGER, metrics_json TEXT);"
        "CREATE TABLE findings (id INTEGER PRIMARY KEY AUTOINCREMENT, profile_id INTEGER,"
        "  problem_hash TEXT NOT NULL, candidate_hash TEXT NOT NULL, tool TEXT NOT NULL,"
        "  kernel TEXT, title TEXT, gain REAL, confidence REAL, median_ms REAL);"
        "CREATE TABLE resolutions (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT,"
        "  problem_hash TEXT NOT NULL, tool TEXT NOT NULL, earlier_candidate TEXT NOT NULL,"
        "  later_candidate TEXT NOT NULL, earlier_profile INTEGER, later_profile INTEGER,"
        "  predicted_gain REAL, realized_gain REAL, earlier_ms REAL, later_ms REAL);"
        "INSERT INTO evaluations (problem_hash, verdict) VALUES ('p', 'OK');"
        "PRAGMA user_version=2;";
    char *path = kopt_path_join(tmp, "v2.db");
    sqlite3 *db = NULL;
    kopt_store *s = NULL;
    kopt_tune_key k = test_key();
    kopt_tune_outcome o[5];
    kopt_tune_cache *c = NULL;
    int64_t n = 0, id = 0;
    size_t loaded = 0;

    sample_outcomes(o);
    if (!CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK) ||
        !CHECK_EQ_INT(sqlite3_exec(db, v2, NULL, NULL, NULL), SQLITE_OK))
        goto cleanup;
    sqlite3_close(db);
    db = NULL;
    if (!CHECK_EQ_INT(kopt_store_open(&s, ctx, path), KOPT_OK))
        goto cleanup;
    CHECK_EQ_INT(kopt_store_schema_version(s), KOPT_STORE_SCHEMA_VERSION);
    CHECK_EQ_INT(kopt_store_count_evals(s, ctx, &n), KOPT_OK);
    CHECK_EQ_INT(n, 1);                          /* the old data is still there */
    CHECK_EQ_INT(kopt_store_tune_begin(s, ctx, &k, "t.cu", "random", NULL, 1, KOPT_TUNE_TIME,
                                       0, &id), KOPT_OK);
    CHECK_EQ_INT(kopt_store_tune_put(s, ctx, id, &k, SAMPLE_LABELS[0], &o[0]), KOPT_OK);
    kopt_store_close(s);
    s = NULL;
    /* reopened: no second migration, the row is there */
    if (!CHECK_EQ_INT(kopt_store_open(&s, ctx, path), KOPT_OK))
        goto cleanup;
    CHECK_EQ_INT(kopt_tune_cache_create(&c, ctx, space, &k), KOPT_OK);
    CHECK_EQ_INT(kopt_store_tune_load(s, ctx, c, &loaded), KOPT_OK);
    CHECK_EQ_INT(loaded, 1);
    CHECK(same_outcome(kopt_tune_cache_get(c, point_of(SAMPLE_LABELS[0])), &o[0]));
cleanup:
    kopt_tune_cache_free(c);
    sqlite3_close(db);
    kopt_store_close(s);
    free(path);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_states_and_objective),
        KTEST(test_map),
        KTEST(test_labels),
        KTEST(test_file_round_trip),
        KTEST(test_load_errors),
        KTEST(test_key_mismatch),
        KTEST(test_export_kt),
        KTEST(test_export_t4),
        KTEST(test_replay),
        KTEST(test_store_round_trip),
        KTEST(test_store_migration_from_v2),
    };
    int rc = 1;

    ctx = kopt_ctx_new();
    tmp = ktest_tmpdir("tune_cache");
    if (!ctx || !tmp)
        return 1;
    if (!(prob = tune_fixture_problem(ctx, tmp, "tc", 1)))
        rc = 1;               /* said why on stderr */
    else if (kopt_candidate_parse(&tmpl, ctx, TEMPLATE, "t.cu", prob) != KOPT_OK)
        fprintf(stderr, "the test template does not parse: %s\n", kopt_errmsg(ctx));
    else if (kopt_tune_space_create(&space, ctx, tmpl, &prob->sizes, NULL) != KOPT_OK)
        fprintf(stderr, "the test space: %s\n", kopt_errmsg(ctx));
    else
        rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    kopt_tune_space_free(space);
    kopt_candidate_free(tmpl);
    kopt_problem_free(prob);
    ktest_rmtree(tmp);
    free(tmp);
    kopt_ctx_free(ctx);
    return rc;
}
