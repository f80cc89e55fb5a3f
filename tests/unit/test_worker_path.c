/* Finding the worker program (kopt/worker.h) from a program that is not kopt: this test
 * binary must find the build tree's kopt-worker (or an installed one), never itself; the
 * setter and $KOPT_WORKER come first and fail loudly; and a started worker, plain or behind
 * a wrapper, is a real kopt worker answering its job (no GPU needed: it reports why). The
 * GPU a job is for, and the pin of its worker to it (src/eval/pin.c), where none is made. */
#include "ktest.h"
#include "../../src/eval/eval_int.h"
#include "../../src/eval/worker_int.h"
#include "kopt/device.h"
#include "kopt/proc.h"
#include "kopt/worker.h"

#include <stdlib.h>
#include <string.h>

static kopt_ctx *ctx;

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

static void test_found_from_a_test_binary(void)
{
    char *path = NULL;
    const char *source = NULL;

    unsetenv("KOPT_WORKER");
    if (!CHECK_EQ_INT(kopt_worker_find(ctx, &path, &source), KOPT_OK))
        return;
    printf("  worker %s (%s)\n", path, source);
    CHECK(path[0] == '/');
    CHECK(ends_with(path, "/kopt-worker"));
    CHECK(strcmp(path, kopt_self_exe()) != 0);
    CHECK(strcmp(source, "build tree") == 0 || strcmp(source, "install prefix") == 0);
    CHECK(kopt_self_lib() == NULL);   /* linked with libkopt.a */
    free(path);
}

static void test_env_and_setter_come_first(void)
{
    char *path = NULL;
    const char *source = NULL;

    setenv("KOPT_WORKER", "/no/such/kopt-worker", 1);
    CHECK_EQ_INT(kopt_worker_find(ctx, &path, &source), KOPT_E_NOT_FOUND);
    CHECK(path == NULL);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "KOPT_WORKER=/no/such/kopt-worker");

    setenv("KOPT_WORKER", "/bin/true", 1);
    if (CHECK_EQ_INT(kopt_worker_find(ctx, &path, &source), KOPT_OK))
        CHECK_EQ_STR(source, "KOPT_WORKER");
    free(path);

    CHECK_EQ_INT(kopt_worker_set_path(ctx, "/no/such/program"), KOPT_E_NOT_FOUND);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "/no/such/program");
    CHECK_EQ_INT(kopt_worker_set_path(ctx, "/bin/sh"), KOPT_OK);
    if (CHECK_EQ_INT(kopt_worker_find(ctx, &path, &source), KOPT_OK)) {
        CHECK_EQ_STR(source, "kopt_worker_set_path");   /* before $KOPT_WORKER */
        CHECK(ends_with(path, "/sh") || ends_with(path, "/dash") || ends_with(path, "/bash"));
    }
    free(path);
    CHECK_EQ_INT(kopt_worker_set_path(ctx, NULL), KOPT_OK);
    unsetenv("KOPT_WORKER");
    if (CHECK_EQ_INT(kopt_worker_find(ctx, &path, &source), KOPT_OK))
        CHECK(strcmp(source, "kopt_worker_set_path") != 0 && strcmp(source, "KOPT_WORKER") != 0);
    free(path);
}

/* Start a worker for device 9999 (which no machine has): a kopt worker answers with an
 * "error" event, whether or not there is a GPU. The test binary itself would not. */
static void spawn_one(json_t *wrap)
{
    json_t *job = json_pack("{s:s, s:i, s:s}", "op", "devices", "device", 9999, "runtime",
                            "/no/such/runtime.cubin");
    kopt__worker_run run;
    const char *msg;

    if (wrap)
        json_object_set_new(job, "wrap", wrap);
    if (!CHECK_EQ_INT(kopt__worker_spawn(ctx, job, 0, 30, &run), KOPT_OK)) {
        printf("  %s\n", kopt_errmsg(ctx));
        json_decref(job);
        return;
    }
    msg = json_string_value(json_object_get(run.error, "message"));
    printf("  %s: exit %d, error event: %s\n", wrap ? "wrapped" : "plain", run.exit_code,
           msg ? msg : "(none)");
    CHECK(msg != NULL);
    CHECK(run.exit_code != 121 && run.exit_code != 127);   /* exec failed */
    CHECK(!run.log || !strstr(run.log, "ktest:"));         /* not this binary again */
    kopt__worker_run_free(&run);
    json_decref(job);
}

