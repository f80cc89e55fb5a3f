/*
 * kopt/problem.h: problems (problem.json + reference source), candidates (.cu with an
 * optional front matter), and binding both to concrete sizes.
 *
 * Ownership: kopt_problem_load() and kopt_candidate_load() return objects owned by the
 * caller (free with kopt_problem_free / kopt_candidate_free). A kopt_bound made by
 * kopt_bind() is plain data owned by the caller (kopt_bound_free). Strings inside these
 * structs belong to their struct. Validation errors name the file and the field, e.g.
 * "examples/x/problem.json: tensors[1].dtype: unknown dtype 'f8' (...)".
 */
#ifndef KOPT_PROBLEM_H
#define KOPT_PROBLEM_H

#include "kopt/core.h"
#include "kopt/expr.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kopt_dtype {
    KOPT_F32 = 0, KOPT_F16, KOPT_BF16, KOPT_F64, KOPT_I32, KOPT_I64, KOPT_DTYPE_COUNT
} kopt_dtype;
size_t kopt_dtype_size(kopt_dtype t);
const char *kopt_dtype_name(kopt_dtype t);
int kopt_dtype_from_name(const char *name, kopt_dtype *out);   /* 0 on success */
int kopt_dtype_is_float(kopt_dtype t);
/* Default tolerance of a dtype (atol = rtol). */
double kopt_dtype_default_tol(kopt_dtype t);
/* Element i of a typed buffer as a double. */
double kopt_dtype_load(kopt_dtype t, const void *base, int64_t i);

typedef enum kopt_role {
    KOPT_ROLE_INPUT = 0, KOPT_ROLE_OUTPUT, KOPT_ROLE_INOUT, KOPT_ROLE_SCRATCH
} kopt_role;
const char *kopt_role_name(kopt_role r);

typedef enum kopt_dist { KOPT_DIST_NORMAL = 0, KOPT_DIST_UNIFORM, KOPT_DIST_INT } kopt_dist;
typedef struct kopt_init {
    kopt_dist dist;
    double a, b;     /* normal: mean, std; uniform: low, high; int: low, high (inclusive) */
} kopt_init;

#define KOPT_MAX_DIMS 8
typedef struct kopt_tensor_spec {
    char *name;
    kopt_dtype dtype;
    kopt_role role;
    int ndim;
    char *shape[KOPT_MAX_DIMS];   /* expressions */
    kopt_init init;
    int has_tol;
    double atol, rtol;
    char *pytorch;          /* PyTorch reference: "input:I", "param:KEY", "buffer:KEY",
                             * "output:I" (docs/kernelbench.md), else NULL */
} kopt_tensor_spec;

typedef enum kopt_arg_kind {
    KOPT_ARG_TENSOR = 0,   /* device pointer of a tensor */
    KOPT_ARG_INT,          /* integer expression; width from the kernel's parameter */
    KOPT_ARG_I32, KOPT_ARG_I64, KOPT_ARG_F32, KOPT_ARG_F64
} kopt_arg_kind;
typedef struct kopt_arg {
    kopt_arg_kind kind;
    char *text;            /* tensor name or expression; NULL when `number` is used */
    double number;         /* a literal for F32/F64 (or integer kinds) */
} kopt_arg;

typedef struct kopt_launch {
    int is_memset;
    char *kernel;           /* launch: name expression ("k", "k<128>") */
    int ngrid, nblock;
    char *grid[3], *block[3];
    char *smem;             /* NULL = 0 */
    int nargs;
    kopt_arg *args;
    char *memset_tensor;    /* memset step */
    double memset_value;
} kopt_launch;

typedef struct kopt_plan {
    int n;
    kopt_launch *steps;
} kopt_plan;

typedef enum kopt_compute {
    KOPT_COMPUTE_FP32 = 0, KOPT_COMPUTE_FP64, KOPT_COMPUTE_FP16, KOPT_COMPUTE_BF16,
    KOPT_COMPUTE_TF32, KOPT_COMPUTE_FP8, KOPT_COMPUTE_INT, KOPT_COMPUTE_COUNT
} kopt_compute;
const char *kopt_compute_name(kopt_compute c);

typedef struct kopt_problem {
    char *dir;              /* folder */
    char *path;             /* problem.json */
    char *name;
    char *description;
    kopt_vars sizes;
    int has_check_sizes;
    kopt_vars check_sizes;  /* overrides only */
    int ntensors;
    kopt_tensor_spec *tensors;
    char *ref_path;         /* reference source file */
    char *ref_source;       /* its text */
    kopt_plan ref_plan;
    int ref_host_mode;
    int nref_options;
    char **ref_options;
    int has_tol;
    double atol, rtol;
    char *work_flops, *work_bytes;   /* NULL when not given */
    kopt_compute compute;
    int allow_libraries;
    uint64_t seed;
    char hash[65];          /* problem.json + reference source */
    int ref_torch;          /* "reference": {"pytorch": "model.py"}: ref_path is a PyTorch
                             * program (class Model, get_inputs, get_init_inputs), run by
                             * the Python worker; ref_plan is empty */
} kopt_problem;

kopt_status kopt_problem_load(kopt_problem **out, kopt_ctx *ctx, const char *dir_or_json);
/* Load from JSON text (for tests); `path` names it in messages, `dir` resolves sources. */
kopt_status kopt_problem_parse(kopt_problem **out, kopt_ctx *ctx, const char *json_text,
                               const char *path, const char *dir);
