/* The PyTorch path's comparison where the outputs are: a streaming subject (a candidate, the
 * torch.compile baseline) hands over each run's outputs in its export buffer (on the GPU,
 * opened by CUDA IPC; with the CPU build of PyTorch, its shared buffer), and the streaming
 * reference's worker compares them with its own for the same inputs while the subject is
 * stopped. Starts when the subject is ready and ends with its result; the checks land in
 * the caller's kopt__stream_phase, as kopt__compare would have filled them. Also here, for
 * the PyTorch path (torch_eval.c): whether to stream, the jobs' "stream" field, and the
 * kopt__stream_phase array itself. */
#include "eval_int.h"
#include "worker_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double jnum(const json_t *v)
{
    const char *s = json_string_value(v);

    if (!s)
        return json_number_value(v);
    if (strcmp(s, "inf") == 0)
        return INFINITY;
    if (strcmp(s, "-inf") == 0)
        return -INFINITY;
    return NAN;
}

/* A command to the reference and its answer: KOPT_OK with the "compared" event in *ans
 * (the caller's), or an error that says what failed. */
static kopt_status ask(kopt_ctx *ctx, kopt__worker_proc *ref, json_t *cmd, double timeout_s,
                       json_t **ans)
{
    char *text = json_dumps(cmd, JSON_COMPACT);
    const char *op = json_string_value(json_object_get(cmd, "op"));
    const char *err;

    *ans = NULL;
    if (!text)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "command");
    kopt__worker_say(ref, text);
    kopt__worker_say(ref, "\n");
    free(text);
    if (!(*ans = kopt__worker_next(ref, timeout_s, "compared")))
        return kopt_seterr(ctx, KOPT_E_ERROR, "the PyTorch reference's worker ended while it "
                           "compared outputs (%s)", op ? op : "?");
    if ((err = json_string_value(json_object_get(*ans, "error"))) != NULL) {
        kopt_status rc = kopt_seterr(ctx, KOPT_E_ERROR, "the PyTorch reference's worker could "
                                     "not %s: %s", op ? op : "?", err);
        json_decref(*ans);
        *ans = NULL;
        return rc;
    }
    return KOPT_OK;
}

/* The outputs' tolerances in order, for the reference's command. */
static json_t *tolerances(const kopt_bound *b)
{
    json_t *a = json_array();

    for (int i = 0; i < b->ntensors; i++)
        if (b->tensors[i].role == KOPT_ROLE_OUTPUT || b->tensors[i].role == KOPT_ROLE_INOUT)
            json_array_append_new(a, json_pack("[f, f]", b->tensors[i].atol, b->tensors[i].rtol));
    return a;
}

/* One run's answer into its checks. 0, or -1 when it does not fit the outputs. */
static int fill_checks(kopt__stream_phase *sp, int run, const json_t *checks)
{
    int k = 0;

    for (int i = 0; i < sp->b->ntensors; i++) {
        const kopt_btensor *t = &sp->b->tensors[i];
        const json_t *j;
        kopt_check *c;
        if (t->role != KOPT_ROLE_OUTPUT && t->role != KOPT_ROLE_INOUT)
            continue;
        j = json_array_get(checks, (size_t)k);
        if (!j || json_integer_value(json_object_get(j, "count")) != t->count)
            return -1;
        c = &sp->checks[run * sp->nout + k++];
        memset(c, 0, sizeof(*c));
        snprintf(c->tensor, sizeof(c->tensor), "%s", t->name);
        snprintf(c->sizes_label, sizeof(c->sizes_label), "%s", sp->label);
        if (run < sp->ntrials)
            snprintf(c->run, sizeof(c->run), "trial %d", run);
        else if (run == sp->ntrials)
            snprintf(c->run, sizeof(c->run), "repeat of trial 0");
        else
            snprintf(c->run, sizeof(c->run), "timed");
        c->seed = run < sp->ntrials ? sp->seeds[run] : run == sp->ntrials ? sp->seeds[0]
                                                                           : sp->timing_seed;
        c->count = t->count;
        c->mismatches = json_integer_value(json_object_get(j, "mismatches"));
        c->max_abs_err = jnum(json_object_get(j, "max_abs"));
        c->max_rel_err = jnum(json_object_get(j, "max_rel"));
        c->atol = t->atol;
        c->rtol = t->rtol;
        c->ndim = t->ndim;
        c->first_index = json_integer_value(json_object_get(j, "first_index"));
        c->first_got = jnum(json_object_get(j, "first_got"));
        c->first_want = jnum(json_object_get(j, "first_want"));
        if (c->mismatches > 0 && (c->first_index < 0 || c->first_index >= t->count))
            return -1;
        if (c->first_index >= 0) {
            int64_t rem = c->first_index;
            for (int d = t->ndim - 1; d >= 0; d--) {
                int64_t ext = t->shape[d] ? t->shape[d] : 1;
                c->first_coord[d] = rem % ext;
                rem /= ext;
            }
        }
    }
    return k == sp->nout ? 0 : -1;
}

