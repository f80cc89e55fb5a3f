/* A program analysis as text (the kernel table, the program lines, the findings) and as
 * JSON (the same content with full kernel names; null for what is unknown), for
 * `kopt profile` of a PyTorch program, the store and the planner's prompt. */
#include "analyze_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Table widths: a short name and an op longer than this are cut with "~". */
#define KOPT_TABLE_NAME 32
#define KOPT_TABLE_OP 22

static void cut(char *out, size_t n, const char *s, size_t width)
{
    size_t len = s ? strlen(s) : 0;

    if (!s || !s[0])
        snprintf(out, n, "-");
    else if (len <= width)
        snprintf(out, n, "%s", s);
    else
        snprintf(out, n, "%.*s~", (int)(width - 1), s);
}

static void dims(char *out, size_t n, const int d[3])
{
    if (d[0] <= 0 && d[1] <= 0 && d[2] <= 0)
        snprintf(out, n, "-");
    else
        snprintf(out, n, "%dx%dx%d", d[0], d[1], d[2]);
}

static int kernel_row(kopt_buf *t, const kopt_program_analysis *a, int k)
{
    const kopt_program_kernel *kp = &a->prog->kernels[k];
    char shortname[256], name[64], op[64], grid[48], block[48], regs[16], smem[16], gbs[24];

    kopt_kernel_short_name(kp->name, shortname, sizeof(shortname));
    cut(name, sizeof(name), shortname, KOPT_TABLE_NAME);
    cut(op, sizeof(op), kp->op, KOPT_TABLE_OP);
    dims(grid, sizeof(grid), kp->grid);
    dims(block, sizeof(block), kp->block);
    snprintf(regs, sizeof(regs), kp->registers > 0 ? "%d" : "-", kp->registers);
    snprintf(smem, sizeof(smem), "%d", kp->static_smem + kp->dynamic_smem);
    snprintf(gbs, sizeof(gbs), kp->dram_bytes >= 0 ? "%.1f" : "-", kp->gbs);
    return kopt_buf_printf(t, "%3d  %-32s %-7s %-22s %-14s %-12s %4s %7s %10.4f %6.1f%% %8s  "
                           "%s\n", k + 1, name, kopt_kernel_origin_name(kp->origin), op,
                           grid, block, regs, smem, kp->dur_us / 1e3, kp->share * 100, gbs,
                           kopt_class_name(a->kernel_cls[k].final));
}

static int program_lines(kopt_buf *t, const kopt_program_analysis *a)
{
    const kopt_program *p = a->prog;
    const kopt_program_class_time *c = &a->by_time;
    double total = c->compute + c->memory + c->latency + c->mixed + c->unknown;
    int err = 0;

    err |= kopt_buf_printf(t, "gpu        %.4f ms in %d kernel(s) (busy %.4f ms%s)\n",
                           p->gpu_ms, p->nkernels, p->busy_ms,
                           p->has_starts ? "" : "; no start times: taken as back to back");
    if (p->forward_ms > 0)
        err |= kopt_buf_printf(t, "forward    %.4f ms (CUDA events, not profiled)\n",
                               p->forward_ms);
    else
        err |= kopt_buf_printf(t, "forward    not recorded\n");
    err |= kopt_buf_printf(t, "host gaps  %.4f ms, %.1f%% of the %s (%.4f ms between "
                           "kernels, %.4f ms before the first and after the last)\n",
                           p->gap_ms, p->gap_share * 100,
                           p->forward_ms > 0 ? "forward" : "kernels' span", p->gap_between_ms,
                           p->gap_outside_ms);
    if (p->dram_measured > 0)
        err |= kopt_buf_printf(t, "dram       %.4g B moved by %d of %d kernel(s)%s\n",
                               p->dram_bytes, p->dram_measured, p->nkernels,
                               p->dram_measured < p->nkernels ? " (a lower bound)" : "");
    else
        err |= kopt_buf_printf(t, "dram       not measured\n");
    if (p->fusion_bytes >= 0) {
        err |= kopt_buf_printf(t, "fusion     %.4g B beyond the compulsory %.4g B", p->fusion_bytes,
                               p->compulsory_bytes);
        if (a->fusion_ms >= 0)
            err |= kopt_buf_printf(t, ": %.4f ms at %.0f GB/s (%s)\n", a->fusion_ms, a->dram_gbs,
                                   a->dram_source ? a->dram_source : "?");
        else
            err |= kopt_buf_printf(t, " (no DRAM rate known: no ms)\n");
    } else {
        err |= kopt_buf_printf(t, "fusion     unknown (%s)\n", p->compulsory_bytes < 0
                               ? "no compulsory_bytes" : "no DRAM bytes measured");
    }
    err |= kopt_buf_printf(t, "class      %s by time", kopt_class_name(a->cls));
    if (total > 0)
        err |= kopt_buf_printf(t, " (compute %.1f%%, memory %.1f%%, latency %.1f%% of which "
                               "host gaps %.1f%%, mixed %.1f%%, unknown %.1f%%)",
                               100 * c->compute / total, 100 * c->memory / total,
                               100 * c->latency / total, 100 * c->host_gaps / total,
                               100 * c->mixed / total, 100 * c->unknown / total);
    err |= kopt_buf_printf(t, "\n");
    if (a->an && a->an->cls.pct_of_bound > 0)
        err |= kopt_buf_printf(t, "roofline   %.1f%% of the problem's bound (%s)\n",
                               a->an->cls.pct_of_bound, kopt_class_name(a->an->cls.final));
    return err;
}

