/*
 * The analysis replayed over real CUPTI recordings, no GPU needed. tests/data/cupti/h200/
 * holds `kopt profile --json` reports recorded on an H200 (README there): every example's
 * reference and fast candidate, and every planted kernel of tests/profile/planted/. For each,
 * the analysis input is rebuilt the way `kopt profile` builds it: the candidate compiled with
 * NVRTC for the recorded arch, its cubin disassembled with nvdisasm and counted, its launch
 * plan bound to the problem's sizes, the kernel views made by kopt_analyze_views; only what
 * needs the GPU comes from the recording: the metrics (kopt_profile_from_json on the report),
 * the median time, and the H200's device properties and measured ceilings
 * (tests/data/ceilings/worker_result_h200.json). Then:
 *  - the set of tools that fire equals the recorded findings' tools, and the final class the
 *    recorded one, for every recording (no exception is needed: nothing a tool or the
 *    classifier reads is lost in the replay; the one input that differs, the ceilings
 *    (measured again for the fixture, within 1% of those the recording used), moves gains
 *    and the roofline position slightly, not which tools fire);
 *  - the rebuilt kernels match the recorded ones (names, registers, SASS instruction count);
 *  - on each planted kernel every tool on its `// plants:` line fires;
 *  - every example has both recordings.
 * Without NVRTC or nvdisasm the cases say so and skip.
 */
#include "ktest.h"

#include "kopt/analyze.h"

#include <dirent.h>
#include <jansson.h>

#define CUPTI_DIR KOPT_TEST_DATA_DIR "/cupti/h200"
#define CEILINGS_FIXTURE KOPT_TEST_DATA_DIR "/ceilings/worker_result_h200.json"
#define PLANTED_DIR KOPT_TEST_DATA_DIR "/../profile/planted"
#define REPO_ROOT KOPT_EXAMPLES_DIR "/.."

static kopt_ctx *ctx;
static char *cache;                 /* compile cache for this run */
static kopt_device_info h200_dev;   /* from the ceilings fixture */
static kopt_ceilings h200_ceil;
static char skip_why[600];          /* non-empty: NVRTC or nvdisasm missing */

/* ---- the device and ceilings the recordings ran with ------------------------------------ */

static int load_h200(void)
{
    char *text = ktest_read_file(CEILINGS_FIXTURE), *ctext = NULL;
    json_t *ev = text ? json_loads(text, 0, NULL) : NULL, *d, *c;
    int ok = 0;

    memset(&h200_dev, 0, sizeof(h200_dev));
    memset(&h200_ceil, 0, sizeof(h200_ceil));
    d = json_object_get(ev, "device");
    c = json_object_get(ev, "ceilings");
    if (!CHECK(json_is_object(d) && json_is_object(c)))
        goto done;
    snprintf(h200_dev.name, sizeof(h200_dev.name), "%s",
             json_string_value(json_object_get(d, "name")));
#define I(f) h200_dev.f = (int)json_integer_value(json_object_get(d, #f))
    I(cc_major); I(cc_minor); I(sm_count); I(l2_bytes); I(max_threads_per_block);
    I(max_smem_per_block_optin); I(smem_per_sm); I(regs_per_sm); I(max_threads_per_sm);
    I(clock_khz); I(mem_clock_khz); I(mem_bus_width); I(driver_version);
#undef I
    h200_dev.total_mem = json_integer_value(json_object_get(d, "total_mem"));
    ctext = json_dumps(c, JSON_COMPACT);
    if (!CHECK_EQ_INT(kopt_ceilings_parse(ctx, ctext, &h200_ceil), KOPT_OK) ||
        !CHECK(h200_ceil.valid))
        goto done;
    kopt_ceilings_fill_spec(&h200_ceil, &h200_dev);   /* as kopt eval does after measuring */
    ok = CHECK_EQ_INT(h200_dev.cc_major, 9) && CHECK(h200_dev.sm_count > 0);
done:
    free(ctext);
    json_decref(ev);
    free(text);
    return ok;
}

/* ---- one recording replayed ------------------------------------------------------------- */

#define MAXTOOLS 24

