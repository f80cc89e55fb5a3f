/* Host-mode candidates: nvcc builds a shared object exporting kopt_candidate_run. */
#include "compile_int.h"
#include "kopt/proc.h"
#include "core/core_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether <dir>/kopt/candidate.h exists. */
static int has_candidate_h(const char *dir, void *arg)
{
    char *probe = kopt_path_join(dir, "kopt/candidate.h");
    int ok = probe && access(probe, R_OK) == 0;

    (void)arg;
    free(probe);
    return ok;
}

/* The folder holding kopt/candidate.h, the first of: $KOPT_INCLUDE_DIR; the running
 * program's ../include (bin/kopt, or build/kopt in the source tree); libkopt.so's folder's
 * include folder (an installed or moved prefix); the install prefix compiled in; the
 * source tree compiled in (the last resort, returned even when missing). */
static char include_dir[4096];
static pthread_once_t include_once = PTHREAD_ONCE_INIT;

static const kopt__shipped_place include_places[] = {
    {KOPT__AT_EXE_DIR, "../include", NULL, 0},
    {KOPT__AT_LIB_DIR, KOPT_LIB_TO_INCLUDE, NULL, 0},
    {KOPT__AT_PATH, KOPT_INSTALL_INCLUDE, NULL, 0},
};

/* Found once for the process (host-mode compiles may run on several threads at once: a
 * buffer rewritten while another thread reads it gives torn paths; src/cuda/loader.c). */
static void find_include_dir(void)
{
    const kopt__shipped_spec spec = {
        NULL, NULL, NULL, NULL, has_candidate_h, NULL, include_places,
        (int)(sizeof(include_places) / sizeof(include_places[0]))};
    char *found = NULL;

    if (kopt__find_shipped(NULL, &spec, &found, NULL) != KOPT_OK ||
        strlen(found) >= sizeof(include_dir))
        snprintf(include_dir, sizeof(include_dir), "%s", KOPT_SOURCE_INCLUDE);
    else
        memcpy(include_dir, found, strlen(found) + 1);
    free(found);
}

const char *kopt__include_dir(void)
{
    const char *env = getenv("KOPT_INCLUDE_DIR");

    if (env && env[0])
        return env;
    pthread_once(&include_once, find_include_dir);
    return include_dir;
}

const char *kopt_compile_include_dir(void)
{
    return kopt__include_dir();
}

/* The shared object's SHA-256 sits beside it (<key>.so.sha256): a cached .so is used only
 * while it is still what nvcc built. `built` is nvcc's output, hashed before it is renamed
 * to `so`. */
static void record_binary(kopt_ctx *ctx, const char *built, const char *so)
{
    char sum[65], *side = NULL;
    if (kopt_file_sha256(ctx, built, sum) == KOPT_OK && asprintf(&side, "%s.sha256", so) >= 0)
        kopt_file_write(ctx, side, sum, 64);
    free(side);
}

static int binary_unchanged(kopt_ctx *ctx, const char *so)
{
    char sum[65], *side = NULL, *want = NULL;
    size_t len = 0;
    int ok = kopt_file_sha256(ctx, so, sum) == KOPT_OK && asprintf(&side, "%s.sha256", so) >= 0 &&
             kopt_file_read(ctx, side, &want, &len) == KOPT_OK && len == 64 &&
             memcmp(want, sum, 64) == 0;
    if (!ok)
        kopt_log(ctx, KOPT_LOG_WARN, "%s is missing or changed since it was built; rebuilding",
                 so);
    free(side);
    free(want);
    return ok;
}

/* A readable name for a mangled kernel: its nested name ("ns::kernel"), or the symbol. */
static void short_name(const char *sym, char *out, size_t n)
{
    const char *p = sym + 2;
    size_t len = 0;

    snprintf(out, n, "%.*s", (int)(n - 1), sym);
    if (strncmp(sym, "_Z", 2) != 0)
        return;
    out[0] = '\0';
    if (*p == 'N')
        p++;
    while (*p >= '1' && *p <= '9') {
        char *end;
        long l = strtol(p, &end, 10);
        if ((size_t)l > strlen(end) || len + (size_t)l + 3 >= n)
            break;
        len += (size_t)snprintf(out + len, n - len, "%s%.*s", len ? "::" : "", (int)l, end);
        p = end + l;
    }
    if (!len)
        snprintf(out, n, "%.*s", (int)(n - 1), sym);
}

