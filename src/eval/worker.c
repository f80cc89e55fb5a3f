/*
 * The worker process: owns the CUDA context, generates inputs, runs a candidate (device
 * or host mode) over trials and timed repetitions, and copies outputs to shared memory.
 * It never sees reference outputs: the parent compares. Protocol in worker_int.h; its
 * state and shared helpers in worker_priv.h, which draws the order in which its files
 * call one another (downwards only). Its files, by phase:
 *   worker.c           this file: the main loop (kopt_worker_main_args: an early context,
 *                      take_job, run_job, serve_next) that calls the others
 *   worker_setup.c     set-up: the context, kopt's runtime module, cuRAND and buffers,
 *                      the candidate's module or shared object and its sandbox
 *   worker_run.c       a job's phases: tensors and launches, inputs, runs, output
 *                      copies and checksums, the trials and the timed loop
 *   worker_ceilings.c, worker_energy.c, worker_profile.c  the device's ceilings, energy
 *                      per run, the CUPTI range profiler (they call worker_run.c)
 *   worker_util.c      the events it writes on fd 3, CUDA failures, runtime launches and
 *                      the trace: the helpers every file calls
 *   worker_path.c      (the parent's side) where the worker program is found
 */
#include "worker_int.h"
#include "eval_int.h"
#include "kopt/candidate.h"
#include "kopt/problem.h"
#include "../cuda/cuda_int.h"
#include "../cuda/compile_int.h"

#include <dlfcn.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "worker_priv.h"
#include "sandbox_int.h"
#include "../profile/cupti_int.h"

/* ---- main --------------------------------------------------------------------------------- */

static void emit_error(worker *w)
{
    wk_emit(json_pack("{s:s, s:s, s:s, s:i, s:s, s:s?}", "event", "error", "kind",
                   w->fail_kind ? w->fail_kind : "harness", "message", kopt_errmsg(w->ctx),
                   "cuda", w->fail_cuda, "step", w->fail_step, "phase", w->phase_label));
}

