/*
 * Unit tests of problem.json parsing (kopt_problem_parse / kopt_problem_load): every field
 * of a valid problem, default values and tolerances, and many invalid files, each of which
 * must fail with KOPT_E_INVALID and a message naming the file and the field.
 */
#include "ktest.h"

#include "kopt/problem.h"

static kopt_ctx *ctx;
static char *tmp;   /* holds ref.cu (the reference source every case uses) */

/* JSON written with single quotes (readable in C) turned into real JSON. Caller frees. */
static char *q(const char *text)
{
    char *s = strdup(text);
    for (char *c = s; c && *c; c++)
        if (*c == '\'')
            *c = '"';
    return s;
}

/* Parse single-quoted JSON as "p.json" in the temp folder. */
static kopt_status parse(kopt_problem **out, const char *sq_json)
{
    char *json = q(sq_json);
    kopt_status rc = kopt_problem_parse(out, ctx, json, "p.json", tmp);
    free(json);
    return rc;
}

static const char *const FULL =
    "{'name': 'full-problem_1', 'description': 'every field at once',"
    " 'sizes': {'B': 64, 'N': 1000, 'K': 3},"
    " 'check_sizes': {'N': 77},"
    " 'tensors': ["
    "  {'name': 'x', 'dtype': 'f32', 'shape': ['B', 'N'], 'role': 'input',"
    "   'init': {'dist': 'normal', 'mean': 0.5, 'std': 2}},"
    "  {'name': 'h', 'dtype': 'f16', 'shape': ['N'], 'role': 'input',"
    "   'init': {'dist': 'uniform', 'low': -1, 'high': 1.5}},"
    "  {'name': 'bb', 'dtype': 'bf16', 'shape': [], 'role': 'input'},"
    "  {'name': 'd', 'dtype': 'f64', 'shape': ['cdiv(N, 32)', 4], 'role': 'inout',"
    "   'init': {'dist': 'int', 'low': -3, 'high': 3}},"
    "  {'name': 'idx', 'dtype': 'i32', 'shape': ['K'], 'role': 'input',"
    "   'init': {'dist': 'int', 'low': 0, 'high': 9}},"
    "  {'name': 'cnt', 'dtype': 'i64', 'shape': ['B'], 'role': 'input-output'},"
    "  {'name': 'y', 'dtype': 'f32', 'shape': ['B', 'N'], 'role': 'output',"
    "   'tolerance': {'atol': 0.001, 'rtol': 0.002}},"
    "  {'name': 'tmp', 'dtype': 'f32', 'shape': ['B'], 'role': 'scratch'}"
    " ],"
    " 'reference': {'source': 'ref.cu', 'options': ['--use_fast_math', '-DX=1'], 'mode': 'device',"
    "  'launches': ["
    "   {'memset': 'y', 'value': 0.25},"
    "   {'kernel': 'ref_kernel<64>', 'grid': ['cdiv(N,256)', 'B'], 'block': [256], 'smem': '256*4',"
    "    'args': ['x', 'y', 'N', {'f32': 0.5}, {'f64': 'K*2'}, {'i32': 'N*B'}, {'i64': 7}, 'B*2']},"
    "   {'kernel': 'second', 'grid': 'B', 'block': 128, 'args': []}"
    "  ]},"
    " 'tolerance': {'atol': 1e-5, 'rtol': 1e-4},"
    " 'work': {'flops': '5*B*N', 'bytes': 8000, 'compute': 'tf32'},"
    " 'allow_libraries': false,"
    " 'seed': 42}";

static void test_valid_sizes_and_top_level(void)
{
    kopt_problem *p = NULL;

    if (!CHECK_EQ_INT(parse(&p, FULL), KOPT_OK) || !CHECK(p != NULL)) {
        fprintf(stderr, "  %s\n", kopt_errmsg(ctx));
        return;
    }
    CHECK_EQ_STR(p->name, "full-problem_1");
    CHECK_EQ_STR(p->description, "every field at once");
    CHECK_EQ_STR(p->path, "p.json");
    CHECK_EQ_STR(p->dir, tmp);
    CHECK_EQ_INT(p->sizes.n, 3);
    CHECK_EQ_STR(p->sizes.names[0], "B");   /* file order */
    CHECK_EQ_STR(p->sizes.names[1], "N");
    CHECK_EQ_STR(p->sizes.names[2], "K");
    CHECK_EQ_INT(p->sizes.values[0], 64);
    CHECK_EQ_INT(p->sizes.values[1], 1000);
    CHECK_EQ_INT(p->sizes.values[2], 3);
    CHECK_EQ_INT(p->has_check_sizes, 1);
    CHECK_EQ_INT(p->check_sizes.n, 1);       /* overrides only */
    CHECK_EQ_STR(p->check_sizes.names[0], "N");
    CHECK_EQ_INT(p->check_sizes.values[0], 77);
    CHECK_EQ_INT(p->has_tol, 1);
    CHECK_NEAR(p->atol, 1e-5, 1e-18);
    CHECK_NEAR(p->rtol, 1e-4, 1e-18);
    CHECK_EQ_STR(p->work_flops, "5*B*N");
    CHECK_EQ_STR(p->work_bytes, "8000");     /* a JSON integer becomes its text */
    CHECK_EQ_INT(p->compute, KOPT_COMPUTE_TF32);
    CHECK_EQ_INT(p->allow_libraries, 0);
    CHECK_EQ_INT(p->seed, 42);
    CHECK_EQ_INT(strlen(p->hash), 64);
    kopt_problem_free(p);
}

