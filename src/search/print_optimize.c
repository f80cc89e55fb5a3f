/* What kopt optimize prints once a search step is over, as text or JSON (and for any other
 * caller of kopt_optimize): the run and tree with their counts, why it stopped, the best node,
 * the GPUs, the path from the reference, kopt's overhead, the tree's signature, and what to
 * do next. */
#include "search_int.h"

#include <stdio.h>
#include <stdlib.h>

void kopt_optimize_print(FILE *f, kopt_optimize *op, int propose, int json)
{
    kopt_search *search = kopt_optimize_search(op);
    const kopt_search_node *b = kopt_search_best(search);
    int64_t tree_id = kopt_optimize_tree_id(op);
    kopt_search_stats st;
    char sig[65], *path, *gpus_text;

    if (json) {
        char *text = kopt_search_json(search);
        fprintf(f, "%s\n", text ? text : "{}");
        free(text);
        return;
    }
    kopt_search_get_stats(search, &st);
    kopt_search_signature(search, sig);
    path = kopt_search_path_text(search);
    gpus_text = kopt_search_gpus_text(search);
    fprintf(f, "kopt optimize %s: run %lld, tree %lld, %d nodes, %d expansions, %d evaluated "
            "now, %d pending", kopt_optimize_problem(op)->name,
            (long long)kopt_optimize_run_id(op), (long long)tree_id, kopt_search_count(search),
            st.expansions, st.evaluated, st.pending);
    if (st.width > 1)
        fprintf(f, ", width %d", st.width);
    fprintf(f, "\n");
    fprintf(f, "stop: %s\n", st.stop_reason);
    if (b && kopt_search_node_at(search, 0)->time_ms > 0)
        fprintf(f, "best: n%d, %.4f ms, %.2fx the reference\n", b->id, b->time_ms,
                kopt_search_node_at(search, 0)->time_ms / b->time_ms);
    if (gpus_text)   /* the GPUs that evaluated the tree's nodes, and how many each */
        fprintf(f, "gpus: %s\n", gpus_text);
    fprintf(f, "path:\n%s", path);
    fprintf(f, "kopt overhead: %.2f ms per iteration (wall %.0f ms, LLM %.0f ms, evaluation "
            "%.0f ms of which compiles ahead %.0f ms, %d code searches %.0f ms)\n",
            st.overhead_ms_per_iter, st.wall_ms, st.llm_ms, st.eval_ms, st.prepare_ms,
            st.searches, st.search_ms);
    fprintf(f, "signature: %s\n", sig);
    if (st.waiting)
        fprintf(f, "manual: %d prompts in %s are waiting for replies (NAME.prompt.md -> "
                "NAME.reply.md); then: kopt optimize --resume %lld --llm manual\n",
                st.waiting, kopt_optimize_workdir(op), (long long)tree_id);
    if (propose)
        fprintf(f, "next: kopt optimize --resume %lld --evaluate\n", (long long)tree_id);
    free(path);
    free(gpus_text);
}
