/*
 * Unit tests of the examples' tunable templates (examples/<p>/tune.cu) and of the live
 * evaluator (src/tune/live.c), without a GPU.
 *
 * Templates: each loads as a template that `kopt eval` refuses; its space at the
 * problem's sizes has 100..100,000 valid points; every point valid there is valid and
 * binds at the problem's check_sizes too (kopt_eval_run verifies there); a few points
 * (first, last and random valid ones) compile with NVRTC.
 * Live evaluator, on a tiny problem written here: a compile error becomes a COMPILE_ERROR
 * outcome with the compiler's first error line (also when prepare met it first); spills
 * and registers x threads beyond an SM become RESOURCES; a good point reaches
 * kopt_eval_run, whose verdict maps to OK (with a GPU) or to FAILED/SKIPPED (without one,
 * as here); concurrent prepares of one point leave a sound compile cache.
 */
#include "ktest.h"

#include "kopt/compile.h"
#include "kopt/eval.h"
#include "kopt/tune.h"

#include <dirent.h>
#include <pthread.h>

static kopt_ctx *ctx;
static char *tmp;
static char *cache;
static int have_nvrtc;

#define NEED_NVRTC()                                                          \
    do {                                                                      \
        if (!have_nvrtc) {                                                    \
            KTEST_SKIP("NVRTC not available");                                \
            return;                                                           \
        }                                                                     \
    } while (0)

/* H100/H200 limits (what kopt_tune_limits_from_device gives there). */
static const kopt_tune_limits h200 = {1024, 232448, 65536, 2048, 16};

/* ---- the examples' templates ------------------------------------------------------------ */

static kopt_status compile_point(const kopt_tune_space *s, const kopt_candidate *tmpl,
                                 uint64_t point, int *regs, int *spills)
{
    kopt_vars vals = KOPT_VARS_INIT;
    kopt_candidate *c = NULL;
    kopt_compiled *comp = NULL;
    kopt_compile_opts co = KOPT_COMPILE_OPTS_INIT;
    kopt_status rc;

    co.arch = "sm_90a";
    co.cache_dir = cache;
    *regs = *spills = 0;
    if ((rc = kopt_tune_space_values(s, point, &vals)) == KOPT_OK &&
        (rc = kopt_candidate_instantiate(&c, ctx, tmpl, &vals)) == KOPT_OK &&
        (rc = kopt_compile(&comp, ctx, c, &co)) == KOPT_OK) {
        for (int i = 0; i < comp->nkernels; i++) {
            if (comp->kernels[i].registers > *regs)
                *regs = comp->kernels[i].registers;
            *spills += comp->kernels[i].spill_stores + comp->kernels[i].spill_loads;
        }
        if (comp->nkernels < 1)
            rc = KOPT_E_ERROR;
    }
    kopt_compiled_free(comp);
    kopt_candidate_free(c);
    kopt_vars_free(&vals);
    return rc;
}

/* Instantiate `point` and bind it at `sizes`. */
static kopt_status bind_point(const kopt_problem *p, const kopt_candidate *tmpl,
                              const kopt_tune_space *s, uint64_t point, const kopt_vars *sizes)
{
    kopt_vars vals = KOPT_VARS_INIT;
    kopt_candidate *c = NULL;
    kopt_bound *b = NULL;
    kopt_status rc;

    if ((rc = kopt_tune_space_values(s, point, &vals)) == KOPT_OK &&
        (rc = kopt_candidate_instantiate(&c, ctx, tmpl, &vals)) == KOPT_OK)
        rc = kopt_bind(&b, ctx, p, c, sizes);
    kopt_bound_free(b);
    kopt_candidate_free(c);
    kopt_vars_free(&vals);
    return rc;
}

