/*
 * The MCP tools that let an outside agent be kopt optimize's model: optimize_start makes a
 * tree, optimize_step proposes (prompts written as manual mode writes them) or evaluates a
 * round, optimize_prompts gives the prompts still waiting, optimize_reply takes the agent's
 * reply to one, optimize_tree shows the tree. Each step is one kopt_optimize_* invocation
 * (src/search/optimize.c), exactly what `kopt optimize --resume TREE --llm manual
 * [--propose | --evaluate]` does; `gpus` spreads a tree over GPUs as --gpus does. Also
 * cute_search (kopt cute search).
 */
#include "mcp_int.h"

#include "kopt/cute.h"
#include "kopt/scale.h"
#include "kopt/search.h"
#include "kopt/serve.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static kopt_status need_store(kopt__mcp_call *c, kopt_ctx *ctx)
{
    return kopt__mcp_opts(c)->db_path ? KOPT_OK
         : kopt_seterr(ctx, KOPT_E_INVALID, "this server has no store (kopt mcp --no-store); "
                       "an optimize tree lives in the store");
}

/* Each search progress line becomes a progress notification (no total: steps vary). */
typedef struct step_progress {
    kopt__mcp_call *c;
    int n;
} step_progress;

static void on_step(void *user, const char *line)
{
    step_progress *p = user;
    kopt__mcp_progress(p->c, ++p->n, 0, line);
}

/* The tree's stored JSON (nodes, best, path, options, waiting prompts). */
static kopt_status tree_json(kopt__mcp_call *c, kopt_ctx *ctx, int64_t tree, int full,
                             json_t **out)
{
    char *text = NULL;
    kopt_status rc = kopt_search_stored_json(ctx, kopt__mcp_opts(c)->db_path, tree, full,
                                             &text);
    if (rc == KOPT_E_NOT_FOUND)
        return kopt_seterr(ctx, rc, "arguments.tree: no optimize tree %lld in the store "
                           "(optimize_start makes one)", (long long)tree);
    if (rc)
        return rc;
    *out = kopt__mcp_parsed(text);
    return KOPT_OK;
}

/* A one-line summary of a tree's JSON. */
static void tree_summary(kopt_buf *t, json_t *doc)
{
    json_t *best = json_object_get(doc, "best"), *st = json_object_get(doc, "stats");
    size_t nw = json_array_size(json_object_get(doc, "waiting"));
    json_int_t pending = 0;
    size_t i;
    json_t *n;

    json_array_foreach(json_object_get(doc, "nodes"), i, n)
        pending += strcmp(json_string_value(json_object_get(n, "state")) ?
                          json_string_value(json_object_get(n, "state")) : "", "pending") == 0;
    kopt_buf_printf(t, "tree %lld (%s): %zu node(s), %lld pending",
                    (long long)json_integer_value(json_object_get(doc, "tree_id")),
                    json_string_value(json_object_get(doc, "problem")),
                    json_array_size(json_object_get(doc, "nodes")), (long long)pending);
    if (best && json_number_value(json_object_get(best, "speedup")) > 0)
        kopt_buf_printf(t, ", best n%lld at %.2fx the reference",
                        (long long)json_integer_value(json_object_get(best, "id")),
                        json_number_value(json_object_get(best, "speedup")));
    if (json_string_value(json_object_get(st, "stop_reason")) &&
        json_string_value(json_object_get(st, "stop_reason"))[0])
        kopt_buf_printf(t, "; %s", json_string_value(json_object_get(st, "stop_reason")));
    if (nw)
        kopt_buf_printf(t, "; %zu prompt(s) waiting for replies (optimize_prompts, then "
                        "optimize_reply)", nw);
    else if (pending)
        kopt_buf_printf(t, "; next: optimize_step with action evaluate");
}

/* arguments.gpus ("all" or "0,2,5", as kopt optimize --gpus) into oo (the GPUs in gpus[]):
 * a new tree is as wide as its GPUs, a step evaluates on them. `count`: the GPUs to check
 * the indices against (< 0: not checked: the fake evaluator's stand-ins, or a propose). */