/* GPU memory, in multiples of a subject's outputs, of one subject exiting (6), the next one
 * running (4) and the reference's comparison (2) together */
#define STREAM_EXIT_FACTOR 12.0

kopt_status kopt__torch_stream(kopt_ctx *ctx, kopt__worker_proc *ref, kopt__worker_proc *subj,
                               kopt__stream_phase *ph, int nphases, size_t export_bytes,
                               double timeout_s, kopt__worker_run *out, double *compare_ms)
{
    json_t *dev = kopt__worker_device(subj), *opening, *ans = NULL, *ev;
    const char *handle = json_string_value(json_object_get(json_object_get(dev, "export"),
                                                           "handle"));
    char path[64];
    kopt_status rc = KOPT_OK;
    int opened = 0;     /* its buffer open in the reference's worker */

    memset(out, 0, sizeof(*out));
    *compare_ms = 0;
    for (int p = 0; p < nphases; p++)
        memset(ph[p].done, 0, sizeof(ph[p].done));
    if (handle)
        opening = json_pack("{s:s, s:s, s:I}", "op", "open", "handle", handle, "bytes",
                            (json_int_t)export_bytes);
    else if (kopt__worker_buffer_path(subj, path, sizeof(path)))
        opening = json_pack("{s:s, s:s, s:I}", "op", "open", "path", path, "bytes",
                            (json_int_t)export_bytes);
    else
        opening = NULL;     /* its setup failed before the buffer: its error says why */
    if (opening) {
        opened = 1;
        rc = ask(ctx, ref, opening, timeout_s, &ans);
        json_decref(opening);
        json_decref(ans);
        if (rc != KOPT_OK) {
            kopt__worker_proc_free(subj);
            return rc;
        }
    }
    while (opened && (ev = kopt__worker_next(subj, timeout_s, "outputs")) != NULL) {
        int p = (int)json_integer_value(json_object_get(ev, "phase"));
        int run = (int)json_integer_value(json_object_get(ev, "run"));
        kopt__stream_phase *sp = p >= 0 && p < nphases ? &ph[p] : NULL;
        json_t *cmd;
        json_decref(ev);
        if (!sp || run < 0 || run > sp->ntrials + 1 || (run == sp->ntrials + 1 && !sp->timed)) {
            rc = kopt_seterr(ctx, KOPT_E_ERROR, "the subject's worker handed over outputs of "
                             "phase %d run %d, which the evaluation has not", p, run);
            break;
        }
        /* offsets are the parent's: trial 0 in slot 0 (kept for the repeat), the rest in 1 */
        if (run == sp->ntrials)
            cmd = json_pack("{s:s, s:i, s:i, s:I, s:I, s:o}", "op", "repeat", "phase", p, "run",
                            run, "offset", (json_int_t)sp->slot, "against", (json_int_t)0,
                            "tolerances", tolerances(sp->b));
        else
            cmd = json_pack("{s:s, s:i, s:i, s:I, s:o}", "op", "compare", "phase", p, "run", run,
                            "offset", (json_int_t)(run ? sp->slot : 0), "tolerances",
                            tolerances(sp->b));
        kopt__worker_pause(subj, 1);
        rc = cmd ? ask(ctx, ref, cmd, timeout_s, &ans) : kopt_seterr(ctx, KOPT_E_NOMEM, "cmd");
        kopt__worker_pause(subj, 0);
        json_decref(cmd);
        if (rc != KOPT_OK)
            break;
        *compare_ms += json_number_value(json_object_get(ans, "ms"));
        if (fill_checks(sp, run, json_object_get(ans, "checks")) != 0) {
            json_decref(ans);
            rc = kopt_seterr(ctx, KOPT_E_ERROR, "the PyTorch reference's worker answered a "
                             "comparison of %s run %d that does not fit the outputs", sp->label,
                             run);
            break;
        }
        json_decref(ans);
        sp->done[run] = 1;
        kopt__worker_say(subj, "next\n");
    }
    if (opened && rc == KOPT_OK) {
        json_t *cl = json_pack("{s:s}", "op", "close");
        rc = ask(ctx, ref, cl, timeout_s, &ans);
        json_decref(cl);
        json_decref(ans);
    }
    if (rc != KOPT_OK) {
        kopt__worker_proc_free(subj);
        return rc;
    }
    /* once its result is in, its exit (a GB-scale context torn down) is not waited for,
     * unless the GPU could not hold it beside the next evaluation's workers: measured on an
     * 80 GB H100 with 7.5 GB outputs, a candidate exiting still held 5.8x its outputs while
     * the next one held 3.8x and the reference's comparison asked for 1x more, and the
     * comparison ran out of memory (bench/results/2026-11-27-h100-serve-early) */
    {
        double mem = json_number_value(json_object_get(kopt__worker_device(subj), "total_mem"));
        int wait = mem > 0 && STREAM_EXIT_FACTOR * (double)export_bytes > 0.9 * mem;
        rc = kopt__worker_collect(ctx, subj, timeout_s, out);
        if (wait)
            kopt__worker_proc_free(subj);   /* waits for its end */
        else
            kopt__worker_proc_release(subj);
    }
    return rc;
}