/* Read stdin into `in` until it holds a whole line. 0 then, -1 at EOF. */
static int await_line(kopt_buf *in)
{
    char buf[65536];
    ssize_t n;

    while (!memchr(kopt_buf_cstr(in), '\n', in->len)) {
        n = read(0, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        kopt_buf_append(in, buf, (size_t)n);
    }
    return 0;
}

/* Remove the first line of `in` (await_line found one). */
static void drop_line(kopt_buf *in)
{
    size_t used = (size_t)((char *)memchr(in->ptr, '\n', in->len) - in->ptr) + 1;

    memmove(in->ptr, in->ptr + used, in->len - used + 1);
    in->len -= used;
}


/* The phases of a "run" job (trials, timing, energy) into `result`. */
static kopt_status run_phases(worker *w, json_t *job, json_t *result)
{
    json_t *phases_out = json_array(), *kernels = json_array(), *ph;
    size_t i;
    kopt_status rc = KOPT_OK;

    json_array_foreach(json_object_get(job, "phases"), i, ph) {
        json_t *po = json_object(), *tm = json_object_get(ph, "timing"), *sums = json_object();
        json_array_append_new(phases_out, po);
        json_object_set_new(po, "input_sums", sums);
        double t0 = kopt_now_ms();
        if ((rc = wk_setup_phase(w, ph, i == 0 ? kernels : NULL)) != KOPT_OK)
            goto done;
        wk_trace(w, "phase_setup", t0);
        wk_progress(w, (int)i, "setup");
        if ((rc = wk_run_trials(w, (int)i, json_object_get(ph, "trials"), sums)) != KOPT_OK)
            goto done;
        /* the trials' outputs are in the buffer: the parent checks them while this times */
        wk_emit(json_pack("{s:s, s:i}", "event", "trials", "phase", (int)i));
        if (json_is_object(tm)) {
            t0 = kopt_now_ms();
            if ((rc = wk_run_timing(w, (int)i, tm, po)) != KOPT_OK)
                goto done;
            json_object_set_new(po, "timing_wall_ms", json_real(kopt_now_ms() - t0));
            wk_trace(w, "timing", t0);
            if (json_number_value(json_object_get(tm, "energy_s")) > 0 &&
                (rc = wk_measure_energy(w, json_number_value(json_object_get(tm, "energy_s")),
                                        wk_median_sample(json_object_get(po, "samples_ms")),
                                        po)) != KOPT_OK)
                goto done;
        }
        t0 = kopt_now_ms();
        wk_free_phase(w);
        wk_trace(w, "phase_free", t0);
    }
    json_object_set(result, "phases", phases_out);
    if (w->trace)
        json_object_set_new(result, "trace", w->trace);
    w->trace = NULL;
    if (w->gpu_kernels)
        json_object_set_new(result, "gpu_kernels", w->gpu_kernels);
    w->gpu_kernels = NULL;
    json_object_set(result, "kernels", kernels);
done:
    json_decref(phases_out);
    json_decref(kernels);
    return rc;
}

/* Map the output buffer (fd 4) at `size` and pin it, unless it is mapped at that size
 * already (a "buffer" line before the job made it while the worker waited). Pinned, so
 * outputs come back by DMA at full speed: pageable copies made the evaluation 50% slower
 * on the H100 machine (2026-11-25). KOPT_PIN_OUTPUTS=0: pageable. */
static kopt_status map_buffer(worker *w, size_t size)
{
    int pin = !(getenv("KOPT_PIN_OUTPUTS") && strcmp(getenv("KOPT_PIN_OUTPUTS"), "0") == 0);
    void *m;

    if (w->shm && w->shm_size == size) {
        if (pin && !w->pinned && w->cu && w->pctx &&
            w->cu->cuMemHostRegister(w->shm, size, 0) == CUDA_SUCCESS)
            w->pinned = 1;
        return KOPT_OK;
    }
    if (w->shm) {
        if (w->pinned)
            w->cu->cuMemHostUnregister(w->shm);
        munmap(w->shm, w->shm_size);
        w->shm = NULL;
        w->pinned = 0;
    }
    w->shm_size = size;
    if (!size)
        return KOPT_OK;
    m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, KOPT_WORKER_SHM_FD, 0);
    if (m == MAP_FAILED) {
        w->fail_kind = "harness";
        return kopt_seterr(w->ctx, KOPT_E_IO, "mmap of the output buffer: %s", strerror(errno));
    }
    w->shm = m;
    if (pin && w->cu && w->pctx) {
        if (w->cu->cuMemHostRegister(m, size, 0) == CUDA_SUCCESS)
            w->pinned = 1;
        else
            kopt_log(w->ctx, KOPT_LOG_INFO, "output buffer not pinned");
    }
    return KOPT_OK;
}

