/* kopt/cute.h: the term splitter, the error summarizer on a recorded nvcc log, CUTLASS
 * discovery (its order and layouts, on fake trees), and the search index on the real
 * headers of the installed nvidia-cutlass package (CI installs it; without it those cases
 * say skipped). */
#include "ktest.h"
#include "kopt/cute.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- terms ------------------------------------------------------------------------------ */

static int has_term(const char *terms, const char *t)
{
    size_t n = strlen(t);
    for (const char *p = terms; (p = strstr(p, t)); p++)
        if ((p == terms || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return 1;
    return 0;
}

static void terms_split_identifiers(void)
{
    char *t = kopt_cute_terms("SM90_64x128x16_F32BF16BF16_SS make_tma_copy TiledMMA");

    CHECK(has_term(t, "sm9064x128x16f32bf16bf16ss"));   /* whole */
    CHECK(has_term(t, "sm90"));
    CHECK(has_term(t, "64x128x16"));
    CHECK(has_term(t, "bf16"));                          /* F32|BF16|BF16 */
    CHECK(has_term(t, "f32"));
    CHECK(has_term(t, "maketmacopy"));
    CHECK(has_term(t, "tmacopy"));                       /* adjacent pair */
    CHECK(has_term(t, "tiledmma"));
    CHECK(has_term(t, "tiled"));
    CHECK(has_term(t, "mma"));
    CHECK(has_term(t, "ss"));   /* two letters are kept */
    free(t);
    t = kopt_cute_terms("the TMA load, with 4096 and the copy");
    CHECK(has_term(t, "tma"));
    CHECK(!has_term(t, "the"));   /* stop word */
    CHECK(!has_term(t, "4096"));  /* plain numbers are not terms */
    free(t);
}

static void cutlass_used_only_in_includes(void)
{
    CHECK(kopt_cutlass_used("#include <cute/tensor.hpp>\n"));
    CHECK(kopt_cutlass_used("  #  include \"cutlass/numeric_types.h\"\n"));
    CHECK(!kopt_cutlass_used("// see <cute/tensor.hpp> for the layout algebra\n"));
    CHECK(!kopt_cutlass_used("__global__ void k() {}\n"));
}

/* ---- the error summarizer ---------------------------------------------------------------- */

static void summarize_recorded_nvcc_log(void)
{
    char *log = ktest_read_file(KOPT_TEST_DATA_DIR "/cute/broken_cute.nvcc.log"), *s;

    CHECK(log != NULL);
    if (!log)
        return;
    s = kopt_cute_summarize_errors(log);
    printf("  summary (%zu of %zu characters):\n%s", strlen(s), strlen(log), s);
    CHECK_STR_CONTAINS(s, "first error: cute/algorithm/gemm.hpp:408: static assertion failed");
    CHECK_STR_CONTAINS(s, "static_assert(decltype(size<2>(A) == size<2>(B))::value);");
    CHECK_STR_CONTAINS(s, "while instantiating: void cute::gemm(");
    CHECK_STR_CONTAINS(s, "MMA=cute::SM80_16x8x16_F32BF16BF16F32_TN");
    CHECK_STR_CONTAINS(s, "from the candidate: broken_cute.cu:25");
    CHECK_STR_CONTAINS(s, "1 error in a log");
    CHECK(strstr(s, "/site-packages/") == NULL);   /* header paths shortened */
    CHECK(strlen(s) < 1500);
    free(s);
    free(log);
    s = kopt_cute_summarize_errors("ptxas info: Used 32 registers\n");
    CHECK_EQ_STR(s, "");
    free(s);
    s = kopt_cute_summarize_errors("k.cu(7): error: identifier \"x\" is undefined\n  x = 1;\n"
                                   "  ^\n\n2 errors detected\nk.cu(9): error: more\n");
    CHECK_STR_CONTAINS(s, "first error: k.cu:7: identifier \"x\" is undefined");
    CHECK_STR_CONTAINS(s, "in the candidate's own code");
    CHECK_STR_CONTAINS(s, "2 errors");
    free(s);
}

/* ---- discovery --------------------------------------------------------------------------- */

static char *fake_tree(const char *root, const char *sub, int minor)
{
    kopt_ctx *ctx = kopt_ctx_new();
    char *inc = kopt_path_join(root, sub), *dir = kopt_path_join(inc, "cutlass"), text[256], *p;

    kopt_mkdirs(ctx, dir);
    snprintf(text, sizeof(text), "#pragma once\n#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR %d\n"
             "#define CUTLASS_PATCH 1 \n", minor);
    p = ktest_write_file(dir, "version.h", text);
    free(p);
    free(dir);
    kopt_ctx_free(ctx);
    return inc;
}

static void discovery_order_and_layouts(void)
{
    char *tmp = ktest_tmpdir("cute");
    char *a = kopt_path_join(tmp, "a"), *b = kopt_path_join(tmp, "b"), *c = kopt_path_join(tmp, "c");
    char *ia = fake_tree(a, "include", 1);                          /* a checkout */
    char *ib = fake_tree(b, "cutlass_library/source/include", 2);   /* an unpacked wheel */
    char *ic = fake_tree(c, "cutlass_library/source/include", 3);   /* "the package" */
    char *py = NULL, script[1024];
    kopt_ctx *ctx = kopt_ctx_new();
    kopt_cutlass cl;
    const char *old = getenv("CUTLASS_PATH"), *oldpy = getenv("KOPT_PYTHON");
    char *save = old ? strdup(old) : NULL, *savepy = oldpy ? strdup(oldpy) : NULL;

    /* a python3 that reports package c */
    snprintf(script, sizeof(script), "#!/bin/sh\necho %s/cutlass_library\n", c);
    py = ktest_write_file(tmp, "python3", script);
    chmod(py, 0755);
    setenv("KOPT_PYTHON", py, 1);

    setenv("CUTLASS_PATH", b, 1);
    CHECK_EQ_INT(kopt_cutlass_find(&cl, ctx, a), KOPT_OK);   /* --cutlass first */
    CHECK_EQ_STR(cl.version, "4.1.1");
    CHECK_EQ_STR(cl.source, "--cutlass");
    CHECK(strstr(cl.include_dir, "/a/include") != NULL);
    CHECK_EQ_INT(kopt_cutlass_find(&cl, ctx, NULL), KOPT_OK);   /* then the environment */
    CHECK_EQ_STR(cl.version, "4.2.1");
    CHECK_EQ_STR(cl.source, "CUTLASS_PATH");
    CHECK(strstr(cl.include_dir, "/b/cutlass_library/source/include") != NULL);
    unsetenv("CUTLASS_PATH");
    CHECK_EQ_INT(kopt_cutlass_find(&cl, ctx, NULL), KOPT_OK);   /* then the package */
    CHECK_EQ_STR(cl.version, "4.3.1");
    CHECK_EQ_STR(cl.source, "python package");
    CHECK_EQ_INT(kopt_cutlass_find(&cl, ctx, ia), KOPT_OK);     /* the include folder itself */
    CHECK_EQ_STR(cl.version, "4.1.1");
    CHECK_EQ_INT(kopt_cutlass_find(&cl, ctx, tmp), KOPT_E_NOT_FOUND);   /* explicit: no fallback */
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "--cutlass");
    setenv("KOPT_PYTHON", "/nonexistent/python3", 1);
    CHECK_EQ_INT(kopt_cutlass_find(&cl, ctx, NULL), KOPT_E_NOT_FOUND);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "pip install nvidia-cutlass");

    if (save) setenv("CUTLASS_PATH", save, 1); else unsetenv("CUTLASS_PATH");
    if (savepy) setenv("KOPT_PYTHON", savepy, 1); else unsetenv("KOPT_PYTHON");
    ktest_rmtree(tmp);
    free(save), free(savepy), free(py), free(ia), free(ib), free(ic), free(a), free(b), free(c);
    free(tmp);
    kopt_ctx_free(ctx);
}

