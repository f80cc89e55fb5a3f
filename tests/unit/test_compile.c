/*
 * Unit tests of compilation: the ptxas report parser on recorded logs (tests/data/ptxas/)
 * and on malformed text, then, when NVRTC loads, kopt_compile into a temporary cache
 * (cache hits, cache keys, annotated compile errors) and every example under examples/;
 * host mode's link folder for NVIDIA's pip nvcc on a fake layout.
 */
#include "ktest.h"

#include "kopt/compile.h"
#include "kopt/proc.h"
#include "kopt/cute.h"
#include "kopt/worker.h"
#include "../../src/cuda/compile_int.h"

#include <dirent.h>
#include <link.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static kopt_ctx *ctx;
static char *tmp;          /* problem, candidates and the compile cache */
static char *cache;
static kopt_problem *prob;
static int have_nvrtc;
static int builtins_at_load;   /* nvrtc_builtins_loaded() before the first compile */

static char *fixture(const char *name)
{
    char path[1024];
    char *text;

    snprintf(path, sizeof(path), "%s/ptxas/%s", KOPT_TEST_DATA_DIR, name);
    text = ktest_read_file(path);
    if (!text)
        KTEST_FAIL("cannot read the fixture %s", path);
    return text;
}

static void set_lowered(kopt_kernel_info *k, const char *lowered)
{
    memset(k, 0, sizeof(*k));
    snprintf(k->lowered, sizeof(k->lowered), "%s", lowered);
    snprintf(k->name, sizeof(k->name), "%s", lowered);
}

#define CHECK_KERNEL(k, regs, stack, st, ld, smem, bars)                     \
    do {                                                                     \
        CHECK_EQ_INT((k).registers, (regs));                                 \
        CHECK_EQ_INT((k).stack_frame, (stack));                              \
        CHECK_EQ_INT((k).spill_stores, (st));                                \
        CHECK_EQ_INT((k).spill_loads, (ld));                                 \
        CHECK_EQ_INT((k).static_smem, (smem));                               \
        CHECK_EQ_INT((k).barriers, (bars));                                  \
    } while (0)

/* ---- ptxas report ------------------------------------------------------------------------ */

static void test_ptxas_nvrtc_report(void)
{
    char *log = fixture("nvrtc_sm90a.log");
    kopt_kernel_info k[5];

    if (!log)
        return;
    set_lowered(&k[0], "_Z7spillerILi128EEvPKfPfi");
    set_lowered(&k[1], "smem_reduce");
    set_lowered(&k[2], "plain_copy");
    set_lowered(&k[3], "not_in_the_log");
    set_lowered(&k[4], "_Z6helperPfi");     /* a device function, not an entry: ignored */
    kopt_parse_ptxas_report(log, k, 5);
    CHECK_KERNEL(k[0], 64, 1152, 1072, 1076, 0, 0);
    CHECK_KERNEL(k[1], 10, 0, 0, 0, 4096, 1);
    CHECK_KERNEL(k[2], 10, 0, 0, 0, 0, 0);
    CHECK_KERNEL(k[3], 0, 0, 0, 0, 0, 0);
    CHECK_KERNEL(k[4], 0, 0, 0, 0, 0, 0);
    free(log);
}

static void test_ptxas_only_listed_kernels(void)
{
    char *log = fixture("nvrtc_sm90a.log");
    kopt_kernel_info k;

    if (!log)
        return;
    set_lowered(&k, "plain_copy");
    kopt_parse_ptxas_report(log, &k, 1);
    CHECK_KERNEL(k, 10, 0, 0, 0, 0, 0);
    kopt_parse_ptxas_report(log, NULL, 0);  /* nothing to fill: no crash */
    free(log);
}

/* nvcc's layout: the entry lines are the same; its stack-frame line lacks the "ptxas ."
 * prefix of NVRTC's (kopt only parses NVRTC logs), so only the "Used" line is checked. */
static void test_ptxas_nvcc_layout(void)
{
    char *log = fixture("nvcc_sm90a.log");
    kopt_kernel_info k[2];

    if (!log)
        return;
    set_lowered(&k[0], "smem_reduce");
    set_lowered(&k[1], "uses_helper");
    kopt_parse_ptxas_report(log, k, 2);
    CHECK_EQ_INT(k[0].registers, 10);
    CHECK_EQ_INT(k[0].barriers, 1);
    CHECK_EQ_INT(k[0].static_smem, 4096);
    CHECK_EQ_INT(k[1].registers, 40);
    CHECK_EQ_INT(k[1].barriers, 0);
    free(log);
}

static void test_ptxas_truncated(void)
{
    char *log = fixture("nvrtc_sm90a.log");
    size_t n;

    if (!log)
        return;
    n = strlen(log);
    /* every prefix of the log: no crash, no value out of the range the full log has */
    for (size_t cut = 0; cut <= n; cut++) {
        char *part = strndup(log, cut);
        kopt_kernel_info k[3];
        set_lowered(&k[0], "_Z7spillerILi128EEvPKfPfi");
        set_lowered(&k[1], "smem_reduce");
        set_lowered(&k[2], "uses_helper");
        kopt_parse_ptxas_report(part, k, 3);
        for (int i = 0; i < 3; i++) {
            const int v[] = {k[i].registers, k[i].stack_frame, k[i].spill_stores,
                             k[i].spill_loads, k[i].static_smem, k[i].barriers};
            for (int j = 0; j < 6; j++)
                if (v[j] < 0 || v[j] > 4096) {
                    KTEST_FAIL("prefix of %zu bytes: kernel %d field %d = %d", cut, i, j, v[j]);
                    cut = n;
                }
        }
        free(part);
    }
    /* cut right after the entry line: nothing known yet */
    {
        const char *entry = strstr(log, "ptxas info    : Function properties for smem_reduce");
        kopt_kernel_info k;
        char *part = entry ? strndup(log, (size_t)(entry - log)) : NULL;
        set_lowered(&k, "smem_reduce");
        if (CHECK(part != NULL)) {
            kopt_parse_ptxas_report(part, &k, 1);
            CHECK_KERNEL(k, 0, 0, 0, 0, 0, 0);
        }
        free(part);
    }
    free(log);
}

