/* Evaluating one node and backing its outcome up: an outcome into its node
 * (kopt__search_apply), settled (done, stored), backed up (kopt__search_derive: rewards,
 * visits, the best node) with the node's search-memory row, all stored together; a source
 * the tree already holds takes its twin's outcome (kopt__search_reuse); the pending
 * candidates handed to the evaluator to compile at once (kopt__search_prepare). Called by
 * the loop (search.c), width.c and expand.c; calls tree.c. From kopt__search_reuse to
 * kopt__search_prepare. */
#include "search_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Node i takes the outcome of an evaluated node with the same source, if there is one:
 * nothing is evaluated twice. 1 when it did (no GPU is recorded for it: none evaluated
 * it). */
int kopt__search_reuse(kopt_search *s, int i)
{
    kopt_search_node *n = &s->nodes[i];

    for (int k = 0; k < s->n; k++) {
        const kopt_search_node *o = &s->nodes[k];
        if (k == i || o->state != KOPT_SEARCH_DONE || o->failure[0] ||
            strcmp(o->hash, n->hash) != 0)
            continue;
        n->state = KOPT_SEARCH_DONE;
        n->verdict = o->verdict;
        n->time_ms = o->time_ms;
        n->energy_mj = o->energy_mj;
        n->eval_id = o->eval_id;
        snprintf(n->cls, sizeof(n->cls), "%s", o->cls);
        snprintf(n->profile_note, sizeof(n->profile_note), "%s", o->profile_note);
        snprintf(n->tool, sizeof(n->tool), "%s", o->tool);
        snprintf(n->message, sizeof(n->message), "same source as n%d (not evaluated again)", k);
        free(n->log);
        n->log = o->log ? strdup(o->log) : NULL;
        free(n->findings);
        n->findings = o->findings ? strdup(o->findings) : NULL;
        free(n->facts);
        n->facts = o->facts ? strdup(o->facts) : NULL;
        if (o->tuned_from) {
            free(n->source);
            n->source = strdup(o->source);
            free(n->tuned_from);
            n->tuned_from = strdup(o->tuned_from);
        }
        return 1;
    }
    return 0;
}

void kopt__search_remember(kopt_search *s, kopt_ctx *ctx, int i)
{
    const kopt_search_node *n = &s->nodes[i], *base = n;
    kopt_store_opt_memory m;

    if (!s->store || strcmp(n->kind, "root") == 0)
        return;
    while (strcmp(base->kind, "repair") == 0 && base->parent >= 0)
        base = &s->nodes[base->parent];
    if (base->parent < 0 || strcmp(base->kind, "start") == 0)   /* given, not planned */
        return;
    memset(&m, 0, sizeof(m));
    snprintf(m.problem_hash, sizeof(m.problem_hash), "%s", s->prob->hash);
    snprintf(m.problem, sizeof(m.problem), "%s", s->prob->name);
    snprintf(m.cls, sizeof(m.cls), "%s", s->nodes[base->parent].cls);
    snprintf(m.plan_kind, sizeof(m.plan_kind), "%s", strcmp(base->kind, "tune") == 0 ? "tune" :
             base->plan.kind);
    snprintf(m.tool, sizeof(m.tool), "%s", base->plan.tool[0] ? base->plan.tool :
             base->advice_tool);
    snprintf(m.verdict, sizeof(m.verdict), "%s", n->failure[0] ? n->failure :
             kopt_verdict_name(n->verdict));
    m.predicted_gain = base->plan.gain;
    m.realized_gain = kopt__search_gain(s, i);
    m.tree_id = s->tree_id;
    m.node = i;
    kopt_store_opt_memory_put(s->store, ctx, &m);
}

/* Node i takes outcome `oc` (its owned parts are taken; the caller clears it), arrived:
 * still pending until kopt__search_settle. */