static kopt_status run_job(worker *w, json_t *job, kopt_buf *rest)
{
    const char *op = json_string_value(json_object_get(job, "op"));
    json_t *dev = NULL, *result = NULL;
    kopt_status rc;
    double t_setup = kopt_now_ms(), t_pin, t_cand;
    double spawned = json_number_value(json_object_get(job, "spawned_ms"));

    if ((rc = wk_setup(w, job, &dev)) != KOPT_OK)
        return rc;
    if (spawned > 0)    /* the parent's fork to here: exec, dynamic loading, reading the job */
        json_object_set_new(dev, "exec_ms", json_real(t_setup - spawned));
    t_pin = kopt_now_ms();
    if (!op || strcmp(op, "run") == 0) {
        if ((rc = map_buffer(w, (size_t)json_integer_value(json_object_get(job, "shm_size")))) != KOPT_OK) {
            json_decref(dev);
            return rc;
        }
    } else {
        w->shm_size = (size_t)json_integer_value(json_object_get(job, "shm_size"));
    }
    t_cand = kopt_now_ms();
    if ((rc = wk_guard_candidate(w, job, dev)) != KOPT_OK || (rc = wk_load_candidate(w, job)) != KOPT_OK) {
        json_decref(dev);
        return rc;
    }
    json_object_set_new(dev, "pin_ms", json_real(t_cand - t_pin));
    json_object_set_new(dev, "candidate_ms", json_real(kopt_now_ms() - t_cand));
    json_object_set_new(dev, "setup_ms", json_real(kopt_now_ms() - t_setup));
    wk_emit(json_pack("{s:s, s:O}", "event", "hello", "device", dev));
    /* the parent's "go" (any line after the job; left in `rest`), or EOF: it went away */
    if (await_line(rest) != 0) {
        json_decref(dev);
        return KOPT_OK;
    }
    result = json_pack("{s:s, s:o}", "event", "result", "device", dev);
    dev = NULL;
    if (op && strcmp(op, "ceilings") == 0) {
        json_t *c = json_object();
        if ((rc = wk_measure_ceilings(w, c)) == KOPT_OK)
            json_object_set_new(result, "ceilings", c);
        else
            json_decref(c);
        goto done;
    }
    if (op && strcmp(op, "devices") == 0)
        goto done;
    if (op && strcmp(op, "profile") == 0) {   /* worker_profile.c */
        rc = wk_profile(w, job, result);
        goto done;
    }
    rc = run_phases(w, job, result);
done:
    if (rc == KOPT_OK)
        wk_emit(result);
    else
        json_decref(result);
    return rc;
}

/* The next line of stdin, parsed as a job and removed from `in`: 1 with *job set, 0 at
 * EOF, -1 (and the error set) when the line is not JSON. */
static int take_job(worker *w, kopt_buf *in, json_t **job)
{
    json_error_t err;
    char *nl;

    *job = NULL;
    if (await_line(in) != 0)
        return 0;
    nl = memchr(in->ptr, '\n', in->len);
    *nl = '\0';
    *job = json_loads(in->ptr, 0, &err);
    *nl = '\n';
    drop_line(in);
    if (!*job) {
        kopt_seterr(w->ctx, KOPT_E_INVALID, "bad job: %s", err.text);
        return -1;
    }
    return 1;
}

/* A further job of a serving worker: the same device, sizes and output buffer; a new
 * candidate module (device code only), run as the first job's phases were. */
static kopt_status serve_next(worker *w, json_t *job)
{
    const char *mode = json_string_value(json_object_get(job, "mode"));
    json_t *result;
    kopt_status rc;

    if ((mode && strcmp(mode, "host") == 0) || json_object_get(job, "sandbox") ||
        (size_t)json_integer_value(json_object_get(job, "shm_size")) != w->shm_size) {
        w->fail_kind = "harness";
        return kopt_seterr(w->ctx, KOPT_E_INVALID, "a serving worker runs device code with "
                           "the output buffer it started with");
    }
    if (w->mod) {
        CUresult r = w->cu->cuModuleUnload(w->mod);
        w->mod = NULL;
        if (r != CUDA_SUCCESS)
            return wk_cufail(w, r, "unload the previous candidate");
    }
    w->no_poison = json_is_true(json_object_get(job, "no_poison"));
    if ((rc = wk_load_candidate(w, job)) != KOPT_OK)
        return rc;
    result = json_pack("{s:s}", "event", "result");
    if ((rc = run_phases(w, job, result)) == KOPT_OK)
        wk_emit(result);
    else
        json_decref(result);
    return rc;
}

/* An early worker waiting for its job: {"event": "idle", "context": made or not, "shm_size":
 * its output buffer's size, mapped (and pinned, "pinned")}. Read by the parent's pool. */
static void emit_idle(const worker *w)
{
    wk_emit(json_pack("{s:s, s:b, s:I, s:b}", "event", "idle", "context", w->pctx != NULL,
                      "shm_size", (json_int_t)(w->shm ? w->shm_size : 0), "pinned", w->pinned));
}