int kopt__stream_complete(const kopt__stream_phase *ph, int nphases, char *msg, size_t n)
{
    for (int p = 0; p < nphases; p++)
        for (int run = 0; run <= ph[p].ntrials + (ph[p].timed ? 1 : 0); run++)
            if (!ph[p].done[run]) {
                snprintf(msg, n, "the candidate's worker never handed over the outputs of %s "
                         "run %d for comparison (kopt's worker code in its process was "
                         "bypassed)", ph[p].label, run);
                return 0;
            }
    return 1;
}

/* Whether the PyTorch path compares on the GPU (torch_stream.c): on a GPU, unless the two
 * export slots would take over a quarter of its memory; $KOPT_TORCH_COMPARE "host" or
 * "stream" decides (tests: "stream" with the CPU build of PyTorch, through the subjects'
 * shared buffers). */
int kopt__torch_stream_mode(int cpu, int has_device, const kopt_device_info *nvml,
                            size_t export_bytes)
{
    const char *e = getenv("KOPT_TORCH_COMPARE");

    if (e && strcmp(e, "host") == 0)
        return 0;
    if (e && strcmp(e, "stream") == 0)
        return 1;
    if (cpu || !has_device)
        return 0;
    return !(nvml->total_mem > 0 && (double)export_bytes > 0.25 * (double)nvml->total_mem);
}

/* A worker job of the PyTorch path, streaming: the reference compares, a subject exports
 * `export` bytes on the GPU (0: through its shared buffer). Takes `job`. */
json_t *kopt__torch_streaming(json_t *job, int stream, int is_ref, size_t export)
{
    if (job && stream)
        json_object_set_new(job, "stream", is_ref ? json_pack("{s:b}", "reference", 1)
                                                  : json_pack("{s:I}", "export",
                                                              (json_int_t)export));
    return job;
}

/* The streamed checks of a subject, one per phase, backed by one allocation. */
kopt__stream_phase *kopt__stream_phases(const phase_plan *phases, int nphases)
{
    kopt__stream_phase *sp = calloc((size_t)nphases, sizeof(*sp));

    if (!sp)
        return NULL;
    for (int p = 0; p < nphases; p++) {
        sp[p].b = phases[p].ref;
        sp[p].label = phases[p].label;
        sp[p].ntrials = phases[p].ntrials;
        sp[p].timed = phases[p].timed;
        sp[p].seeds = phases[p].seeds;
        sp[p].timing_seed = phases[p].timing_seed;
        sp[p].slot = phases[p].slot;
        for (int i = 0; i < phases[p].ref->ntensors; i++)
            sp[p].nout += phases[p].ref->tensors[i].role == KOPT_ROLE_OUTPUT ||
                          phases[p].ref->tensors[i].role == KOPT_ROLE_INOUT;
        if (!(sp[p].checks = calloc((size_t)(sp[p].ntrials + 2) * (size_t)(sp[p].nout + 1),
                                    sizeof(kopt_check)))) {
            for (int q = 0; q < p; q++)
                free(sp[q].checks);
            free(sp);
            return NULL;
        }
    }
    return sp;
}

void kopt__stream_phases_free(kopt__stream_phase *sp, int nphases)
{
    for (int p = 0; sp && p < nphases; p++)
        free(sp[p].checks);
    free(sp);
}