static void test_valid_tensors(void)
{
    static const struct {
        const char *name;
        kopt_dtype dtype;
        kopt_role role;
        int ndim;
        const char *shape0, *shape1;
        kopt_dist dist;
        double a, b;
    } want[] = {
        {"x", KOPT_F32, KOPT_ROLE_INPUT, 2, "B", "N", KOPT_DIST_NORMAL, 0.5, 2},
        {"h", KOPT_F16, KOPT_ROLE_INPUT, 1, "N", NULL, KOPT_DIST_UNIFORM, -1, 1.5},
        {"bb", KOPT_BF16, KOPT_ROLE_INPUT, 0, NULL, NULL, KOPT_DIST_NORMAL, 0, 1},
        {"d", KOPT_F64, KOPT_ROLE_INOUT, 2, "cdiv(N, 32)", "4", KOPT_DIST_INT, -3, 3},
        {"idx", KOPT_I32, KOPT_ROLE_INPUT, 1, "K", NULL, KOPT_DIST_INT, 0, 9},
        {"cnt", KOPT_I64, KOPT_ROLE_INOUT, 1, "B", NULL, KOPT_DIST_INT, -100, 100},
        {"y", KOPT_F32, KOPT_ROLE_OUTPUT, 2, "B", "N", KOPT_DIST_NORMAL, 0, 1},
        {"tmp", KOPT_F32, KOPT_ROLE_SCRATCH, 1, "B", NULL, KOPT_DIST_NORMAL, 0, 1},
    };
    kopt_problem *p = NULL;

    if (!CHECK_EQ_INT(parse(&p, FULL), KOPT_OK))
        return;
    if (!CHECK_EQ_INT(p->ntensors, KTEST_COUNT(want))) {
        kopt_problem_free(p);
        return;
    }
    for (int i = 0; i < p->ntensors; i++) {
        const kopt_tensor_spec *t = &p->tensors[i];
        CHECK_EQ_STR(t->name, want[i].name);
        CHECK_EQ_INT(t->dtype, want[i].dtype);
        CHECK_EQ_INT(t->role, want[i].role);
        CHECK_EQ_INT(t->ndim, want[i].ndim);
        if (want[i].shape0)
            CHECK_EQ_STR(t->shape[0], want[i].shape0);
        if (want[i].shape1)
            CHECK_EQ_STR(t->shape[1], want[i].shape1);
        CHECK_EQ_INT(t->init.dist, want[i].dist);
        CHECK_NEAR(t->init.a, want[i].a, 0);
        CHECK_NEAR(t->init.b, want[i].b, 0);
        CHECK_EQ_INT(t->has_tol, i == 6);
        CHECK_EQ_INT(kopt_problem_find_tensor(p, want[i].name), i);
    }
    CHECK_NEAR(p->tensors[6].atol, 0.001, 0);
    CHECK_NEAR(p->tensors[6].rtol, 0.002, 0);
    CHECK_EQ_INT(kopt_problem_find_tensor(p, "nope"), -1);
    kopt_problem_free(p);
}

static void test_valid_reference_plan(void)
{
    kopt_problem *p = NULL;
    const kopt_launch *m, *l, *l2;

    if (!CHECK_EQ_INT(parse(&p, FULL), KOPT_OK))
        return;
    {
        char *want = kopt_path_join(tmp, "ref.cu");
        CHECK_EQ_STR(p->ref_path, want);
        free(want);
    }
    CHECK_STR_CONTAINS(p->ref_source, "ref_kernel");
    CHECK_EQ_INT(p->ref_host_mode, 0);
    CHECK_EQ_INT(p->nref_options, 2);
    if (p->nref_options == 2) {
        CHECK_EQ_STR(p->ref_options[0], "--use_fast_math");
        CHECK_EQ_STR(p->ref_options[1], "-DX=1");
    }
    if (!CHECK_EQ_INT(p->ref_plan.n, 3)) {
        kopt_problem_free(p);
        return;
    }
    m = &p->ref_plan.steps[0];
    CHECK_EQ_INT(m->is_memset, 1);
    CHECK_EQ_STR(m->memset_tensor, "y");
    CHECK_NEAR(m->memset_value, 0.25, 0);
    CHECK(m->kernel == NULL);

    l = &p->ref_plan.steps[1];
    CHECK_EQ_INT(l->is_memset, 0);
    CHECK_EQ_STR(l->kernel, "ref_kernel<64>");
    CHECK_EQ_INT(l->ngrid, 2);
    CHECK_EQ_STR(l->grid[0], "cdiv(N,256)");
    CHECK_EQ_STR(l->grid[1], "B");
    CHECK_EQ_INT(l->nblock, 1);
    CHECK_EQ_STR(l->block[0], "256");
    CHECK_EQ_STR(l->smem, "256*4");
    if (CHECK_EQ_INT(l->nargs, 8)) {
        CHECK_EQ_INT(l->args[0].kind, KOPT_ARG_INT);   /* tensor names resolve at bind */
        CHECK_EQ_STR(l->args[0].text, "x");
        CHECK_EQ_STR(l->args[1].text, "y");
        CHECK_EQ_INT(l->args[2].kind, KOPT_ARG_INT);
        CHECK_EQ_STR(l->args[2].text, "N");
        CHECK_EQ_INT(l->args[3].kind, KOPT_ARG_F32);
        CHECK(l->args[3].text == NULL);
        CHECK_NEAR(l->args[3].number, 0.5, 0);
        CHECK_EQ_INT(l->args[4].kind, KOPT_ARG_F64);
        CHECK_EQ_STR(l->args[4].text, "K*2");
        CHECK_EQ_INT(l->args[5].kind, KOPT_ARG_I32);
        CHECK_EQ_STR(l->args[5].text, "N*B");
        CHECK_EQ_INT(l->args[6].kind, KOPT_ARG_I64);
        CHECK(l->args[6].text == NULL);
        CHECK_NEAR(l->args[6].number, 7, 0);
        CHECK_EQ_INT(l->args[7].kind, KOPT_ARG_INT);
        CHECK_EQ_STR(l->args[7].text, "B*2");
    }
    l2 = &p->ref_plan.steps[2];
    CHECK_EQ_STR(l2->kernel, "second");
    CHECK_EQ_INT(l2->ngrid, 1);          /* "grid": "B" is one dimension */
    CHECK_EQ_STR(l2->grid[0], "B");
    CHECK_EQ_INT(l2->nblock, 1);
    CHECK_EQ_STR(l2->block[0], "128");
    CHECK(l2->smem == NULL);
    CHECK_EQ_INT(l2->nargs, 0);
    kopt_problem_free(p);
}

