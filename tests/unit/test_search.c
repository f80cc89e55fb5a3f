/* The search's math (widening, UCT, rewards, normalization, dead ends) and its loop in
 * process: manual mode with replies written by the test, the scripted evaluator, no store;
 * what the prompts say of sizes, and of a kernel that could not be profiled. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kopt/kopt.h"
#include "ktest.h"

static void test_widening(void)
{
    CHECK_EQ_INT(kopt_search_widen_limit(1.0, 0.5, 0), 1);
    CHECK_EQ_INT(kopt_search_widen_limit(1.0, 0.5, 1), 1);
    CHECK_EQ_INT(kopt_search_widen_limit(1.0, 0.5, 4), 2);
    CHECK_EQ_INT(kopt_search_widen_limit(1.0, 0.5, 5), 3);
    CHECK_EQ_INT(kopt_search_widen_limit(1.5, 0.5, 9), 5);
    CHECK_EQ_INT(kopt_search_widen_limit(2.0, 0.0, 100), 2);
    CHECK_EQ_INT(kopt_search_widen_limit(1.0, 1.0, 7), 7);
}

static void test_uct(void)
{
    CHECK(isinf(kopt_search_uct(0, 0, 10, 1.0)));
    CHECK_NEAR(kopt_search_uct(2.0, 4, 16, 1.0), 0.5 + sqrt(log(16.0) / 4), 1e-12);
    CHECK_NEAR(kopt_search_uct(2.0, 4, 16, 0.0), 0.5, 1e-12);
    CHECK_NEAR(kopt_search_uct(1.0, 1, 1, 1.0), 1.0, 1e-12);   /* ln 1 = 0 */
    /* fewer visits explore more at equal means */
    CHECK(kopt_search_uct(1.0, 2, 20, 1.0) > kopt_search_uct(5.0, 10, 20, 1.0));
}

static void test_rewards(void)
{
    double raw[5] = {0, log(2.0), log(4.0), 123.0, log(2.0)}, out[5];
    int ok[5] = {1, 1, 1, 0, 1};

    CHECK_NEAR(kopt_search_raw_reward(KOPT_TUNE_TIME, 2.0, 1.0, 0, 0), log(2.0), 1e-12);
    CHECK_NEAR(kopt_search_raw_reward(KOPT_TUNE_TIME, 1.0, 2.0, 0, 0), -log(2.0), 1e-12);
    CHECK_NEAR(kopt_search_raw_reward(KOPT_TUNE_TIME, 1.0, 0.0, 0, 0), 0.0, 0);
    CHECK_NEAR(kopt_search_raw_reward(KOPT_TUNE_ENERGY, 1.0, 0.5, 4.0, 1.0), log(4.0), 1e-12);
    CHECK_NEAR(kopt_search_raw_reward(KOPT_TUNE_TIME_ENERGY, 1.0, 0.5, 4.0, 1.0), log(8.0),
               1e-12);
    kopt_search_normalize(raw, ok, 5, out);
    CHECK_NEAR(out[0], 0.1, 1e-12);
    CHECK_NEAR(out[1], 0.55, 1e-12);
    CHECK_NEAR(out[2], 1.0, 1e-12);
    CHECK_NEAR(out[3], 0.0, 0);          /* wrong: zero, whatever its raw value */
    CHECK_NEAR(out[4], 0.55, 1e-12);
    ok[1] = ok[2] = ok[4] = 0;
    kopt_search_normalize(raw, ok, 5, out);
    CHECK_NEAR(out[0], 1.0, 0);          /* one correct node: full reward */
}

