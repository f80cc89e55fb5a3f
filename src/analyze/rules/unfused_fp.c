/* unfused_fp: separate FMUL and FADD where one FFMA would do. Counts from the measured
 * smsp__sass_thread_inst_executed_op_{fadd,fmul,ffma}_pred_on.sum (dynamic) or SASS
 * (static); FP64 (DADD/DMUL/DFMA) the same way. Only pairs can fuse, so the instructions
 * saved are min(FADD, FMUL) of all FP instructions (stricter than ncu's non-fused / 2,
 * which also fires on pure sums). */
#include "analyze/analyze_int.h"

#include <stdio.h>

/* Share of the kernel's instructions that are FP math, when SASS does not say. */
#define KOPT_FP_INST_SHARE_UNKNOWN 0.5

static const char *const metrics[] = {
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
    NULL,
};

typedef struct fp_counts {
    double add, mul, fma;
    int measured;
} fp_counts;

static int counts(const kopt_kernel_view *k, int dbl, fp_counts *c)
{
    const char *p = dbl ? "d" : "f";
    char n[3][96];

    snprintf(n[0], sizeof(n[0]), "smsp__sass_thread_inst_executed_op_%sadd_pred_on.sum", p);
    snprintf(n[1], sizeof(n[1]), "smsp__sass_thread_inst_executed_op_%smul_pred_on.sum", p);
    snprintf(n[2], sizeof(n[2]), "smsp__sass_thread_inst_executed_op_%sfma_pred_on.sum", p);
    c->add = c->mul = c->fma = 0;
    if (kopt__metric(k, n[0], &c->add) && kopt__metric(k, n[1], &c->mul) &&
        kopt__metric(k, n[2], &c->fma)) {
        c->measured = 1;
        return 1;
    }
    c->measured = 0;
    if (!k->sass)
        return 0;
    c->add = dbl ? k->sass->dadd : k->sass->fadd;
    c->mul = dbl ? k->sass->dmul : k->sass->fmul;
    c->fma = dbl ? k->sass->dfma : k->sass->ffma;
    return 1;
}

static kopt_status one(const kopt_analysis_input *in, const kopt_kernel_view *k,
                       const kopt_thresholds *th, kopt_findings *out, kopt_ctx *ctx)
{
    for (int dbl = 0; dbl < 2; dbl++) {
        fp_counts c;
        double total, pairs, saved, inst_share, cfrac, gain;
        const char *P = dbl ? "D" : "F";
        kopt__fb b;
        kopt_status rc;

        if (!counts(k, dbl, &c))
            continue;
        total = c.add + c.mul + c.fma;
        pairs = c.add < c.mul ? c.add : c.mul;
        if (total <= 0)
            continue;
        saved = pairs / total;
        if (saved <= th->unfused_ratio)
            continue;
        inst_share = k->sass && k->sass->instructions > 0
                         ? kopt__clamp01((k->sass->ffma + k->sass->fmul + k->sass->fadd +
                                          k->sass->dfma + k->sass->dmul + k->sass->dadd) /
                                         (double)k->sass->instructions)
                         : KOPT_FP_INST_SHARE_UNKNOWN;
        cfrac = kopt__sm_frac(k, KOPT_EXPOSURE_UNKNOWN);
        gain = saved * inst_share * cfrac;
        kopt__fb_init(&b, "unfused_fp", kopt__kname(k),
                      "%.0f%% of %s instructions could fuse into %sFMA", saved * 100,
                      dbl ? "FP64" : "FP32", P);
        kopt__fb_evidence(&b, dbl ? "min(DADD, DMUL) / (DADD + DMUL + DFMA)"
                                  : "min(FADD, FMUL) / (FADD + FMUL + FFMA)",
                          saved, ">", th->unfused_ratio, "unfused_ratio");
        kopt__fb_text(&b, &b.seen, "%s: %.0f %sADD, %.0f %sMUL, %.0f %sFMA; up to %.0f "
                      "MUL+ADD pairs could be one %sFMA each, %.0f%% of the FP instructions "
                      "(unfused_ratio: %.0f%%).", c.measured ? "Executed (measured)" : "SASS",
                      c.add, P, c.mul, P, c.fma, P, pairs, P, saved * 100,
                      th->unfused_ratio * 100);
        kopt__fb_text(&b, &b.why, "An FMA does a multiply and an add in one instruction and "
                      "one rounding; separate instructions take two issue slots and two "
                      "pipe cycles for the same work.");
        kopt__fb_text(&b, &b.change, "Write the product and the sum in one expression "
                      "(`acc = fmaf(a, b, acc)` or `acc += a * b`) so the compiler emits "
                      "%sFMA; check nothing blocks contraction: `--fmad=false`, "
                      "`__fmul_rn`/`__fadd_rn` intrinsics, or a `volatile` temporary.", P);
        kopt__fb_text(&b, &b.how, "Instructions saved (%.0f%% of FP) times the FP share of "
                      "all instructions (%s: %.2f) times the SM throughput share (%.2f).",
                      saved * 100, k->sass ? "SASS" : "KOPT_FP_INST_SHARE_UNKNOWN",
                      inst_share, cfrac);
        if ((rc = kopt__fb_emit(&b, out, gain,
                                c.measured ? KOPT_CONF_MEASURED : KOPT_CONF_STATIC, ctx)) < 0)
            return rc;
    }
    return KOPT_OK;
}

const kopt_tool kopt_tool_unfused_fp = {
    .name = "unfused_fp",
    .summary = "separate FMUL and FADD where one FFMA would do",
    .classes = KOPT_CLASS_COMPUTE | KOPT_CLASS_MIXED,
    .needs = 0,
    .needs_any = KOPT_NEEDS_SASS | KOPT_NEEDS_METRICS,
    .metrics = metrics,
    .run_kernel = one,
};
