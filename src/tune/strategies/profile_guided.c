/*
 * src/tune/strategies/profile_guided.c: uses the static micro-tool findings of the best
 * configuration so far to choose which param to move, and in which direction.
 *
 * It first measures `init` random valid points. Then, from the best measured point, it reads
 * that point's findings (outcome.findings[], best gain first) and maps each tool to moves
 * (a param role and a direction); the params with that role are moved one step, then two
 * steps, in that direction (by value: "larger" is the next larger value in the param's
 * list). The first `batch` valid, unproposed moves are proposed. When no finding maps to a
 * move that is valid and new, it falls back to greedy best-improvement: every unproposed
 * adjacent neighbour of the best point; when those are spent too, it perturbs `perturb`
 * params of the best point at random (or takes a random valid point).
 *
 * Mapping (tool id -> moves, tried in order; "-" = smaller value, "+" = larger):
 *   register_spills        work -, tile -, unroll -, vector -
 *   high_registers         work -, tile -, unroll -
 *   occupancy_limiter      registers > 64 or spills: work -, tile -, unroll -, threads -
 *                          shared memory > 48 KiB:   stages -, tile -
 *                          otherwise (block slots/warps): threads +, work -
 *   non_vectorized_loads   vector +
 *   uncoalesced_global     vector +, tile +, threads +
 *   sector_efficiency      vector +, tile +
 *   small_grid_tail        work -, tile -, threads -
 *   block_size             threads +, threads -
 *   missing_async_copy     stages +
 *   warp_stalls            stages +, work +, unroll +, threads +
 *   bank_conflicts         pad +, pad - (params named PAD*, whatever their role)
 *   dram_saturated, divergence, no_tensor_cores, fp64_in_fp32, unfused_fp,
 *   many_small_launches    (no param move: code changes) -> greedy fallback
 * A tool id matches when it equals the table's name or starts with it followed by '/' or
 * '.' (variants such as "warp_stalls/long_scoreboard").
 *
 * Roles come from kopt_param_spec.role; when empty they are guessed from the name (upper
 * case, split at '_'): STAGE* -> stages; UNROLL* -> unroll; VEC*, VW -> vector; TILE*,
 * BM, BN, BK, TM, TN, TK, WM, WN, BLOCK_M/N/K -> tile; ITEMS*, WORK*, ROWS_PER*,
 * *PER_THREAD, ELEMS*, EPT -> work; BLOCK*, THREADS*, WARPS*, NT, TPB -> threads; else
 * other (moved only by the fallback).
 *
 * Options: init (default 8, at most a quarter of a known budget), batch (default 2),
 * perturb (default 2).
 */
#include "common.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ROLE_PAD is not a declared role: it matches params named PAD* whatever their role. */
enum {
    ROLE_OTHER, ROLE_THREADS, ROLE_VECTOR, ROLE_TILE, ROLE_WORK, ROLE_STAGES, ROLE_UNROLL,
    ROLE_PAD
};

typedef struct move {
    int role, dir;
} move;

typedef struct tool_moves {
    const char *tool;
    move moves[4];
    int n;
} tool_moves;

static const tool_moves table[] = {
    {"register_spills", {{ROLE_WORK, -1}, {ROLE_TILE, -1}, {ROLE_UNROLL, -1}, {ROLE_VECTOR, -1}},
     4},
    {"high_registers", {{ROLE_WORK, -1}, {ROLE_TILE, -1}, {ROLE_UNROLL, -1}}, 3},
    {"non_vectorized_loads", {{ROLE_VECTOR, +1}}, 1},
    {"uncoalesced_global", {{ROLE_VECTOR, +1}, {ROLE_TILE, +1}, {ROLE_THREADS, +1}}, 3},
    {"sector_efficiency", {{ROLE_VECTOR, +1}, {ROLE_TILE, +1}}, 2},
    {"small_grid_tail", {{ROLE_WORK, -1}, {ROLE_TILE, -1}, {ROLE_THREADS, -1}}, 3},
    {"block_size", {{ROLE_THREADS, +1}, {ROLE_THREADS, -1}}, 2},
    {"missing_async_copy", {{ROLE_STAGES, +1}}, 1},
    {"warp_stalls", {{ROLE_STAGES, +1}, {ROLE_WORK, +1}, {ROLE_UNROLL, +1}, {ROLE_THREADS, +1}},
     4},
    {"bank_conflicts", {{ROLE_PAD, +1}, {ROLE_PAD, -1}}, 2},
};
static const tool_moves occ_registers = {
    "occupancy_limiter", {{ROLE_WORK, -1}, {ROLE_TILE, -1}, {ROLE_UNROLL, -1}, {ROLE_THREADS, -1}},
    4};