/* Host mode has no launch plan: every entry function ptxas reported (-Xptxas=-v) is a
 * kernel, with its registers, shared memory and spills. */
static void host_kernels(kopt_compiled *c)
{
    const char *p = c->log;
    int n = 0;

    while (p && (p = strstr(p, "Compiling entry function '")))
        n++, p++;
    if (!n || !(c->kernels = calloc((size_t)n, sizeof(*c->kernels))))
        return;
    for (p = c->log; (p = strstr(p, "Compiling entry function '"));) {
        const char *q = p + 26, *e = strchr(q, '\'');
        kopt_kernel_info *k = &c->kernels[c->nkernels];
        int dup = 0;
        p = q;
        if (!e || (size_t)(e - q) >= sizeof(k->lowered))
            continue;
        snprintf(k->lowered, sizeof(k->lowered), "%.*s", (int)(e - q), q);
        for (int i = 0; i < c->nkernels; i++)
            dup |= strcmp(c->kernels[i].lowered, k->lowered) == 0;
        if (dup) {
            memset(k, 0, sizeof(*k));
            continue;
        }
        short_name(k->lowered, k->name, sizeof(k->name));
        c->nkernels++;
    }
    kopt_parse_ptxas_report(c->log, c->kernels, c->nkernels);
}

static char nvcc_path[1024];
static pthread_once_t nvcc_once = PTHREAD_ONCE_INIT;

static void find_nvcc_once(void)
{
    const char *home = getenv("CUDA_HOME");
    struct stat st;

    if (home) {
        snprintf(nvcc_path, sizeof(nvcc_path), "%s/bin/nvcc", home);
        if (stat(nvcc_path, &st) == 0)
            return;
    }
    snprintf(nvcc_path, sizeof(nvcc_path), "%s",
             stat("/usr/local/cuda/bin/nvcc", &st) == 0 ? "/usr/local/cuda/bin/nvcc" : "nvcc");
}

/* Found once for the process, as kopt__include_dir. */
static const char *find_nvcc(void)
{
    pthread_once(&nvcc_once, find_nvcc_once);
    return nvcc_path;
}

/* NVIDIA's pip nvcc (nvidia-cuda-nvcc) lives in site-packages/nvidia/cu13/bin, and the pip
 * packages put cudart's static library in ../lib, where a toolkit has ../lib64, the one
 * folder nvcc's profile names: the link of a host-mode candidate fails with "cannot find
 * -lcudart_static". For such a layout this returns "-L<bin>/../lib" (malloc'd); NULL for
 * every toolkit (../lib64 exists) and when nvcc is not found. A bare name is looked up as
 * kopt_find_program does ($PATH first, as the spawn will). */
char *kopt__nvcc_pip_libs(const char *nvcc)
{
    char *found = NULL, *bin, *lib = NULL, *probe = NULL, *arg = NULL;
    const char *dir;
    struct stat st;

    if (!nvcc || !*nvcc)
        return NULL;
    found = strchr(nvcc, '/') ? strdup(nvcc) : kopt_find_program(NULL, nvcc);
    if (!found)
        return NULL;
    bin = strrchr(found, '/');
    *bin = '\0';
    dir = *found ? found : "/";
    if (asprintf(&lib, "%s/../lib64", dir) < 0)     /* (asprintf leaves it undefined) */
        lib = NULL;
    else if (asprintf(&probe, "%s/../lib/libcudart_static.a", dir) < 0)
        probe = NULL;
    if (lib && probe && stat(lib, &st) != 0 && stat(probe, &st) == 0 &&
        asprintf(&arg, "-L%s/../lib", dir) < 0)
        arg = NULL;
    free(found);
    free(lib);
    free(probe);
    return arg;
}

