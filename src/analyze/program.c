/* A program profile analyzed: each kernel classified alone by the CUDA path's rules
 * (kopt_classify on a one-kernel input: its measured FLOP and DRAM bytes over its
 * duration), the program's time-weighted class (host gaps count as latency), the fusion
 * bytes priced at the DRAM rate, and the micro-tools run over the program's kernels with
 * the forward's time as the time every gain is a share of. */
#include "analyze_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A class holding at least this share of the program's time selects its tools. */
#define KOPT_PROGRAM_CLASS_MIN_SHARE 0.10

double kopt__fusion_ms(const kopt_analysis_input *in, double *gbs)
{
    double rate = 0, gflops;

    if (gbs)
        *gbs = 0;
    if (!in->program || !kopt__rates(in, -1, &rate, &gflops) || rate <= 0)
        return -1;
    if (gbs)
        *gbs = rate;
    if (in->program->fusion_bytes < 0)
        return -1;
    return in->program->fusion_bytes / (rate * 1e6);   /* GB/s -> bytes per ms */
}

/* FP64 when its FP64 counters count more FLOP than its FP32 ones, else FP32. */
static int kernel_compute(const kopt_program_kernel *kp)
{
    const kopt_metrics *m = &kp->metrics;
    double fp64 = kopt_metrics_value(m, "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum", 0) +
                  kopt_metrics_value(m, "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum", 0) +
                  2 * kopt_metrics_value(m, "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
                                         0);

    return kp->flops > 0 && fp64 > kp->flops - fp64 ? KOPT_COMPUTE_FP64 : KOPT_COMPUTE_FP32;
}

/* One kernel alone: its own work (measured FLOP and DRAM bytes) over its own duration. */
static void classify_kernel(const kopt_program_analysis *a, int k, kopt_classification *out)
{
    const kopt_program_kernel *kp = &a->prog->kernels[k];
    kopt_analysis_input in;
    const char *why = NULL;

    memset(&in, 0, sizeof(in));
    in.dev = a->has_dev ? &a->dev : NULL;
    in.ceil = a->ceil.valid ? &a->ceil : NULL;
    in.problem = kp->name;
    in.compute = kernel_compute(kp);
    in.median_ms = kp->dur_us / 1e3;
    in.nkernels = 1;
    in.kernels = &a->views[k];
    /* A FLOP count of 0 would read as "memory-bound, no FLOP": without one, no analytic
     * class, and the measurement decides. */
    if (kp->tensor == 1)
        why = "its FLOP are not known (tensor-core work is not in the FP32/FP64 counters)";
    else if (kp->flops < 0)
        why = "its FLOP were not measured";
    else if (kp->dram_bytes < 0)
        why = "its DRAM bytes were not measured";
    if (!why) {
        in.flops = kp->flops;
        in.bytes = kp->dram_bytes;
    }
    kopt_classify(&in, out);
    if (why) {   /* said first, the classification's reasoning after it (cut to fit) */
        char prefix[160];
        size_t np = (size_t)snprintf(prefix, sizeof(prefix), "Kernel %d: %s. ", k + 1, why);
        size_t room = sizeof(out->reasoning) - 1, nr = strlen(out->reasoning);
        if (np > room)
            np = room;
        if (nr > room - np)
            nr = room - np;
        memmove(out->reasoning + np, out->reasoning, nr);
        memcpy(out->reasoning, prefix, np);
        out->reasoning[np + nr] = '\0';
    }
}

static void add_time(kopt_program_class_time *t, kopt_class c, double ms)
{
    switch (c) {
    case KOPT_CLASS_COMPUTE:
        t->compute += ms;
        break;
    case KOPT_CLASS_MEMORY:
        t->memory += ms;
        break;
    case KOPT_CLASS_LATENCY:
        t->latency += ms;
        break;
    case KOPT_CLASS_MIXED:
        t->mixed += ms;
        break;
    default:
        t->unknown += ms;
        break;
    }
}

/* The class with the most time (ties: the earlier in this order), and the classes that
 * hold at least KOPT_PROGRAM_CLASS_MIN_SHARE of it. */
static kopt_class weighted_class(const kopt_program_class_time *t, unsigned *classes)
{
    const struct { kopt_class c; double ms; } order[] = {
        {KOPT_CLASS_COMPUTE, t->compute}, {KOPT_CLASS_MEMORY, t->memory},
        {KOPT_CLASS_LATENCY, t->latency}, {KOPT_CLASS_MIXED, t->mixed},
        {KOPT_CLASS_UNKNOWN, t->unknown},
    };
    double total = 0, best = 0;
    kopt_class c = KOPT_CLASS_UNKNOWN;

    *classes = 0;
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
        total += order[i].ms;
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        if (order[i].ms > best) {
            best = order[i].ms;
            c = order[i].c;
        }
        if (total > 0 && order[i].ms >= KOPT_PROGRAM_CLASS_MIN_SHARE * total)
            *classes |= (unsigned)order[i].c;
    }
    return c;
}

