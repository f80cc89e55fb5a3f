/*
 * Export of a tuning cache to other tools' formats (tune.h):
 *
 * - Kernel Tuner's cache file: a header (device_name, kernel_name, problem_size,
 *   tune_params_keys, tune_params, objective) and `cache`, one entry per configuration keyed
 *   by its values joined with commas in param order, each with the params, "time" (ms),
 *   "times", "compile_time", "verification_time", "benchmark_time", "strategy_time",
 *   "framework_time" and "timestamp". A failed configuration carries one of Kernel Tuner's
 *   error markers (InvalidConfig, CompilationFailedConfig, RuntimeFailedConfig) as its time
 *   (the older convention) and as "__error__" (the newer one), so both kinds of reader see
 *   it. Kernel Tuner's simulation mode needs every configuration it visits in the file, so
 *   points the space prunes and the cache lacks are added as InvalidConfig (for spaces up to
 *   KT_FILL_LIMIT points).
 * - The T4 results format of the autotuning-methodology work: schema_version, metadata and
 *   `results`, one per configuration, with configuration, objectives, times, invalidity,
 *   correctness and measurements.
 *
 * Both are written by streaming into a buffer (caches hold up to a million entries), then
 * to the file atomically.
 */
#include "kopt/tune.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define KT_FILL_LIMIT 1000000u
/* Append a string literal. */
#define PUT(b, lit) kopt_buf_append((b), (lit), sizeof(lit) - 1)
#define T4_SCHEMA_VERSION "1.0.0"

/* A JSON number that reads back as the same double, always written as a float (Kernel
 * Tuner ignores integer times when it picks the best); 0.0 for non-finite values. */
static void put_num(kopt_buf *b, double v)
{
    char s[40];

    if (!isfinite(v))
        v = 0;
    snprintf(s, sizeof(s), "%.15g", v);
    if (strtod(s, NULL) != v)
        snprintf(s, sizeof(s), "%.17g", v);
    if (!strpbrk(s, ".en"))   /* keep it a float for Python readers ("1.0", not "1") */
        strcat(s, ".0");
    kopt_buf_append(b, s, strlen(s));
}

static void put_str(kopt_buf *b, const char *s)
{
    json_t *j = json_string(s ? s : "");
    char *text = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;

    kopt_buf_append(b, text ? text : "\"\"", text ? strlen(text) : 2);
    free(text);
    json_decref(j);
}