static kopt_status gpus_arg(kopt__mcp_call *c, kopt_ctx *ctx, int count, int *gpus,
                            kopt_optimize_opts *oo)
{
    int n = 0;
    kopt_status rc = kopt__mcp_gpus_arg(c, ctx, count, gpus, KOPT_SCALE_MAX_SLOTS, &n);

    if (rc != KOPT_OK || n == 0)
        return rc;
    if (n > KOPT_SEARCH_MAX_WIDTH)
        return kopt_seterr(ctx, KOPT_E_INVALID, "arguments.gpus: '%s': at most %d GPUs",
                           kopt__mcp_arg_str(c, "gpus"), KOPT_SEARCH_MAX_WIDTH);
    oo->gpus = gpus;
    oo->ngpus = n;
    oo->live.eval.device = gpus[0];    /* the run's record; single evaluations */
    return KOPT_OK;
}

/* arguments.server, as kopt optimize --server: true (the default socket) or a socket path
 * must answer; false evaluates here; not given, $KOPT_SERVER when a server answers there.
 * Refused with gpus (a kopt serve evaluates on its one GPU). */
static kopt_status server_arg(kopt__mcp_call *c, kopt_ctx *ctx, kopt_optimize_opts *oo)
{
    json_t *v = json_object_get(c->args, "server");
    const char *path = json_string_value(v);
    kopt_status rc;

    if (v && !json_is_boolean(v) && !(path && path[0]))
        return kopt_seterr(ctx, KOPT_E_INVALID, "arguments.server: want true, false or a "
                           "kopt serve socket's path");
    if (json_is_false(v))
        return KOPT_OK;
    if (oo->ngpus > 0) {
        if (!v)                        /* $KOPT_SERVER does not apply to a spread tree */
            return KOPT_OK;
        return kopt_seterr(ctx, KOPT_E_INVALID, "arguments.server with arguments.gpus: a "
                           "kopt serve evaluates on its one GPU; give one or the other");
    }
    rc = kopt_serve_socket_for(ctx, v != NULL, path, &oo->live.eval.server);
    return rc == KOPT_OK ? KOPT_OK : kopt_adderr(ctx, rc, "arguments.server");
}

/* ---- optimize_start ------------------------------------------------------------------------- */

kopt_status kopt__mcp_t_optimize_start(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out,
                                       kopt_buf *t)
{
    const kopt_mcp_opts *mo = kopt__mcp_opts(c);
    kopt_optimize_opts oo = KOPT_OPTIMIZE_OPTS_INIT;
    kopt_optimize *op = NULL;
    const char *search = kopt__mcp_arg_str(c, "search");
    const char *objective = kopt__mcp_arg_str(c, "objective");
    char *argv[3] = {"mcp", "optimize_start", (char *)kopt__mcp_arg_str(c, "problem")};
    json_t *fr = json_object_get(c->args, "fake_ref_ms");
    int gpus[KOPT_SCALE_MAX_SLOTS];
    kopt_status rc;

    if ((rc = need_store(c, ctx)) != KOPT_OK)
        return rc;
    if (search && kopt_search_policy_parse(search, &oo.search.policy))
        return kopt_seterr(ctx, KOPT_E_INVALID, "arguments.search: '%s': want mcts, greedy, "
                           "beam or best-of-n", search);
    if (objective && kopt_run_tune_objective_parse(objective, &oo.search.objective) < 0)
        return kopt_seterr(ctx, KOPT_E_INVALID, "arguments.objective: '%s': want time, energy "
                           "or time-energy", objective);
    oo.search.iterations = (int)kopt__mcp_arg_int(c, "iterations", oo.search.iterations);
    oo.search.proposals = (int)kopt__mcp_arg_int(c, "proposals", 0);
    oo.search.debug_attempts =
        (int)kopt__mcp_arg_int(c, "debug_attempts", oo.search.debug_attempts);
    oo.search.no_tune = kopt__mcp_arg_bool(c, "no_tune", 0);
    oo.search.tune_budget = (int)kopt__mcp_arg_int(c, "tune_budget", oo.search.tune_budget);
    oo.search.no_memory = kopt__mcp_arg_bool(c, "no_memory", 0);
    if (oo.search.iterations < 0 || oo.search.proposals < 0 || oo.search.proposals > 16 ||
        oo.search.debug_attempts < 0 || oo.search.tune_budget < 1)
        return kopt_seterr(ctx, KOPT_E_INVALID, "arguments: iterations, debug_attempts >= 0; "
                           "proposals 0 to 16; tune_budget >= 1");
    oo.db_path = mo->db_path;
    oo.argc = 3;
    oo.argv = argv;
    oo.problem = kopt__mcp_arg_str(c, "problem");
    oo.evaluator = kopt__mcp_arg_str(c, "evaluator") ? kopt__mcp_arg_str(c, "evaluator") : "live";
    oo.fake_ref_ms = json_is_number(fr) ? json_number_value(fr) : 0;
    oo.workdir = kopt__mcp_arg_str(c, "workdir");
    oo.start = kopt__mcp_arg_str(c, "start");
    oo.live.eval.device = (int)kopt__mcp_arg_int(c, "device", 0);
    oo.live.eval.cache_dir = mo->cache_dir;
    oo.create_only = 1;
    if ((rc = gpus_arg(c, ctx, strcmp(oo.evaluator, "fake") == 0 ? -1 : kopt_scale_gpus_here(),
                       gpus, &oo)) != KOPT_OK)
        return rc;
    if ((rc = kopt_optimize_open(&op, ctx, &oo)) != KOPT_OK ||
        (rc = kopt_optimize_go(op, ctx, NULL)) != KOPT_OK)
        goto done;
    *out = json_pack("{s:I, s:I, s:s, s:s, s:s}", "tree_id",
                     (json_int_t)kopt_optimize_tree_id(op), "run_id",
                     (json_int_t)kopt_optimize_run_id(op), "problem",
                     kopt_optimize_problem(op)->name, "workdir", kopt_optimize_workdir(op),
                     "evaluator", kopt_optimize_evaluator(op));
    json_object_set_new(*out, "options", kopt__mcp_parsed(kopt_search_opts_json(&oo.search)));
    {   /* the width the tree was given (its GPUs), not the caller's default */
        json_t *doc = NULL;
        if (tree_json(c, ctx, kopt_optimize_tree_id(op), 0, &doc) == KOPT_OK &&
            json_is_integer(json_object_get(doc, "width")))
            json_object_set(json_object_get(*out, "options"), "width",
                            json_object_get(doc, "width"));
        json_decref(doc);
    }
    kopt_buf_printf(t, "tree %lld started for %s (%s evaluator, %s, %d iterations); next: "
                    "optimize_step (action auto evaluates the reference, then writes the "
                    "first prompts)", (long long)kopt_optimize_tree_id(op),
                    kopt_optimize_problem(op)->name, kopt_optimize_evaluator(op),
                    kopt_search_policy_name(oo.search.policy), oo.search.iterations);
done:
    kopt_optimize_close(op);
    return rc;
}