static void test_ptxas_malformed(void)
{
    static const char *const logs[] = {
        "",
        "\n\n\n",
        "ptxas info    : Compiling entry function 'k",                    /* no closing quote */
        "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
        "ptxas info    : Used registers, used barriers, bytes smem\n"
        "ptxas         . bytes stack frame, bytes spill stores\n",
        "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
        "ptxas         .     garbage bytes stack frame\n"
        "ptxas info    : Used x registers, used y barriers, z bytes smem\n",
        "Used 12 registers, 100 bytes smem\n",                              /* before any entry */
        "ptxas info    : Compiling entry function 'other' for 'sm_90a'\n"
        "ptxas info    : Used 99 registers, used 3 barriers, 64 bytes smem\n",
        "ptxas info    : Compiling entry function '' for 'sm_90a'\n"
        "ptxas info    : Used 7 registers\n",
        "\r\n\r\nptxas info\r\n entry function '\r\n",
        "bytes smem bytes smem Used Used used entry function ' ' '\n",
    };
    for (int i = 0; i < KTEST_COUNT(logs); i++) {
        kopt_kernel_info k;
        set_lowered(&k, "k");
        kopt_parse_ptxas_report(logs[i], &k, 1);
        if (!CHECK_EQ_INT(k.registers + k.stack_frame + k.spill_stores + k.spill_loads +
                          k.static_smem + k.barriers, 0))
            fprintf(stderr, "  ^ log %d\n", i);
    }
    {
        kopt_kernel_info k;
        set_lowered(&k, "k");
        kopt_parse_ptxas_report(NULL, &k, 1);
        CHECK_EQ_INT(k.registers, 0);
    }
}

