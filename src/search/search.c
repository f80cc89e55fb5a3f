/* The search's entry: kopt_search_open / kopt_search_close, and kopt_search_go, the loop of
 * kopt optimize: evaluate what is pending (backup.c, a batch of them at once: width.c),
 * repair what failed (repair.c), else select nodes (select.c) and expand them with the
 * planner and the coder, or the templatizer (expand.c). A search of width W selects up to W
 * expansions a step, made to differ by virtual visits, and evaluates up to W pending nodes
 * at once. With --overlap the next step is asked while a step is evaluated (one step
 * behind). Every decision follows from the tree as stored, so a killed search goes on where
 * it stopped. The top of the folder's call order (search_int.h); the file runs from the
 * open and close to the loop and its stop conditions. */
#include "search_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- open / close ------------------------------------------------------------------------ */

/* The --start kernel as the root's first child, pending (kind "start"); stored with the root
 * by kopt_search_open. */
static kopt_status add_start(kopt_search *s, kopt_ctx *ctx)
{
    kopt_search_node *n = kopt__search_add(s);
    const char *name = s->o.start_name ? strrchr(s->o.start_name, '/') : NULL;

    if (!n || !(n->source = strdup(s->o.start_source)))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "search start node");
    n->parent = 0;
    snprintf(n->kind, sizeof(n->kind), "start");
    snprintf(n->plan.text, sizeof(n->plan.text), "the start kernel %s",
             name ? name + 1 : s->o.start_name ? s->o.start_name : "(--start)");
    snprintf(n->plan.kind, sizeof(n->plan.kind), "start");
    kopt_sha256_hex(n->source, strlen(n->source), n->hash);
    return KOPT_OK;
}

kopt_status kopt_search_open(kopt_search **out, kopt_ctx *ctx, const kopt_problem *prob,
                             kopt_store *store, int64_t tree_id, const kopt_search_opts *o)
{
    kopt_search *s = calloc(1, sizeof(*s));
    kopt_status rc = KOPT_OK;
    int fresh;

    *out = NULL;
    if (!s)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "search");
    s->prob = prob;
    s->store = store;
    s->tree_id = tree_id;
    s->o = *o;
    s->best = -1;
    if (s->o.proposals <= 0)
        s->o.proposals = s->o.policy == KOPT_SEARCH_GREEDY ? 1 : 2;
    if (o->prompts_dir)
        s->prompts_dir = strdup(o->prompts_dir);
    else if ((rc = kopt_agent_prompts_dir(ctx, &s->prompts_dir)) != KOPT_OK)
        goto fail;
    for (int r = 0; r < KOPT_AGENT_ROLE_COUNT; r++)
        if ((rc = kopt_agent_prompt_load(ctx, s->prompts_dir, (kopt_agent_role)r,
                                         &s->templates[r])) != KOPT_OK)
            goto fail;
    if ((rc = kopt__search_load_tree(s, ctx)) != KOPT_OK)
        goto fail;
    fresh = s->n == 0;
    if (s->n == 0) {
        kopt_search_node *root = kopt__search_add(s);
        if (!root || !(root->source = strdup(prob->ref_source ? prob->ref_source : ""))) {
            rc = kopt_seterr(ctx, KOPT_E_NOMEM, "search root");
            goto fail;
        }
        snprintf(root->kind, sizeof(root->kind), "root");
        snprintf(root->plan.text, sizeof(root->plan.text), "the reference");
        kopt_sha256_hex(root->source, strlen(root->source), root->hash);
        if (o->start_source && (rc = add_start(s, ctx)) != KOPT_OK)
            goto fail;
    }
    if ((rc = kopt__search_tool_open(s, ctx, fresh)) != KOPT_OK)
        goto fail;
    if (fresh) {   /* the new tree stored whole (the root with the tool decision, the start) */
        if ((rc = kopt__search_group_begin(s, ctx)) != KOPT_OK)
            goto fail;
        for (int i = 0; i < s->n && rc == KOPT_OK; i++)
            rc = kopt__search_save(s, ctx, i);
        if ((rc = kopt__search_group_end(s, ctx, rc)) != KOPT_OK)
            goto fail;
    }
    kopt__search_derive(s);
    *out = s;
    return KOPT_OK;