/* The views the tools see: labels, launch, resources from the trace, metrics, time. */
static void build_views(kopt_program_analysis *a)
{
    for (int k = 0; k < a->prog->nkernels; k++) {
        const kopt_program_kernel *kp = &a->prog->kernels[k];
        kopt_kernel_view *v = &a->views[k];
        char shortname[KOPT_PROGRAM_LABEL];
        kopt_kernel_short_name(kp->name, shortname, sizeof(shortname));
        snprintf(a->labels[k], sizeof(a->labels[k]), "#%d %.*s", k + 1,
                 (int)sizeof(a->labels[k]) - 16, shortname);
        v->name = a->labels[k];
        memcpy(v->grid, kp->grid, sizeof(v->grid));
        memcpy(v->block, kp->block, sizeof(v->block));
        v->dyn_smem = kp->dynamic_smem;
        if (kp->registers > 0 || kp->static_smem > 0) {
            snprintf(a->res[k].name, sizeof(a->res[k].name), "%s", a->labels[k]);
            a->res[k].registers = kp->registers;
            a->res[k].static_smem = kp->static_smem;
            v->res = &a->res[k];
        }
        v->metrics = kp->metrics.n > 0 ? &kp->metrics : NULL;
        v->ms = kp->dur_us / 1e3;
    }
}

/* 1 when kernel k computes a contraction (a GEMM or a convolution): its torch op or its
 * name says so. */
static int contraction_kernel(const kopt_program_kernel *kp)
{
    static const char *const ops[] = {"mm", "conv", "linear", "matmul", "einsum", "gemm", NULL};

    for (int i = 0; ops[i]; i++)
        if ((kp->op && kopt__contains_ci(kp->op, ops[i])) || kopt__contains_ci(kp->name, ops[i]))
            return 1;
    return 0;
}

/* no_tensor_cores judges the problem (a contraction) kernel by kernel: in a program, only
 * the kernels that compute the contraction are its subject, not the elementwise ones
 * around them (a ReLU is no tensor-core candidate). */
static void drop_elementwise_tensor_advice(kopt_program_analysis *a)
{
    kopt_findings *fs = a->an ? &a->an->findings : NULL;
    int w = 0;

    for (int i = 0; fs && i < fs->n; i++) {
        kopt_finding *f = &fs->f[i];
        int k = 0;
        while (k < a->prog->nkernels && strcmp(a->labels[k], f->kernel) != 0)
            k++;
        if (strcmp(f->tool, "no_tensor_cores") == 0 && k < a->prog->nkernels &&
            !contraction_kernel(&a->prog->kernels[k])) {
            kopt__finding_release(f);
            continue;
        }
        fs->f[w++] = *f;
    }
    if (fs)
        fs->n = w;
}

/* A kernel tool's advice on a library's kernel is about code the program does not own:
 * say so at the head of its change, with what acting on it takes. */
static kopt_status note_library_kernels(kopt_program_analysis *a, kopt_ctx *ctx)
{
    for (int i = 0; a->an && i < a->an->findings.n; i++) {
        kopt_finding *f = &a->an->findings.f[i];
        kopt_buf b = KOPT_BUF_INIT;
        const char *op;
        int k = 0;

        if (!f->kernel[0])
            continue;
        while (k < a->prog->nkernels && strcmp(a->labels[k], f->kernel) != 0)
            k++;
        if (k == a->prog->nkernels || !kopt_kernel_origin_is_library(a->prog->kernels[k].origin))
            continue;
        op = a->prog->kernels[k].op ? a->prog->kernels[k].op : "";
        if (kopt_buf_printf(&b, "This is %s's kernel%s%s%s: the program cannot change it; to "
                            "act on this, compute that step in a kernel of its own (or call "
                            "the library differently). %s",
                            kopt_kernel_origin_name(a->prog->kernels[k].origin),
                            op[0] ? " (" : "", op, op[0] ? ")" : "",
                            f->change ? f->change : "") < 0) {
            kopt_buf_free(&b);
            return kopt_seterr(ctx, KOPT_E_NOMEM, "program analysis: finding text");
        }
        free(f->change);
        f->change = kopt_buf_detach(&b);
    }
    return KOPT_OK;
}

/* The problem's work: given, else measured. Measured FLOP count only when every kernel's
 * were counted and none ran on tensor cores (their work is not in the counters); without
 * FLOP the bytes are left out too, so no class is made up from bytes alone. */
