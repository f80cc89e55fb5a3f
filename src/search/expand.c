/* Expansion: the children a step adds to the tree. The planner then the coder for each
 * selected node (every request of a kind asked at once), the templatizer on the best node,
 * and kopt__search_add_child, which makes a node of a code reply (pending with its source,
 * done with the agent's failure, or a twin's outcome: backup.c). Called by the loop
 * (search.c) and by repair.c; calls ask.c, prompts.c, backup.c and tree.c. From the guard
 * the coder's reply is checked against to kopt__search_expand. */
#include "search_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kopt_agent_guard guard_of(const kopt_search *s)
{
    const char *ref = s->prob->ref_path ? strrchr(s->prob->ref_path, '/') : NULL;
    kopt_agent_guard g = {"problem.json", ref ? ref + 1 : s->prob->ref_path, NULL};
    return g;
}

/* A child of `parent` from a code reply: pending with its source, or done with the agent
 * failure (its source is the base it should have changed). A source the tree already holds
 * takes that node's outcome: nothing is evaluated twice. */
kopt_status kopt__search_add_child(kopt_search *s, kopt_ctx *ctx, int parent, const char *kind,
                                   int expansion, int proposal, const kopt_agent_plan *plan,
                                   const char *base, const kopt__search_ask *a,
                                   int want_template)
{
    kopt_agent_guard g = guard_of(s);
    char why[512] = "", *src = NULL;
    const char *text = kopt__search_reply_text(a);
    kopt_agent_failure f;
    kopt_search_node *n;
    int id;

    if (text && a->asked_past) {
        f = KOPT_AGENT_SEARCH_LIMIT;
        snprintf(why, sizeof(why), "the reply asked for code searches again after the bound "
                 "of %d per node was reached, instead of giving the code", s->tool.max);
    } else if (!text) {
        f = KOPT_AGENT_NO_REPLY;
        snprintf(why, sizeof(why), "the model gave no usable reply (%s%s%s)",
                 kopt_llm_outcome_name(a->reply.outcome), a->reply.error ? ": " : "",
                 a->reply.error ? a->reply.error : "");
    } else {
        f = kopt_agent_extract_code(text, base, &g, &src, why, sizeof(why));
    }
    if (f == KOPT_AGENT_OK && want_template && !strstr(src, "\"params\"")) {
        f = KOPT_AGENT_NOT_TEMPLATE;
        snprintf(why, sizeof(why), "the templatizer's kernel has no \"params\" in its front "
                 "matter");
        free(src);
        src = NULL;
    }
    if (!(n = kopt__search_add(s))) {
        free(src);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "search node");
    }
    id = n->id;
    n->parent = parent;
    snprintf(n->kind, sizeof(n->kind), "%s", kind);
    n->expansion = expansion;
    n->proposal = proposal;
    if (plan)
        n->plan = *plan;
    n->searches = a->searches;
    if (a->qlog.len)
        n->queries = strndup(a->qlog.ptr, a->qlog.len);
    if (s->nodes[parent].findings) {
        const char *nl = strchr(s->nodes[parent].findings, '\n');
        size_t len = nl ? (size_t)(nl - s->nodes[parent].findings) : strlen(s->nodes[parent].findings);
        snprintf(n->advice, sizeof(n->advice), "%.*s", (int)(len < 500 ? len : 500),
                 s->nodes[parent].findings);
        snprintf(n->advice_tool, sizeof(n->advice_tool), "%s", s->nodes[parent].tool);
    }
    if (f != KOPT_AGENT_OK) {
        n->source = strdup(base ? base : "");
        n->state = KOPT_SEARCH_DONE;
        snprintf(n->failure, sizeof(n->failure), "%s", kopt_agent_failure_name(f));
        snprintf(n->message, sizeof(n->message), "%s", why);
        n->log = strdup(why);
    } else {
        n->source = src;
        kopt_sha256_hex(src, strlen(src), n->hash);
        kopt__search_reuse(s, id);
    }
    if (s->holding) {   /* stored with its step's expansions (kopt__search_store_held) */
        s->held = id;
        return KOPT_OK;
    }
    return kopt__search_save(s, ctx, id);
}

kopt_status kopt__search_store_held(kopt_search *s, kopt_ctx *ctx)
{
    int id = s->held;

    s->held = 0;
    return id > 0 ? kopt__search_save(s, ctx, id) : KOPT_OK;
}

/* The templatizer on the best node, once per node. 1 done, 0 not wanted, -1 waiting. */
int kopt__search_templatize(kopt_search *s, kopt_ctx *ctx, kopt_llm_client *llm, int e)
{
    int b = s->best, w;
    kopt__search_ask a;
    kopt__search_vars vs = {0};
    char key[64], tag[32];
    kopt_agent_plan plan;

    if (s->o.no_tune || b <= 0 || strcmp(s->nodes[b].kind, "tune") == 0 ||
        s->nodes[b].tuned_from || s->nodes[b].plan_children < s->o.tune_after)
        return 0;
    for (int c = b + 1; c < s->n; c++)
        if (s->nodes[c].parent == b && strcmp(s->nodes[c].kind, "tune") == 0)
            return 0;
    kopt__search_node_vars(s, ctx, &vs, b);
    snprintf(key, sizeof(key), "e%d-n%d-templatizer", e, b);
    snprintf(tag, sizeof(tag), "n%d", b);
    kopt__search_ask_init(s, &a, KOPT_AGENT_TEMPLATIZER,
                          kopt__search_render(s, KOPT_AGENT_TEMPLATIZER, &vs), key, tag);
    kopt__search_vars_free(&vs);
    if ((w = kopt__search_ask_all(s, ctx, llm, &a, 1)) == 0) {
        memset(&plan, 0, sizeof(plan));
        snprintf(plan.text, sizeof(plan.text), "templatize n%d and tune its params", b);
        snprintf(plan.kind, sizeof(plan.kind), "tune");
        s->holding = 1;   /* a step's templatizer and expansions are stored together: a kill
                           * between them would leave a step a resume does not ask again */
        kopt__search_add_child(s, ctx, b, "tune", e, 0, &plan, s->nodes[b].source, &a, 1);
        s->holding = 0;
    }
    kopt__search_ask_clear(&a, 1);
    kopt__search_derive(s);
    return w ? -1 : 1;
}