fail:
    kopt_search_close(s);
    return rc;
}

void kopt_search_close(kopt_search *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        kopt__search_node_clear(&s->nodes[i]);
    free(s->nodes);
    for (int r = 0; r < KOPT_AGENT_ROLE_COUNT; r++)
        free(s->templates[r]);
    free(s->prompts_dir);
    free(s->launch);
    free(s->sizes);
    free(s->abi);
    kopt__search_tool_close(&s->tool);
    free(s->view_problem);
    free(s);
}


/* ---- the loop ---------------------------------------------------------------------------- */

static int expansions(const kopt_search *s)
{
    int e = 0;
    for (int i = 0; i < s->n; i++)
        e = s->nodes[i].expansion > e ? s->nodes[i].expansion : e;
    return e;
}

static int min_int(int a, int b)
{
    return a < b ? a : b;
}

static int width_of(const kopt_search *s)
{
    int w = s->o.width < 1 ? 1 : s->o.width;
    return w > KOPT_SEARCH_MAX_WIDTH ? KOPT_SEARCH_MAX_WIDTH : w;
}

static void progress(kopt_search *s, kopt_llm_client *llm, const char *what)
{
    char line[512];
    const kopt_search_node *b = kopt_search_best(s);
    kopt_llm_budget_state bs;

    if (!s->o.progress)
        return;
    memset(&bs, 0, sizeof(bs));
    if (llm)
        kopt_llm_budget(llm, &bs);
    snprintf(line, sizeof(line), "iter %d/%d | %s | best %.2fx (n%d) | %lld llm calls, %lld "
             "tokens, $%.4f | %.1f s", expansions(s), s->o.iterations, what,
             b ? kopt__search_speedup(s, b) : 0.0, b ? b->id : 0, (long long)bs.calls,
             (long long)bs.tokens_total, bs.cost, (kopt_now_ms() - s->t_start) / 1000.0);
    s->o.progress(s->o.progress_user, line);
}

static int stopped(kopt_search *s, kopt_llm_client *llm)
{
    kopt_llm_budget_state bs;

    if (s->o.stop && *s->o.stop) {
        snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "stopped");
        return 1;
    }
    if (s->o.max_wall_s > 0 && kopt_now_ms() - s->t_start > s->o.max_wall_s * 1000.0) {
        snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "wall time %.0f s reached",
                 s->o.max_wall_s);
        return 1;
    }
    if (llm) {
        kopt_llm_budget(llm, &bs);
        if (bs.exhausted) {
            snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "%s", bs.why);
            return 2;   /* nothing more may be asked; pending nodes may still be evaluated */
        }
    }
    return 0;
}

/* 1 when the manual folder holds a prompt without its reply (a step still waiting). */
static int manual_outstanding(kopt_ctx *ctx, const char *dir)
{
    char **names = NULL;
    int n = 0;

    if (dir)   /* fails only out of memory, keeping the names it had */
        (void)kopt_optimize_waiting(ctx, dir, &names, &n);
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return n > 0;
}

static int max_step(const kopt_search *s)
{
    int m = 0;
    for (int i = 0; i < s->n; i++)
        m = s->nodes[i].step > m ? s->nodes[i].step : m;
    return m;
}

enum { ASK_STOP = -1, ASK_NONE = 0, ASK_ASKED = 1 };

/* One step of asking (its nodes are of a new step): the repairs of what failed (then, unless
 * in rounds, nothing more), else the templatizer if due and up to the width in expansions.
 * ASK_ASKED; ASK_NONE: nothing to ask, the loop ends (stop_reason set; `quiet`, while a
 * step is evaluated: not set, the loop asks again once it is); ASK_STOP: the loop ends
 * (waiting for manual replies; stop_reason set). */
