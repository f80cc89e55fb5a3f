/* Small readers of the analysis input that every tool uses: metrics by ncu name, SASS
 * sums, launch sizes, throughput percentages, time shares, and whether a need is met. */
#include "analyze_int.h"

#include <stdio.h>
#include <string.h>

const char *kopt__kname(const kopt_kernel_view *k)
{
    return k && k->name && k->name[0] ? k->name : "(kernel)";
}

int kopt__metric(const kopt_kernel_view *k, const char *name, double *v)
{
    return k && k->metrics && kopt_metrics_get(k->metrics, name, v);
}

int kopt__sum(const int v[KOPT_SASS_NWIDTH])
{
    int s = 0;
    for (int i = 0; i < KOPT_SASS_NWIDTH; i++)
        s += v[i];
    return s;
}

static long long dim_product(const int d[3])
{
    long long p = 1;
    int any = 0;

    for (int i = 0; i < 3; i++) {
        if (d[i] > 0) {
            p *= d[i];
            any = 1;
        }
    }
    return any ? p : 0;
}

int kopt__threads(const kopt_kernel_view *k)
{
    return (int)dim_product(k->block);
}

long long kopt__blocks(const kopt_kernel_view *k)
{
    return dim_product(k->grid);
}

int kopt__smem(const kopt_kernel_view *k)
{
    return (k->res ? k->res->static_smem : 0) + (k->dyn_smem > 0 ? k->dyn_smem : 0);
}

int kopt__sm_pct(const kopt_kernel_view *k, double *pct)
{
    return kopt__metric(k, "sm__throughput.avg.pct_of_peak_sustained_elapsed", pct);
}

int kopt__mem_pct(const kopt_kernel_view *k, double *pct)
{
    double a = 0, b = 0;
    int ha = kopt__metric(k, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
                          &a);
    int hb = kopt__metric(k, "dram__throughput.avg.pct_of_peak_sustained_elapsed", &b);

    if (!ha && !hb)
        return 0;
    *pct = a > b ? a : b;
    return 1;
}

const char *const kopt__stall_reasons[] = {
    "long_scoreboard", "barrier", "mio_throttle", "math_pipe_throttle", "not_selected",
    "lg_throttle", "short_scoreboard", "wait", NULL,
};

static int stall_ratio(const kopt_kernel_view *k, const char *reason, double *v)
{
    char name[160];

    snprintf(name, sizeof(name), "smsp__average_warps_issue_stalled_%s_per_issue_active.ratio",
             reason);
    return kopt__metric(k, name, v);
}

int kopt__stall_share(const kopt_kernel_view *k, const char *reason, double *share)
{
    double v, total = 0, r;

    if (!stall_ratio(k, reason, &v))
        return 0;
    if (!kopt__metric(k, "smsp__average_warp_latency_per_inst_issued.ratio", &total) ||
        total <= 0) {
        total = 0;
        for (int i = 0; kopt__stall_reasons[i]; i++)
            if (stall_ratio(k, kopt__stall_reasons[i], &r))
                total += r;
    }
    if (total <= 0)
        return 0;
    *share = kopt__clamp01(v / total);
    return 1;
}

double kopt__sm_frac(const kopt_kernel_view *k, double dflt)
{
    double pct;
    return kopt__sm_pct(k, &pct) ? kopt__clamp01(pct / 100.0) : dflt;
}

double kopt__mem_frac(const kopt_kernel_view *k, double dflt)
{
    double pct;
    return kopt__mem_pct(k, &pct) ? kopt__clamp01(pct / 100.0) : dflt;
}

double kopt__exposure(const kopt_kernel_view *k, double dflt)
{
    double issue;

    if (kopt__metric(k, "smsp__issue_active.avg.per_cycle_active", &issue))
        return kopt__clamp01(1.0 - issue);
    return dflt;
}

static double kernel_ms(const kopt_kernel_view *k)
{
    double ns;

    if (k->ms > 0)
        return k->ms;
    if (kopt__metric(k, "gpu__time_duration.sum", &ns) && ns > 0)
        return ns / 1e6;
    return 0;
}

double kopt__total_ms(const kopt_analysis_input *in)
{
    double t = 0;

    if (in->median_ms > 0)
        return in->median_ms;
    for (int i = 0; i < in->nkernels; i++)
        t += kernel_ms(&in->kernels[i]);
    return t;
}

double kopt__share(const kopt_analysis_input *in, int kernel_index)
{
    double total = kopt__total_ms(in), ms;

    if (kernel_index < 0 || kernel_index >= in->nkernels || in->nkernels == 1)
        return 1.0;
    ms = kernel_ms(&in->kernels[kernel_index]);
    if (total <= 0 || ms <= 0)
        return 1.0;
    return ms / total > 1.0 ? 1.0 : ms / total;
}

int kopt__has_need(const kopt_analysis_input *in, unsigned need)
{
    switch (need) {
    case KOPT_NEEDS_TIMING:
        return kopt__total_ms(in) > 0;
    case KOPT_NEEDS_DEVICE:
        return in->dev != NULL;
    case KOPT_NEEDS_HOST:
        return in->host_mode && in->launches_per_call > 0;
    case KOPT_NEEDS_PROGRAM:
        return in->program != NULL && in->program->nkernels > 0;
    default:
        break;
    }
    for (int i = 0; i < in->nkernels; i++) {
        const kopt_kernel_view *k = &in->kernels[i];
        if ((need == KOPT_NEEDS_SASS && k->sass) || (need == KOPT_NEEDS_RESOURCES && k->res) ||
            (need == KOPT_NEEDS_METRICS && k->metrics && k->metrics->n > 0))
            return 1;
    }
    return 0;
}

const char *kopt__need_words(unsigned need)
{
    switch (need) {
    case KOPT_NEEDS_SASS:
        return "SASS counts (a cubin and nvdisasm)";
    case KOPT_NEEDS_RESOURCES:
        return "the compile's resource use (registers, shared memory, spills)";
    case KOPT_NEEDS_METRICS:
        return "measured metrics (run with a GPU or --ncu)";
    case KOPT_NEEDS_TIMING:
        return "a timed run (run with a GPU)";
    case KOPT_NEEDS_DEVICE:
        return "device properties (run where the GPU is visible)";
    case KOPT_NEEDS_HOST:
        return "host-mode launch records";
    case KOPT_NEEDS_PROGRAM:
        return "a program profile (kopt profile of a PyTorch reference or ModelNew)";
    default:
        return "an input it lacks";
    }
}
