/*
 * An evaluation session on a problem with a PyTorch reference (src/eval/torch_eval.c,
 * kopt__eval_torch): the session's seed is fixed, so the reference's outputs and time come from
 * its first run and later candidates start only their own worker (reference_reused), one
 * started ahead at the end of the previous evaluation (worker_ahead); a wrong candidate is
 * still WRONG against those outputs; a one-shot evaluation does neither. Once the session's
 * zygote has imported torch, candidates' workers are forked by it (worker_forked), with the
 * same verdicts and the same sandbox report; KOPT_TORCH_ZYGOTE=0 forks none. A session
 * warmed before its first run (kopt_eval_session_warm) starts the zygote then, so that the
 * first run's workers are forked too. The live search evaluator's warm (one GPU of several,
 * beside the root) readies the reference the same way, storing nothing.
 * Runs on the CPU build of PyTorch (KOPT_TORCH_DEVICE=cpu), as CI has it; without torch:
 * "skipped: no torch".
 */
#include "ktest.h"

#include "kopt/kopt.h"
#include "../../src/eval/eval_int.h"
#include "../../src/eval/worker_int.h"

#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const good =
    "import torch\n"
    "class ModelNew(torch.nn.Module):\n"
    "    def __init__(self, *a):\n"
    "        super().__init__()\n"
    "    def forward(self, x, z, alpha):\n"
    "        return alpha * x + z\n";

static kopt_problem *import_problem(kopt_ctx *ctx, const char *dir)
{
    kopt_kb_import_record *recs = NULL;
    kopt_problem *p = NULL;
    char src[4096], out[4096], pdir[4200];
    int n = 0;

    snprintf(src, sizeof(src), "%s/../bench/kernelbench/problems/3_scale_add.py", KOPT_EXAMPLES_DIR);
    snprintf(out, sizeof(out), "%s/p", dir);
    if (!CHECK_EQ_INT(kopt_kb_import(ctx, src, out, NULL, &recs, &n), KOPT_OK) ||
        !CHECK_EQ_INT(n, 1))
        return NULL;
    kopt_kb_import_free(recs, n);
    snprintf(pdir, sizeof(pdir), "%s/3_scale_add", out);
    CHECK_EQ_INT(kopt_problem_load(&p, ctx, pdir), KOPT_OK);
    return p;
}

static kopt_eval_result *run(kopt_ctx *ctx, kopt_eval_session *s, const kopt_problem *prob,
                             const kopt_eval_opts *o, const char *dir, const char *name,
                             const char *text)
{
    char *path = ktest_write_file(dir, name, text);
    kopt_candidate *c = NULL;
    kopt_eval_result *r = NULL;

    if (CHECK_EQ_INT(kopt_candidate_load(&c, ctx, path, prob), KOPT_OK)) {
        if (s)
            CHECK_EQ_INT(kopt_eval_session_run(s, ctx, c, &r), KOPT_OK);
        else
            CHECK_EQ_INT(kopt_eval_run(&r, ctx, prob, c, o), KOPT_OK);
    }
    kopt_candidate_free(c);
    free(path);
    return r;
}

/* The imported problem on the CPU build of PyTorch, evaluated at small sizes, 2 trials,
 * untimed (o and sizes set); NULL when python3 has no torch (skipped) or the import failed. */
static kopt_problem *session_problem(kopt_ctx *ctx, const char *dir, kopt_vars *sizes,
                                     kopt_eval_opts *o)
{
    if (system("python3 -c 'import torch' >/dev/null 2>&1") != 0) {
        KTEST_SKIP("no torch (python3 cannot import torch)");
        return NULL;
    }
    setenv("KOPT_TORCH_DEVICE", "cpu", 1);
    kopt_vars_set(sizes, "batch", 64);
    kopt_vars_set(sizes, "width", 96);
    o->sizes = sizes;
    o->trials = 2;
    o->no_timing = 1;
    return import_problem(ctx, dir);
}

/* What each test below works in: a folder, the imported problem at small sizes and a session
 * of it (fixture_open: 0 when skipped or failed). fixture_close ends all of it. */
typedef struct fixture {
    char *dir;
    kopt_ctx *ctx;
    kopt_problem *prob;
    kopt_eval_session *s;
    kopt_eval_opts o;
    kopt_vars sizes;
} fixture;

