/*
 * kopt/candidate.h: the entry point of a host-mode candidate.
 *
 * A candidate with "mode": "host" in its front matter is compiled by nvcc into a shared
 * object that defines
 *
 *     extern "C" int kopt_candidate_run(const kopt_candidate_io *io);
 *
 * kopt calls it in a worker process with the problem's tensors already on the GPU
 * (inputs generated, outputs poisoned) and times the call with events on io->stream.
 * The candidate must do all its GPU work on io->stream (work on other streams escapes
 * the timed window and is rejected), may launch any number of kernels and call cuBLAS
 * when the problem allows libraries, must not synchronize the device needlessly, and
 * returns 0 on success or any other value on failure. The pointers are borrowed for the
 * duration of the call. This header depends on nothing but the C standard library.
 */
#ifndef KOPT_CANDIDATE_H
#define KOPT_CANDIDATE_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KOPT_CANDIDATE_ABI 1

typedef struct kopt_candidate_tensor {
    const char *name;
    void *data;              /* device pointer */
    int dtype;               /* 0 f32, 1 f16, 2 bf16, 3 f64, 4 i32, 5 i64 */
    int ndim;
    const int64_t *shape;
    int64_t count;           /* elements */
} kopt_candidate_tensor;

typedef struct kopt_candidate_io {
    int abi;                 /* KOPT_CANDIDATE_ABI */
    int ntensors;            /* problem tensors in file order, then scratch buffers */
    const kopt_candidate_tensor *tensors;
    int nsizes;
    const char *const *size_names;
    const int64_t *size_values;
    void *stream;            /* cudaStream_t / CUstream to launch on */
} kopt_candidate_io;

typedef int (*kopt_candidate_run_fn)(const kopt_candidate_io *io);

/* Device pointer of the tensor called `name`, or NULL. */
static inline void *kopt_tensor(const kopt_candidate_io *io, const char *name)
{
    for (int i = 0; i < io->ntensors; i++)
        if (strcmp(io->tensors[i].name, name) == 0)
            return io->tensors[i].data;
    return 0;
}

/* Value of the size called `name`, or -1. */
static inline int64_t kopt_size(const kopt_candidate_io *io, const char *name)
{
    for (int i = 0; i < io->nsizes; i++)
        if (strcmp(io->size_names[i], name) == 0)
            return io->size_values[i];
    return -1;
}

#ifdef __cplusplus
}
#endif
#endif