static const char *const MINIMAL =
    "{'name': 'mini', 'sizes': {'N': 10},"
    " 'tensors': ["
    "  {'name': 'a', 'dtype': 'f64', 'shape': ['N'], 'role': 'output'},"
    "  {'name': 'b', 'dtype': 'f32', 'shape': ['N'], 'role': 'output'},"
    "  {'name': 'c', 'dtype': 'f16', 'shape': ['N'], 'role': 'output'},"
    "  {'name': 'd', 'dtype': 'bf16', 'shape': ['N'], 'role': 'output'},"
    "  {'name': 'e', 'dtype': 'i32', 'shape': ['N'], 'role': 'output'},"
    "  {'name': 'f', 'dtype': 'i64', 'shape': ['N'], 'role': 'output',"
    "   'tolerance': {'atol': 2}},"
    "  {'name': 'g', 'dtype': 'f32', 'shape': ['N'], 'role': 'input'},"
    "  {'name': 'i', 'dtype': 'i32', 'shape': ['N'], 'role': 'input'}"
    " ],"
    " 'reference': {'source': 'ref.cu', 'launches': [{'kernel': 'k', 'grid': [1], 'block': [1],"
    "  'args': ['a']}]}}";

static void test_defaults(void)
{
    kopt_problem *p = NULL;

    if (!CHECK_EQ_INT(parse(&p, MINIMAL), KOPT_OK)) {
        fprintf(stderr, "  %s\n", kopt_errmsg(ctx));
        return;
    }
    CHECK(p->description == NULL);
    CHECK_EQ_INT(p->has_check_sizes, 0);
    CHECK_EQ_INT(p->check_sizes.n, 0);
    CHECK_EQ_INT(p->has_tol, 0);
    CHECK(p->work_flops == NULL && p->work_bytes == NULL);
    CHECK_EQ_INT(p->compute, KOPT_COMPUTE_FP32);
    CHECK_EQ_INT(p->allow_libraries, 1);
    CHECK_EQ_INT(p->seed, 1234);
    CHECK(p->ref_options == NULL || p->nref_options == 0);
    CHECK_EQ_INT(p->ref_host_mode, 0);
    /* default init: normal(0, 1) for floats, int [-100, 100] for integers */
    CHECK_EQ_INT(p->tensors[6].init.dist, KOPT_DIST_NORMAL);
    CHECK_NEAR(p->tensors[6].init.a, 0, 0);
    CHECK_NEAR(p->tensors[6].init.b, 1, 0);
    CHECK_EQ_INT(p->tensors[7].init.dist, KOPT_DIST_INT);
    CHECK_NEAR(p->tensors[7].init.a, -100, 0);
    CHECK_NEAR(p->tensors[7].init.b, 100, 0);
    /* a per-tensor tolerance with only atol: rtol is the dtype's default */
    CHECK_EQ_INT(p->tensors[5].has_tol, 1);
    CHECK_NEAR(p->tensors[5].atol, 2, 0);
    CHECK_NEAR(p->tensors[5].rtol, 0, 0);
    kopt_problem_free(p);
}

