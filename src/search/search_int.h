/* Internal: the search handle and what the files of src/search share.
 *
 * The folder runs kopt optimize: the search tree, the loop that grows it with the LLM roles
 * and the evaluators that time its nodes. Each file calls only files below it here (no
 * circle):
 *
 *   optimize.c     one kopt optimize invocation (the library call of the CLI and MCP)
 *   report.c       a stored tree as text and JSON
 *   search.c       kopt_search_open/close and the loop (kopt_search_go)
 *   repair.c       the debugger on failed nodes
 *   expand.c       planner, coder, templatizer; a child from a code reply
 *   select.c       selection policies (one node, or W with virtual visits)
 *   width.c        the batch of a wide step: W pending nodes over W GPUs at once (with
 *                  --overlap: a step's, the next step asked meanwhile)
 *   backup.c       one node evaluated, its outcome stored and backed up; twins; prepare
 *   prompts.c      the variables of the prompts, templates rendered
 *   ask.c          conversations with the roles (LLM or manual files)
 *   tools.c        the code-search tool's turns
 *   contract.c     the candidate's interface as the prompts show it
 *   start.c        the --start kernel checked
 *   eval_*.c       the evaluators: live, spread (over a pool), stand-in (calls scripted),
 *                  scripted (fake and replay)
 *   tree.c         nodes, JSON, derive (rewards, visits, best), stored tree; the math
 */
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

/* A step of width > 1 (select.c): what the expansions picked so far will add to a node
 * (virtual visits with no value: virtual loss; plan children) and how often it was picked. */
typedef struct kopt__search_virtual {
    int visits, children, picks;
} kopt__search_virtual;

/* The variables of a prompt (prompts.c): kopt__search_var adds one (at most 32), _var_own one
 * whose value is freed by kopt__search_vars_free. */
typedef struct kopt__search_vars {
    kopt_agent_var v[32];
    int n;
    char *owned[32];
    int nowned;
} kopt__search_vars;

/* One conversation with a role: the prompt, then (coder and debugger, when the code-search
 * tool is on) pairs of a reply that asked for searches and the results fed back, until a
 * reply without searches. */
typedef struct kopt__search_ask {
    kopt_llm_request rq;
    kopt_llm_message *msgs;     /* the conversation; msgs[0] is the prompt */
    int nmsg, cap;
    char *prompt;
    char key[64];               /* the conversation's name (manual mode's files) */
    char name[80];              /* this turn's name (key, or key.turnN): rq.name */
    char tag[32];
    kopt_llm_reply reply;       /* the latest reply */
    int answered, waiting;
    int tools;                  /* this role may search */
    int searches;               /* searches run for this node */
    int over;                   /* told that the bound is reached */
    int asked_past;             /* the last reply still asked for searches */
    kopt_buf qlog;              /* "QUERY (N hits)" lines, for the node */
} kopt__search_ask;

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
    int step;                   /* the step nodes made now belong to (kopt_search_node.step) */
    int holding, held;          /* the templatizer's node is held (not stored) until its
                                 * step's expansions are, and stored with them (0: none) */
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

/* repair.c: ask the debugger to repair every failed node that may still be repaired; 1
 * when some repair was asked, 0 none, -1 waiting for manual replies. */
int kopt__search_repair(kopt_search *s, kopt_ctx *ctx, kopt_llm_client *llm);

/* expand.c */
/* A child of `parent` from a code reply: pending with its source, or done with the agent
 * failure (its source is `base`); a source the tree holds takes that node's outcome. */
kopt_status kopt__search_add_child(kopt_search *s, kopt_ctx *ctx, int parent, const char *kind,
                                   int expansion, int proposal, const kopt_agent_plan *plan,
                                   const char *base, const kopt__search_ask *a,
                                   int want_template);
/* Store the templatizer's node held back for its step's expansions (none: nothing). */
kopt_status kopt__search_store_held(kopt_search *s, kopt_ctx *ctx);
/* The templatizer on the best node, once per node (its node held until the step's
 * expansions are stored, with them). 1 done, 0 not wanted, -1 waiting. */