static int ask_step(kopt_search *s, kopt_ctx *ctx, kopt_llm_client *llm, int *steps,
                    int *proposed, int quiet)
{
    int r, e, np, wait, picks[KOPT_SEARCH_MAX_WIDTH];
    char what[160];

    s->step = max_step(s) + 1;
    if ((r = kopt__search_repair(s, ctx, llm)) != 0) {
        if (r < 0)
            return ASK_STOP;
        (*steps)++;
        progress(s, llm, "repairs asked");
        if (!s->o.propose_only && !s->o.rounds)
            return ASK_ASKED;
    }
    if ((e = expansions(s)) >= s->o.iterations) {
        if (!quiet)
            snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "%d iterations done",
                     s->o.iterations);
        return ASK_NONE;
    }
    e++;
    /* a step: the templatizer first if it is due, then up to the width in expansions,
     * within the iterations left (one, and either, for the plain search) */
    if ((r = kopt__search_templatize(s, ctx, llm, e)) < 0)
        return ASK_STOP;
    np = kopt__search_select_many(s, picks, min_int(s->st.width - r,
                                                    s->o.iterations - (e - 1) - r));
    if (np == 0 && r == 0) {
        if (!quiet)
            snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "no node left to "
                     "expand (all closed or failed)");
        return ASK_NONE;
    }
    wait = np > 0 && kopt__search_expand(s, ctx, llm, picks, np, e + r) < 0;
    /* the templatizer's node, when the expansions did not store it (none, or waiting for
     * manual replies: kept as it was asked) */
    if (kopt__search_store_held(s, ctx) != KOPT_OK)
        kopt_log(ctx, KOPT_LOG_WARN, "a templatizer's node not stored: %s", kopt_errmsg(ctx));
    if (wait)
        return ASK_STOP;
    (*steps)++;
    *proposed = 1;
    if (r + np > 1)
        snprintf(what, sizeof(what), "expansions %d-%d", e, e + r + np - 1);
    else
        snprintf(what, sizeof(what), "expansion %d", e);
    progress(s, llm, what);
    return ASK_ASKED;
}

/* --overlap: the next step asked while a step is evaluated (run by the batch meanwhile). */
typedef struct overlap_ask {
    kopt_search *s;
    kopt_ctx *ctx;
    kopt_llm_client *llm;
    kopt_search_evaluator *ev;
    int *steps, *proposed;
    int result;
} overlap_ask;

static void ask_meanwhile(void *user)
{
    overlap_ask *a = user;

    a->result = ask_step(a->s, a->ctx, a->llm, a->steps, a->proposed, 1);
    kopt__search_prepare(a->s, a->ctx, a->ev);   /* its compiles start now too */
}

/* 1 when the next step may be asked while a batch is evaluated (--overlap): every pending
 * node is of the batch's step and is evaluated with it (kopt__search_batch), and the
 * loop would ask next (the model may be asked, not in files, the root is correct,
 * expansions are left). */
static int may_overlap(const kopt_search *s, int can_ask, int one_step)
{
    return s->o.overlap && can_ask && one_step && !s->o.propose_only && !s->o.manual_dir &&
           s->nodes[0].state == KOPT_SEARCH_DONE && s->nodes[0].ok &&
           expansions(s) < s->o.iterations;
}

