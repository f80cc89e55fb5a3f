/* The worker pool of `kopt serve` (src/eval/pool.c), without a GPU: a stand-in worker (a
 * shell script speaking the early worker's "idle" events, ready when the test says so)
 * shows that an evaluation takes the ready workers first, the oldest of them, and one still
 * starting only when none is ready; that each worker taken is replaced when the evaluation
 * says its workers are set up (kopt__eval_pool_replace), or at once with
 * KOPT_POOL_REPLACE=take (the pool keeps its size while the evaluation runs); that a worker counts as ready only with its
 * buffer at the last evaluation's size; that workers that ended are dropped and replaced;
 * that a worker is handed out once; and that closing the pool ends its workers. Last, the
 * real kopt worker, started ahead, says "idle" (its context made or, here, not). */
#include "ktest.h"
#include "../../src/eval/worker_int.h"
#include "kopt/eval.h"
#include "kopt/worker.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static kopt_ctx *ctx;
static char *dir;
static int order[64], norder;          /* the stand-in workers' pids, in start order */

/* It says its context is made once ready.PID exists, and answers each buffer line with
 * the buffer's size, as kopt's worker does once it has mapped and pinned it. */
static const char *fake_worker =
    "#!/bin/sh\n"
    "D=$KOPT_TEST_POOL_DIR\n"
    "while [ ! -e \"$D/ready.$$\" ]; do sleep 0.01; done\n"
    "echo '{\"event\":\"idle\",\"context\":true,\"shm_size\":0,\"pinned\":false}' >&3\n"
    "while IFS= read -r line; do\n"
    "  size=$(echo \"$line\" | sed -n 's/.*\"shm_size\": *\\([0-9]*\\).*/\\1/p')\n"
    "  echo \"{\\\"event\\\":\\\"idle\\\",\\\"context\\\":true,\\\"shm_size\\\":${size:-0},"
    "\\\"pinned\\\":true}\" >&3\n"
    "done\n";

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Note the pool's workers started since the last look (they come last, oldest first). */
static void sync_order(kopt_eval_pool *p)
{
    int pids[16], n = kopt__eval_pool_pids(p, pids, 16);

    for (int i = 0; i < n; i++) {
        int known = 0;
        for (int j = 0; j < norder; j++)
            known |= order[j] == pids[i];
        if (!known && norder < 64)
            order[norder++] = pids[i];
    }
}

/* The start number of a worker (-1: not one of the pool's). */
static int number_of(int pid)
{
    for (int i = 0; i < norder; i++)
        if (order[i] == pid)
            return i;
    return -1;
}

static void make_ready(int i)
{
    char name[32];
    if (!CHECK(i >= 0 && i < norder))
        return;
    snprintf(name, sizeof(name), "ready.%d", order[i]);
    free(ktest_write_file(dir, name, ""));
}

/* Stats once `ready` workers say they are ready (or 5 s passed). */
static kopt_eval_pool_stats wait_ready(kopt_eval_pool *p, int ready)
{
    kopt_eval_pool_stats s;
    for (int i = 0; i < 500; i++) {
        kopt_eval_pool_stats_get(p, &s);
        if (s.ready >= ready)
            break;
        sleep_ms(10);
    }
    return s;
}

/* A worker taken for device 0, its start number (-1: none taken) and its state then; its
 * replacement started, as an evaluation does once its workers are set up, and noted. */
static int take(kopt_eval_pool *p, int *state)
{
    kopt__worker_proc *w = kopt__eval_pool_take(p, ctx, 0);
    int n;

    if (!w)
        return -1;
    *state = kopt__worker_early_state(w, 0);
    n = number_of(kopt__worker_pid(w));
    kopt__worker_proc_release(w);
    kopt__eval_pool_replace(p, ctx);
    sync_order(p);
    return n;
}

