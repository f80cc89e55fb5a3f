/*
 * The worker process: owns the CUDA context, generates inputs, runs a candidate (device
 * or host mode) over trials and timed repetitions, and copies outputs to shared memory.
 * It never sees reference outputs: the parent compares. Protocol in worker_int.h.
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

/* ---- events ------------------------------------------------------------------------------ */

void wk_emit(json_t *obj)
{
    char *s = json_dumps(obj, JSON_COMPACT);
    if (s) {
        size_t n = strlen(s), off = 0;
        s[n] = '\n';   /* json_dumps leaves room for the NUL; replace it */
        while (off < n + 1) {
            ssize_t w = write(KOPT_WORKER_EVENT_FD, s + off, n + 1 - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        free(s);
    }
    json_decref(obj);
}

void wk_progress(worker *w, int phase, const char *what)
{
    wk_emit(json_pack("{s:s, s:i, s:s}", "event", "progress", "phase", phase, "what", what));
    (void)w;
}

/* Classify a CUDA error as the verdict family the parent will report. */
static const char *classify(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_OUT_OF_MEMORY: return "oom";
    case CUDA_ERROR_LAUNCH_TIMEOUT: return "timeout";
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_NOT_FOUND:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
        return "launch";
    default: return "crash";
    }
}

/* Record a CUDA failure on the worker and context. Returns KOPT_E_CUDA. */
kopt_status wk_cufail(worker *w, CUresult r, const char *what)
{
    char buf[256];
    w->fail_kind = classify(r);
    w->fail_cuda = (int)r;
    snprintf(w->fail_step, sizeof(w->fail_step), "%s", what);
    return kopt_seterr(w->ctx, KOPT_E_CUDA, "%s: %s", what, kopt__cu_errstr(r, buf, sizeof(buf)));
}


/* ---- helpers ------------------------------------------------------------------------------- */

unsigned wk_grid_for(worker *w, long long n)
{
    long long g = (n + 255) / 256, cap = (long long)w->sm_count * 16;
    if (g < 1)
        g = 1;
    return (unsigned)(g < cap ? g : cap);
}

kopt_status wk_launch_rt(worker *w, CUfunction f, long long n, void **params, const char *what)
{
    CU(cuLaunchKernel(f, wk_grid_for(w, n), 1, 1, 256, 1, 1, 0, w->stream, params, NULL), what);
    return KOPT_OK;
}

void wk_trace(worker *w, const char *step, double t0)
{
    double ms = kopt_now_ms() - t0;
    json_t *v;

    if (!w->trace)
        w->trace = json_object();
    v = json_object_get(w->trace, step);
    json_object_set_new(w->trace, step, json_real(ms + (v ? json_number_value(v) : 0)));
}

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

static kopt_status run_trials(worker *w, int phase, json_t *trials, json_t *sums)
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
static double median_sample(json_t *samples)
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

static kopt_status run_timing(worker *w, int phase, json_t *tm, json_t *result)
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

/* ---- setup ------------------------------------------------------------------------------ */

static kopt_status device_json(worker *w, json_t **out)
{
    char name[256], uuid[64];
    CUuuid u;
    size_t mem = 0;
    int drv = 0, v[12];
    static const CUdevice_attribute attrs[12] = {
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
        CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
        CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, CU_DEVICE_ATTRIBUTE_CLOCK_RATE,
        CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH,
    };

    CU(cuDeviceGetName(name, sizeof(name), w->dev), "device name");
    CU(cuDeviceGetUuid(&u, w->dev), "device uuid");
    CU(cuDeviceTotalMem(&mem, w->dev), "device memory");
    w->cu->cuDriverGetVersion(&drv);
    for (int i = 0; i < 12; i++)
        CU(cuDeviceGetAttribute(&v[i], attrs[i], w->dev), "device attribute");
    snprintf(uuid, sizeof(uuid), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             (unsigned char)u.bytes[0], (unsigned char)u.bytes[1], (unsigned char)u.bytes[2],
             (unsigned char)u.bytes[3], (unsigned char)u.bytes[4], (unsigned char)u.bytes[5],
             (unsigned char)u.bytes[6], (unsigned char)u.bytes[7], (unsigned char)u.bytes[8],
             (unsigned char)u.bytes[9], (unsigned char)u.bytes[10], (unsigned char)u.bytes[11],
             (unsigned char)u.bytes[12], (unsigned char)u.bytes[13], (unsigned char)u.bytes[14],
             (unsigned char)u.bytes[15]);
    w->sm_count = v[2];
    *out = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:I, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i}",
                     "name", name, "uuid", uuid, "cc_major", v[0], "cc_minor", v[1],
                     "sm_count", v[2], "l2_bytes", v[3], "total_mem", (json_int_t)mem,
                     "max_threads_per_block", v[4], "max_smem_per_block_optin", v[5],
                     "smem_per_sm", v[6], "regs_per_sm", v[7], "max_threads_per_sm", v[8],
                     "clock_khz", v[9], "mem_clock_khz", v[10], "mem_bus_width", v[11],
                     "driver_version", drv);
    return KOPT_OK;
}