typedef struct tool_set {
    int n;
    char name[MAXTOOLS][48];
} tool_set;

static void set_add(tool_set *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->name[i], name) == 0)
            return;
    if (s->n < MAXTOOLS)
        snprintf(s->name[s->n++], sizeof(s->name[0]), "%s", name);
}

static int set_has(const tool_set *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->name[i], name) == 0)
            return 1;
    return 0;
}

typedef struct replay {
    char fixture[128];
    char problem[64];
    int skipped;                    /* NVRTC or nvdisasm missing: skip_why says which */
    int ok;                         /* the input was rebuilt and analyzed */
    tool_set fired, recorded;
    char cls[32], recorded_cls[32];
    double pct, recorded_pct;       /* roofline position, % of the bound */
} replay;

/* The rebuilt kernel views against the recorded "kernels" (name, registers, SASS size):
 * a different toolchain would make the comparison of findings meaningless. */
static void check_views(const char *fixture, json_t *recorded, const kopt_kernel_view *v, int n)
{
    if (!CHECK_EQ_INT(n, (int)json_array_size(recorded))) {
        printf("  %s: %d kernel views rebuilt, %zu recorded\n", fixture, n,
               json_array_size(recorded));
        return;
    }
    for (int i = 0; i < n; i++) {
        json_t *k = json_array_get(recorded, (size_t)i);
        json_t *res = json_object_get(k, "resources"), *sass = json_object_get(k, "sass");
        int regs = (int)json_integer_value(json_object_get(res, "registers"));
        int insts = (int)json_integer_value(json_object_get(sass, "instructions"));
        CHECK_EQ_STR(v[i].name, json_string_value(json_object_get(k, "name")));
        CHECK(v[i].metrics != NULL);
        if (CHECK(v[i].res != NULL) && !CHECK_EQ_INT(v[i].res->registers, regs))
            printf("  %s: %s: %d registers here, %d recorded\n", fixture, v[i].name,
                   v[i].res->registers, regs);
        if (CHECK(v[i].sass != NULL) && !CHECK_EQ_INT(v[i].sass->instructions, insts))
            printf("  %s: %s: %d SASS instructions here, %d recorded\n", fixture, v[i].name,
                   v[i].sass->instructions, insts);
    }
}

