/* A program profile (one PyTorch forward, kernel by kernel) read from its JSON, and what the
 * record alone gives: each kernel's origin, share of the GPU time, DRAM bytes, FLOP and
 * their rates; the program's GPU and busy time, its host gaps, and the bytes a perfectly
 * fused kernel would not move. Format: docs/formats.md ("Program profile"). The DRAM rate
 * those bytes cost, the classes and the advice come later (src/analyze/program.c). */
#include "kopt/profile.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where in the document a value sits, for messages: "kernels[2].grid[1]". */
typedef struct reader {
    kopt_ctx *ctx;
    const char *path;
} reader;

static kopt_status bad(const reader *r, const char *field, const char *expected)
{
    return kopt_seterr(r->ctx, KOPT_E_INVALID, "%s: %s: expected %s", r->path, field, expected);
}

/* An optional number >= min: *present says whether it was there. */
static kopt_status opt_number(const reader *r, json_t *obj, const char *key, const char *field,
                              double min, double *out, int *present)
{
    json_t *v = json_object_get(obj, key);

    *present = 0;
    if (!v || json_is_null(v))
        return KOPT_OK;
    if (!json_is_number(v) || json_number_value(v) < min) {
        char what[64];
        snprintf(what, sizeof(what), "a number >= %g", min);
        return bad(r, field, what);
    }
    *out = json_number_value(v);
    *present = 1;
    return KOPT_OK;
}

static int int_value(json_t *v, int *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 0x7fffffff)
        return 0;
    *out = (int)json_integer_value(v);
    return 1;
}

/* An optional integer from 0 to 2^31-1 (absent: *out untouched). */
static kopt_status opt_int(const reader *r, json_t *obj, const char *key, const char *field,
                           int *out)
{
    json_t *v = json_object_get(obj, key);

    if (!v || json_is_null(v))
        return KOPT_OK;
    if (!int_value(v, out))
        return bad(r, field, "an integer from 0 to 2^31-1");
    return KOPT_OK;
}

/* An optional [x, y, z] of such integers. */
static kopt_status opt_dim(const reader *r, json_t *obj, const char *key, const char *field,
                           int out[3])
{
    json_t *a = json_object_get(obj, key);
    char elem[96];

    if (!a || json_is_null(a))
        return KOPT_OK;
    if (!json_is_array(a) || json_array_size(a) != 3)
        return bad(r, field, "an array of 3 integers");
    for (int d = 0; d < 3; d++) {
        snprintf(elem, sizeof(elem), "%s[%d]", field, d);
        if (!int_value(json_array_get(a, (size_t)d), &out[d]))
            return bad(r, elem, "an integer from 0 to 2^31-1");
    }
    return KOPT_OK;
}

/* An optional string, copied into *out (absent: ""). */
static kopt_status opt_string(const reader *r, json_t *obj, const char *key, const char *field,
                              char **out)
{
    json_t *v = json_object_get(obj, key);

    if (v && !json_is_null(v) && !json_is_string(v))
        return bad(r, field, "a string");
    if (!(*out = strdup(v && json_is_string(v) ? json_string_value(v) : "")))
        return kopt_seterr(r->ctx, KOPT_E_NOMEM, "%s: %s: out of memory", r->path, field);
    return KOPT_OK;
}

static kopt_status read_device(const reader *r, json_t *root, kopt_program *p)
{
    json_t *d = json_object_get(root, "device"), *name;
    kopt_status rc;

    if (!d || json_is_null(d))
        return KOPT_OK;
    if (!json_is_object(d))
        return bad(r, "device", "an object {name, cc_major, cc_minor, sm_count}");
    name = json_object_get(d, "name");
    if (name && !json_is_null(name) && !json_is_string(name))
        return bad(r, "device.name", "a string");
    if (json_is_string(name))
        snprintf(p->device.name, sizeof(p->device.name), "%s", json_string_value(name));
    if ((rc = opt_int(r, d, "cc_major", "device.cc_major", &p->device.cc_major)) != KOPT_OK ||
        (rc = opt_int(r, d, "cc_minor", "device.cc_minor", &p->device.cc_minor)) != KOPT_OK ||
        (rc = opt_int(r, d, "sm_count", "device.sm_count", &p->device.sm_count)) != KOPT_OK)
        return rc;
    p->has_device = 1;
    return KOPT_OK;
}

