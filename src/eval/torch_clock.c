/*
 * The PyTorch worker's timer and kernel census (include/kopt/clock.h): CUDA events recorded
 * and read through kopt's own driver table, the samples kept here and written to the event
 * pipe from here, so a candidate's Python that replaces torch.cuda.Event, time.perf_counter
 * or the worker's own functions changes no sample. The worker checks after each call that
 * the functions it bound are still these (libexec/kopt_torch_guard.py); the sandbox's watch
 * covers the first bytes of the driver's event functions.
 */
#include "kopt/clock.h"

#include "../cuda/cuda_int.h"
#include "../profile/cupti_int.h"
#include "kopt/core.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct kopt_clock {
    int cuda, nmarks;
    const kopt_cu_api *cu;
    CUevent *ev;               /* 2 per mark: start, end */
    double *t;                 /* wall clock: 2 per mark, ms */
    double *kept[3];           /* per series */
    int nkept[3], capkept[3];
};

static __thread char last_error[512];

/* Keep "what (code)" as the last error; -1. */
static int fail(const char *what, int code)
{
    snprintf(last_error, sizeof(last_error), "%s (%d)", what, code);
    return -1;
}

const char *kopt_clock_error(void)
{
    return last_error;
}

kopt_clock *kopt_clock_new(int nmarks, int cuda)
{
    kopt_clock *c = calloc(1, sizeof(*c));
    kopt_ctx *ctx = NULL;

    last_error[0] = '\0';
    if (!c || nmarks < 1)
        goto bad;
    c->cuda = cuda;
    c->nmarks = nmarks;
    c->t = calloc((size_t)nmarks * 2, sizeof(double));
    if (!c->t)
        goto bad;
    if (cuda) {
        ctx = kopt_ctx_new();
        if (!ctx || kopt__cuda_load(ctx, &c->cu) != KOPT_OK) {
            snprintf(last_error, sizeof(last_error), "the CUDA driver: %s",
                     ctx ? kopt_errmsg(ctx) : "no memory");
            goto bad;
        }
        c->ev = calloc((size_t)nmarks * 2, sizeof(CUevent));
        if (!c->ev)
            goto bad;
        for (int i = 0; i < nmarks * 2; i++) {
            CUresult r = c->cu->cuEventCreate(&c->ev[i], CU_EVENT_DEFAULT);
            if (r != CUDA_SUCCESS) {
                fail("cuEventCreate failed", (int)r);
                goto bad;
            }
        }
    }
    kopt_ctx_free(ctx);
    return c;
bad:
    if (!last_error[0])
        snprintf(last_error, sizeof(last_error), "no memory for the clock");
    kopt_ctx_free(ctx);
    kopt_clock_free(c);
    return NULL;
}

void kopt_clock_free(kopt_clock *c)
{
    if (!c)
        return;
    if (c->ev && c->cu)
        for (int i = 0; i < c->nmarks * 2; i++)
            if (c->ev[i])
                c->cu->cuEventDestroy(c->ev[i]);
    free(c->ev);
    free(c->t);
    for (int s = 0; s < 3; s++)
        free(c->kept[s]);
    free(c);
}

static int record(kopt_clock *c, int slot, void *stream)
{
    CUresult r;

    if (!c || slot < 0 || slot >= c->nmarks * 2)
        return fail("bad clock mark", slot);
    if (!c->cuda) {
        c->t[slot] = kopt_now_ms();
        return 0;
    }
    r = c->cu->cuEventRecord(c->ev[slot], (CUstream)stream);
    return r == CUDA_SUCCESS ? 0 : fail("cuEventRecord failed", (int)r);
}

int kopt_clock_begin(kopt_clock *c, int mark, void *stream)
{
    return record(c, 2 * mark, stream);
}

int kopt_clock_end(kopt_clock *c, int mark, void *stream)
{
    int rc = record(c, 2 * mark + 1, stream);

    if (rc || !c->cuda)
        return rc;
    /* the start done already: the GPU waited for the host */
    return c->cu->cuEventQuery(c->ev[2 * mark]) == CUDA_SUCCESS;
}

