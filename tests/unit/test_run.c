/*
 * Unit tests of the run API (kopt/run.h) without a GPU, on a temporary store: a run records
 * its kind, command line, environment and final status (a run closed without finishing is
 * "failed"), runs are listed newest first and by kind, a store that cannot be opened is an
 * error unless optional; an evaluation through a run is stored linked to it; a tuning run
 * replayed from an H200 recording (tests/data/tune/h200) and stopped midway resumes from the
 * store with its strategy, seed and budget, evaluates nothing stored again and ends where
 * an uninterrupted run ends; a stored tuning run replays by id; set-up faults say which
 * kind they are (usage, input); the profile of a PyTorch program (a PyTorch reference, a
 * ModelNew .py candidate) goes to the program profile, which with the worker on the CPU
 * (no GPU ran its kernels) says plainly why it was not profiled, handing no Python to a CUDA
 * compiler; a program's analysis is stored as a profile of source "program" and shown by
 * kopt report.
 */
#include "ktest.h"

#include "kopt/report.h"
#include "kopt/run.h"

#include <jansson.h>

static kopt_ctx *ctx;
static char *tmp;

#define SOFTMAX_CACHE KOPT_TEST_DATA_DIR "/tune/h200/softmax.json"

static kopt_run *open_run(const char *db, kopt_run_kind kind, int argc, char **argv)
{
    kopt_run_opts ro = KOPT_RUN_OPTS_INIT;
    kopt_run *run = NULL;

    ro.kind = kind;
    ro.db_path = db;
    ro.argc = argc;
    ro.argv = argv;
    if (!CHECK_EQ_INT(kopt_run_open(&run, ctx, &ro), KOPT_OK))
        return NULL;
    return run;
}

static void test_run_records(void)
{
    char *db = kopt_path_join(tmp, "runs.db");
    char *argv[] = {"eval", "examples/softmax", "it's.cu", "--json"};
    kopt_run *a = open_run(db, KOPT_RUN_EVAL, 4, argv), *b = NULL;
    kopt_store_run got, *list = NULL;
    int64_t ida, idb;
    int n = 0;

    if (!a)
        goto cleanup;
    ida = kopt_run_id(a);
    CHECK(ida > 0);
    CHECK(kopt_run_store(a) != NULL);
    CHECK_EQ_STR(kopt_run_db_path(a), db);
    CHECK_EQ_STR(kopt_run_env(a)->kind, "eval");
    CHECK_EQ_STR(kopt_run_env(a)->command, "eval examples/softmax 'it'\\''s.cu' --json");
    CHECK(kopt_run_env(a)->kopt_version[0] != '\0');
    CHECK(kopt_run_env(a)->host[0] != '\0');
    CHECK_EQ_INT(kopt_run_finish(a, ctx, KOPT_RUN_OK, "1 evaluation"), KOPT_OK);
    CHECK_EQ_INT(kopt_run_finish(a, ctx, KOPT_RUN_FAILED, NULL), KOPT_OK);   /* once only */
    kopt_run_close(a);
    a = NULL;
    if (!(b = open_run(db, KOPT_RUN_PROFILE, 0, NULL)))
        goto cleanup;
    idb = kopt_run_id(b);
    CHECK(idb > ida);
    kopt_run_close(b);                     /* not finished: recorded as failed */
    b = NULL;

    if (CHECK_EQ_INT(kopt_run_get(ctx, db, ida, &got), KOPT_OK)) {
        CHECK_EQ_STR(got.status, "ok");
        CHECK_EQ_STR(got.summary, "1 evaluation");
        CHECK(got.started_at[0] && got.finished_at[0]);
        CHECK(got.host[0] && got.kopt_version[0]);
    }
    if (CHECK_EQ_INT(kopt_run_get(ctx, db, idb, &got), KOPT_OK))
        CHECK_EQ_STR(got.status, "failed");
    CHECK_EQ_INT(kopt_run_get(ctx, db, idb + 10, &got), KOPT_E_NOT_FOUND);
    if (CHECK_EQ_INT(kopt_run_list(ctx, db, NULL, 0, &list, &n), KOPT_OK) && CHECK_EQ_INT(n, 2)) {
        CHECK_EQ_INT(list[0].id, idb);     /* newest first */
        CHECK_EQ_STR(list[1].kind, "eval");
    }
    free(list);
    list = NULL;
    if (CHECK_EQ_INT(kopt_run_list(ctx, db, "profile", 0, &list, &n), KOPT_OK) &&
        CHECK_EQ_INT(n, 1))
        CHECK_EQ_INT(list[0].id, idb);
cleanup:
    free(list);
    kopt_run_close(a);
    kopt_run_close(b);
    free(db);
}