void kopt__search_apply(kopt_search *s, int i, kopt_search_outcome *oc)
{
    kopt_search_node *n = &s->nodes[i];

    n->arrived = 1;
    n->verdict = oc->verdict;
    n->time_ms = oc->verdict == KOPT_VERDICT_OK || oc->verdict == KOPT_VERDICT_SUSPECT ?
                 oc->time_ms : 0.0;
    n->energy_mj = oc->energy_mj;
    snprintf(n->message, sizeof(n->message), "%.500s", oc->message);
    snprintf(n->cls, sizeof(n->cls), "%s", oc->cls);
    snprintf(n->profile_note, sizeof(n->profile_note), "%s", oc->profile_note);
    snprintf(n->tool, sizeof(n->tool), "%s", oc->tool);
    n->eval_id = oc->eval_id;
    free(n->log);
    n->log = oc->log;
    oc->log = NULL;
    free(n->findings);
    n->findings = oc->advice;
    oc->advice = NULL;
    free(n->facts);
    n->facts = oc->facts;
    oc->facts = NULL;
    if (oc->tuned_source) {
        free(n->tuned_from);
        n->tuned_from = n->source;
        n->source = oc->tuned_source;
        oc->tuned_source = NULL;
    }
    n->where = oc->where;
    s->st.evaluated++;
}

kopt_status kopt__search_settle(kopt_search *s, kopt_ctx *ctx, int i)
{
    s->nodes[i].state = KOPT_SEARCH_DONE;
    s->nodes[i].arrived = 0;
    return kopt__search_save(s, ctx, i);
}

/* Node i's outcome settled and its search-memory row written in one store group: none of
 * the memory goes missing. */
static kopt_status settle_in_group(kopt_search *s, kopt_ctx *ctx, int i)
{
    kopt_status rc = kopt__search_group_begin(s, ctx);

    if (rc != KOPT_OK)
        return rc;
    if ((rc = kopt__search_settle(s, ctx, i)) == KOPT_OK) {
        kopt__search_derive(s);
        kopt__search_remember(s, ctx, i);
    }
    return kopt__search_group_end(s, ctx, rc);
}

kopt_status kopt__search_evaluate(kopt_search *s, kopt_ctx *ctx, kopt_search_evaluator *ev,
                                  int i)
{
    kopt_search_outcome oc;
    kopt_search_node *n = &s->nodes[i];
    char tag[32];
    double t0 = kopt_now_ms();
    kopt_status rc;

    memset(&oc, 0, sizeof(oc));
    snprintf(tag, sizeof(tag), "n%d", i);
    if (n->arrived)     /* evaluated in a batch a kill interrupted: backed up now */
        return settle_in_group(s, ctx, i);
    if (kopt__search_reuse(s, i)) {   /* a twin proposed in the same batch was evaluated first */
        kopt__search_derive(s);
        if ((rc = kopt__search_group_begin(s, ctx)) != KOPT_OK)
            return rc;
        if ((rc = kopt__search_save(s, ctx, i)) == KOPT_OK)
            kopt__search_remember(s, ctx, i);
        return kopt__search_group_end(s, ctx, rc);
    }
    if (strcmp(n->kind, "tune") == 0 && ev->tune)
        rc = ev->tune(ev->self, ctx, n->source, tag, s->o.tune_budget, &oc);
    else
        rc = ev->evaluate(ev->self, ctx, n->source, tag, &oc);
    s->st.eval_ms += kopt_now_ms() - t0;
    if (rc != KOPT_OK) {
        kopt_search_outcome_clear(&oc);
        return rc;
    }
    kopt__search_apply(s, i, &oc);
    kopt_search_outcome_clear(&oc);
    return settle_in_group(s, ctx, i);
}

/* Hand the pending candidates not yet prepared to the evaluator at once (the live one
 * compiles them in parallel while GPU evaluations stay one at a time). */
void kopt__search_prepare(kopt_search *s, kopt_ctx *ctx, kopt_search_evaluator *ev)
{
    const char *src[64], *tags[64];
    char names[64][16];
    int n = 0;
    double t0 = kopt_now_ms();

    if (!ev->prepare || s->prepared >= s->n || !s->nodes[0].ok)
        return;
    for (int i = s->prepared; i < s->n && n < 64; i++)
        if (s->nodes[i].state == KOPT_SEARCH_PENDING && strcmp(s->nodes[i].kind, "tune") != 0) {
            snprintf(names[n], sizeof(names[n]), "n%d", i);
            tags[n] = names[n];
            src[n++] = s->nodes[i].source;
        }
    s->prepared = s->n;
    if (n > 1 || (n == 1 && s->o.overlap))   /* one alone: unless a step is evaluated now */
        ev->prepare(ev->self, ctx, src, tags, n);
    t0 = kopt_now_ms() - t0;           /* a part of the evaluation time */
    s->st.eval_ms += t0;
    s->st.prepare_ms += t0;
}
