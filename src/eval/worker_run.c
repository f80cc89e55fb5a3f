/*
 * The worker's runs (worker.c's run_phases calls in, once wk_setup in worker_setup.c has
 * made the context and loaded the candidate): a phase's tensors and launches
 * (setup_phase), inputs generated from the trial's seed and outputs poisoned, one run of
 * the candidate with its integrity checks (sandbox, off-stream work), the outputs copied
 * into the shared buffer with the inputs' checksums, the trials and the timed loop. What
 * it hands on is the phase's JSON result, which worker.c sends to the parent.
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

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static kopt_status fill_bits(worker *w, CUdeviceptr p, long long n, int width, uint64_t bits)
{
    void *params[] = {&p, &n, &width, &bits};
    return wk_launch_rt(w, w->f_fill, n, params, "poison");
}

/* Outputs get NaN (or a pattern for integers); scratch gets 0xff bytes. */
static kopt_status poison(worker *w)
{
    for (int i = 0; i < w->ntensors; i++) {
        wtensor *t = &w->tensors[i];
        kopt_status rc = KOPT_OK;
        if (t->t.count == 0)
            continue;
        if (w->no_poison && t->t.role != KOPT_ROLE_INOUT)
            continue;
        if (t->t.role == KOPT_ROLE_OUTPUT) {
            switch (t->t.dtype) {
            case KOPT_F32: rc = fill_bits(w, t->ptr, t->t.count, 4, 0x7fc00000u); break;
            case KOPT_F16: rc = fill_bits(w, t->ptr, t->t.count, 2, 0x7e00u); break;
            case KOPT_BF16: rc = fill_bits(w, t->ptr, t->t.count, 2, 0x7fc0u); break;
            case KOPT_F64: rc = fill_bits(w, t->ptr, t->t.count, 8, 0x7ff8000000000000ull); break;
            case KOPT_I32: rc = fill_bits(w, t->ptr, t->t.count, 4, 0x7fa5a5a5u); break;
            case KOPT_I64: rc = fill_bits(w, t->ptr, t->t.count, 8, 0x7fa5a5a57fa5a5a5ull); break;
            default: break;
            }
        } else if (t->t.role == KOPT_ROLE_SCRATCH) {
            rc = fill_bits(w, t->ptr, (long long)t->t.bytes, 1, 0xff);
        } else if (t->t.role == KOPT_ROLE_INOUT) {
            CU(cuMemcpyDtoDAsync(t->ptr, t->pristine, t->t.bytes, w->stream), "restore inout");
        }
        if (rc != KOPT_OK)
            return rc;
    }
    return KOPT_OK;
}