static void test_default_tolerances_by_dtype(void)
{
    static const struct { kopt_dtype t; double tol; } want[] = {
        {KOPT_F64, 1e-8}, {KOPT_F32, 1e-4}, {KOPT_F16, 1e-2}, {KOPT_BF16, 2e-2},
        {KOPT_I32, 0}, {KOPT_I64, 0},
    };
    kopt_problem *p = NULL;
    kopt_candidate *c = NULL;
    kopt_bound *b = NULL;
    kopt_vars sizes = KOPT_VARS_INIT;

    for (int i = 0; i < KTEST_COUNT(want); i++)
        CHECK_NEAR(kopt_dtype_default_tol(want[i].t), want[i].tol, 0);
    /* bound tensors: no tolerance anywhere -> the dtype's default (atol = rtol) */
    if (!CHECK_EQ_INT(parse(&p, MINIMAL), KOPT_OK))
        return;
    CHECK_EQ_INT(kopt_candidate_from_reference(&c, ctx, p), KOPT_OK);
    CHECK_EQ_INT(kopt_sizes_resolve(&sizes, ctx, p, NULL), KOPT_OK);
    if (c && CHECK_EQ_INT(kopt_bind(&b, ctx, p, c, &sizes), KOPT_OK)) {
        for (int i = 0; i < 5; i++) {
            CHECK_NEAR(b->tensors[i].atol, want[i].tol, 0);
            CHECK_NEAR(b->tensors[i].rtol, want[i].tol, 0);
        }
        CHECK_NEAR(b->tensors[5].atol, 2, 0);       /* its own */
        CHECK_EQ_INT(b->tensors[0].count, 10);
        CHECK_EQ_INT(b->tensors[0].bytes, 80);
        CHECK_EQ_INT(b->tensors[2].bytes, 20);
    }
    kopt_bound_free(b);
    kopt_candidate_free(c);
    kopt_problem_free(p);
    b = NULL;
    c = NULL;
    /* with a problem tolerance: tensors without their own take the problem's */
    if (CHECK_EQ_INT(parse(&p, FULL), KOPT_OK) &&
        CHECK_EQ_INT(kopt_candidate_from_reference(&c, ctx, p), KOPT_OK) &&
        CHECK_EQ_INT(kopt_sizes_resolve(&sizes, ctx, p, NULL), KOPT_OK) &&
        CHECK_EQ_INT(kopt_bind(&b, ctx, p, c, &sizes), KOPT_OK)) {
        CHECK_NEAR(b->tensors[0].atol, 1e-5, 0);
        CHECK_NEAR(b->tensors[0].rtol, 1e-4, 0);
        CHECK_NEAR(b->tensors[4].atol, 1e-5, 0);    /* i32 too */
        CHECK_NEAR(b->tensors[6].atol, 0.001, 0);   /* y: its own */
        CHECK_NEAR(b->tensors[6].rtol, 0.002, 0);
        CHECK_EQ_INT(b->tensors[2].ndim, 0);        /* a scalar: one element */
        CHECK_EQ_INT(b->tensors[2].count, 1);
        CHECK_EQ_INT(b->tensors[3].shape[0], 32);   /* cdiv(1000, 32) */
        CHECK_EQ_INT(b->tensors[3].count, 128);
        CHECK_EQ_INT(b->has_work, 1);
        CHECK_NEAR(b->flops, 5.0 * 64 * 1000, 0);
        CHECK_NEAR(b->bytes, 8000, 0);
        CHECK_EQ_INT(b->nlaunches, 3);
        CHECK_EQ_INT(b->launches[0].is_memset, 1);
        CHECK_EQ_INT(b->launches[0].tensor, 6);
        CHECK_NEAR(b->launches[0].value, 0.25, 0);
        CHECK_EQ_INT(b->launches[1].grid[0], 4);
        CHECK_EQ_INT(b->launches[1].grid[1], 64);
        CHECK_EQ_INT(b->launches[1].grid[2], 1);
        CHECK_EQ_INT(b->launches[1].smem, 1024);
        CHECK_EQ_INT(b->launches[1].args[0].kind, KOPT_ARG_TENSOR);
        CHECK_EQ_INT(b->launches[1].args[1].tensor, 6);
        CHECK_EQ_INT(b->launches[1].args[2].ival, 1000);
        CHECK_NEAR(b->launches[1].args[3].fval, 0.5, 0);
        CHECK_NEAR(b->launches[1].args[4].fval, 6, 0);
        CHECK_EQ_INT(b->launches[1].args[5].ival, 64000);
        CHECK_EQ_INT(b->launches[1].args[6].ival, 7);
        CHECK_EQ_INT(b->launches[1].args[7].ival, 128);
        CHECK_EQ_INT(b->launches[2].grid[0], 64);
        CHECK_EQ_INT(b->launches[2].block[0], 128);
    }
    kopt_bound_free(b);
    kopt_candidate_free(c);
    kopt_problem_free(p);
    kopt_vars_free(&sizes);
}

static void test_sizes_resolve(void)
{
    kopt_problem *p = NULL;
    kopt_vars over = KOPT_VARS_INIT, out = KOPT_VARS_INIT;

    if (!CHECK_EQ_INT(parse(&p, FULL), KOPT_OK))
        return;
    kopt_vars_set(&over, "N", 5);
    CHECK_EQ_INT(kopt_sizes_resolve(&out, ctx, p, &over), KOPT_OK);
    CHECK_EQ_INT(out.n, 3);
    CHECK_EQ_INT(out.values[kopt_vars_find(&out, "N")], 5);
    CHECK_EQ_INT(out.values[kopt_vars_find(&out, "B")], 64);
    kopt_vars_set(&over, "Q", 1);
    CHECK_EQ_INT(kopt_sizes_resolve(&out, ctx, p, &over), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "size 'Q' is not one of full-problem_1's sizes");
    kopt_vars_free(&over);
    kopt_vars_set(&over, "B", -1);
    CHECK_EQ_INT(kopt_sizes_resolve(&out, ctx, p, &over), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "must be >= 0");
    kopt_vars_free(&over);
    kopt_vars_free(&out);
    kopt_problem_free(p);
}

static void test_hash_follows_text_and_source(void)
{
    kopt_problem *a = NULL, *b = NULL, *c = NULL;
    char *other;

    CHECK_EQ_INT(parse(&a, MINIMAL), KOPT_OK);
    CHECK_EQ_INT(parse(&b, MINIMAL), KOPT_OK);
    other = ktest_write_file(tmp, "ref2.cu", "// another reference\n");
    {
        char *json = q(MINIMAL), *pos = strstr(json, "ref.cu");
        char *j2 = malloc(strlen(json) + 2);
        if (pos && j2) {
            snprintf(j2, strlen(json) + 2, "%.*sref2.cu%s", (int)(pos - json), json, pos + 6);
            CHECK_EQ_INT(kopt_problem_parse(&c, ctx, j2, "p.json", tmp), KOPT_OK);
        }
        free(json);
        free(j2);
    }
    if (a && b && c) {
        CHECK_EQ_STR(a->hash, b->hash);
        CHECK(strcmp(a->hash, c->hash) != 0);
    }
    kopt_problem_free(a);
    kopt_problem_free(b);
    kopt_problem_free(c);
    free(other);
}