static void test_dead_end(void)
{
    double g1[] = {2.0, 0.0, 1.01, 0.0}, g2[] = {0.0, 0.0, 1.5}, g3[] = {0.0, 0.0};
    char why[160] = "";

    CHECK_EQ_INT(kopt_search_dead_end(g1, 4, 3, 0.02, why, sizeof(why)), 1);
    CHECK_EQ_STR(why, "last 3 children: 2 failed, 1 gained < 2%");
    CHECK_EQ_INT(kopt_search_dead_end(g2, 3, 3, 0.02, why, sizeof(why)), 0);
    CHECK_EQ_INT(kopt_search_dead_end(g3, 2, 3, 0.02, why, sizeof(why)), 0);
    CHECK_EQ_INT(kopt_search_dead_end(g1, 4, 0, 0.02, why, sizeof(why)), 0);
}

static void test_policy_names(void)
{
    kopt_search_policy p;
    CHECK_EQ_INT(kopt_search_policy_parse("best-of-n", &p), 0);
    CHECK_EQ_INT(p, KOPT_SEARCH_BEST_OF_N);
    CHECK_EQ_STR(kopt_search_policy_name(KOPT_SEARCH_BEAM), "beam");
    CHECK_EQ_INT(kopt_search_policy_parse("mcts ", &p), -1);
}

/* Answer every prompt in `dir` that has no reply yet: plans, and kernels as fast as the
 * reference (so every child is flat and the root becomes a dead end). */
static const char *g_kernel_marker = "verdict=OK time=1.0";   /* odd replies */
static const char *g_alt_marker = "verdict=OK time=1.0";      /* even replies */

static int answer_all(const char *dir, int *counter)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    while (d && (e = readdir(d))) {
        char key[256], reply[512], text[512];
        const char *suffix = strstr(e->d_name, ".prompt.md");
        if (!suffix)
            continue;
        snprintf(key, sizeof(key), "%.*s", (int)(suffix - e->d_name), e->d_name);
        snprintf(reply, sizeof(reply), "%s/%s.reply.md", dir, key);
        if (access(reply, F_OK) == 0)
            continue;
        if (strstr(key, "planner"))
            snprintf(text, sizeof(text), "PLAN: unroll by %d\nKIND: unroll\nGAIN: 1.3\n",
                     ++*counter);
        else {
            ++*counter;
            snprintf(text, sizeof(text), "```cuda\n__global__ void k() {}\n// kopt-test: "
                     "%s (%d)\n```\n", *counter % 2 ? g_kernel_marker : g_alt_marker,
                     *counter);
        }
        free(ktest_write_file(dir, strrchr(reply, '/') + 1, text));
        n++;
    }
    if (d)
        closedir(d);
    return n;
}

/* A search of examples/softmax in manual mode (no store), its prompts answered by
 * answer_all until it waits for nothing; the caller checks the tree, then frees it all
 * with manual_done. */
typedef struct manual_run {
    kopt_ctx *ctx;
    kopt_problem *prob;
    kopt_search *s;
    kopt_search_evaluator ev;
    kopt_search_stats st;
    char *dir;
} manual_run;

static int manual_go(manual_run *m, kopt_search_opts *o)
{
    int counter = 0, rounds = 0;

    memset(m, 0, sizeof(*m));
    m->ctx = kopt_ctx_new();
    m->dir = ktest_tmpdir("search");
    o->manual_dir = m->dir;
    o->prompts_dir = KOPT_TEST_DATA_DIR "/../../prompts";
    o->no_tune = 1;
    CHECK_EQ_INT(kopt_problem_load(&m->prob, m->ctx, KOPT_EXAMPLES_DIR "/softmax"), KOPT_OK);
    CHECK_EQ_INT(kopt_search_evaluator_fake(&m->ev, m->ctx, 1.0), KOPT_OK);
    CHECK_EQ_INT(kopt_search_open(&m->s, m->ctx, m->prob, NULL, 1, o), KOPT_OK);
    if (!m->s)
        return -1;
    do {
        CHECK_EQ_INT(kopt_search_go(m->s, m->ctx, NULL, &m->ev), KOPT_OK);
        kopt_search_get_stats(m->s, &m->st);
    } while (m->st.waiting && answer_all(m->dir, &counter) > 0 && ++rounds < 20);
    return 0;
}