static kopt_status generate(worker *w, uint64_t seed)
{
    for (int i = 0; i < w->ntensors; i++) {
        wtensor *t = &w->tensors[i];
        long long n = t->t.count, n_even = n + (n & 1);
        int dbl = t->t.dtype == KOPT_F64 || !kopt_dtype_is_float(t->t.dtype);
        int dtype = (int)t->t.dtype, dist = (int)t->t.init.dist;
        double a = t->t.init.a, b = t->t.init.b;
        curandStatus_t s;

        if (t->t.role != KOPT_ROLE_INPUT && t->t.role != KOPT_ROLE_INOUT)
            continue;
        if (n == 0)
            continue;
        if ((size_t)n_even * 8 > w->rand_cap) {
            if (w->rand_buf)
                w->cu->cuMemFree(w->rand_buf);
            w->rand_buf = 0;
            w->rand_cap = (size_t)n_even * 8;
            CU(cuMemAlloc(&w->rand_buf, w->rand_cap), "allocate the random buffer");
        }
        if (!w->cr) {                  /* under a sanitizer: kopt's own counter hash */
            unsigned long long hs = mix64(seed ^ mix64((uint64_t)i + 1));
            int normal = dist == KOPT_DIST_NORMAL;
            void *params[] = {&w->rand_buf, &n_even, &hs, &normal};
            kopt_status rc = wk_launch_rt(w, w->f_hash_random, n_even, params, "generate");
            if (rc != KOPT_OK)
                return rc;
            dbl = 1;
            goto convert;
        }
        w->cr->curandSetPseudoRandomGeneratorSeed(w->gen, mix64(seed ^ mix64((uint64_t)i + 1)));
        w->cr->curandSetGeneratorOffset(w->gen, 0);
        if (dist == KOPT_DIST_NORMAL)
            s = dbl ? w->cr->curandGenerateNormalDouble(w->gen, (double *)w->rand_buf, (size_t)n_even, 0, 1)
                    : w->cr->curandGenerateNormal(w->gen, (float *)w->rand_buf, (size_t)n_even, 0, 1);
        else
            s = dbl ? w->cr->curandGenerateUniformDouble(w->gen, (double *)w->rand_buf, (size_t)n_even)
                    : w->cr->curandGenerateUniform(w->gen, (float *)w->rand_buf, (size_t)n_even);
        if (s != CURAND_STATUS_SUCCESS) {
            w->fail_kind = "harness";
            return kopt_seterr(w->ctx, KOPT_E_CUDA, "cuRAND failed (%d) for tensor %s", (int)s,
                               t->t.name);
        }
convert:
        {
            void *params[] = {&w->rand_buf, &t->ptr, &n, &dtype, &dist, &a, &b};
            kopt_status rc = wk_launch_rt(w, dbl ? w->f_from_f64 : w->f_from_f32, n, params, "generate");
            if (rc != KOPT_OK)
                return rc;
        }
        if (t->t.role == KOPT_ROLE_INOUT)
            CU(cuMemcpyDtoDAsync(t->pristine, t->ptr, t->t.bytes, w->stream), "keep inout");
    }
    return KOPT_OK;
}

static kopt_status kernel_records(worker *w);

static kopt_status flush_l2(worker *w)
{
    long long n = (long long)w->flush_n4;
    void *params[] = {&w->flush_buf, &n, &w->sink};
    return wk_launch_rt(w, w->f_flush, n, params, "flush L2");
}

/* One run of the candidate: its launch plan, or the host-mode entry point. */
static kopt_status run_once(worker *w)
{
    if (w->host_run) {
        kopt_candidate_tensor ts[64];
        kopt_candidate_io io;
        int rc;
        memset(&io, 0, sizeof(io));
        for (int i = 0; i < w->ntensors && i < 64; i++) {
            ts[i].name = w->tensors[i].t.name;
            ts[i].data = (void *)(uintptr_t)w->tensors[i].ptr;
            ts[i].dtype = (int)w->tensors[i].t.dtype;
            ts[i].ndim = w->tensors[i].t.ndim;
            ts[i].shape = w->tensors[i].t.shape;
            ts[i].count = w->tensors[i].t.count;
        }
        io.abi = KOPT_CANDIDATE_ABI;
        io.ntensors = w->ntensors;
        io.tensors = ts;
        io.nsizes = w->sizes.n;
        io.size_names = (const char *const *)w->sizes.names;
        io.size_values = w->sizes.values;
        io.stream = w->stream;
        rc = w->host_run(&io);
        if (rc != 0) {
            w->fail_kind = "crash";
            snprintf(w->fail_step, sizeof(w->fail_step), "kopt_candidate_run");
            return kopt_seterr(w->ctx, KOPT_E_CUDA, "kopt_candidate_run returned %d", rc);
        }
        return KOPT_OK;
    }
    for (int i = 0; i < w->nlaunches; i++) {
        wlaunch *l = &w->launches[i];
        char what[400];
        if (l->is_memset) {
            wtensor *t = &w->tensors[l->tensor];
            long long n = t->t.count;
            int dtype = (int)t->t.dtype;
            void *params[] = {&t->ptr, &n, &dtype, &l->value};
            kopt_status rc;
            if (n && (rc = wk_launch_rt(w, w->f_set, n, params, "memset step")) != KOPT_OK)
                return rc;
            continue;
        }
        snprintf(what, sizeof(what), "launch %d (%s, grid %ux%ux%u, block %ux%ux%u, smem %u)", i,
                 l->name, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
                 l->block[2], l->smem);
        CU(cuLaunchKernel(l->fn, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
                          l->block[2], l->smem, w->stream, l->params, NULL), what);
    }
    return KOPT_OK;
}