/* Python's str(datetime.now(timezone.utc)): "2026-05-01 12:34:56.123456+00:00". */
static void utc_timestamp(char *out, size_t len)
{
    struct timeval tv;
    struct tm tm;
    char day[32];

    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    strftime(day, sizeof(day), "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(out, len, "%s.%06ld+00:00", day, (long)tv.tv_usec);
}

/* Kernel Tuner's marker for a failed state; NULL for OK. */
static const char *kt_marker(kopt_tune_state s)
{
    switch (s) {
    case KOPT_TUNE_OK: return NULL;
    case KOPT_TUNE_PRUNED: return "InvalidConfig";
    case KOPT_TUNE_COMPILE_ERROR: return "CompilationFailedConfig";
    case KOPT_TUNE_RESOURCES:     /* too many resources: Kernel Tuner's runtime failure */
    case KOPT_TUNE_FAILED:
    default: return "RuntimeFailedConfig";
    }
}

/* `"BM": 32, "BN": 64` (object members, no braces). */
static void put_params(kopt_buf *b, const kopt_tune_space *s, const int *idx)
{
    for (int i = 0; i < s->nparams; i++) {
        if (i)
            PUT(b, ", ");
        put_str(b, s->params[i].name);
        kopt_buf_printf(b, ": %lld", (long long)s->params[i].values[idx[i]]);
    }
}

static void put_kt_entry(kopt_buf *b, const kopt_tune_space *s, uint64_t point,
                         const kopt_tune_outcome *o, const char *stamp, int first)
{
    int idx[KOPT_TUNE_MAX_PARAMS];
    const char *marker = kt_marker(o->state);

    kopt_tune_space_decode(s, point, idx);
    if (first)
        PUT(b, "\n\"");
    else
        PUT(b, ",\n\"");
    for (int i = 0; i < s->nparams; i++)
        kopt_buf_printf(b, "%s%lld", i ? "," : "", (long long)s->params[i].values[idx[i]]);
    PUT(b, "\": {");
    put_params(b, s, idx);
    if (marker) {
        kopt_buf_printf(b, ", \"time\": \"%s\", \"__error__\": \"%s\"", marker, marker);
    } else {
        PUT(b, ", \"time\": ");
        put_num(b, o->time_ms);
        PUT(b, ", \"times\": [");
        put_num(b, o->time_ms);
        PUT(b, "]");
        if (o->energy_mj > 0) {
            PUT(b, ", \"nvml_energy\": ");   /* joules per run */
            put_num(b, o->energy_mj / 1000.0);
        }
        if (o->power_w > 0) {
            PUT(b, ", \"nvml_power\": ");
            put_num(b, o->power_w);
        }
    }
    PUT(b, ", \"compile_time\": ");
    put_num(b, o->compile_ms);
    PUT(b, ", \"verification_time\": 0.0, \"benchmark_time\": ");
    put_num(b, o->eval_ms);
    kopt_buf_printf(b, ", \"strategy_time\": 0.0, \"framework_time\": 0.0, "
                    "\"timestamp\": \"%s\"}", stamp);
}

kopt_status kopt_tune_cache_write_kt(const kopt_tune_cache *c, kopt_ctx *ctx, const char *path,
                                     const char *kernel_name)
{
    const kopt_tune_space *s = kopt_tune_cache_space(c);
    const kopt_tune_key *k = kopt_tune_cache_key(c);
    kopt_buf b = KOPT_BUF_INIT;
    char stamp[64];
    size_t n = kopt_tune_cache_count(c);
    kopt_status rc;
    int first = 1;

    utc_timestamp(stamp, sizeof(stamp));
    PUT(&b, "{\n\"device_name\": ");
    put_str(&b, k->device);
    PUT(&b, ",\n\"kernel_name\": ");
    put_str(&b, kernel_name);
    PUT(&b, ",\n\"problem_size\": [");
    for (int i = 0; i < s->sizes.n; i++)
        kopt_buf_printf(&b, "%s%lld", i ? ", " : "", (long long)s->sizes.values[i]);
    PUT(&b, "],\n\"tune_params_keys\": [");
    for (int i = 0; i < s->nparams; i++) {
        if (i)
            PUT(&b, ", ");
        put_str(&b, s->params[i].name);
    }
    PUT(&b, "],\n\"tune_params\": {");
    for (int i = 0; i < s->nparams; i++) {
        if (i)
            PUT(&b, ", ");
        put_str(&b, s->params[i].name);
        PUT(&b, ": [");
        for (int v = 0; v < s->params[i].nvalues; v++)
            kopt_buf_printf(&b, "%s%lld", v ? ", " : "", (long long)s->params[i].values[v]);
        PUT(&b, "]");
    }
    PUT(&b, "},\n\"objective\": \"time\",\n\"cache\": {");
    for (size_t i = 0; i < n; i++) {
        uint64_t point;
        const kopt_tune_outcome *o;
        kopt_tune_cache_entry(c, i, &point, &o);
        put_kt_entry(&b, s, point, o, stamp, first);
        first = 0;
    }
    if (s->npoints <= KT_FILL_LIMIT) {
        kopt_tune_outcome pruned;
        memset(&pruned, 0, sizeof(pruned));
        pruned.state = KOPT_TUNE_PRUNED;
        for (uint64_t p = 0; p < s->npoints; p++) {
            if (kopt_tune_cache_get(c, p) || kopt_tune_space_valid(s, p, NULL, 0))
                continue;
            put_kt_entry(&b, s, p, &pruned, stamp, first);
            first = 0;
        }
    }
    PUT(&b, "\n}\n}\n");
    if (!b.ptr) {
        kopt_buf_free(&b);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "%s", path);
    }
    rc = kopt_file_write(ctx, path, b.ptr, b.len);
    kopt_buf_free(&b);
    return rc;
}