int kopt__search_templatize(kopt_search *s, kopt_ctx *ctx, kopt_llm_client *llm, int e);
/* Planner then coder for s->o.proposals children of each node vs[0..m) (expansions e,
 * e + 1, ...). 1 done, -1 waiting. */
int kopt__search_expand(kopt_search *s, kopt_ctx *ctx, kopt_llm_client *llm, const int *vs,
                        int m, int e);

/* select.c: up to `want` nodes to expand in this step, into picks[]; how many. */
int kopt__search_select_many(kopt_search *s, int *picks, int want);

/* width.c: a search of width W evaluates up to W pending nodes at once */
/* The pending nodes to evaluate together, `first` (the lowest pending) first, into out[]
 * (room for KOPT_SEARCH_MAX_WIDTH); how many. 1: `first` alone (the root, a tune, a twin's
 * outcome; any node of a search of width 1 without --overlap); else every pending node of
 * `first`'s step, over the width's GPUs. *one_step: they are not alone and every pending
 * node is of their step (with --overlap the next step may be asked while they are
 * evaluated). */
int kopt__search_batch(const kopt_search *s, int first, int *out, int *one_step);
/* Evaluate nodes ids[0..n) at once (ev->evaluate_many, else one by one): each stored as its
 * outcome arrives, then all backed up in node order. meanwhile (may be NULL): run once on
 * this thread while they are evaluated, before any outcome is taken into the tree (after the
 * evaluations where they run on this thread); not run when the evaluation fails. */
kopt_status kopt__search_evaluate_batch(kopt_search *s, kopt_ctx *ctx, kopt_search_evaluator *ev,
                                        const int *ids, int n, void (*meanwhile)(void *),
                                        void *mw_user);

/* eval_spread.c */
/* ev->evaluate_many(jobs, n, done, user); the spread evaluator (kopt optimize --gpus) runs
 * meanwhile(mw_user) on this thread once its GPUs have the jobs, before any outcome is handed
 * over; any other evaluator runs it first. */
kopt_status kopt__search_spread_many(kopt_search_evaluator *ev, kopt_ctx *ctx,
                                     const kopt_search_job *jobs, int n,
                                     kopt_search_done_fn done, void *user,
                                     void (*meanwhile)(void *), void *mw_user);

/* backup.c: evaluating one node, backing it up */
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
/* Hand the pending candidates not yet prepared to the evaluator at once. */
void kopt__search_prepare(kopt_search *s, kopt_ctx *ctx, kopt_search_evaluator *ev);

/* prompts.c */
double kopt__search_speedup(const kopt_search *s, const kopt_search_node *n);
/* Plans already tried from node i, with their outcome (caller-owned). */
char *kopt__search_tried_text(const kopt_search *s, int i);
void kopt__search_var(kopt__search_vars *vs, const char *name, const char *value);
void kopt__search_var_own(kopt__search_vars *vs, const char *name, char *value);
void kopt__search_vars_free(kopt__search_vars *vs);
/* The variables every role sees about node i (docs/optimize.md lists them). */
void kopt__search_node_vars(kopt_search *s, kopt_ctx *ctx, kopt__search_vars *vs, int i);
/* Role's template rendered with vs (caller-owned). */
char *kopt__search_render(kopt_search *s, kopt_agent_role role, kopt__search_vars *vs);

/* ask.c */
void kopt__search_ask_clear(kopt__search_ask *a, int n);
/* a: a conversation with `role` (the prompt is owned by it), `key` its manual files' name. */
void kopt__search_ask_init(kopt_search *s, kopt__search_ask *a, kopt_agent_role role,
                           char *prompt, const char *key, const char *tag);
/* The latest reply's text, or NULL. */
const char *kopt__search_reply_text(const kopt__search_ask *a);
/* Ask every request, answering code searches turn by turn; 0 when all were answered, else
 * how many wait for manual replies. */
int kopt__search_ask_all(kopt_search *s, kopt_ctx *ctx, kopt_llm_client *llm,
                         kopt__search_ask *a, int n);

/* tree.c */
/* The stored nodes appended to s (nothing without a store). */
kopt_status kopt__search_load_tree(kopt_search *s, kopt_ctx *ctx);
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