static int findings_text(kopt_buf *t, const kopt_analysis *an)
{
    int err = 0;

    if (!an)
        return 0;
    err |= kopt_buf_printf(t, "findings   %d\n", an->findings.n);
    for (int i = 0; i < an->findings.n; i++) {
        const kopt_finding *f = &an->findings.f[i];
        err |= kopt_buf_printf(t, "  %d. [%s] %s (%s%s%sgain %.1f%%, confidence %.2f)\n", i + 1,
                               f->tool, f->title, f->kernel[0] ? "kernel " : "", f->kernel,
                               f->kernel[0] ? "; " : "", f->gain * 100, f->confidence);
        err |= kopt_buf_printf(t, "    seen    %s\n    why     %s\n    change  %s\n"
                               "    gain    %s\n", f->seen ? f->seen : "-",
                               f->why ? f->why : "-", f->change ? f->change : "-",
                               f->gain_how ? f->gain_how : "-");
    }
    return err;
}

char *kopt_program_text(const kopt_program_analysis *a)
{
    kopt_buf t = KOPT_BUF_INIT;
    const kopt_program *p;
    int err = 0;

    if (!a || !a->prog)
        return NULL;
    p = a->prog;
    err |= kopt_buf_printf(&t, "program    %s, %d kernel(s)", p->subject[0] ? p->subject
                           : "(subject not recorded)", p->nkernels);
    if (a->has_dev)
        err |= kopt_buf_printf(&t, " on %s (sm_%d%d, %d SMs)", a->dev.name[0] ? a->dev.name
                               : "a GPU", a->dev.cc_major, a->dev.cc_minor, a->dev.sm_count);
    err |= kopt_buf_printf(&t, "\n%3s  %-32s %-7s %-22s %-14s %-12s %4s %7s %10s %7s %8s  %s\n",
                           "#", "kernel", "origin", "op", "grid", "block", "regs", "smem",
                           "time ms", "% gpu", "GB/s", "class");
    for (int k = 0; k < p->nkernels; k++)
        err |= kernel_row(&t, a, k);
    err |= program_lines(&t, a);
    err |= findings_text(&t, a->an);
    if (err) {
        kopt_buf_free(&t);
        return NULL;
    }
    return kopt_buf_detach(&t);
}

kopt_status kopt_program_print(FILE *f, kopt_ctx *ctx, const kopt_program_analysis *a)
{
    char *text = kopt_program_text(a);
    kopt_status rc = KOPT_OK;

    if (!text)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "program text");
    if (fputs(text, f) == EOF)
        rc = kopt_seterr(ctx, KOPT_E_IO, "writing the program analysis");
    free(text);
    return rc;
}

/* ---- JSON ------------------------------------------------------------------------------- */

static json_t *number_or_null(double v, int known)
{
    return known ? json_real(v) : json_null();
}

static json_t *class_json(const kopt_classification *c)
{
    return json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:s}", "final", kopt_class_name(c->final),
                     "analytic", kopt_class_name(c->analytic), "measured",
                     kopt_class_name(c->measured), "intensity", c->intensity, "ridge", c->ridge,
                     "pct_of_bound", c->pct_of_bound, "reasoning", c->reasoning);
}

static json_t *kernel_json(const kopt_program_analysis *a, int k)
{
    const kopt_program_kernel *kp = &a->prog->kernels[k];
    char shortname[256];
    json_t *j, *m = json_object();

    kopt_kernel_short_name(kp->name, shortname, sizeof(shortname));
    for (int i = 0; i < kp->metrics.n; i++)
        json_object_set_new(m, kp->metrics.m[i].name, json_real(kp->metrics.m[i].value));
    j = json_pack("{s:i, s:s, s:s, s:s, s:b, s:s, s:[i,i,i], s:[i,i,i], s:i, s:i, s:i, s:o, "
                  "s:f, s:f, s:f, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
                  "index", k + 1, "name", kp->name, "short_name", shortname, "origin",
                  kopt_kernel_origin_name(kp->origin), "library",
                  kopt_kernel_origin_is_library(kp->origin), "op", kp->op ? kp->op : "",
                  "grid", kp->grid[0], kp->grid[1], kp->grid[2], "block", kp->block[0],
                  kp->block[1], kp->block[2], "registers", kp->registers, "static_smem",
                  kp->static_smem, "dynamic_smem", kp->dynamic_smem, "start_us",
                  number_or_null(kp->start_us, kp->has_start), "dur_us", kp->dur_us,
                  "time_ms", kp->dur_us / 1e3, "share", kp->share, "dram_bytes",
                  number_or_null(kp->dram_bytes, kp->dram_bytes >= 0), "gbs",
                  number_or_null(kp->gbs, kp->dram_bytes >= 0), "flops",
                  number_or_null(kp->flops, kp->flops >= 0), "gflops",
                  number_or_null(kp->gflops, kp->flops >= 0), "tensor",
                  kp->tensor < 0 ? json_null() : json_boolean(kp->tensor), "class",
                  class_json(&a->kernel_cls[k]), "metrics", m);
    return j;
}