/* T4's invalidity: correct, compile, runtime, timeout, correctness or constraints. */
static const char *t4_invalidity(const kopt_tune_outcome *o)
{
    switch (o->state) {
    case KOPT_TUNE_OK: return "correct";
    case KOPT_TUNE_PRUNED: return "constraints";
    case KOPT_TUNE_COMPILE_ERROR: return "compile";
    case KOPT_TUNE_RESOURCES: return "runtime";
    default: break;
    }
    if (strcmp(o->verdict, "TIMEOUT") == 0)
        return "timeout";
    if (strcmp(o->verdict, "WRONG") == 0 || strcmp(o->verdict, "RACE") == 0 ||
        strcmp(o->verdict, "INPUT_MUTATED") == 0 || strcmp(o->verdict, "STATEFUL") == 0)
        return "correctness";
    return "runtime";
}

static void put_measurement(kopt_buf *b, const char *name, double v, const char *unit,
                            int *first)
{
    kopt_buf_printf(b, "%s{\"name\": \"%s\", \"value\": ", *first ? "" : ", ", name);
    put_num(b, v);
    kopt_buf_printf(b, ", \"unit\": \"%s\"}", unit);
    *first = 0;
}

kopt_status kopt_tune_cache_write_t4(const kopt_tune_cache *c, kopt_ctx *ctx, const char *path,
                                     kopt_tune_objective obj)
{
    const kopt_tune_space *s = kopt_tune_cache_space(c);
    const char *objective = obj == KOPT_TUNE_ENERGY ? "energy" : "time";
    kopt_buf b = KOPT_BUF_INIT;
    char stamp[64];
    size_t n = kopt_tune_cache_count(c);
    kopt_status rc;

    utc_timestamp(stamp, sizeof(stamp));
    kopt_buf_printf(&b, "{\n\"schema_version\": \"%s\",\n\"metadata\": {\"timeunit\": "
                    "\"milliseconds\"},\n\"results\": [", T4_SCHEMA_VERSION);
    for (size_t i = 0; i < n; i++) {
        int idx[KOPT_TUNE_MAX_PARAMS], first = 1, ok;
        uint64_t point;
        const kopt_tune_outcome *o;

        kopt_tune_cache_entry(c, i, &point, &o);
        ok = o->state == KOPT_TUNE_OK;
        kopt_tune_space_decode(s, point, idx);
        kopt_buf_printf(&b, "%s\n{\"timestamp\": \"%s\", \"configuration\": {", i ? "," : "",
                        stamp);
        put_params(&b, s, idx);
        kopt_buf_printf(&b, "}, \"objectives\": [\"%s\"], \"times\": {\"compilation\": ",
                        objective);
        put_num(&b, o->compile_ms);
        PUT(&b, ", \"benchmark\": ");
        put_num(&b, o->eval_ms);
        PUT(&b, ", \"framework\": 0.0, \"search_algorithm\": 0.0, \"validation\": 0.0, "
                        "\"runtimes\": [");
        if (ok)
            put_num(&b, o->time_ms);
        kopt_buf_printf(&b, "]}, \"invalidity\": \"%s\", \"correctness\": %d, "
                        "\"measurements\": [", t4_invalidity(o),
                        strcmp(t4_invalidity(o), "correctness") == 0 ? 0 : 1);
        if (ok)
            put_measurement(&b, "time", o->time_ms, "ms", &first);
        if (ok && o->energy_mj > 0)
            put_measurement(&b, "energy", o->energy_mj, "mJ", &first);
        if (ok && o->power_w > 0)
            put_measurement(&b, "power", o->power_w, "W", &first);
        if (o->registers > 0)
            put_measurement(&b, "registers", o->registers, "", &first);
        PUT(&b, "]}");
    }
    PUT(&b, "\n]\n}\n");
    if (!b.ptr) {
        kopt_buf_free(&b);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "%s", path);
    }
    rc = kopt_file_write(ctx, path, b.ptr, b.len);
    kopt_buf_free(&b);
    return rc;
}