static void test_ptxas_long_lines(void)
{
    kopt_buf b = KOPT_BUF_INIT;
    kopt_kernel_info k;
    char name[700];

    /* an over-long symbol (longer than the parser's buffers) and an over-long line */
    memset(name, 'a', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    kopt_buf_printf(&b, "ptxas info    : Compiling entry function '%s' for 'sm_90a'\n", name);
    kopt_buf_printf(&b, "ptxas info    : Used 5 registers %s\n", name);
    kopt_buf_printf(&b, "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n");
    kopt_buf_printf(&b, "ptxas info    : Used 21 registers, used 1 barriers, %s%s\n", name, name);
    set_lowered(&k, "k");
    kopt_parse_ptxas_report(kopt_buf_cstr(&b), &k, 1);
    CHECK_EQ_INT(k.registers, 21);
    CHECK_EQ_INT(k.barriers, 1);
    kopt_buf_free(&b);
}

static void test_arch_for_cc(void)
{
    char out[24];

    kopt_arch_for_cc(9, 0, out);
    CHECK_EQ_STR(out, "sm_90a");
    kopt_arch_for_cc(8, 0, out);
    CHECK_EQ_STR(out, "sm_80");
    kopt_arch_for_cc(8, 9, out);
    CHECK_EQ_STR(out, "sm_89");
    kopt_arch_for_cc(10, 0, out);
    CHECK_EQ_STR(out, "sm_100");
}

/* ---- NVRTC ---------------------------------------------------------------------------- */

static const char *const PROBLEM_JSON =
    "{\"name\": \"vadd\", \"sizes\": {\"N\": 1000},"
    " \"tensors\": ["
    "  {\"name\": \"a\", \"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"input\"},"
    "  {\"name\": \"c\", \"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"output\"}],"
    " \"reference\": {\"source\": \"ref.cu\", \"launches\": [{\"kernel\": \"vadd_ref\","
    "  \"grid\": [\"cdiv(N,256)\"], \"block\": [256], \"args\": [\"a\", \"c\", \"N\"]}]}}";

static const char *const REF_CU =
    "extern \"C\" __global__ void vadd_ref(const float *a, float *c, int n)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) c[i] = a[i] + 1.0f;\n"
    "}\n";

/* a candidate with a params block; %d is THREADS, %s extra options (JSON list items).
 * (Params become -D macros, so a one-letter name like T would break NVRTC's headers.) */
static const char *const TEMPLATED_FMT =
    "/*@kopt {\"launches\": [{\"kernel\": \"scale<THREADS>\","
    " \"grid\": [\"cdiv(N,THREADS)\"], \"block\": [\"THREADS\"], \"args\": [\"a\", \"c\", \"N\"]}],"
    " \"params\": {\"THREADS\": %d}, \"options\": [%s]} */\n"
    "template <int B>\n"
    "__global__ void __launch_bounds__(B) scale(const float *a, float *c, int n)\n"
    "{\n"
    "    __shared__ float s[B];\n"
    "    int i = blockIdx.x * B + threadIdx.x;\n"
    "    s[threadIdx.x] = i < n ? a[i] : 0.f;\n"
    "    __syncthreads();\n"
    "    if (i < n) c[i] = 2.f * s[B - 1 - threadIdx.x];\n"
    "}\n";

static kopt_status compile_text(kopt_compiled **out, const char *name, const char *text,
                                const char *arch, int no_cache)
{
    kopt_compile_opts o = KOPT_COMPILE_OPTS_INIT;
    kopt_candidate *c = NULL;
    kopt_status rc;
    char *path = kopt_path_join(tmp, name);

    *out = NULL;
    o.cache_dir = cache;
    o.arch = arch;
    o.no_cache = no_cache;
    rc = kopt_candidate_parse(&c, ctx, text, path, prob);
    if (rc != KOPT_OK)
        KTEST_FAIL("%s does not parse: %s", name, kopt_errmsg(ctx));
    else
        rc = kopt_compile(out, ctx, c, &o);
    kopt_candidate_free(c);
    free(path);
    return rc;
}

static char *templated(int t, const char *options)
{
    kopt_buf b = KOPT_BUF_INIT;
    kopt_buf_printf(&b, TEMPLATED_FMT, t, options);
    return kopt_buf_detach(&b);
}

static int file_exists(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

#define NEED_NVRTC()                                            \
    do {                                                        \
        if (!have_nvrtc) {                                      \
            KTEST_SKIP("NVRTC not available");                  \
            return;                                             \
        }                                                       \
    } while (0)

/* ---- NVRTC's built-in headers' library -------------------------------------------------- */

typedef struct builtins_seek {
    char dir[1024];
    int found;
} builtins_seek;

static int seek_builtins(struct dl_phdr_info *info, size_t size, void *user)
{
    builtins_seek *b = user;
    const char *name = info->dlpi_name, *slash = name ? strrchr(name, '/') : NULL;

    (void)size;
    if (slash && strncmp(slash + 1, "libnvrtc-builtins.so", 20) == 0 &&
        strlen(b->dir) == (size_t)(slash - name) && strncmp(name, b->dir, strlen(b->dir)) == 0)
        b->found = 1;
    return 0;
}

/* 1 when NVRTC is loaded and a libnvrtc-builtins from its folder is loaded too; 0 when not;
 * -1 when NVRTC cannot be loaded. */
static int nvrtc_builtins_loaded(void)
{
    builtins_seek b;
    char path[1024], *slash;

    memset(&b, 0, sizeof(b));
    if (kopt_compile_nvrtc_path(ctx, path, sizeof(path)) != KOPT_OK)
        return -1;
    if (!(slash = strrchr(path, '/')))
        return 0;
    *slash = '\0';
    snprintf(b.dir, sizeof(b.dir), "%s", path);
    dl_iterate_phdr(seek_builtins, &b);
    return b.found;
}

/* Loading NVRTC loads the builtins beside it, before any compile: NVRTC 13.0 from NVIDIA's
 * pip package finds them only so where no toolkit is installed (src/cuda/loader.c). */
static void test_nvrtc_builtins_preloaded(void)
{
    char path[1024];

    NEED_NVRTC();
    CHECK_EQ_INT(kopt_compile_nvrtc_path(ctx, path, sizeof(path)), KOPT_OK);
    CHECK(strstr(path, "libnvrtc") != NULL);
    CHECK_EQ_INT(builtins_at_load, 1);
}

static void test_compile_and_cache(void)
{
    kopt_compiled *a = NULL, *b = NULL, *c = NULL;
    char prefix[1024];

    NEED_NVRTC();
    if (!CHECK_EQ_INT(compile_text(&a, "nofm.cu", REF_CU, NULL, 0), KOPT_OK)) {
        fprintf(stderr, "  %s\n%s\n", kopt_errmsg(ctx), kopt_errdetail(ctx));
        return;
    }
    CHECK_EQ_INT(a->cache_hit, 0);
    CHECK(a->compile_ms > 0);
    CHECK_EQ_STR(a->arch, "sm_90a");
    CHECK_EQ_INT(a->host_mode, 0);
    CHECK_EQ_INT(strlen(a->key), 64);
    CHECK_STR_CONTAINS(a->compiler, "nvrtc ");
    CHECK(file_exists(a->binary_path));
    snprintf(prefix, sizeof(prefix), "%s/compile/%s", cache, a->key);
    CHECK(strncmp(a->binary_path, prefix, strlen(prefix)) == 0);
    CHECK_STR_CONTAINS(a->binary_path, ".cubin");
    CHECK_STR_CONTAINS(a->log, "ptxas info");
    if (CHECK_EQ_INT(a->nkernels, 1)) {
        CHECK_EQ_STR(a->kernels[0].name, "vadd_ref");
        CHECK_EQ_STR(a->kernels[0].lowered, "vadd_ref");
        CHECK(a->kernels[0].registers > 0);
        CHECK_EQ_INT(a->kernels[0].spill_stores, 0);
        CHECK(kopt_compiled_kernel(a, "vadd_ref") == &a->kernels[0]);
    }
    CHECK(kopt_compiled_kernel(a, "nope") == NULL);
    CHECK(kopt_compiled_kernel(NULL, "vadd_ref") == NULL);
    {
        char meta[1100];
        snprintf(meta, sizeof(meta), "%s.json", prefix);
        CHECK(file_exists(meta));
    }
    /* the same source again: from the cache, same key, same resources */
    if (CHECK_EQ_INT(compile_text(&b, "nofm.cu", REF_CU, NULL, 0), KOPT_OK)) {
        CHECK_EQ_INT(b->cache_hit, 1);
        CHECK_EQ_STR(b->key, a->key);
        CHECK_EQ_STR(b->binary_path, a->binary_path);
        CHECK_NEAR(b->compile_ms, 0, 0);
        CHECK_EQ_STR(b->compiler, a->compiler);
        if (CHECK_EQ_INT(b->nkernels, 1)) {
            CHECK_EQ_STR(b->kernels[0].name, "vadd_ref");
            CHECK_EQ_STR(b->kernels[0].lowered, a->kernels[0].lowered);
            CHECK_EQ_INT(b->kernels[0].registers, a->kernels[0].registers);
            CHECK_EQ_INT(b->kernels[0].static_smem, a->kernels[0].static_smem);
        }
        CHECK_STR_CONTAINS(b->log, "ptxas info");
    }
    /* no_cache: compiled again under the same key */
    if (CHECK_EQ_INT(compile_text(&c, "nofm.cu", REF_CU, NULL, 1), KOPT_OK)) {
        CHECK_EQ_INT(c->cache_hit, 0);
        CHECK_EQ_STR(c->key, a->key);
    }
    /* a cached cubin that changed after it was built (a tampering candidate) is rebuilt */
    kopt_compiled_free(b);
    b = NULL;
    {
        FILE *f = fopen(a->binary_path, "r+b");
        CHECK(f != NULL);
        if (f) {
            fputs("tampered", f);
            fclose(f);
        }
        if (CHECK_EQ_INT(compile_text(&b, "nofm.cu", REF_CU, NULL, 0), KOPT_OK))
            CHECK_EQ_INT(b->cache_hit, 0);
        kopt_compiled_free(b);
        b = NULL;
        if (CHECK_EQ_INT(compile_text(&b, "nofm.cu", REF_CU, NULL, 0), KOPT_OK))
            CHECK_EQ_INT(b->cache_hit, 1);   /* and cached again once rebuilt */
    }
    kopt_compiled_free(a);
    kopt_compiled_free(b);
    kopt_compiled_free(c);
    kopt_compiled_free(NULL);
}

static void test_cache_key_changes(void)
{
    char *t128 = templated(128, ""), *t256 = templated(256, "");
    char *opt = templated(128, "\"-DEXTRA=1\""), *opt2 = templated(128, "\"--use_fast_math\"");
    char *edited = NULL;
    kopt_compiled *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL, *f = NULL;

    NEED_NVRTC();
    if (t128) {
        edited = malloc(strlen(t128) + 32);
        sprintf(edited, "%s// a comment\n", t128);
    }
    if (CHECK_EQ_INT(compile_text(&a, "t.cu", t128, NULL, 0), KOPT_OK) &&
        CHECK_EQ_INT(a->nkernels, 1)) {
        CHECK_EQ_STR(a->kernels[0].name, "scale<THREADS>");
        CHECK_STR_CONTAINS(a->kernels[0].lowered, "scale");
        CHECK(strncmp(a->kernels[0].lowered, "_Z", 2) == 0);   /* a mangled symbol */
        CHECK(a->kernels[0].registers > 0);
        CHECK_EQ_INT(a->kernels[0].static_smem, 128 * 4);
        CHECK_EQ_INT(a->kernels[0].barriers, 1);
    } else {
        fprintf(stderr, "  %s\n%s\n", kopt_errmsg(ctx), kopt_errdetail(ctx));
    }
    if (CHECK_EQ_INT(compile_text(&b, "t.cu", t256, NULL, 0), KOPT_OK) && a) {
        CHECK(strcmp(a->key, b->key) != 0);                     /* a param */
        CHECK_EQ_INT(b->cache_hit, 0);
        CHECK_EQ_INT(b->kernels[0].static_smem, 256 * 4);
    }
    if (CHECK_EQ_INT(compile_text(&c, "t.cu", opt, NULL, 0), KOPT_OK) && a) {
        CHECK(strcmp(a->key, c->key) != 0);                     /* an option */
        CHECK_EQ_INT(c->cache_hit, 0);
    }
    if (CHECK_EQ_INT(compile_text(&d, "t.cu", opt2, NULL, 0), KOPT_OK) && c)
        CHECK(strcmp(c->key, d->key) != 0);                     /* another option */
    if (CHECK_EQ_INT(compile_text(&e, "t.cu", t128, "sm_80", 0), KOPT_OK) && a) {
        CHECK(strcmp(a->key, e->key) != 0);                     /* the architecture */
        CHECK_EQ_STR(e->arch, "sm_80");
    }
    if (CHECK_EQ_INT(compile_text(&f, "t.cu", edited, NULL, 0), KOPT_OK) && a)
        CHECK(strcmp(a->key, f->key) != 0);                     /* the source text */
    kopt_compiled_free(a);
    kopt_compiled_free(b);
    kopt_compiled_free(c);
    kopt_compiled_free(d);
    kopt_compiled_free(e);
    kopt_compiled_free(f);
    free(t128);
    free(t256);
    free(opt);
    free(opt2);
    free(edited);
}

/* Editing a header the candidate includes must not reuse the old cubin. */
static void test_cache_key_follows_headers(void)
{
    kopt_compiled *a = NULL, *b = NULL, *c = NULL;
    kopt_buf src = KOPT_BUF_INIT;
    char *hdr;

    NEED_NVRTC();
    kopt_buf_printf(&src, "#include \"kt_header.cuh\"\n%s", REF_CU);
    hdr = ktest_write_file(tmp, "kt_header.cuh", "#define KT_UNUSED 1\n");
    CHECK_EQ_INT(compile_text(&a, "with_header.cu", kopt_buf_cstr(&src), NULL, 0), KOPT_OK);
    CHECK_EQ_INT(compile_text(&b, "with_header.cu", kopt_buf_cstr(&src), NULL, 0), KOPT_OK);
    free(hdr);
    hdr = ktest_write_file(tmp, "kt_header.cuh", "#define KT_UNUSED 22\n");
    CHECK_EQ_INT(compile_text(&c, "with_header.cu", kopt_buf_cstr(&src), NULL, 0), KOPT_OK);
    if (a && b && c) {
        CHECK(b->cache_hit);
        CHECK_EQ_STR(a->key, b->key);
        CHECK(!c->cache_hit);
        CHECK(strcmp(a->key, c->key) != 0);
    }
    free(hdr);
    kopt_buf_free(&src);
    kopt_compiled_free(a);
    kopt_compiled_free(b);
    kopt_compiled_free(c);
}

static void test_syntax_error_is_annotated(void)
{
    const char *bad =
        "extern \"C\" __global__ void vadd_ref(const float *a, float *c, int n)\n"
        "{\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    // the next line does not compile\n"
        "    int x = ;\n"
        "    if (i < n) c[i] = a[i];\n"
        "}\n";
    kopt_compiled *c = NULL;

    NEED_NVRTC();
    CHECK_EQ_INT(compile_text(&c, "bad.cu", bad, NULL, 0), KOPT_E_COMPILE);
    CHECK(c == NULL);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "bad.cu: compilation failed");
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "sm_90a");
    CHECK_STR_CONTAINS(kopt_errdetail(ctx), "bad.cu(5): error");
    CHECK_STR_CONTAINS(kopt_errdetail(ctx), "    5 |     int x = ;\n");
    /* nothing was cached for it: a second try fails the same way */
    CHECK_EQ_INT(compile_text(&c, "bad.cu", bad, NULL, 0), KOPT_E_COMPILE);
    CHECK_STR_CONTAINS(kopt_errdetail(ctx), "    5 |     int x = ;");
    kopt_compiled_free(c);
}