/* Host code under the sandbox: its signal handlers and the timer's code are as they were.
 * Called once work is synchronized, never between a run and its closing event. */
static kopt_status sandbox_intact(worker *w)
{
    char msg[512];

    if (!w->sandboxed || !kopt_sandbox_check(msg, sizeof(msg)))
        return KOPT_OK;
    w->fail_kind = "tamper";
    snprintf(w->fail_step, sizeof(w->fail_step), "kopt_candidate_run");
    return kopt_seterr(w->ctx, KOPT_E_ERROR, "%s", msg);
}

static kopt_status sync_checked(worker *w, const char *what)
{
    CU(cuStreamSynchronize(w->stream), what);
    CU(cuCtxSynchronize(), what);   /* catches work a host-mode candidate left elsewhere */
    return sandbox_intact(w);
}

/* Host mode: once the candidate's stream is done, the device must be idle too. Work still
 * running elsewhere (another stream, a thread) escapes the timed window. The copies of the
 * outputs are made on our stream before any device-wide synchronization, so such work is
 * also caught as unwritten outputs; this names it. */
#define KOPT_OFF_STREAM_MS 2.0
static kopt_status check_off_stream(worker *w)
{
    double t0 = kopt_now_ms(), waited;

    CU(cuCtxSynchronize(), "run");
    waited = kopt_now_ms() - t0;
    if (waited > KOPT_OFF_STREAM_MS) {
        w->fail_kind = "off_stream";
        snprintf(w->fail_step, sizeof(w->fail_step), "kopt_candidate_run");
        return kopt_seterr(w->ctx, KOPT_E_CUDA, "GPU work was still running %.1f ms after the "
                           "candidate's stream had finished: it must do all its work on "
                           "io->stream (other streams and threads escape the timed window)",
                           waited);
    }
    return KOPT_OK;
}

/* Copy the compared tensors (outputs and inouts) to shm at `offset`, back to back in
 * tensor order. */
static kopt_status copy_outputs(worker *w, size_t offset)
{
    for (int i = 0; i < w->ntensors; i++) {
        wtensor *t = &w->tensors[i];
        if (t->t.role != KOPT_ROLE_OUTPUT && t->t.role != KOPT_ROLE_INOUT)
            continue;
        if (offset + t->t.bytes > w->shm_size) {
            w->fail_kind = "harness";
            return kopt_seterr(w->ctx, KOPT_E_ERROR, "shared memory too small");
        }
        /* on our stream, before anything synchronizes the whole device: outputs must be
         * complete when the candidate's stream is (work left on other streams is not) */
        if (t->t.bytes)
            CU(cuMemcpyDtoHAsync(w->shm + offset, t->ptr, t->t.bytes, w->stream), "copy outputs");
        offset += t->t.bytes;
    }
    CU(cuStreamSynchronize(w->stream), "copy outputs");
    return KOPT_OK;
}

/* Checksums of the input tensors (in tensor order), computed on the GPU: the parent
 * compares them with the reference worker's, which saw the same generated inputs. */
static kopt_status input_checksums(worker *w, json_t **out)
{
    json_t *arr = json_array();
    kopt_status rc = KOPT_OK;

    *out = NULL;
    for (int i = 0; i < w->ntensors; i++) {
        wtensor *t = &w->tensors[i];
        unsigned long long h = 0;
        long long n = (long long)(t->t.bytes / 2);
        void *params[] = {&t->ptr, &n, &w->sink};
        if (t->t.role != KOPT_ROLE_INPUT)
            continue;
        if (n) {
            CUresult r = w->cu->cuMemsetD8Async(w->sink, 0, 8, w->stream);
            if (r != CUDA_SUCCESS) {
                json_decref(arr);
                return wk_cufail(w, r, "checksum");
            }
            if ((rc = wk_launch_rt(w, w->f_checksum, n, params, "checksum")) != KOPT_OK ||
                (r = w->cu->cuMemcpyDtoHAsync(&h, w->sink, 8, w->stream)) != CUDA_SUCCESS ||
                (r = w->cu->cuStreamSynchronize(w->stream)) != CUDA_SUCCESS) {
                json_decref(arr);
                return rc != KOPT_OK ? rc : wk_cufail(w, r, "checksum");
            }
        }
        {
            char hex[24];
            snprintf(hex, sizeof(hex), "%016llx", h);
            json_array_append_new(arr, json_pack("{s:s, s:s}", "tensor", t->t.name, "sum", hex));
        }
    }
    *out = arr;
    return KOPT_OK;
}