static void test_load_from_folder_and_file(void)
{
    char *dir = ktest_tmpdir("load"), *json = q(MINIMAL), *pj, *ref, *missing;
    kopt_problem *p = NULL;

    if (!dir)
        return;
    pj = ktest_write_file(dir, "problem.json", json);
    ref = ktest_write_file(dir, "ref.cu", "extern \"C\" __global__ void k(double *a) {}\n");
    if (CHECK_EQ_INT(kopt_problem_load(&p, ctx, dir), KOPT_OK)) {
        CHECK_EQ_STR(p->dir, dir);
        CHECK_EQ_STR(p->path, pj);
        CHECK_STR_CONTAINS(p->ref_source, "__global__ void k");
    }
    kopt_problem_free(p);
    p = NULL;
    if (CHECK_EQ_INT(kopt_problem_load(&p, ctx, pj), KOPT_OK))
        CHECK_EQ_STR(p->dir, dir);
    kopt_problem_free(p);
    p = NULL;
    missing = kopt_path_join(dir, "nope");
    CHECK_EQ_INT(kopt_problem_load(&p, ctx, missing), KOPT_E_NOT_FOUND);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "no such problem folder or file");
    CHECK(p == NULL);
    /* a folder without problem.json */
    remove(pj);
    CHECK(kopt_problem_load(&p, ctx, dir) != KOPT_OK);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "problem.json");
    ktest_rmtree(dir);
    free(missing);
    free(ref);
    free(pj);
    free(json);
    free(dir);
}

/* ---- invalid problems ---------------------------------------------------------------- */

/* pieces of a valid problem, to vary one at a time */
#define NAME "'name': 'p'"
#define SIZES "'sizes': {'N': 100}"
#define X_IN "{'name': 'x', 'dtype': 'f32', 'shape': ['N'], 'role': 'input'}"
#define Y_OUT "{'name': 'y', 'dtype': 'f32', 'shape': ['N'], 'role': 'output'}"
#define TENSORS "'tensors': [" X_IN ", " Y_OUT "]"
#define LAUNCH(args) "{'kernel': 'k', 'grid': ['cdiv(N,256)'], 'block': [256], 'args': " args "}"
#define REF_WITH(launches) "'reference': {'source': 'ref.cu', 'launches': [" launches "]}"
#define REF REF_WITH(LAUNCH("['x', 'y', 'N']"))
#define WITH_TENSORS(...) "{" NAME ", " SIZES ", 'tensors': [" __VA_ARGS__ "], " REF "}"
#define WITH_REF(...) "{" NAME ", " SIZES ", " TENSORS ", " __VA_ARGS__ "}"
#define WITH_EXTRA(...) "{" NAME ", " SIZES ", " TENSORS ", " REF ", " __VA_ARGS__ "}"