static void test_missing_kernel(void)
{
    const char *src =
        "/*@kopt {\"launches\": [{\"kernel\": \"vadd_ref\", \"grid\": [1], \"block\": [1],"
        " \"args\": [\"a\", \"c\", \"N\"]}, {\"kernel\": \"not_defined_anywhere\","
        " \"grid\": [1], \"block\": [1], \"args\": []}]} */\n"
        "extern \"C\" __global__ void vadd_ref(const float *a, float *c, int n) {}\n";
    kopt_compiled *c = NULL;
    char both[4096];

    NEED_NVRTC();
    CHECK_EQ_INT(compile_text(&c, "missing.cu", src, NULL, 0), KOPT_E_COMPILE);
    CHECK(c == NULL);
    snprintf(both, sizeof(both), "%s\n%s", kopt_errmsg(ctx), kopt_errdetail(ctx));
    CHECK_STR_CONTAINS(both, "not_defined_anywhere");
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "missing.cu");
    if (getenv("KTEST_VERBOSE"))
        printf("  message: %s\n  detail: %s\n", kopt_errmsg(ctx), kopt_errdetail(ctx));
    kopt_compiled_free(c);
}

/* ---- compile helpers (kopt_compile_procs_set) -------------------------------------------- */

typedef struct helper_job {
    int threads;               /* the template's THREADS */
    kopt_status rc;
    int registers, nkernels;
    char key[65], lowered[512];
    long long size;            /* the cubin's bytes */
    char msg[512];             /* the error, when rc is not KOPT_OK */
} helper_job;

/* This process's children and grandchildren (the compile zygote and the helpers it forks,
 * or helpers started as programs): how many of each, and their nice values (up to 16). */
typedef struct family {
    int children, grandchildren, n, nice[16];
} family;

static family descendants(void)
{
    enum { MAXP = 4096 };
    static int pid[MAXP], ppid[MAXP], nice[MAXP];
    family f;
    DIR *d = opendir("/proc");
    struct dirent *e;
    int np = 0, me = (int)getpid();

    memset(&f, 0, sizeof(f));
    while (d && (e = readdir(d)) != NULL && np < MAXP) {
        char path[300], buf[1024];
        FILE *fp;
        size_t got;
        const char *rest;
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        if (!(fp = fopen(path, "r")))
            continue;
        got = fread(buf, 1, sizeof(buf) - 1, fp);
        fclose(fp);
        buf[got] = '\0';
        /* after the command's ")": state ppid ..., nice is the 19th field of the line */
        if ((rest = strrchr(buf, ')')) &&
            sscanf(rest + 2, "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %d",
                   &ppid[np], &nice[np]) == 2)
            pid[np++] = atoi(e->d_name);
    }
    if (d)
        closedir(d);
    for (int i = 0; i < np; i++) {
        int depth = ppid[i] == me ? 1 : 0;
        for (int j = 0; j < np && !depth; j++)
            if (pid[j] == ppid[i] && ppid[j] == me)
                depth = 2;
        if (!depth)
            continue;
        if (depth == 1)
            f.children++;
        else
            f.grandchildren++;
        if (f.n < 16)
            f.nice[f.n++] = nice[i];
    }
    return f;
}