/* After a run: the outputs to `off`; when the spec asks ("check_inputs"), checksums of the
 * inputs into `sums`. Only then is the whole device synchronized. */
static kopt_status collect(worker *w, json_t *spec, size_t off, json_t *sums, const char *key)
{
    kopt_status rc;

    if ((rc = copy_outputs(w, off)) != KOPT_OK)
        return rc;
    if (json_is_true(json_object_get(spec, "check_inputs"))) {
        json_t *h = NULL;
        if ((rc = input_checksums(w, &h)) != KOPT_OK)
            return rc;
        json_object_set_new(sums, key, h);
    }
    return sync_checked(w, "run");
}

/* ---- phase setup ------------------------------------------------------------------------- */

static void free_phase(worker *w)
{
    for (int i = 0; i < w->ntensors; i++) {
        if (w->tensors[i].ptr)
            w->cu->cuMemFree(w->tensors[i].ptr);
        if (w->tensors[i].pristine)
            w->cu->cuMemFree(w->tensors[i].pristine);
    }
    free(w->tensors);
    free(w->launches);
    kopt_vars_free(&w->sizes);
    w->tensors = NULL;
    w->launches = NULL;
    w->ntensors = w->nlaunches = 0;
}

static kopt_status setup_phase(worker *w, json_t *ph, json_t *kernels_out)
{
    json_t *ts = json_object_get(ph, "tensors"), *ls = json_object_get(ph, "launches"), *v;
    json_t *sz = json_object_get(ph, "sizes");
    const char *key;
    size_t i;

    w->phase_label = json_string_value(json_object_get(ph, "label"));
    json_object_foreach(sz, key, v)
        kopt_vars_set(&w->sizes, key, json_integer_value(v));
    w->ntensors = (int)json_array_size(ts);
    w->tensors = calloc((size_t)w->ntensors + 1, sizeof(*w->tensors));
    w->nlaunches = (int)json_array_size(ls);
    w->launches = calloc((size_t)w->nlaunches + 1, sizeof(*w->launches));
    json_array_foreach(ts, i, v) {
        wtensor *t = &w->tensors[i];
        json_t *sh = json_object_get(v, "shape"), *d;
        size_t k;
        snprintf(t->t.name, sizeof(t->t.name), "%s", json_string_value(json_object_get(v, "name")));
        t->t.dtype = (kopt_dtype)json_integer_value(json_object_get(v, "dtype"));
        t->t.role = (kopt_role)json_integer_value(json_object_get(v, "role"));
        t->t.count = json_integer_value(json_object_get(v, "count"));
        t->t.bytes = (size_t)json_integer_value(json_object_get(v, "bytes"));
        t->t.init.dist = (kopt_dist)json_integer_value(json_object_get(v, "dist"));
        t->t.init.a = json_number_value(json_object_get(v, "a"));
        t->t.init.b = json_number_value(json_object_get(v, "b"));
        t->t.ndim = (int)json_array_size(sh);
        json_array_foreach(sh, k, d)
            t->t.shape[k] = json_integer_value(d);
        CU(cuMemAlloc(&t->ptr, t->t.bytes ? t->t.bytes : 16), "allocate tensors");
        if (t->t.role == KOPT_ROLE_INOUT)
            CU(cuMemAlloc(&t->pristine, t->t.bytes ? t->t.bytes : 16), "allocate tensors");
    }
    json_array_foreach(ls, i, v) {
        wlaunch *l = &w->launches[i];
        json_t *args = json_object_get(v, "args"), *a;
        size_t k, offset = 0, psize = 0;
        int nparams = 0;

        if (json_object_get(v, "memset")) {
            l->is_memset = 1;
            l->tensor = (int)json_integer_value(json_object_get(v, "memset"));
            l->value = json_number_value(json_object_get(v, "value"));
            continue;
        }
        snprintf(l->name, sizeof(l->name), "%s", json_string_value(json_object_get(v, "name")));
        CU(cuModuleGetFunction(&l->fn, w->mod, json_string_value(json_object_get(v, "lowered"))),
           "find kernel");
        for (int d = 0; d < 3; d++) {
            l->grid[d] = (unsigned)json_integer_value(json_array_get(json_object_get(v, "grid"), (size_t)d));
            l->block[d] = (unsigned)json_integer_value(json_array_get(json_object_get(v, "block"), (size_t)d));
        }
        l->smem = (unsigned)json_integer_value(json_object_get(v, "smem"));
        if (l->smem > 48 * 1024)
            CU(cuFuncSetAttribute(l->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                  (int)l->smem), "raise the kernel's dynamic shared memory limit");
        /* the kernel's parameters: count and widths, when the driver can tell */
        if (w->cu->cuFuncGetParamInfo)
            while (w->cu->cuFuncGetParamInfo(l->fn, (size_t)nparams, &offset, &psize) ==
                   CUDA_SUCCESS)
                nparams++;
        l->nargs = (int)json_array_size(args);
        if (l->nargs > MAX_ARGS) {
            w->fail_kind = "launch";
            return kopt_seterr(w->ctx, KOPT_E_INVALID, "%s: more than %d arguments", l->name,
                               MAX_ARGS);
        }
        if (w->cu->cuFuncGetParamInfo && nparams != l->nargs) {
            w->fail_kind = "launch";
            snprintf(w->fail_step, sizeof(w->fail_step), "bind arguments");
            return kopt_seterr(w->ctx, KOPT_E_INVALID, "kernel %s takes %d parameters but the "
                               "launch plan passes %d", l->name, nparams, l->nargs);
        }
        json_array_foreach(args, k, a) {
            int kind = (int)json_integer_value(json_object_get(a, "k"));
            size_t width = 0;
            argval *av = &l->vals[k];
            if (w->cu->cuFuncGetParamInfo)
                w->cu->cuFuncGetParamInfo(l->fn, k, &offset, &width);
            if (kind == KOPT_ARG_TENSOR) {
                av->p = w->tensors[json_integer_value(json_object_get(a, "t"))].ptr;
                width = width ? width : 8;
                if (width != 8) {
                    w->fail_kind = "launch";
                    return kopt_seterr(w->ctx, KOPT_E_INVALID, "kernel %s parameter %zu is %zu "
                                       "bytes wide but gets a pointer", l->name, k, width);
                }
            } else if (kind == KOPT_ARG_INT) {
                int64_t x = json_integer_value(json_object_get(a, "i"));
                if (width == 8)
                    av->i64 = x;
                else if (width == 4 || width == 0) {
                    if (x > INT32_MAX || x < INT32_MIN) {
                        w->fail_kind = "launch";
                        return kopt_seterr(w->ctx, KOPT_E_INVALID, "kernel %s parameter %zu is "
                                           "32-bit but gets %lld", l->name, k, (long long)x);
                    }
                    av->i32 = (int32_t)x;
                } else {
                    w->fail_kind = "launch";
                    return kopt_seterr(w->ctx, KOPT_E_INVALID, "kernel %s parameter %zu is %zu "
                                       "bytes wide; give it a type ({\"f32\": ...})", l->name,
                                       k, width);
                }
            } else if (kind == KOPT_ARG_I32) {
                av->i32 = (int32_t)json_integer_value(json_object_get(a, "i"));
            } else if (kind == KOPT_ARG_I64) {
                av->i64 = json_integer_value(json_object_get(a, "i"));
            } else if (kind == KOPT_ARG_F32) {
                av->f32 = (float)json_number_value(json_object_get(a, "f"));
            } else {
                av->f64 = json_number_value(json_object_get(a, "f"));
            }
            l->params[k] = av;
        }
        if (kernels_out) {
            int regs = 0, local = 0, shared = 0, maxt = 0;
            w->cu->cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, l->fn);
            w->cu->cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, l->fn);
            w->cu->cuFuncGetAttribute(&shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, l->fn);
            w->cu->cuFuncGetAttribute(&maxt, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, l->fn);
            json_array_append_new(kernels_out, json_pack("{s:s, s:i, s:i, s:i, s:i}", "name",
                                  l->name, "registers", regs, "local_bytes", local,
                                  "static_smem", shared, "max_threads_per_block", maxt));
        }
    }
    return KOPT_OK;
}

