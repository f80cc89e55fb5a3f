/*
 * Internal: the CUPTI adapter (src/profile/cupti.c), used by the worker process.
 *
 * libcupti.so.13 is loaded at run time (dlopen; $KOPT_CUPTI names the library or its
 * folder), so kopt builds and starts without it; every call returns KOPT_E_NO_DEVICE
 * when it cannot be loaded and KOPT_E_UNSUPPORTED when kopt was built without CUPTI's
 * headers. This header includes no CUPTI header (cupti_profiler_host.h needs a C++ shim
 * to compile as C; only cupti.c deals with that).
 *
 * Two features:
 *  - activity records: which kernels ran on the GPU (names as the driver reports them,
 *    mangled), in launch order, across all streams of the process;
 *  - the Range Profiler: one range per kernel launch (auto range, kernel replay, so CUPTI
 *    saves and restores device memory and replays each launch once per pass), each range
 *    evaluated to ncu-named metrics.
 * Plus the host-only pass count of a metric set on a chip, which needs no GPU.
 *
 * CUPTI allows one profiling client per process: both features fail with a clear message
 * (KOPT_E_UNSUPPORTED) under ncu/nsys/cuda-gdb, and the range profiler also fails without
 * permission to read the GPU's performance counters (root, or the driver option
 * NVreg_RestrictProfilingToAdminUsers=0).
 */
#ifndef KOPT_PROFILE_CUPTI_INT_H
#define KOPT_PROFILE_CUPTI_INT_H

#include "kopt/core.h"
#include "kopt/profile.h"

/* Start recording kernel activity (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) for the whole
 * process. One recording at a time: a second begin without an end is KOPT_E_INVALID. */
kopt_status kopt__cupti_activity_begin(kopt_ctx *ctx);
/* Synchronize the current context (if any), flush CUPTI's buffers and stop recording.
 * *names: the names (mangled, as the driver reports them) of the kernels that ran on the
 * GPU between begin and end, in launch order (CUPTI correlation id), across all streams;
 * *n their count. The caller frees each name and the array (free()). Records CUPTI had to
 * drop for lack of buffer space make the call fail (KOPT_E_ERROR) rather than return a
 * list with holes. */
kopt_status kopt__cupti_activity_end(kopt_ctx *ctx, char ***names, int *n);

/* Range profiler, one range per kernel launch (auto range, kernel replay). */
typedef struct kopt__cupti_rp kopt__cupti_rp;

/* Prepare to profile up to `max_launches` launches per begin/end bracket in `cu_context`
 * (a CUcontext, current on the calling thread) of device `device_ordinal`, collecting the
 * NULL-terminated `metrics` (ncu names). *passes (may be NULL): the replay passes each
 * launch will take. A bad metric name is KOPT_E_INVALID naming the metric and the chip.
 * Free with kopt__cupti_rp_close. */
kopt_status kopt__cupti_rp_open(kopt__cupti_rp **out, kopt_ctx *ctx, void *cu_context,
                                int device_ordinal, const char *const *metrics,
                                int max_launches, int *passes);
/* Call before the launches to profile (resets the counter data). */
kopt_status kopt__cupti_rp_begin(kopt__cupti_rp *rp, kopt_ctx *ctx);
/* Call after the launches: synchronizes the context, decodes the counters and appends one
 * kopt_kernel_profile per range (kernel = the range's name: with auto ranges on CUDA 13 /
 * driver 580 that is the launch's index, "0", "1", ..., so the caller names them; grid,
 * block and dyn_smem are left 0) with its metrics to `append_to`, and sets its `passes`,
 * adds the bracket's wall time to its `collect_ms` and sets `source` to "cupti" when it is
 * empty. Launches beyond max_launches are dropped by CUPTI without an error (seen on an
 * H200): size max_launches from the launch plan.
 * After a failed end (a launch that faulted, say) only _close is meaningful. */
kopt_status kopt__cupti_rp_end(kopt__cupti_rp *rp, kopt_ctx *ctx, kopt_profile *append_to);
/* Where the last begin..end bracket spent its time (ms): the launches with their replay
 * passes up to the synchronization, stop, decode, evaluation of the metric values. */
void kopt__cupti_rp_steps(const kopt__cupti_rp *rp, double out[4]);
/* Disable the profiler and free everything; NULL is fine. */
void kopt__cupti_rp_close(kopt__cupti_rp *rp);

/* Passes the NULL-terminated `metrics` need on `chip` ("GH100", "AD102", ...), from the
 * host API alone: works without a GPU or a driver. A metric the chip does not know is
 * KOPT_E_INVALID, and the message names it. */
kopt_status kopt__cupti_host_passes(kopt_ctx *ctx, const char *chip,
                                    const char *const *metrics, int *passes);

#endif
