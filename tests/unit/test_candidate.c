/*
 * Unit tests of candidate files (kopt_candidate_parse: the optional leading @kopt JSON
 * front matter block and its errors) and of binding a problem + candidate to concrete sizes
 * (kopt_bind: shapes, launch dimensions, arguments, constraints, overflow checks).
 */
#include "ktest.h"

#include "kopt/problem.h"

static kopt_ctx *ctx;
static char *tmp;
static kopt_problem *prob;       /* device-mode reference */
static kopt_problem *host_prob;  /* host-mode reference without a launch plan */

static const char *const PROBLEM_JSON =
    "{\"name\": \"cand\", \"sizes\": {\"B\": 4, \"N\": 1000},"
    " \"tensors\": ["
    "  {\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"B\", \"N\"], \"role\": \"input\"},"
    "  {\"name\": \"y\", \"dtype\": \"f32\", \"shape\": [\"B\", \"N\"], \"role\": \"output\"}],"
    " \"reference\": {\"source\": \"ref.cu\", \"launches\": [{\"kernel\": \"ref_k\","
    "  \"grid\": [\"B\"], \"block\": [256], \"args\": [\"x\", \"y\", \"N\"]}]}}";

static const char *const HOST_PROBLEM_JSON =
    "{\"name\": \"hostref\", \"sizes\": {\"N\": 10},"
    " \"tensors\": [{\"name\": \"y\", \"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"output\"}],"
    " \"reference\": {\"source\": \"ref.cu\", \"mode\": \"host\"}}";

/* the full front matter of a device-mode candidate */
static const char *const FULL_DEVICE =
    "/*@kopt\n"
    "{\n"
    "  \"launches\": [{\"memset\": \"acc\", \"value\": 0},\n"
    "               {\"kernel\": \"fast<T>\", \"grid\": [\"cdiv(N, T)\", \"B\"], \"block\": [\"T\"],\n"
    "                \"smem\": \"T*4\",\n"
    "                \"args\": [\"x\", \"y\", \"acc\", \"N\", {\"i32\": \"N*B\"}, {\"f32\": 2.5},\n"
    "                         \"cnt\", \"VEC*2\"]}],\n"
    "  \"params\": {\"T\": 128, \"VEC\": 4},\n"
    "  \"constraints\": [\"T % 32 == 0\", \"N % VEC == 0\"],\n"
    "  \"scratch\": [{\"name\": \"acc\", \"dtype\": \"f32\", \"shape\": [\"B\"]},\n"
    "              {\"name\": \"cnt\", \"dtype\": \"i32\", \"shape\": [\"cdiv(N, T)\"],"
    " \"role\": \"scratch\"}],\n"
    "  \"options\": [\"--use_fast_math\", \"-DFOO=1\"],\n"
    "  \"includes\": [\"inc\", \"/abs/inc\"],\n"
    "  \"mode\": \"device\"\n"
    "}\n"
    "*/\n"
    "template <int T> __global__ void fast(const float *x, float *y, float *acc, int N) {}\n";

static kopt_status parse_cand(kopt_candidate **out, const char *text)
{
    return kopt_candidate_parse(out, ctx, text, "c.cu", prob);
}

static void test_no_front_matter_copies_reference_plan(void)
{
    const char *src = "extern \"C\" __global__ void ref_k(const float *x, float *y, int N) {}\n";
    kopt_candidate *c = NULL;
    const kopt_launch *l;
    char hex[65];

    if (!CHECK_EQ_INT(parse_cand(&c, src), KOPT_OK)) {
        fprintf(stderr, "  %s\n", kopt_errmsg(ctx));
        return;
    }
    CHECK_EQ_INT(c->has_front_matter, 0);
    CHECK_EQ_INT(c->is_reference, 0);
    CHECK_EQ_INT(c->host_mode, 0);
    CHECK_EQ_STR(c->path, "c.cu");
    CHECK_EQ_STR(c->dir, ".");
    CHECK_EQ_STR(c->source, src);
    CHECK_EQ_INT(c->params.n, 0);
    CHECK_EQ_INT(c->nconstraints, 0);
    CHECK_EQ_INT(c->nscratch, 0);
    CHECK_EQ_INT(c->noptions, 0);
    kopt_sha256_hex(src, strlen(src), hex);
    CHECK_EQ_STR(c->hash, hex);
    if (CHECK_EQ_INT(c->plan.n, 1)) {
        l = &c->plan.steps[0];
        CHECK(l != prob->ref_plan.steps);                 /* a copy, not shared */
        CHECK(l->kernel != prob->ref_plan.steps[0].kernel);
        CHECK_EQ_STR(l->kernel, "ref_k");
        CHECK_EQ_INT(l->ngrid, 1);
        CHECK_EQ_STR(l->grid[0], "B");
        CHECK_EQ_STR(l->block[0], "256");
        CHECK_EQ_INT(l->nargs, 3);
        CHECK_EQ_STR(l->args[2].text, "N");
    }
    kopt_candidate_free(c);
}