static kopt_status load_module(worker *w, const char *path, CUmodule *mod)
{
    char *data = NULL;
    size_t len = 0;
    kopt_status rc;

    if ((rc = kopt_file_read(w->ctx, path, &data, &len)) != KOPT_OK) {
        w->fail_kind = "harness";
        return rc;
    }
    {
        CUresult r = w->cu->cuModuleLoadData(mod, data);
        free(data);
        if (r != CUDA_SUCCESS)
            return wk_cufail(w, r, "load module");
    }
    return KOPT_OK;
}

/* libcuda, cuInit and the device's primary context, current on this thread. */
static kopt_status make_context(worker *w, int ordinal)
{
    kopt_status rc;

    if ((rc = kopt__cuda_load(w->ctx, &w->cu)) != KOPT_OK) {
        w->fail_kind = "nodevice";
        return rc;
    }
    {
        CUresult r = w->cu->cuInit(0);
        if (r != CUDA_SUCCESS) {
            w->fail_kind = "nodevice";
            char b[256];
            return kopt_seterr(w->ctx, KOPT_E_NO_DEVICE, "cuInit: %s",
                               kopt__cu_errstr(r, b, sizeof(b)));
        }
    }
    CU(cuDeviceGet(&w->dev, ordinal), "select device");
    CU(cuDevicePrimaryCtxRetain(&w->pctx, w->dev), "create context");
    CU(cuCtxSetCurrent(w->pctx), "make context current");
    w->ordinal = ordinal;
    return KOPT_OK;
}

/* The runtime module (kopt's own kernels) at `path`, unless it is the one loaded already. */
static kopt_status load_runtime(worker *w, const char *path)
{
    kopt_status rc;

    if (w->rt && strcmp(w->rt_path, path) == 0)
        return KOPT_OK;
    if (w->rt) {
        w->cu->cuModuleUnload(w->rt);
        w->rt = NULL;
    }
    if ((rc = load_module(w, path, &w->rt)) != KOPT_OK)
        return rc;
    snprintf(w->rt_path, sizeof(w->rt_path), "%s", path);
#define GETF(var, name) CU(cuModuleGetFunction(&w->var, w->rt, name), "runtime kernel " name)
    GETF(f_from_f32, "kopt_from_f32");
    GETF(f_from_f64, "kopt_from_f64");
    GETF(f_set, "kopt_set_value");
    GETF(f_fill, "kopt_fill_bits");
    GETF(f_flush, "kopt_l2_flush");
    GETF(f_copy, "kopt_bw_copy");
    GETF(f_read, "kopt_bw_read");
    GETF(f_write, "kopt_bw_write");
    GETF(f_fma, "kopt_fma_f32");
    GETF(f_empty, "kopt_empty");
    GETF(f_checksum, "kopt_checksum");
    GETF(f_hash_random, "kopt_hash_random");
#undef GETF
    return KOPT_OK;
}

/* What every job needs once the context is up and does not depend on the job: the stream,
 * cuRAND's generator (unless `no_curand`), the sink and the L2 flush buffer. Each step is
 * done once: a worker started ahead does them while it waits for its job (early_setup). */
static kopt_status device_setup(worker *w, int no_curand, double *curand_ms, double *buffers_ms)
{
    double t = kopt_now_ms();
    kopt_status rc;

    if (!w->stream)
        CU(cuStreamCreate(&w->stream, CU_STREAM_NON_BLOCKING), "create stream");
    if (no_curand) {
        /* under compute-sanitizer, cuRAND's module (every kernel of it instrumented) would
         * cost minutes: inputs come from kopt_hash_random instead (generate) */
        w->cr = NULL;
    } else if (!w->gen) {
        if ((rc = kopt__curand_load(w->ctx, &w->cr)) != KOPT_OK) {
            w->fail_kind = "harness";
            return rc;
        }
        if (w->cr->curandCreateGenerator(&w->gen, CURAND_RNG_PSEUDO_PHILOX4_32_10) !=
                CURAND_STATUS_SUCCESS ||
            w->cr->curandSetStream(w->gen, (cudaStream_t)w->stream) != CURAND_STATUS_SUCCESS) {
            w->gen = NULL;
            w->fail_kind = "harness";
            return kopt_seterr(w->ctx, KOPT_E_CUDA, "cannot create the cuRAND generator");
        }
    }
    *curand_ms = kopt_now_ms() - t;
    t = kopt_now_ms();
    if (!w->sink)
        CU(cuMemAlloc(&w->sink, 4096), "allocate");
    if (!w->flush_buf) {
        int l2 = 0;
        size_t bytes;
        CU(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, w->dev), "device attribute");
        bytes = (size_t)(l2 > 0 ? l2 : 64 << 20) * 2;
        w->flush_n4 = bytes / 16;
        CU(cuMemAlloc(&w->flush_buf, bytes), "allocate the L2 flush buffer");
        CU(cuMemsetD8(w->flush_buf, 0, bytes), "clear the L2 flush buffer");
    }
    *buffers_ms = kopt_now_ms() - t;
    return KOPT_OK;
}

