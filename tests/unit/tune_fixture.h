/*
 * tune_fixture.h: the small problem the tuning unit tests tune for (test_tune_*.c):
 * y from x over sizes B=4 x N=1024 (or N=1024 alone), with a reference kernel ref_k written
 * into the test's folder. Header only; include after ktest.h.
 */
#ifndef KOPT_TUNE_FIXTURE_H
#define KOPT_TUNE_FIXTURE_H

#include "kopt/problem.h"

/* The problem named `name` in folder `dir` (batched: B x N; else N alone), or NULL with a
 * message on stderr when it does not parse. */
static inline kopt_problem *tune_fixture_problem(kopt_ctx *ctx, const char *dir,
                                                 const char *name, int batched)
{
    const char *shape = batched ? "[\"B\", \"N\"]" : "[\"N\"]";
    char json[1024], *ref;
    kopt_problem *p = NULL;

    snprintf(json, sizeof(json),
             "{\"name\": \"%s\", \"sizes\": {%s\"N\": 1024},"
             " \"tensors\": ["
             "  {\"name\": \"x\", \"dtype\": \"f32\", \"shape\": %s, \"role\": \"input\"},"
             "  {\"name\": \"y\", \"dtype\": \"f32\", \"shape\": %s, \"role\": \"output\"}],"
             " \"reference\": {\"source\": \"ref.cu\", \"launches\": [{\"kernel\": \"ref_k\","
             "  \"grid\": [\"%s\"], \"block\": [256], \"args\": [\"x\", \"y\", \"N\"]}]}}",
             name, batched ? "\"B\": 4, " : "", shape, shape, batched ? "B" : "N");
    ref = ktest_write_file(dir, "ref.cu",
                           "extern \"C\" __global__ void ref_k(const float *x, float *y, int N)"
                           " {}\n");
    free(ref);
    if (kopt_problem_parse(&p, ctx, json, "p.json", dir) != KOPT_OK)
        fprintf(stderr, "the test problem does not parse: %s\n", kopt_errmsg(ctx));
    return p;
}

#endif
