/* Internal: the report's sections and the helpers they share (src/report). */
#ifndef KOPT_REPORT_INT_H
#define KOPT_REPORT_INT_H

#include "kopt/report.h"

#include <jansson.h>

/* One section of the page: shown when applies() says the document has something for it
 * (NULL: always); render() appends its HTML to the page. Adding a section (the optimize
 * search tree: nodes colored by verdict, sized by visits, the path to the best, each
 * node's plan and diff on click, tree.c) is one function pair and one line in report.c's
 * table. */
typedef struct kopt__report_section {
    const char *id;               /* the HTML id of its <section> */
    const char *title;
    int (*applies)(json_t *doc);
    void (*render)(kopt_buf *b, json_t *doc);
} kopt__report_section;

/* sections.c */
void kopt__report_env(kopt_buf *b, json_t *doc);
int kopt__report_has_roofline(json_t *doc);
void kopt__report_roofline(kopt_buf *b, json_t *doc);
int kopt__report_has_evals(json_t *doc);
void kopt__report_evals(kopt_buf *b, json_t *doc);
int kopt__report_has_findings(json_t *doc);
void kopt__report_findings(kopt_buf *b, json_t *doc);
int kopt__report_has_tuning(json_t *doc);
void kopt__report_tuning(kopt_buf *b, json_t *doc);

/* programs.c: the stored PyTorch program profiles, kernel by kernel */
int kopt__report_has_programs(json_t *doc);
void kopt__report_programs(kopt_buf *b, json_t *doc);

/* tree.c: the optimize search tree (doc["optimize"]) */
int kopt__report_has_tree(json_t *doc);
void kopt__report_tree(kopt_buf *b, json_t *doc);

/* html.c: text escaped for HTML (and attribute values); a number with `decimals` and a suffix, "-" when absent */
void kopt__report_esc(kopt_buf *b, const char *s);
void kopt__report_num(kopt_buf *b, json_t *v, int decimals, const char *suffix);
/* a string member, "" when absent */
const char *kopt__report_str(json_t *o, const char *key);

#endif