static int fixture_open(fixture *f, const char *name)
{
    const kopt_eval_opts dflt = KOPT_EVAL_OPTS_INIT;
    const kopt_vars none = KOPT_VARS_INIT;

    memset(f, 0, sizeof(*f));
    f->o = dflt;
    f->sizes = none;
    f->dir = ktest_tmpdir(name);
    f->ctx = kopt_ctx_new();
    return (f->prob = session_problem(f->ctx, f->dir, &f->sizes, &f->o)) != NULL &&
           CHECK_EQ_INT(kopt_eval_session_open(&f->s, f->ctx, f->prob, &f->o), KOPT_OK);
}

static void fixture_close(fixture *f)
{
    kopt_eval_session_close(f->s);
    kopt_vars_free(&f->sizes);
    kopt_problem_free(f->prob);
    kopt_ctx_free(f->ctx);
    ktest_rmtree(f->dir);
    free(f->dir);
}

static void test_reference_once_per_session(void)
{
    fixture f;
    kopt_eval_result *r1 = NULL, *r2 = NULL, *r3 = NULL, *r4 = NULL;

    if (!fixture_open(&f, "sesstorch"))
        goto out;
    r1 = run(f.ctx, f.s, f.prob, &f.o, f.dir, "a.py", good);
    r2 = run(f.ctx, f.s, f.prob, &f.o, f.dir, "b.py", good);
    r3 = run(f.ctx, f.s, f.prob, &f.o, f.dir, "wrong.py",
             "import torch\nclass ModelNew(torch.nn.Module):\n    def __init__(self, *a):\n"
             "        super().__init__()\n    def forward(self, x, z, alpha):\n        return alpha * x - z\n");
    r4 = run(f.ctx, NULL, f.prob, &f.o, f.dir, "c.py", good);
    if (!r1 || !r2 || !r3 || !r4)
        goto out;
    if (r1->verdict != KOPT_VERDICT_OK)
        printf("  r1: %s\n", r1->message);
    CHECK_EQ_INT(r1->verdict, KOPT_VERDICT_OK);
    CHECK_EQ_INT(r1->ref_reused, 0);           /* the first runs the reference */
    CHECK_EQ_INT(r1->worker_ahead, 0);         /* and starts its own worker */
    CHECK_EQ_INT(r2->verdict, KOPT_VERDICT_OK);
    CHECK_EQ_INT(r2->ref_reused, 1);           /* the next ones take its outputs */
    CHECK_EQ_INT(r2->worker_ahead, 1);         /* and the worker the last one started */
    CHECK_EQ_INT(r3->verdict, KOPT_VERDICT_WRONG);
    CHECK_EQ_INT(r3->ref_reused, 1);
    CHECK_EQ_INT(r3->worker_ahead, 1);         /* a wrong candidate in it is still WRONG */
    CHECK_EQ_INT(r4->verdict, KOPT_VERDICT_OK);
    CHECK_EQ_INT(r4->ref_reused, 0);           /* one-shot: a fresh seed, its own reference */
    CHECK_EQ_INT(r4->worker_ahead, 0);
out:
    kopt_eval_result_free(r1);
    kopt_eval_result_free(r2);
    kopt_eval_result_free(r3);
    kopt_eval_result_free(r4);
    fixture_close(&f);
}

/* Evaluations in a session until one's worker was forked (the zygote imports meanwhile),
 * at most n, 1 s apart; the index of the first forked, or -1. */
static int until_forked(kopt_ctx *ctx, kopt_eval_session *s, const kopt_problem *prob,
                        const kopt_eval_opts *o, const char *dir, int n, kopt_eval_result **last)
{
    for (int i = 0; i < n; i++) {
        char name[32];
        kopt_eval_result *r;
        snprintf(name, sizeof(name), "g%d.py", i);
        if (!(r = run(ctx, s, prob, o, dir, name, good)))
            return -1;
        CHECK_EQ_INT(r->verdict, KOPT_VERDICT_OK);
        if (r->worker_forked) {
            *last = r;
            return i;
        }
        kopt_eval_result_free(r);
        sleep(1);
    }
    return -1;
}

