/* src/cuda: the CUDA libraries loaded at run time (loader.c), compiling candidates and
 * kopt's own kernels. Calls go one way: runtime_kernels.c -> compile.c -> compile_host.c,
 * compile_procs.c -> compiled.c (what they share), and loader.c at the bottom.
 * This file: compile candidates, NVRTC (device mode) or nvcc (host mode, compile_host.c),
 * with a content-addressed on-disk cache and the ptxas resource report parsed per kernel. */
#include "kopt/compile.h"
#include "cuda_int.h"
#include "compile_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void kopt_arch_for_cc(int major, int minor, char out[24])
{
    /* Hopper's wgmma/setmaxnreg need the arch-specific target */
    snprintf(out, 24, "sm_%d%d%s", major, minor, major == 9 && minor == 0 ? "a" : "");
}

/* Quote the source lines an NVRTC log points at ("name(12): error: ..."). */
static char *annotate_log(const char *log, const char *source, const char *file)
{
    kopt_buf out = KOPT_BUF_INIT;
    const char *line = log;
    char pat[600];

    snprintf(pat, sizeof(pat), "%s(", file);
    while (line && *line) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) + 1 : strlen(line);
        int ln = 0;
        kopt_buf_append(&out, line, len);
        if (!eol)
            kopt_buf_append(&out, "\n", 1);
        if (strncmp(line, pat, strlen(pat)) == 0 && sscanf(line + strlen(pat), "%d)", &ln) == 1 &&
            (strstr(line, "error") || strstr(line, "warning")) && ln > 0) {
            const char *s = source;
            for (int i = 1; i < ln && s; i++)
                s = (s = strchr(s, '\n')) ? s + 1 : NULL;
            if (s) {
                const char *e = strchr(s, '\n');
                kopt_buf_printf(&out, "  %5d | %.*s\n", ln, (int)(e ? e - s : (long)strlen(s)), s);
            }
        }
        line = eol ? eol + 1 : NULL;
    }
    return kopt_buf_detach(&out);
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* ---- cache ----------------------------------------------------------------------------- */

static kopt_status cache_paths(kopt_ctx *ctx, const kopt_compile_opts *o, const char *key,
                               const char *ext, char **bin, char **meta)
{
    char *dir = o && o->cache_dir ? strdup(o->cache_dir) : kopt_cache_dir();
    char *sub = NULL;
    kopt_status rc;

    if (!dir)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "cache dir");
    sub = kopt_path_join(dir, "compile");
    free(dir);
    if ((rc = kopt_mkdirs(ctx, sub)) != KOPT_OK) {
        free(sub);
        return kopt_adderr(ctx, rc, "compile cache");
    }
    if (asprintf(bin, "%s/%s.%s", sub, key, ext) < 0 || asprintf(meta, "%s/%s.json", sub, key) < 0)
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "path");
    free(sub);
    return rc;
}

static kopt_status cache_load(kopt_ctx *ctx, kopt_compiled *c, const char *meta)
{
    json_t *root = json_load_file(meta, 0, NULL), *ks, *k;
    size_t i;
    struct stat st;

    char now[65];

    if (!root || stat(c->binary_path, &st) != 0) {
        json_decref(root);
        return KOPT_E_NOT_FOUND;
    }
    /* a cached binary is used only if it is still what was built: anything that wrote to
     * the cache since (a host-mode candidate, a disk error) means a rebuild */
    if (kopt_file_sha256(ctx, c->binary_path, now) != KOPT_OK ||
        strcmp(now, json_string_value(json_object_get(root, "binary_sha256")) ?: "") != 0) {
        kopt_log(ctx, KOPT_LOG_WARN, "%s changed since it was built; rebuilding",
                 c->binary_path);
        json_decref(root);
        return KOPT_E_NOT_FOUND;
    }
    ks = json_object_get(root, "kernels");
    c->log = strdup(json_string_value(json_object_get(root, "log")) ?: "");
    snprintf(c->compiler, sizeof(c->compiler), "%s",
             json_string_value(json_object_get(root, "compiler")) ?: "");
    c->nkernels = (int)json_array_size(ks);
    c->kernels = calloc((size_t)c->nkernels + 1, sizeof(*c->kernels));
    json_array_foreach(ks, i, k) {
        kopt_kernel_info *ki = &c->kernels[i];
        snprintf(ki->name, sizeof(ki->name), "%s", json_string_value(json_object_get(k, "name")) ?: "");
        snprintf(ki->lowered, sizeof(ki->lowered), "%s",
                 json_string_value(json_object_get(k, "lowered")) ?: "");
        ki->registers = (int)json_integer_value(json_object_get(k, "registers"));
        ki->static_smem = (int)json_integer_value(json_object_get(k, "static_smem"));
        ki->stack_frame = (int)json_integer_value(json_object_get(k, "stack_frame"));
        ki->spill_stores = (int)json_integer_value(json_object_get(k, "spill_stores"));
        ki->spill_loads = (int)json_integer_value(json_object_get(k, "spill_loads"));
        ki->barriers = (int)json_integer_value(json_object_get(k, "barriers"));
    }
    json_decref(root);
    c->cache_hit = 1;
    return KOPT_OK;
}