/* ---- optimize_step ------------------------------------------------------------------------ */

kopt_status kopt__mcp_t_optimize_step(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out,
                                      kopt_buf *t)
{
    const kopt_mcp_opts *mo = kopt__mcp_opts(c);
    kopt_optimize_opts oo = KOPT_OPTIMIZE_OPTS_INIT;
    kopt_optimize *op = NULL;
    const char *action = kopt__mcp_arg_str(c, "action") ? kopt__mcp_arg_str(c, "action") : "auto";
    json_int_t tree = kopt__mcp_arg_int(c, "tree", 0);
    char tree_s[32];
    char *argv[4] = {"mcp", "optimize_step", tree_s, (char *)action};
    step_progress sp = {c, 0};
    kopt_search_stats st;
    json_t *doc = NULL;
    int code = 0, gpus[KOPT_SCALE_MAX_SLOTS], here, fake;
    const char *ev;
    kopt_status rc;

    if ((rc = need_store(c, ctx)) != KOPT_OK)
        return rc;
    if (strcmp(action, "propose") != 0 && strcmp(action, "evaluate") != 0 &&
        strcmp(action, "auto") != 0)
        return kopt_seterr(ctx, KOPT_E_INVALID, "arguments.action: '%s': want propose, "
                           "evaluate or auto", action);
    snprintf(tree_s, sizeof(tree_s), "%lld", (long long)tree);
    /* the tree must exist: a resume of a missing tree would say "run N has no tree" */
    if ((rc = tree_json(c, ctx, tree, 0, &doc)) != KOPT_OK)
        return rc;
    ev = json_string_value(json_object_get(json_object_get(doc, "options"), "evaluator"));
    fake = ev && strcmp(ev, "fake") == 0;
    json_decref(doc);
    doc = NULL;
    oo.db_path = mo->db_path;
    oo.argc = 4;
    oo.argv = argv;
    oo.resume = tree;
    if (json_is_integer(json_object_get(c->args, "iterations"))) {
        oo.search.iterations = (int)kopt__mcp_arg_int(c, "iterations", 0);
        oo.keep_iterations = 1;
    }
    oo.propose_only = strcmp(action, "propose") == 0;
    oo.evaluate_only = strcmp(action, "evaluate") == 0;
    oo.manual = !oo.evaluate_only;
    oo.live.eval.device = (int)kopt__mcp_arg_int(c, "device", 0);
    oo.live.eval.cache_dir = mo->cache_dir;
    /* checked against this machine's GPUs when it has any, as optimize_start: a fake
     * tree's stand-ins take any index, GPUs here or not (a live tree without a GPU then
     * says there is no GPU) */
    here = oo.propose_only || fake ? -1 : kopt_scale_gpus_here();
    if ((rc = gpus_arg(c, ctx, here > 0 ? here : -1, gpus, &oo)) != KOPT_OK)
        return rc;
    if (!oo.propose_only && (rc = server_arg(c, ctx, &oo)) != KOPT_OK)
        return rc;
    oo.live.no_profile = kopt__mcp_arg_bool(c, "no_profile", 0);
    oo.search.progress = on_step;
    oo.search.progress_user = &sp;
    oo.search.stop = &c->cancelled;
    kopt__mcp_progress(c, 0, 0, oo.evaluate_only ? "evaluating what is pending" :
                       oo.propose_only ? "proposing a round" : "evaluating, then proposing");
    if ((rc = kopt_optimize_open(&op, ctx, &oo)) != KOPT_OK ||
        (rc = kopt_optimize_go(op, ctx, &code)) != KOPT_OK)
        goto done;
    kopt_search_get_stats(kopt_optimize_search(op), &st);
    if (st.root_unevaluated) {   /* kopt optimize --propose's exit 19 */
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "tree %lld: its root, the reference, has not "
                         "been evaluated: nothing was proposed (a planner would have no time, "
                         "device or profile to plan from); evaluate it first: optimize_step "
                         "with action \"evaluate\" or \"auto\"", (long long)tree);
        goto done;
    }
    if ((rc = tree_json(c, ctx, tree, 0, &doc)) != KOPT_OK)
        goto done;
    json_object_set_new(doc, "run_id", json_integer((json_int_t)kopt_optimize_run_id(op)));
    json_object_set_new(doc, "action", json_string(action));
    json_object_set_new(doc, "evaluator", json_string(kopt_optimize_evaluator(op)));
    json_object_set_new(doc, "workdir", json_string(kopt_optimize_workdir(op)));
    /* this step's own counts (the stored view has none) */
    json_object_set_new(json_object_get(doc, "stats"), "evaluated", json_integer(st.evaluated));
    json_object_set_new(json_object_get(doc, "stats"), "stop_reason",
                        json_string(st.stop_reason));
    json_object_set_new(json_object_get(doc, "stats"), "wall_ms", json_real(st.wall_ms));
    json_object_set_new(doc, "reference_failed", json_boolean(code != 0));
    kopt_buf_printf(t, "%s: %d evaluated, ", action, st.evaluated);
    tree_summary(t, doc);
    *out = doc;
    doc = NULL;
