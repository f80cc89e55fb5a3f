/* Selection policies: which node a step expands (MCTS by UCT with progressive widening,
 * greedy, beam, best-of-n from the start node), and in a wide step up to W of them, made to
 * differ by virtual visits (kopt__search_virtual). Called by the loop (search.c); calls only
 * tree.c and the public tree functions. From what selection sees of a node (vvisits) to
 * kopt__search_select_many. */
#include "search_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What selection sees of node i: its visits and plan children with those the expansions
 * already picked in this step will add (none outside a wide step), and whether it was
 * picked. */
static int vvisits(const kopt_search *s, int i)
{
    return s->nodes[i].visits + (s->virt ? s->virt[i].visits : 0);
}

static int vchildren(const kopt_search *s, int i)
{
    return s->nodes[i].plan_children + (s->virt ? s->virt[i].children : 0);
}

static int picked(const kopt_search *s, int i)
{
    return s->virt && s->virt[i].picks;
}

static int in_top(const kopt_search *s, int i)
{
    int nok = 0, better = 0;

    for (int k = 0; k < s->n; k++)
        if (s->nodes[k].ok) {
            nok++;
            better += s->nodes[k].raw_reward > s->nodes[i].raw_reward;
        }
    return nok > 1 && better < (int)ceil(s->o.top_quantile * nok);
}

static int limit_of(const kopt_search *s, int i)
{
    return kopt_search_widen_limit(s->o.widen_c, s->o.widen_alpha, vvisits(s, i)) +
           (in_top(s, i) ? s->o.top_extra : 0);
}

/* The --start node (the root's child of kind "start"), or -1. */
static int start_node(const kopt_search *s)
{
    return s->n > 1 && strcmp(s->nodes[1].kind, "start") == 0 ? 1 : -1;
}

/* Correct and not a dead end: a node is only planned from once it was evaluated (its
 * time, device and profile are what the planner works from). With --start, the start
 * kernel takes the root's place: the root is not expanded while the start kernel (or the
 * end of its repair chain) is correct or still pending. */
static int open_node(const kopt_search *s, int i)
{
    int st = start_node(s);

    if (st > 0 && i == 0) {
        const kopt_search_node *e = &s->nodes[kopt__search_chain_end(s, st)];
        if (e->ok || e->state == KOPT_SEARCH_PENDING)
            return 0;
    }
    return s->nodes[i].ok && !s->nodes[i].closed;
}

/* The open correct nodes by raw reward, best first (ties: lower id). */
static int ranked(const kopt_search *s, int *out)
{
    int k = 0;

    for (int i = 0; i < s->n; i++)
        if (open_node(s, i))
            out[k++] = i;
    for (int a = 1; a < k; a++)
        for (int b = a; b > 0 && s->nodes[out[b]].raw_reward > s->nodes[out[b - 1]].raw_reward;
             b--) {
            int t = out[b];
            out[b] = out[b - 1];
            out[b - 1] = t;
        }
    return k;
}

static int select_mcts(const kopt_search *s)
{
    int v = 0;

    for (int depth = 0; depth < 1000; depth++) {
        int best = -1;
        double best_score = -INFINITY;
        if (open_node(s, v) && !picked(s, v) && vchildren(s, v) < limit_of(s, v))
            return v;
        for (int c = v + 1; c < s->n; c++) {
            const kopt_search_node *ch = &s->nodes[c];
            int end;
            double score;
            if (ch->parent != v || strcmp(ch->kind, "repair") == 0)
                continue;
            end = kopt__search_chain_end(s, c);
            if (!s->nodes[end].ok)
                continue;
            score = kopt_search_uct(ch->value, vvisits(s, c), vvisits(s, v), s->o.uct_c);
            if (score > best_score) {
                best_score = score;
                best = end;
            }
        }
        if (best < 0)
            return open_node(s, v) && !picked(s, v) ? v : -1;
        v = best;
    }
    return -1;
}

/* The best open node not picked yet in this step (-1 none). */
static int first_unpicked(const kopt_search *s, const int *r, int k)
{
    for (int i = 0; i < k; i++)
        if (!picked(s, r[i]))
            return r[i];
    return -1;
}

/* The node to expand; in a wide step, one not picked yet (best-of-n: the start again). */
static int select_node(const kopt_search *s)
{
    int *r = malloc(((size_t)s->n + 1) * sizeof(int)), k, pick = -1;

    if (!r)
        return -1;
    k = ranked(s, r);
    switch (s->o.policy) {
    case KOPT_SEARCH_MCTS:
        pick = select_mcts(s);
        if (pick < 0)
            pick = first_unpicked(s, r, k);
        break;
    case KOPT_SEARCH_GREEDY:
        pick = first_unpicked(s, r, k);
        break;
    case KOPT_SEARCH_BEAM: {
        int w = s->o.beam_width < k ? s->o.beam_width : k;
        for (int i = 0; i < w; i++)   /* the least expanded of the best w */
            if (!picked(s, r[i]) && (pick < 0 || vchildren(s, r[i]) < vchildren(s, pick)))
                pick = r[i];
        break;
    }
    case KOPT_SEARCH_BEST_OF_N:   /* every expansion from the start (the root, or --start) */
        pick = open_node(s, 0) ? 0 : -1;
        if (start_node(s) > 0 && pick < 0) {
            int e = kopt__search_chain_end(s, start_node(s));
            pick = open_node(s, e) ? e : -1;
        }
        break;
    }
    free(r);
    return pick;
}

/* Up to `want` nodes to expand in this step, into picks[]; how many. After each pick the
 * node and its ancestors count the visits its proposals will bring, with no value (virtual
 * loss), and the node the plan children, so that the next pick goes elsewhere: down
 * another branch, or to a node that may now widen. One pick is the plain selection. */
int kopt__search_select_many(kopt_search *s, int *picks, int want)
{
    int n = 0;

    if (want <= 0)
        return 0;
    if (want == 1 || !(s->virt = calloc((size_t)s->n, sizeof(*s->virt))))
        return (picks[0] = select_node(s)) >= 0 ? 1 : 0;
    for (; n < want; n++) {
        int v = select_node(s), k = s->o.proposals > 16 ? 16 : s->o.proposals;
        if (v < 0)
            break;
        picks[n] = v;
        s->virt[v].picks++;
        s->virt[v].children += k;
        for (int a = v; a >= 0; a = s->nodes[a].parent)
            s->virt[a].visits += k;
    }
    free(s->virt);
    s->virt = NULL;
    return n;
}