static void test_workers_forked_by_the_zygote(void)
{
    fixture f;
    kopt_eval_result *fr = NULL, *w = NULL, *x = NULL;
    int at;

    if (!fixture_open(&f, "zygote"))
        goto out;
    at = until_forked(f.ctx, f.s, f.prob, &f.o, f.dir, 30, &fr);
    if (!CHECK(at >= 1))                       /* the first ran before any zygote */
        goto out;
    CHECK(strstr(fr->sandbox, "seccomp") != NULL);   /* locked down as an exec'd worker */
    /* a wrong candidate in a forked worker is still WRONG; one that tries the network or
     * to start a process is stopped by the same sandbox */
    w = run(f.ctx, f.s, f.prob, &f.o, f.dir, "wrong.py",
            "import torch\nclass ModelNew(torch.nn.Module):\n    def __init__(self, *a):\n"
            "        super().__init__()\n    def forward(self, x, z, alpha):\n"
            "        return alpha * x - z\n");
    x = run(f.ctx, f.s, f.prob, &f.o, f.dir, "fork.py",
            "import os, torch\nclass ModelNew(torch.nn.Module):\n    def __init__(self, *a):\n"
            "        super().__init__()\n    def forward(self, x, z, alpha):\n"
            "        os.system('true')\n        return alpha * x + z\n");
    if (CHECK(w && x)) {
        CHECK_EQ_INT(w->verdict, KOPT_VERDICT_WRONG);
        CHECK_EQ_INT(w->worker_forked, 1);
        CHECK_EQ_INT(x->worker_forked, 1);
        CHECK_EQ_INT(x->verdict, KOPT_VERDICT_TAMPER);
        CHECK_STR_CONTAINS(x->message, "forbidden system call");
    }
    kopt_eval_session_close(f.s);
    f.s = NULL;

    /* off: every worker by exec */
    setenv("KOPT_TORCH_ZYGOTE", "0", 1);
    if (CHECK_EQ_INT(kopt_eval_session_open(&f.s, f.ctx, f.prob, &f.o), KOPT_OK)) {
        kopt_eval_result *r = NULL;
        CHECK_EQ_INT(until_forked(f.ctx, f.s, f.prob, &f.o, f.dir, 3, &r), -1);
        kopt_eval_result_free(r);
    }
    unsetenv("KOPT_TORCH_ZYGOTE");
out:
    kopt_eval_result_free(fr);
    kopt_eval_result_free(w);
    kopt_eval_result_free(x);
    fixture_close(&f);
}

/* kopt_eval_session_warm on a PyTorch reference starts the session's zygote: once it has
 * imported torch, the session's first run is forked by it (unwarmed, the first never is,
 * above), and counted; KOPT_TORCH_ZYGOTE=0 starts none. */
static void test_warm_starts_the_zygote(void)
{
    fixture f;
    kopt_eval_result *r = NULL;
    kopt__zygote *z;
    int runs = 0, workers = 0;

    if (!fixture_open(&f, "warm") || !CHECK_EQ_INT(kopt_eval_session_warm(f.s, f.ctx), KOPT_OK) ||
        !CHECK((z = f.s->zygote) != NULL))
        goto out;
    for (int i = 0; i < 600 && !kopt__zygote_ready(z); i++)   /* torch imports: up to 60 s */
        usleep(100 * 1000);
    CHECK(kopt__zygote_ready(z));
    if ((r = run(f.ctx, f.s, f.prob, &f.o, f.dir, "w0.py", good))) {
        CHECK_EQ_INT(r->verdict, KOPT_VERDICT_OK);
        CHECK_EQ_INT(r->worker_forked, 1);      /* the first run's candidate: forked */
    }
    kopt_eval_session_counts(f.s, &runs, &workers);
    CHECK_EQ_INT(runs, 1);                      /* counted, so a warm now does nothing */
    kopt_eval_session_close(f.s);
    f.s = NULL;
    setenv("KOPT_TORCH_ZYGOTE", "0", 1);
    if (CHECK_EQ_INT(kopt_eval_session_open(&f.s, f.ctx, f.prob, &f.o), KOPT_OK) &&
        CHECK_EQ_INT(kopt_eval_session_warm(f.s, f.ctx), KOPT_OK))
        CHECK(f.s->zygote == NULL);
    unsetenv("KOPT_TORCH_ZYGOTE");
out:
    kopt_eval_result_free(r);
    fixture_close(&f);
}

/* After the reference evaluated as a candidate (a search's root, or a GPU's warm), the
 * session's workers started ahead are for host-mode candidates, which the search asks the
 * model for, not for the reference's own subject; after a ModelNew candidate they are for
 * ModelNew candidates again. */
static void test_reference_readies_host_workers(void)
{
    fixture f;
    kopt_candidate *ref = NULL;
    kopt_eval_result *r = NULL, *g = NULL;

    if (!fixture_open(&f, "refahead") ||
        !CHECK_EQ_INT(kopt_candidate_from_reference(&ref, f.ctx, f.prob), KOPT_OK) ||
        !CHECK_EQ_INT(kopt_eval_session_run(f.s, f.ctx, ref, &r), KOPT_OK))
        goto out;
    CHECK_EQ_INT(r->verdict, KOPT_VERDICT_OK);
    CHECK(f.s->ahead[0] != NULL);
    CHECK_EQ_STR(f.s->ahead_subject[0], "host");
    if ((g = run(f.ctx, f.s, f.prob, &f.o, f.dir, "g.py", good))) {
        CHECK_EQ_INT(g->verdict, KOPT_VERDICT_OK);
        CHECK_EQ_INT(g->worker_ahead, 0);       /* none was for a ModelNew */
        CHECK(f.s->ahead[0] != NULL);
        CHECK_EQ_STR(f.s->ahead_subject[0], "modelnew");
    }
out:
    kopt_eval_result_free(r);
    kopt_eval_result_free(g);
    kopt_candidate_free(ref);
    fixture_close(&f);
}