/* ---- trials and timing -------------------------------------------------------------------- */

kopt_status wk_run_trials(worker *w, int phase, json_t *trials, json_t *sums)
{
    json_t *t;
    size_t i;
    kopt_status rc;

    json_array_foreach(trials, i, t) {
        char what[64];
        uint64_t seed = (uint64_t)json_integer_value(json_object_get(t, "seed"));
        size_t off = (size_t)json_integer_value(json_object_get(t, "offset"));
        double t0 = kopt_now_ms();
        if ((rc = generate(w, seed)) != KOPT_OK || (rc = poison(w)) != KOPT_OK ||
            (rc = sync_checked(w, "prepare inputs")) != KOPT_OK)
            return rc;
        wk_trace(w, "trial_inputs", t0);
        t0 = kopt_now_ms();
        if (w->records && (rc = kopt__cupti_activity_begin(w->ctx)) != KOPT_OK) {
            w->fail_kind = "harness";
            return rc;
        }
        if ((rc = run_once(w)) != KOPT_OK)
            return rc;
        CU(cuStreamSynchronize(w->stream), "run");
        if (w->records && (rc = kernel_records(w)) != KOPT_OK)
            return rc;
        if (w->host_run && (rc = check_off_stream(w)) != KOPT_OK)
            return rc;
        snprintf(what, sizeof(what), "trial %zu", i);
        wk_trace(w, "trial_run", t0);
        t0 = kopt_now_ms();
        if ((rc = collect(w, t, off, sums, what)) != KOPT_OK)
            return rc;
        wk_trace(w, "trial_collect", t0);
        wk_progress(w, phase, what);
    }
    return KOPT_OK;
}