static void check_template(const char *name)
{
    char dir[1024], path[1100];
    kopt_problem *p = NULL;
    kopt_candidate *t = NULL;
    kopt_vars main_sizes = KOPT_VARS_INIT, check_sizes = KOPT_VARS_INIT;
    kopt_tune_space *sm = NULL, *sc = NULL;
    kopt_eval_result *r = NULL;
    kopt_eval_opts eo = KOPT_EVAL_OPTS_INIT;
    uint64_t nvalid = 0, first = 0, last = 0, random_pt = 0, nbound = 0;
    int exact = 0, bad_check = 0, bad_bind = 0;
    kopt_rng rng;

    snprintf(dir, sizeof(dir), "%s/%s", KOPT_EXAMPLES_DIR, name);
    snprintf(path, sizeof(path), "%s/tune.cu", dir);
    if (!CHECK_EQ_INT(kopt_problem_load(&p, ctx, dir), KOPT_OK) ||
        !CHECK_EQ_INT(kopt_candidate_load(&t, ctx, path, p), KOPT_OK)) {
        fprintf(stderr, "  %s: %s\n", name, kopt_errmsg(ctx));
        goto cleanup;
    }
    CHECK(t->ntemplate_params >= 3);

    /* `kopt eval` refuses a template, saying to tune it */
    eo.cache_dir = cache;
    CHECK_EQ_INT(kopt_eval_run(&r, ctx, p, t, &eo), KOPT_E_INVALID);
    CHECK(r == NULL);
    CHECK(strstr(kopt_errmsg(ctx), "template") != NULL);
    CHECK(strstr(kopt_errmsg(ctx), "kopt tune") != NULL);

    CHECK(p->has_check_sizes);
    if (!CHECK_EQ_INT(kopt_sizes_resolve(&main_sizes, ctx, p, NULL), KOPT_OK) ||
        !CHECK_EQ_INT(kopt_sizes_resolve(&check_sizes, ctx, p, &p->check_sizes), KOPT_OK) ||
        !CHECK_EQ_INT(kopt_tune_space_create(&sm, ctx, t, &main_sizes, &h200), KOPT_OK) ||
        !CHECK_EQ_INT(kopt_tune_space_create(&sc, ctx, t, &check_sizes, &h200), KOPT_OK)) {
        fprintf(stderr, "  %s: %s\n", name, kopt_errmsg(ctx));
        goto cleanup;
    }
    nvalid = kopt_tune_space_count_valid(sm, 0, &exact);
    CHECK(exact);
    CHECK(nvalid >= 100);
    CHECK(nvalid <= 100000);
    CHECK_EQ_INT((long long)sc->npoints, (long long)sm->npoints);

    /* every configuration tuned at the main sizes is verified at the check sizes too */
    for (uint64_t pt = 0; pt < sm->npoints; pt++) {
        if (!kopt_tune_space_valid(sm, pt, NULL, 0))
            continue;
        if (nbound == 0)
            first = pt;
        last = pt;
        if (!kopt_tune_space_valid(sc, pt, NULL, 0))
            bad_check++;
        if (bind_point(p, t, sm, pt, &main_sizes) != KOPT_OK ||
            bind_point(p, t, sc, pt, &check_sizes) != KOPT_OK) {
            if (!bad_bind)
                fprintf(stderr, "  %s point %llu: %s\n", name, (unsigned long long)pt,
                        kopt_errmsg(ctx));
            bad_bind++;
        }
        nbound++;
    }
    CHECK_EQ_INT(bad_check, 0);
    CHECK_EQ_INT(bad_bind, 0);
    CHECK_EQ_INT((long long)nbound, (long long)nvalid);
    printf("  %-10s %llu points, %llu valid at the main sizes\n", name,
           (unsigned long long)sm->npoints, (unsigned long long)nvalid);

    /* a few points compile */
    if (have_nvrtc && nvalid > 0) {
        const uint64_t pts[3] = {first, last, 0};
        kopt_rng_seed(&rng, 42);
        CHECK_EQ_INT(kopt_tune_space_random_valid(sm, &rng, &random_pt), 0);
        for (int i = 0; i < 3; i++) {
            uint64_t pt = i == 2 ? random_pt : pts[i];
            char *label = kopt_tune_space_label(sm, pt);
            int regs = 0, spills = 0;
            kopt_status rc = compile_point(sm, t, pt, &regs, &spills);
            if (!CHECK_EQ_INT(rc, KOPT_OK))
                fprintf(stderr, "  %s %s: %s\n%s\n", name, label, kopt_errmsg(ctx),
                        kopt_errdetail(ctx));
            else
                printf("    %s: %d registers, %d B spilled\n", label, regs, spills);
            CHECK(regs > 0 || rc != KOPT_OK);
            free(label);
        }
    }
cleanup:
    kopt_eval_result_free(r);
    kopt_tune_space_free(sm);
    kopt_tune_space_free(sc);
    kopt_vars_free(&main_sizes);
    kopt_vars_free(&check_sizes);
    kopt_candidate_free(t);
    kopt_problem_free(p);
}

static void test_template_softmax(void) { check_template("softmax"); }
static void test_template_layernorm(void) { check_template("layernorm"); }
static void test_template_reduce_sum(void) { check_template("reduce_sum"); }
static void test_template_transpose(void) { check_template("transpose"); }
static void test_template_sgemm(void) { check_template("sgemm"); }

