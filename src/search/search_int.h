/* Internal: the search handle and what its files share. */
#ifndef KOPT_SEARCH_INT_H
#define KOPT_SEARCH_INT_H

#include "kopt/search.h"

#include <jansson.h>

#include "kopt/cute.h"

/* The code-search tool of the coder and debugger (tools.c). */
typedef struct kopt__search_tool {
    int active;                 /* search blocks in replies are answered */
    int described;              /* the prompts describe the tool ({{tools}}) */
    int max;                    /* searches per node */
    int looked, found;          /* CUTLASS looked for; found */
    kopt_cutlass cl;
    char why[512];              /* why it was not found */
    kopt_cute_index *ix;        /* opened at the first search */
    char ix_error[512];         /* why it could not be opened ("" none) */
    char *description;          /* prompts/cute_search.md rendered */
} kopt__search_tool;

/* A step of width > 1 (search.c): what the expansions picked so far will add to a node
 * (virtual visits with no value: virtual loss; plan children) and how often it was picked. */
typedef struct kopt__search_virtual {
    int visits, children, picks;
} kopt__search_virtual;

struct kopt_search {
    const kopt_problem *prob;
    kopt_store *store;
    int64_t tree_id;
    kopt_search_opts o;
    char *prompts_dir;
    char *templates[KOPT_AGENT_ROLE_COUNT];
    char *launch;               /* the reference's launch plan for the prompts, read once */
    char *sizes;                /* {{sizes}} and {{abi}} (contract.c), made once */
    char *abi;
    kopt_search_node *nodes;
    int n, cap;
    int best;                   /* index; -1 none */
    int prepared;               /* nodes below this index were handed to ev->prepare */
    kopt_search_stats st;
    double t_start;
    kopt__search_tool tool;
    char *view_problem;         /* a view (kopt_search_view): the stored problem path */
    kopt__search_virtual *virt; /* during the selection of a wide step (else NULL) */
};

/* contract.c: what the coder and debugger see of a candidate's interface */
/* 1 when the problem's candidates are host mode (a PyTorch or a host-mode reference). */
int kopt__search_host_problem(const kopt_problem *p);
/* {{sizes}}: the sizes as named values ("NAME = VALUE" lines) at the benchmark sizes and
 * at the check sizes, and how the code reads them. Caller-owned; NULL out of memory. */
char *kopt__search_sizes_text(const kopt_problem *p);
/* {{abi}}: for a host-mode problem, kopt/candidate.h verbatim (kopt_agent_candidate_abi),
 * or why it cannot be shown (with a warning); "" for others. Caller-owned. */
char *kopt__search_abi_text(kopt_search *s, kopt_ctx *ctx);

/* search.c: the stored nodes appended to s (nothing without a store) */
kopt_status kopt__search_load_tree(kopt_search *s, kopt_ctx *ctx);

/* tools.c */
/* Decide whether the tool is described and active (the root records it: a resume or a
 * replay describes it as the original did), load its description. `fresh`: the tree is
 * being made by this open (the decision goes into its root, which the caller then stores:
 * a root is never stored without it). */
kopt_status kopt__search_tool_open(kopt_search *s, kopt_ctx *ctx, int fresh);
void kopt__search_tool_close(kopt__search_tool *t);
/* Answer the queries q[0..nq) of reply `turn` of conversation `key` (nasked: how many the
 * reply held, nq of them kept): run each while the node's bound allows (*used counts them),
 * record each in the store, and give the next user message (caller-owned). *over is set
 * when the bound is reached (the message then says to answer with code). `qlog` gets
 * "QUERY (N hits)" lines. */
char *kopt__search_tool_answer(kopt_search *s, kopt_ctx *ctx, const char *key, int turn,
                               char **q, int nq, int nasked, int *used, int *over,
                               kopt_buf *qlog);

/* search.c: evaluating */
/* Node i takes the outcome of an evaluated node with the same source; 1 when it did. */
int kopt__search_reuse(kopt_search *s, int i);
/* Node i takes outcome `oc` (its owned parts are taken, the caller clears it): arrived,
 * still pending until settled (done, stored). */
void kopt__search_apply(kopt_search *s, int i, kopt_search_outcome *oc);
kopt_status kopt__search_settle(kopt_search *s, kopt_ctx *ctx, int i);
/* Node i's search-memory row (once per node; nothing for the root or a start node). */
void kopt__search_remember(kopt_search *s, kopt_ctx *ctx, int i);
/* Evaluate pending node i (or give it a twin's outcome; or settle an outcome that arrived
 * before a kill), store and back it up. */
kopt_status kopt__search_evaluate(kopt_search *s, kopt_ctx *ctx, kopt_search_evaluator *ev,
                                  int i);

/* width.c: a search of width W evaluates up to W pending nodes at once */
/* The pending nodes to evaluate together, `first` (the lowest pending) first, into
 * out[] (room for KOPT_SEARCH_MAX_WIDTH); how many (1: evaluate `first` alone). */
int kopt__search_batch(const kopt_search *s, int first, int *out);
/* Evaluate nodes ids[0..n) at once (ev->evaluate_many, else one by one): each stored as its
 * outcome arrives, then all backed up in node order. */
kopt_status kopt__search_evaluate_batch(kopt_search *s, kopt_ctx *ctx, kopt_search_evaluator *ev,
                                        const int *ids, int n);

/* tree.c */
kopt_search_node *kopt__search_add(kopt_search *s);   /* zeroed, id set; NULL nomem */
void kopt__search_node_clear(kopt_search_node *n);
json_t *kopt__search_node_to_json(const kopt_search_node *n);
int kopt__search_node_from_json(kopt_search_node *n, const json_t *j);   /* 0 or -1 */
/* Recompute rewards, visits, values, closed flags and the best node. */
void kopt__search_derive(kopt_search *s);
/* Write node i to the store (nothing without one). */
kopt_status kopt__search_save(kopt_search *s, kopt_ctx *ctx, int i);
/* Writes that stand or fall together (kopt_store_group_begin; nothing without a store): what
 * one decision of the search stores (the nodes of an expansion or of a round of repairs, a
 * node's outcome and its search-memory row), so that a kill -9 leaves all of it or none and
 * a resume makes the same decision again. _end commits when rc is KOPT_OK, else drops the
 * writes; it gives rc, or the commit's error. */
kopt_status kopt__search_group_begin(kopt_search *s, kopt_ctx *ctx);
kopt_status kopt__search_group_end(kopt_search *s, kopt_ctx *ctx, kopt_status rc);
int kopt__search_is_cheat(kopt_verdict v);
/* Realized gain of node i over its parent (parent / node time), 0 when it failed. */
double kopt__search_gain(const kopt_search *s, int i);
/* The id of the plan child's final node: the end of its repair chain. */
int kopt__search_chain_end(const kopt_search *s, int i);

#endif