kopt_status kopt__compile_host(kopt_compiled **out, kopt_ctx *ctx, const kopt_candidate *cand,
                               const kopt_compile_opts *o, const kopt_cutlass *cl)
{
    kopt_compiled *c = calloc(1, sizeof(*c));
    const char *nvcc = find_nvcc();
    char *dir = o && o->cache_dir ? strdup(o->cache_dir) : kopt_cache_dir(), *sub = NULL;
    char *src_path = NULL, *tmp_path = NULL, *log = NULL, *kopt_headers = NULL;
    char **argv = NULL;
    char key[sizeof(c->key)] = "";      /* c->key, for the release after c is gone */
    int argc = 0, code = 0, claimed = 0, lockfd = -1;
    kopt_status rc = KOPT_OK;
    struct stat st;
    kopt_hash *h;
    double t0;

    *out = NULL;
    if (!c || !dir)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "compile");
    c->host_mode = 1;
    snprintf(c->arch, sizeof(c->arch), "%s", o && o->arch ? o->arch : "sm_90a");
    snprintf(c->compiler, sizeof(c->compiler), "nvcc");

    h = kopt_hash_new();
    kopt_hash_add_str(h, "kopt-host-v2");   /* v2: -Xptxas=-v, kernels from its report */
    kopt_hash_add_str(h, cand->source);
    kopt_hash_add_str(h, c->arch);
    if (cl) {
        kopt_hash_add_str(h, "cutlass");
        kopt_hash_add_str(h, cl->version);
    }
    if (stat(nvcc, &st) == 0) {
        char v[64];
        snprintf(v, sizeof(v), "%lld:%lld", (long long)st.st_size, (long long)st.st_mtime);
        kopt_hash_add_str(h, v);
    }
    for (int i = 0; i < cand->noptions; i++)
        kopt_hash_add_str(h, cand->options[i]);
    for (int i = 0; i < cand->nlibraries; i++)
        kopt_hash_add_str(h, cand->libraries[i]);
    for (int i = 0; i < cand->params.n; i++) {
        kopt_hash_add_str(h, cand->params.names[i]);
        kopt_hash_add(h, &cand->params.values[i], sizeof(int64_t));
    }
    kopt__hash_headers(h, cand->dir);
    kopt_headers = kopt_path_join(kopt__include_dir(), "kopt");
    kopt_log(ctx, KOPT_LOG_INFO, "host mode: kopt headers from %s", kopt_headers);
    kopt__hash_headers(h, kopt_headers);          /* candidate.h is part of the contract */
    for (int i = 0; i < cand->nincludes; i++) {
        char *inc = kopt_path_join(cand->dir, cand->includes[i]);
        kopt__hash_headers(h, inc);
        kopt_hash_add_str(h, cand->includes[i]);
        free(inc);
    }
    kopt_hash_hex(h, c->key);
    memcpy(key, c->key, sizeof(key));
    sub = kopt_path_join(dir, "compile");
    if ((rc = kopt_mkdirs(ctx, sub)) != KOPT_OK)
        goto cleanup;
    if (asprintf(&c->binary_path, "%s/%s.so", sub, c->key) < 0 ||
        asprintf(&tmp_path, "%s.tmp.%ld.%lu", c->binary_path, (long)getpid(),
                 (unsigned long)pthread_self()) < 0 ||
        asprintf(&src_path, "%s/%s.cu", sub, c->key) < 0) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "path");
        goto cleanup;
    }
    /* from the cache; one being compiled by another thread is waited for, then one being
     * compiled by another process (kopt__compile_lock) */
    while (!(o && o->no_cache)) {
        if (stat(c->binary_path, &st) == 0 && binary_unchanged(ctx, c->binary_path))
            goto hit;
        if ((claimed = kopt__compile_claim(c->key)) != 0)
            break;
    }
    if (!(o && o->no_cache) && (lockfd = kopt__compile_lock(c->binary_path)) >= 0 &&
        stat(c->binary_path, &st) == 0 && binary_unchanged(ctx, c->binary_path))
        goto hit;                      /* another process compiled it while we waited */
    /* compile the file itself (messages name it; relative includes work); a candidate that
     * exists only as text is written to the cache first */
    if (access(cand->path, R_OK) == 0) {
        free(src_path);
        src_path = strdup(cand->path);
    } else if ((rc = kopt_file_write(ctx, src_path, cand->source, strlen(cand->source))) !=
               KOPT_OK) {
        goto cleanup;
    }
    /* every argument is an owned string: as many params, options, include folders and
     * libraries as the front matter gives */
    argv = calloc((size_t)(cand->params.n + cand->noptions + cand->nincludes +
                           cand->nlibraries) + 20, sizeof(char *));
    if (!argv) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "nvcc arguments");
        goto cleanup;
    }
    {
        static const char *const fixed[] = {"-shared", "-Xcompiler", "-fPIC", "-O3",
                                            "-lineinfo", "-std=c++17", "-Xptxas=-v"};
        int ok = (argv[argc++] = strdup(nvcc)) != NULL;
        for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
            ok &= (argv[argc++] = strdup(fixed[i])) != NULL;
        ok &= asprintf(&argv[argc++], "-gencode=arch=compute_%s,code=%s", c->arch + 3,
                       c->arch) >= 0;
        ok &= asprintf(&argv[argc++], "-I%s", kopt__include_dir()) >= 0;
        ok &= asprintf(&argv[argc++], "-I%s", cand->dir) >= 0;
        if (cl) {   /* CuTe's constexpr helpers are called from device code */
            ok &= asprintf(&argv[argc++], "-I%s", cl->include_dir) >= 0;
            ok &= (argv[argc++] = strdup("--expt-relaxed-constexpr")) != NULL;
        }
        for (int i = 0; i < cand->nincludes; i++) {
            char *inc = kopt_path_join(cand->dir, cand->includes[i]);
            ok &= inc && asprintf(&argv[argc++], "-I%s", inc) >= 0;
            free(inc);
        }
        for (int i = 0; i < cand->params.n; i++)
            ok &= asprintf(&argv[argc++], "-D%s=%lld", cand->params.names[i],
                           (long long)cand->params.values[i]) >= 0;
        for (int i = 0; i < cand->noptions; i++)
            ok &= (argv[argc++] = strdup(cand->options[i])) != NULL;
        ok &= (argv[argc++] = strdup("-o")) != NULL;
        ok &= (argv[argc++] = strdup(tmp_path)) != NULL;
        ok &= (argv[argc++] = strdup(src_path)) != NULL;
        if ((argv[argc] = kopt__nvcc_pip_libs(nvcc)) != NULL)
            argc++;
        for (int i = 0; i < cand->nlibraries; i++)
            ok &= asprintf(&argv[argc++], "-l%s", cand->libraries[i]) >= 0;
        if (!ok) {
            rc = kopt_seterr(ctx, KOPT_E_NOMEM, "nvcc arguments");
            goto cleanup;
        }
    }
    t0 = kopt_now_ms();
    rc = kopt_proc_run(ctx, (const char *const *)argv, 300, &code, &log);
    c->compile_ms = kopt_now_ms() - t0;
    c->log = log ? log : strdup("");
    log = NULL;
    if (rc != KOPT_OK)
        goto cleanup;
    if (code != 0) {
        rc = kopt_seterr(ctx, KOPT_E_COMPILE, "%s: nvcc failed (exit %d) for %s", cand->path, code,
                         c->arch);
        kopt_set_errdetail(ctx, c->log);
        unlink(tmp_path);
        goto cleanup;
    }
    /* published whole: its log and checksum first, then the .so renamed into place, so a
     * process that finds the .so finds them too */
    {
        char *side = NULL;
        if (asprintf(&side, "%s.log", c->binary_path) >= 0)
            kopt_file_write(ctx, side, c->log, strlen(c->log));
        free(side);
    }
    record_binary(ctx, tmp_path, c->binary_path);
    if (rename(tmp_path, c->binary_path) != 0) {
        rc = kopt_seterr(ctx, KOPT_E_IO, "%s: %s", c->binary_path, strerror(errno));
        unlink(tmp_path);
        goto cleanup;
    }
    host_kernels(c);
    *out = c;
    c = NULL;
    goto cleanup;
hit:
    {
        char *side = NULL;
        size_t len = 0;
        c->cache_hit = 1;
        /* the log kept beside the .so gives the kernels' resources again */
        if (asprintf(&side, "%s.log", c->binary_path) < 0 ||
            kopt_file_read(ctx, side, &c->log, &len) != KOPT_OK)
            c->log = strdup("");
        free(side);
        host_kernels(c);
        *out = c;
        c = NULL;
    }
cleanup:
    if (lockfd >= 0)
        close(lockfd);                 /* releases the key's lock */
    if (claimed)
        kopt__compile_release(key);
    kopt__strv_free_n(argc, argv);
    kopt_compiled_free(c);
    free(dir);
    free(sub);
    free(src_path);
    free(tmp_path);
    free(kopt_headers);
    free(log);
    return rc;
}