static const struct bad_case {
    const char *what;
    const char *json;     /* single-quoted */
    const char *message;  /* must be contained in the error */
} bad_cases[] = {
    {"invalid JSON", "{" NAME ",\n " SIZES "\n " TENSORS "}",
     "p.json:3:10: invalid JSON: '}' expected"},
    {"invalid JSON: truncated", "{" NAME ", " SIZES, "p.json:1:"},
    {"top level not an object", "[1, 2]", "p.json: expected a JSON object at the top"},
    {"top level a string", "'x'", "p.json:1:3: invalid JSON"},
    {"missing name", "{" SIZES ", " TENSORS ", " REF "}", "p.json: name: missing (required)"},
    {"name not a string", "{'name': 5, " SIZES ", " TENSORS ", " REF "}",
     "p.json: name: expected a string, got an integer"},
    {"bad name chars", "{'name': 'a b', " SIZES ", " TENSORS ", " REF "}",
     "p.json: name: 'a b': use letters, digits, '_' and '-'"},
    {"empty name", "{'name': '', " SIZES ", " TENSORS ", " REF "}", "p.json: name: empty"},
    {"unknown top-level field", WITH_EXTRA("'colour': 'red'"),
     "p.json: unknown field 'colour' (expected one of: name, description, sizes"},
    {"duplicate key", "{" NAME ", " NAME ", " SIZES ", " TENSORS ", " REF "}",
     "p.json:1:"},
    {"sizes missing", "{" NAME ", " TENSORS ", " REF "}", "p.json: sizes: missing (required"},
    {"sizes not an object", "{" NAME ", 'sizes': [100], " TENSORS ", " REF "}",
     "p.json: sizes: expected an object of NAME: integer, got an array"},
    {"size negative", "{" NAME ", 'sizes': {'N': -1}, " TENSORS ", " REF "}",
     "p.json: sizes.N: must be >= 0, got -1"},
    {"size not an integer", "{" NAME ", 'sizes': {'N': 1.5}, " TENSORS ", " REF "}",
     "p.json: sizes.N: expected an integer, got a number"},
    {"size a string", "{" NAME ", 'sizes': {'N': '100'}, " TENSORS ", " REF "}",
     "p.json: sizes.N: expected an integer, got a string"},
    {"size bad identifier", "{" NAME ", 'sizes': {'N': 1, '2N': 4}, " TENSORS ", " REF "}",
     "p.json: sizes.2N: '2N' is not a valid name"},
    {"check_sizes unknown size", WITH_EXTRA("'check_sizes': {'Q': 3}"),
     "p.json: check_sizes: 'Q' is not one of the problem's sizes"},
    {"check_sizes negative", WITH_EXTRA("'check_sizes': {'N': -3}"),
     "p.json: check_sizes.N: must be >= 0"},
    {"check_sizes make a shape negative",
     "{" NAME ", " SIZES ", 'check_sizes': {'N': 10}, 'tensors': ["
     "{'name': 'x', 'dtype': 'f32', 'shape': ['N-50'], 'role': 'input'}, " Y_OUT "], " REF "}",
     "p.json: tensors[0].shape[0]: 'N-50' is -40 at the check sizes"},
    {"tensors missing", "{" NAME ", " SIZES ", " REF "}", "p.json: tensors: missing (required)"},
    {"tensors empty", "{" NAME ", " SIZES ", 'tensors': [], " REF "}",
     "p.json: tensors: expected a non-empty array of tensors"},
    {"tensors not an array", "{" NAME ", " SIZES ", 'tensors': {'x': 1}, " REF "}",
     "p.json: tensors: expected a non-empty array of tensors"},
    {"tensor not an object", WITH_TENSORS("'x', " Y_OUT),
     "p.json: tensors[0]: expected an object"},
    {"tensor missing dtype", WITH_TENSORS("{'name': 'x', 'shape': ['N'], 'role': 'input'}, " Y_OUT),
     "p.json: tensors[0].dtype: missing (required)"},
    {"tensor unknown dtype", WITH_TENSORS(X_IN ", {'name': 'y', 'dtype': 'f8', 'shape': ['N'],"
                                          " 'role': 'output'}"),
     "p.json: tensors[1].dtype: unknown dtype 'f8'"},
    {"tensor unknown role", WITH_TENSORS("{'name': 'x', 'dtype': 'f32', 'shape': ['N'],"
                                         " 'role': 'weights'}, " Y_OUT),
     "p.json: tensors[0].role: unknown role 'weights'"},
    {"tensor missing role", WITH_TENSORS("{'name': 'x', 'dtype': 'f32', 'shape': ['N']}, " Y_OUT),
     "p.json: tensors[0].role: missing (required)"},
    {"tensor missing shape", WITH_TENSORS("{'name': 'x', 'dtype': 'f32', 'role': 'input'}, " Y_OUT),
     "p.json: tensors[0].shape: missing"},
    {"tensor name not an identifier",
     WITH_TENSORS("{'name': 'x-1', 'dtype': 'f32', 'shape': ['N'], 'role': 'input'}, " Y_OUT),
     "p.json: tensors[0].name: 'x-1' is not a C identifier"},
    {"tensor unknown field",
     WITH_TENSORS("{'name': 'x', 'dtype': 'f32', 'shape': ['N'], 'role': 'input', 'size': 3}, "
                  Y_OUT),
     "p.json: tensors[0]: unknown field 'size'"},
    {"bad shape expression",
     WITH_TENSORS("{'name': 'x', 'dtype': 'f32', 'shape': ['N+'], 'role': 'input'}, " Y_OUT),
     "p.json: tensors[0].shape[0]: expression 'N+': unexpected end"},
    {"shape names an unknown size",
     WITH_TENSORS(X_IN ", {'name': 'y', 'dtype': 'f32', 'shape': ['N', 'M'], 'role': 'output'}"),
     "p.json: tensors[1].shape[1]: expression 'M': unknown name 'M'"},
    {"shape empty string",
     WITH_TENSORS("{'name': 'x', 'dtype': 'f32', 'shape': [''], 'role': 'input'}, " Y_OUT),
     "p.json: tensors[0].shape[0]: empty expression"},
    {"negative shape at default sizes",
     WITH_TENSORS("{'name': 'x', 'dtype': 'f32', 'shape': ['N-200'], 'role': 'input'}, " Y_OUT),
     "p.json: tensors[0].shape[0]: 'N-200' is -100 at the default sizes (must be >= 0)"},
    {"duplicate tensor name", WITH_TENSORS(X_IN ", " X_IN ", " Y_OUT),
     "p.json: tensors[1]: duplicate tensor name 'x'"},
    {"tensor named like a size",
     WITH_TENSORS("{'name': 'N', 'dtype': 'f32', 'shape': ['N'], 'role': 'input'}, " Y_OUT),
     "p.json: tensors[0]: tensor name 'N' is also a size name"},
    {"init on an output",
     WITH_TENSORS(X_IN ", {'name': 'y', 'dtype': 'f32', 'shape': ['N'], 'role': 'output',"
                  " 'init': {'dist': 'normal'}}"),
     "p.json: tensors[1].init: only input and inout tensors are initialized (this one is output)"},
    {"integer tensor with normal init",
     WITH_TENSORS("{'name': 'x', 'dtype': 'i32', 'shape': ['N'], 'role': 'input',"
                  " 'init': {'dist': 'normal', 'mean': 0, 'std': 1}}, " Y_OUT),
     "p.json: tensors[0].init: an integer tensor needs {\"dist\": \"int\", ...}"},
    {"integer tensor with uniform init",
     WITH_TENSORS("{'name': 'x', 'dtype': 'i64', 'shape': ['N'], 'role': 'input',"
                  " 'init': {'dist': 'uniform', 'low': 0, 'high': 1}}, " Y_OUT),
     "p.json: tensors[0].init: an integer tensor needs"},
    {"bad dist",
     WITH_TENSORS("{'name': 'x', 'dtype': 'f32', 'shape': ['N'], 'role': 'input',"
                  " 'init': {'dist': 'gauss'}}, " Y_OUT),
     "p.json: tensors[0].init: unknown dist 'gauss' (expected normal, uniform, int)"},
    {"init missing dist",
     WITH_TENSORS("{'name': 'x', 'dtype': 'f32', 'shape': ['N'], 'role': 'input',"
                  " 'init': {'mean': 1}}, " Y_OUT),
     "p.json: tensors[0].init.dist: missing (required)"},
    {"uniform high below low",
     WITH_TENSORS("{'name': 'x', 'dtype': 'f32', 'shape': ['N'], 'role': 'input',"
                  " 'init': {'dist': 'uniform', 'low': 1, 'high': 0}}, " Y_OUT),
     "p.json: tensors[0].init: high (0) is below low (1)"},
    {"int dist with fractional bounds",
     WITH_TENSORS("{'name': 'x', 'dtype': 'f32', 'shape': ['N'], 'role': 'input',"
                  " 'init': {'dist': 'int', 'low': 0.5, 'high': 3}}, " Y_OUT),
     "p.json: tensors[0].init: low and high of an int distribution must be integers"},
    {"uniform missing high",
     WITH_TENSORS("{'name': 'x', 'dtype': 'f32', 'shape': ['N'], 'role': 'input',"
                  " 'init': {'dist': 'uniform', 'low': 0}}, " Y_OUT),
     "p.json: tensors[0].init.high: missing (required)"},
    {"std zero",
     WITH_TENSORS("{'name': 'x', 'dtype': 'f32', 'shape': ['N'], 'role': 'input',"
                  " 'init': {'dist': 'normal', 'std': 0}}, " Y_OUT),
     "p.json: tensors[0].init: std must be > 0"},
    {"std negative",
     WITH_TENSORS("{'name': 'x', 'dtype': 'f32', 'shape': ['N'], 'role': 'input',"
                  " 'init': {'dist': 'normal', 'mean': 3, 'std': -1}}, " Y_OUT),
     "p.json: tensors[0].init: std must be > 0"},
    {"tensor tolerance negative",
     WITH_TENSORS(X_IN ", {'name': 'y', 'dtype': 'f32', 'shape': ['N'], 'role': 'output',"
                  " 'tolerance': {'rtol': -1}}"),
     "p.json: tensors[1].tolerance: atol and rtol must be >= 0"},
    {"no output tensor", WITH_TENSORS(X_IN),
     "p.json: tensors: no tensor has role output or inout"},
    {"reference missing", "{" NAME ", " SIZES ", " TENSORS "}",
     "p.json: reference: missing (required"},
    {"reference not an object", WITH_REF("'reference': 'ref.cu'"),
     "p.json: reference: expected an object"},
    {"reference source missing", WITH_REF("'reference': {'launches': [" LAUNCH("[]") "]}"),
     "p.json: reference.source: missing (required)"},
    {"reference source unreadable",
     WITH_REF("'reference': {'source': 'nope.cu', 'launches': [" LAUNCH("[]") "]}"),
     "p.json: reference.source: cannot read the reference source"},
    {"reference bad mode",
     WITH_REF("'reference': {'source': 'ref.cu', 'mode': 'gpu', 'launches': [" LAUNCH("[]") "]}"),
     "p.json: reference: mode: expected \"device\" or \"host\", got 'gpu'"},
    {"reference unknown field",
     WITH_REF("'reference': {'source': 'ref.cu', 'kernel': 'k', 'launches': [" LAUNCH("[]") "]}"),
     "p.json: reference: unknown field 'kernel'"},
    {"reference launches missing", WITH_REF("'reference': {'source': 'ref.cu'}"),
     "p.json: reference.launches: missing (required)"},
    {"reference launches empty", WITH_REF("'reference': {'source': 'ref.cu', 'launches': []}"),
     "p.json: reference.launches: expected a non-empty array of launch steps"},
    {"launch without kernel",
     WITH_REF(REF_WITH("{'grid': [1], 'block': [1], 'args': []}")),
     "p.json: reference.launches[0].kernel: missing (required)"},
    {"launch unknown field",
     WITH_REF(REF_WITH("{'kernel': 'k', 'grid': [1], 'block': [1], 'args': [], 'stream': 1}")),
     "p.json: reference.launches[0]: unknown field 'stream'"},
    {"grid with 4 dims",
     WITH_REF(REF_WITH("{'kernel': 'k', 'grid': [1, 1, 1, 1], 'block': [1], 'args': []}")),
     "p.json: reference.launches[0].grid: expected an array of 1 to 3 expressions"},
    {"block empty",
     WITH_REF(REF_WITH("{'kernel': 'k', 'grid': [1], 'block': [], 'args': []}")),
     "p.json: reference.launches[0].block: expected an array of 1 to 3 expressions"},
    {"grid bad expression",
     WITH_REF(REF_WITH("{'kernel': 'k', 'grid': ['cdiv(N, 0)'], 'block': [1], 'args': []}")),
     "p.json: reference.launches[0]: grid: expression 'cdiv(N, 0)': cdiv by a value <= 0"},
    {"smem bad expression",
     WITH_REF(REF_WITH("{'kernel': 'k', 'grid': [1], 'block': [1], 'smem': 'S*4', 'args': []}")),
     "p.json: reference.launches[0]: smem: expression 'S*4': unknown name 'S'"},
    {"args missing", WITH_REF(REF_WITH("{'kernel': 'k', 'grid': [1], 'block': [1]}")),
     "p.json: reference.launches[0].args: missing (required; use [] for a kernel without"},
    {"args not an array", WITH_REF(REF_WITH(LAUNCH("'x'"))),
     "p.json: reference.launches[0].args: expected an array"},
    {"arg neither tensor nor expression", WITH_REF(REF_WITH(LAUNCH("['x', 'y', 'zz']"))),
     "p.json: reference.launches[0]: args[2]: 'zz' is neither a tensor nor a valid expression"},
    {"arg bad typed key", WITH_REF(REF_WITH(LAUNCH("['x', 'y', 'N', {'f16': 1}]"))),
     "p.json: reference.launches[0].args[3]: unknown argument type 'f16' (expected f32, f64, "
     "i32, i64)"},
    {"arg typed with two keys", WITH_REF(REF_WITH(LAUNCH("[{'f32': 1, 'f64': 2}]"))),
     "p.json: reference.launches[0].args[0]: expected a tensor name, an expression, or"},
    {"arg i32 not an integer", WITH_REF(REF_WITH(LAUNCH("[{'i32': 1.5}]"))),
     "p.json: reference.launches[0].args[0]: 'i32' needs an integer"},
    {"arg typed bad expression", WITH_REF(REF_WITH(LAUNCH("[{'i64': 'N*'}]"))),
     "p.json: reference.launches[0]: args[0]: 'N*' is neither a tensor nor a valid expression"},
    {"memset of unknown tensor", WITH_REF(REF_WITH("{'memset': 'q', 'value': 0}")),
     "p.json: reference.launches[0]: memset of unknown tensor 'q'"},
    {"memset value not a number", WITH_REF(REF_WITH("{'memset': 'y', 'value': 'zero'}")),
     "p.json: reference.launches[0].value: expected a number, got a string"},
    {"tolerance negative", WITH_EXTRA("'tolerance': {'atol': -1e-5, 'rtol': 1e-5}"),
     "p.json: tolerance: atol and rtol must be >= 0"},
    {"tolerance unknown key", WITH_EXTRA("'tolerance': {'atol': 1e-5, 'btol': 1e-5}"),
     "p.json: tolerance: unknown field 'btol' (expected one of: atol, rtol)"},
    {"tolerance not an object", WITH_EXTRA("'tolerance': 0.1"),
     "p.json: tolerance: expected {\"atol\": x, \"rtol\": y}"},
    {"work bad expression", WITH_EXTRA("'work': {'flops': '2*Q', 'bytes': '8*N'}"),
     "p.json: work.flops: expression '2*Q': unknown name 'Q' at column 3"},
    {"work negative", WITH_EXTRA("'work': {'bytes': '-N'}"),
     "p.json: work.bytes: is negative (-100)"},
    {"work unknown compute", WITH_EXTRA("'work': {'flops': 'N', 'compute': 'fp4'}"),
     "p.json: work.compute: unknown 'fp4' (expected fp32, fp64, fp16, bf16, tf32, fp8, int)"},
    {"work unknown field", WITH_EXTRA("'work': {'flop': 'N'}"),
     "p.json: work: unknown field 'flop'"},
    {"allow_libraries not boolean", WITH_EXTRA("'allow_libraries': 1"),
     "p.json: allow_libraries: expected true or false"},
    {"seed negative", WITH_EXTRA("'seed': -1"), "p.json: seed: expected a non-negative integer"},
    {"seed not an integer", WITH_EXTRA("'seed': '42'"),
     "p.json: seed: expected a non-negative integer"},
    {"description not a string", WITH_EXTRA("'description': ['a']"),
     "p.json: description: expected a string, got an array"},
};