/* The helpers' processes: `children` and `grandchildren` as expected, each at nice 10 (or
 * at this process's, when it is lower still). */
static void check_family(int children, int grandchildren)
{
    family f = descendants();
    int own = getpriority(PRIO_PROCESS, 0);

    CHECK_EQ_INT(f.children, children);
    CHECK_EQ_INT(f.grandchildren, grandchildren);
    for (int i = 0; i < f.n; i++)
        CHECK_EQ_INT(f.nice[i], own < 10 ? 10 : own);
}

/* Compile the templated candidate at job->threads with its own context (no cache). */
static void *compile_job(void *arg)
{
    helper_job *j = arg;
    kopt_ctx *c = kopt_ctx_new();
    kopt_compile_opts o = KOPT_COMPILE_OPTS_INIT;
    kopt_candidate *cand = NULL;
    kopt_compiled *out = NULL;
    char *text = templated(j->threads, "");
    char *path = kopt_path_join(tmp, "helped.cu");
    struct stat st;

    o.cache_dir = cache;
    o.no_cache = 1;
    j->rc = kopt_candidate_parse(&cand, c, text, path, prob);
    if (j->rc == KOPT_OK)
        j->rc = kopt_compile(&out, c, cand, &o);
    if (j->rc != KOPT_OK)
        snprintf(j->msg, sizeof(j->msg), "%s", kopt_errmsg(c));
    if (out) {
        j->nkernels = out->nkernels;
        if (out->nkernels) {
            j->registers = out->kernels[0].registers;
            snprintf(j->lowered, sizeof(j->lowered), "%s", out->kernels[0].lowered);
        }
        snprintf(j->key, sizeof(j->key), "%s", out->key);
        j->size = stat(out->binary_path, &st) == 0 ? (long long)st.st_size : -1;
    }
    kopt_compiled_free(out);
    kopt_candidate_free(cand);
    free(path);
    free(text);
    kopt_ctx_free(c);
    return NULL;
}

static void test_compile_helpers(void)
{
    enum { N = 4 };
    helper_job here[N], helped[N];
    pthread_t th[N];
    kopt_compiled *c = NULL;
    const char *bad = "extern \"C\" __global__ void vadd_ref(const float *a, float *c, int n)\n"
                      "{\n    int x = ;\n}\n";

    NEED_NVRTC();
    unsetenv("KOPT_COMPILE_PROCS");
    CHECK_EQ_INT(kopt_compile_procs_set(0), 0);
    memset(here, 0, sizeof(here));
    memset(helped, 0, sizeof(helped));
    for (int i = 0; i < N; i++) {
        here[i].threads = helped[i].threads = 64 << i;
        compile_job(&here[i]);              /* in this process, one after another */
    }
    CHECK_EQ_INT(kopt_compile_procs_running(), 0);
    /* two helpers for four threads: the same binaries, keys and resources */
    kopt_compile_procs_set(2);
    for (int i = 0; i < N; i++)
        pthread_create(&th[i], NULL, compile_job, &helped[i]);
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    CHECK(kopt_compile_procs_running() >= 1 && kopt_compile_procs_running() <= 2);
    /* forked warm by one zygote (our one child), at a lower priority */
    check_family(1, kopt_compile_procs_running());
    for (int i = 0; i < N; i++) {
        if (!CHECK_EQ_INT(helped[i].rc, KOPT_OK) || !CHECK_EQ_INT(here[i].rc, KOPT_OK)) {
            fprintf(stderr, "  THREADS=%d: %s%s\n", here[i].threads, here[i].msg, helped[i].msg);
            continue;
        }
        CHECK_EQ_STR(helped[i].key, here[i].key);
        CHECK_EQ_INT(helped[i].nkernels, 1);
        CHECK_EQ_STR(helped[i].lowered, here[i].lowered);
        CHECK(helped[i].registers > 0);
        CHECK_EQ_INT(helped[i].registers, here[i].registers);
        CHECK(helped[i].size > 0);
        CHECK_EQ_INT(helped[i].size, here[i].size);
    }
    /* a compile error through a helper reads as one here: annotated, with the status */
    CHECK_EQ_INT(compile_text(&c, "bad.cu", bad, NULL, 0), KOPT_E_COMPILE);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "bad.cu: compilation failed");
    CHECK_STR_CONTAINS(kopt_errdetail(ctx), "    3 |     int x = ;");
    CHECK(kopt_compile_procs_running() >= 1);
    /* 0 stops them, and the zygote */
    kopt_compile_procs_set(0);
    CHECK_EQ_INT(kopt_compile_procs_running(), 0);
    check_family(0, 0);
    /* $KOPT_COMPILE_FORK=0: helpers started as programs, our children; the same results */
    setenv("KOPT_COMPILE_FORK", "0", 1);
    kopt_compile_procs_set(2);
    memset(&helped[2], 0, sizeof(helped[2]));
    helped[2].threads = here[2].threads;
    compile_job(&helped[2]);
    CHECK_EQ_INT(helped[2].rc, KOPT_OK);
    CHECK_EQ_STR(helped[2].key, here[2].key);
    CHECK_EQ_INT(helped[2].size, here[2].size);
    CHECK_EQ_INT(helped[2].registers, here[2].registers);
    check_family(kopt_compile_procs_running(), 0);
    kopt_compile_procs_set(0);
    unsetenv("KOPT_COMPILE_FORK");
    /* $KOPT_COMPILE_PROCS=0 wins over the setter */
    setenv("KOPT_COMPILE_PROCS", "0", 1);
    kopt_compile_procs_set(2);
    compile_job(&helped[0]);
    CHECK_EQ_INT(helped[0].rc, KOPT_OK);
    CHECK_EQ_INT(kopt_compile_procs_running(), 0);
    unsetenv("KOPT_COMPILE_PROCS");
    /* a helper that answers nothing (a program that exits at once): compiled here instead,
     * the same result, and the broken helper dropped */
    if (CHECK_EQ_INT(kopt_worker_set_path(ctx, "/bin/true"), KOPT_OK)) {
        kopt_compile_procs_set(1);
        memset(&helped[1], 0, sizeof(helped[1]));
        helped[1].threads = here[1].threads;
        compile_job(&helped[1]);
        CHECK_EQ_INT(helped[1].rc, KOPT_OK);
        CHECK_EQ_STR(helped[1].key, here[1].key);
        CHECK_EQ_INT(helped[1].size, here[1].size);
        CHECK_EQ_INT(kopt_compile_procs_running(), 0);
        kopt_worker_set_path(ctx, NULL);
    }
    kopt_compile_procs_set(0);
    kopt_compiled_free(c);
}

