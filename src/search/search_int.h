/* Internal: the search handle and what its files share. */
#ifndef KOPT_SEARCH_INT_H
#define KOPT_SEARCH_INT_H

#include "kopt/search.h"

#include <jansson.h>

struct kopt_search {
    const kopt_problem *prob;
    kopt_store *store;
    int64_t tree_id;
    kopt_search_opts o;
    char *prompts_dir;
    char *templates[KOPT_AGENT_ROLE_COUNT];
    kopt_search_node *nodes;
    int n, cap;
    int best;                   /* index; -1 none */
    int prepared;               /* nodes below this index were handed to ev->prepare */
    kopt_search_stats st;
    double t_start;
};

/* tree.c */
kopt_search_node *kopt__search_add(kopt_search *s);   /* zeroed, id set; NULL nomem */
void kopt__search_node_clear(kopt_search_node *n);
json_t *kopt__search_node_to_json(const kopt_search_node *n);
int kopt__search_node_from_json(kopt_search_node *n, const json_t *j);   /* 0 or -1 */
/* Recompute rewards, visits, values, closed flags and the best node. */
void kopt__search_derive(kopt_search *s);
/* Write node i to the store (nothing without one). */
kopt_status kopt__search_save(kopt_search *s, kopt_ctx *ctx, int i);
int kopt__search_is_cheat(kopt_verdict v);
/* Realized gain of node i over its parent (parent / node time), 0 when it failed. */
double kopt__search_gain(const kopt_search *s, int i);
/* The id of the plan child's final node: the end of its repair chain. */
int kopt__search_chain_end(const kopt_search *s, int i);

#endif
