/* Stage one: the roofline class of a candidate. The analytic class compares the problem's
 * intensity (flops / bytes) with the ridge point of the device's ceilings; the measured
 * class compares SM and memory throughput (% of peak); the final class follows one rule:
 * the analytic class decides compute against memory (it is the problem's inherent
 * ceiling), the measurement decides whether the kernel reaches any ceiling at all
 * (latency) and breaks ties near the ridge. The reasoning says which rule applied. */
#include "analyze_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Intensity within this fraction of the ridge point: mixed (neither roof clearly limits). */
#define KOPT_RIDGE_BAND 0.25
/* An ideal time below this (microseconds): launch and ramp-up dominate, latency-bound. */
#define KOPT_TINY_BOUND_US 3.0
/* Without ceilings: below this FLOP/B a problem is memory-bound on every current GPU (the
 * FP32 ridge of V100, A100, H100, H200 lies between 10 and 20 FLOP/B). */
#define KOPT_ANY_GPU_RIDGE_MIN 4.0
/* SM and memory throughput this many points apart: the larger one names the class. */
#define KOPT_DOMINANCE_PTS 10.0
/* Both throughputs at or above this %: mixed (both units busy). */
#define KOPT_BOTH_HIGH_PCT 80.0

const char *kopt_class_name(kopt_class c)
{
    switch (c) {
    case KOPT_CLASS_COMPUTE:
        return "compute-bound";
    case KOPT_CLASS_MEMORY:
        return "memory-bound";
    case KOPT_CLASS_LATENCY:
        return "latency-bound";
    case KOPT_CLASS_MIXED:
        return "mixed";
    default:
        return "unknown";
    }
}

/* 1 when any kernel's SASS has FP64 tensor-core (DMMA) instructions, or when no kernel's
 * SASS is known (then the device's best FP64 rate is the honest bound). */
int kopt__uses_dmma(const kopt_analysis_input *in)
{
    int known = 0;

    for (int i = 0; i < in->nkernels; i++) {
        if (!in->kernels[i].sass)
            continue;
        known = 1;
        if (in->kernels[i].sass->dmma > 0)
            return 1;
    }
    return !known;
}

const char *kopt__rates(const kopt_analysis_input *in, int compute, double *gbs, double *gflops)
{
    const kopt_ceilings *c = in->ceil;

    *gbs = *gflops = 0;
    if (compute < 0)
        compute = in->compute;
    if (compute < 0 || compute >= KOPT_NCOMPUTE)
        compute = KOPT_COMPUTE_FP32;
    if (c && c->valid) {
        *gbs = kopt_ceilings_dram_gbs(c);
        *gflops = c->gflops[compute];
        if (compute == KOPT_COMPUTE_FP64 && c->fp64_fma_gflops > 0 && !kopt__uses_dmma(in)) {
            *gflops = c->fp64_fma_gflops;   /* no DMMA in its SASS: the FMA path's rate */
            return "measured (FP64 FMA: no DMMA instructions)";
        }
        return c->measured[compute] ? "measured" : "measured DRAM, spec-derived compute";
    }
    if (in->dev) {
        kopt_ceilings spec;
        memset(&spec, 0, sizeof(spec));
        kopt_ceilings_fill_spec(&spec, in->dev);
        *gbs = kopt_dram_spec_gbs(in->dev);
        *gflops = spec.gflops[compute];
        if (*gbs > 0 || *gflops > 0)
            return "spec-derived";
    }
    return NULL;
}

static void say(kopt_classification *o, const char *fmt, ...) KOPT_PRINTF(2, 3);
static void say(kopt_classification *o, const char *fmt, ...)
{
    size_t used = strlen(o->reasoning);
    va_list ap;

    if (used + 1 >= sizeof(o->reasoning))
        return;
    va_start(ap, fmt);
    vsnprintf(o->reasoning + used, sizeof(o->reasoning) - used, fmt, ap);
    va_end(ap);
}

/* Time-weighted SM and memory throughput over the kernels that have them. */
static int measured_pcts(const kopt_analysis_input *in, double *sm, double *mem, int *has_sm,
                         int *has_mem)
{
    double wsm = 0, wmem = 0, ssm = 0, smem = 0;

    *has_sm = *has_mem = 0;
    for (int i = 0; i < in->nkernels; i++) {
        const kopt_kernel_view *k = &in->kernels[i];
        double w = in->nkernels > 1 ? kopt__share(in, i) : 1.0, v;
        if (kopt__sm_pct(k, &v)) {
            ssm += w * v;
            wsm += w;
        }
        if (kopt__mem_pct(k, &v)) {
            smem += w * v;
            wmem += w;
        }
    }
    if (wsm > 0) {
        *sm = ssm / wsm;
        *has_sm = 1;
    }
    if (wmem > 0) {
        *mem = smem / wmem;
        *has_mem = 1;
    }
    return *has_sm || *has_mem;
}

