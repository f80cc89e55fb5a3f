/* Probe: what it costs a worker to create its CUDA context and to pin a shared output
 * buffer of a given size (memfd, as kopt's evaluation uses), plain, prefaulted with
 * MAP_POPULATE, with transparent huge pages (MADV_HUGEPAGE) and with MFD_HUGETLB; and what
 * a 16-thread compare-sized read of the buffer costs. Prints one line per variant.
 * Build: cc -O2 -o pin_cost bench/probe/pin_cost.c -ldl -lpthread
 * Usage: pin_cost [MiB] (default 640, softmax's 5 output slots of 128 MiB). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

typedef int (*fn_init)(unsigned);
typedef int (*fn_dev)(int *, int);
typedef int (*fn_retain)(void **, int);
typedef int (*fn_set)(void *);
typedef int (*fn_reg)(void *, size_t, unsigned);
typedef int (*fn_unreg)(void *);

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static fn_reg reg;
static fn_unreg unreg;

static void variant(const char *name, size_t bytes, unsigned mfd_flags, int mflags, int advice)
{
    int fd = memfd_create("kopt-probe", mfd_flags);
    double t0 = now_ms(), t1, t2, t3;
    void *m;

    if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0) {
        printf("%-22s memfd/ftruncate failed\n", name);
        if (fd >= 0)
            close(fd);
        return;
    }
    m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | mflags, fd, 0);
    if (m == MAP_FAILED) {
        printf("%-22s mmap failed\n", name);
        close(fd);
        return;
    }
    if (advice)
        madvise(m, bytes, advice);
    t1 = now_ms();
    int rc = reg(m, bytes, 0);
    t2 = now_ms();
    volatile unsigned long s = 0;
    for (size_t i = 0; i < bytes; i += 4096)
        s += ((unsigned char *)m)[i];
    t3 = now_ms();
    printf("%-22s mmap %7.1f ms  register %7.1f ms (rc %d)  touch %6.1f ms\n", name, t1 - t0,
           t2 - t1, rc, t3 - t2);
    if (rc == 0)
        unreg(m);
    munmap(m, bytes);
    close(fd);
}

typedef struct { char *p; size_t n; } range;
static void *populate(void *a)
{
    range *r = a;
    if (madvise(r->p, r->n, MADV_POPULATE_WRITE) != 0)
        for (size_t i = 0; i < r->n; i += 4096)
            r->p[i] = 0;
    return NULL;
}

/* The buffer prefaulted by `threads` threads (as a parent could while workers start), then
 * registered (as a worker does). */
static void threaded(size_t bytes, int threads)
{
    int fd = memfd_create("kopt-probe", 0);
    pthread_t th[64];
    range r[64];
    char name[32];
    double t0, t1, t2;
    char *m;

    if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0)
        return;
    m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    t0 = now_ms();
    for (int i = 0; i < threads; i++) {
        r[i].p = m + bytes / threads * i;
        r[i].n = bytes / threads;
        pthread_create(&th[i], NULL, populate, &r[i]);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    t1 = now_ms();
    int rc = reg(m, bytes, 0);
    t2 = now_ms();
    snprintf(name, sizeof(name), "populate x%d", threads);
    printf("%-22s fault  %7.1f ms  register %7.1f ms (rc %d)\n", name, t1 - t0, t2 - t1, rc);
    if (rc == 0)
        unreg(m);
    munmap(m, bytes);
    close(fd);
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 640, bytes = mib << 20;
    void *cu = dlopen("libcuda.so.1", RTLD_NOW);
    double t0 = now_ms(), t1, t2;
    void *ctx;
    int dev;

    if (!cu) {
        printf("no libcuda: %s\n", dlerror());
        return 1;
    }
    fn_init init = (fn_init)dlsym(cu, "cuInit");
    fn_dev get = (fn_dev)dlsym(cu, "cuDeviceGet");
    fn_retain retain = (fn_retain)dlsym(cu, "cuDevicePrimaryCtxRetain");
    fn_set set = (fn_set)dlsym(cu, "cuCtxSetCurrent");
    reg = (fn_reg)dlsym(cu, "cuMemHostRegister_v2");
    unreg = (fn_unreg)dlsym(cu, "cuMemHostUnregister");
    if (init(0) != 0 || get(&dev, 0) != 0) {
        printf("cuInit failed\n");
        return 1;
    }
    t1 = now_ms();
    if (retain(&ctx, dev) != 0 || set(ctx) != 0) {
        printf("context failed\n");
        return 1;
    }
    t2 = now_ms();
    printf("dlopen+cuInit %.1f ms, primary context %.1f ms; buffer %zu MiB\n", t1 - t0, t2 - t1, mib);
    variant("plain", bytes, 0, 0, 0);
    variant("plain again", bytes, 0, 0, 0);
    variant("MAP_POPULATE", bytes, 0, MAP_POPULATE, 0);
    variant("MADV_HUGEPAGE", bytes, 0, 0, MADV_HUGEPAGE);
    variant("MADV_HUGEPAGE+POPULATE", bytes, 0, MAP_POPULATE, MADV_HUGEPAGE);
    variant("MFD_HUGETLB", bytes, MFD_HUGETLB, 0, 0);
    variant("plain 128 MiB", 128u << 20, 0, 0, 0);
    for (int t = 1; t <= 16; t *= 2)
        threaded(bytes, t);
    return 0;
}