/* "j of k" for proposal j of pick p: a node picked more than once in a step (best-of-n)
 * numbers the proposals of its expansions one after the other ("3 of 4"). */
static const char *proposal_label(const int *vs, int m, int p, int j, int k, char *buf,
                                  size_t len)
{
    int before = 0, times = 0;

    for (int o = 0; o < m; o++) {
        before += o < p && vs[o] == vs[p];
        times += vs[o] == vs[p];
    }
    snprintf(buf, len, "%d of %d", before * k + j + 1, times * k);
    return buf;
}

/* Planner then coder for `s->o.proposals` children of each node vs[0..m) (expansions e,
 * e + 1, ...), every request of a kind asked in parallel. 1 done, -1 waiting. */
int kopt__search_expand(kopt_search *s, kopt_ctx *ctx, kopt_llm_client *llm, const int *vs,
                        int m, int e)
{
    int k = s->o.proposals > 16 ? 16 : s->o.proposals, n = m * k, w = 1;
    kopt__search_ask *pa = calloc((size_t)n, sizeof(*pa)), *ca = calloc((size_t)n, sizeof(*ca));
    kopt_agent_plan *plans = calloc((size_t)n, sizeof(*plans));
    char key[64], tag[32], prop[32];

    if (!pa || !ca || !plans)
        goto out;
    for (int q = 0; q < n; q++) {
        kopt__search_vars vs_ = {0};
        int p = q / k, j = q % k, v = vs[p];
        kopt__search_node_vars(s, ctx, &vs_, v);
        kopt__search_var(&vs_, "proposal", proposal_label(vs, m, p, j, k, prop, sizeof(prop)));
        snprintf(key, sizeof(key), "e%d-p%d-planner", e + p, j + 1);
        snprintf(tag, sizeof(tag), "n%d", v);
        kopt__search_ask_init(s, &pa[q], KOPT_AGENT_PLANNER,
                              kopt__search_render(s, KOPT_AGENT_PLANNER, &vs_), key, tag);
        kopt__search_vars_free(&vs_);
    }
    if ((w = kopt__search_ask_all(s, ctx, llm, pa, n)) != 0)
        goto out;
    for (int q = 0; q < n; q++) {
        kopt__search_vars vs_ = {0};
        char gain[32];
        int p = q / k, j = q % k, v = vs[p];
        if (kopt_agent_parse_plan(kopt__search_reply_text(&pa[q]), &plans[q]) != KOPT_AGENT_OK)
            snprintf(plans[q].text, sizeof(plans[q].text), "(the planner gave no plan: %s) "
                     "make one well-chosen optimization", kopt_llm_outcome_name(pa[q].reply.outcome));
        kopt__search_node_vars(s, ctx, &vs_, v);
        kopt__search_var(&vs_, "proposal", proposal_label(vs, m, p, j, k, prop, sizeof(prop)));
        kopt__search_var(&vs_, "plan", plans[q].text);
        kopt__search_var(&vs_, "plan_kind", plans[q].kind);
        snprintf(gain, sizeof(gain), "%.2f", plans[q].gain);
        kopt__search_var(&vs_, "plan_gain", gain);
        snprintf(key, sizeof(key), "e%d-p%d-coder", e + p, j + 1);
        snprintf(tag, sizeof(tag), "n%d", v);
        kopt__search_ask_init(s, &ca[q], KOPT_AGENT_CODER,
                              kopt__search_render(s, KOPT_AGENT_CODER, &vs_), key, tag);
        kopt__search_vars_free(&vs_);
    }
    kopt__search_ask_clear(pa, n);
    memset(pa, 0, (size_t)n * sizeof(*pa));
    if ((w = kopt__search_ask_all(s, ctx, llm, ca, n)) == 0) {
        /* the expansion's children stored together: a kill -9 between two of them would
         * leave an expansion that a resume counts as done with a proposal missing */
        kopt_status rc = kopt__search_group_begin(s, ctx), crc;
        if (rc == KOPT_OK)
            rc = kopt__search_store_held(s, ctx);   /* the step's templatizer node */
        for (int q = 0; q < n; q++) {
            crc = kopt__search_add_child(s, ctx, vs[q / k], "plan", e + q / k, q % k + 1,
                                         &plans[q], s->nodes[vs[q / k]].source, &ca[q], 0);
            rc = rc != KOPT_OK ? rc : crc;
        }
        if (kopt__search_group_end(s, ctx, rc) != KOPT_OK)
            kopt_log(ctx, KOPT_LOG_WARN, "an expansion not stored: %s", kopt_errmsg(ctx));
    }
    kopt__search_ask_clear(ca, n);
    memset(ca, 0, (size_t)n * sizeof(*ca));
    kopt__search_derive(s);
out:
    if (pa)
        kopt__search_ask_clear(pa, n);
    if (ca)
        kopt__search_ask_clear(ca, n);
    free(pa);
    free(ca);
    free(plans);
    if (!pa || !ca || !plans)
        return -1;
    return w ? -1 : 1;
}
