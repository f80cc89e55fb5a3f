/*
 * kopt/report.h: one self-contained HTML page (inline CSS, SVG and a few lines of script;
 * nothing fetched from the network) showing a stored run: the environment every number
 * was measured in, the roofline with the device's measured ceilings and each evaluated
 * candidate and profiled kernel placed on it, the findings ranked with predicted and
 * realized gain, and for tuning runs the best-so-far against evaluations and the parameter
 * space explored. The page is built from the run's document (kopt_run_document_json), so
 * a recorded run renders without a GPU. For optimize runs: the search tree (nodes colored
 * by verdict, sized by visits, the path to the best node highlighted), each node's plan and
 * its diff against its parent on click. Sections are a table (src/report/report_int.h).
 *
 * Ownership: *out strings are the caller's (free()). Options are borrowed for the call.
 */
#ifndef KOPT_REPORT_H
#define KOPT_REPORT_H

#include "kopt/run.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kopt_report_opts {
    int version;
    const char *title;            /* NULL: "kopt report: run N (kind)" */
} kopt_report_opts;
#define KOPT_REPORT_OPTS_INIT {1, NULL}

/* Run `run_id`'s document as the page uses it: kopt_run_document_json, plus for an optimize
 * run its search tree with every node's source ("optimize": kopt_search_stored_json; a
 * resumed step shows the tree it stepped). */
kopt_status kopt_report_document_json(kopt_ctx *ctx, const char *db_path, int64_t run_id,
                                      char **out);
/* The page for a run document (JSON text as kopt_run_document_json gives it). */
kopt_status kopt_report_html(kopt_ctx *ctx, const char *doc_json, const kopt_report_opts *opts,
                             char **out);
/* Run `run_id` of the store at `db_path` as a page written to `path` (atomically). */
kopt_status kopt_report_write(kopt_ctx *ctx, const char *db_path, int64_t run_id,
                              const char *path, const kopt_report_opts *opts);

#ifdef __cplusplus
}
#endif
#endif