/* ---- the live evaluator, on a tiny problem ---------------------------------------------- */

static const char *const TINY_JSON =
    "{\"name\": \"tiny_scale\", \"sizes\": {\"N\": 4194304},\n"
    " \"tensors\": [\n"
    "  {\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"input\"},\n"
    "  {\"name\": \"y\", \"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"output\"}],\n"
    " \"reference\": {\"source\": \"reference.cu\", \"launches\": [{\"kernel\": \"scale_ref\",\n"
    "   \"grid\": [\"cdiv(N, 128)\"], \"block\": [128], \"args\": [\"x\", \"y\", \"N\"]}]}}\n";

static const char *const TINY_REF =
    "extern \"C\" __global__ void scale_ref(const float *x, float *y, int n)\n"
    "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.f * x[i]; }\n";

/* MODE 0: fine; 1: a compile error; 2: spills (launch bounds cap it at 32 registers);
 * 3: about 80 registers, too many for 1024-thread blocks. */
static const char *const TINY_TEMPLATE =
    "/*@kopt\n"
    "{\"launches\": [{\"kernel\": \"scale\", \"grid\": [\"cdiv(N, BLOCK)\"], \"block\": [\"BLOCK\"],\n"
    "                \"args\": [\"x\", \"y\", \"N\"]}],\n"
    " \"params\": {\"MODE\": [0, 1, 2, 3], \"BLOCK\": [256, 1024]}}\n"
    "*/\n"
    "#if MODE == 1\n"
    "this is not C++ (a deliberate compile error);\n"
    "#endif\n"
    "#if MODE == 2\n"
    "#define BOUNDS __launch_bounds__(1024, 2)\n"
    "#else\n"
    "#define BOUNDS\n"
    "#endif\n"
    "extern \"C\" __global__ void BOUNDS scale(const float *x, float *y, int n)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= n) return;\n"
    "#if MODE >= 2\n"
    "    float acc[64];\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < 64; ++j) acc[j] = x[(i + j * 97) % n];\n"
    "    float s = 0.f;\n"
    "#pragma unroll\n"
    "    for (int r = 0; r < 8; ++r)\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < 64; ++j) acc[j] = acc[j] * acc[(j + r + 1) & 63] + 1.f;\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < 64; ++j) s += acc[j];\n"
    "    y[i] = 2.f * x[i] + 0.f * s;\n"
    "#else\n"
    "    y[i] = 2.f * x[i];\n"
    "#endif\n"
    "}\n";

typedef struct tiny {
    kopt_problem *prob;
    kopt_candidate *tmpl;
    kopt_tune_space *space;
    kopt_eval_opts eo;
    kopt_tune_evaluator *ev;
    char cache_dir[1100];
} tiny;

static int tiny_open(tiny *t, const char *cache_sub, int allow_spills)
{
    char dir[1024];
    kopt_vars sizes = KOPT_VARS_INIT;
    kopt_tune_live_opts lo = KOPT_TUNE_LIVE_OPTS_INIT;
    kopt_eval_opts eo = KOPT_EVAL_OPTS_INIT;
    int ok;

    memset(t, 0, sizeof(*t));
    snprintf(dir, sizeof(dir), "%s/tiny", tmp);
    snprintf(t->cache_dir, sizeof(t->cache_dir), "%s/%s", cache, cache_sub);
    mkdir(dir, 0755);
    free(ktest_write_file(dir, "reference.cu", TINY_REF));
    eo.cache_dir = t->cache_dir;
    eo.trials = 1;
    eo.budget_ms = 5;
    eo.min_reps = 3;
    t->eo = eo;
    lo.eval = &t->eo;
    lo.allow_spills = allow_spills;
    ok = CHECK_EQ_INT(kopt_problem_parse(&t->prob, ctx, TINY_JSON, "tiny/problem.json", dir),
                      KOPT_OK) &&
         CHECK_EQ_INT(kopt_candidate_parse(&t->tmpl, ctx, TINY_TEMPLATE, "tiny/tune.cu",
                                           t->prob), KOPT_OK) &&
         CHECK_EQ_INT(kopt_sizes_resolve(&sizes, ctx, t->prob, NULL), KOPT_OK) &&
         CHECK_EQ_INT(kopt_tune_space_create(&t->space, ctx, t->tmpl, &sizes, &h200), KOPT_OK) &&
         CHECK_EQ_INT(kopt_tune_evaluator_live(&t->ev, ctx, t->prob, t->tmpl, t->space, &lo),
                      KOPT_OK);
    if (!ok)
        fprintf(stderr, "  tiny: %s\n", kopt_errmsg(ctx));
    kopt_vars_free(&sizes);
    return ok;
}