int wk_cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

#define CHUNK 64

/* The median of a timing result's "samples_ms" (0 when there are none). */
double wk_median_sample(json_t *samples)
{
    size_t n = json_array_size(samples);
    double *v = n ? malloc(n * sizeof(double)) : NULL;
    kopt_timing t;

    if (!v)
        return 0;
    for (size_t i = 0; i < n; i++)
        v[i] = json_number_value(json_array_get(samples, i));
    kopt__timing_from_samples(v, (int)n, 0, &t);
    free(v);
    return t.median_ms;
}

/* Timed runs between two looks at the median's precision. */
#define PRECISION_CHUNK 16

/* 1 when the median of `samples` is known to within `precision` (a fraction of it): the
 * half-width of its distribution-free 95% confidence interval, the order statistics at
 * n/2 -+ 0.98 sqrt(n) (normal approximation to the binomial), over the median. */
int wk_median_known(const float *sorted, int n, double precision)
{
    double half = 0.98 * sqrt((double)n);
    int lo = (int)floor(n / 2.0 - half), hi = (int)ceil(n / 2.0 + half);
    double med;

    if (n < 8 || lo < 0 || hi > n - 1)
        return 0;
    med = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    return med > 0 && 0.5 * (sorted[hi] - sorted[lo]) <= precision * med;
}

static int median_known(json_t *samples, double precision)
{
    size_t n = json_array_size(samples), i;
    float *v = malloc((n ? n : 1) * sizeof(float));
    json_t *x;
    int known;

    if (!v)
        return 0;
    json_array_foreach(samples, i, x)
        v[i] = (float)json_number_value(x);
    qsort(v, n, sizeof(float), wk_cmp_float);
    known = wk_median_known(v, (int)n, precision);
    free(v);
    return known;
}

