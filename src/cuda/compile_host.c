/* Host-mode candidates: nvcc builds a shared object exporting kopt_candidate_run. */
#include "compile_int.h"
#include "kopt/proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *kopt__include_dir(void)
{
    static char dir[4096];
    const char *env = getenv("KOPT_INCLUDE_DIR");
    struct stat st;
    char *exe_dir;

    if (env && env[0])
        return env;
    /* build/kopt -> ../include, or bin/kopt -> ../include */
    exe_dir = kopt_path_dir(kopt_self_exe());
    snprintf(dir, sizeof(dir), "%s/../include", exe_dir);
    free(exe_dir);
    if (stat(dir, &st) == 0) {
        char probe[4200];
        snprintf(probe, sizeof(probe), "%s/kopt/candidate.h", dir);
        if (stat(probe, &st) == 0)
            return dir;
    }
#ifdef KOPT_SOURCE_INCLUDE
    return KOPT_SOURCE_INCLUDE;
#else
    return dir;
#endif
}

static const char *find_nvcc(void)
{
    static char path[1024];
    const char *home = getenv("CUDA_HOME");
    struct stat st;

    if (home) {
        snprintf(path, sizeof(path), "%s/bin/nvcc", home);
        if (stat(path, &st) == 0)
            return path;
    }
    if (stat("/usr/local/cuda/bin/nvcc", &st) == 0)
        return "/usr/local/cuda/bin/nvcc";
    return "nvcc";
}

kopt_status kopt__compile_host(kopt_compiled **out, kopt_ctx *ctx, const kopt_candidate *cand,
                               const kopt_compile_opts *o)
{
    kopt_compiled *c = calloc(1, sizeof(*c));
    const char *nvcc = find_nvcc();
    char *dir = o && o->cache_dir ? strdup(o->cache_dir) : kopt_cache_dir(), *sub = NULL;
    char *src_path = NULL, *log = NULL, gencode[96], incdir[4200];
    const char *argv[96];
    int argc = 0, code = 0;
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
    snprintf(gencode, sizeof(gencode), "-gencode=arch=compute_%s,code=%s", c->arch + 3, c->arch);
    snprintf(incdir, sizeof(incdir), "-I%s", kopt__include_dir());

    h = kopt_hash_new();
    kopt_hash_add_str(h, "kopt-host-v1");
    kopt_hash_add_str(h, cand->source);
    kopt_hash_add_str(h, c->arch);
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
    kopt_hash_hex(h, c->key);
    sub = kopt_path_join(dir, "compile");
    if ((rc = kopt_mkdirs(ctx, sub)) != KOPT_OK)
        goto cleanup;
    if (asprintf(&c->binary_path, "%s/%s.so", sub, c->key) < 0 ||
        asprintf(&src_path, "%s/%s.cu", sub, c->key) < 0) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "path");
        goto cleanup;
    }
    if (!(o && o->no_cache) && stat(c->binary_path, &st) == 0) {
        c->cache_hit = 1;
        c->log = strdup("");
        *out = c;
        c = NULL;
        goto cleanup;
    }
    /* compile the file itself (messages name it; relative includes work); a candidate that
     * exists only as text is written to the cache first */
    if (access(cand->path, R_OK) == 0) {
        free(src_path);
        src_path = strdup(cand->path);
    } else if ((rc = kopt_file_write(ctx, src_path, cand->source, strlen(cand->source))) !=
               KOPT_OK) {
        goto cleanup;
    }
    argv[argc++] = nvcc;
    argv[argc++] = "-shared";
    argv[argc++] = "-Xcompiler";
    argv[argc++] = "-fPIC";
    argv[argc++] = "-O3";
    argv[argc++] = "-lineinfo";
    argv[argc++] = "-std=c++17";
    argv[argc++] = gencode;
    argv[argc++] = incdir;
    {
        static char inc2[4200];
        snprintf(inc2, sizeof(inc2), "-I%s", cand->dir);
        argv[argc++] = inc2;
    }
    char defs[32][96];
    for (int i = 0; i < cand->params.n && i < 32; i++) {
        snprintf(defs[i], sizeof(defs[i]), "-D%s=%lld", cand->params.names[i],
                 (long long)cand->params.values[i]);
        argv[argc++] = defs[i];
    }
    for (int i = 0; i < cand->noptions && argc < 80; i++)
        argv[argc++] = cand->options[i];
    argv[argc++] = "-o";
    argv[argc++] = c->binary_path;
    argv[argc++] = src_path;
    for (int i = 0; i < cand->nlibraries && argc < 92; i++) {
        static char libs[8][64];
        snprintf(libs[i % 8], sizeof(libs[0]), "-l%s", cand->libraries[i]);
        argv[argc++] = libs[i % 8];
    }
    argv[argc] = NULL;
    t0 = kopt_now_ms();
    rc = kopt_proc_run(ctx, argv, 300, &code, &log);
    c->compile_ms = kopt_now_ms() - t0;
    c->log = log ? log : strdup("");
    log = NULL;
    if (rc != KOPT_OK)
        goto cleanup;
    if (code != 0) {
        rc = kopt_seterr(ctx, KOPT_E_COMPILE, "%s: nvcc failed (exit %d) for %s", cand->path, code,
                         c->arch);
        kopt_set_errdetail(ctx, c->log);
        unlink(c->binary_path);
        goto cleanup;
    }
    *out = c;
    c = NULL;
cleanup:
    kopt_compiled_free(c);
    free(dir);
    free(sub);
    free(src_path);
    free(log);
    return rc;
}