static void tiny_close(tiny *t)
{
    kopt_tune_evaluator_free(t->ev);
    kopt_tune_space_free(t->space);
    kopt_candidate_free(t->tmpl);
    kopt_problem_free(t->prob);
}

static uint64_t tiny_point(const tiny *t, int mode, int block)
{
    kopt_vars v = KOPT_VARS_INIT;
    uint64_t pt = UINT64_MAX;

    kopt_vars_set(&v, "MODE", mode);
    kopt_vars_set(&v, "BLOCK", block);
    CHECK_EQ_INT(kopt_tune_space_find(t->space, ctx, &v, &pt), KOPT_OK);
    kopt_vars_free(&v);
    return pt;
}

static void test_live_compile_error(void)
{
    tiny t;
    kopt_tune_outcome o;

    NEED_NVRTC();
    if (!tiny_open(&t, "compile_error", 0))
        goto cleanup;
    if (!CHECK_EQ_INT(t.ev->evaluate(t.ev->user, ctx, tiny_point(&t, 1, 256), 0, &o), KOPT_OK))
        goto cleanup;
    CHECK_EQ_STR(kopt_tune_state_name(o.state), kopt_tune_state_name(KOPT_TUNE_COMPILE_ERROR));
    CHECK_EQ_STR(o.verdict, "COMPILE_ERROR");
    CHECK(strstr(o.message, "error") != NULL);
    CHECK(strchr(o.message, '\n') == NULL);
    CHECK(o.compile_ms > 0);
    CHECK(o.time_ms == 0);
    printf("  compile error: %s\n", o.message);

    /* prepare meets it first (as the driver's compile threads do): same outcome */
    CHECK_EQ_INT(t.ev->prepare(t.ev->user, ctx, tiny_point(&t, 1, 1024)), KOPT_OK);
    if (CHECK_EQ_INT(t.ev->evaluate(t.ev->user, ctx, tiny_point(&t, 1, 1024), 0, &o), KOPT_OK)) {
        CHECK_EQ_INT(o.state, KOPT_TUNE_COMPILE_ERROR);
        CHECK(strstr(o.message, "error") != NULL);
    }
cleanup:
    tiny_close(&t);
}

static void test_live_spills(void)
{
    tiny t;
    kopt_tune_outcome o;

    NEED_NVRTC();
    if (!tiny_open(&t, "spills", 0))
        goto cleanup;
    if (CHECK_EQ_INT(t.ev->evaluate(t.ev->user, ctx, tiny_point(&t, 2, 1024), 0, &o), KOPT_OK)) {
        CHECK_EQ_INT(o.state, KOPT_TUNE_RESOURCES);
        CHECK(o.spill_bytes > 0);
        CHECK(o.registers > 0 && o.registers <= 32);
        CHECK(strstr(o.message, "spills") != NULL);
        CHECK(o.eval_ms == 0);       /* never reached the GPU */
        printf("  resources: %s\n", o.message);
    }
    /* too many registers for a 1024-thread block: 80 x 1024 > 65536 */
    if (CHECK_EQ_INT(t.ev->evaluate(t.ev->user, ctx, tiny_point(&t, 3, 1024), 0, &o), KOPT_OK)) {
        CHECK_EQ_INT(o.state, KOPT_TUNE_RESOURCES);
        CHECK(o.registers * 1024 > 65536);
        CHECK_EQ_INT(o.spill_bytes, 0);
        CHECK(strstr(o.message, "registers") != NULL);
        printf("  resources: %s\n", o.message);
    }
    /* the same kernel in 256-thread blocks fits */
    if (CHECK_EQ_INT(t.ev->evaluate(t.ev->user, ctx, tiny_point(&t, 3, 256), 0, &o), KOPT_OK))
        CHECK(o.state != KOPT_TUNE_RESOURCES);
cleanup:
    tiny_close(&t);

    /* allow_spills keeps the spilling configuration */
    if (tiny_open(&t, "spills", 1) &&
        CHECK_EQ_INT(t.ev->evaluate(t.ev->user, ctx, tiny_point(&t, 2, 1024), 0, &o), KOPT_OK)) {
        CHECK(o.state != KOPT_TUNE_RESOURCES);
        CHECK(o.spill_bytes > 0);
    }
    tiny_close(&t);
}