static void cache_store(kopt_ctx *ctx, const kopt_compiled *c, const char *meta)
{
    json_t *root = json_object(), *ks = json_array();
    char *text;

    for (int i = 0; i < c->nkernels; i++) {
        const kopt_kernel_info *k = &c->kernels[i];
        json_array_append_new(ks, json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i}",
                                            "name", k->name, "lowered", k->lowered,
                                            "registers", k->registers, "static_smem",
                                            k->static_smem, "stack_frame", k->stack_frame,
                                            "spill_stores", k->spill_stores, "spill_loads",
                                            k->spill_loads, "barriers", k->barriers));
    }
    json_object_set_new(root, "kernels", ks);
    json_object_set_new(root, "log", json_string(c->log ? c->log : ""));
    json_object_set_new(root, "compiler", json_string(c->compiler));
    json_object_set_new(root, "arch", json_string(c->arch));
    {
        char sum[65];
        if (kopt_file_sha256(ctx, c->binary_path, sum) == KOPT_OK)
            json_object_set_new(root, "binary_sha256", json_string(sum));
    }
    text = json_dumps(root, JSON_INDENT(1));
    if (text && kopt_file_write(ctx, meta, text, strlen(text)) != KOPT_OK)
        kopt_log(ctx, KOPT_LOG_WARN, "compile cache not written: %s", kopt_errmsg(ctx));
    free(text);
    json_decref(root);
}

/* ---- NVRTC ------------------------------------------------------------------------------ */