static void test_run_without_store(void)
{
    kopt_run_opts ro = KOPT_RUN_OPTS_INIT;
    kopt_run *run = NULL;
    char *bad = kopt_path_join(tmp, "no-such-folder/kopt.db");

    ro.db_path = NULL;
    if (CHECK_EQ_INT(kopt_run_open(&run, ctx, &ro), KOPT_OK)) {
        CHECK_EQ_INT(kopt_run_id(run), 0);
        CHECK(kopt_run_store(run) == NULL);
        CHECK_EQ_INT(kopt_run_finish(run, ctx, KOPT_RUN_OK, NULL), KOPT_OK);
    }
    kopt_run_close(run);
    run = NULL;
    ro.db_path = bad;
    CHECK_EQ_INT(kopt_run_open(&run, ctx, &ro), KOPT_E_DB);
    CHECK(run == NULL);
    ro.db_optional = 1;                    /* kopt eval: a warning, no store */
    if (CHECK_EQ_INT(kopt_run_open(&run, ctx, &ro), KOPT_OK))
        CHECK(kopt_run_store(run) == NULL);
    kopt_run_close(run);
    free(bad);
}

/* Without a GPU the evaluation compiles and gives SKIPPED, which is stored for the run. */
static void test_eval_linked(void)
{
    char *db = kopt_path_join(tmp, "eval.db"), *cache = kopt_path_join(tmp, "cache");
    kopt_problem *prob = NULL;
    kopt_candidate *cand = NULL;
    kopt_eval_result *r = NULL;
    kopt_eval_opts eo = KOPT_EVAL_OPTS_INIT;
    kopt_run *run = open_run(db, KOPT_RUN_EVAL, 0, NULL);
    kopt_store_run got;
    int64_t id = kopt_run_id(run);

    eo.cache_dir = cache;
    if (!run || !CHECK_EQ_INT(kopt_problem_load(&prob, ctx, KOPT_EXAMPLES_DIR "/softmax"),
                              KOPT_OK) ||
        !CHECK_EQ_INT(kopt_candidate_load(&cand, ctx, KOPT_EXAMPLES_DIR "/softmax/fast.cu",
                                          prob), KOPT_OK))
        goto cleanup;
    if (!CHECK_EQ_INT(kopt_run_eval(run, ctx, prob, cand, &eo, "node-7", &r), KOPT_OK))
        goto cleanup;
    if (r->verdict != KOPT_VERDICT_SKIPPED) {
        KTEST_SKIP(r->verdict == KOPT_VERDICT_ERROR ? "no compiler here" : "a GPU is here");
        goto cleanup;
    }
    CHECK(r->eval_id > 0);
    kopt_run_finish(run, ctx, KOPT_RUN_SKIPPED, NULL);
    kopt_run_close(run);
    run = NULL;
    if (CHECK_EQ_INT(kopt_run_get(ctx, db, id, &got), KOPT_OK)) {
        CHECK_EQ_INT(got.nevals, 1);
        CHECK_EQ_STR(got.status, "skipped");
    }
cleanup:
    kopt_eval_result_free(r);
    kopt_run_close(run);
    kopt_candidate_free(cand);
    kopt_problem_free(prob);
    free(db);
    free(cache);
}

/* ---- tuning ------------------------------------------------------------------------------ */

typedef struct stopper {
    volatile sig_atomic_t flag;
    size_t after;              /* stop once this many new evaluations are done; 0: never */
    int ends;                  /* shape ends seen */
} stopper;

static void on_progress(void *user, int shape, int nshapes, const kopt_tune_space *space,
                        const kopt_tune_progress *p)
{
    stopper *s = user;

    (void)shape;
    (void)nshapes;
    (void)space;
    if (!p)
        s->ends++;
    else if (s->after && p->evaluated >= s->after)
        s->flag = 1;
}