static void test_full_front_matter(void)
{
    kopt_candidate *c = NULL;
    const kopt_launch *l;

    if (!CHECK_EQ_INT(parse_cand(&c, FULL_DEVICE), KOPT_OK)) {
        fprintf(stderr, "  %s\n", kopt_errmsg(ctx));
        return;
    }
    CHECK_EQ_INT(c->has_front_matter, 1);
    CHECK_EQ_INT(c->host_mode, 0);
    CHECK_EQ_STR(c->source, FULL_DEVICE);                 /* the whole file is compiled */
    CHECK_EQ_INT(c->params.n, 2);
    CHECK_EQ_STR(c->params.names[0], "T");
    CHECK_EQ_INT(c->params.values[0], 128);
    CHECK_EQ_STR(c->params.names[1], "VEC");
    CHECK_EQ_INT(c->params.values[1], 4);
    if (CHECK_EQ_INT(c->nconstraints, 2)) {
        CHECK_EQ_STR(c->constraints[0], "T % 32 == 0");
        CHECK_EQ_STR(c->constraints[1], "N % VEC == 0");
    }
    if (CHECK_EQ_INT(c->nscratch, 2)) {
        CHECK_EQ_STR(c->scratch[0].name, "acc");
        CHECK_EQ_INT(c->scratch[0].dtype, KOPT_F32);
        CHECK_EQ_INT(c->scratch[0].role, KOPT_ROLE_SCRATCH);   /* the default */
        CHECK_EQ_STR(c->scratch[0].shape[0], "B");
        CHECK_EQ_STR(c->scratch[1].name, "cnt");
        CHECK_EQ_INT(c->scratch[1].dtype, KOPT_I32);
        CHECK_EQ_STR(c->scratch[1].shape[0], "cdiv(N, T)");
    }
    if (CHECK_EQ_INT(c->noptions, 2)) {
        CHECK_EQ_STR(c->options[0], "--use_fast_math");
        CHECK_EQ_STR(c->options[1], "-DFOO=1");
    }
    if (CHECK_EQ_INT(c->nincludes, 2)) {
        CHECK_EQ_STR(c->includes[0], "inc");
        CHECK_EQ_STR(c->includes[1], "/abs/inc");
    }
    CHECK_EQ_INT(c->nlibraries, 0);
    if (CHECK_EQ_INT(c->plan.n, 2)) {
        CHECK_EQ_INT(c->plan.steps[0].is_memset, 1);
        CHECK_EQ_STR(c->plan.steps[0].memset_tensor, "acc");
        l = &c->plan.steps[1];
        CHECK_EQ_STR(l->kernel, "fast<T>");
        CHECK_EQ_INT(l->ngrid, 2);
        CHECK_EQ_STR(l->grid[0], "cdiv(N, T)");
        CHECK_EQ_STR(l->block[0], "T");
        CHECK_EQ_STR(l->smem, "T*4");
        CHECK_EQ_INT(l->nargs, 8);
    }
    kopt_candidate_free(c);
}

