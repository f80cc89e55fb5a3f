/* Budgets of a client: calls, tokens and estimated cost. A budget is checked before a call
 * is sent (calls in flight count); tokens and cost are only known afterwards, so the call
 * that crosses a limit completes and the next one is refused. The caller holds the lock. */
#include "llm_int.h"

#include <stdio.h>

int kopt__llm_budget_exhausted(kopt__llm_budget *b)
{
    kopt_llm_budget_state *s = &b->spent;

    s->why[0] = '\0';
    if (b->max_calls > 0 && s->calls >= b->max_calls)
        snprintf(s->why, sizeof(s->why), "--max-llm-calls %lld reached",
                 (long long)b->max_calls);
    else if (b->max_tokens > 0 && s->tokens_total >= b->max_tokens)
        snprintf(s->why, sizeof(s->why), "--max-tokens-total %lld reached (%lld used)",
                 (long long)b->max_tokens, (long long)s->tokens_total);
    else if (b->max_cost > 0 && s->cost >= b->max_cost)
        snprintf(s->why, sizeof(s->why), "--max-cost %.4g USD reached (%.4g USD estimated)",
                 b->max_cost, s->cost);
    s->exhausted = s->why[0] != '\0';
    return s->exhausted;
}

int kopt__llm_budget_reserve(kopt__llm_budget *b)
{
    if (kopt__llm_budget_exhausted(b))
        return 0;
    b->spent.calls++;
    kopt__llm_budget_exhausted(b);   /* refresh the state the caller may query */
    return 1;
}

void kopt__llm_budget_add(kopt__llm_budget *b, const kopt_llm_usage *u, double cost,
                          int cost_known)
{
    kopt_llm_budget_state *s = &b->spent;

    s->prompt_tokens += u->prompt_tokens;
    s->completion_tokens += u->completion_tokens;
    s->cached_tokens += u->cached_tokens;
    s->tokens_total += u->prompt_tokens + u->completion_tokens;
    s->cost += cost;
    if (!cost_known)
        s->cost_unknown_calls++;
    kopt__llm_budget_exhausted(b);
}