int kopt_clock_read(kopt_clock *c, int mark, int series, double *ms)
{
    float f = 0;

    if (!c || mark < 0 || mark >= c->nmarks || series < 0 || series > 2 || !ms)
        return fail("bad clock read", mark);
    if (c->cuda) {
        CUresult r = c->cu->cuEventElapsedTime(&f, c->ev[2 * mark], c->ev[2 * mark + 1]);
        if (r != CUDA_SUCCESS)
            return fail("cuEventElapsedTime failed", (int)r);
        *ms = f;
    } else {
        *ms = c->t[2 * mark + 1] - c->t[2 * mark];
    }
    if (series == KOPT_CLOCK_WARMUP)
        return 0;
    if (c->nkept[series] == c->capkept[series]) {
        int cap = c->capkept[series] ? 2 * c->capkept[series] : 256;
        double *p = realloc(c->kept[series], (size_t)cap * sizeof(double));
        if (!p)
            return fail("no memory", cap);
        c->kept[series] = p;
        c->capkept[series] = cap;
    }
    c->kept[series][c->nkept[series]++] = *ms;
    return 0;
}

static void put_series(kopt_buf *b, const char *key, const double *v, int n)
{
    kopt_buf_printf(b, ", \"%s\": [", key);
    for (int i = 0; i < n; i++)
        kopt_buf_printf(b, "%s%.17g", i ? ", " : "", v[i]);
    kopt_buf_append(b, "]", 1);
}

int kopt_clock_report(kopt_clock *c, int fd, int phase)
{
    kopt_buf b = KOPT_BUF_INIT;
    const char *p;
    size_t n;
    int rc = 0;

    if (!c)
        return fail("no clock", 0);
    kopt_buf_printf(&b, "{\"event\": \"clock\", \"phase\": %d, \"clock\": \"%s\"", phase,
                    c->cuda ? "cuda events (libkopt)" : "monotonic wall clock (libkopt)");
    put_series(&b, "samples_ms", c->kept[KOPT_CLOCK_TIMED], c->nkept[KOPT_CLOCK_TIMED]);
    put_series(&b, "overhead_ms", c->kept[KOPT_CLOCK_OVERHEAD], c->nkept[KOPT_CLOCK_OVERHEAD]);
    kopt_buf_append(&b, "}\n", 2);
    p = kopt_buf_cstr(&b);
    n = strlen(p);
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = fail("writing the clock's report failed", errno);
            break;
        }
        p += w;
        n -= (size_t)w;
    }
    kopt_buf_free(&b);
    c->nkept[KOPT_CLOCK_TIMED] = c->nkept[KOPT_CLOCK_OVERHEAD] = 0;
    return rc;
}

/* ---- the kernel census ------------------------------------------------------------------ */

static void census_error(kopt_ctx *ctx)
{
    snprintf(last_error, sizeof(last_error), "%s", kopt_errmsg(ctx));
}

int kopt_clock_census_begin(void)
{
    kopt_ctx *ctx = kopt_ctx_new();
    int rc;

    if (!ctx)
        return fail("no memory", 0);
    rc = kopt__cupti_activity_begin(ctx) == KOPT_OK ? 0 : -1;
    if (rc)
        census_error(ctx);
    kopt_ctx_free(ctx);
    return rc;
}

int kopt_clock_census_end(char *out, size_t cap)
{
    kopt_ctx *ctx = kopt_ctx_new();
    char **names = NULL;
    int n = 0, rc = -1;
    json_t *arr;
    char *text;

    if (!ctx)
        return fail("no memory", 0);
    if (kopt__cupti_activity_end(ctx, &names, &n) != KOPT_OK) {
        census_error(ctx);
        kopt_ctx_free(ctx);
        return -1;
    }
    arr = json_array();
    for (int i = 0; i < n; i++) {
        json_array_append_new(arr, json_string(names[i]));
        free(names[i]);
    }
    free(names);
    /* names beyond the room are dropped from the end and counted */
    while ((text = json_dumps(arr, JSON_COMPACT)) && strlen(text) + 32 > cap &&
           json_array_size(arr) > 0) {
        free(text);
        json_array_remove(arr, json_array_size(arr) - 1);
        text = NULL;
    }
    if (text && (int)json_array_size(arr) < n) {
        char more[32];
        free(text);
        snprintf(more, sizeof(more), "+%d more", n - (int)json_array_size(arr));
        json_array_append_new(arr, json_string(more));
        text = json_dumps(arr, JSON_COMPACT);
    }
    if (text && strlen(text) < cap) {
        memcpy(out, text, strlen(text) + 1);
        rc = 0;
    } else {
        fail("no room for the census", (int)cap);
    }
    free(text);
    json_decref(arr);
    kopt_ctx_free(ctx);
    return rc;
}