static void test_host_mode_front_matter(void)
{
    const char *src =
        "  \n\t/*@kopt {\"mode\": \"host\", \"libraries\": [\"cublas\", \"cublasLt\"],\n"
        "  \"params\": {\"TILE\": 64}, \"options\": [\"-O3\"], \"includes\": [\"../common\"],\n"
        "  \"constraints\": [\"TILE <= N\"],\n"
        "  \"scratch\": [{\"name\": \"ws\", \"dtype\": \"i64\", \"shape\": [\"N\", 2]}]} */\n"
        "#include <kopt/candidate.h>\n"
        "extern \"C\" int kopt_candidate_run(const kopt_candidate_io *io) { return 0; }\n";
    const char *with_launches =
        "/*@kopt {\"mode\": \"host\", \"launches\": [{\"kernel\": \"k\", \"grid\": 1,"
        " \"block\": 1, \"args\": [\"y\"]}]} */\n";
    kopt_candidate *c = NULL;

    if (CHECK_EQ_INT(parse_cand(&c, src), KOPT_OK)) {   /* whitespace before the block is fine */
        CHECK_EQ_INT(c->has_front_matter, 1);
        CHECK_EQ_INT(c->host_mode, 1);
        CHECK_EQ_INT(c->plan.n, 0);                      /* host mode: no plan copied */
        if (CHECK_EQ_INT(c->nlibraries, 2)) {
            CHECK_EQ_STR(c->libraries[0], "cublas");
            CHECK_EQ_STR(c->libraries[1], "cublasLt");
        }
        CHECK_EQ_INT(c->params.n, 1);
        CHECK_EQ_INT(c->noptions, 1);
        CHECK_EQ_STR(c->includes[0], "../common");
        CHECK_EQ_INT(c->nconstraints, 1);
        CHECK_EQ_INT(c->nscratch, 1);
        CHECK_EQ_INT(c->scratch[0].ndim, 2);
    } else {
        fprintf(stderr, "  %s\n", kopt_errmsg(ctx));
    }
    kopt_candidate_free(c);
    c = NULL;
    if (CHECK_EQ_INT(parse_cand(&c, with_launches), KOPT_OK)) {
        CHECK_EQ_INT(c->host_mode, 1);
        CHECK_EQ_INT(c->plan.n, 1);
    }
    kopt_candidate_free(c);
}

static void test_front_matter_without_launches_uses_reference(void)
{
    const char *src = "/*@kopt {\"params\": {\"T\": 64}, \"options\": [\"-G\"]} */\n"
                      "extern \"C\" __global__ void ref_k(const float *x, float *y, int N) {}\n";
    kopt_candidate *c = NULL;

    if (CHECK_EQ_INT(parse_cand(&c, src), KOPT_OK)) {
        CHECK_EQ_INT(c->has_front_matter, 1);
        CHECK_EQ_INT(c->plan.n, 1);
        CHECK_EQ_STR(c->plan.steps[0].kernel, "ref_k");
        CHECK_EQ_INT(c->params.values[0], 64);
    }
    kopt_candidate_free(c);
}

static void test_from_reference_and_load(void)
{
    kopt_candidate *c = NULL;
    char *path = ktest_write_file(tmp, "file_cand.cu", FULL_DEVICE);

    if (CHECK_EQ_INT(kopt_candidate_from_reference(&c, ctx, prob), KOPT_OK)) {
        CHECK_EQ_INT(c->is_reference, 1);
        CHECK_EQ_STR(c->path, prob->ref_path);
        CHECK_EQ_STR(c->dir, tmp);
        CHECK_EQ_STR(c->source, prob->ref_source);
        CHECK_EQ_INT(c->plan.n, 1);
    }
    kopt_candidate_free(c);
    c = NULL;
    if (path && CHECK_EQ_INT(kopt_candidate_load(&c, ctx, path, prob), KOPT_OK)) {
        CHECK_EQ_STR(c->path, path);
        CHECK_EQ_STR(c->dir, tmp);
        CHECK_EQ_INT(c->params.n, 2);
    }
    kopt_candidate_free(c);
    c = NULL;
    {
        char *missing = kopt_path_join(tmp, "missing.cu");
        CHECK_EQ_INT(kopt_candidate_load(&c, ctx, missing, prob), KOPT_E_NOT_FOUND);
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), "missing.cu");
        CHECK(c == NULL);
        free(missing);
    }
    free(path);
}

/* ---- front matter errors -------------------------------------------------------------- */