done:
    json_decref(doc);
    kopt_optimize_close(op);
    return rc;
}

/* ---- prompts and replies ------------------------------------------------------------------ */

/* The run's folder of a tree (its stored options); the tree's JSON in *doc. */
static kopt_status tree_workdir(kopt__mcp_call *c, kopt_ctx *ctx, int64_t tree, json_t **doc,
                                const char **wd)
{
    kopt_status rc;

    *wd = NULL;
    if ((rc = need_store(c, ctx)) != KOPT_OK || (rc = tree_json(c, ctx, tree, 0, doc)) != KOPT_OK)
        return rc;
    *wd = json_string_value(json_object_get(json_object_get(*doc, "options"), "workdir"));
    if (!*wd)
        return kopt_seterr(ctx, KOPT_E_INVALID, "optimize tree %lld has no stored run folder "
                           "(started by an older kopt: resume it once with kopt optimize "
                           "--resume %lld --llm manual)", (long long)tree, (long long)tree);
    return KOPT_OK;
}

/* A prompt's name is made by kopt: letters, digits, dashes and single dots inside
 * ("e1-p1-coder.turn2"), never a path. */
static int name_ok(const char *s)
{
    if (!s || !*s || *s == '.' || strlen(s) > 120 || strstr(s, ".."))
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.')
            return 0;
    return 1;
}