/* A replay of the softmax recording: random, seed 7, 40 evaluations (unless resuming). */
static kopt_status tune(const char *db, const char *replay, int resume, size_t stop_after,
                        char best[512], kopt_run_tune_shape *shape_out, int64_t *run_id)
{
    kopt_run_tune_opts o;
    kopt_run_tune *t = NULL;
    kopt_run *run = open_run(db, KOPT_RUN_TUNE, 0, NULL);
    stopper st = {0, stop_after, 0};
    kopt_status rc = KOPT_E_ERROR;

    kopt_run_tune_opts_default(&o);
    o.replay = replay;
    if (replay[0] >= '0' && replay[0] <= '9')   /* a stored run names its template relative
                                                 * to the folder kopt ran in: give it */
        o.template_path = KOPT_EXAMPLES_DIR "/softmax/tune.cu";
    o.resume = resume;
    if (!resume) {
        o.strategy = "random";
        o.seed = 7;
        o.budget = 40;
    }
    o.progress = on_progress;
    o.progress_user = &st;
    o.stop = &st.flag;
    best[0] = '\0';
    *run_id = kopt_run_id(run);
    if (!run || !CHECK_EQ_INT(rc = kopt_run_tune_open(&t, run, ctx, &o), KOPT_OK))
        goto done;
    CHECK_EQ_INT(t->replay, 1);
    CHECK_EQ_INT(t->nshapes, 1);
    CHECK_EQ_STR(t->shapes[0].key.device, "NVIDIA H200");
    if ((rc = kopt_run_tune_go(t, ctx)) != KOPT_OK)
        goto done;
    CHECK_EQ_INT(st.ends, 1);
    CHECK_EQ_INT(t->interrupted, stop_after > 0);
    if (CHECK(t->shapes[0].res != NULL) && t->shapes[0].res->has_best) {
        char *label = kopt_tune_space_label(t->shapes[0].space, t->shapes[0].res->best_point);
        snprintf(best, 512, "%s", label ? label : "");
        free(label);
    }
    *shape_out = t->shapes[0];
    kopt_run_finish(run, ctx, t->interrupted ? KOPT_RUN_INTERRUPTED : KOPT_RUN_OK, NULL);
done:
    if (t) {   /* the copy keeps counts only: its pointers go with t */
        shape_out->res = NULL;
        shape_out->evaluated = NULL;
        shape_out->cache = NULL;
        shape_out->space = NULL;
        shape_out->final = NULL;
        memset(&shape_out->sizes, 0, sizeof(shape_out->sizes));
    }
    kopt_run_tune_free(t);
    kopt_run_close(run);
    return rc;
}

static void test_tune_resume_and_replay(void)
{
    char *db = kopt_path_join(tmp, "tune.db"), *whole_db = kopt_path_join(tmp, "whole.db");
    char best_whole[512], best_part[512], best_resumed[512], best_replayed[512], id_text[32];
    kopt_run_tune_shape whole, part, resumed, replayed;
    kopt_store_run got;
    int64_t run_whole, run_part, run_resumed, run_replayed;

    memset(&whole, 0, sizeof(whole));
    part = resumed = replayed = whole;
    if (!CHECK_EQ_INT(tune(whole_db, SOFTMAX_CACHE, 0, 0, best_whole, &whole, &run_whole),
                      KOPT_OK))
        goto cleanup;
    CHECK(best_whole[0] != '\0');
    CHECK(whole.tune_run_id > 0);

    /* stopped after 10 new evaluations: the tuning run stays unfinished */
    if (!CHECK_EQ_INT(tune(db, SOFTMAX_CACHE, 0, 10, best_part, &part, &run_part), KOPT_OK))
        goto cleanup;
    CHECK(part.nevaluated >= 10 && part.nevaluated < 40);
    if (CHECK_EQ_INT(kopt_run_get(ctx, db, run_part, &got), KOPT_OK)) {
        CHECK_EQ_STR(got.status, "interrupted");
        CHECK_EQ_INT(got.ntune_runs, 1);
    }

    /* resumed: strategy, seed and budget from the store, nothing evaluated twice */
    if (!CHECK_EQ_INT(tune(db, SOFTMAX_CACHE, 1, 0, best_resumed, &resumed, &run_resumed),
                      KOPT_OK))
        goto cleanup;
    CHECK_EQ_INT(resumed.resumed, 1);
    CHECK_EQ_INT(resumed.resumed_from, part.tune_run_id);
    CHECK_EQ_STR(resumed.strategy, "random");
    CHECK_EQ_INT(resumed.seed, 7);
    CHECK_EQ_INT(resumed.budget, 40);
    CHECK_EQ_INT(resumed.loaded, part.nevaluated);
    CHECK_EQ_INT(resumed.reevaluated, 0);
    CHECK_EQ_INT(resumed.loaded + resumed.nevaluated, whole.nevaluated);
    CHECK_EQ_STR(best_resumed, best_whole);
    if (CHECK_EQ_INT(kopt_run_get(ctx, db, run_resumed, &got), KOPT_OK))
        CHECK_EQ_INT(got.parent_id, run_part);

    /* the finished tuning run replays by id from the store, to the same best */
    snprintf(id_text, sizeof(id_text), "%lld", (long long)resumed.tune_run_id);
    if (!CHECK_EQ_INT(tune(db, id_text, 0, 0, best_replayed, &replayed, &run_replayed), KOPT_OK))
        goto cleanup;
    CHECK_EQ_STR(best_replayed, best_whole);
    CHECK_EQ_INT(replayed.tune_run_id, 0);     /* a stored run is only read */
    if (CHECK_EQ_INT(kopt_run_get(ctx, db, run_replayed, &got), KOPT_OK))
        CHECK_EQ_INT(got.parent_id, run_resumed);
cleanup:
    free(db);
    free(whole_db);
}

