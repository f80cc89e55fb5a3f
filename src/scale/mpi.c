/*
 * MPI loaded at run time (kopt/scale.h): libmpi.so.40 (OpenMPI 3 to 5) is opened with
 * dlopen when kopt finds itself started by mpirun or srun, never linked, so one kopt binary
 * runs on a laptop, a GPU node without MPI and a cluster alike (as src/mcp/http.c does with
 * libmicrohttpd). kopt needs a dozen point-to-point calls, declared here with OpenMPI's ABI:
 * handles are pointers to the library's predefined objects (ompi_mpi_comm_world,
 * ompi_mpi_byte, ompi_mpi_errors_return), MPI_Status starts with source, tag, error.
 * Another MPI (MPICH's libmpi.so.12) has another ABI and is refused by name.
 *
 * Calls are serialized by one mutex (MPI_THREAD_SERIALIZED): on rank 0 every remote rank
 * is a slot of the pool with a thread of its own.
 */
#include "scale_int.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

kopt__mpi_api kopt__mpi;

static int env_int(const char *name, int def)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : def;
}

int kopt_scale_mpi_launched(void)
{
    const char *no = getenv("KOPT_NO_MPI");

    if (no && *no && strcmp(no, "0") != 0)
        return 0;
    return env_int("OMPI_COMM_WORLD_SIZE", 0) > 1 || env_int("PMI_SIZE", 0) > 1 ||
           (getenv("PMIX_RANK") && env_int("SLURM_NTASKS", 0) > 1);
}

static kopt_status load(kopt_ctx *ctx)
{
    const char *lib = getenv("KOPT_MPI_LIB");

    if (kopt__mpi.so)
        return KOPT_OK;
    if (!lib || !*lib)
        lib = "libmpi.so.40";
    /* RTLD_GLOBAL: OpenMPI's own plug-ins (mca_*.so) resolve symbols of libmpi */
    if (!(kopt__mpi.so = dlopen(lib, RTLD_NOW | RTLD_GLOBAL)))
        return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "mpi: %s cannot be loaded (%s): install "
                           "OpenMPI (apt-get install openmpi-bin libopenmpi3), or set "
                           "KOPT_NO_MPI=1 to run without MPI", lib, dlerror());
#define F(name) (*(void **)&kopt__mpi.name = dlsym(kopt__mpi.so, "MPI_" #name)) == NULL
#define O(field, sym) (kopt__mpi.field = dlsym(kopt__mpi.so, sym)) == NULL
    if (F(Init_thread) || F(Finalize) || F(Comm_rank) || F(Comm_size) || F(Isend) ||
        F(Test) || F(Iprobe) || F(Recv) || F(Comm_set_errhandler) || F(Request_free) ||
        O(comm_world, "ompi_mpi_comm_world") || O(byte, "ompi_mpi_byte") ||
        O(errors_return, "ompi_mpi_errors_return")) {
        dlclose(kopt__mpi.so);
        memset(&kopt__mpi, 0, sizeof(kopt__mpi));
        return kopt_seterr(ctx, KOPT_E_UNSUPPORTED, "mpi: %s is not OpenMPI (kopt speaks "
                           "OpenMPI's ABI, libmpi.so.40)", lib);
    }
#undef F
#undef O
    return KOPT_OK;
}

kopt_status kopt_scale_mpi_open(kopt_scale_mpi **out, kopt_ctx *ctx)
{
    kopt_scale_mpi *m;
    int provided = 0, argc = 0;
    char **argv = NULL;
    kopt_status rc;

    *out = NULL;
    if ((rc = load(ctx)) != KOPT_OK)
        return rc;
    if (!(m = calloc(1, sizeof(*m))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "mpi");
    pthread_mutex_init(&m->mu, NULL);
    /* kopt's evaluation workers are forked processes: OpenMPI warns about fork once per
     * rank otherwise (its fork() is safe on the shared-memory and TCP transports) */
    setenv("OMPI_MCA_mpi_warn_on_fork", "0", 0);
    if (kopt__mpi.Init_thread(&argc, &argv, KOPT__MPI_THREAD_SERIALIZED, &provided) != 0) {
        free(m);
        return kopt_seterr(ctx, KOPT_E_ERROR, "mpi: MPI_Init_thread failed");
    }
    if (provided < KOPT__MPI_THREAD_SERIALIZED) {
        kopt__mpi.Finalize();
        free(m);
        return kopt_seterr(ctx, KOPT_E_UNSUPPORTED, "mpi: the library gives thread level %d; "
                           "kopt needs MPI_THREAD_SERIALIZED", provided);
    }
    /* a lost rank is an error code to handle, not an abort of the job */
    kopt__mpi.Comm_set_errhandler(kopt__mpi.comm_world, kopt__mpi.errors_return);
    kopt__mpi.Comm_rank(kopt__mpi.comm_world, &m->rank);
    kopt__mpi.Comm_size(kopt__mpi.comm_world, &m->size);
    m->local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK",
                            env_int("SLURM_LOCALID", env_int("MPI_LOCALRANKID", m->rank)));
    m->initialized = 1;
    *out = m;
    return KOPT_OK;
}

int kopt_scale_mpi_rank(const kopt_scale_mpi *m)
{
    return m ? m->rank : 0;
}

int kopt_scale_mpi_size(const kopt_scale_mpi *m)
{
    return m ? m->size : 1;
}

int kopt_scale_mpi_local_rank(const kopt_scale_mpi *m)
{
    return m ? m->local_rank : 0;
}

void kopt_scale_mpi_close(kopt_scale_mpi *m)
{
    if (!m)
        return;
    /* MPI_Finalize waits for every rank: with one lost it would wait for ever */
    if (m->initialized && !m->lost_any)
        kopt__mpi.Finalize();
    pthread_mutex_destroy(&m->mu);
    free(m);
}

double kopt_scale_lost_s(void)
{
    const char *v = getenv("KOPT_SCALE_LOST_S");
    double s = v && *v ? strtod(v, NULL) : 0;
    return s > 0 ? s : 60.0;
}