/* A good point reaches kopt_eval_run: OK with a time on a GPU; without one the verdict is
 * SKIPPED, which the tuner must not mistake for a result: FAILED with the reason. */
static void test_live_good_point(void)
{
    tiny t;
    kopt_tune_outcome o;

    NEED_NVRTC();
    if (!tiny_open(&t, "good", 0))
        goto cleanup;
    CHECK_EQ_INT(t.ev->prepare(t.ev->user, ctx, tiny_point(&t, 0, 256)), KOPT_OK);
    if (!CHECK_EQ_INT(t.ev->evaluate(t.ev->user, ctx, tiny_point(&t, 0, 256), 1, &o), KOPT_OK)) {
        fprintf(stderr, "  %s\n", kopt_errmsg(ctx));
        goto cleanup;
    }
    CHECK(o.registers > 0);
    CHECK_EQ_INT(o.spill_bytes, 0);
    CHECK(o.compile_ms > 0);          /* spent in prepare, reported by evaluate */
    CHECK(o.eval_ms > 0);
    CHECK(o.nfindings >= 0 && o.nfindings <= KOPT_TUNE_MAX_FINDINGS);
    for (int i = 0; i < o.nfindings; i++)
        CHECK(o.findings[i].tool[0] != '\0' && o.findings[i].gain >= 0);
    if (strcmp(o.verdict, "OK") == 0) {
        printf("  GPU: %.4f ms\n", o.time_ms);
        CHECK_EQ_INT(o.state, KOPT_TUNE_OK);
        CHECK(o.time_ms > 0);
    } else {
        printf("  no GPU: %s: %s\n", o.verdict, o.message);
        CHECK_EQ_STR(o.verdict, "SKIPPED");
        CHECK_EQ_INT(o.state, KOPT_TUNE_FAILED);
        CHECK(o.time_ms == 0);
        CHECK(strstr(o.message, "GPU") != NULL);
        CHECK(strchr(o.message, '\n') == NULL);
    }
cleanup:
    tiny_close(&t);
}

/* Several compile threads preparing the same point must not corrupt the compile cache. */
typedef struct prep_arg {
    tiny *t;
    uint64_t point;
    kopt_status rc;
} prep_arg;

static void *prep_thread(void *p)
{
    prep_arg *a = p;
    kopt_ctx *c = kopt_ctx_new();
    a->rc = a->t->ev->prepare(a->t->ev->user, c, a->point);
    kopt_ctx_free(c);
    return NULL;
}

/* The template's cubins (their cache entry names kernel "scale", not the reference's
 * "scale_ref", whose compile may land in the cache at any time with a GPU here) and temp
 * files in the compile cache of a tiny run. */
static void count_cache(const tiny *t, int *cubins, int *temps)
{
    char sub[1200];
    DIR *d;
    struct dirent *e;

    *cubins = *temps = 0;
    snprintf(sub, sizeof(sub), "%s/compile", t->cache_dir);
    d = opendir(sub);
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        *temps += strstr(e->d_name, ".tmp") != NULL;
        if (n > 6 && strcmp(e->d_name + n - 6, ".cubin") == 0) {
            char meta[1600], *text;
            snprintf(meta, sizeof(meta), "%s/%.*s.json", sub, (int)(n - 6), e->d_name);
            if ((text = ktest_read_file(meta)) && strstr(text, "\"scale\"")) {
                (*cubins)++;
                if (getenv("KTEST_LIST_CUBINS")) {
                    char *k = strstr(text, "\"kernels\"");
                    printf("  cubin %.16s: %.200s\n", e->d_name, k ? k : text);
                }
            }
            free(text);
        }
    }
    if (d)
        closedir(d);
}