/* ---- the index on the real headers ------------------------------------------------------- */

static void search_ranks_expected_files(void)
{
    static const struct { const char *query, *file; } cases[] = {
        {"SM90_64x128x16_F32BF16BF16_SS", "include/cute/arch/mma_sm90_gmma.hpp"},
        {"SM90_64x128x16_F32BF16BF16_SS", "include/cute/atom/mma_traits_sm90_gmma.hpp"},
        {"make_tma_copy", "include/cute/atom/copy_traits_sm90_tma.hpp"},
        {"TiledMMA", "include/cute/atom/mma_atom.hpp"},
        {"TMA load multicast", "include/cute/atom/copy_traits_sm90_tma.hpp"},
        {"warpgroup mma bf16", "include/cute/arch/mma_sm90_gmma.hpp"},
        {"PipelineTmaAsync", "include/cutlass/pipeline/sm90_pipeline.hpp"},
        {"ClusterTransactionBarrier", "include/cutlass/arch/barrier.h"},
        {"make_gmma_desc", "include/cute/atom/mma_traits_sm90_gmma.hpp"},
        {"GMMA::Layout_K_SW128_Atom", "include/cute/atom/mma_traits_sm90_gmma.hpp"},
        {"local_tile", "include/cute/tensor_impl.hpp"},
        {"cp.async wait group", "include/cute/arch/copy_sm80.hpp"},
        {"warpgroup_arrive", "include/cute/arch/mma_sm90_gmma.hpp"},
        {"tma_partition", "include/cute/atom/copy_traits_sm90_tma.hpp"},
        {"make_tiled_copy", "include/cute/atom/copy_atom.hpp"},
        {"elect one sync", "include/cute/arch/cluster_sm90.hpp"},
    };
    kopt_ctx *ctx = kopt_ctx_new();
    kopt_cutlass cl;
    kopt_cute_index *ix = NULL;
    kopt_cute_index_opts io = KOPT_CUTE_INDEX_OPTS_INIT;
    kopt_cute_search_opts so = KOPT_CUTE_SEARCH_OPTS_INIT;
    kopt_cute_index_info info;
    char *tmp = ktest_tmpdir("cute-index");
    double worst = 0, total = 0;

    if (kopt_cutlass_find(&cl, ctx, NULL) != KOPT_OK) {
        KTEST_SKIP(kopt_errmsg(ctx));
        goto done;
    }
    io.cache_dir = tmp;
    CHECK_EQ_INT(kopt_cute_index_open(&ix, ctx, &cl, &io), KOPT_OK);
    if (!ix)
        goto done;
    kopt_cute_index_get_info(ix, &info);
    printf("  CUTLASS %s: %d files, %d chunks, built in %.0f ms\n", info.version, info.files,
           info.chunks, info.build_ms);
    CHECK(info.built);
    CHECK(info.files > 700);
    so.limit = 3;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        kopt_cute_hits *h = NULL;
        int found = 0;
        CHECK_EQ_INT(kopt_cute_search(&h, ctx, ix, cases[i].query, &so), KOPT_OK);
        if (!h)
            continue;
        for (int k = 0; k < h->n; k++)
            found |= strcmp(h->hits[k].file, cases[i].file) == 0;
        printf("  %-32s %6.1f ms  %s%s\n", cases[i].query, h->query_ms,
               h->n ? h->hits[0].file : "(none)", found ? "" : "  <- expected file not in top 3");
        if (!found)
            KTEST_FAIL("'%s': %s not in the top 3", cases[i].query, cases[i].file);
        CHECK(h->n == 0 || (h->hits[0].line_start >= 1 &&
                            h->hits[0].line_end >= h->hits[0].line_start &&
                            strlen(h->hits[0].snippet) <= 1200));
        total += h->query_ms;
        worst = h->query_ms > worst ? h->query_ms : worst;
        kopt_cute_hits_free(h);
    }
    /* timing is a benchmark's business (a loaded CI machine must not fail this test):
     * reported here; only an index that is not used at all (seconds a query) fails */
    printf("  query time: mean %.1f ms, worst %.1f ms (goal: under 50 ms)\n",
           total / (double)(sizeof(cases) / sizeof(cases[0])), worst);
    CHECK(worst < 2000);
    /* a second open reuses the file */
    kopt_cute_index_free(ix);
    ix = NULL;
    CHECK_EQ_INT(kopt_cute_index_open(&ix, ctx, &cl, &io), KOPT_OK);
    if (ix) {
        kopt_cute_hits *h = NULL;
        kopt_cute_index_get_info(ix, &info);
        CHECK(!info.built);
        CHECK_EQ_INT(kopt_cute_search(&h, ctx, ix, "!!", &so), KOPT_E_INVALID);
        CHECK_EQ_INT(kopt_cute_search(&h, ctx, ix, "zzqqxxnotaword", &so), KOPT_OK);
        CHECK(h && h->n == 0);
        kopt_cute_hits_free(h);
    }
done:
    kopt_cute_index_free(ix);
    ktest_rmtree(tmp);
    free(tmp);
    kopt_ctx_free(ctx);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(terms_split_identifiers),
        KTEST(cutlass_used_only_in_includes),
        KTEST(summarize_recorded_nvcc_log),
        KTEST(discovery_order_and_layouts),
        KTEST(search_ranks_expected_files),
    };
    return ktest_main(argc, argv, cases, KTEST_COUNT(cases));
}