static const struct bad_candidate {
    const char *what;
    const char *text;
    const char *message;     /* contained in the error */
    const char *message2;    /* and this too (or NULL) */
} bad_candidates[] = {
    {"unclosed block", "/*@kopt\n{\"params\": {}}\n__global__ void k() {}\n",
     "c.cu:1: front matter '/*@kopt' is not closed by '*/'", NULL},
    {"unclosed block after blank lines", "\n\n  /*@kopt {}\n",
     "c.cu:3: front matter '/*@kopt' is not closed", NULL},
    {"front matter not first", "// my kernel\n/*@kopt {\"params\": {\"T\": 1}} */\n",
     "c.cu:2: '@kopt' found, but the front matter must be the first thing in the file", NULL},
    {"front matter after code", "#include <x.h>\n\n\n/*@kopt {} */\n",
     "c.cu:4: '@kopt' found", NULL},
    {"invalid JSON", "\n\n/*@kopt\n{\n  \"params\": {\"T\": 1,}\n}\n*/\n",
     "front matter starts on line 3", "invalid JSON"},
    {"front matter not an object", "/*@kopt [1, 2] */\n",
     "c.cu: expected a JSON object at the top", "front matter"},
    {"unknown key", "/*@kopt {\"param\": {\"T\": 1}} */\n",
     "c.cu: unknown field 'param' (expected one of: launches, params, constraints", NULL},
    {"param empty list", "/*@kopt {\"params\": {\"T\": []}} */\n",
     "c.cu: params.T: empty list", NULL},
    {"param range with unknown keys",
     "/*@kopt {\"params\": {\"T\": {\"from\": 1, \"to\": 8}}} */\n",
     "c.cu: params.T: unknown field 'from'", NULL},
    {"param not an integer", "/*@kopt {\"params\": {\"T\": \"128\"}} */\n",
     "c.cu: params.T: expected an integer", NULL},
    {"param bad macro name", "/*@kopt {\"params\": {\"1T\": 1}} */\n",
     "c.cu: params.1T: '1T' is not a valid macro name", NULL},
    {"param named like a size", "/*@kopt {\"params\": {\"N\": 64}} */\n",
     "c.cu: params.N: 'N' is already a size name of the problem", NULL},
    {"params not an object", "/*@kopt {\"params\": [1]} */\n",
     "c.cu: params: expected an object of NAME: integer", NULL},
    {"scratch named like a tensor",
     "/*@kopt {\"scratch\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [1]}]} */\n",
     "c.cu: scratch[0]: name 'x' is already used by the problem", NULL},
    {"scratch named like a size",
     "/*@kopt {\"scratch\": [{\"name\": \"B\", \"dtype\": \"f32\", \"shape\": [1]}]} */\n",
     "c.cu: scratch[0]: name 'B' is already used by the problem", NULL},
    {"duplicate scratch",
     "/*@kopt {\"scratch\": [{\"name\": \"w\", \"dtype\": \"f32\", \"shape\": [1]},"
     " {\"name\": \"w\", \"dtype\": \"i32\", \"shape\": [2]}]} */\n",
     "c.cu: scratch[1]: duplicate scratch name 'w'", NULL},
    {"scratch with another role",
     "/*@kopt {\"scratch\": [{\"name\": \"w\", \"dtype\": \"f32\", \"shape\": [1],"
     " \"role\": \"output\"}]} */\n",
     "c.cu: scratch[0].role: a candidate's extra buffers can only be scratch", NULL},
    {"scratch unknown dtype",
     "/*@kopt {\"scratch\": [{\"name\": \"w\", \"dtype\": \"u8\", \"shape\": [1]}]} */\n",
     "c.cu: scratch[0].dtype: unknown dtype 'u8'", NULL},
    {"scratch not an array", "/*@kopt {\"scratch\": {\"name\": \"w\"}} */\n",
     "c.cu: scratch: expected an array of buffers", NULL},
    {"launch arg unknown name",
     "/*@kopt {\"launches\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [1],"
     " \"args\": [\"x\", \"y\", \"zz\"]}]} */\n",
     "c.cu: launches[0]: args[2]: 'zz' is neither a tensor nor a valid expression",
     "unknown name 'zz'"},
    {"launch arg unknown name in a typed arg",
     "/*@kopt {\"params\": {\"T\": 1}, \"launches\": [{\"kernel\": \"k\", \"grid\": [1],"
     " \"block\": [1], \"args\": [{\"i64\": \"T*Q\"}]}]} */\n",
     "c.cu: launches[0]: args[0]: 'T*Q' is neither a tensor nor a valid expression", NULL},
    {"launch without args",
     "/*@kopt {\"launches\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [1]}]} */\n",
     "c.cu: launches[0].args: missing", NULL},
    {"launches empty", "/*@kopt {\"launches\": []} */\n",
     "c.cu: launches: expected a non-empty array of launch steps", NULL},
    {"memset of unknown tensor",
     "/*@kopt {\"launches\": [{\"memset\": \"q\"}]} */\n",
     "c.cu: launches[0]: memset of unknown tensor 'q'", NULL},
    {"constraint with unknown name",
     "/*@kopt {\"params\": {\"T\": 1}, \"constraints\": [\"T > 0\", \"FOO > 1\"]} */\n",
     "c.cu: constraints[1]: expression 'FOO > 1': unknown name 'FOO' at column 1", NULL},
    {"constraint syntax error", "/*@kopt {\"constraints\": [\"N >\"]} */\n",
     "c.cu: constraints[0]: expression 'N >': unexpected end", NULL},
    {"constraints not strings", "/*@kopt {\"constraints\": [1]} */\n",
     "c.cu: constraints[0]: expected a string, got an integer", NULL},
    {"bad mode", "/*@kopt {\"mode\": \"gpu\"} */\n",
     "c.cu: mode: expected \"device\" or \"host\", got 'gpu'", NULL},
    {"options not an array", "/*@kopt {\"options\": \"-O3\"} */\n",
     "c.cu: options: expected an array of strings, got a string", NULL},
    {"includes not strings", "/*@kopt {\"includes\": [[\"a\"]]} */\n",
     "c.cu: includes[0]: expected a string, got an array", NULL},
};