static const tool_moves occ_smem = {"occupancy_limiter", {{ROLE_STAGES, -1}, {ROLE_TILE, -1}},
                                    2};
static const tool_moves occ_slots = {"occupancy_limiter", {{ROLE_THREADS, +1}, {ROLE_WORK, -1}},
                                     2};

#define OCC_REGS_HIGH 64
#define OCC_SMEM_HIGH (48 * 1024)

typedef struct profile_guided {
    const kopt_tune_space *space;
    kopt_rng rng;
    kopt_tune_objective objective;
    kopt_tune__map seen;
    int init, batch, perturb;
    int roles[KOPT_TUNE_MAX_PARAMS];
    int pads[KOPT_TUNE_MAX_PARAMS];   /* named PAD* */
    int has_best;
    uint64_t best;
    double best_value;
    kopt_tune_outcome best_outcome;   /* its findings steer the moves */
    int done;
    /* counters (for tests and curiosity): moves proposed from findings, fallbacks */
    long guided, fallback;
} profile_guided;

static int has_token(const char *name, const char *tok, int prefix)
{
    char up[64], *save = NULL;
    size_t len = strlen(tok);

    snprintf(up, sizeof(up), "%s", name);
    for (char *c = up; *c; c++)
        *c = (char)toupper((unsigned char)*c);
    for (char *t = strtok_r(up, "_", &save); t; t = strtok_r(NULL, "_", &save))
        if (prefix ? strncmp(t, tok, len) == 0 : strcmp(t, tok) == 0)
            return 1;
    return 0;
}

static int guess_role(const kopt_param_spec *p)
{
    static const struct {
        const char *role;
        int id;
    } named[] = {{"threads", ROLE_THREADS}, {"vector", ROLE_VECTOR}, {"tile", ROLE_TILE},
                 {"work", ROLE_WORK},       {"stages", ROLE_STAGES}, {"unroll", ROLE_UNROLL},
                 {"other", ROLE_OTHER}};
    static const char *const tiles[] = {"BM", "BN", "BK", "TM", "TN", "TK", "WM", "WN"};
    const char *n = p->name ? p->name : "";
    char up[64];

    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
        if (p->role[0] && strcmp(p->role, named[i].role) == 0)
            return named[i].id;
    snprintf(up, sizeof(up), "%s", n);
    for (char *c = up; *c; c++)
        *c = (char)toupper((unsigned char)*c);
    if (has_token(n, "STAGE", 1))
        return ROLE_STAGES;
    if (has_token(n, "UNROLL", 1))
        return ROLE_UNROLL;
    if (has_token(n, "VEC", 1) || has_token(n, "VW", 0))
        return ROLE_VECTOR;
    if (has_token(n, "TILE", 1) ||
        (strncmp(up, "BLOCK_", 6) == 0 && strchr("MNK", up[6]) && up[6] &&
         (up[7] == '\0' || up[7] == '_')))
        return ROLE_TILE;
    for (size_t i = 0; i < sizeof(tiles) / sizeof(tiles[0]); i++)
        if (has_token(n, tiles[i], 0))
            return ROLE_TILE;
    if (has_token(n, "ITEMS", 1) || has_token(n, "WORK", 1) || strstr(up, "ROWS_PER") ||
        strstr(up, "PER_THREAD") || has_token(n, "ELEMS", 1) || has_token(n, "EPT", 0))
        return ROLE_WORK;
    if (has_token(n, "BLOCK", 1) || has_token(n, "THREADS", 1) || has_token(n, "WARPS", 1) ||
        has_token(n, "NT", 0) || has_token(n, "TPB", 0))
        return ROLE_THREADS;
    return ROLE_OTHER;
}

