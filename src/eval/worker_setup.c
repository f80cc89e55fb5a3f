/*
 * The worker's set-up, before any phase runs: the CUDA context (made early, before the job
 * comes, with --early-device), the device's description, kopt's runtime module and its
 * kernels, cuRAND and the flush buffers (device_setup), the candidate's module or host-mode
 * shared object, and the sandbox around host code (guard_candidate). worker.c's main loop
 * calls in (wk_make_context, wk_early_setup, wk_setup, wk_load_candidate,
 * wk_guard_candidate); the runs (worker_run.c) start once it returns.
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
kopt_status wk_make_context(worker *w, int ordinal)
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
    CU(cuDeviceGet(&w->dev, kopt__pinned_ordinal(ordinal)), "select device");
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
void wk_early_setup(worker *w)
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

kopt_status wk_setup(worker *w, json_t *job, json_t **dev)
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
    if (!w->pctx && (rc = wk_make_context(w, ordinal)) != KOPT_OK)
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

kopt_status wk_load_candidate(worker *w, json_t *job)
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
kopt_status wk_guard_candidate(worker *w, json_t *job, json_t *dev)
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