static void test_front_matter_errors(void)
{
    for (int i = 0; i < KTEST_COUNT(bad_candidates); i++) {
        const struct bad_candidate *b = &bad_candidates[i];
        kopt_candidate *c = (kopt_candidate *)&i;   /* must be reset to NULL */
        kopt_status rc = parse_cand(&c, b->text);
        int ok = CHECK_EQ_INT(rc, KOPT_E_INVALID);
        ok &= CHECK(c == NULL);
        ok &= CHECK_STR_CONTAINS(kopt_errmsg(ctx), b->message);
        if (b->message2)
            ok &= CHECK_STR_CONTAINS(kopt_errmsg(ctx), b->message2);
        if (!ok)
            fprintf(stderr, "  ^ case '%s'\n", b->what);
        if (rc == KOPT_OK)
            kopt_candidate_free(c);
    }
}

static void test_no_plan_for_host_reference(void)
{
    kopt_candidate *c = NULL;

    CHECK_EQ_INT(kopt_candidate_parse(&c, ctx, "__global__ void k() {}\n", "c.cu", host_prob),
                 KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "c.cu: no launch plan: the reference has none");
    CHECK(c == NULL);
    CHECK_EQ_INT(kopt_candidate_parse(&c, ctx, "/*@kopt {\"mode\": \"host\"} */\n", "c.cu",
                                      host_prob), KOPT_OK);
    kopt_candidate_free(c);
}

/* ---- binding ---------------------------------------------------------------------------- */

/* Bind FULL_DEVICE (or `text`) at the problem's sizes with overrides "K=V" pairs. */
static kopt_status bind_at(kopt_bound **out, const char *text, const char *n, const char *b)
{
    kopt_candidate *c = NULL;
    kopt_vars over = KOPT_VARS_INIT, sizes = KOPT_VARS_INIT;
    kopt_status rc;

    *out = NULL;
    if ((rc = parse_cand(&c, text)) != KOPT_OK) {
        KTEST_FAIL("candidate does not parse: %s", kopt_errmsg(ctx));
        return rc;
    }
    if (n)
        kopt_vars_set(&over, "N", strtoll(n, NULL, 0));
    if (b)
        kopt_vars_set(&over, "B", strtoll(b, NULL, 0));
    if ((rc = kopt_sizes_resolve(&sizes, ctx, prob, &over)) == KOPT_OK)
        rc = kopt_bind(out, ctx, prob, c, &sizes);
    kopt_vars_free(&over);
    kopt_vars_free(&sizes);
    kopt_candidate_free(c);
    return rc;
}