/* A worker started ahead (--early-device), its context made: the prebuilt runtime module of
 * its device's architecture, the device's description and device_setup, while the parent
 * prepares the job. Whatever
 * fails here is done again, and reported, when the job comes. */
static void early_setup(worker *w)
{
    double t0 = kopt_now_ms(), c, b;
    int major = 0, minor = 0;
    char arch[24];
    kopt_compiled *rt;

    if (w->cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                    w->dev) != CUDA_SUCCESS ||
        w->cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                    w->dev) != CUDA_SUCCESS)
        return;
    kopt_arch_for_cc(major, minor, arch);
    if ((rt = kopt__runtime_prebuilt(arch)) != NULL) {
        if (load_runtime(w, rt->binary_path) != KOPT_OK)
            w->rt = NULL;
        kopt_compiled_free(rt);
    }
    if (device_json(w, &w->dev_info) != KOPT_OK)
        w->dev_info = NULL;
    if (device_setup(w, 0, &c, &b) == KOPT_OK)
        w->early_setup_ms = kopt_now_ms() - t0;
}

static kopt_status setup(worker *w, json_t *job, json_t **dev)
{
    int ordinal = (int)json_integer_value(json_object_get(job, "device"));
    const char *rt = json_string_value(json_object_get(job, "runtime"));
    double t0 = kopt_now_ms(), t_ctx, t_mod, curand_ms = 0, buffers_ms = 0;
    kopt_status rc;

    if (w->pctx && w->ordinal != ordinal) {
        w->fail_kind = "harness";
        return kopt_seterr(w->ctx, KOPT_E_INVALID, "the worker made its context on device %d "
                           "before its job, which is for device %d", w->ordinal, ordinal);
    }
    if (!w->pctx && (rc = make_context(w, ordinal)) != KOPT_OK)
        return rc;
    t_ctx = w->early_ms > 0 ? w->early_ms : kopt_now_ms() - t0;
    /* asked early when it could be: answering waits while another process on the GPU makes
     * its context (measured: 130-240 ms back to back in kopt serve) */
    if (w->dev_info && w->ordinal == ordinal)
        *dev = json_deep_copy(w->dev_info);
    else if ((rc = device_json(w, dev)) != KOPT_OK)
        return rc;
    if (!rt) {
        w->fail_kind = "harness";
        return kopt_seterr(w->ctx, KOPT_E_INVALID, "job has no runtime module");
    }
    t_mod = kopt_now_ms();
    if ((rc = load_runtime(w, rt)) != KOPT_OK)
        return rc;
    t_mod = kopt_now_ms() - t_mod;
    if ((rc = device_setup(w, json_array_size(json_object_get(job, "wrap")) > 0, &curand_ms,
                           &buffers_ms)) != KOPT_OK)
        return rc;
    json_object_set_new(*dev, "context_ms", json_real(t_ctx));
    if (w->early_ms > 0)               /* made while the parent prepared the job */
        json_object_set_new(*dev, "context_early", json_true());
    if (w->early_setup_ms > 0)         /* and the module, cuRAND and buffers too */
        json_object_set_new(*dev, "setup_early_ms", json_real(w->early_setup_ms));
    json_object_set_new(*dev, "module_ms", json_real(t_mod));
    json_object_set_new(*dev, "curand_ms", json_real(curand_ms));
    json_object_set_new(*dev, "buffers_ms", json_real(buffers_ms));
    return KOPT_OK;
}