static int gone(int pid)   /* ended (a zombie not yet reaped counts) */
{
    char path[64], line[512] = "";
    FILE *f;

    if (kill(pid, 0) != 0)
        return 1;
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    if (!(f = fopen(path, "r")))
        return 1;
    if (!fgets(line, sizeof(line), f))
        line[0] = '\0';
    fclose(f);
    return strstr(line, ") Z") != NULL || strstr(line, ") X") != NULL;
}

static int setup_fake(void)
{
    char *script;

    norder = 0;
    dir = ktest_tmpdir("pool");
    script = ktest_write_file(dir, "fake-worker", fake_worker);
    chmod(script, 0755);
    setenv("KOPT_TEST_POOL_DIR", dir, 1);
    if (!CHECK_EQ_INT(kopt_worker_set_path(ctx, script), KOPT_OK)) {
        free(script);
        return 0;
    }
    free(script);
    return 1;
}

static void teardown_fake(void)
{
    kopt_worker_set_path(ctx, NULL);
    ktest_rmtree(dir);
    free(dir);
    dir = NULL;
}

static void test_open_bounds(void)
{
    kopt_eval_pool *p = NULL;

    CHECK_EQ_INT(kopt_eval_pool_open(&p, ctx, 0, 0), KOPT_E_INVALID);
    CHECK(p == NULL);
    CHECK_EQ_INT(kopt_eval_pool_open(&p, ctx, 0, 9), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "1 to 8 workers");
    CHECK_EQ_INT(kopt_eval_pool_open(&p, ctx, 0, 8), KOPT_OK);
    CHECK_EQ_INT(kopt_eval_pool_idle(p), 0);      /* nothing started before the fill */
    kopt_eval_pool_close(p);
    kopt_eval_pool_close(NULL);
}

static void test_ready_first_and_refilled(void)
{
    kopt_eval_pool *p = NULL;
    kopt_eval_pool_stats s;
    int st = -9, n;

    if (!setup_fake())
        return;
    if (!CHECK_EQ_INT(kopt_eval_pool_open(&p, ctx, 0, 4), KOPT_OK) ||
        !CHECK_EQ_INT(kopt_eval_pool_fill(p, ctx), KOPT_OK))
        goto out;
    sync_order(p);
    kopt_eval_pool_stats_get(p, &s);
    CHECK_EQ_INT(s.want, 4);
    CHECK_EQ_INT(s.idle, 4);
    CHECK_EQ_INT(s.started, 4);
    CHECK_EQ_INT(s.ready, 0);                        /* none has said so yet */

    make_ready(2);                                   /* the third and fourth started */
    make_ready(3);
    s = wait_ready(p, 2);
    CHECK_EQ_INT(s.ready, 2);
    CHECK_EQ_INT(s.context, 2);

    /* the ready ones, oldest first, though two started before them */
    n = take(p, &st);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(st, 2);
    kopt_eval_pool_stats_get(p, &s);
    CHECK_EQ_INT(s.idle, 4);                         /* replaced once it was set up */
    CHECK_EQ_INT(s.started, 5);
    CHECK_EQ_INT(s.taken_ready, 1);
    n = take(p, &st);
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_INT(st, 2);
    kopt_eval_pool_stats_get(p, &s);
    CHECK_EQ_INT(s.idle, 4);
    CHECK_EQ_INT(s.started, 6);
    CHECK_EQ_INT(s.ready, 0);

    /* another device's evaluation takes nothing, starts nothing */
    CHECK(kopt__eval_pool_take(p, ctx, 1) == NULL);
    kopt_eval_pool_stats_get(p, &s);
    CHECK_EQ_INT(s.started, 6);
    CHECK_EQ_INT(s.taken, 2);

    /* none ready: the one started longest ago, counted as waited for */
    n = take(p, &st);
    CHECK_EQ_INT(n, 0);
    CHECK_EQ_INT(st, 0);
    kopt_eval_pool_stats_get(p, &s);
    CHECK_EQ_INT(s.taken_starting, 1);
    CHECK_EQ_INT(s.idle, 4);
    CHECK_EQ_INT(s.started, 7);

    /* a newer worker ready and an older one ready: the older; a worker once only */
    make_ready(5);
    make_ready(1);
    wait_ready(p, 2);
    CHECK_EQ_INT(take(p, &st), 1);
    CHECK_EQ_INT(take(p, &st), 5);
    CHECK_EQ_INT(take(p, &st), 4);                   /* then the oldest starting again */
    kopt_eval_pool_stats_get(p, &s);
    CHECK_EQ_INT(s.taken, 6);
    CHECK_EQ_INT(s.taken_ready, 4);
    CHECK_EQ_INT(s.taken_starting, 2);
    CHECK_EQ_INT(s.idle, 4);
    CHECK_EQ_INT(s.started, 10);
    CHECK_EQ_INT(s.failed, 0);
out:
    kopt_eval_pool_close(p);
    teardown_fake();
}