static kopt_status read_metrics(const reader *r, json_t *obj, int k, kopt_program_kernel *kp)
{
    json_t *ms = json_object_get(obj, "metrics"), *v;
    const char *key;
    char field[320];

    if (!ms || json_is_null(ms))
        return KOPT_OK;
    if (!json_is_object(ms)) {
        snprintf(field, sizeof(field), "kernels[%d].metrics", k);
        return bad(r, field, "an object of metric name -> number");
    }
    json_object_foreach(ms, key, v) {
        if (!json_is_number(v)) {
            snprintf(field, sizeof(field), "kernels[%d].metrics.%.200s", k, key);
            return bad(r, field, "a number");
        }
        if (kopt_metrics_set(&kp->metrics, key, json_number_value(v)) != KOPT_OK)
            return kopt_seterr(r->ctx, KOPT_E_NOMEM, "%s: kernels[%d].metrics: out of memory",
                               r->path, k);
    }
    return KOPT_OK;
}

/* "kernels[k].<f>" into buf, for messages. */
static const char *kernel_field(char *buf, size_t n, int k, const char *f)
{
    snprintf(buf, n, "kernels[%d].%s", k, f);
    return buf;
}

static kopt_status read_kernel(const reader *r, json_t *obj, int k, kopt_program_kernel *kp)
{
    json_t *name = json_object_get(obj, "name");
    char f[96];
    double ns;
    int present = 0;
    kopt_status rc;

    if (!json_is_object(obj)) {
        snprintf(f, sizeof(f), "kernels[%d]", k);
        return bad(r, f, "an object");
    }
    if (!json_is_string(name) || !json_string_value(name)[0])
        return bad(r, kernel_field(f, sizeof(f), k, "name"),
                   "a non-empty string (the demangled kernel name)");
    if (!(kp->name = strdup(json_string_value(name))))
        return kopt_seterr(r->ctx, KOPT_E_NOMEM, "%s: out of memory", r->path);
    kp->origin = kopt_kernel_origin_of(kp->name);
    /* Each field's name is written into f just before it is read (|| runs them in order). */
    if ((rc = opt_string(r, obj, "op", kernel_field(f, sizeof(f), k, "op"), &kp->op)) ||
        (rc = opt_dim(r, obj, "grid", kernel_field(f, sizeof(f), k, "grid"), kp->grid)) ||
        (rc = opt_dim(r, obj, "block", kernel_field(f, sizeof(f), k, "block"), kp->block)) ||
        (rc = opt_int(r, obj, "registers", kernel_field(f, sizeof(f), k, "registers"),
                      &kp->registers)) ||
        (rc = opt_int(r, obj, "static_smem", kernel_field(f, sizeof(f), k, "static_smem"),
                      &kp->static_smem)) ||
        (rc = opt_int(r, obj, "dynamic_smem", kernel_field(f, sizeof(f), k, "dynamic_smem"),
                      &kp->dynamic_smem)) ||
        (rc = opt_number(r, obj, "start_us", kernel_field(f, sizeof(f), k, "start_us"), 0,
                         &kp->start_us, &kp->has_start)) ||
        (rc = opt_number(r, obj, "dur_us", kernel_field(f, sizeof(f), k, "dur_us"), 0,
                         &kp->dur_us, &present)) ||
        (rc = read_metrics(r, obj, k, kp)))
        return rc;
    if (!present) {
        if (!kopt_metrics_get(&kp->metrics, "gpu__time_duration.sum", &ns) || ns < 0)
            return bad(r, kernel_field(f, sizeof(f), k, "dur_us"), "a number >= 0 (it is "
                       "missing, and so is the metric gpu__time_duration.sum)");
        kp->dur_us = ns / 1e3;
    }
    return KOPT_OK;
}

/* ---- what the record gives ------------------------------------------------------------- */

/* The FP32 and FP64 instructions a kernel executed, counted per warp (the counters count
 * threads). */
static double fp_warp_instructions(const kopt_metrics *m)
{
    static const char *const ops[] = {"fadd", "fmul", "ffma", "dadd", "dmul", "dfma"};
    char name[80];
    double v, sum = 0;

    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        snprintf(name, sizeof(name), "smsp__sass_thread_inst_executed_op_%s_pred_on.sum", ops[i]);
        if (kopt_metrics_get(m, name, &v))
            sum += v;
    }
    return sum / 32;
}

