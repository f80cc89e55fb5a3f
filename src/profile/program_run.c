/*
 * Profiling a PyTorch program kernel by kernel (kopt_profile_program; issue 28): the
 * worker records one forward's kernels with torch.profiler (kopt_eval_torch_program: names,
 * launch configurations, registers, shared memory, start and duration, the torch op of
 * each) and the forward's wall time; then, when ncu is here, the worker runs again under
 * ncu restricted to the NVTX range of one more forward, and ncu's roofline metrics (time,
 * DRAM bytes, FLOP counters) are joined to the traced kernels by launch order. The result
 * is the program profile JSON (docs/formats.md), "metrics" on each kernel when joined and
 * "metrics_note" saying why not otherwise.
 */
#include "kopt/profile.h"
#include "kopt/eval.h"
#include "kopt/proc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The kernels of ncu's log, joined to the trace's (same count, in order); 1 when joined. */
static int join_metrics(json_t *kernels, const kopt_profile *p, char *note, size_t n)
{
    if (p->nkernels != (int)json_array_size(kernels)) {
        snprintf(note, n, "ncu profiled %d kernel(s) in the NVTX range, the trace has %zu: "
                 "metrics not joined", p->nkernels, json_array_size(kernels));
        return 0;
    }
    for (int i = 0; i < p->nkernels; i++) {
        json_t *m = json_object();
        double v;
        for (int j = 0; kopt_metrics_program[j]; j++)   /* ncu's raw page holds more */
            if (kopt_metrics_get(&p->kernels[i].metrics, kopt_metrics_program[j], &v))
                json_object_set_new(m, kopt_metrics_program[j], json_real(v));
        json_object_set_new(json_array_get(kernels, (size_t)i), "metrics", m);
        json_object_set_new(json_array_get(kernels, (size_t)i), "ncu_name",
                            json_string(p->kernels[i].kernel));
    }
    return 1;
}

/* One run under ncu: its raw CSV parsed into *out. */
static kopt_status ncu_run(kopt_ctx *ctx, const kopt_problem *prob, const kopt_candidate *cand,
                           const kopt_eval_opts *eo, kopt_profile **out)
{
    kopt_ncu_opts no = KOPT_NCU_OPTS_INIT;
    char log[] = "/tmp/kopt-ncu-program-XXXXXX", **argv = NULL, *json = NULL, *text = NULL;
    size_t len = 0;
    int fd = mkstemp(log);
    kopt_status rc;

    *out = NULL;
    if (fd < 0)
        return kopt_seterr(ctx, KOPT_E_IO, "a file for ncu's log: %s", log);
    close(fd);
    no.metrics = kopt_metrics_program;
    no.nvtx_range = "kopt_profile";
    no.log_file = log;
    if ((rc = kopt_ncu_argv(&argv, NULL, ctx, &no)) == KOPT_OK &&
        (rc = kopt_eval_torch_program(ctx, prob, cand, eo, argv, &json)) == KOPT_OK &&
        (rc = kopt_file_read(ctx, log, &text, &len)) == KOPT_OK)
        rc = kopt_ncu_parse_raw_csv(out, ctx, text, log);
    kopt_ncu_argv_free(argv);
    free(json);
    free(text);
    unlink(log);
    return rc;
}

kopt_status kopt_profile_program(kopt_ctx *ctx, const kopt_problem *prob,
                                 const kopt_candidate *cand, const kopt_eval_opts *eo,
                                 int with_ncu, char **program)
{
    char *text = NULL, note[512] = "", *ncu = NULL;
    json_t *doc;
    kopt_profile *p = NULL;
    kopt_status rc;

    *program = NULL;
    if ((rc = kopt_eval_torch_program(ctx, prob, cand, eo, NULL, &text)) != KOPT_OK)
        return rc;
    doc = json_loads(text, 0, NULL);
    free(text);
    if (!doc)
        return kopt_seterr(ctx, KOPT_E_ERROR, "the worker's program profile is not JSON");
    if (!with_ncu)
        snprintf(note, sizeof(note), "no metrics asked (the trace only)");
    else if (!json_array_size(json_object_get(doc, "kernels")))
        snprintf(note, sizeof(note), "no kernel ran on a GPU: nothing for ncu to measure");
    else if (kopt_ncu_find(&ncu, ctx) != KOPT_OK)
        snprintf(note, sizeof(note), "%s: kernels without metrics", kopt_errmsg(ctx));
    else if (ncu_run(ctx, prob, cand, eo, &p) != KOPT_OK)
        snprintf(note, sizeof(note), "ncu failed: %.400s", kopt_errmsg(ctx));
    else
        join_metrics(json_object_get(doc, "kernels"), p, note, sizeof(note));
    if (note[0])
        json_object_set_new(doc, "metrics_note", json_string(note));
    free(ncu);
    kopt_profile_free(p);
    *program = json_dumps(doc, JSON_INDENT(1));
    json_decref(doc);
    return *program ? KOPT_OK : kopt_seterr(ctx, KOPT_E_NOMEM, "program profile");
}
