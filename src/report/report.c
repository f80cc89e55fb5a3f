/*
 * src/report: kopt report, a stored run as one HTML page. Calls go one way: report.c (the
 * page and its table of sections) -> the sections (sections.c, programs.c, tree.c) ->
 * html.c (the escaping and numbers they share).
 * This file: a stored run as one self-contained HTML page. The page is the run's document
 * (kopt_run_document_json) passed through a table of sections; everything is inline (CSS,
 * SVG, a few lines of script) so the file opens anywhere without a network.
 */
#include "report_int.h"

#include "kopt/search.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The page's sections, in order. */
static const kopt__report_section sections[] = {
    {"environment", "Environment", NULL, kopt__report_env},
    {"roofline", "Roofline", kopt__report_has_roofline, kopt__report_roofline},
    {"evaluations", "Evaluations", kopt__report_has_evals, kopt__report_evals},
    {"programs", "PyTorch programs", kopt__report_has_programs, kopt__report_programs},
    {"findings", "Findings", kopt__report_has_findings, kopt__report_findings},
    {"tuning", "Tuning", kopt__report_has_tuning, kopt__report_tuning},
    {"search-tree", "Search tree", kopt__report_has_tree, kopt__report_tree},
};

static const char style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222}"
    "h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:4px}"
    "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;"
    "text-align:left;vertical-align:top}th{background:#f4f4f4}td.n{text-align:right;"
    "font-variant-numeric:tabular-nums}tr.hl{background:#fff3b0}code{font-size:12px}"
    ".note{color:#666;font-size:12px}svg{background:#fff;border:1px solid #ddd}"
    "svg text{font:11px system-ui,sans-serif}.ok{color:#1a7f37}.bad{color:#c62828}"
    "circle.pt{cursor:pointer}circle.pt:hover{stroke:#000;stroke-width:2}"
    "nav a{margin-right:12px}"
    "svg.tree line.te{stroke:#bbb;stroke-width:1.5}svg.tree line.te.repair{stroke-dasharray:4 3}"
    "svg.tree line.te.path{stroke:#1565c0;stroke-width:4}svg.tree circle.tn{cursor:pointer;"
    "stroke:#555;stroke-width:1}svg.tree circle.tn.path{stroke:#1565c0;stroke-width:3}"
    "svg.tree circle.sel{stroke:#000;stroke-width:3}svg.tree text{cursor:pointer}"
    ".tn.ok,.sw.ok{fill:#2e7d32;background:#2e7d32}.tn.suspect,.sw.suspect{fill:#ef6c00;"
    "background:#ef6c00}.tn.fail,.sw.fail{fill:#c62828;background:#c62828}.tn.agent,.sw.agent{"
    "fill:#8e24aa;background:#8e24aa}.tn.pending,.sw.pending,.tn.skipped{fill:#bdbdbd;"
    "background:#bdbdbd}.sw{display:inline-block;width:10px;height:10px;border-radius:5px;"
    "margin:0 3px 0 10px}span.ok{color:#1a7f37}span.fail,span.agent{color:#c62828}"
    "pre.diff,pre.src{font-size:12px;background:#fafafa;border:1px solid #ddd;padding:6px;"
    "overflow:auto;max-height:480px}pre.diff span{display:block;white-space:pre}"
    ".add{background:#e6ffec}.del{background:#ffebe9}.gap{color:#999}";

/* Clicking a point highlights its row (data-row names the row's id) and back; clicking a
 * tree node (data-node) shows its panel (#nd-N), as does a #node-N address. */
static const char script[] =
    "function koptNode(n){var ps=document.querySelectorAll('div.nd');for(var i=0;i<ps.length;"
    "i++)ps[i].hidden=true;var s=document.querySelectorAll('circle.sel');for(i=0;i<s.length;"
    "i++)s[i].classList.remove('sel');var p=document.getElementById('nd-'+n);if(!p)return;"
    "p.hidden=false;var c=document.querySelector('circle.tn[data-node=\"'+n+'\"]');"
    "if(c)c.classList.add('sel');}"
    "document.addEventListener('click',function(e){var t=e.target;"
    "var nd=t&&t.getAttribute?t.getAttribute('data-node'):null;if(nd!==null){koptNode(nd);"
    "return;}"
    "var id=t&&t.getAttribute?t.getAttribute('data-row'):null;if(!id)return;"
    "var rows=document.querySelectorAll('tr.hl');for(var i=0;i<rows.length;i++)"
    "rows[i].classList.remove('hl');var r=document.getElementById(id);"
    "if(r){r.classList.add('hl');r.scrollIntoView({block:'nearest'});}});"
    "var m=/^#node-(\\d+)$/.exec(location.hash);if(m)koptNode(m[1]);";