kopt_status kopt__mcp_t_optimize_prompts(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out,
                                         kopt_buf *t)
{
    json_int_t tree = kopt__mcp_arg_int(c, "tree", 0);
    int with_text = kopt__mcp_arg_bool(c, "text", 1), n = 0;
    json_t *doc = NULL, *arr = json_array();
    const char *wd;
    char **names = NULL;
    kopt_status rc;

    if ((rc = tree_workdir(c, ctx, tree, &doc, &wd)) != KOPT_OK ||
        (rc = kopt_optimize_waiting(ctx, wd, &names, &n)) != KOPT_OK)
        goto done;
    for (int i = 0; i < n; i++) {
        const char *dash = strrchr(names[i], '-'), *role = dash ? dash + 1 : "";
        json_t *p = json_pack("{s:s, s:s%}", "name", names[i], "role", role,
                              strcspn(role, "."));   /* e1-p1-coder.turn2: coder */
        if (with_text) {
            char path[4200], *text = NULL, *body;
            snprintf(path, sizeof(path), "%s/%s.prompt.md", wd, names[i]);
            if ((rc = kopt_file_read(ctx, path, &text, NULL)) != KOPT_OK) {
                json_decref(p);
                goto done;
            }
            /* the file's first line tells a person where to write the reply: not needed */
            body = text;
            if (strncmp(body, "<!--", 4) == 0 && strstr(body, "-->")) {
                body = strstr(body, "-->") + 3;
                while (*body == '\n')
                    body++;
            }
            json_object_set_new(p, "text", json_string(body));
            free(text);
        }
        json_array_append_new(arr, p);
    }
    kopt_buf_printf(t, "tree %lld: %d prompt(s) waiting", (long long)tree, n);
    for (int i = 0; i < n && i < 8; i++)
        kopt_buf_printf(t, "%s %s", i ? "," : ":", names[i]);
    if (n)
        kopt_buf_printf(t, ". Answer each with optimize_reply (name, text) as the role's reply "
                        "contract in the prompt says, then call optimize_step");
    else
        kopt_buf_printf(t, "; call optimize_step to go on");
    *out = json_pack("{s:I, s:s, s:O}", "tree_id", tree, "workdir", wd, "prompts", arr);
done:
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    json_decref(arr);
    json_decref(doc);
    return rc;
}

kopt_status kopt__mcp_t_optimize_reply(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out,
                                       kopt_buf *t)
{
    json_int_t tree = kopt__mcp_arg_int(c, "tree", 0);
    const char *name = kopt__mcp_arg_str(c, "name"), *text = kopt__mcp_arg_str(c, "text"), *wd;
    char prompt[4300], reply[4300], **names = NULL;
    json_t *doc = NULL;
    struct stat st;
    int n = 0;
    kopt_status rc;

    if ((rc = tree_workdir(c, ctx, tree, &doc, &wd)) != KOPT_OK)
        goto done;
    if (!name_ok(name)) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "arguments.name: '%s' is not a prompt name "
                         "(optimize_prompts lists them)", name ? name : "");
        goto done;
    }
    snprintf(prompt, sizeof(prompt), "%s/%s.prompt.md", wd, name);
    snprintf(reply, sizeof(reply), "%s/%s.reply.md", wd, name);
    if (stat(prompt, &st) != 0) {
        rc = kopt_seterr(ctx, KOPT_E_NOT_FOUND, "arguments.name: tree %lld has no prompt '%s' "
                         "(optimize_prompts lists the waiting ones)", (long long)tree, name);
        goto done;
    }
    if (stat(reply, &st) == 0) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "arguments.name: '%s' is already answered (a "
                         "reply is final once given)", name);
        goto done;
    }
    if (!text[0]) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "arguments.text: empty reply");
        goto done;
    }
    if ((rc = kopt_file_write(ctx, reply, text, strlen(text))) != KOPT_OK ||
        (rc = kopt_optimize_waiting(ctx, wd, &names, &n)) != KOPT_OK)
        goto done;
    *out = json_pack("{s:I, s:s, s:i}", "tree_id", tree, "name", name, "waiting", n);
    kopt_buf_printf(t, "reply to %s stored; %d prompt(s) still waiting%s", name, n,
                    n ? "" : "; next: optimize_step");
done:
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    json_decref(doc);
    return rc;
}

/* A node's plan text ("" none). */
static const char *plan_text(json_t *nj)
{
    const char *p = json_string_value(json_object_get(json_object_get(nj, "plan"), "text"));
    return p ? p : "";
}

