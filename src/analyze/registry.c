/* Stage two: the tool registry and the driver. kopt_analyze_run classifies the candidate,
 * selects the tools for its class, skips (and lists) the tools whose needs are not met,
 * runs the rest, turns each finding's gain into a share of the whole run time, caps it by
 * what the roofline leaves, and ranks the findings by gain. */
#include "analyze_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* No single change is credited with more than this share of the run time. */
#define KOPT_GAIN_MAX 0.95

#define KOPT__TOOL_ADDRESS(n) &kopt_tool_##n,
static const kopt_tool *const registry[] = {KOPT_TOOL_LIST(KOPT__TOOL_ADDRESS)};
#undef KOPT__TOOL_ADDRESS

const kopt_tool *const *kopt_tools(int *n)
{
    if (n)
        *n = (int)(sizeof(registry) / sizeof(registry[0]));
    return registry;
}

const kopt_tool *kopt_tool_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof(registry) / sizeof(registry[0]); i++)
        if (strcmp(registry[i]->name, name) == 0)
            return registry[i];
    return NULL;
}

static void skip(kopt_analysis *a, const char *tool, const char *why)
{
    if (a->nskipped >= (int)(sizeof(a->skipped) / sizeof(a->skipped[0])))
        return;
    /* Over-long texts are cut; the return value is read to say so to the compiler. */
    if (snprintf(a->skipped[a->nskipped], sizeof(a->skipped[0]), "%s: %s", tool, why) < 0)
        a->skipped[a->nskipped][0] = '\0';
    a->nskipped++;
}

/* Needs in the order a reader should hear them: the most fundamental first. */
static const unsigned need_order[] = {KOPT_NEEDS_PROGRAM, KOPT_NEEDS_HOST, KOPT_NEEDS_METRICS,
                                      KOPT_NEEDS_SASS, KOPT_NEEDS_RESOURCES, KOPT_NEEDS_DEVICE,
                                      KOPT_NEEDS_TIMING};
#define KOPT_NNEEDS (sizeof(need_order) / sizeof(need_order[0]))

/* Why the tool cannot run here ("" when it can): every unmet need joined by "and", or, for
 * needs_any, the alternatives joined by "or". */
static void unmet_needs(const kopt_analysis_input *in, const kopt_tool *t, char *why,
                        size_t size)
{
    size_t used = 0;

    why[0] = '\0';
    for (size_t i = 0; i < KOPT_NNEEDS && used < size; i++) {
        unsigned bit = need_order[i];
        if (!(t->needs & bit) || kopt__has_need(in, bit))
            continue;
        snprintf(why + used, size - used, "%s%s", used ? " and " : "needs ",
                 kopt__need_words(bit));
        used = strlen(why);
    }
    if (used || !t->needs_any)
        return;
    for (size_t i = 0; i < KOPT_NNEEDS; i++)
        if ((t->needs_any & need_order[i]) && kopt__has_need(in, need_order[i]))
            return;
    for (size_t i = 0; i < KOPT_NNEEDS && used < size; i++) {
        if (!(t->needs_any & need_order[i]))
            continue;
        snprintf(why + used, size - used, "%s%s", used ? " or " : "needs ",
                 kopt__need_words(need_order[i]));
        used = strlen(why);
    }
}

static int kernel_index(const kopt_analysis_input *in, const char *name)
{
    for (int i = 0; i < in->nkernels; i++)
        if (strcmp(kopt__kname(&in->kernels[i]), name) == 0)
            return i;
    return -1;
}

/* Turn a tool's gain (a share of its kernel's time) into a share of the run time, capped
 * by the roofline: a candidate at P % of its bound can save at most 1 - P/100. */
static kopt_status settle_gain(const kopt_analysis_input *in, const kopt_classification *cls,
                               kopt_finding *f, kopt_ctx *ctx)
{
    kopt_buf how = KOPT_BUF_INIT;
    double share = f->kernel[0] ? kopt__share(in, kernel_index(in, f->kernel)) : 1.0;
    double gain = f->gain * share, cap = KOPT_GAIN_MAX;
    int err = 0;

    if (cls->pct_of_bound > 0) {
        double room = 1.0 - cls->pct_of_bound / 100.0;
        cap = room < 0 ? 0 : room < cap ? room : cap;
    }
    err |= kopt_buf_printf(&how, "%s", f->gain_how ? f->gain_how : "");
    if (share < 1.0)
        err |= kopt_buf_printf(&how, " Times the kernel's share of the run time (%.0f%%).",
                               share * 100);
    if (gain > cap) {
        if (cls->pct_of_bound > 0)
            err |= kopt_buf_printf(&how, " Capped at %.1f%% by the roofline: the candidate "
                                   "already runs at %.1f%% of its bound (was %.1f%%).",
                                   cap * 100, cls->pct_of_bound, gain * 100);
        else
            err |= kopt_buf_printf(&how, " Capped at KOPT_GAIN_MAX (%.0f%%).", cap * 100);
        gain = cap;
    }
    if (err) {
        kopt_buf_free(&how);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "%s: gain text", f->tool);
    }
    free(f->gain_how);
    f->gain_how = kopt_buf_detach(&how);
    f->gain = gain;
    return KOPT_OK;
}