kopt_status kopt_report_html(kopt_ctx *ctx, const char *doc_json, const kopt_report_opts *opts,
                             char **out)
{
    kopt_report_opts o = KOPT_REPORT_OPTS_INIT;
    kopt_buf b = KOPT_BUF_INIT, title = KOPT_BUF_INIT;
    json_error_t err;
    json_t *doc, *run;
    size_t ns = sizeof(sections) / sizeof(sections[0]);

    *out = NULL;
    if (opts)
        o = *opts;
    if (!(doc = json_loads(doc_json ? doc_json : "", 0, &err)) || !json_is_object(doc) ||
        !json_is_object(run = json_object_get(doc, "run"))) {
        json_decref(doc);
        return kopt_seterr(ctx, KOPT_E_INVALID, "report: not a run document (%s)",
                           doc ? "no \"run\" object" : err.text);
    }
    if (o.title)
        kopt_buf_printf(&title, "%s", o.title);
    else
        kopt_buf_printf(&title, "kopt report: run %lld (%s)",
                        (long long)json_integer_value(json_object_get(run, "id")),
                        kopt__report_str(run, "kind"));
    kopt_buf_printf(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                    "<meta name=\"generator\" content=\"kopt %s\"><title>",
                    kopt__report_str(json_object_get(doc, "reader"), "kopt_version"));
    kopt__report_esc(&b, kopt_buf_cstr(&title));
    kopt_buf_printf(&b, "</title><style>%s</style></head>\n<body data-run=\"%lld\" "
                    "data-kind=\"", style, (long long)json_integer_value(json_object_get(run,
                    "id")));
    kopt__report_esc(&b, kopt__report_str(run, "kind"));
    kopt_buf_printf(&b, "\">\n<h1>");
    kopt__report_esc(&b, kopt_buf_cstr(&title));
    kopt_buf_printf(&b, "</h1>\n<p>status <b>");
    kopt__report_esc(&b, kopt__report_str(run, "status"));
    kopt_buf_printf(&b, "</b>; <code>kopt ");
    kopt__report_esc(&b, kopt__report_str(run, "command"));
    kopt_buf_printf(&b, "</code>");
    if (kopt__report_str(run, "summary")[0]) {
        kopt_buf_printf(&b, "<br>");
        kopt__report_esc(&b, kopt__report_str(run, "summary"));
    }
    kopt_buf_printf(&b, "</p>\n<nav>");
    for (size_t i = 0; i < ns; i++)
        if (!sections[i].applies || sections[i].applies(doc))
            kopt_buf_printf(&b, "<a href=\"#%s\">%s</a>", sections[i].id, sections[i].title);
    kopt_buf_printf(&b, "</nav>\n");
    for (size_t i = 0; i < ns; i++) {
        if (sections[i].applies && !sections[i].applies(doc))
            continue;
        kopt_buf_printf(&b, "<section id=\"%s\"><h2>%s</h2>\n", sections[i].id,
                        sections[i].title);
        sections[i].render(&b, doc);
        kopt_buf_printf(&b, "</section>\n");
    }
    kopt_buf_printf(&b, "<p class=\"note\">Made by kopt %s from the store; no GPU was needed "
                    "to draw it.</p>\n<script>%s</script>\n</body></html>\n",
                    kopt__report_str(json_object_get(doc, "reader"), "kopt_version"), script);
    json_decref(doc);
    kopt_buf_free(&title);
    if (!b.ptr)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "report page");
    *out = kopt_buf_detach(&b);
    return KOPT_OK;
}

kopt_status kopt_report_document_json(kopt_ctx *ctx, const char *db_path, int64_t run_id,
                                      char **out)
{
    char *text = NULL, *tree = NULL;
    json_t *doc, *run;
    json_int_t parent;
    kopt_status rc;

    *out = NULL;
    if ((rc = kopt_run_document_json(ctx, db_path, run_id, &text)) != KOPT_OK)
        return rc;
    doc = json_loads(text, 0, NULL);
    run = json_object_get(doc, "run");
    if (!doc || strcmp(kopt__report_str(run, "kind"), "optimize") != 0) {
        json_decref(doc);
        *out = text;
        return KOPT_OK;
    }
    /* the run's own tree, or the one it resumed */
    parent = json_integer_value(json_object_get(run, "parent_id"));
    if (kopt_search_stored_json(ctx, db_path, run_id, 1, &tree) == KOPT_E_NOT_FOUND &&
        parent > 0)
        kopt_search_stored_json(ctx, db_path, parent, 1, &tree);
    if (tree)
        json_object_set_new(doc, "optimize", json_loads(tree, 0, NULL));
    free(tree);
    free(text);
    *out = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(9));
    json_decref(doc);
    return *out ? KOPT_OK : kopt_seterr(ctx, KOPT_E_NOMEM, "report document");
}

kopt_status kopt_report_write(kopt_ctx *ctx, const char *db_path, int64_t run_id,
                              const char *path, const kopt_report_opts *opts)
{
    char *doc = NULL, *html = NULL;
    kopt_status rc;

    if ((rc = kopt_report_document_json(ctx, db_path, run_id, &doc)) == KOPT_OK &&
        (rc = kopt_report_html(ctx, doc, opts, &html)) == KOPT_OK)
        rc = kopt_file_write(ctx, path, html, strlen(html));
    free(doc);
    free(html);
    return rc;
}