/* Rebuild and analyze `fixture` (a file name in CUPTI_DIR) into *r. */
static void replay_one(const char *fixture, replay *r)
{
    char path[2048];
    char *text = NULL;
    json_t *rep = NULL, *cand_path, *findings;
    kopt_problem *prob = NULL;
    kopt_candidate *cand = NULL;
    kopt_compiled *comp = NULL;
    kopt_compile_opts co = KOPT_COMPILE_OPTS_INIT;
    kopt_vars sizes = KOPT_VARS_INIT;
    kopt_bound *bound = NULL;
    kopt_sass *sass = NULL;
    kopt_profile *prof = NULL;
    kopt_kernel_view *views = NULL;
    int nviews = 0;
    kopt_analysis_input in;
    kopt_analysis *an = NULL;
    kopt_status rc;

    memset(r, 0, sizeof(*r));
    snprintf(r->fixture, sizeof(r->fixture), "%s", fixture);
    snprintf(path, sizeof(path), "%s/%s", CUPTI_DIR, fixture);
    if (!CHECK((text = ktest_read_file(path)) != NULL) ||
        !CHECK((rep = json_loads(text, 0, NULL)) != NULL) ||
        !CHECK(json_is_string(json_object_get(rep, "problem"))) ||
        !CHECK(json_is_number(json_object_get(rep, "median_ms"))) ||
        !CHECK_EQ_STR(json_string_value(json_object_get(rep, "metrics_source")), "cupti"))
        goto done;
    snprintf(r->problem, sizeof(r->problem), "%s",
             json_string_value(json_object_get(rep, "problem")));
    findings = json_object_get(rep, "findings");
    for (size_t i = 0; i < json_array_size(findings); i++)
        set_add(&r->recorded, json_string_value(json_object_get(json_array_get(findings, i),
                                                                "tool")));
    snprintf(r->recorded_cls, sizeof(r->recorded_cls), "%s",
             json_string_value(json_object_get(json_object_get(rep, "class"), "final")));
    r->recorded_pct = json_number_value(json_object_get(json_object_get(rep, "class"),
                                                        "pct_of_bound"));

    /* the problem and candidate, as named in the report */
    snprintf(path, sizeof(path), "%s/%s", KOPT_EXAMPLES_DIR, r->problem);
    if (!CHECK_EQ_INT(kopt_problem_load(&prob, ctx, path), KOPT_OK))
        goto fail;
    cand_path = json_object_get(rep, "candidate");
    snprintf(path, sizeof(path), "%s/%s", REPO_ROOT, json_string_value(cand_path));
    if (!CHECK_EQ_INT(json_is_string(cand_path) ? kopt_candidate_load(&cand, ctx, path, prob)
                                                : kopt_candidate_from_reference(&cand, ctx, prob),
                      KOPT_OK))
        goto fail;

    /* compile, bind, disassemble: as kopt profile does */
    co.arch = json_string_value(json_object_get(rep, "arch"));
    co.cache_dir = cache;
    rc = kopt_compile(&comp, ctx, cand, &co);
    if (rc == KOPT_E_NO_DEVICE) {
        snprintf(skip_why, sizeof(skip_why), "NVRTC not available (%s)", kopt_errmsg(ctx));
        r->skipped = 1;
        goto done;
    }
    if (!CHECK_EQ_INT(rc, KOPT_OK) ||
        !CHECK_EQ_INT(kopt_sizes_resolve(&sizes, ctx, prob, NULL), KOPT_OK) ||
        !CHECK_EQ_INT(kopt_bind(&bound, ctx, prob, cand, &sizes), KOPT_OK))
        goto fail;
    rc = kopt_sass_from_cubin(&sass, ctx, comp->binary_path);
    if (rc == KOPT_E_NOT_FOUND && strcasestr(kopt_errmsg(ctx), "nvdisasm")) {
        snprintf(skip_why, sizeof(skip_why), "nvdisasm not found (%s); install it with "
                 "`pip install nvidia-cuda-nvdisasm` or set KOPT_NVDISASM", kopt_errmsg(ctx));
        r->skipped = 1;
        goto done;
    }
    if (!CHECK_EQ_INT(rc, KOPT_OK))
        goto fail;

    /* what needed the GPU: from the recording */
    snprintf(path, sizeof(path), "%s/%s", CUPTI_DIR, fixture);
    if (!CHECK_EQ_INT(kopt_profile_from_json(&prof, ctx, text, path), KOPT_OK) ||
        !CHECK_EQ_INT(kopt_analyze_views(&views, &nviews, ctx, comp, bound, sass, prof),
                      KOPT_OK))
        goto fail;
    check_views(fixture, json_object_get(rep, "kernels"), views, nviews);
    memset(&in, 0, sizeof(in));
    in.dev = &h200_dev;
    in.ceil = &h200_ceil;
    in.median_ms = json_number_value(json_object_get(rep, "median_ms"));
    in.problem = prob->name;
    if (bound->has_work) {
        in.flops = bound->flops;
        in.bytes = bound->bytes;
    }
    in.compute = (int)prob->compute;
    in.matmul_like = kopt_analyze_matmul_like(prob);
    CHECK_EQ_INT(in.matmul_like, json_is_true(json_object_get(rep, "matmul_like")));
    in.host_mode = comp->host_mode;
    in.launches_per_call = comp->host_mode ? prof->nkernels : 0;
    in.nkernels = nviews;
    in.kernels = views;
    if (!CHECK_EQ_INT(kopt_analyze_run(&an, ctx, &in, NULL), KOPT_OK))
        goto fail;
    for (int i = 0; i < an->findings.n; i++)
        set_add(&r->fired, an->findings.f[i].tool);
    snprintf(r->cls, sizeof(r->cls), "%s", kopt_class_name(an->cls.final));
    r->pct = an->cls.pct_of_bound;
    r->ok = 1;
    goto done;
fail:
    printf("  %s: %s\n", fixture, kopt_errmsg(ctx));
done:
    kopt_analysis_free(an);
    free(views);
    kopt_profile_free(prof);
    kopt_sass_free(sass);
    kopt_bound_free(bound);
    kopt_vars_free(&sizes);
    kopt_compiled_free(comp);
    kopt_candidate_free(cand);
    kopt_problem_free(prob);
    json_decref(rep);
    free(text);
}