static kopt_class analytic_class(const kopt_analysis_input *in, kopt_classification *o,
                                 double *bound_ms, const char **limiter)
{
    double gbs, gflops, t_mem = 0, t_comp = 0;
    const char *src = kopt__rates(in, -1, &gbs, &gflops);

    *bound_ms = 0;
    *limiter = "";
    if (in->flops <= 0 && in->bytes <= 0) {
        say(o, "Analytic: the problem gives no work counts. ");
        return KOPT_CLASS_UNKNOWN;
    }
    if (in->flops > 0 && in->bytes > 0)
        o->intensity = in->flops / in->bytes;
    if (src && strstr(src, "FP64 FMA"))
        say(o, "Compute ceiling: FP64 FMA, %.1f TFLOP/s (no DMMA instructions in the SASS, so "
            "the FP64 tensor cores' rate does not apply). ", gflops / 1e3);
    if (gbs > 0)
        t_mem = in->bytes / (gbs * 1e6);
    if (gflops > 0)
        t_comp = in->flops / (gflops * 1e6);
    if (gbs > 0 && gflops > 0) {
        o->ridge = gflops / gbs;
        *bound_ms = t_mem > t_comp ? t_mem : t_comp;
        *limiter = t_mem >= t_comp ? "memory" : "compute";
    }
    if (*bound_ms > 0 && *bound_ms * 1e3 < KOPT_TINY_BOUND_US) {
        say(o, "Analytic: the ideal time is %.2f us (%s ceilings), under KOPT_TINY_BOUND_US "
            "(%.0f us), so launch and ramp-up dominate: latency-bound. ", *bound_ms * 1e3,
            src, KOPT_TINY_BOUND_US);
        return KOPT_CLASS_LATENCY;
    }
    if (in->bytes <= 0) {
        say(o, "Analytic: no bytes to move, only %.3g FLOP: compute-bound. ", in->flops);
        return KOPT_CLASS_COMPUTE;
    }
    if (in->flops <= 0) {
        say(o, "Analytic: %.3g B to move and no FLOP: memory-bound. ", in->bytes);
        return KOPT_CLASS_MEMORY;
    }
    if (o->ridge <= 0) {
        if (o->intensity < KOPT_ANY_GPU_RIDGE_MIN) {
            say(o, "Analytic: %.3g FLOP/B, below KOPT_ANY_GPU_RIDGE_MIN (%.0f) and so below the "
                "ridge of any current GPU (no ceilings known): memory-bound. ", o->intensity,
                KOPT_ANY_GPU_RIDGE_MIN);
            return KOPT_CLASS_MEMORY;
        }
        say(o, "Analytic: %.3g FLOP/B, but no ceilings to compare with. ", o->intensity);
        return KOPT_CLASS_UNKNOWN;
    }
    say(o, "Analytic: %.3g FLOP / %.3g B = %.3g FLOP/B against a ridge of %.3g FLOP/B "
        "(%.0f GFLOP/s %s / %.0f GB/s, %s)", in->flops, in->bytes, o->intensity, o->ridge,
        gflops, in->compute >= 0 && in->compute < KOPT_COMPUTE_COUNT
                    ? kopt_compute_name((kopt_compute)in->compute) : "?",
        gbs, src);
    if (o->intensity < o->ridge * (1 - KOPT_RIDGE_BAND)) {
        say(o, ": memory-bound. ");
        return KOPT_CLASS_MEMORY;
    }
    if (o->intensity > o->ridge * (1 + KOPT_RIDGE_BAND)) {
        say(o, ": compute-bound. ");
        return KOPT_CLASS_COMPUTE;
    }
    say(o, ", within KOPT_RIDGE_BAND (%.0f%%) of it: mixed. ", KOPT_RIDGE_BAND * 100);
    return KOPT_CLASS_MIXED;
}