static void test_tune_faults(void)
{
    kopt_run_tune_opts o;
    kopt_run_tune *t = NULL;
    kopt_run *run = open_run(NULL, KOPT_RUN_TUNE, 0, NULL);
    kopt_vars sizes = KOPT_VARS_INIT;

    if (!run)
        return;
    kopt_run_tune_opts_default(&o);
    o.replay = KOPT_TEST_DATA_DIR "/tune/h200/no-such.json";
    CHECK(kopt_run_tune_open(&t, run, ctx, &o) != KOPT_OK);
    CHECK_EQ_INT(kopt_run_last_fault(run), KOPT_RUN_FAULT_INPUT);
    kopt_run_tune_free(t);
    t = NULL;

    o.replay = NULL;                       /* a candidate that is not a template */
    o.problem_path = KOPT_EXAMPLES_DIR "/softmax";
    o.template_path = KOPT_EXAMPLES_DIR "/softmax/fast.cu";
    CHECK(kopt_run_tune_open(&t, run, ctx, &o) != KOPT_OK);
    CHECK_EQ_INT(kopt_run_last_fault(run), KOPT_RUN_FAULT_INPUT);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "is not a template");
    kopt_run_tune_free(t);
    t = NULL;

    o.replay = SOFTMAX_CACHE;              /* sizes the recording does not hold */
    o.problem_path = o.template_path = NULL;
    kopt_vars_set(&sizes, "B", 4096);
    o.overrides = &sizes;
    if (CHECK_EQ_INT(kopt_run_tune_open(&t, run, ctx, &o), KOPT_OK)) {
        CHECK(kopt_run_tune_go(t, ctx) != KOPT_OK);
        CHECK_EQ_INT(kopt_run_last_fault(run), KOPT_RUN_FAULT_USAGE);
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), "holds measurements at B=8192,N=4096");
    }
    kopt_run_tune_free(t);
    kopt_vars_free(&sizes);
    kopt_run_close(run);
}

#define KB_TANH KOPT_TEST_DATA_DIR "/../optimize/kb_tanh/problem"

static void check_program_refused(kopt_run *run, const kopt_problem *prob,
                                  const kopt_candidate *cand, const char *file)
{
    kopt_run_profile *p = NULL;

    /* here no GPU runs its kernels: the program's profile says why, never an NVRTC error */
    CHECK_EQ_INT(kopt_run_profile_candidate(run, ctx, prob, cand, NULL, &p),
                 KOPT_E_UNSUPPORTED);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), file);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "the PyTorch program");
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "was not profiled");
    CHECK(!strstr(kopt_errmsg(ctx), "NVRTC") && !strstr(kopt_errmsg(ctx), "compilation failed"));
    CHECK_EQ_INT(kopt_run_last_fault(run), KOPT_RUN_FAULT_KOPT);
    CHECK(p && !p->eval && !p->comp && !p->an && !p->program);   /* nothing compiled */
    kopt_run_profile_free(p);
}

