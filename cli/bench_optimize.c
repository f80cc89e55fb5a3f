/* kopt bench --optimize: kopt optimize (kopt/search.h) on one problem of the suite under
 * the suite's budget, its best kernel written out for the suite to evaluate against eager
 * and torch.compile like any candidate. docs/kernelbench.md. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_bench_optimize(kopt_ctx *ctx, const cli_bench_opt *bo, const char *problem_dir,
                       const char *name, char **best_path, json_t **info)
{
    kopt_optimize_opts oo = KOPT_OPTIMIZE_OPTS_INIT;
    kopt_optimize *op = NULL;
    kopt_search *search;
    const kopt_search_node *best, *root;
    kopt_search_stats st;
    char file[512], *path = NULL;
    int vcode = 0, rc = -1;

    *best_path = NULL;
    *info = NULL;
    oo.search.iterations = bo->iterations;
    oo.search.max_wall_s = bo->max_wall_s;
    oo.search.stop = bo->stop;
    oo.live.eval = *bo->eval;
    oo.live.energy_s = 0.0;
    oo.db_path = bo->db_path;
    oo.argc = bo->argc;
    oo.argv = bo->argv;
    oo.problem = problem_dir;
    oo.keep_iterations = 1;
    oo.llm = bo->llm;
    oo.evaluator = bo->evaluator;
    oo.fake_ref_ms = bo->fake_ref_ms;
    oo.gpus = bo->gpus;                /* the search spreads over the suite's GPUs */
    oo.ngpus = bo->ngpus;
    if (kopt_optimize_open(&op, ctx, &oo) != KOPT_OK)
        goto done;
    if (kopt_optimize_go(op, ctx, &vcode) != KOPT_OK)
        goto done;
    search = kopt_optimize_search(op);
    kopt_search_get_stats(search, &st);
    best = kopt_search_best(search);
    root = kopt_search_node_at(search, 0);
    *info = json_pack("{s:I, s:I, s:i, s:i, s:s, s:i}", "tree",
                      (json_int_t)kopt_optimize_tree_id(op), "run",
                      (json_int_t)kopt_optimize_run_id(op), "nodes", kopt_search_count(search),
                      "expansions", st.expansions, "stop", st.stop_reason, "best_node",
                      best ? best->id : -1);
    if (best && root && best != root && best->source) {
        /* the best kernel beside the run's other files: the candidate of the suite's row */
        snprintf(file, sizeof(file), "%s.cu", name);
        if (!(path = kopt_path_join(kopt_optimize_workdir(op), file)) ||
            kopt_file_write(ctx, path, best->source, strlen(best->source)) != KOPT_OK)
            goto done;
        json_object_set_new(*info, "best_ms", json_real(best->time_ms));
        json_object_set_new(*info, "root_ms", json_real(root->time_ms));
        *best_path = path;
        path = NULL;
    }
    /* no better kernel: the row is the reference against itself (falling back to it) */
    rc = 0;
done:
    free(path);
    kopt_optimize_close(op);
    return rc;
}