/* When the replacements start: not at take, but when the evaluation's workers are set up
 * (kopt__eval_pool_replace, once for all taken since); at take with KOPT_POOL_REPLACE=take.
 * The fill after the answer starts any still owed. */
static void test_replaced_once_set_up(void)
{
    kopt_eval_pool *p = NULL;
    kopt_eval_pool_stats s;
    kopt__worker_proc *a, *b;

    if (!setup_fake())
        return;
    if (!CHECK_EQ_INT(kopt_eval_pool_open(&p, ctx, 0, 4), KOPT_OK) ||
        !CHECK_EQ_INT(kopt_eval_pool_fill(p, ctx), KOPT_OK))
        goto out;
    a = kopt__eval_pool_take(p, ctx, 0);
    b = kopt__eval_pool_take(p, ctx, 0);
    CHECK(a && b);
    kopt_eval_pool_stats_get(p, &s);
    CHECK_EQ_INT(s.idle, 2);                         /* nothing started while they load */
    CHECK_EQ_INT(s.started, 4);
    kopt__eval_pool_replace(p, ctx);                 /* their jobs set up */
    kopt_eval_pool_stats_get(p, &s);
    CHECK_EQ_INT(s.idle, 4);
    CHECK_EQ_INT(s.started, 6);
    kopt__eval_pool_replace(p, ctx);                 /* none owed: nothing more */
    kopt_eval_pool_stats_get(p, &s);
    CHECK_EQ_INT(s.started, 6);
    kopt__worker_proc_release(a);
    kopt__worker_proc_release(b);

    a = kopt__eval_pool_take(p, ctx, 0);             /* an evaluation that failed early */
    kopt__worker_proc_release(a);
    CHECK_EQ_INT(kopt_eval_pool_fill(p, ctx), KOPT_OK);
    kopt_eval_pool_stats_get(p, &s);
    CHECK_EQ_INT(s.idle, 4);
    CHECK_EQ_INT(s.started, 7);
    kopt__eval_pool_replace(p, ctx);                 /* the fill paid what was owed */
    kopt_eval_pool_stats_get(p, &s);
    CHECK_EQ_INT(s.started, 7);

    setenv("KOPT_POOL_REPLACE", "take", 1);
    a = kopt__eval_pool_take(p, ctx, 0);
    unsetenv("KOPT_POOL_REPLACE");
    kopt_eval_pool_stats_get(p, &s);
    CHECK_EQ_INT(s.idle, 4);                         /* replaced the moment it was taken */
    CHECK_EQ_INT(s.started, 8);
    kopt__worker_proc_release(a);
out:
    kopt_eval_pool_close(p);
    teardown_fake();
}

/* The reference's serving worker: kept by the pool for its device, the output size it was
 * given and the environment then; another device gets none, another environment drops it,
 * and closing the pool ends it. */