/* The fixtures, sorted. *out is freed by free_names. */
static int fixture_names(struct dirent ***out)
{
    int n = scandir(CUPTI_DIR, out, NULL, alphasort), k = 0;

    for (int i = 0; i < n; i++) {
        size_t len = strlen((*out)[i]->d_name);
        if (len > 5 && strcmp((*out)[i]->d_name + len - 5, ".json") == 0)
            (*out)[k++] = (*out)[i];
        else
            free((*out)[i]);
    }
    return n < 0 ? -1 : k;
}

static void free_names(struct dirent **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* "a b c" with '+' before tools only fired now and '-' before tools only recorded. */
static void diff_text(const replay *r, char *buf, size_t size)
{
    size_t at = 0;

    buf[0] = '\0';
    for (int i = 0; i < r->fired.n; i++)
        if (!set_has(&r->recorded, r->fired.name[i]))
            at += (size_t)snprintf(buf + at, at < size ? size - at : 0, " +%s",
                                   r->fired.name[i]);
    for (int i = 0; i < r->recorded.n; i++)
        if (!set_has(&r->fired, r->recorded.name[i]))
            at += (size_t)snprintf(buf + at, at < size ? size - at : 0, " -%s",
                                   r->recorded.name[i]);
}

/* ---- the cases ------------------------------------------------------------------------- */

static void test_replay_every_recording(void)
{
    struct dirent **names = NULL;
    int n = fixture_names(&names), replayed = 0;
    replay r;

    if (!CHECK(n > 0)) {
        printf("  no recordings in %s\n", CUPTI_DIR);
        return;
    }
    printf("  %-40s %-11s %-14s %5s %5s  %s\n", "recording", "problem", "class", "fired",
           "rec.", "differences (+ fired only here, - recorded only)");
    for (int i = 0; i < n; i++) {
        char diff[512];
        const char *name = names[i]->d_name;
        replay_one(name, &r);
        if (r.skipped) {
            KTEST_SKIP(skip_why);
            break;
        }
        if (!r.ok)
            continue;
        replayed++;
        diff_text(&r, diff, sizeof(diff));
        printf("  %-40s %-11s %-14s %5d %5d  %s\n", name, r.problem, r.cls, r.fired.n,
               r.recorded.n, diff[0] ? diff : "none");
        if (!CHECK_EQ_STR(r.cls, r.recorded_cls))
            printf("  %s: class %s here, %s recorded\n", name, r.cls, r.recorded_cls);
        /* the same median against ceilings within 1% of the recording's */
        if (!CHECK_NEAR(r.pct, r.recorded_pct, 0.02 * r.recorded_pct + 0.01))
            printf("  %s: %.2f%% of the bound here, %.2f%% recorded\n", name, r.pct,
                   r.recorded_pct);
        for (int t = 0; t < r.fired.n; t++)
            if (!set_has(&r.recorded, r.fired.name[t]))
                KTEST_FAIL("%s: %s fires here but was not recorded", name, r.fired.name[t]);
        for (int t = 0; t < r.recorded.n; t++)
            if (!set_has(&r.fired, r.recorded.name[t]))
                KTEST_FAIL("%s: %s was recorded but does not fire here", name,
                           r.recorded.name[t]);
    }
    if (!skip_why[0])
        CHECK_EQ_INT(replayed, n);
    free_names(names, n);
}

/* "// <key> value" from a planted kernel's header. */
static int header_line(const char *text, const char *key, char *out, size_t size)
{
    const char *p = strstr(text, key), *end;

    if (!p)
        return 0;
    p += strlen(key);
    p += strspn(p, " ");
    end = p + strcspn(p, "\n");
    snprintf(out, size, "%.*s", (int)(end - p), p);
    return 1;
}

static void test_planted_tools_fire(void)
{
    struct dirent **names = NULL;
    int n, planted = 0;

    if (skip_why[0]) {                  /* found missing by the case before */
        KTEST_SKIP(skip_why);
        return;
    }
    n = scandir(PLANTED_DIR, &names, NULL, alphasort);
    if (!CHECK(n > 0))
        return;
    for (int i = 0; i < n && !skip_why[0]; i++) {
        const char *file = names[i]->d_name;
        size_t len = strlen(file);
        char path[2048], problem[256], plants[256], fixture[300], missing[600];
        char *text;
        replay r;

        if (len < 4 || strcmp(file + len - 3, ".cu") != 0)
            continue;
        planted++;
        snprintf(path, sizeof(path), "%s/%s", PLANTED_DIR, file);
        text = ktest_read_file(path);
        if (!CHECK(text != NULL) || !CHECK(header_line(text, "// problem:", problem,
                                                        sizeof(problem))) ||
            !CHECK(header_line(text, "// plants:", plants, sizeof(plants)))) {
            free(text);
            continue;
        }
        free(text);
        snprintf(fixture, sizeof(fixture), "planted_%.*s.json", (int)(len - 3), file);
        snprintf(path, sizeof(path), "%s/%s", CUPTI_DIR, fixture);
        if (access(path, R_OK) != 0) {
            KTEST_FAIL("%s has no recording %s", file, fixture);
            continue;
        }
        replay_one(fixture, &r);
        if (r.skipped) {
            KTEST_SKIP(skip_why);
            break;
        }
        if (!CHECK(r.ok))
            continue;
        CHECK_STR_CONTAINS(problem, r.problem);     /* "examples/<problem>" */
        printf("  %-30s plants %-40s", file, plants);
        missing[0] = '\0';
        for (char *tok = plants, *next; *tok; tok = next) {
            size_t tl = strcspn(tok, ", ");
            next = tok + tl + strspn(tok + tl, ", ");
            tok[tl] = '\0';
            printf(" %s:%s", tok, set_has(&r.fired, tok) ? "fired" : "MISSING");
            if (!set_has(&r.fired, tok))
                snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), " %s",
                         tok);
        }
        printf("\n");
        if (missing[0])
            KTEST_FAIL("%s: planted tool(s) did not fire:%s", file, missing);
    }
    if (!skip_why[0])
        CHECK(planted > 0);
    free_names(names, n);
}