kopt_status wk_run_timing(worker *w, int phase, json_t *tm, json_t *result)
{
    uint64_t seed = (uint64_t)json_integer_value(json_object_get(tm, "seed"));
    size_t off = (size_t)json_integer_value(json_object_get(tm, "offset"));
    double warmup_ms = json_number_value(json_object_get(tm, "warmup_ms"));
    double budget_ms = json_number_value(json_object_get(tm, "budget_ms"));
    int min_reps = (int)json_integer_value(json_object_get(tm, "min_reps"));
    int max_reps = (int)json_integer_value(json_object_get(tm, "max_reps"));
    int flush = json_is_true(json_object_get(tm, "flush_l2"));
    double precision = json_number_value(json_object_get(tm, "precision"));
    int min_warm = json_is_integer(json_object_get(tm, "min_warmup"))
                       ? (int)json_integer_value(json_object_get(tm, "min_warmup")) : 3;
    CUevent ev[2 * CHUNK];
    json_t *samples = json_array();
    double total = 0, t0, est = 0;
    int reps = 0, warm = 0;
    kopt_status rc = KOPT_OK;

    memset(ev, 0, sizeof(ev));
    for (int i = 0; i < 2 * CHUNK; i++)
        {
            CUresult r = w->cu->cuEventCreate(&ev[i], CU_EVENT_DEFAULT);
            if (r != CUDA_SUCCESS) {
                rc = wk_cufail(w, r, "create events");
                goto done;
            }
        }
    if ((rc = generate(w, seed)) != KOPT_OK)
        goto done;
    /* warm-up: at least 3 runs and warmup_ms of wall time */
    t0 = kopt_now_ms();
    while (warm < min_warm || kopt_now_ms() - t0 < warmup_ms) {
        float ms = 0;
        if ((rc = poison(w)) != KOPT_OK)
            goto done;
        if (flush && (rc = flush_l2(w)) != KOPT_OK)
            goto done;
        w->cu->cuEventRecord(ev[0], w->stream);
        if ((rc = run_once(w)) != KOPT_OK)
            goto done;
        w->cu->cuEventRecord(ev[1], w->stream);
        if ((rc = sync_checked(w, "warm-up")) != KOPT_OK)
            goto done;
        w->cu->cuEventElapsedTime(&ms, ev[0], ev[1]);
        est = warm == 0 ? ms : (est < ms ? est : ms);
        warm++;
        if (warm >= 1000)
            break;
    }
    wk_progress(w, phase, "warm-up");
    /* the cost of the event bracket itself: an empty kernel timed the same way */
    {
        float o[CHUNK];
        for (int r = 0; r < CHUNK; r++) {
            if (flush && (rc = flush_l2(w)) != KOPT_OK)
                goto done;
            w->cu->cuEventRecord(ev[2 * r], w->stream);
            if (w->cu->cuLaunchKernel(w->f_empty, 1, 1, 1, 32, 1, 1, 0, w->stream, NULL, NULL) !=
                CUDA_SUCCESS) {
                rc = kopt_seterr(w->ctx, KOPT_E_CUDA, "empty kernel");
                w->fail_kind = "harness";
                goto done;
            }
            w->cu->cuEventRecord(ev[2 * r + 1], w->stream);
        }
        if ((rc = sync_checked(w, "event overhead")) != KOPT_OK)
            goto done;
        for (int r = 0; r < CHUNK; r++)
            w->cu->cuEventElapsedTime(&o[r], ev[2 * r], ev[2 * r + 1]);
        qsort(o, CHUNK, sizeof(float), wk_cmp_float);
        json_object_set_new(result, "event_overhead_ms", json_real(o[CHUNK / 2]));
    }
    /* timed repetitions, in chunks of about a second of work so heartbeats keep coming.
     * With a precision the loop may also end sooner than the budget: from `look_from` runs
     * on, in chunks of PRECISION_CHUNK, once the median is known well enough. It never adds
     * runs the budget, min_reps or max_reps would not. */
    int look_from = precision > 0 ? (min_reps > KOPT_PRECISION_MIN_REPS ? min_reps
                                                                         : KOPT_PRECISION_MIN_REPS)
                                  : max_reps + 1;
    while (reps < max_reps && (reps < min_reps || total < budget_ms) &&
           !(reps >= look_from && median_known(samples, precision))) {
        int chunk = CHUNK;
        if (est > 0 && (int)(1000.0 / est) < chunk)
            chunk = (int)(1000.0 / est) > 1 ? (int)(1000.0 / est) : 1;
        if (est > 0) {                 /* no more than the budget (and min_reps) asks for */
            int want = (int)ceil((budget_ms - total) / est);
            if (want < min_reps - reps)
                want = min_reps - reps;
            if (want < chunk)
                chunk = want > 1 ? want : 1;
        }
        if (reps >= look_from && chunk > PRECISION_CHUNK)
            chunk = PRECISION_CHUNK;
        else if (reps < look_from && chunk > look_from - reps)
            chunk = look_from - reps;
        if (chunk > max_reps - reps)
            chunk = max_reps - reps;
        for (int r = 0; r < chunk; r++) {
            if ((rc = poison(w)) != KOPT_OK)
                goto done;
            if (flush && (rc = flush_l2(w)) != KOPT_OK)
                goto done;
            w->cu->cuEventRecord(ev[2 * r], w->stream);
            if ((rc = run_once(w)) != KOPT_OK)
                goto done;
            w->cu->cuEventRecord(ev[2 * r + 1], w->stream);
        }
        if ((rc = sync_checked(w, "timed runs")) != KOPT_OK)
            goto done;
        for (int r = 0; r < chunk; r++) {
            float ms = 0;
            w->cu->cuEventElapsedTime(&ms, ev[2 * r], ev[2 * r + 1]);
            json_array_append_new(samples, json_real(ms));
            total += ms;
        }
        reps += chunk;
        wk_progress(w, phase, "timing");
    }
    /* the outputs of the last timed run are checked too */
    if ((rc = collect(w, tm, off, json_object_get(result, "input_sums"), "timed")) != KOPT_OK)
        goto done;
    json_object_set_new(result, "samples_ms", samples);
    json_object_set_new(result, "warmup_runs", json_integer(warm));
    samples = NULL;
done:
    json_decref(samples);
    for (int i = 0; i < 2 * CHUNK; i++)
        if (ev[i])
            w->cu->cuEventDestroy(ev[i]);
    return rc;
}