static void test_serving_reference_kept(void)
{
    kopt_eval_pool *p = NULL;
    kopt_eval_pool_stats s;
    kopt__worker_proc *w;
    int pid;

    if (!setup_fake())
        return;
    if (!CHECK_EQ_INT(kopt_eval_pool_open(&p, ctx, 0, 2), KOPT_OK) ||
        !CHECK_EQ_INT(kopt_eval_pool_fill(p, ctx), KOPT_OK))
        goto out;
    CHECK(kopt__eval_pool_serving_ref(p, 0) == NULL);          /* none yet */
    w = kopt__eval_pool_take(p, ctx, 0);
    if (!CHECK(w != NULL))
        goto out;
    pid = kopt__worker_pid(w);
    CHECK_EQ_INT(kopt__eval_pool_keep_ref(p, w, 4096), 1);
    CHECK(kopt__eval_pool_serving_ref(p, 1) == NULL);          /* another device */
    CHECK(kopt__eval_pool_serving_ref(p, 0) == w);
    CHECK(kopt__eval_pool_serving_total(p) == 4096);
    CHECK_EQ_INT(kopt__eval_pool_keep_ref(p, w, 4096), 1);     /* kept again: counted */
    kopt_eval_pool_stats_get(p, &s);
    CHECK_EQ_INT(s.ref_serving, 1);
    CHECK_EQ_INT((int)s.ref_served, 2);
    setenv("KOPT_TEST_POOL_ENV", "changed", 1);                 /* another client's settings */
    CHECK(kopt__eval_pool_serving_ref(p, 0) == NULL);
    unsetenv("KOPT_TEST_POOL_ENV");
    kopt_eval_pool_stats_get(p, &s);
    CHECK_EQ_INT(s.ref_serving, 0);
    for (int t = 0; t < 200 && !gone(pid); t++)                 /* dropped: ended */
        sleep_ms(10);
    CHECK(gone(pid));
    w = kopt__eval_pool_take(p, ctx, 0);
    if (CHECK(w != NULL)) {
        pid = kopt__worker_pid(w);
        CHECK_EQ_INT(kopt__eval_pool_keep_ref(p, w, 8192), 1);
        kopt_eval_pool_close(p);                                 /* ends it too */
        p = NULL;
        for (int t = 0; t < 200 && !gone(pid); t++)
            sleep_ms(10);
        CHECK(gone(pid));
    }
out:
    kopt_eval_pool_close(p);
    teardown_fake();
}

static void test_ready_means_buffer_at_size(void)
{
    kopt_eval_pool *p = NULL;
    kopt_eval_pool_stats s;
    int st = -9, n;

    if (!setup_fake())
        return;
    if (!CHECK_EQ_INT(kopt_eval_pool_open(&p, ctx, 0, 2), KOPT_OK))
        goto out;
    kopt__eval_pool_note_size(p, 4096);
    if (!CHECK_EQ_INT(kopt_eval_pool_fill(p, ctx), KOPT_OK))
        goto out;
    sync_order(p);
    make_ready(0);
    make_ready(1);
    s = wait_ready(p, 2);
    CHECK_EQ_INT(s.ready, 2);                        /* context made, buffer at 4096 */

    /* the next evaluation needs 8192: made ahead for the replacement only; the
     * older two have their context made, not the buffer: the replacement, once ready at
     * 8192, comes first */
    kopt__eval_pool_note_size(p, 8192);
    kopt_eval_pool_stats_get(p, &s);
    CHECK_EQ_INT(s.ready, 0);
    CHECK_EQ_INT(s.context, 2);
    n = take(p, &st);
    CHECK_EQ_INT(n, 0);                              /* both alike: the older */
    CHECK_EQ_INT(st, 2);                             /* (state at any size) */
    make_ready(2);
    s = wait_ready(p, 1);
    CHECK_EQ_INT(s.ready, 1);
    CHECK_EQ_INT(take(p, &st), 2);
    kopt_eval_pool_stats_get(p, &s);
    CHECK_EQ_INT(s.taken_context, 1);                /* the first: context, not buffer */
    CHECK_EQ_INT(s.taken_ready, 1);

    /* the fill after the answer gives the others their buffer at the new size */
    CHECK_EQ_INT(kopt_eval_pool_fill(p, ctx), KOPT_OK);
    make_ready(3);
    s = wait_ready(p, 2);
    CHECK_EQ_INT(s.ready, 2);
    CHECK_EQ_INT(s.idle, 2);

    /* a size too large to keep for every worker: none made ahead, any size counts */
    kopt__eval_pool_note_size(p, (size_t)9 << 30);
    kopt_eval_pool_stats_get(p, &s);
    CHECK_EQ_INT(s.ready, 2);
out:
    kopt_eval_pool_close(p);
    teardown_fake();
}