static void pg_destroy(void *state)
{
    profile_guided *g = state;

    if (!g)
        return;
    kopt_tune__map_free(&g->seen);
    free(g);
}

static kopt_status pg_create(void **state, kopt_ctx *ctx, const kopt_tune_space *space,
                             const kopt_tune_strategy_opts *opts)
{
    static const char *const known[] = {"init", "batch", "perturb", NULL};
    profile_guided *g = calloc(1, sizeof(*g));
    kopt_status rc;
    int init_def = 8;

    if (!g)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "out of memory");
    g->space = space;
    kopt_rng_seed(&g->rng, opts ? opts->seed : 1);
    g->objective = opts ? opts->objective : KOPT_TUNE_TIME;
    if (opts && opts->max_evals > 0 && opts->max_evals / 4 < init_def)
        init_def = opts->max_evals / 4 > 1 ? opts->max_evals / 4 : 1;
    if ((rc = kopt_tune__opt_int(ctx, opts, known, "init", init_def, 1, 100000, &g->init)) ||
        (rc = kopt_tune__opt_int(ctx, opts, known, "batch", 2, 1, 1024, &g->batch)) ||
        (rc = kopt_tune__opt_int(ctx, opts, known, "perturb", 2, 1, KOPT_TUNE_MAX_PARAMS,
                                 &g->perturb)))
        goto fail;
    for (int i = 0; i < space->nparams; i++) {
        g->roles[i] = guess_role(&space->params[i]);
        g->pads[i] = has_token(space->params[i].name, "PAD", 1);
    }
    if (kopt_tune__map_init(&g->seen, 256) != 0) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "out of memory");
        goto fail;
    }
    g->best_value = INFINITY;
    *state = g;
    return KOPT_OK;
fail:
    pg_destroy(g);
    return rc;
}

static int tool_is(const char *tool, const char *name)
{
    size_t len = strlen(name);

    return strncmp(tool, name, len) == 0 &&
           (tool[len] == '\0' || tool[len] == '/' || tool[len] == '.');
}

static const tool_moves *moves_for(const kopt_tune_outcome *o, const char *tool)
{
    if (tool_is(tool, "occupancy_limiter")) {
        if (o->registers > OCC_REGS_HIGH || o->spill_bytes > 0)
            return &occ_registers;
        if (o->smem_bytes > OCC_SMEM_HIGH)
            return &occ_smem;
        return &occ_slots;
    }
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (tool_is(tool, table[i].tool))
            return &table[i];
    return NULL;
}

/* Index of the value `steps` places above (dir > 0) or below `cur` by value; -1 if none. */
static int step_by_value(const kopt_param_spec *p, int cur, int dir, int steps)
{
    int64_t bound = p->values[cur];
    int at = cur;

    for (int s = 0; s < steps; s++) {
        int next = -1;
        for (int i = 0; i < p->nvalues; i++) {
            int64_t v = p->values[i];
            if ((dir > 0 ? v > bound : v < bound) &&
                (next < 0 || (dir > 0 ? v < p->values[next] : v > p->values[next])))
                next = i;
        }
        if (next < 0)
            return -1;
        at = next;
        bound = p->values[next];
    }
    return at;
}