/* Stable: equal gains keep the registry's order, then higher confidence first. */
static void rank(kopt_findings *fs)
{
    for (int i = 1; i < fs->n; i++) {
        kopt_finding x = fs->f[i];
        int j = i - 1;
        while (j >= 0 && (fs->f[j].gain < x.gain ||
                          (fs->f[j].gain == x.gain && fs->f[j].confidence < x.confidence))) {
            fs->f[j + 1] = fs->f[j];
            j--;
        }
        fs->f[j + 1] = x;
    }
}

/* A tool over the candidate: whole, or kernel by kernel. */
static kopt_status run_tool(const kopt_tool *t, const kopt_analysis_input *in,
                           const kopt_thresholds *th, kopt_findings *out, kopt_ctx *ctx)
{
    kopt_status rc = KOPT_OK;

    if (t->run)
        return t->run(in, th, out, ctx);
    for (int i = 0; i < in->nkernels && rc == KOPT_OK; i++)
        rc = t->run_kernel(in, &in->kernels[i], th, out, ctx);
    return rc;
}

kopt_status kopt_analyze_run(kopt_analysis **out, kopt_ctx *ctx, const kopt_analysis_input *in,
                             const kopt_analyze_opts *opts)
{
    static const kopt_analyze_opts dflt = KOPT_ANALYZE_OPTS_INIT;
    kopt_analysis *a = NULL;
    const kopt_thresholds *th;
    unsigned selected;
    kopt_status rc = KOPT_OK;
    char why[160];

    if (!out || !in)
        return kopt_seterr(ctx, KOPT_E_INVALID, "analyze: no input");
    *out = NULL;
    if (!opts)
        opts = &dflt;
    if (in->nkernels < 0 || (in->nkernels > 0 && !in->kernels))
        return kopt_seterr(ctx, KOPT_E_INVALID, "analyze: %d kernels but no kernel views",
                           in->nkernels);
    if (opts->only_tool && !kopt_tool_find(opts->only_tool))
        return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "analyze: no tool named '%s'",
                           opts->only_tool);
    if (!(a = calloc(1, sizeof(*a))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "analyze");
    kopt_classify(in, &a->cls);
    th = kopt_thresholds_for(in->dev);
    /* On disagreement the tools of every class seen run, so no signal is lost. */
    selected = (unsigned)a->cls.final | (unsigned)a->cls.analytic | (unsigned)a->cls.measured |
               (opts->classes & KOPT_CLASS_ALL);
    if (!selected)
        selected = KOPT_CLASS_ALL;
    for (size_t i = 0; i < sizeof(registry) / sizeof(registry[0]); i++) {
        const kopt_tool *t = registry[i];
        int start = a->findings.n;

        if (opts->only_tool && strcmp(opts->only_tool, t->name) != 0)
            continue;
        if (!opts->all_tools && !opts->only_tool && !(t->classes & selected)) {
            snprintf(why, sizeof(why), "not for a %s kernel (--all-tools runs it)",
                     kopt_class_name(a->cls.final));
            skip(a, t->name, why);
            continue;
        }
        unmet_needs(in, t, why, sizeof(why));
        if (why[0]) {
            skip(a, t->name, why);
            continue;
        }
        if ((rc = run_tool(t, in, th, &a->findings, ctx)) < 0) {
            kopt_adderr(ctx, rc, "tool %s", t->name);
            goto cleanup;
        }
        a->nrun++;
        for (int f = start; f < a->findings.n; f++)
            if ((rc = settle_gain(in, &a->cls, &a->findings.f[f], ctx)) < 0)
                goto cleanup;
    }
    rank(&a->findings);
    *out = a;
    a = NULL;
cleanup:
    kopt_analysis_free(a);
    return rc;
}