static void test_ended_workers_dropped_and_closed(void)
{
    kopt_eval_pool *p = NULL;
    kopt_eval_pool_stats s;
    int st = -9;

    if (!setup_fake())
        return;
    if (!CHECK_EQ_INT(kopt_eval_pool_open(&p, ctx, 0, 3), KOPT_OK) ||
        !CHECK_EQ_INT(kopt_eval_pool_fill(p, ctx), KOPT_OK))
        goto out;
    sync_order(p);
    make_ready(0);
    wait_ready(p, 1);
    kill(order[0], SIGKILL);                         /* the ready one ends on its own */
    for (int t = 0; t < 500; t++) {                  /* ended: no longer counted ready */
        kopt_eval_pool_stats_get(p, &s);
        if (s.ready == 0)
            break;
        sleep_ms(10);
    }
    CHECK_EQ_INT(s.ready, 0);
    CHECK_EQ_INT(kopt_eval_pool_fill(p, ctx), KOPT_OK);
    sync_order(p);
    kopt_eval_pool_stats_get(p, &s);
    CHECK_EQ_INT(s.lost, 1);
    CHECK_EQ_INT(s.idle, 3);
    CHECK_EQ_INT(s.started, 4);
    CHECK_EQ_INT(take(p, &st), 1);                   /* not the dead one */
    kopt_eval_pool_close(p);
    p = NULL;
    for (int i = 2; i < 5 && i < norder; i++) {
        int t = 0;
        while (!gone(order[i]) && t++ < 200)
            sleep_ms(10);
        CHECK(gone(order[i]));                       /* closing ends the idle workers */
    }
    CHECK_EQ_INT(norder, 5);
out:
    kopt_eval_pool_close(p);
    teardown_fake();
}

/* The real worker started ahead says "idle": its context made (a GPU here) or not (none),
 * then again once its buffer is mapped at the size it was given. */
static void test_real_worker_says_idle(void)
{
    kopt__worker_proc *w = NULL;
    int said = 0, state = -9;

    kopt_worker_set_path(ctx, NULL);   /* the build's worker, or $KOPT_WORKER's */
    if (!CHECK_EQ_INT(kopt__worker_prestart(ctx, 0, &w), KOPT_OK)) {
        printf("  %s\n", kopt_errmsg(ctx));
        return;
    }
    for (int t = 0; t < 3000 && !(said = kopt__worker_early_context(w)); t++)
        sleep_ms(10);
    printf("  context %s\n", said == 1 ? "made" : said == -1 ? "not made (no GPU)" : "?");
    CHECK(said == 1 || said == -1);
    CHECK_EQ_INT(kopt__worker_buffer(ctx, w, 1 << 20), KOPT_OK);
    for (int t = 0; t < 1000; t++) {
        state = kopt__worker_early_state(w, 1 << 20);
        if (state == 2 || (said == -1 && state == 0 && t > 50))
            break;
        sleep_ms(10);
    }
    CHECK_EQ_INT(state, said == 1 ? 2 : 0);          /* alive either way */
    kopt__worker_proc_release(w);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_open_bounds),
        KTEST(test_ready_first_and_refilled),
        KTEST(test_replaced_once_set_up),
        KTEST(test_serving_reference_kept),
        KTEST(test_ready_means_buffer_at_size),
        KTEST(test_ended_workers_dropped_and_closed),
        KTEST(test_real_worker_says_idle),
    };
    int rc;

    signal(SIGPIPE, SIG_IGN);
    ctx = kopt_ctx_new();
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    kopt_ctx_free(ctx);
    return rc;
}
