/* Repair: the debugger asked for every failed node that may still be repaired (a node at
 * the end of its repair chain, fewer than --debug-attempts deep), with the log it sees (a
 * CuTe/CUTLASS compile log summarized), its siblings' tries; the repairs of a round stored
 * together. Called by the loop (search.c); calls expand.c (a child from a reply), ask.c and
 * prompts.c. From needs_repair to kopt__search_repair. */
#include "search_int.h"

#include <stdlib.h>
#include <string.h>

static int needs_repair(const kopt_search *s, int i)
{
    const kopt_search_node *n = &s->nodes[i];

    if (n->state != KOPT_SEARCH_DONE || n->ok || n->parent < 0 ||
        n->verdict == KOPT_VERDICT_SKIPPED || n->repair_depth >= s->o.debug_attempts)
        return 0;
    return kopt__search_chain_end(s, i) == i;
}

/* The log the debugger sees: a compile log whose errors come from inside CuTe/CUTLASS
 * headers is summarized (the first error, the template it was instantiating, the line of
 * the candidate that led there), not given whole; anything else as it is. */
static char *debugger_log(const kopt_search_node *n)
{
    kopt_buf b = KOPT_BUF_INIT;
    char *sum;

    if (!n->log)
        return strdup("(none)");
    if (n->verdict != KOPT_VERDICT_COMPILE_ERROR || n->failure[0] ||
        (!kopt_cutlass_used(n->source) && !strstr(n->log, "/include/cute/") &&
         !strstr(n->log, "/include/cutlass/")))
        return strdup(n->log);
    sum = kopt_cute_summarize_errors(n->log);
    if (!sum || !sum[0]) {
        free(sum);
        return strdup(n->log);
    }
    kopt_buf_printf(&b, "%s(kopt's summary of a compile log of %zu bytes from inside "
                    "CuTe/CUTLASS headers: the first error, the template it was "
                    "instantiating and the line of this candidate that led there)",
                    sum, strlen(n->log));
    free(sum);
    return kopt_buf_detach(&b);
}

/* Ask the debugger to repair every failed node that may still be repaired. 1 when some
 * repair was asked, 0 none, -1 waiting for manual replies. */
int kopt__search_repair(kopt_search *s, kopt_ctx *ctx, kopt_llm_client *llm)
{
    kopt__search_ask a[16];
    int who[16], k = 0, w;

    for (int i = 0; i < s->n && k < 16; i++) {
        kopt__search_vars vs = {0};
        const kopt_search_node *n = &s->nodes[i];
        char key[64], tag[32];
        if (!needs_repair(s, i))
            continue;
        kopt__search_node_vars(s, ctx, &vs, i);
        kopt__search_var(&vs, "failure", n->failure[0] ? n->failure :
                         kopt_verdict_name(n->verdict));
        kopt__search_var(&vs, "message", n->message);
        kopt__search_var(&vs, "failure_note", !n->failure[0] && n->verdict == KOPT_VERDICT_SUSPECT
            ? "SUSPECT: the outputs were right, but kopt does not trust the time, so the "
              "candidate does not count. Either the time is below what the device allows for "
              "the problem's stated work (the candidate skips part of that work: it relies on "
              "structure of the generated inputs the problem does not promise, or on "
              "something cached between runs), or the timing itself was disturbed (work left "
              "running after the call returns, another stream). Repair it by doing the "
              "problem's stated work inside the call, on io->stream.\n" : "");
        kopt__search_var_own(&vs, "log", debugger_log(n));
        kopt__search_var(&vs, "plan", n->plan.text);
        kopt__search_var(&vs, "parent_source", n->parent >= 0 ? s->nodes[n->parent].source : "");
        /* STARK's debugger window: what its siblings tried and how that went */
        kopt__search_var_own(&vs, "siblings", kopt__search_tried_text(s, n->parent));
        snprintf(key, sizeof(key), "n%d-debugger", i);
        snprintf(tag, sizeof(tag), "n%d", i);
        kopt__search_ask_init(s, &a[k], KOPT_AGENT_DEBUGGER,
                              kopt__search_render(s, KOPT_AGENT_DEBUGGER, &vs), key, tag);
        kopt__search_vars_free(&vs);
        who[k++] = i;
    }
    if (!k)
        return 0;
    if ((w = kopt__search_ask_all(s, ctx, llm, a, k)) == 0) {
        /* the round's repairs stored together: a resume asks for all of them again or none */
        kopt_status rc = kopt__search_group_begin(s, ctx), crc;
        for (int j = 0; j < k; j++) {
            kopt_agent_plan plan = s->nodes[who[j]].plan;
            crc = kopt__search_add_child(s, ctx, who[j], "repair", s->nodes[who[j]].expansion,
                                         s->nodes[who[j]].proposal, &plan,
                                         s->nodes[who[j]].source, &a[j],
                                         strcmp(s->nodes[who[j]].kind, "tune") == 0);
            rc = rc != KOPT_OK ? rc : crc;
        }
        if (kopt__search_group_end(s, ctx, rc) != KOPT_OK)
            kopt_log(ctx, KOPT_LOG_WARN, "repairs not stored: %s", kopt_errmsg(ctx));
    }
    kopt__search_ask_clear(a, k);
    kopt__search_derive(s);
    return w ? -1 : 1;
}