static void test_live_parallel_prepare(void)
{
    tiny t;
    pthread_t th[4];
    prep_arg args[4];
    int before = 0, cubins = 0, temps = 0;
    kopt_tune_outcome o;

    NEED_NVRTC();
    if (!tiny_open(&t, "parallel", 0))
        goto cleanup;
    /* count only the template's cubins: the reference's compile (with a GPU) may land at
       any time. (A 4th cubin of the template, seen under load, was one configuration
       compiled under two cache keys: a torn -I option, fixed in src/cuda/loader.c;
       KTEST_LIST_CUBINS=1 lists what is counted.) */
    count_cache(&t, &before, &temps);
    printf("  %d cubin(s) of the template in the cache before the points\n", before);
    for (int round = 0; round < 3; round++) {
        uint64_t pt = tiny_point(&t, round == 2 ? 3 : 0, round == 1 ? 1024 : 256);
        for (int i = 0; i < 4; i++) {
            args[i].t = &t;
            args[i].point = pt;
            args[i].rc = KOPT_E_ERROR;
            pthread_create(&th[i], NULL, prep_thread, &args[i]);
        }
        for (int i = 0; i < 4; i++) {
            pthread_join(th[i], NULL);
            CHECK_EQ_INT(args[i].rc, KOPT_OK);
        }
    }
    count_cache(&t, &cubins, &temps);
    CHECK_EQ_INT(temps, 0);
    CHECK_EQ_INT(cubins - before, 3);
    /* the cached entry is sound: evaluating it compiles nothing */
    if (CHECK_EQ_INT(t.ev->evaluate(t.ev->user, ctx, tiny_point(&t, 0, 256), 0, &o), KOPT_OK))
        CHECK(o.state != KOPT_TUNE_COMPILE_ERROR && o.registers > 0);
cleanup:
    tiny_close(&t);
}

/* The compile cache writes through kopt_file_write (temp file + rename). Threads of one
 * process writing the same path at once (compile workers preparing one point) must each
 * succeed, and the file must end up as exactly one writer's whole content. */
typedef struct writer_arg {
    const char *path;
    char fill;
    int failures;
} writer_arg;

enum { WRITE_BYTES = 1 << 18, WRITES = 150 };

static void *writer_thread(void *p)
{
    writer_arg *a = p;
    char *buf = malloc(WRITE_BYTES);
    kopt_ctx *c = kopt_ctx_new();

    memset(buf, a->fill, WRITE_BYTES);
    for (int i = 0; i < WRITES; i++)
        a->failures += kopt_file_write(c, a->path, buf, WRITE_BYTES) != KOPT_OK;
    kopt_ctx_free(c);
    free(buf);
    return NULL;
}

static void test_file_write_threads(void)
{
    pthread_t th[4];
    writer_arg args[4];
    char *path = kopt_path_join(tmp, "shared.bin"), *text = NULL;
    size_t len = 0;
    int same = 1;

    for (int i = 0; i < 4; i++) {
        args[i].path = path;
        args[i].fill = (char)('a' + i);
        args[i].failures = 0;
        pthread_create(&th[i], NULL, writer_thread, &args[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(args[i].failures, 0);
    }
    if (CHECK_EQ_INT(kopt_file_read(ctx, path, &text, &len), KOPT_OK)) {
        CHECK_EQ_INT((long long)len, WRITE_BYTES);
        for (size_t i = 1; i < len; i++)
            same &= text[i] == text[0];
        CHECK(same);
    }
    free(text);
    free(path);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_template_softmax),   KTEST(test_template_layernorm),
        KTEST(test_template_reduce_sum), KTEST(test_template_transpose),
        KTEST(test_template_sgemm),     KTEST(test_live_compile_error),
        KTEST(test_live_spills),        KTEST(test_live_good_point),
        KTEST(test_live_parallel_prepare), KTEST(test_file_write_threads),
    };
    int rc;

    ctx = kopt_ctx_new();
    tmp = ktest_tmpdir("tune_templates");
    cache = kopt_path_join(tmp, "cache");
    {
        /* probe NVRTC: the reference of a tiny problem compiles */
        kopt_compiled *probe = NULL;
        kopt_candidate *c = NULL;
        kopt_problem *p = NULL;
        kopt_compile_opts co = KOPT_COMPILE_OPTS_INIT;
        char dir[1024];
        snprintf(dir, sizeof(dir), "%s/tiny", tmp);
        mkdir(dir, 0755);
        free(ktest_write_file(dir, "reference.cu", TINY_REF));
        co.cache_dir = cache;
        if (kopt_problem_parse(&p, ctx, TINY_JSON, "tiny/problem.json", dir) == KOPT_OK &&
            kopt_candidate_from_reference(&c, ctx, p) == KOPT_OK)
            have_nvrtc = kopt_compile(&probe, ctx, c, &co) != KOPT_E_NO_DEVICE;
        if (!have_nvrtc)
            printf("NVRTC not available (%s): compiles skipped\n", kopt_errmsg(ctx));
        kopt_compiled_free(probe);
        kopt_candidate_free(c);
        kopt_problem_free(p);
    }
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    ktest_rmtree(tmp);
    free(tmp);
    free(cache);
    kopt_ctx_free(ctx);
    return rc;
}