/* ---- optimize_tree ------------------------------------------------------------------------ */

kopt_status kopt__mcp_t_optimize_tree(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out,
                                      kopt_buf *t)
{
    json_int_t tree = kopt__mcp_arg_int(c, "tree", 0), node = kopt__mcp_arg_int(c, "node", -1);
    json_t *doc = NULL, *nodes, *nj;
    kopt_status rc;

    if ((rc = need_store(c, ctx)) != KOPT_OK ||
        (rc = tree_json(c, ctx, tree, node >= 0, &doc)) != KOPT_OK)
        return rc;
    if (node < 0) {
        tree_summary(t, doc);
        *out = doc;
        return KOPT_OK;
    }
    nodes = json_object_get(doc, "nodes");
    if (!(nj = json_array_get(nodes, (size_t)node))) {
        json_decref(doc);
        return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "arguments.node: tree %lld has nodes 0 to "
                           "%zu", (long long)tree, json_array_size(nodes) - 1);
    }
    *out = json_pack("{s:I, s:O}", "tree_id", tree, "node", nj);
    {
        json_int_t parent = json_integer_value(json_object_get(nj, "parent"));
        json_t *pj = parent >= 0 ? json_array_get(nodes, (size_t)parent) : NULL;
        if (pj)
            json_object_set(*out, "parent_source", json_object_get(pj, "source"));
    }
    kopt_buf_printf(t, "tree %lld node n%lld (%s, %s): %.200s", (long long)tree,
                    (long long)node, json_string_value(json_object_get(nj, "kind")),
                    json_string_value(json_object_get(nj, "verdict")) ?
                    json_string_value(json_object_get(nj, "verdict")) : "pending",
                    plan_text(nj));
    json_decref(doc);
    return KOPT_OK;
}

/* ---- cute_search -------------------------------------------------------------------------- */

kopt_status kopt__mcp_t_cute_search(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out, kopt_buf *t)
{
    kopt_cute_index_opts io = KOPT_CUTE_INDEX_OPTS_INIT;
    kopt_cute_search_opts so = KOPT_CUTE_SEARCH_OPTS_INIT;
    const char *query = kopt__mcp_arg_str(c, "query");
    kopt_cute_index *ix = NULL;
    kopt_cute_hits *hits = NULL;
    kopt_cute_index_info info;
    kopt_cutlass cl;
    kopt_status rc;

    so.limit = (int)kopt__mcp_arg_int(c, "limit", 5);
    so.headers_only = kopt__mcp_arg_bool(c, "headers_only", 0);
    if (so.limit < 1 || so.limit > 50)
        return kopt_seterr(ctx, KOPT_E_INVALID, "arguments.limit: 1 to 50");
    io.cache_dir = kopt__mcp_opts(c)->cache_dir;
    if ((rc = kopt_cutlass_find(&cl, ctx, kopt__mcp_arg_str(c, "cutlass"))) != KOPT_OK)
        return kopt_adderr(ctx, rc, "cute_search: no CUTLASS/CuTe headers: install them with "
                           "`python3 -m pip install nvidia-cutlass`, or set CUTLASS_PATH to a "
                           "CUTLASS checkout, or pass arguments.cutlass");
    kopt__mcp_progress(c, 0, 1, "opening the CuTe index (built once per CUTLASS version)");
    if ((rc = kopt_cute_index_open(&ix, ctx, &cl, &io)) != KOPT_OK ||
        (rc = kopt_cute_search(&hits, ctx, ix, query, &so)) != KOPT_OK)
        goto done;
    kopt_cute_index_get_info(ix, &info);
    *out = kopt__mcp_parsed(kopt_cute_hits_json(hits, query));
    json_object_set_new(*out, "cutlass", json_pack("{s:s, s:s, s:s}", "version", cl.version,
                        "include_dir", cl.include_dir, "source", cl.source));
    kopt_buf_printf(t, "%d hit(s) for '%.80s' in CUTLASS %s", hits->n, query, cl.version);
    for (int i = 0; i < hits->n && i < 5; i++)
        kopt_buf_printf(t, "%s %s:%d-%d", i ? "," : ":", hits->hits[i].file,
                        hits->hits[i].line_start, hits->hits[i].line_end);
    kopt__mcp_progress(c, 1, 1, "searched");
done:
    kopt_cute_hits_free(hits);
    kopt_cute_index_free(ix);
    return rc;
}