static void manual_done(manual_run *m)
{
    kopt_search_close(m->s);
    kopt_search_evaluator_close(&m->ev);
    kopt_problem_free(m->prob);
    kopt_ctx_free(m->ctx);
    ktest_rmtree(m->dir);
    free(m->dir);
}

static void test_loop_manual_prunes(void)
{
    kopt_search_opts o = KOPT_SEARCH_OPTS_INIT;
    manual_run m;
    const kopt_search_node *root;
    char *json;

    o.policy = KOPT_SEARCH_GREEDY;
    o.iterations = 4;
    if (manual_go(&m, &o) == 0) {
        CHECK_STR_CONTAINS(m.st.stop_reason, "4 iterations done");
        root = kopt_search_node_at(m.s, 0);
        CHECK(root->ok);
        CHECK_EQ_INT(root->closed, 1);
        CHECK_EQ_STR(root->closed_reason, "last 3 children: 0 failed, 3 gained < 2%");
        CHECK_EQ_INT(kopt_search_count(m.s), 5);   /* root, 3 children, one of a child */
        CHECK_EQ_INT(kopt_search_node_at(m.s, 4)->parent, 1);
        CHECK(kopt_search_best(m.s) != NULL);
        json = kopt_search_json(m.s);
        CHECK_STR_CONTAINS(json, "\"closed\": \"last 3 children");
        free(json);
    }
    manual_done(&m);
}

/* A SUSPECT kernel (faster than the physical bound) scores zero and is never the best,
 * however fast it claims to be; a cheating verdict is kept. */
static void test_suspect_never_best(void)
{
    kopt_search_opts o = KOPT_SEARCH_OPTS_INIT;
    manual_run m;
    const kopt_search_node *b;
    int suspects = 0;

    o.policy = KOPT_SEARCH_BEST_OF_N;
    o.iterations = 4;
    o.proposals = 2;
    o.debug_attempts = 0;
    g_kernel_marker = "verdict=SUSPECT time=0.001";
    g_alt_marker = "verdict=OK time=0.8";
    if (manual_go(&m, &o) == 0) {
        for (int i = 0; i < kopt_search_count(m.s); i++) {
            const kopt_search_node *n = kopt_search_node_at(m.s, i);
            if (n->verdict == KOPT_VERDICT_SUSPECT) {
                suspects++;
                CHECK_NEAR(n->reward, 0.0, 0);
            }
        }
        CHECK(suspects >= 2);
        b = kopt_search_best(m.s);
        CHECK(b && b->verdict == KOPT_VERDICT_OK);
        CHECK(b && fabs(b->time_ms - 0.8) < 1e-9);
    }
    g_kernel_marker = g_alt_marker = "verdict=OK time=1.0";
    manual_done(&m);
}

/* The coder's prompt gives the sizes by name, each tensor's shape in terms of them, the
 * check sizes where every candidate is also run, and says not to hard-code shapes; its
 * section of sizes gives them as named values, one a line, at both size sets; a problem
 * whose candidates are device mode gets no host-mode ABI. */