/* The kernels the candidate's first call ran, other than kopt's own ("kopt_*"), once. */
static kopt_status kernel_records(worker *w)
{
    char **names = NULL;
    int n = 0;
    json_t *seen = json_array();
    kopt_status rc;

    w->records = 0;
    if ((rc = kopt__cupti_activity_end(w->ctx, &names, &n)) != KOPT_OK) {
        w->fail_kind = "harness";
        json_decref(seen);
        return rc;
    }
    for (int i = 0; i < n; i++) {
        int dup = 0;
        size_t k;
        json_t *v;
        if (strncmp(names[i], "kopt_", 5) != 0) {
            json_array_foreach(seen, k, v)
                dup |= strcmp(json_string_value(v), names[i]) == 0;
            if (!dup)
                json_array_append_new(seen, json_string(names[i]));
        }
        free(names[i]);
    }
    free(names);
    json_decref(w->gpu_kernels);
    w->gpu_kernels = seen;
    return KOPT_OK;
}

/* For the other worker files (worker_priv.h). */
kopt_status wk_setup_phase(worker *w, json_t *ph, json_t *kernels_out)
{
    return setup_phase(w, ph, kernels_out);
}
kopt_status wk_prepare_inputs(worker *w, uint64_t seed)
{
    kopt_status rc;
    if ((rc = generate(w, seed)) != KOPT_OK || (rc = poison(w)) != KOPT_OK)
        return rc;
    return sync_checked(w, "prepare inputs");
}
kopt_status wk_restore(worker *w)
{
    return poison(w);
}
kopt_status wk_run_once(worker *w)
{
    return run_once(w);
}
void wk_free_phase(worker *w)
{
    free_phase(w);
}