/* Every example under examples/ has its reference and fast recordings. */
static void test_every_example_recorded(void)
{
    struct dirent **names = NULL;
    int n = scandir(KOPT_EXAMPLES_DIR, &names, NULL, alphasort), examples = 0;

    if (!CHECK(n > 0))
        return;
    for (int i = 0; i < n; i++) {
        char path[2048];
        const char *ex = names[i]->d_name;
        snprintf(path, sizeof(path), "%s/%s/problem.json", KOPT_EXAMPLES_DIR, ex);
        if (ex[0] == '.' || access(path, R_OK) != 0)
            continue;
        examples++;
        for (int c = 0; c < 2; c++) {
            snprintf(path, sizeof(path), "%s/%s_%s.json", CUPTI_DIR, ex,
                     c ? "fast" : "reference");
            if (access(path, R_OK) != 0)
                KTEST_FAIL("no recording %s", path);
        }
    }
    printf("  %d examples\n", examples);
    CHECK(examples >= 8);
    free_names(names, n);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_every_example_recorded),
        KTEST(test_replay_every_recording),
        KTEST(test_planted_tools_fire),
    };
    int rc = 1;

    ctx = kopt_ctx_new();
    cache = ktest_tmpdir("cupti-recorded");
    if (cache && load_h200()) {
        rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
        if (rc == 0 && skip_why[0]) {
            /* nothing was replayed: tell CTest (SKIP_RETURN_CODE 77) rather than pass */
            printf("skipped: %s\n", skip_why);
            rc = 77;
        }
    } else
        fprintf(stderr, "cannot read %s\n", CEILINGS_FIXTURE);
    ktest_rmtree(cache);
    free(cache);
    kopt_ctx_free(ctx);
    return rc;
}