kopt_status kopt_search_go(kopt_search *s, kopt_ctx *ctx, kopt_llm_client *llm,
                           kopt_search_evaluator *ev)
{
    int can_ask = llm || s->o.manual_dir, proposed = 0, steps = 0;
    kopt_status rc = KOPT_OK;
    char what[160];

    memset(&s->st, 0, sizeof(s->st));
    s->t_start = kopt_now_ms();
    s->st.width = width_of(s);
    kopt__search_derive(s);
    for (;;) {
        int pend = -1, st = stopped(s, llm), r;
        if (st == 1)
            break;
        if (st == 2)
            can_ask = 0;
        for (int i = 0; i < s->n && pend < 0; i++)
            if (s->nodes[i].state == KOPT_SEARCH_PENDING)
                pend = i;
        if (ev && pend >= 0) {
            int batch[KOPT_SEARCH_MAX_WIDTH], nb, one_step = 0, ask;
            overlap_ask oa = {s, ctx, llm, ev, &steps, &proposed, ASK_NONE};
            kopt__search_prepare(s, ctx, ev);
            nb = kopt__search_batch(s, pend, batch, &one_step);
            ask = may_overlap(s, can_ask && st == 0, one_step);
            if ((rc = nb > 1 || ask ? kopt__search_evaluate_batch(s, ctx, ev, batch, nb,
                                                                  ask ? ask_meanwhile : NULL,
                                                                  &oa)
                                    : kopt__search_evaluate(s, ctx, ev, pend)) != KOPT_OK)
                break;
            if (oa.result == ASK_STOP)
                break;
            for (int b = 0; b < nb; b++) {   /* in node order, as they were backed up */
                const kopt_search_node *n = &s->nodes[batch[b]];
                if (n->state != KOPT_SEARCH_DONE)
                    continue;
                snprintf(what, sizeof(what), "n%d %s", batch[b], n->ok ? "OK" :
                         (n->failure[0] ? n->failure : kopt_verdict_name(n->verdict)));
                if (n->where.known && s->st.width > 1)
                    snprintf(what + strlen(what), sizeof(what) - strlen(what), " (gpu %d)",
                             n->where.device);
                progress(s, llm, what);
            }
            if (!s->nodes[0].ok && pend == 0) {
                snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "the reference did not "
                         "evaluate OK (%s)", kopt_verdict_name(s->nodes[0].verdict));
                break;
            }
            continue;
        }
        if (!can_ask) {
            if (!s->st.stop_reason[0])
                snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), pend >= 0 ?
                         "candidates left pending" : "nothing left to evaluate");
            break;
        }
        if (proposed && s->o.propose_only) {
            snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "proposed: evaluate with "
                     "--evaluate");
            break;
        }
        /* nothing is planned from a root that was never evaluated (a new tree's --propose):
         * a planner would see no time, no device and no profile */
        if (s->nodes[0].state != KOPT_SEARCH_DONE) {
            snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "the root (the reference) "
                     "has not been evaluated: nothing proposed; evaluate it first");
            s->st.root_unevaluated = 1;
            break;
        }
        if (!s->nodes[0].ok) {
            snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "the reference did not "
                     "evaluate OK (%s)", s->nodes[0].failure[0] ? s->nodes[0].failure :
                     kopt_verdict_name(s->nodes[0].verdict));
            break;
        }
        /* --propose again before the last proposals were evaluated: nothing new (another
         * step would select without their outcomes), unless a step's manual prompts are
         * still waiting for replies (that step is asked again to read them) */
        if (s->o.propose_only && !proposed && steps == 0 && pend >= 0 &&
            !manual_outstanding(ctx, s->o.manual_dir)) {
            int npend = 0;
            for (int i = 0; i < s->n; i++)
                npend += s->nodes[i].state == KOPT_SEARCH_PENDING;
            snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "%d candidate(s) pending "
                     "evaluation: nothing more proposed; evaluate them first (--evaluate)",
                     npend);
            break;
        }
        if ((r = ask_step(s, ctx, llm, &steps, &proposed, 0)) != ASK_ASKED)
            break;
    }
    if (s->st.waiting)
        snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "waiting for %d manual "
                 "replies in %s", s->st.waiting, s->o.manual_dir);
    s->st.wall_ms = kopt_now_ms() - s->t_start;
    s->st.expansions = expansions(s);
    for (int i = 0; i < s->n; i++)
        s->st.pending += s->nodes[i].state == KOPT_SEARCH_PENDING;
    steps = steps > s->st.evaluated ? steps : s->st.evaluated;
    /* kopt's own time: what the LLM, the evaluations and the code searches did not take */
    s->st.overhead_ms_per_iter = steps ? (s->st.wall_ms - s->st.llm_ms - s->st.eval_ms -
                                          s->st.search_ms) / steps : 0.0;
    return rc;
}
