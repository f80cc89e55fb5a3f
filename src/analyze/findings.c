/* Findings: the list tools append to (strings deep-copied), the builder tools use to write
 * one finding, and freeing an analysis. */
#include "analyze_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dup_or_null(const char *s, int *nomem)
{
    char *d;

    if (!s)
        return NULL;
    if (!(d = strdup(s)))
        *nomem = 1;
    return d;
}

void kopt__finding_release(kopt_finding *f)
{
    free(f->seen);
    free(f->why);
    free(f->change);
    free(f->gain_how);
    f->seen = f->why = f->change = f->gain_how = NULL;
}

kopt_status kopt_findings_add(kopt_findings *fs, const kopt_finding *f)
{
    kopt_finding copy;
    int nomem = 0;

    if (!fs || !f)
        return KOPT_E_INVALID;
    if (fs->n == fs->cap) {
        int cap = fs->cap ? fs->cap * 2 : 16;
        kopt_finding *grown = realloc(fs->f, (size_t)cap * sizeof(*grown));
        if (!grown)
            return KOPT_E_NOMEM;
        fs->f = grown;
        fs->cap = cap;
    }
    copy = *f;
    copy.seen = dup_or_null(f->seen, &nomem);
    copy.why = dup_or_null(f->why, &nomem);
    copy.change = dup_or_null(f->change, &nomem);
    copy.gain_how = dup_or_null(f->gain_how, &nomem);
    if (copy.nevidence < 0)
        copy.nevidence = 0;
    if (copy.nevidence > (int)(sizeof(copy.evidence) / sizeof(copy.evidence[0])))
        copy.nevidence = (int)(sizeof(copy.evidence) / sizeof(copy.evidence[0]));
    if (nomem) {
        kopt__finding_release(&copy);
        return KOPT_E_NOMEM;
    }
    fs->f[fs->n++] = copy;
    return KOPT_OK;
}

void kopt_findings_clear(kopt_findings *fs)
{
    if (!fs)
        return;
    for (int i = 0; i < fs->n; i++)
        kopt__finding_release(&fs->f[i]);
    free(fs->f);
    fs->f = NULL;
    fs->n = fs->cap = 0;
}

void kopt_analysis_free(kopt_analysis *a)
{
    if (!a)
        return;
    kopt_findings_clear(&a->findings);
    free(a);
}

/* ---- builder -------------------------------------------------------------------------- */

void kopt__fb_init(kopt__fb *b, const char *tool, const char *kernel, const char *fmt, ...)
{
    va_list ap;

    memset(b, 0, sizeof(*b));
    snprintf(b->f.tool, sizeof(b->f.tool), "%s", tool ? tool : "");
    snprintf(b->f.kernel, sizeof(b->f.kernel), "%s", kernel ? kernel : "");
    va_start(ap, fmt);
    vsnprintf(b->f.title, sizeof(b->f.title), fmt, ap);
    va_end(ap);
}

void kopt__fb_text(kopt__fb *b, kopt_buf *which, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    if (kopt_buf_vprintf(which, fmt, ap) < 0)
        b->nomem = 1;
    va_end(ap);
}

void kopt__fb_evidence(kopt__fb *b, const char *metric, double value, const char *op,
                       double threshold, const char *threshold_name)
{
    kopt_evidence *e;

    if (b->f.nevidence >= (int)(sizeof(b->f.evidence) / sizeof(b->f.evidence[0])))
        return;
    e = &b->f.evidence[b->f.nevidence++];
    snprintf(e->metric, sizeof(e->metric), "%s", metric);
    e->value = value;
    snprintf(e->op, sizeof(e->op), "%s", op);
    e->threshold = threshold;
    snprintf(e->threshold_name, sizeof(e->threshold_name), "%s", threshold_name);
}

void kopt__fb_discard(kopt__fb *b)
{
    kopt_buf_free(&b->seen);
    kopt_buf_free(&b->why);
    kopt_buf_free(&b->change);
    kopt_buf_free(&b->how);
}

kopt_status kopt__fb_emit(kopt__fb *b, kopt_findings *out, double gain, double confidence,
                          kopt_ctx *ctx)
{
    kopt_status rc = KOPT_OK;

    if (b->nomem) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "%s: finding text", b->f.tool);
        goto cleanup;
    }
    b->f.gain = kopt__clamp01(gain);
    b->f.confidence = kopt__clamp01(confidence);
    b->f.seen = (char *)kopt_buf_cstr(&b->seen);
    b->f.why = (char *)kopt_buf_cstr(&b->why);
    b->f.change = (char *)kopt_buf_cstr(&b->change);
    b->f.gain_how = (char *)kopt_buf_cstr(&b->how);
    if ((rc = kopt_findings_add(out, &b->f)) < 0)
        kopt_seterr(ctx, rc, "%s: adding a finding", b->f.tool);
cleanup:
    b->f.seen = b->f.why = b->f.change = b->f.gain_how = NULL;
    kopt__fb_discard(b);
    return rc;
}