/* Moves from the best point's findings; how many were proposed. */
static int guided_moves(profile_guided *g, uint64_t *points, int max)
{
    const kopt_tune_space *s = g->space;
    const kopt_tune_outcome *o = &g->best_outcome;
    int base[KOPT_TUNE_MAX_PARAMS], idx[KOPT_TUNE_MAX_PARAMS], n = 0;
    int want = g->batch < max ? g->batch : max;

    kopt_tune_space_decode(s, g->best, base);
    for (int f = 0; f < o->nfindings && f < KOPT_TUNE_MAX_FINDINGS && n < want; f++) {
        const tool_moves *tm = moves_for(o, o->findings[f].tool);
        for (int m = 0; tm && m < tm->n && n < want; m++)
            for (int steps = 1; steps <= 2 && n < want; steps++)
                for (int j = 0; j < s->nparams && n < want; j++) {
                    int to;
                    if (tm->moves[m].role == ROLE_PAD ? !g->pads[j]
                                                      : g->roles[j] != tm->moves[m].role)
                        continue;
                    to = step_by_value(&s->params[j], base[j], tm->moves[m].dir, steps);
                    if (to < 0)
                        continue;
                    memcpy(idx, base, sizeof(int) * (size_t)s->nparams);
                    idx[j] = to;
                    kopt_tune__propose(s, &g->seen, kopt_tune_space_encode(s, idx), points,
                                       &n, want);
                }
    }
    g->guided += n;
    return n;
}

static int pg_ask(void *state, const kopt_tune_history *h, uint64_t *points, int max)
{
    profile_guided *g = state;
    uint64_t nb[2 * KOPT_TUNE_MAX_PARAMS], p;
    int n = 0, k;

    (void)h;
    if (g->done || max <= 0)
        return 0;
    if ((int)g->seen.n < g->init || !g->has_best) {
        int want = (int)g->seen.n < g->init ? g->init - (int)g->seen.n : 1;
        while (n < want && n < max && kopt_tune__fresh(g->space, &g->rng, &g->seen, &p) == 0)
            kopt_tune__propose(g->space, &g->seen, p, points, &n, max);
        g->done = n == 0;
        return n;
    }
    if ((n = guided_moves(g, points, max)) > 0)
        return n;
    /* Fallback 1: greedy best-improvement over the best point's neighbours. */
    k = kopt_tune_space_neighbors(g->space, g->best, nb, 2 * KOPT_TUNE_MAX_PARAMS);
    for (int i = 0; i < k; i++)
        kopt_tune__propose(g->space, &g->seen, nb[i], points, &n, max);
    if (n > 0) {
        g->fallback += n;
        return n;
    }
    /* Fallback 2: a perturbation of the best point, else a random point. */
    for (int tries = 0; tries < 32 && n == 0 && g->space->nparams > 0; tries++) {
        int idx[KOPT_TUNE_MAX_PARAMS];
        kopt_tune_space_decode(g->space, g->best, idx);
        for (int c = 0; c < g->perturb; c++) {
            int j = (int)kopt_rng_below(&g->rng, (uint64_t)g->space->nparams);
            idx[j] = (int)kopt_rng_below(&g->rng, (uint64_t)g->space->params[j].nvalues);
        }
        kopt_tune__propose(g->space, &g->seen, kopt_tune_space_encode(g->space, idx), points,
                           &n, max);
    }
    if (n == 0 && kopt_tune__fresh(g->space, &g->rng, &g->seen, &p) == 0)
        kopt_tune__propose(g->space, &g->seen, p, points, &n, max);
    g->fallback += n;
    g->done = n == 0;
    return n;
}

static void pg_tell(void *state, uint64_t point, const kopt_tune_outcome *o)
{
    profile_guided *g = state;
    double v = kopt_tune_outcome_objective(o, g->objective);

    kopt_tune__map_put(&g->seen, point, v);
    if (isfinite(v) && v < g->best_value) {
        g->has_best = 1;
        g->best = point;
        g->best_value = v;
        g->best_outcome = *o;
    }
}

const kopt_tune_strategy kopt_tune_strategy_profile_guided = {
    .name = "profile_guided",
    .summary = "moves the param the best point's micro-tool findings point at; greedy otherwise",
    .wants_findings = 1,
    .create = pg_create,
    .ask = pg_ask,
    .tell = pg_tell,
    .destroy = pg_destroy,
};