static void test_bind_default_sizes(void)
{
    kopt_bound *b = NULL;
    const kopt_blaunch *l;

    if (!CHECK_EQ_INT(bind_at(&b, FULL_DEVICE, NULL, NULL), KOPT_OK)) {
        fprintf(stderr, "  %s\n", kopt_errmsg(ctx));
        return;
    }
    CHECK_EQ_INT(b->sizes.n, 2);
    CHECK_EQ_INT(b->sizes.values[kopt_vars_find(&b->sizes, "N")], 1000);
    if (CHECK_EQ_INT(b->ntensors, 4)) {               /* problem tensors, then scratch */
        CHECK_EQ_STR(b->tensors[0].name, "x");
        CHECK_EQ_INT(b->tensors[0].ndim, 2);
        CHECK_EQ_INT(b->tensors[0].shape[0], 4);
        CHECK_EQ_INT(b->tensors[0].shape[1], 1000);
        CHECK_EQ_INT(b->tensors[0].count, 4000);
        CHECK_EQ_INT(b->tensors[0].bytes, 16000);
        CHECK_EQ_INT(b->tensors[0].role, KOPT_ROLE_INPUT);
        CHECK_EQ_INT(b->tensors[1].role, KOPT_ROLE_OUTPUT);
        CHECK_EQ_STR(b->tensors[2].name, "acc");
        CHECK_EQ_INT(b->tensors[2].role, KOPT_ROLE_SCRATCH);
        CHECK_EQ_INT(b->tensors[2].count, 4);
        CHECK_EQ_STR(b->tensors[3].name, "cnt");
        CHECK_EQ_INT(b->tensors[3].shape[0], 8);       /* cdiv(1000, T=128): params in shapes */
        CHECK_EQ_INT(b->tensors[3].bytes, 32);
    }
    CHECK_EQ_INT(b->has_work, 0);
    if (!CHECK_EQ_INT(b->nlaunches, 2)) {
        kopt_bound_free(b);
        return;
    }
    CHECK_EQ_INT(b->launches[0].is_memset, 1);
    CHECK_EQ_INT(b->launches[0].tensor, 2);
    l = &b->launches[1];
    CHECK_EQ_INT(l->is_memset, 0);
    CHECK_EQ_STR(l->kernel, "fast<T>");
    CHECK_EQ_INT(l->grid[0], 8);
    CHECK_EQ_INT(l->grid[1], 4);
    CHECK_EQ_INT(l->grid[2], 1);
    CHECK_EQ_INT(l->block[0], 128);
    CHECK_EQ_INT(l->block[1], 1);
    CHECK_EQ_INT(l->block[2], 1);
    CHECK_EQ_INT(l->smem, 512);
    if (CHECK_EQ_INT(l->nargs, 8)) {
        CHECK_EQ_INT(l->args[0].kind, KOPT_ARG_TENSOR);
        CHECK_EQ_INT(l->args[0].tensor, 0);
        CHECK_EQ_INT(l->args[1].kind, KOPT_ARG_TENSOR);
        CHECK_EQ_INT(l->args[1].tensor, 1);
        CHECK_EQ_INT(l->args[2].kind, KOPT_ARG_TENSOR);   /* scratch by name */
        CHECK_EQ_INT(l->args[2].tensor, 2);
        CHECK_EQ_INT(l->args[3].kind, KOPT_ARG_INT);
        CHECK_EQ_INT(l->args[3].ival, 1000);
        CHECK_EQ_INT(l->args[4].kind, KOPT_ARG_I32);
        CHECK_EQ_INT(l->args[4].ival, 4000);
        CHECK_EQ_INT(l->args[5].kind, KOPT_ARG_F32);
        CHECK_NEAR(l->args[5].fval, 2.5, 0);
        CHECK_EQ_INT(l->args[6].kind, KOPT_ARG_TENSOR);
        CHECK_EQ_INT(l->args[6].tensor, 3);
        CHECK_EQ_INT(l->args[7].kind, KOPT_ARG_INT);
        CHECK_EQ_INT(l->args[7].ival, 8);                 /* VEC*2: params in args */
    }
    kopt_bound_free(b);
}

static void test_bind_other_sizes(void)
{
    kopt_bound *b = NULL;

    if (CHECK_EQ_INT(bind_at(&b, FULL_DEVICE, "4096", "3"), KOPT_OK)) {
        CHECK_EQ_INT(b->tensors[0].count, 3 * 4096);
        CHECK_EQ_INT(b->tensors[3].shape[0], 32);
        CHECK_EQ_INT(b->launches[1].grid[0], 32);
        CHECK_EQ_INT(b->launches[1].grid[1], 3);
        CHECK_EQ_INT(b->launches[1].args[3].ival, 4096);
        CHECK_EQ_INT(b->launches[1].args[4].ival, 3 * 4096);
    }
    kopt_bound_free(b);
}

static void test_bind_constraint_false(void)
{
    kopt_bound *b = NULL;

    /* N % VEC == 0 holds at N = 1000 but not at 1001 */
    CHECK_EQ_INT(bind_at(&b, FULL_DEVICE, "1001", NULL), KOPT_E_INVALID);
    CHECK(b == NULL);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "c.cu: constraint 'N % VEC == 0' does not hold at "
                                         "these sizes");
}