kopt_status kopt__compile_nvrtc(kopt_compiled **out, kopt_ctx *ctx, const kopt__nvrtc_job *job,
                                const kopt_compile_opts *o)
{
    const kopt_nvrtc_api *nv = NULL;
    kopt_compiled *c = NULL;
    kopt__nvrtc_req q;
    kopt__nvrtc_out res;
    char **argv = NULL, *meta = NULL;
    char key[sizeof(c->key)] = "";     /* c->key, for the release after c is gone */
    const char *cubin = NULL;
    int argc = 0, major = 0, minor = 0, built = 0, claimed = 0, lockfd = -1;
    size_t size = 0;
    kopt_status rc;
    kopt_hash *h;
    double t0;
    const char *inc;

    *out = NULL;
    if ((rc = kopt__nvrtc_load(ctx, &nv)) != KOPT_OK)
        return kopt_adderr(ctx, rc, "NVRTC");
    inc = kopt__cuda_include_dir();   /* after the load: pip's headers lie beside its NVRTC */
    nv->nvrtcVersion(&major, &minor);
    c = calloc(1, sizeof(*c));
    argv = calloc((size_t)job->noptions + (size_t)job->nincludes + (size_t)job->params->n + 12,
                  sizeof(char *));
    if (!c || !argv) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "compile");
        goto cleanup;
    }
    snprintf(c->arch, sizeof(c->arch), "%s", o && o->arch ? o->arch : "sm_90a");
    snprintf(c->compiler, sizeof(c->compiler), "nvrtc %d.%d", major, minor);
    if (asprintf(&argv[argc++], "--gpu-architecture=%s", c->arch) < 0)
        goto nomem;
    argv[argc++] = strdup("-std=c++17");
    argv[argc++] = strdup("-lineinfo");
    argv[argc++] = strdup("--ptxas-options=-v");
    if (inc && asprintf(&argv[argc++], "-I%s", inc) < 0)
        goto nomem;
    for (int i = 0; i < job->params->n; i++)
        if (asprintf(&argv[argc++], "-D%s=%lld", job->params->names[i],
                     (long long)job->params->values[i]) < 0)
            goto nomem;
    for (int i = 0; i < job->nincludes; i++) {
        char *p = kopt_path_join(job->dir, job->includes[i]);
        if (!p || asprintf(&argv[argc++], "-I%s", p) < 0) {
            free(p);
            goto nomem;
        }
        free(p);
    }
    if (job->dir && asprintf(&argv[argc++], "-I%s", job->dir) < 0)
        goto nomem;
    if (job->cutlass_include) {
        /* CuTe includes <cuda/std/...>, which CUDA 13 keeps in include/cccl (nvcc adds it,
         * NVRTC does not), and leaves constexpr helpers unannotated (host-only in NVRTC
         * unless -default-device): docs/cute.md */
        char *cccl = inc ? kopt_path_join(inc, "cccl") : NULL;
        struct stat cst;
        int ok = asprintf(&argv[argc++], "-I%s", job->cutlass_include) >= 0;
        if (ok && cccl && stat(cccl, &cst) == 0)
            ok = asprintf(&argv[argc++], "-I%s", cccl) >= 0;
        free(cccl);
        if (!ok || !(argv[argc++] = strdup("-default-device")))
            goto nomem;
    }
    for (int i = 0; i < job->noptions; i++)
        argv[argc++] = strdup(job->options[i]);

    /* key: everything that changes the binary */
    h = kopt_hash_new();
    kopt_hash_add_str(h, "kopt-compile-v2");   /* v2: resources with the driver's cache off */
    kopt_hash_add_str(h, c->compiler);
    kopt_hash_add_str(h, job->source);
    for (int i = 0; i < argc; i++)
        kopt_hash_add_str(h, argv[i]);
    for (int i = 0; i < job->nnames; i++)
        kopt_hash_add_str(h, job->names[i]);
    if (job->cutlass_version)
        kopt_hash_add_str(h, job->cutlass_version);
    kopt__hash_headers(h, job->dir);
    for (int i = 0; i < job->nincludes; i++) {
        char *p = kopt_path_join(job->dir, job->includes[i]);
        kopt__hash_headers(h, p);
        free(p);
    }
    kopt_hash_hex(h, c->key);
    if ((rc = cache_paths(ctx, o, c->key, "cubin", &c->binary_path, &meta)) != KOPT_OK)
        goto cleanup;
    memcpy(key, c->key, sizeof(key));
    /* from the cache; one being compiled by another thread is waited for, then one being
     * compiled by another process */
    while (!(o && o->no_cache)) {
        if (cache_load(ctx, c, meta) == KOPT_OK) {
            *out = c;
            c = NULL;
            goto cleanup;
        }
        if ((claimed = kopt__compile_claim(key)) != 0)
            break;
    }
    if (!(o && o->no_cache) && (lockfd = kopt__compile_lock(c->binary_path)) >= 0 &&
        cache_load(ctx, c, meta) == KOPT_OK) {
        *out = c;                      /* another process compiled it while we waited */
        c = NULL;
        goto cleanup;
    }

    t0 = kopt_now_ms();
    q.source = job->source;
    q.name = base_name(job->path);
    q.argc = argc;
    q.argv = argv;
    q.names = job->names;
    q.nnames = job->nnames;
    if ((rc = kopt__nvrtc_build(ctx, nv, &q, &res)) != KOPT_OK) {
        rc = kopt_seterr(ctx, rc, "%s: compile", job->path);
        goto cleanup;
    }
    built = 1;
    if (res.result < 0) {
        rc = kopt_seterr(ctx, KOPT_E_ERROR, "%s", res.error ? res.error : "NVRTC failed");
        goto cleanup;
    }
    c->log = annotate_log(res.log ? res.log : "", job->source, base_name(job->path));
    if (res.result != NVRTC_SUCCESS) {
        rc = kopt_seterr(ctx, KOPT_E_COMPILE, "%s: compilation failed (%s) for %s", job->path,
                         res.error ? res.error : "?", c->arch);
        kopt_set_errdetail(ctx, c->log);
        goto cleanup;
    }
    c->kernels = calloc((size_t)job->nnames + 1, sizeof(*c->kernels));
    for (int i = 0; i < job->nnames; i++) {
        kopt_kernel_info *k = &c->kernels[c->nkernels];
        if (!res.lowered[i]) {
            rc = kopt_seterr(ctx, KOPT_E_COMPILE, "%s: no kernel named '%s' (the launch plan "
                             "names it; is it __global__ and spelled the same?)", job->path,
                             job->names[i]);
            kopt_set_errdetail(ctx, c->log);
            goto cleanup;
        }
        snprintf(k->name, sizeof(k->name), "%s", job->names[i]);
        snprintf(k->lowered, sizeof(k->lowered), "%s", res.lowered[i]);
        c->nkernels++;
    }
    kopt_parse_ptxas_report(res.log ? res.log : "", c->kernels, c->nkernels);
    if (c->nkernels && !(res.log && strstr(res.log, "Used ")))
        kopt_log(ctx, KOPT_LOG_WARN, "%s: NVRTC's log has no resource report (is "
                 "CUDA_CACHE_DISABLE=0 set?): registers, shared memory and spills read as 0",
                 job->path);
    if (!res.cubin) {
        rc = kopt_seterr(ctx, KOPT_E_COMPILE, "%s: NVRTC produced no cubin for %s", job->path,
                         c->arch);
        goto cleanup;
    }
    cubin = res.cubin;
    size = res.size;
    if ((rc = kopt_file_write(ctx, c->binary_path, cubin, size)) != KOPT_OK)
        goto cleanup;
    c->compile_ms = kopt_now_ms() - t0;
    cache_store(ctx, c, meta);
    *out = c;
    c = NULL;
    rc = KOPT_OK;
    goto cleanup;