static void test_prompt_sizes(void)
{
    kopt_search_opts o = KOPT_SEARCH_OPTS_INIT;
    manual_run m;
    int coders = 0;

    o.policy = KOPT_SEARCH_GREEDY;
    o.iterations = 1;
    if (manual_go(&m, &o) == 0) {
        DIR *d = opendir(m.dir);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            char path[1024], *text;
            if (!strstr(e->d_name, "coder") || !strstr(e->d_name, ".prompt.md"))
                continue;
            snprintf(path, sizeof(path), "%s/%s", m.dir, e->d_name);
            text = ktest_read_file(path);
            CHECK_STR_CONTAINS(text, "sizes: B=8192 N=4096");
            CHECK_STR_CONTAINS(text, "check sizes: B=333 N=1003 (every candidate is also run "
                                     "and checked at these sizes");
            CHECK_STR_CONTAINS(text, "x (f32, input, [B, N]) y (f32, output, [B, N])");
            CHECK_STR_CONTAINS(text, "never from the numbers above: the check sizes differ");
            CHECK_STR_CONTAINS(text, "Sizes are inputs, not constants");
            CHECK_STR_CONTAINS(text, "## The problem's sizes\nAt the benchmark sizes (the ones "
                                     "timed):\n    B = 8192\n    N = 4096\nAt the check sizes");
            CHECK_STR_CONTAINS(text, "SHAPE_SPECIFIC):\n    B = 333\n    N = 1003\n");
            CHECK_STR_CONTAINS(text, "launch plan's argument of that name");
            CHECK(!strstr(text, "## The candidate ABI"));
            free(text);
            coders++;
        }
        if (d)
            closedir(d);
        CHECK(coders >= 1);
    }
    manual_done(&m);
}

/* An evaluator whose candidates are correct but could not be profiled, saying why. */
static kopt_status unprofiled_eval(void *self, kopt_ctx *ctx, const char *source,
                                   const char *tag, kopt_search_outcome *out)
{
    (void)self;
    (void)ctx;
    (void)source;
    (void)tag;
    memset(out, 0, sizeof(*out));
    out->verdict = KOPT_VERDICT_OK;
    out->time_ms = 1.0;
    snprintf(out->profile_note, sizeof(out->profile_note), "model.py is a PyTorch program "
             "whose kernels no GPU ran here");
    return KOPT_OK;
}

/* A root evaluated but not profiled: the planner is told why there is no class nor advice
 * (the evaluator's note), not just "unknown"; the note is kept with the node. */
static void test_prompt_profile_note(void)
{
    kopt_search_opts o = KOPT_SEARCH_OPTS_INIT;
    kopt_search_evaluator ev = {KOPT_SEARCH_API_VERSION, "unprofiled", NULL, unprofiled_eval,
                                NULL, NULL, NULL, NULL, NULL, NULL};
    kopt_ctx *c = kopt_ctx_new();
    kopt_problem *prob = NULL;
    kopt_search *s = NULL;
    char *dir = ktest_tmpdir("note"), *text = NULL, path[1024], *json;

    o.manual_dir = dir;
    o.prompts_dir = KOPT_TEST_DATA_DIR "/../../prompts";
    o.no_tune = 1;
    o.iterations = 1;
    if (CHECK_EQ_INT(kopt_problem_load(&prob, c, KOPT_EXAMPLES_DIR "/softmax"), KOPT_OK) &&
        CHECK_EQ_INT(kopt_search_open(&s, c, prob, NULL, 1, &o), KOPT_OK) &&
        CHECK_EQ_INT(kopt_search_go(s, c, NULL, &ev), KOPT_OK)) {
        snprintf(path, sizeof(path), "%s/e1-p1-planner.prompt.md", dir);
        text = ktest_read_file(path);
        CHECK_STR_CONTAINS(text, "Roofline class: unknown (not profiled: model.py is a PyTorch "
                                 "program whose kernels no GPU ran here)");
        CHECK_STR_CONTAINS(text, "(no advice: this kernel was not profiled: model.py is a "
                                 "PyTorch program");
        json = kopt_search_json(s);
        CHECK_STR_CONTAINS(json, "\"profile_note\": \"model.py is a PyTorch program");
        free(json);
    }
    free(text);
    kopt_search_close(s);
    kopt_problem_free(prob);
    kopt_ctx_free(c);
    if (dir)
        ktest_rmtree(dir);
    free(dir);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_widening), KTEST(test_uct), KTEST(test_rewards), KTEST(test_dead_end),
        KTEST(test_policy_names), KTEST(test_loop_manual_prunes),
        KTEST(test_suspect_never_best), KTEST(test_prompt_sizes),
        KTEST(test_prompt_profile_note)};
    return ktest_main(argc, argv, cases, KTEST_COUNT(cases));
}