static void test_bind_constraint_error(void)
{
    const char *src = "/*@kopt {\"params\": {\"Z\": 0}, \"constraints\": [\"N / Z > 1\"]} */\n";
    kopt_bound *b = NULL;

    CHECK_EQ_INT(bind_at(&b, src, NULL, NULL), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "c.cu: constraint 0: expression 'N / Z > 1': "
                                         "division by zero");
    kopt_bound_free(b);
}

static void test_bind_grid_zero(void)
{
    kopt_bound *b = NULL;

    /* cdiv(0, T) = 0 blocks */
    CHECK_EQ_INT(bind_at(&b, FULL_DEVICE, "0", NULL), KOPT_E_INVALID);
    CHECK(b == NULL);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "launch 1 (fast<T>): grid 0x");
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "is not a valid launch at these sizes");
    /* the second grid dimension */
    CHECK_EQ_INT(bind_at(&b, FULL_DEVICE, NULL, "0"), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "is not a valid launch");
    /* a block of 0 threads */
    CHECK_EQ_INT(bind_at(&b, "/*@kopt {\"launches\": [{\"kernel\": \"k\", \"grid\": [1],"
                             " \"block\": [\"N - 1000\"], \"args\": []}]} */\n", NULL, NULL),
                 KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "launch 0 (k): grid 1x");
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "block 0x");
}

static void test_bind_i32_overflow(void)
{
    kopt_bound *b = NULL;

    /* N*B = 65536 * 32768 = 2^31 does not fit in i32; 2^31 - 1 would */
    CHECK_EQ_INT(bind_at(&b, FULL_DEVICE, "65536", "32768"), KOPT_E_INVALID);
    CHECK(b == NULL);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "launch 1 (fast<T>) args[4] = 2147483648 does not fit "
                                         "in i32");
    if (CHECK_EQ_INT(bind_at(&b, FULL_DEVICE, "65536", "32767"), KOPT_OK))
        CHECK_EQ_INT(b->launches[1].args[4].ival, INT64_C(65536) * 32767);
    kopt_bound_free(b);
    b = NULL;
    /* negative overflow */
    CHECK_EQ_INT(bind_at(&b, "/*@kopt {\"launches\": [{\"kernel\": \"k\", \"grid\": [1],"
                             " \"block\": [1], \"args\": [{\"i32\": \"-N*N*N\"}]}]} */\n",
                         "2000", NULL),
                 KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "does not fit in i32");
    /* i64 is fine with it */
    if (CHECK_EQ_INT(bind_at(&b, "/*@kopt {\"launches\": [{\"kernel\": \"k\", \"grid\": [1],"
                                 " \"block\": [1], \"args\": [{\"i64\": \"N*N*N\"}]}]} */\n",
                             "2000", NULL), KOPT_OK))
        CHECK_EQ_INT(b->launches[0].args[0].ival, INT64_C(8000000000));
    kopt_bound_free(b);
}

static void test_bind_errors_name_the_launch(void)
{
    static const struct { const char *text, *message; } cases[] = {
        /* grid expressions of a candidate are checked when bound */
        {"/*@kopt {\"launches\": [{\"kernel\": \"k\", \"grid\": [\"Q\"], \"block\": [1],"
         " \"args\": []}]} */\n",
         "launch 0 (k) grid[0]: expression 'Q': unknown name 'Q'"},
        {"/*@kopt {\"launches\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [1, \"N/0\"],"
         " \"args\": []}]} */\n",
         "launch 0 (k) block[1]: expression 'N/0': division by zero"},
        {"/*@kopt {\"launches\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [1],"
         " \"smem\": \"N/0\", \"args\": []}]} */\n",
         "launch 0 (k) smem: expression 'N/0': division by zero"},
        {"/*@kopt {\"scratch\": [{\"name\": \"w\", \"dtype\": \"f32\","
         " \"shape\": [\"N - 2000\"]}]} */\n",
         "tensor w shape[0] = -1000 is negative"},
        {"/*@kopt {\"scratch\": [{\"name\": \"w\", \"dtype\": \"f32\","
         " \"shape\": [\"N\", \"N\", \"N\", \"N\", \"N\"]}]} */\n",
         "tensor w is too large"},
        {"/*@kopt {\"scratch\": [{\"name\": \"w\", \"dtype\": \"f32\","
         " \"shape\": [\"N / (B - 4)\"]}]} */\n",
         "tensor w shape[0]: expression 'N / (B - 4)': division by zero"},
    };

    for (int i = 0; i < KTEST_COUNT(cases); i++) {
        kopt_bound *b = NULL;
        int bad = !CHECK_EQ_INT(bind_at(&b, cases[i].text, NULL, NULL), KOPT_E_INVALID);
        bad |= !CHECK_STR_CONTAINS(kopt_errmsg(ctx), cases[i].message);   /* both checked */
        if (bad)
            fprintf(stderr, "  ^ case %d\n", i);
        CHECK(b == NULL);
        kopt_bound_free(b);
    }
}

