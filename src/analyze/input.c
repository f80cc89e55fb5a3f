/* Building the analysis input from what the earlier stages produced: one kernel view per
 * launch (compile resources, SASS counts, the matching profiled kernel and its time), and
 * whether a problem counts as matmul-like. Shared by `kopt profile` and the tests that
 * replay recorded profiles, so both build the input the same way. */
#include "analyze_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int kopt__contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; hay && *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return 1;
    return 0;
}

int kopt_analyze_matmul_like(const kopt_problem *p)
{
    return p->compute == KOPT_COMPUTE_FP16 || p->compute == KOPT_COMPUTE_BF16 ||
           p->compute == KOPT_COMPUTE_TF32 || p->compute == KOPT_COMPUTE_FP8 ||
           kopt__contains_ci(p->name, "gemm") || kopt__contains_ci(p->name, "matmul") ||
           kopt__contains_ci(p->description, "gemm") ||
           kopt__contains_ci(p->description, "matmul");
}

/* The profile kernel for the i-th kernel launch named `name` (lowered symbol `lowered`). */
static const kopt_kernel_profile *match_profile(const kopt_profile *p, int i, int nviews,
                                                const char *name, const char *lowered)
{
    char base[256];
    size_t n;

    if (!p || !p->nkernels)
        return NULL;
    if (lowered && lowered[0])
        for (int k = 0; k < p->nkernels; k++)
            if (strstr(p->kernels[k].kernel, lowered))
                return &p->kernels[k];
    if (p->nkernels == nviews)   /* one range per launch, in launch order */
        return &p->kernels[i];
    snprintf(base, sizeof(base), "%s", name);
    n = strcspn(base, "<(");
    base[n] = '\0';
    for (int k = 0; k < p->nkernels; k++)
        if (strncmp(p->kernels[k].kernel, base, n) == 0)
            return &p->kernels[k];
    return NULL;
}

kopt_status kopt_analyze_views(kopt_kernel_view **out, int *n, kopt_ctx *ctx,
                               const kopt_compiled *comp, const kopt_bound *b,
                               const kopt_sass *sass, const kopt_profile *prof)
{
    int cap = (b ? b->nlaunches : 0) + (prof ? prof->nkernels : 0) + 1, nk = 0, nv = 0;
    kopt_kernel_view *views;

    *out = NULL;
    *n = 0;
    views = calloc((size_t)cap, sizeof(*views));
    if (!views)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "kernel views");
    if (comp && !comp->host_mode && b) {
        for (int i = 0; i < b->nlaunches; i++)
            nk += !b->launches[i].is_memset;
        for (int i = 0; i < b->nlaunches; i++) {
            const kopt_blaunch *l = &b->launches[i];
            kopt_kernel_view *v;
            const kopt_kernel_info *ki;
            const kopt_kernel_profile *kp;
            if (l->is_memset)
                continue;
            v = &views[nv];
            ki = kopt_compiled_kernel(comp, l->kernel);
            kp = match_profile(prof, nv, nk, l->kernel, ki ? ki->lowered : NULL);
            nv++;
            v->name = l->kernel;
            for (int d = 0; d < 3; d++) {
                v->grid[d] = (int)l->grid[d];
                v->block[d] = (int)l->block[d];
            }
            v->dyn_smem = (int)l->smem;
            v->res = ki;
            v->sass = sass ? kopt_sass_kernel(sass, ki ? ki->lowered : l->kernel) : NULL;
            v->metrics = kp ? &kp->metrics : NULL;
            v->ms = kp ? kopt_metrics_value(&kp->metrics, "gpu__time_duration.sum", 0) / 1e6 : 0;
        }
    } else {
        for (int k = 0; prof && k < prof->nkernels; k++) {   /* host mode: as profiled */
            const kopt_kernel_profile *kp = &prof->kernels[k];
            kopt_kernel_view *v = &views[nv++];
            v->name = kp->kernel;
            memcpy(v->grid, kp->grid, sizeof(v->grid));
            memcpy(v->block, kp->block, sizeof(v->block));
            v->dyn_smem = kp->dyn_smem;
            v->metrics = &kp->metrics;
            v->ms = kopt_metrics_value(&kp->metrics, "gpu__time_duration.sum", 0) / 1e6;
        }
    }
    *out = views;
    *n = nv;
    return KOPT_OK;
}