static void derive_kernel(kopt_program_kernel *kp)
{
    double rd, wr, ns = 0, t_ns;

    kp->dram_bytes = kopt_metrics_get(&kp->metrics, "dram__bytes_read.sum", &rd) &&
                     kopt_metrics_get(&kp->metrics, "dram__bytes_write.sum", &wr)
                         ? rd + wr : -1;
    if (!kopt_metrics_flops(&kp->metrics, &kp->flops))
        kp->flops = -1;
    /* Tensor cores: more tensor-pipe instructions than FP32/FP64 ones (warp-level). A
     * few tensor-pipe instructions show up in kernels without any MMA (an FP32 SIMT GEMM
     * 4800 beside 12.6 M FP instructions, a LayerNorm 74 K beside 0.9 M: recorded on an
     * H200, tests/data/program), so any count above zero does not mean tensor cores. */
    kp->tensor = -1;
    if (kopt_metrics_get(&kp->metrics, "sm__inst_executed_pipe_tensor.sum", &rd))
        kp->tensor = rd > fp_warp_instructions(&kp->metrics);
    /* Rates over the same replay the counters came from, when its duration is there. */
    kopt_metrics_get(&kp->metrics, "gpu__time_duration.sum", &ns);
    t_ns = ns > 0 ? ns : kp->dur_us * 1e3;
    kp->gbs = kp->dram_bytes >= 0 && t_ns > 0 ? kp->dram_bytes / t_ns : 0;   /* B/ns = GB/s */
    kp->gflops = kp->flops >= 0 && t_ns > 0 ? kp->flops / t_ns : 0;
}

