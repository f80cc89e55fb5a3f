/*
 * kopt/clock.h: the timer of kopt's PyTorch worker (libexec/kopt_torch_timing.py), in C so
 * that no Python object a candidate can replace takes part in a timed sample. The worker
 * binds these functions through ctypes before it imports the candidate; the events are
 * recorded, read and kept here, and each phase's samples reach the parent on the worker's
 * event pipe from this code (kopt_clock_report), not from the worker's Python. Also the
 * kernel census: which kernels ran during one call of a subject (CUPTI activity records).
 *
 * On a CUDA device a bracket is two driver events on the stream the caller names, in the
 * CUDA context current on the calling thread (the one PyTorch made). Without one
 * (stream_or_cpu == NULL at creation) a bracket is the monotonic wall clock.
 *
 * Ownership: kopt_clock_new's clock belongs to the caller (kopt_clock_free; NULL is fine).
 * Every function returns 0 or a negative code; kopt_clock_error() says what failed last.
 */
#ifndef KOPT_CLOCK_H
#define KOPT_CLOCK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kopt_clock kopt_clock;

enum {
    KOPT_CLOCK_WARMUP = 0,    /* a sample read and returned, not kept */
    KOPT_CLOCK_OVERHEAD = 1,  /* the bracket around a one-element kernel */
    KOPT_CLOCK_TIMED = 2      /* a timed run of the subject */
};

/* A clock of `nmarks` brackets (reused round-robin by the caller). `cuda`: 1 for CUDA events
 * in the current context, 0 for the wall clock. NULL on failure (kopt_clock_error()). */
kopt_clock *kopt_clock_new(int nmarks, int cuda);
/* Open bracket `mark` on `stream` (a CUstream; NULL the legacy stream). */
int kopt_clock_begin(kopt_clock *c, int mark, void *stream);
/* Close it. Returns 1 when the bracket's start had already completed on the GPU (the host
 * was slower than the GPU: the run was exposed to the host's speed), 0 when not. */
int kopt_clock_end(kopt_clock *c, int mark, void *stream);
/* After the stream is synchronized: the bracket's milliseconds into *ms, kept in `series`
 * (KOPT_CLOCK_*) for the report. */
int kopt_clock_read(kopt_clock *c, int mark, int series, double *ms);
/* Write {"event":"clock","phase":P,"samples_ms":[...],"overhead_ms":[...]} on file
 * descriptor `fd` (the worker's event pipe) and forget the kept samples. */
int kopt_clock_report(kopt_clock *c, int fd, int phase);
void kopt_clock_free(kopt_clock *c);

/* The kernel census: start recording kernel activity for the whole process ... */
int kopt_clock_census_begin(void);
/* ... and stop: the names (mangled, as the driver reports them) of the kernels that ran
 * since, as a JSON array of strings in `out` (cap bytes; names beyond it are counted in a
 * last element "+N more"). */
int kopt_clock_census_end(char *out, size_t cap);

/* What the last failing call said (a static string; "" when none). */
const char *kopt_clock_error(void);

#ifdef __cplusplus
}
#endif
#endif