/* ---- the CUDA include folder, from many threads --------------------------------------- */

const char *kopt__cuda_include_dir(void);   /* src/cuda/loader.c */

static void *include_dir_reader(void *arg)
{
    const char *want = arg;
    long bad = 0;
    for (int i = 0; i < 20000; i++) {
        const char *got = kopt__cuda_include_dir();
        char copy[1024];
        snprintf(copy, sizeof(copy), "%s", got ? got : "(null)");
        bad += strcmp(copy, want) != 0;
    }
    return (void *)bad;
}

/* Compile threads ask for the CUDA include folder at once. It was rebuilt in a shared buffer
 * on every call (with CUDA_HOME set), so a reader could see it torn: an "-I" option that took
 * the next option, a -D param, as its folder (compile errors as if params were missing, and
 * two cache keys for one configuration: test_tune_templates' parallel prepare, H200 tuning
 * runs). Every thread must read the same path every time. */
static void regression_include_dir_from_threads(void)
{
    enum { T = 8 };
    pthread_t th[T];
    const char *first = kopt__cuda_include_dir();
    char want[1024];
    long bad = 0;

    if (!first) {
        KTEST_SKIP("no CUDA include folder here");
        return;
    }
    snprintf(want, sizeof(want), "%s", first);
    for (int i = 0; i < T; i++)
        pthread_create(&th[i], NULL, include_dir_reader, want);
    for (int i = 0; i < T; i++) {
        void *r = NULL;
        pthread_join(th[i], &r);
        bad += (long)r;
    }
    CHECK_EQ_INT(bad, 0);
}

/* One of test_concurrent_compiles_share_one's threads: the candidate compiled with a
 * context of its own; returns whether it came from the cache (2: the compile failed). */
static void *compile_same(void *arg)
{
    kopt_compile_opts o = KOPT_COMPILE_OPTS_INIT;
    kopt_ctx *c2 = kopt_ctx_new();
    kopt_candidate *c = NULL;
    kopt_compiled *out = NULL;
    long r = 2;
    char *path = kopt_path_join(tmp, "same.cu");

    o.cache_dir = cache;
    if (c2 && path && kopt_candidate_parse(&c, c2, (const char *)arg, path, prob) == KOPT_OK &&
        kopt_compile(&out, c2, c, &o) == KOPT_OK)
        r = out->cache_hit;
    kopt_compiled_free(out);
    kopt_candidate_free(c);
    kopt_ctx_free(c2);
    free(path);
    return (void *)r;
}

/* Threads that compile the same candidate at once (kopt optimize's compiles ahead and the
 * evaluation that wants one of them): one compiles, the others wait for it and take it
 * from the cache (compile_inflight.c), not four compiles writing one cached binary. */
static void test_concurrent_compiles_share_one(void)
{
    enum { T = 4 };
    pthread_t th[T];
    char *text;
    long built = 0, cached = 0, failed = 0;
    kopt_buf b = KOPT_BUF_INIT;

    NEED_NVRTC();
    kopt_buf_printf(&b, "%s// a key of its own: %ld %d\n", REF_CU, (long)time(NULL), getpid());
    text = kopt_buf_detach(&b);
    for (int i = 0; i < T; i++)
        pthread_create(&th[i], NULL, compile_same, text);
    for (int i = 0; i < T; i++) {
        void *r = NULL;
        pthread_join(th[i], &r);
        built += (long)r == 0;
        cached += (long)r == 1;
        failed += (long)r == 2;
    }
    CHECK_EQ_INT(failed, 0);
    CHECK_EQ_INT(built, 1);
    CHECK_EQ_INT(cached, T - 1);
    free(text);
}

/* Two processes compile the same host-mode candidate into one cache (a kopt serve and the
 * step that sends it its candidates, each compiling ahead): the second waits for the first
 * (the key's lock) and takes its .so from the cache, so nvcc runs once and the .so is never
 * rewritten under a candidate that runs it (two nvcc runs give different bytes: the file
 * guard would call that TAMPER). The .so's checksum beside it is the .so's, and no temporary
 * file is left. */