static kopt_status load_candidate(worker *w, json_t *job)
{
    const char *mode = json_string_value(json_object_get(job, "mode"));
    const char *bin = json_string_value(json_object_get(job, "binary"));

    if (!bin)
        return KOPT_OK;
    if (mode && strcmp(mode, "host") == 0) {
        w->so = dlopen(bin, RTLD_NOW | RTLD_LOCAL);
        if (!w->so) {
            w->fail_kind = "launch";
            return kopt_seterr(w->ctx, KOPT_E_ERROR, "cannot load %s: %s", bin, dlerror());
        }
        *(void **)&w->host_run = dlsym(w->so, "kopt_candidate_run");
        if (!w->host_run) {
            w->fail_kind = "launch";
            return kopt_seterr(w->ctx, KOPT_E_NOT_FOUND, "the shared object does not export "
                               "kopt_candidate_run (declare it extern \"C\")");
        }
        return KOPT_OK;
    }
    return load_module(w, bin, &w->mod);
}

/* Before the candidate is loaded: kernel records when its library use must be checked, and
 * the sandbox for host code (sandbox.c). */
static kopt_status guard_candidate(worker *w, json_t *job, json_t *dev)
{
    json_t *sb = json_object_get(job, "sandbox");
    kopt_status rc;

    w->no_poison = json_is_true(json_object_get(job, "no_poison"));
    if (json_is_true(json_object_get(job, "kernel_records"))) {
        /* CUPTI starts here, before the sandbox closes; the recording itself brackets the
         * candidate's first call only, so kopt's own kernels (input generation) stay out */
        char **names = NULL;
        int n = 0;
        if ((rc = kopt__cupti_activity_begin(w->ctx)) != KOPT_OK ||
            (rc = kopt__cupti_activity_end(w->ctx, &names, &n)) != KOPT_OK) {
            w->fail_kind = "harness";
            return kopt_adderr(w->ctx, rc, "cannot record which kernels ran, which "
                               "\"allow_libraries\": false needs");
        }
        for (int i = 0; i < n; i++)
            free(names[i]);
        free(names);
        w->records = 1;
    }
    if (sb) {
        json_t *report = json_object();
        const void *rec, *el;
        memcpy(&rec, &w->cu->cuEventRecord, sizeof(rec));
        memcpy(&el, &w->cu->cuEventElapsedTime, sizeof(el));
        kopt_sandbox_watch("cuEventRecord", rec);
        kopt_sandbox_watch("cuEventElapsedTime", el);
        kopt_sandbox_opts so;
        memset(&so, 0, sizeof(so));
        so.as_extra_mb = json_number_value(json_object_get(sb, "as_extra_mb"));
        so.flags = KOPT_SANDBOX_NO_WX;
        json_object_set_new(dev, "sandbox", report);
        if ((rc = kopt__sandbox_lockdown(w->ctx, &so, report)) != KOPT_OK) {
            w->fail_kind = "harness";
            return rc;
        }
        w->sandboxed = 1;
    }
    return KOPT_OK;
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
        if ((rc = setup_phase(w, ph, i == 0 ? kernels : NULL)) != KOPT_OK)
            goto done;
        wk_trace(w, "phase_setup", t0);
        wk_progress(w, (int)i, "setup");
        if ((rc = run_trials(w, (int)i, json_object_get(ph, "trials"), sums)) != KOPT_OK)
            goto done;
        if (json_is_object(tm)) {
            t0 = kopt_now_ms();
            if ((rc = run_timing(w, (int)i, tm, po)) != KOPT_OK)
                goto done;
            json_object_set_new(po, "timing_wall_ms", json_real(kopt_now_ms() - t0));
            wk_trace(w, "timing", t0);
            if (json_number_value(json_object_get(tm, "energy_s")) > 0 &&
                (rc = wk_measure_energy(w, json_number_value(json_object_get(tm, "energy_s")),
                                        median_sample(json_object_get(po, "samples_ms")),
                                        po)) != KOPT_OK)
                goto done;
        }
        t0 = kopt_now_ms();
        free_phase(w);
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

    if ((rc = setup(w, job, &dev)) != KOPT_OK)
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
    if ((rc = guard_candidate(w, job, dev)) != KOPT_OK || (rc = load_candidate(w, job)) != KOPT_OK) {
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
    if ((rc = load_candidate(w, job)) != KOPT_OK)
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
     * (src/cuda/compile_procs.c), not an evaluation */
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--compile-helper") == 0)
            return kopt__compile_helper_main();
    memset(&w, 0, sizeof(w));
    w.ctx = kopt_ctx_new();
    /* "--early-device=N": the parent starts this worker before its job is ready; the
     * context (the slow part of a start) is made meanwhile. A failure here is reported
     * when the job comes, by setup() trying again. */
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "--early-device=", 15) == 0) {
            double t0 = kopt_now_ms();
            early = 1;
            if (make_context(&w, atoi(argv[i] + 15)) == KOPT_OK) {
                w.early_ms = kopt_now_ms() - t0;
                early_setup(&w);
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