static void test_spawned_worker_answers(void)
{
    unsetenv("KOPT_WORKER");
    spawn_one(NULL);
    spawn_one(json_pack("[s]", "env"));   /* a wrapper from PATH, as ncu is */
}

static void test_missing_worker_is_a_clear_error(void)
{
    json_t *job = json_pack("{s:s, s:i}", "op", "devices", "device", 0);
    kopt__worker_run run;

    setenv("KOPT_WORKER", "/no/such/kopt-worker", 1);
    CHECK_EQ_INT(kopt__worker_spawn(ctx, job, 0, 30, &run), KOPT_E_NOT_FOUND);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "not an executable file");
    unsetenv("KOPT_WORKER");
    json_decref(job);
}

static void test_job_gpu_and_pin(void)
{
    static const struct { const char *json; int gpu; } jobs[] = {
        {"{\"op\": \"run\", \"device\": 2}", 2},
        {"{\"op\": \"run\", \"device\": -1}", -1},
        {"{\"op\": \"run\", \"torch\": {\"device\": \"cuda:3\"}}", 3},
        {"{\"op\": \"run\", \"torch\": {\"device\": \"cuda:12\"}}", 12},
        {"{\"op\": \"run\", \"torch\": {\"device\": \"cuda\"}}", -1},
        {"{\"op\": \"run\", \"torch\": {\"device\": \"cpu\"}}", -1},
        {"{\"op\": \"run\", \"torch\": {\"device\": \"cuda:1x\"}}", -1},
        {"{\"op\": \"run\", \"torch\": {\"device\": \"cuda:-1\"}}", -1},
        {"{\"op\": \"run\"}", -1},
    };
    kopt__worker_pin pin;

    for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
        json_t *j = json_loads(jobs[i].json, 0, NULL);
        if (!CHECK(j != NULL))
            continue;
        if (!CHECK_EQ_INT(kopt__job_gpu(j), jobs[i].gpu))
            printf("  job %s\n", jobs[i].json);
        json_decref(j);
    }
    /* in a worker: CUDA's device 0 only for the GPU it was pinned to */
    unsetenv("KOPT_WORKER_PINNED");
    CHECK_EQ_INT(kopt__pinned_ordinal(3), 3);
    setenv("KOPT_WORKER_PINNED", "3", 1);
    CHECK_EQ_INT(kopt__pinned_ordinal(3), 0);
    CHECK_EQ_INT(kopt__pinned_ordinal(1), 1);
    setenv("KOPT_WORKER_PINNED", "3x", 1);
    CHECK_EQ_INT(kopt__pinned_ordinal(3), 3);
    unsetenv("KOPT_WORKER_PINNED");
    /* no pin: no GPU named, a wrapper, or turned off */
    kopt__worker_pin_for(-1, 0, &pin);
    CHECK_EQ_INT(pin.gpu, -1);
    kopt__worker_pin_for(0, 1, &pin);
    CHECK_EQ_INT(pin.gpu, -1);
    setenv("KOPT_PIN_WORKERS", "0", 1);
    kopt__worker_pin_for(0, 0, &pin);
    CHECK_EQ_INT(pin.gpu, -1);
    unsetenv("KOPT_PIN_WORKERS");
    /* with NVML (a GPU here) GPU 0 is named by its UUID; without it (or in MIG mode), none */
    kopt__worker_pin_for(0, 0, &pin);
    if (pin.gpu == 0) {
        CHECK(strncmp(pin.visible, "GPU-", 4) == 0);
        CHECK_EQ_STR(pin.gpu_text, "0");
    } else {
        kopt_device_info info;
        int mig = 0;
        CHECK_EQ_INT(pin.gpu, -1);
        CHECK(kopt__device_nvml_mig(0, &info, &mig) != KOPT_OK || mig);
    }
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_found_from_a_test_binary),
        KTEST(test_env_and_setter_come_first),
        KTEST(test_spawned_worker_answers),
        KTEST(test_missing_worker_is_a_clear_error),
        KTEST(test_job_gpu_and_pin),
    };
    int rc;

    ctx = kopt_ctx_new();
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    kopt_ctx_free(ctx);
    return rc;
}