static int by_start(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Busy time (the union of the kernels' intervals) and span, in microseconds. */
static kopt_status union_of_intervals(kopt_program *p, kopt_ctx *ctx, const char *path,
                                      double *busy_us, double *span_us)
{
    double (*iv)[2] = malloc((size_t)p->nkernels * sizeof(*iv));
    double busy = 0, first, last_end, cur_start, cur_end;

    if (!iv)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "%s: out of memory", path);
    for (int k = 0; k < p->nkernels; k++) {
        iv[k][0] = p->kernels[k].start_us;
        iv[k][1] = p->kernels[k].start_us + p->kernels[k].dur_us;
    }
    qsort(iv, (size_t)p->nkernels, sizeof(*iv), by_start);
    first = cur_start = iv[0][0];
    last_end = cur_end = iv[0][1];
    for (int k = 1; k < p->nkernels; k++) {
        if (iv[k][0] > cur_end) {
            busy += cur_end - cur_start;
            cur_start = iv[k][0];
            cur_end = iv[k][1];
        } else if (iv[k][1] > cur_end) {
            cur_end = iv[k][1];
        }
        if (iv[k][1] > last_end)
            last_end = iv[k][1];
    }
    busy += cur_end - cur_start;
    free(iv);
    *busy_us = busy;
    *span_us = last_end - first;
    return KOPT_OK;
}

static kopt_status derive_program(kopt_program *p, kopt_ctx *ctx, const char *path)
{
    double sum_us = 0, busy_us, span_us;
    kopt_status rc;

    p->has_starts = 1;
    for (int k = 0; k < p->nkernels; k++) {
        kopt_program_kernel *kp = &p->kernels[k];
        derive_kernel(kp);
        sum_us += kp->dur_us;
        p->has_starts &= kp->has_start;
        if (kp->dram_bytes >= 0) {
            p->dram_measured++;
            p->dram_bytes += kp->dram_bytes;
        }
    }
    for (int k = 0; k < p->nkernels; k++)
        p->kernels[k].share = sum_us > 0 ? p->kernels[k].dur_us / sum_us : 0;
    p->gpu_ms = sum_us / 1e3;
    busy_us = span_us = sum_us;
    if (p->has_starts &&
        (rc = union_of_intervals(p, ctx, path, &busy_us, &span_us)) != KOPT_OK)
        return rc;
    p->busy_ms = busy_us / 1e3;
    p->span_ms = span_us / 1e3;
    p->gap_between_ms = p->span_ms - p->busy_ms;
    p->gap_outside_ms = p->forward_ms > p->span_ms ? p->forward_ms - p->span_ms : 0;
    p->gap_ms = p->gap_between_ms + p->gap_outside_ms;
    /* the trace's forward ran under the profiler, whose host-side cost widens the gaps
     * between launches (recorded on an H200: a 0.067 ms forward traced over 0.11 ms): the
     * unprofiled forward bounds them, at forward_ms - busy_ms, split between and outside
     * in the trace's proportions */
    if (p->forward_ms > 0 && p->gap_ms > p->forward_ms - p->busy_ms) {
        double total = p->forward_ms > p->busy_ms ? p->forward_ms - p->busy_ms : 0;
        double f = p->gap_ms > 0 ? total / p->gap_ms : 0;
        p->gap_between_ms *= f;
        p->gap_outside_ms *= f;
        p->gap_ms = total;
    }
    if (p->forward_ms > 0)
        p->gap_share = p->gap_ms / p->forward_ms;
    else if (p->span_ms > 0)
        p->gap_share = p->gap_ms / p->span_ms;
    if (p->gap_share > 1)
        p->gap_share = 1;
    p->fusion_bytes = -1;
    if (p->dram_measured > 0 && p->compulsory_bytes >= 0)
        p->fusion_bytes = p->dram_bytes > p->compulsory_bytes
                              ? p->dram_bytes - p->compulsory_bytes : 0;
    return KOPT_OK;
}

/* ---- the entry point ------------------------------------------------------------------- */

kopt_status kopt_program_from_json(kopt_program **out, kopt_ctx *ctx, const char *text,
                                   const char *path)
{
    reader r = {ctx, path ? path : "(program profile)"};
    json_error_t err;
    json_t *root = NULL, *arr, *subject;
    kopt_program *p = NULL;
    kopt_status rc = KOPT_OK;
    int n, present;

    *out = NULL;
    if (!text) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s: no text", r.path);
        goto done;
    }
    if (!(root = json_loads(text, 0, &err))) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s:%d:%d: %s", r.path, err.line, err.column,
                         err.text);
        goto done;
    }
    if (!json_is_object(root)) {
        rc = bad(&r, "(top level)", "an object with \"kernels\"");
        goto done;
    }
    if (!(p = calloc(1, sizeof(*p)))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "%s: out of memory", r.path);
        goto done;
    }
    subject = json_object_get(root, "subject");
    if (subject && !json_is_null(subject)) {
        const char *s = json_string_value(subject);
        if (!s || (strcmp(s, "reference") != 0 && strcmp(s, "modelnew") != 0 &&
                   strcmp(s, "host") != 0)) {
            rc = bad(&r, "subject", "\"reference\", \"modelnew\" or \"host\"");
            goto done;
        }
        snprintf(p->subject, sizeof(p->subject), "%s", s);
    }
    p->compulsory_bytes = -1;
    if ((rc = read_device(&r, root, p)) != KOPT_OK ||
        (rc = opt_number(&r, root, "forward_ms", "forward_ms", 0, &p->forward_ms,
                         &present)) != KOPT_OK ||
        (rc = opt_number(&r, root, "compulsory_bytes", "compulsory_bytes", 0,
                         &p->compulsory_bytes, &present)) != KOPT_OK)
        goto done;
    arr = json_object_get(root, "kernels");
    if (!json_is_array(arr)) {
        rc = bad(&r, "kernels", "an array of kernels in launch order");
        goto done;
    }
    if ((n = (int)json_array_size(arr)) == 0) {
        rc = kopt_seterr(ctx, KOPT_E_NOT_FOUND, "%s: no kernel in \"kernels\"", r.path);
        goto done;
    }
    if (!(p->kernels = calloc((size_t)n, sizeof(*p->kernels)))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "%s: out of memory", r.path);
        goto done;
    }
    for (int k = 0; k < n; k++) {
        p->nkernels = k + 1;   /* what is filled so far is freed on error */
        if ((rc = read_kernel(&r, json_array_get(arr, (size_t)k), k, &p->kernels[k])) !=
            KOPT_OK)
            goto done;
    }
    if ((rc = derive_program(p, ctx, r.path)) != KOPT_OK)
        goto done;
    *out = p;
    p = NULL;
done:
    kopt_program_free(p);
    json_decref(root);
    return rc;
}

void kopt_program_free(kopt_program *p)
{
    if (!p)
        return;
    for (int k = 0; k < p->nkernels; k++) {
        free(p->kernels[k].name);
        free(p->kernels[k].op);
        kopt_metrics_clear(&p->kernels[k].metrics);
    }
    free(p->kernels);
    free(p);
}