static json_t *finding_json(const kopt_finding *f)
{
    json_t *ev = json_array();

    for (int e = 0; e < f->nevidence; e++)
        json_array_append_new(ev, json_pack("{s:s, s:f, s:s, s:f, s:s}", "metric",
                              f->evidence[e].metric, "value", f->evidence[e].value, "op",
                              f->evidence[e].op, "threshold", f->evidence[e].threshold,
                              "threshold_name", f->evidence[e].threshold_name));
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:f, s:s, s:f, s:o}", "tool", f->tool,
                     "kernel", f->kernel, "title", f->title, "seen", f->seen ? f->seen : "",
                     "why", f->why ? f->why : "", "change", f->change ? f->change : "",
                     "gain", f->gain, "gain_how", f->gain_how ? f->gain_how : "",
                     "confidence", f->confidence, "evidence", ev);
}

static json_t *program_json(const kopt_program_analysis *a)
{
    const kopt_program *p = a->prog;
    const kopt_program_class_time *c = &a->by_time;
    json_t *o = json_object(), *ks = json_array(), *fs = json_array(), *sk = json_array();

    json_object_set_new(o, "subject", p->subject[0] ? json_string(p->subject) : json_null());
    json_object_set_new(o, "device", a->has_dev
        ? json_pack("{s:s, s:i, s:i, s:i}", "name", a->dev.name, "cc_major", a->dev.cc_major,
                    "cc_minor", a->dev.cc_minor, "sm_count", a->dev.sm_count)
        : json_null());
    json_object_set_new(o, "forward_ms", number_or_null(p->forward_ms, p->forward_ms > 0));
    json_object_set_new(o, "gpu_ms", json_real(p->gpu_ms));
    json_object_set_new(o, "busy_ms", json_real(p->busy_ms));
    json_object_set_new(o, "span_ms", json_real(p->span_ms));
    json_object_set_new(o, "has_starts", json_boolean(p->has_starts));
    json_object_set_new(o, "host_gaps", json_pack("{s:f, s:f, s:f, s:f}", "ms", p->gap_ms,
                        "between_ms", p->gap_between_ms, "outside_ms", p->gap_outside_ms,
                        "share", p->gap_share));
    json_object_set_new(o, "compulsory_bytes",
                        number_or_null(p->compulsory_bytes, p->compulsory_bytes >= 0));
    json_object_set_new(o, "dram_bytes", number_or_null(p->dram_bytes, p->dram_measured > 0));
    json_object_set_new(o, "dram_kernels_measured", json_integer(p->dram_measured));
    json_object_set_new(o, "fusion", json_pack("{s:o, s:o, s:o, s:o}", "bytes",
                        number_or_null(p->fusion_bytes, p->fusion_bytes >= 0), "ms",
                        number_or_null(a->fusion_ms, a->fusion_ms >= 0), "dram_gbs",
                        number_or_null(a->dram_gbs, a->dram_gbs > 0), "dram_source",
                        a->dram_source ? json_string(a->dram_source) : json_null()));
    json_object_set_new(o, "class", json_pack("{s:s, s:{s:f, s:f, s:f, s:f, s:f, s:f}}",
                        "program", kopt_class_name(a->cls), "by_time_ms", "compute",
                        c->compute, "memory", c->memory, "latency", c->latency, "mixed",
                        c->mixed, "unknown", c->unknown, "host_gaps", c->host_gaps));
    for (int k = 0; k < p->nkernels; k++)
        json_array_append_new(ks, kernel_json(a, k));
    json_object_set_new(o, "kernels", ks);
    if (a->an) {
        json_object_set_new(o, "roofline", class_json(&a->an->cls));
        for (int i = 0; i < a->an->findings.n; i++)
            json_array_append_new(fs, finding_json(&a->an->findings.f[i]));
        for (int i = 0; i < a->an->nskipped; i++)
            json_array_append_new(sk, json_string(a->an->skipped[i]));
    }
    json_object_set_new(o, "findings", fs);
    json_object_set_new(o, "tools_skipped", sk);
    return o;
}

char *kopt_program_json(const kopt_program_analysis *a)
{
    json_t *o;
    char *text;

    if (!a || !a->prog || !(o = program_json(a)))
        return NULL;
    text = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(10));
    json_decref(o);
    return text;
}