static void test_base_of_invalid_cases_is_valid(void)
{
    /* the pieces the invalid cases vary are valid on their own */
    static const char *const good[] = {
        "{" NAME ", " SIZES ", " TENSORS ", " REF "}",
        WITH_EXTRA("'check_sizes': {'N': 10}"),
        WITH_EXTRA("'work': {'flops': 'N', 'bytes': '8*N', 'compute': 'int'}"),
        WITH_REF(REF_WITH("{'memset': 'y'}, " LAUNCH("[{'i64': 'N*N'}, {'f32': 'N'}, 3]"))),
        WITH_REF("'reference': {'source': 'ref.cu', 'mode': 'host'}"),
    };
    for (int i = 0; i < KTEST_COUNT(good); i++) {
        kopt_problem *p = NULL;
        if (!CHECK_EQ_INT(parse(&p, good[i]), KOPT_OK))
            fprintf(stderr, "  good[%d]: %s\n", i, kopt_errmsg(ctx));
        kopt_problem_free(p);
    }
}

static void test_invalid_problems(void)
{
    int n = KTEST_COUNT(bad_cases);

    CHECK(n >= 24);
    for (int i = 0; i < n; i++) {
        kopt_problem *p = (kopt_problem *)&n;   /* must be reset to NULL */
        kopt_status rc = parse(&p, bad_cases[i].json);
        int ok = CHECK_EQ_INT(rc, KOPT_E_INVALID);
        ok &= CHECK(p == NULL);
        ok &= CHECK_STR_CONTAINS(kopt_errmsg(ctx), bad_cases[i].message);
        ok &= CHECK(strchr(kopt_errmsg(ctx), '\n') == NULL);
        if (!ok)
            fprintf(stderr, "  ^ case '%s'\n", bad_cases[i].what);
        if (rc == KOPT_OK)
            kopt_problem_free(p);
    }
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_valid_sizes_and_top_level),
        KTEST(test_valid_tensors),
        KTEST(test_valid_reference_plan),
        KTEST(test_defaults),
        KTEST(test_default_tolerances_by_dtype),
        KTEST(test_sizes_resolve),
        KTEST(test_hash_follows_text_and_source),
        KTEST(test_load_from_folder_and_file),
        KTEST(test_base_of_invalid_cases_is_valid),
        KTEST(test_invalid_problems),
    };
    char *ref;
    int rc;

    ctx = kopt_ctx_new();
    tmp = ktest_tmpdir("problem");
    if (!ctx || !tmp)
        return 1;
    ref = ktest_write_file(tmp, "ref.cu",
                           "template <int T> __global__ void ref_kernel(const float *x) {}\n");
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    ktest_rmtree(tmp);
    free(ref);
    free(tmp);
    kopt_ctx_free(ctx);
    return rc;
}