/* ---- regressions: library bugs found by these tests, fixed since ---- */

/* {"i32": <literal>} bypasses the i32 range check that {"i32": "<expression>"} gets; the
 * worker then truncates the value with a cast. */
static void regression_i32_literal_out_of_range(void)
{
    kopt_bound *b = NULL;

    CHECK_EQ_INT(bind_at(&b, "/*@kopt {\"launches\": [{\"kernel\": \"k\", \"grid\": [1],"
                             " \"block\": [1], \"args\": [{\"i32\": 3000000000}]}]} */\n",
                         NULL, NULL),
                 KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "does not fit in i32");
    kopt_bound_free(b);
}

/* The grid/block message should show the dimensions as launched (unset ones are 1). */
static void regression_grid_zero_message_dimensions(void)
{
    kopt_bound *b = NULL;

    CHECK_EQ_INT(bind_at(&b, FULL_DEVICE, "0", NULL), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "grid 0x4x1, block 128x1x1");
    kopt_bound_free(b);
}

/* Launch dimensions the worker cannot represent (it casts them to unsigned) and a
 * negative dynamic shared memory size should be refused when bound, like a 0 grid is;
 * today grid 2^32 + 1 silently becomes 1 block and smem -4 becomes 4294967292 bytes. */
static void regression_bind_accepts_unrepresentable_launch_dims(void)
{
    static const char *const texts[] = {
        "/*@kopt {\"launches\": [{\"kernel\": \"k\", \"grid\": [\"4294967297\"], \"block\": [1],"
        " \"args\": []}]} */\n",
        "/*@kopt {\"launches\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [\"N * 4294967296\"],"
        " \"args\": []}]} */\n",
        "/*@kopt {\"launches\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [1], \"smem\": \"-4\","
        " \"args\": []}]} */\n",
    };
    for (int i = 0; i < KTEST_COUNT(texts); i++) {
        kopt_bound *b = NULL;
        if (!CHECK_EQ_INT(bind_at(&b, texts[i], NULL, NULL), KOPT_E_INVALID))
            fprintf(stderr, "  ^ case %d\n", i);
        kopt_bound_free(b);
    }
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_no_front_matter_copies_reference_plan),
        KTEST(test_full_front_matter),
        KTEST(test_host_mode_front_matter),
        KTEST(test_front_matter_without_launches_uses_reference),
        KTEST(test_from_reference_and_load),
        KTEST(test_front_matter_errors),
        KTEST(test_no_plan_for_host_reference),
        KTEST(test_bind_default_sizes),
        KTEST(test_bind_other_sizes),
        KTEST(test_bind_constraint_false),
        KTEST(test_bind_constraint_error),
        KTEST(test_bind_grid_zero),
        KTEST(test_bind_i32_overflow),
        KTEST(test_bind_errors_name_the_launch),
        KTEST(regression_i32_literal_out_of_range),
        KTEST(regression_grid_zero_message_dimensions),
        KTEST(regression_bind_accepts_unrepresentable_launch_dims),
    };
    char *ref;
    int rc = 1;

    ctx = kopt_ctx_new();
    tmp = ktest_tmpdir("candidate");
    if (!ctx || !tmp)
        return 1;
    ref = ktest_write_file(tmp, "ref.cu",
                           "extern \"C\" __global__ void ref_k(const float *x, float *y, int N)"
                           " {}\n");
    if (kopt_problem_parse(&prob, ctx, PROBLEM_JSON, "p.json", tmp) != KOPT_OK ||
        kopt_problem_parse(&host_prob, ctx, HOST_PROBLEM_JSON, "h.json", tmp) != KOPT_OK)
        fprintf(stderr, "the test problems do not parse: %s\n", kopt_errmsg(ctx));
    else
        rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    kopt_problem_free(prob);
    kopt_problem_free(host_prob);
    ktest_rmtree(tmp);
    free(ref);
    free(tmp);
    kopt_ctx_free(ctx);
    return rc;
}