/* The result JSON of stored evaluation `id` in the store at `db` (owned; NULL: none). */
static char *stored_result(const char *db, int64_t id)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    char *out = NULL;

    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h, "SELECT result_json FROM evaluations WHERE id = ?", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, id);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            out = strdup((const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return out;
}

/* One GPU of several (kopt optimize --gpus): the live evaluator's warm, run beside the root
 * on another GPU, evaluates the reference with nothing stored, so this GPU's first candidate
 * takes the reference's outputs (reference_reused) instead of paying for its run in the
 * search's first steps (and its workers for host-mode candidates are started then, below). Unwarmed, the
 * first candidate runs the reference itself. (The candidate here is the reference, as the
 * root is: a PyTorch problem's candidates are host-mode CUDA, which needs a GPU.) */
static void test_live_warm_readies_the_reference(void)
{
    fixture f;
    kopt_run *run = NULL;
    kopt_run_opts ro = KOPT_RUN_OPTS_INIT;
    kopt_search_live_opts lo = KOPT_SEARCH_LIVE_OPTS_INIT;
    char db[4200];
    int64_t before = -1, after = -1;

    if (!fixture_open(&f, "livewarm"))
        goto out;
    snprintf(db, sizeof(db), "%s/k.db", f.dir);
    ro.db_path = db;
    if (!CHECK_EQ_INT(kopt_run_open(&run, f.ctx, &ro), KOPT_OK))
        goto out;
    lo.eval = f.o;
    lo.no_profile = 1;
    lo.spread = 1;
    lo.workdir = f.dir;
    for (int warm = 1; warm >= 0; warm--) {
        kopt_search_evaluator ev;
        kopt_search_outcome o;
        kopt_store *st = kopt_run_store(run);
        char *json = NULL;
        json_t *doc;
        if (!CHECK_EQ_INT(kopt_search_evaluator_live(&ev, f.ctx, run, f.prob, &lo), KOPT_OK))
            break;
        CHECK(ev.warm != NULL);
        kopt_store_count_evals(st, f.ctx, &before);
        if (warm && ev.warm)
            CHECK_EQ_INT(ev.warm(ev.self, f.ctx), KOPT_OK);
        kopt_store_count_evals(st, f.ctx, &after);
        CHECK_EQ_INT(after, before);             /* the warm stored nothing */
        if (CHECK_EQ_INT(ev.evaluate(ev.self, f.ctx, f.prob->ref_source, warm ? "n1" : "n2",
                                       &o), KOPT_OK)) {
            if (!CHECK_EQ_INT(o.verdict, KOPT_VERDICT_OK))
                printf("  %s: %s\n", warm ? "n1" : "n2", o.message);
            CHECK_EQ_INT(ev.commit(ev.self, f.ctx, warm ? "n1" : "n2", &o), KOPT_OK);
            CHECK(o.eval_id > 0);
            json = stored_result(db, o.eval_id);
            CHECK(json != NULL);
            if (json && (doc = json_loads(json, 0, NULL))) {
                CHECK_EQ_INT(json_is_true(json_object_get(doc, "reference_reused")), warm);
                /* the workers the warm started ahead are for host-mode candidates, what
                 * the search asks for (test_reference_readies_host_workers), not for this
                 * second run of the reference */
                CHECK_EQ_INT(json_is_true(json_object_get(doc, "worker_ahead")), 0);
                CHECK(json_is_boolean(json_object_get(doc, "reference_reused")));
                json_decref(doc);
            }
            kopt_search_outcome_clear(&o);
        }
        free(json);
        kopt_search_evaluator_close(&ev);
    }
out:
    kopt_run_close(run);
    fixture_close(&f);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {KTEST(test_reference_once_per_session),
                                       KTEST(test_workers_forked_by_the_zygote),
                                       KTEST(test_warm_starts_the_zygote),
                                       KTEST(test_reference_readies_host_workers),
                                       KTEST(test_live_warm_readies_the_reference)};
    return ktest_main(argc, argv, cases, KTEST_COUNT(cases));
}
