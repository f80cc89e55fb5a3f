/* The evaluation step of a wide search (width W > 1: kopt optimize --gpus, docs/scale.md):
 * which pending nodes are evaluated together, and their evaluation at once through the
 * evaluator's evaluate_many (one GPU each). Each outcome is stored as soon as it arrives
 * (the node still pending, "arrived"), so a search killed mid-batch loses only the
 * evaluations still in flight; once all are in, the batch is backed up (settled: done,
 * rewards, visits, search memory) in node order, so the tree does not depend on which GPU
 * finished first. A resume finds the same batch (the same pending nodes), evaluates only
 * what had not arrived and backs up the whole batch in node order, as the killed search
 * would have. With --overlap a batch is a step's pending nodes (docs/optimize.md,
 * "Overlap"), and the loop's asking of the next step runs meanwhile, before any outcome is
 * taken into the tree. Called by the loop (search.c); calls backup.c, eval_spread.c and
 * tree.c (search_int.h draws the folder's call order). */
#include "search_int.h"

#include <stdio.h>
#include <string.h>

/* An evaluated node holds the same source: node i takes its outcome instead (alone). */
static int has_twin(const kopt_search *s, int i)
{
    for (int k = 0; k < s->n; k++) {
        const kopt_search_node *o = &s->nodes[k];
        if (k != i && o->state == KOPT_SEARCH_DONE && !o->failure[0] &&
            strcmp(o->hash, s->nodes[i].hash) == 0)
            return 1;
    }
    return 0;
}

static int is_tune(const kopt_search_node *n)
{
    return strcmp(n->kind, "tune") == 0;
}

/* Evaluated alone: the root (nothing is searched unless it runs), a tune (a tuning run of
 * its own, on the search's thread), a node that takes a twin's outcome. */
static int alone(const kopt_search *s, int first)
{
    return first == 0 || is_tune(&s->nodes[first]) || has_twin(s, first);
}

/* `first`, then the pending nodes after it (of `step`; any when step < 0) up to `limit`,
 * leaving out tunes, twins of evaluated nodes and twins in the batch (they wait, then take
 * its outcome). */
static int gather(const kopt_search *s, int first, int *out, int limit, int step)
{
    int n = 0;

    out[n++] = first;
    for (int i = first + 1; i < s->n && n < limit; i++) {
        const kopt_search_node *c = &s->nodes[i];
        int dup = 0;
        if (c->state != KOPT_SEARCH_PENDING || (step >= 0 && c->step != step) || is_tune(c) ||
            has_twin(s, i))
            continue;
        for (int k = 0; k < n; k++)
            dup |= strcmp(s->nodes[out[k]].hash, c->hash) == 0;
        if (!dup)
            out[n++] = i;
    }
    return n;
}

int kopt__search_batch(const kopt_search *s, int first, int *out, int *one_step)
{
    const int step = s->nodes[first].step;

    *one_step = !alone(s, first);   /* alone, on this thread: nothing is asked meanwhile */
    for (int i = 0; i < s->n; i++)
        if (s->nodes[i].state == KOPT_SEARCH_PENDING && s->nodes[i].step != step)
            *one_step = 0;
    out[0] = first;
    /* the step's pending nodes together, not W at a time: a GPU whose evaluation ends
     * first takes the next at once instead of waiting for the slowest of W (the tree is the
     * same: backups run in node order either way, after the batch) */
    return alone(s, first) || (s->o.width <= 1 && !s->o.overlap) ? 1 :
           gather(s, first, out, KOPT_SEARCH_MAX_WIDTH, step);
}

typedef struct batch {
    kopt_search *s;
    kopt_ctx *ctx;
    const int *jobs_ids;          /* the node of each job */
    kopt_status rc;
    void (*meanwhile)(void *);    /* run once, before the first outcome is taken (or NULL) */
    void *mw_user;
    double mw_ms;                 /* its time (not the evaluation's) */
} batch;

static void run_meanwhile(void *user)
{
    batch *b = user;
    void (*fn)(void *) = b->meanwhile;
    double t0 = kopt_now_ms();

    if (!fn)
        return;
    b->meanwhile = NULL;
    fn(b->mw_user);
    b->mw_ms += kopt_now_ms() - t0;
}

/* An outcome arrived (on the search's thread): into its node, and stored at once. */
static void arrived(void *user, int index, kopt_search_outcome *out)
{
    batch *b = user;
    kopt_status rc;

    run_meanwhile(b);   /* the tree as it was before the batch, for what runs meanwhile */
    kopt__search_apply(b->s, b->jobs_ids[index], out);
    if ((rc = kopt__search_save(b->s, b->ctx, b->jobs_ids[index])) != KOPT_OK &&
        b->rc == KOPT_OK)
        b->rc = rc;
}

kopt_status kopt__search_evaluate_batch(kopt_search *s, kopt_ctx *ctx, kopt_search_evaluator *ev,
                                        const int *ids, int n, void (*meanwhile)(void *),
                                        void *mw_user)
{
    kopt_search_job jobs[KOPT_SEARCH_MAX_WIDTH];
    char tags[KOPT_SEARCH_MAX_WIDTH][16];
    int jobs_ids[KOPT_SEARCH_MAX_WIDTH], nj = 0;
    batch b = {s, ctx, jobs_ids, KOPT_OK, meanwhile, mw_user, 0.0};
    double t0 = kopt_now_ms();
    kopt_status rc = KOPT_OK;

    if (!ev->evaluate_many) {   /* one evaluator (a replay): one by one, the same tree */
        run_meanwhile(&b);
        for (int i = 0; i < n && rc == KOPT_OK; i++)
            rc = kopt__search_evaluate(s, ctx, ev, ids[i]);
        return rc;
    }
    for (int i = 0; i < n; i++) {
        if (s->nodes[ids[i]].arrived)   /* before a kill: not evaluated again */
            continue;
        snprintf(tags[nj], sizeof(tags[nj]), "n%d", ids[i]);
        jobs[nj].source = s->nodes[ids[i]].source;
        jobs[nj].tag = tags[nj];
        jobs_ids[nj++] = ids[i];
    }
    if (nj > 0)   /* the spread evaluator runs meanwhile as its GPUs start; others, first */
        rc = kopt__search_spread_many(ev, ctx, jobs, nj, arrived, &b, run_meanwhile, &b);
    s->st.eval_ms += kopt_now_ms() - t0 - b.mw_ms;
    if (rc == KOPT_OK)
        rc = b.rc;
    if (rc != KOPT_OK)   /* what arrived stays stored, to be backed up by a resume */
        return rc;
    run_meanwhile(&b);   /* nothing was left to evaluate */
    /* the backup, in node order, with the search-memory rows: stored together (a kill in
     * it leaves the outcomes arrived, to be backed up by a resume as here) */
    if ((rc = kopt__search_group_begin(s, ctx)) != KOPT_OK)
        return rc;
    for (int i = 0; i < n && rc == KOPT_OK; i++)
        if (s->nodes[ids[i]].arrived)
            rc = kopt__search_settle(s, ctx, ids[i]);
    kopt__search_derive(s);
    for (int i = 0; i < n; i++)
        if (s->nodes[ids[i]].state == KOPT_SEARCH_DONE)
            kopt__search_remember(s, ctx, ids[i]);
    return kopt__search_group_end(s, ctx, rc);
}