void kopt_problem_free(kopt_problem *p);
/* The outputs' tightest relative tolerance: each output's own, else the problem's, else its
 * dtype's default (what the check compares with); 0 without outputs. */
double kopt_problem_outputs_rtol(const kopt_problem *p);
int kopt_problem_find_tensor(const kopt_problem *p, const char *name);

/* A tunable param of a template candidate: its values in the order given ("params":
 * {"BM": [32, 64, 128]} a list, {"range": [1, 8]} or {"range": [0, 64, 16]} an inclusive
 * range with an optional step, {"pow2": [16, 256]} the powers of two in between), and an
 * optional role that tells the profile-guided tuner what moving it changes. */
typedef struct kopt_param_spec {
    char *name;
    int nvalues;
    int64_t *values;
    char role[16];          /* "threads", "vector", "tile", "work", "stages", "unroll",
                             * "other", or "" (guessed from the name when needed) */
} kopt_param_spec;

typedef struct kopt_candidate {
    char *path;             /* .cu file, or the reference's path */
    char *dir;
    char *source;
    int is_reference;
    int has_front_matter;
    int host_mode;
    kopt_plan plan;         /* own plan, or a copy of the reference plan */
    kopt_vars params;       /* fixed params, passed as -DNAME=value */
    int ntemplate_params;   /* > 0: a template (params with several values): tune it */
    kopt_param_spec *template_params;
    int nconstraints;
    char **constraints;
    int nscratch;
    kopt_tensor_spec *scratch;
    int noptions;
    char **options;
    int nincludes;
    char **includes;        /* absolute or relative to dir */
    int nlibraries;
    char **libraries;       /* host mode: "cublas", ... */
    char hash[65];          /* of the source text */
    int torch_module;       /* a .py file defining ModelNew (KernelBench's form), for a
                             * problem with a PyTorch reference; nothing else is parsed */
} kopt_candidate;

/* Parse a candidate file for a problem. */
kopt_status kopt_candidate_load(kopt_candidate **out, kopt_ctx *ctx, const char *path,
                                const kopt_problem *prob);
/* Parse candidate text (tests); `path` names it in messages. */
kopt_status kopt_candidate_parse(kopt_candidate **out, kopt_ctx *ctx, const char *text,
                                 const char *path, const kopt_problem *prob);
/* The problem's reference as a candidate. */
kopt_status kopt_candidate_from_reference(kopt_candidate **out, kopt_ctx *ctx,
                                          const kopt_problem *prob);
void kopt_candidate_free(kopt_candidate *c);
/* A concrete candidate from template `tmpl` with every template param fixed to its value in
 * `values` (each must be one of its listed values; names not in the template are an error
 * naming them). The result is no longer a template; its source hash is the template's. */
kopt_status kopt_candidate_instantiate(kopt_candidate **out, kopt_ctx *ctx,
                                       const kopt_candidate *tmpl, const kopt_vars *values);
/* Write `tmpl`'s source to `path` with the front matter's params fixed to `values` (a ready
 * candidate: `kopt eval` takes it as it is); `note` (may be NULL) goes into a comment line
 * after the front matter ("tuned by kopt on NVIDIA H200: 0.123 ms"). */
kopt_status kopt_candidate_write_fixed(kopt_ctx *ctx, const kopt_candidate *tmpl,
                                       const kopt_vars *values, const char *path,
                                       const char *note);
/* KOPT_OK for a concrete candidate (or NULL); KOPT_E_INVALID for a template, with a
 * message naming its file and template params. Whatever compiles, binds, evaluates or
 * profiles a candidate calls this first. */
kopt_status kopt_candidate_check_concrete(kopt_ctx *ctx, const kopt_candidate *c);

/* ---- binding to sizes ----------------------------------------------------------------- */
typedef struct kopt_btensor {
    char name[64];
    kopt_dtype dtype;
    kopt_role role;
    int ndim;
    int64_t shape[KOPT_MAX_DIMS];
    int64_t count;
    size_t bytes;
    kopt_init init;
    double atol, rtol;
} kopt_btensor;

typedef struct kopt_barg {
    kopt_arg_kind kind;     /* TENSOR, INT (width decided at launch), I32, I64, F32, F64 */
    int tensor;             /* index into tensors */
    int64_t ival;
    double fval;
} kopt_barg;

typedef struct kopt_blaunch {
    int is_memset;
    char kernel[256];
    int64_t grid[3], block[3];
    int64_t smem;
    int nargs;
    kopt_barg *args;
    int tensor;             /* memset target */
    double value;
} kopt_blaunch;

typedef struct kopt_bound {
    kopt_vars sizes;        /* the full size set used */
    int ntensors;
    kopt_btensor *tensors;  /* problem tensors, then candidate scratch */
    int nlaunches;
    kopt_blaunch *launches;
    int has_work;
    double flops, bytes;
} kopt_bound;

/* Start from the problem's sizes, apply `overrides` (may be NULL), and return the set. */
kopt_status kopt_sizes_resolve(kopt_vars *out, kopt_ctx *ctx, const kopt_problem *p,
                               const kopt_vars *overrides);
/* Bind the problem and candidate to `sizes`: shapes, launch dims and args evaluated,
 * constraints checked. */
kopt_status kopt_bind(kopt_bound **out, kopt_ctx *ctx, const kopt_problem *p,
                      const kopt_candidate *c, const kopt_vars *sizes);
void kopt_bound_free(kopt_bound *b);

#ifdef __cplusplus
}
#endif
#endif