int kopt_worker_main(void)
{
    return kopt_worker_main_args(0, NULL);
}

int kopt_worker_main_args(int argc, char **argv)
{
    worker w;
    kopt_buf in = KOPT_BUF_INIT;
    json_t *job = NULL;
    kopt_status rc;
    int got, early = 0;

    /* "--compile-helper": NVRTC calls for a parent that compiles on several threads
     * (src/cuda/compile_procs.c), not an evaluation; "--compile-zygote" starts them warm
     * (src/cuda/compile_zygote.c) */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--compile-helper") == 0)
            return kopt__compile_helper_main();
        if (strcmp(argv[i], "--compile-zygote") == 0) {   /* forks warm helpers */
            const char *next = i + 1 < argc ? argv[i + 1] : "";
            return kopt__compile_zygote_main(
                strncmp(next, "--gpu-architecture=", 19) == 0 ? next + 19 : NULL);
        }
    }
    memset(&w, 0, sizeof(w));
    w.ctx = kopt_ctx_new();
    /* "--early-device=N": the parent starts this worker before its job is ready; the
     * context (the slow part of a start) is made meanwhile. A failure here is reported
     * when the job comes, by wk_setup() trying again. */
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "--early-device=", 15) == 0) {
            double t0 = kopt_now_ms();
            early = 1;
            if (wk_make_context(&w, atoi(argv[i] + 15)) == KOPT_OK) {
                w.early_ms = kopt_now_ms() - t0;
                wk_early_setup(&w);
            } else {
                w.pctx = NULL;
            }
        }
    /* the job is the first line; what follows it (the "go") stays in `in`. An early
     * worker may first get {"op": "buffer", "shm_size": N} lines: it maps and pins its
     * output buffer while it waits. Each step done, it says so ("idle": its context made
     * or not, its buffer's size), so that a pool hands out the ready ones first */
    if (early)
        emit_idle(&w);
    while ((got = take_job(&w, &in, &job)) > 0 &&
           strcmp(json_string_value(json_object_get(job, "op")) ?: "", "buffer") == 0) {
        map_buffer(&w, (size_t)json_integer_value(json_object_get(job, "shm_size")));
        emit_idle(&w);
        json_decref(job);
        job = NULL;
    }
    if (got <= 0) {
        if (got == 0)
            kopt_seterr(w.ctx, KOPT_E_INVALID, "bad job: no job line");
        emit_error(&w);
        kopt_buf_free(&in);
        return 2;
    }
    rc = run_job(&w, job, &in);
    /* "serve": after the "go" line, each further line is a job for another candidate, run
     * at once; EOF ends the worker, and so does any failure (the parent starts a new one) */
    if (rc == KOPT_OK && json_is_true(json_object_get(job, "serve"))) {
        json_t *next = NULL;
        if (memchr(kopt_buf_cstr(&in), '\n', in.len))
            drop_line(&in);            /* the "go" */
        while (rc == KOPT_OK && (got = take_job(&w, &in, &next)) != 0) {
            rc = got > 0 ? serve_next(&w, next) : KOPT_E_INVALID;
            json_decref(next);
            next = NULL;
        }
    }
    /* One job done: wait for the parent to close stdin (at once when it does not want the
     * worker kept: kopt__worker_finish; after the comparison when it does: collect). The
     * output buffer's pages are then freed by this process's exit, beside the parent. */
    if (rc == KOPT_OK && !json_is_true(json_object_get(job, "serve")))
        while (await_line(&in) == 0)
            in.len = 0, in.ptr[0] = '\0';
    kopt_buf_free(&in);
    if (rc != KOPT_OK)
        emit_error(&w);
    json_decref(job);
    json_decref(w.dev_info);
    kopt_ctx_free(w.ctx);
    /* leave the context to the process exit: a faulted context cannot be torn down cleanly */
    return rc == KOPT_OK ? 0 : 1;
}