static void test_processes_compile_a_host_candidate_once(void)
{
    kopt_buf b = KOPT_BUF_INIT;
    kopt_compiled *out = NULL;
    char *text, *side = NULL, *want = NULL, *nvcc = kopt_find_program(NULL, "nvcc");
    char sum[65], sub[1100];
    int status = 0, leftover = 0;
    size_t len = 0;
    pid_t pid;
    DIR *d;
    struct dirent *e;

    if (!nvcc) {
        printf("  skipped: no nvcc on PATH (host mode compiles with it)\n");
        return;
    }
    free(nvcc);
    kopt_buf_printf(&b, "/*@kopt\n{\"mode\": \"host\"}\n*/\n#include <cuda_runtime.h>\n"
                    "#include \"kopt/candidate.h\"\n"
                    "__global__ void k(float *y) { y[threadIdx.x] = 1.0f; }\n"
                    "extern \"C\" int kopt_candidate_run(const kopt_candidate_io *io)\n"
                    "{ k<<<1, 32, 0, (cudaStream_t)io->stream>>>((float *)io->tensors[0].data);\n"
                    "  return cudaGetLastError() == cudaSuccess ? 0 : 1; }\n"
                    "// a key of its own: %ld %d\n", (long)time(NULL), getpid());
    text = kopt_buf_detach(&b);
    fflush(NULL);
    pid = fork();
    if (pid == 0)                      /* the other process: built (0) or cached (1) */
        _exit((int)(long)compile_same(text));
    usleep(200 * 1000);                /* nvcc is under way there (about a second) */
    if (!CHECK(compile_text(&out, "same.cu", text, NULL, 0) == KOPT_OK)) {
        fprintf(stderr, "  %s\n%s\n", kopt_errmsg(ctx), kopt_errdetail(ctx));
    } else {
        CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
        /* one built it, the other took it from the cache */
        CHECK_EQ_INT(WEXITSTATUS(status) + out->cache_hit, 1);
        CHECK_EQ_INT(WEXITSTATUS(status), 0);
        CHECK(asprintf(&side, "%s.sha256", out->binary_path) >= 0 &&
              kopt_file_read(ctx, side, &want, &len) == KOPT_OK && len == 64);
        CHECK(kopt_file_sha256(ctx, out->binary_path, sum) == KOPT_OK && want &&
              memcmp(want, sum, 64) == 0);
        snprintf(sub, sizeof(sub), "%s/compile", cache);
        for (d = opendir(sub); d && (e = readdir(d)) != NULL;)
            leftover += strstr(e->d_name, ".so.tmp.") != NULL;
        if (d)
            closedir(d);
        CHECK_EQ_INT(leftover, 0);
    }
    if (pid > 0)
        waitpid(pid, &status, 0);
    kopt_compiled_free(out);
    free(side);
    free(want);
    free(text);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Compile one candidate of an example and check every kernel of its plan was found. */
static void compile_example(const kopt_problem *p, const kopt_candidate *c, const char *what,
                            int *count)
{
    kopt_compile_opts o = KOPT_COMPILE_OPTS_INIT;
    kopt_compiled *out = NULL;

    o.cache_dir = cache;
    o.arch = "sm_90a";
    if (kopt_cutlass_used(c->source)) {   /* CuTe candidates need the CUTLASS headers */
        kopt_cutlass cl;
        if (kopt_cutlass_find(&cl, ctx, NULL) != KOPT_OK) {
            printf("  skipped: %s needs CUTLASS: %s\n", what, kopt_errmsg(ctx));
            return;
        }
    }
    if (!CHECK_EQ_INT(kopt_compile(&out, ctx, c, &o), KOPT_OK)) {
        fprintf(stderr, "  %s (%s): %s\n%s\n", what, p->name, kopt_errmsg(ctx),
                kopt_errdetail(ctx));
        return;
    }
    (*count)++;
    CHECK(file_exists(out->binary_path));
    for (int i = 0; !c->host_mode && i < c->plan.n; i++) {
        const kopt_kernel_info *k;
        if (c->plan.steps[i].is_memset)
            continue;
        k = kopt_compiled_kernel(out, c->plan.steps[i].kernel);
        if (!CHECK(k != NULL) || !CHECK(k->registers > 0))
            fprintf(stderr, "  %s: kernel %s\n", what, c->plan.steps[i].kernel);
    }
    printf("  compiled %-40s %d kernel(s)%s\n", what, out->nkernels,
           out->cache_hit ? " (cached)" : "");
    kopt_compiled_free(out);
}

static void test_examples_compile(void)
{
    DIR *top;
    struct dirent *e;
    int problems = 0, compiled = 0;

    NEED_NVRTC();
    top = opendir(KOPT_EXAMPLES_DIR);
    if (!CHECK(top != NULL))
        return;
    while ((e = readdir(top))) {
        char dir[1024], json[1100];
        kopt_problem *p = NULL;
        kopt_candidate *c = NULL;
        DIR *sub;
        struct dirent *f;

        if (e->d_name[0] == '.')
            continue;
        snprintf(dir, sizeof(dir), "%s/%s", KOPT_EXAMPLES_DIR, e->d_name);
        snprintf(json, sizeof(json), "%s/problem.json", dir);
        if (!file_exists(json))
            continue;
        problems++;
        if (!CHECK_EQ_INT(kopt_problem_load(&p, ctx, dir), KOPT_OK)) {
            fprintf(stderr, "  %s: %s\n", dir, kopt_errmsg(ctx));
            continue;
        }
        if (CHECK_EQ_INT(kopt_candidate_from_reference(&c, ctx, p), KOPT_OK))
            compile_example(p, c, p->ref_path, &compiled);
        kopt_candidate_free(c);
        sub = opendir(dir);
        while (sub && (f = readdir(sub))) {
            char path[1400];
            if (!ends_with(f->d_name, ".cu"))
                continue;
            snprintf(path, sizeof(path), "%s/%s", dir, f->d_name);
            if (strcmp(path, p->ref_path) == 0)
                continue;
            c = NULL;
            if (CHECK_EQ_INT(kopt_candidate_load(&c, ctx, path, p), KOPT_OK) &&
                c->ntemplate_params == 0)   /* templates: test_tune_templates.c */
                compile_example(p, c, path, &compiled);
            else
                fprintf(stderr, "  %s\n", kopt_errmsg(ctx));
            kopt_candidate_free(c);
        }
        if (sub)
            closedir(sub);
        kopt_problem_free(p);
    }
    closedir(top);
    CHECK(problems >= 1);
    CHECK(compiled >= 2 * problems);
    printf("  %d examples, %d sources compiled\n", problems, compiled);
}

/* ---- regressions: library bugs found by these tests, fixed since ---- */

/* A non-inlined device function's "Function properties" block follows its caller's
 * entry; its stack frame must not replace the entry's. */
static void regression_ptxas_device_function_overwrites_entry_stack(void)
{
    char *log = fixture("nvrtc_sm90a.log");
    kopt_kernel_info k;

    if (!log)
        return;
    set_lowered(&k, "uses_helper");
    kopt_parse_ptxas_report(log, &k, 1);
    CHECK_EQ_INT(k.registers, 40);
    CHECK_EQ_INT(k.stack_frame, 256);
    free(log);
}

/* The same through kopt_compile: the resources it reports for such a kernel. */
static void regression_compile_device_function_stack(void)
{
    const char *src =
        "/*@kopt {\"launches\": [{\"kernel\": \"uses_helper\", \"grid\": [1], \"block\": [32],"
        " \"args\": [\"c\", \"N\"]}]} */\n"
        "__device__ __noinline__ float helper(float *p, int n)\n"
        "{\n"
        "    float loc[64];\n"
        "    for (int i = 0; i < 64; i++) loc[i] = p[i * n];\n"
        "    float s = 0;\n"
        "    for (int i = 0; i < n; i++) s += loc[(i * 13) & 63];\n"
        "    return s;\n"
        "}\n"
        "extern \"C\" __global__ void uses_helper(float *p, int n) { p[threadIdx.x] = helper(p, n); }\n";
    kopt_compiled *c = NULL;

    NEED_NVRTC();
    if (CHECK_EQ_INT(compile_text(&c, "helper.cu", src, NULL, 0), KOPT_OK) &&
        CHECK_EQ_INT(c->nkernels, 1)) {
        CHECK_STR_CONTAINS(c->log, "256 bytes stack frame");
        CHECK_EQ_INT(c->kernels[0].stack_frame, 256);
    }
    kopt_compiled_free(c);
}

/* The runtime kernels the build compiled ahead of time are taken when their source hash is
 * this kopt's; $KOPT_RUNTIME_DIR comes first; a folder with another hash is passed over. */
static void test_prebuilt_runtime(void)
{
    char *dir = ktest_tmpdir("prebuilt"), path[4096], sum[65];
    kopt_compile_opts o = KOPT_COMPILE_OPTS_INIT;
    kopt_compiled *c = NULL;
    FILE *f;

    if (access(KOPT_TEST_RUNTIME_DIR "/source.sha256", R_OK) != 0) {
        printf("  skipped: this build has no prebuilt runtime kernels (no nvcc)\n");
        free(dir);
        return;
    }
    o.arch = "sm_90a";
    o.cache_dir = dir;
    unsetenv("KOPT_RUNTIME_DIR");
    if (CHECK_EQ_INT(kopt_compile_runtime(&c, ctx, &o), KOPT_OK)) {
        CHECK_EQ_STR(c->compiler, "nvcc (prebuilt)");
        CHECK_STR_CONTAINS(c->binary_path, "kopt-runtime/sm_90a.cubin");
        CHECK_EQ_INT(c->cache_hit, 1);
    }
    kopt_compiled_free(c);
    c = NULL;
    /* a folder of our own, with this kopt's hash: first */
    f = fopen(KOPT_TEST_RUNTIME_DIR "/source.sha256", "r");
    CHECK(f && fscanf(f, "%64s", sum) == 1);
    if (f)
        fclose(f);
    free(ktest_write_file(dir, "source.sha256", sum));
    free(ktest_write_file(dir, "sm_90a.cubin", "not really a cubin"));
    snprintf(path, sizeof(path), "%s/sm_90a.cubin", dir);
    setenv("KOPT_RUNTIME_DIR", dir, 1);
    if (CHECK_EQ_INT(kopt_compile_runtime(&c, ctx, &o), KOPT_OK))
        CHECK_EQ_STR(c->binary_path, path);
    kopt_compiled_free(c);
    c = NULL;
    /* another source's cubins: passed over for the build's */
    free(ktest_write_file(dir, "source.sha256",
                          "0000000000000000000000000000000000000000000000000000000000000000"));
    if (CHECK_EQ_INT(kopt_compile_runtime(&c, ctx, &o), KOPT_OK))
        CHECK(strstr(c->binary_path, dir) == NULL);
    kopt_compiled_free(c);
    unsetenv("KOPT_RUNTIME_DIR");
    ktest_rmtree(dir);
    free(dir);
}

/* NVIDIA's pip nvcc keeps cudart in ../lib, with no ../lib64: host mode links with
 * -L<bin>/../lib there (found by path or on $PATH), and adds nothing for a toolkit's layout,
 * a folder without cudart, or an nvcc that is nowhere. */
static void test_nvcc_pip_libs(void)
{
    char *dir = ktest_tmpdir("pipnvcc"), bin[2048], lib[2048], lib64[2048], nvcc[4096], want[4096];
    char *old_path = getenv("PATH") ? strdup(getenv("PATH")) : NULL, *got;

    snprintf(bin, sizeof(bin), "%s/nvidia/cu13/bin", dir);
    snprintf(lib, sizeof(lib), "%s/nvidia/cu13/lib", dir);
    snprintf(lib64, sizeof(lib64), "%s/nvidia/cu13/lib64", dir);
    snprintf(nvcc, sizeof(nvcc), "%s/nvcc", bin);
    snprintf(want, sizeof(want), "-L%s/../lib", bin);
    CHECK(kopt_mkdirs(ctx, bin) == KOPT_OK && kopt_mkdirs(ctx, lib) == KOPT_OK);
    free(ktest_write_file(bin, "nvcc", "#!/bin/sh\n"));
    CHECK(chmod(nvcc, 0755) == 0);
    got = kopt__nvcc_pip_libs(nvcc);       /* no cudart yet */
    CHECK(got == NULL);
    free(got);
    free(ktest_write_file(lib, "libcudart_static.a", "!<arch>\n"));
    got = kopt__nvcc_pip_libs(nvcc);
    if (CHECK(got != NULL))
        CHECK_EQ_STR(got, want);
    free(got);
    setenv("PATH", bin, 1);                /* a bare name, as the spawn finds it */
    got = kopt__nvcc_pip_libs("nvcc");
    if (CHECK(got != NULL))
        CHECK_EQ_STR(got, want);
    free(got);
    CHECK(mkdir(lib64, 0755) == 0);        /* a toolkit's layout: nvcc finds lib64 itself */
    got = kopt__nvcc_pip_libs(nvcc);
    CHECK(got == NULL);
    free(got);
    setenv("PATH", dir, 1);                /* none on PATH: a toolkit's, if any, adds nothing */
    got = kopt__nvcc_pip_libs("nvcc");
    CHECK(got == NULL);
    free(got);
    if (old_path)
        setenv("PATH", old_path, 1);
    free(old_path);
    ktest_rmtree(dir);
    free(dir);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_ptxas_nvrtc_report),
        KTEST(test_nvrtc_builtins_preloaded),
        KTEST(test_ptxas_only_listed_kernels),
        KTEST(test_ptxas_nvcc_layout),
        KTEST(test_ptxas_truncated),
        KTEST(test_ptxas_malformed),
        KTEST(test_ptxas_long_lines),
        KTEST(test_arch_for_cc),
        KTEST(test_compile_and_cache),
        KTEST(test_cache_key_changes),
        KTEST(test_cache_key_follows_headers),
        KTEST(test_syntax_error_is_annotated),
        KTEST(test_missing_kernel),
        KTEST(test_compile_helpers),
        KTEST(test_examples_compile),
        KTEST(test_prebuilt_runtime),
        KTEST(test_nvcc_pip_libs),
        KTEST(regression_ptxas_device_function_overwrites_entry_stack),
        KTEST(regression_compile_device_function_stack),
        KTEST(regression_include_dir_from_threads),
        KTEST(test_concurrent_compiles_share_one),
        KTEST(test_processes_compile_a_host_candidate_once),
    };
    char *ref = NULL;
    int rc = 1;

    /* the include folder's CUDA_HOME path (regression_include_dir_from_threads) */
    if (!getenv("CUDA_HOME") && access("/usr/local/cuda/include", F_OK) == 0)
        setenv("CUDA_HOME", "/usr/local/cuda", 1);
    ctx = kopt_ctx_new();
    tmp = ktest_tmpdir("compile");
    if (!ctx || !tmp)
        return 1;
    cache = kopt_path_join(tmp, "cache");
    ref = ktest_write_file(tmp, "ref.cu", REF_CU);
    if (kopt_problem_parse(&prob, ctx, PROBLEM_JSON, "p.json", tmp) != KOPT_OK) {
        fprintf(stderr, "the test problem does not parse: %s\n", kopt_errmsg(ctx));
    } else {
        /* probe NVRTC: KOPT_E_NO_DEVICE means it could not be loaded */
        kopt_compiled *probe = NULL;
        kopt_status st;
        builtins_at_load = nvrtc_builtins_loaded();   /* before NVRTC's first compile */
        st = compile_text(&probe, "probe.cu", REF_CU, NULL, 0);
        have_nvrtc = st != KOPT_E_NO_DEVICE;
        if (!have_nvrtc)
            printf("skipped: NVRTC not available (%s)\n", kopt_errmsg(ctx));
        kopt_compiled_free(probe);
        /* start the cache empty so the first compile below is a miss */
        ktest_rmtree(cache);
        rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    }
    kopt_problem_free(prob);
    ktest_rmtree(tmp);
    free(ref);
    free(cache);
    free(tmp);
    kopt_ctx_free(ctx);
    return rc;
}
