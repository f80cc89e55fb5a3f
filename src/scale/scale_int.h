/* Internal: what the MPI files of src/scale share (the loaded library, the handle, the
 * messages ranks exchange). */
#ifndef KOPT_SCALE_INT_H
#define KOPT_SCALE_INT_H

#include "kopt/scale.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* OpenMPI's constants (mpi.h of OpenMPI 3 to 5) */
#define KOPT__MPI_THREAD_SERIALIZED 2
#define KOPT__MPI_ANY_TAG (-1)

/* OpenMPI's MPI_Status starts with these; the rest (cancelled, count) fits the padding. */
typedef struct kopt__mpi_status {
    int source, tag, error;
    int pad[13];
} kopt__mpi_status;

typedef struct kopt__mpi_api {
    void *so;
    int (*Init_thread)(int *, char ***, int, int *);
    int (*Finalize)(void);
    int (*Comm_rank)(void *, int *);
    int (*Comm_size)(void *, int *);
    int (*Isend)(const void *, int, void *, int, int, void *, void **);
    int (*Test)(void **, int *, kopt__mpi_status *);
    int (*Iprobe)(int, int, void *, int *, kopt__mpi_status *);
    int (*Recv)(void *, int, void *, int, int, void *, kopt__mpi_status *);
    int (*Comm_set_errhandler)(void *, void *);
    int (*Request_free)(void **);
    void *comm_world, *byte, *errors_return;   /* OpenMPI's predefined handles */
} kopt__mpi_api;
extern kopt__mpi_api kopt__mpi;

struct kopt_scale_mpi {
    int rank, size, local_rank;
    int initialized;
    int lost_any;             /* a rank was lost: do not finalize (it would wait for it) */
    pthread_mutex_t mu;       /* one MPI call at a time (MPI_THREAD_SERIALIZED) */
    unsigned char alive[KOPT_SCALE_MAX_SLOTS];   /* rank 0: ranks with a slot, not lost */
    unsigned char had_slot[KOPT_SCALE_MAX_SLOTS];/* rank 0: ranks that had a slot */
};

/* Messages (bytes; every rank runs the same kopt, so the structs are the same). */
enum { KOPT__TAG_HELLO = 7101, KOPT__TAG_JOB, KOPT__TAG_BEAT, KOPT__TAG_RESULT };
#define KOPT__MPI_MAGIC 0x6b6f7031u   /* "kop1": bump when a message changes */

typedef struct kopt__hello_msg {
    uint32_t magic, outcome_size;
    char spaces[72];          /* what every rank must be tuning (a hash) */
    kopt_tune_where where;    /* the rank's device */
} kopt__hello_msg;

typedef struct kopt__job_msg {
    int32_t stop;             /* 1: no more jobs; 2: and do not finalize (a rank was lost) */
    int32_t shape, want_findings, pad;
    uint64_t point;
} kopt__job_msg;

typedef struct kopt__result_msg {
    int32_t rc, pad;          /* rc: the rank's kopt_status */
    char message[512];
    kopt_tune_outcome o;
} kopt__result_msg;

/* Send `n` bytes to `dest` and wait until the send completes, at most `timeout_s` (the
 * caller must not hold m->mu). 0 when sent; -1 on an MPI error or the timeout. */
int kopt__mpi_send(kopt_scale_mpi *m, const void *buf, int n, int dest, int tag,
                   double timeout_s);
/* A message from `source` (any tag) if one is waiting: its tag, received into buf (at most
 * n bytes); 0 when none; -1 on an MPI error. */
int kopt__mpi_poll(kopt_scale_mpi *m, int source, void *buf, int n);

#endif