static kopt_class measured_class(const kopt_analysis_input *in, const kopt_thresholds *th,
                                 kopt_classification *o, double *sm, double *mem)
{
    int has_sm, has_mem;

    *sm = *mem = 0;
    if (!measured_pcts(in, sm, mem, &has_sm, &has_mem)) {
        say(o, "Measured: no throughput metrics. ");
        return KOPT_CLASS_UNKNOWN;
    }
    if (has_sm && has_mem) {
        say(o, "Measured: SM %.0f%%, memory %.0f%% of peak", *sm, *mem);
        if (*sm < th->latency_bound_pct && *mem < th->latency_bound_pct) {
            say(o, ", both under latency_bound_pct (%.0f%%): latency-bound. ",
                th->latency_bound_pct);
            return KOPT_CLASS_LATENCY;
        }
        if (*sm >= KOPT_BOTH_HIGH_PCT && *mem >= KOPT_BOTH_HIGH_PCT) {
            say(o, ", both at or over KOPT_BOTH_HIGH_PCT (%.0f%%): mixed. ", KOPT_BOTH_HIGH_PCT);
            return KOPT_CLASS_MIXED;
        }
        if (*mem - *sm >= KOPT_DOMINANCE_PTS) {
            say(o, ": memory-bound. ");
            return KOPT_CLASS_MEMORY;
        }
        if (*sm - *mem >= KOPT_DOMINANCE_PTS) {
            say(o, ": compute-bound. ");
            return KOPT_CLASS_COMPUTE;
        }
        say(o, ", within KOPT_DOMINANCE_PTS (%.0f) of each other: mixed. ", KOPT_DOMINANCE_PTS);
        return KOPT_CLASS_MIXED;
    }
    if (has_mem) {
        say(o, "Measured: memory %.0f%% of peak, SM unknown", *mem);
        if (*mem >= th->latency_bound_pct) {
            say(o, ": memory-bound. ");
            return KOPT_CLASS_MEMORY;
        }
    } else {
        say(o, "Measured: SM %.0f%% of peak, memory unknown", *sm);
        if (*sm >= th->latency_bound_pct) {
            say(o, ": compute-bound. ");
            return KOPT_CLASS_COMPUTE;
        }
    }
    say(o, ": not enough to classify. ");
    return KOPT_CLASS_UNKNOWN;
}

static kopt_class decide(kopt_classification *o, double sm, double mem)
{
    kopt_class a = o->analytic, m = o->measured;
    const char *an = kopt_class_name(a), *mn = kopt_class_name(m);

    if (a == KOPT_CLASS_UNKNOWN && m == KOPT_CLASS_UNKNOWN) {
        say(o, "Final: unknown; every tool whose needs are met runs.");
        return KOPT_CLASS_UNKNOWN;
    }
    if (m == KOPT_CLASS_UNKNOWN) {
        say(o, "Final: %s (analytic only; nothing measured to check it against).", an);
        return a;
    }
    if (a == KOPT_CLASS_UNKNOWN) {
        say(o, "Final: %s (measured only; the problem's work counts or the ceilings are "
            "missing).", mn);
        return m;
    }
    if (a == m) {
        say(o, "Final: %s; the analytic and measured classes agree.", an);
        return a;
    }
    say(o, "The analytic (%s) and measured (%s) classes disagree; ", an, mn);
    if (m == KOPT_CLASS_LATENCY) {
        say(o, "trusting the measurement: neither the SM (%.0f%%) nor memory (%.0f%%) is busy, "
            "so this implementation is far from its %s roof and must hide latency first "
            "(more independent work and loads in flight). The %s tools run too. "
            "Final: latency-bound.", sm, mem, an, an);
        return m;
    }
    if (a == KOPT_CLASS_LATENCY) {
        say(o, "trusting the measurement: the kernel keeps a unit busy (SM %.0f%%, memory "
            "%.0f%%), so the problem is not too small to load the GPU. Final: %s.", sm, mem, mn);
        return m;
    }
    if (a == KOPT_CLASS_MIXED) {
        say(o, "trusting the measurement: the problem sits near the ridge, where the "
            "implementation decides which unit limits. Final: %s.", mn);
        return m;
    }
    if (m == KOPT_CLASS_MIXED) {
        say(o, "trusting the analytic class: the measurement is balanced and cannot separate "
            "the two. Final: %s.", an);
        return a;
    }
    /* Compute against memory: the problem's ceiling wins; say what the gap means. */
    if (a == KOPT_CLASS_COMPUTE)
        say(o, "trusting the analytic class, the problem's inherent ceiling: a compute-bound "
            "problem measured memory-bound moves far more bytes than it needs, so reuse data "
            "through shared memory and registers (tiling) until the math units limit. "
            "Final: compute-bound.");
    else
        say(o, "trusting the analytic class, the problem's inherent ceiling: a memory-bound "
            "problem measured compute-bound executes more instructions than its work needs "
            "(index math, recomputation, FP64 or conversions). Final: memory-bound.");
    return a;
}

void kopt_classify(const kopt_analysis_input *in, kopt_classification *out)
{
    const kopt_thresholds *th;
    double bound_ms = 0, total_ms, sm, mem;
    const char *limiter;

    memset(out, 0, sizeof(*out));
    if (!in)
        return;
    th = kopt_thresholds_for(in->dev);
    out->analytic = analytic_class(in, out, &bound_ms, &limiter);
    total_ms = kopt__total_ms(in);
    if (bound_ms > 0 && total_ms > 0) {
        out->pct_of_bound = 100.0 * bound_ms / total_ms;
        say(out, "Roofline: %.4g ms against a %s bound of %.4g ms: %.1f%% of the bound. ",
            total_ms, limiter, bound_ms, out->pct_of_bound);
    }
    out->measured = measured_class(in, th, out, &sm, &mem);
    out->final = decide(out, sm, mem);
}