nomem:
    rc = kopt_seterr(ctx, KOPT_E_NOMEM, "compile options");
cleanup:
    if (lockfd >= 0)
        close(lockfd);                 /* releases the cache key's lock */
    if (claimed)
        kopt__compile_release(key);
    if (built)
        kopt__nvrtc_out_free(&res, job->nnames);   /* the cubin with it */
    kopt__strv_free_n(argc, argv);
    kopt_compiled_free(c);
    free(meta);
    return rc;
}

/* The launch plan's kernel names, each once. */
static int plan_names(const kopt_plan *plan, const char **names)
{
    int n = 0;
    for (int i = 0; i < plan->n; i++) {
        int seen = 0;
        if (plan->steps[i].is_memset)
            continue;
        for (int j = 0; j < n; j++)
            seen |= strcmp(names[j], plan->steps[i].kernel) == 0;
        if (!seen)
            names[n++] = plan->steps[i].kernel;
    }
    return n;
}

kopt_status kopt_compile_nvrtc_version(kopt_ctx *ctx, int *major, int *minor)
{
    const kopt_nvrtc_api *nv;
    kopt_status rc;

    *major = *minor = 0;
    if ((rc = kopt__nvrtc_load(ctx, &nv)) != KOPT_OK)
        return rc;
    nv->nvrtcVersion(major, minor);
    return KOPT_OK;
}

kopt_status kopt_compile_nvrtc_path(kopt_ctx *ctx, char *path, size_t n)
{
    const kopt_nvrtc_api *nv;
    kopt_status rc;

    if (n > 0)
        path[0] = '\0';
    if ((rc = kopt__nvrtc_load(ctx, &nv)) != KOPT_OK)
        return rc;
    kopt__nvrtc_file(path, n);
    return KOPT_OK;
}

kopt_status kopt__cutlass_for(kopt_ctx *ctx, const char *source, const kopt_compile_opts *o,
                              kopt_cutlass *cl, int *used)
{
    kopt_status rc;

    *used = kopt_cutlass_used(source);
    if (!*used)
        return KOPT_OK;
    if ((rc = kopt_cutlass_find(cl, ctx, o ? o->cutlass_dir : NULL)) != KOPT_OK)
        return kopt_adderr(ctx, rc, "the candidate includes CuTe/CUTLASS headers");
    kopt_log(ctx, KOPT_LOG_INFO, "CUTLASS %s from %s (%s)", cl->version, cl->include_dir,
             cl->source);
    return KOPT_OK;
}

kopt_status kopt_compile(kopt_compiled **out, kopt_ctx *ctx, const kopt_candidate *cand,
                         const kopt_compile_opts *opts)
{
    const char **names = NULL;
    kopt__nvrtc_job job;
    kopt_cutlass cl;
    kopt_status rc;
    char cl_key[64];
    int cutlass = 0;

    *out = NULL;
    if ((rc = kopt__cutlass_for(ctx, cand->source, opts, &cl, &cutlass)) != KOPT_OK)
        return rc;
    if (cand->host_mode)
        return kopt__compile_host(out, ctx, cand, opts, cutlass ? &cl : NULL);
    if (!(names = calloc((size_t)cand->plan.n + 1, sizeof(char *))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "names");
    memset(&job, 0, sizeof(job));
    job.source = cand->source;
    job.path = cand->path;
    job.dir = cand->dir;
    job.params = &cand->params;
    job.options = (const char *const *)cand->options;
    job.noptions = cand->noptions;
    job.includes = (const char *const *)cand->includes;
    job.nincludes = cand->nincludes;
    job.names = names;
    job.nnames = plan_names(&cand->plan, names);
    if (cutlass) {
        snprintf(cl_key, sizeof(cl_key), "cutlass %s", cl.version);
        job.cutlass_include = cl.include_dir;
        job.cutlass_version = cl_key;
    }
    rc = kopt__compile_nvrtc(out, ctx, &job, opts);
    free(names);
    return rc;
}
