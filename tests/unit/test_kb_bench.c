/*
 * kopt bench in-process, without the MCP SDK (it runs in CI): kopt_kb_bench over a small
 * suite (softmax with a candidate, vector_add without: MISSING), the MCP tool bench through
 * kopt_mcp_call giving the same document (apart from ids and measured times), a resumed
 * suite giving the stored rows, the tool's argument errors naming the field, and the stop
 * flag ending a suite early with "interrupted". Without a GPU the softmax row is SKIPPED
 * (compiled statically); on one it is OK.
 */
#include "ktest.h"

#include <jansson.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kopt/kopt.h"
#include "kopt/mcp.h"

typedef struct suite_dir {
    char *dir, *probs, *cands, *db;
} suite_dir;

/* dir/p: softmax and vector_add (links to the examples); dir/c: softmax.cu (fast.cu's text). */
static int make_suite(suite_dir *s)
{
    char from[1024], to[1024];
    char *src = NULL;
    size_t n = 0;
    kopt_ctx *ctx = kopt_ctx_new();
    int ok = 0;

    memset(s, 0, sizeof(*s));
    if (!(s->dir = ktest_tmpdir("kb-bench")))
        goto done;
    s->probs = kopt_path_join(s->dir, "p");
    s->cands = kopt_path_join(s->dir, "c");
    s->db = kopt_path_join(s->dir, "k.db");
    if (mkdir(s->probs, 0700) || mkdir(s->cands, 0700))
        goto done;
    for (int i = 0; i < 2; i++) {
        const char *name = i ? "vector_add" : "softmax";
        snprintf(from, sizeof(from), "%s/%s", KOPT_EXAMPLES_DIR, name);
        snprintf(to, sizeof(to), "%s/%s", s->probs, name);
        if (symlink(from, to))
            goto done;
    }
    if (kopt_file_read(ctx, KOPT_EXAMPLES_DIR "/softmax/fast.cu", &src, &n) != KOPT_OK)
        goto done;
    free(ktest_write_file(s->cands, "softmax.cu", src));
    ok = 1;
done:
    free(src);
    kopt_ctx_free(ctx);
    return CHECK(ok);
}

static void free_suite(suite_dir *s)
{
    ktest_rmtree(s->dir);
    free(s->dir);
    free(s->probs);
    free(s->cands);
    free(s->db);
}

/* The document without what differs from run to run: ids and measured numbers (reals). */
static json_t *stable(json_t *j)
{
    const char *k;
    json_t *v;
    void *tmp;
    size_t i;

    if (json_is_object(j)) {
        json_object_del(j, "suite");
        json_object_del(j, "run_id");
        json_object_del(j, "eval_id");
        json_object_foreach_safe(j, tmp, k, v) {
            if (json_is_real(v))
                json_object_set_new(j, k, json_null());
            else
                stable(v);
        }
    } else if (json_is_array(j)) {
        json_array_foreach(j, i, v) stable(v);
    }
    return j;
}

static const char *row_str(json_t *doc, size_t i, const char *k)
{
    return json_string_value(json_object_get(json_array_get(json_object_get(doc, "rows"), i), k));
}

/* kopt_mcp_call("bench", args) with a store; the document (NULL on error: message on ctx). */
static json_t *call_bench(kopt_ctx *ctx, const char *db, const char *args, char **summary)
{
    kopt_mcp_opts mo = KOPT_MCP_OPTS_INIT;
    char *out = NULL;
    json_t *j;

    mo.db_path = db;
    if (kopt_mcp_call(ctx, &mo, "bench", args, NULL, &out, summary) != KOPT_OK)
        return NULL;
    j = json_loads(out, 0, NULL);
    free(out);
    return j;
}

/* kopt_kb_bench over the suite (one trial) in a run of its own (*run, the caller closes it);
 * *doc its document; 0 (a failed check) when it did not run. */
static int bench_in_run(kopt_ctx *ctx, const suite_dir *s, volatile sig_atomic_t *stop,
                        kopt_run **run, json_t **doc)
{
    kopt_run_opts ro = KOPT_RUN_OPTS_INIT;
    kopt_kb_bench_opts o;

    *doc = NULL;
    ro.kind = KOPT_RUN_BENCH;
    ro.db_path = s->db;
    if (!CHECK_EQ_INT(kopt_run_open(run, ctx, &ro), KOPT_OK))
        return 0;
    kopt_kb_bench_opts_default(&o);
    o.problems = s->probs;
    o.candidates = s->cands;
    o.eval.trials = 1;
    o.stop = stop;
    return CHECK_EQ_INT(kopt_kb_bench(*run, ctx, &o, doc), KOPT_OK);
}