static void test_profile_program(void)
{
    /* the PyTorch worker on the CPU, on every machine: a program whose kernels no GPU ran
     * (on a GPU machine the program is profiled: unit.test_run_gpu, gpu_profile_program) */
    char *was = getenv("KOPT_TORCH_DEVICE") ? strdup(getenv("KOPT_TORCH_DEVICE")) : NULL;
    kopt_problem *prob = NULL;
    kopt_candidate *cand = NULL;
    kopt_run *run = open_run(NULL, KOPT_RUN_PROFILE, 0, NULL);
    char *py = ktest_write_file(tmp, "model_new.py", "import torch\n"
                                "class ModelNew(torch.nn.Module):\n"
                                "    def forward(self, x):\n"
                                "        return torch.tanh(x) * 2.0\n");

    setenv("KOPT_TORCH_DEVICE", "cpu", 1);
    if (run && CHECK_EQ_INT(kopt_problem_load(&prob, ctx, KB_TANH), KOPT_OK)) {
        check_program_refused(run, prob, NULL, "model.py");
        if (py && CHECK_EQ_INT(kopt_candidate_load(&cand, ctx, py, prob), KOPT_OK))
            check_program_refused(run, prob, cand, "model_new.py");
    }
    kopt_candidate_free(cand);
    kopt_problem_free(prob);
    free(py);
    kopt_run_close(run);
    ktest_restore_env("KOPT_TORCH_DEVICE", was);
    free(was);
}

/* A program's analysis stored as a profile of source "program": its record with the
 * analysis as the metrics, the forward's time as the median, its findings (recorded record
 * of a synthetic three-kernel chain, tests/data/program/elementwise_chain.json). */
static void test_program_store(void)
{
    char *db = kopt_path_join(tmp, "program.db"), *rec = NULL, *js = NULL, *doc = NULL;
    char *html = NULL;
    kopt_run *run = open_run(db, KOPT_RUN_PROFILE, 0, NULL);
    kopt_problem *prob = NULL;
    kopt_program *prog = NULL;
    kopt_program_analysis *a = NULL;
    json_t *o = NULL, *p, *m;
    int64_t id = 0;
    size_t len;

    if (!run || !CHECK_EQ_INT(kopt_problem_load(&prob, ctx, KB_TANH), KOPT_OK) ||
        !CHECK_EQ_INT(kopt_file_read(ctx, KOPT_TEST_DATA_DIR "/program/elementwise_chain.json",
                                     &rec, &len), KOPT_OK) ||
        !CHECK_EQ_INT(kopt_run_program_analyze(run, ctx, prob, 0, NULL, rec, &prog, &a),
                      KOPT_OK))
        goto done;
    CHECK(a->an && a->an->findings.n > 0);
    CHECK_EQ_INT(kopt_run_program_store(run, ctx, prob, NULL, a, rec, &id, NULL), KOPT_OK);
    CHECK(id > 0);
    if (!CHECK_EQ_INT(kopt_store_profiles_json(kopt_run_store(run), ctx, 0, id, &js), KOPT_OK) ||
        !CHECK((o = json_loads(js, 0, NULL)) != NULL))
        goto done;
    p = json_array_get(o, 0);
    CHECK_EQ_STR(json_string_value(json_object_get(p, "source")), "program");
    CHECK_NEAR(json_number_value(json_object_get(p, "median_ms")), 0.05, 1e-12);
    CHECK_EQ_INT(json_array_size(json_object_get(p, "findings")), a->an->findings.n);
    m = json_object_get(p, "metrics");
    CHECK_EQ_INT(json_array_size(json_object_get(m, "kernels")), 3);
    CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(json_object_get(m,
                 "analysis"), "class"), "program")), kopt_class_name(a->cls));
    /* kopt report shows it kernel by kernel */
    if (CHECK_EQ_INT(kopt_report_document_json(ctx, db, kopt_run_id(run), &doc), KOPT_OK) &&
        CHECK_EQ_INT(kopt_report_html(ctx, doc, NULL, &html), KOPT_OK)) {
        CHECK_STR_CONTAINS(html, "PyTorch programs");
        CHECK_STR_CONTAINS(html, ">vectorized_elementwise_kernel</td><td>aten</td><td>aten::mul"
                                 "</td><td>8192x1x1</td>");
        CHECK_STR_CONTAINS(html, "(28.0% of the forward)");
    }
done:
    free(doc);
    free(html);
    json_decref(o);
    free(js);
    free(rec);
    kopt_program_analysis_free(a);
    kopt_program_free(prog);
    kopt_problem_free(prob);
    kopt_run_close(run);
    free(db);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_run_records), KTEST(test_run_without_store), KTEST(test_eval_linked),
        KTEST(test_tune_resume_and_replay), KTEST(test_tune_faults),
        KTEST(test_profile_program), KTEST(test_program_store),
    };
    int rc;

    ctx = kopt_ctx_new();
    kopt_log_set(ctx, NULL, NULL, KOPT_LOG_ERROR);   /* warnings here are expected ones */
    tmp = ktest_tmpdir("run");
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    if (tmp)
        ktest_rmtree(tmp);
    free(tmp);
    kopt_ctx_free(ctx);
    return rc;
}