static void program_work(const kopt_program *p, const kopt_program_analyze_opts *o,
                         double *flops, double *bytes)
{
    double sum = 0;
    int counted = 1;

    for (int k = 0; k < p->nkernels; k++) {
        if (p->kernels[k].flops < 0 || p->kernels[k].tensor == 1)
            counted = 0;
        else
            sum += p->kernels[k].flops;
    }
    *flops = o->flops > 0 ? o->flops : counted ? sum : 0;
    *bytes = o->bytes > 0 ? o->bytes : p->compulsory_bytes > 0 ? p->compulsory_bytes : 0;
    if (*flops <= 0 && o->bytes <= 0)
        *bytes = 0;
}

kopt_status kopt_program_analyze(kopt_program_analysis **out, kopt_ctx *ctx,
                                 const kopt_program *p, const kopt_program_analyze_opts *opts)
{
    static const kopt_program_analyze_opts dflt = KOPT_PROGRAM_ANALYZE_OPTS_INIT;
    kopt_program_analysis *a = NULL;
    kopt_analyze_opts ao;
    kopt_status rc = KOPT_OK;
    int n;

    if (!out)
        return kopt_seterr(ctx, KOPT_E_INVALID, "program analysis: no output");
    *out = NULL;
    if (!p || p->nkernels <= 0 || !p->kernels)
        return kopt_seterr(ctx, KOPT_E_INVALID, "program analysis: no program or no kernels");
    if (!opts)
        opts = &dflt;
    n = p->nkernels;
    if (!(a = calloc(1, sizeof(*a))) || !(a->views = calloc((size_t)n, sizeof(*a->views))) ||
        !(a->res = calloc((size_t)n, sizeof(*a->res))) ||
        !(a->labels = calloc((size_t)n, sizeof(*a->labels))) ||
        !(a->kernel_cls = calloc((size_t)n, sizeof(*a->kernel_cls)))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "program analysis");
        goto cleanup;
    }
    a->prog = p;
    if (opts->dev) {
        a->dev = *opts->dev;
        a->has_dev = 1;
    } else if (p->has_device) {
        a->dev = p->device;
        a->has_dev = 1;
    }
    if (opts->ceil && opts->ceil->valid)
        a->ceil = *opts->ceil;
    build_views(a);

    a->in.dev = a->has_dev ? &a->dev : NULL;
    a->in.ceil = a->ceil.valid ? &a->ceil : NULL;
    a->in.problem = opts->problem ? opts->problem : "program";
    program_work(p, opts, &a->in.flops, &a->in.bytes);
    a->in.compute = opts->compute >= 0 && opts->compute < KOPT_COMPUTE_COUNT
                        ? opts->compute : KOPT_COMPUTE_FP32;
    /* As the speed-of-light guard (kopt__guard_compute): an FP32 problem whose tolerance
     * admits TF32 has the TF32 rate as its roof, so the headroom a tensor-core finding is
     * capped by is measured against it. */
    if (a->in.compute == KOPT_COMPUTE_FP32 && opts->rtol >= KOPT_TF32_ADMITTED_RTOL)
        a->in.compute = KOPT_COMPUTE_TF32;
    a->in.matmul_like = opts->matmul_like;
    a->in.median_ms = p->forward_ms;
    a->in.nkernels = n;
    a->in.kernels = a->views;
    a->in.program = p;
    a->in.rtol = opts->rtol;

    a->fusion_ms = kopt__fusion_ms(&a->in, &a->dram_gbs);
    if (a->dram_gbs > 0)
        a->dram_source = a->ceil.valid ? "measured" : "spec-derived";
    for (int k = 0; k < n; k++) {
        classify_kernel(a, k, &a->kernel_cls[k]);
        add_time(&a->by_time, a->kernel_cls[k].final, p->kernels[k].dur_us / 1e3);
    }
    a->by_time.host_gaps = p->gap_ms;
    a->by_time.latency += p->gap_ms;
    a->cls = weighted_class(&a->by_time, &a->classes);

    ao = opts->analyze;
    ao.classes |= a->classes;
    if ((rc = kopt_analyze_run(&a->an, ctx, &a->in, &ao)) != KOPT_OK ||
        (rc = note_library_kernels(a, ctx)) != KOPT_OK)
        goto cleanup;
    drop_elementwise_tensor_advice(a);
    *out = a;
    a = NULL;
cleanup:
    kopt_program_analysis_free(a);
    return rc;
}

void kopt_program_analysis_free(kopt_program_analysis *a)
{
    if (!a)
        return;
    kopt_analysis_free(a->an);
    free(a->kernel_cls);
    free(a->res);
    free(a->labels);
    free(a->views);
    free(a);
}