static void test_library_and_tool_agree(void)
{
    suite_dir s;
    kopt_ctx *ctx = kopt_ctx_new();
    kopt_run *run = NULL;
    json_t *doc = NULL, *tool = NULL, *resumed = NULL;
    char args[4096], *summary = NULL, *rsummary = NULL;
    const char *want;
    kopt_device_info dev;
    int count = 0;

    memset(&dev, 0, sizeof(dev));
    want = kopt_device_nvml(ctx, 0, &dev, &count) == KOPT_OK && count > 0 ? "OK" : "SKIPPED";
    if (!make_suite(&s) || !bench_in_run(ctx, &s, NULL, &run, &doc))
        goto done;
    kopt_run_finish(run, ctx, KOPT_RUN_OK, NULL);
    CHECK_EQ_INT(json_integer_value(json_object_get(doc, "suite")), kopt_run_id(run));
    CHECK_EQ_INT(json_array_size(json_object_get(doc, "rows")), 2);
    CHECK_EQ_STR(row_str(doc, 0, "problem"), "softmax");
    CHECK_EQ_STR(row_str(doc, 0, "verdict"), want);
    CHECK_EQ_STR(row_str(doc, 1, "problem"), "vector_add");
    CHECK_EQ_STR(row_str(doc, 1, "verdict"), "MISSING");
    CHECK(!json_object_get(doc, "interrupted"));

    /* the MCP tool: the same suite, the same document apart from ids and times */
    snprintf(args, sizeof(args), "{\"problems\": \"%s\", \"candidates\": \"%s\", \"trials\": 1}",
             s.probs, s.cands);
    tool = call_bench(ctx, s.db, args, &summary);
    if (!CHECK(tool != NULL)) {
        printf("  %s\n", kopt_errmsg(ctx));
        goto done;
    }
    CHECK(json_integer_value(json_object_get(tool, "run_id")) > kopt_run_id(run));
    CHECK_EQ_INT(json_integer_value(json_object_get(tool, "suite")),
                 json_integer_value(json_object_get(tool, "run_id")));
    CHECK_STR_CONTAINS(summary, "2 problem(s)");
    /* resumed: the stored rows again, nothing evaluated */
    snprintf(args, sizeof(args), "{\"resume\": %lld}",
             (long long)json_integer_value(json_object_get(tool, "suite")));
    resumed = call_bench(ctx, s.db, args, &rsummary);
    if (CHECK(resumed != NULL))
        CHECK(json_equal(json_object_get(resumed, "rows"), json_object_get(tool, "rows")));
    CHECK(json_equal(stable(doc), stable(tool)));
    if (resumed)
        CHECK(json_equal(stable(resumed), tool));
done:
    free(summary);
    free(rsummary);
    json_decref(doc);
    json_decref(tool);
    json_decref(resumed);
    kopt_run_close(run);
    kopt_ctx_free(ctx);
    free_suite(&s);
}

static void test_tool_errors_name_the_field(void)
{
    static const struct {
        const char *args, *msg;
    } cases[] = {
        {"{\"problems\": \"/no/such/folder\", \"candidates\": \"/tmp\"}",
         "arguments.problems: no folder '/no/such/folder'"},
        {"{\"candidates\": \"/tmp\"}", "arguments.problems: required"},
        {"{\"problems\": \"" KOPT_EXAMPLES_DIR "\"}", "arguments.candidates: required"},
        {"{\"problems\": \"" KOPT_EXAMPLES_DIR "\", \"candidates\": \"/no/such\"}",
         "arguments.candidates: no folder '/no/such'"},
        {"{\"problems\": \"" KOPT_EXAMPLES_DIR "\", \"kind\": \"rust\"}", "arguments.kind:"},
        {"{\"problems\": \"" KOPT_EXAMPLES_DIR "\", \"kind\": \"reference\", \"trials\": 99}",
         "arguments.trials: 1 to 16"},
        {"{\"problems\": \"" KOPT_EXAMPLES_DIR "\", \"kind\": \"reference\", \"reps\": \"5\"}",
         "arguments.reps: MIN:MAX"},
        {"{\"problems\": \"" KOPT_EXAMPLES_DIR "\", \"kind\": \"reference\", \"budget_ms\": 0}",
         "arguments.budget_ms: above 0"},
        {"{\"problems\": \"" KOPT_EXAMPLES_DIR "\", \"kind\": \"reference\", \"trials\": \"1\"}",
         "arguments.trials"},
        {"{\"resume\": 5, \"problems\": \"" KOPT_EXAMPLES_DIR "\"}", "arguments.resume:"},
        {"{\"resume\": 999}", "no bench suite 999"},
    };
    suite_dir s;
    kopt_ctx *ctx = kopt_ctx_new();

    if (!make_suite(&s))
        goto done;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *j = call_bench(ctx, s.db, cases[i].args, NULL);
        if (!CHECK(j == NULL))
            printf("  accepted: %s\n", cases[i].args);
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), cases[i].msg);
        json_decref(j);
    }
    {   /* a folder without problems: its name and why */
        json_t *j;
        char args[2048];
        snprintf(args, sizeof(args), "{\"problems\": \"%s\", \"candidates\": \"%s\"}", s.cands,
                 s.cands);
        j = call_bench(ctx, s.db, args, NULL);
        CHECK(j == NULL);
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), "no problem folders in it");
        json_decref(j);
    }
done:
    kopt_ctx_free(ctx);
    free_suite(&s);
}

static void test_stop_ends_the_suite_early(void)
{
    suite_dir s;
    kopt_ctx *ctx = kopt_ctx_new();
    kopt_run *run = NULL;
    json_t *doc = NULL;
    volatile sig_atomic_t stop = 1;

    if (!make_suite(&s) || !bench_in_run(ctx, &s, &stop, &run, &doc))
        goto done;
    CHECK(json_is_true(json_object_get(doc, "interrupted")));
    CHECK_EQ_INT(json_array_size(json_object_get(doc, "rows")), 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(doc, "vs_eager"),
                                                    "problems")), 0);
done:
    json_decref(doc);
    kopt_run_close(run);
    kopt_ctx_free(ctx);
    free_suite(&s);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_library_and_tool_agree), KTEST(test_tool_errors_name_the_field),
        KTEST(test_stop_ends_the_suite_early),
    };
    return ktest_main(argc, argv, cases, KTEST_COUNT(cases));
}
