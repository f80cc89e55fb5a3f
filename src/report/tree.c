/*
 * The report's optimize section: the search tree as SVG (a node per candidate, colored by
 * verdict, its area growing with its visits; the path from the reference to the best node
 * drawn thick), and for each node a panel, shown on click, with its plan, outcome and the
 * line diff of its source against its parent's. The document's "optimize" member is the
 * tree as kopt_search_stored_json gives it (full: with sources).
 */
#include "report_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIFF_CELLS (4u << 20)   /* LCS table cells at most; larger: no diff, the source */

int kopt__report_has_tree(json_t *doc)
{
    return json_array_size(json_object_get(json_object_get(doc, "optimize"), "nodes")) > 0;
}

/* The verdict's class: ok, suspect, fail (wrong, crash, cheat, compile), agent (an agent
 * failure), pending, skipped. */
static const char *verdict_class(json_t *n)
{
    const char *v = kopt__report_str(n, "verdict");

    if (strcmp(kopt__report_str(n, "state"), "pending") == 0)
        return "pending";
    if (json_object_get(n, "failure"))
        return "agent";
    if (strcmp(v, "OK") == 0)
        return "ok";
    if (strcmp(v, "SUSPECT") == 0)
        return "suspect";
    if (strcmp(v, "SKIPPED") == 0)
        return "skipped";
    return "fail";
}

/* ---- a line diff (LCS) ---------------------------------------------------------------------- */

typedef struct lines {
    char **v;
    int n;
} lines;

static lines split(const char *s)
{
    lines l = {NULL, 0};
    int cap = 0;

    while (s && *s) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (l.n == cap) {
            char **g = realloc(l.v, (size_t)(cap = cap ? 2 * cap : 64) * sizeof(*g));
            if (!g)
                break;
            l.v = g;
        }
        l.v[l.n++] = strndup(s, len);
        s = e ? e + 1 : s + len;
    }
    return l;
}

static void lines_free(lines *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

static void diff_line(kopt_buf *b, char tag, const char *cls, const char *text)
{
    kopt_buf_printf(b, "<span class=\"%s\">%c ", cls, tag);
    kopt__report_esc(b, text);
    kopt_buf_printf(b, "</span>\n");
}

/* The diff of `b_src` against `a_src` as <pre> lines (+ added, - removed, context kept
 * within 3 lines of a change); *added and *removed count the changed lines. */
static void diff(kopt_buf *out, const char *a_src, const char *b_src, int *added, int *removed)
{
    lines a = split(a_src), b = split(b_src);
    size_t cells = (size_t)(a.n + 1) * (size_t)(b.n + 1);
    int *t, i = 0, j = 0, k = 0, nops = 0, gap = 0;
    char *ops;

    *added = *removed = 0;
    if (cells > DIFF_CELLS || !(t = calloc(cells, sizeof(*t)))) {
        kopt_buf_printf(out, "<pre class=\"src\">");
        kopt__report_esc(out, b_src);
        kopt_buf_printf(out, "</pre>");
        lines_free(&a);
        lines_free(&b);
        return;
    }
#define T(x, y) t[(size_t)(x) * (size_t)(b.n + 1) + (size_t)(y)]
    for (int x = a.n - 1; x >= 0; x--)
        for (int y = b.n - 1; y >= 0; y--)
            T(x, y) = strcmp(a.v[x], b.v[y]) == 0 ? T(x + 1, y + 1) + 1
                    : (T(x + 1, y) > T(x, y + 1) ? T(x + 1, y) : T(x, y + 1));
    ops = malloc((size_t)(a.n + b.n + 1));
    /* ops: '=' keep (a[i], b[j]), '-' a[i] removed, '+' b[j] added */
    while (ops && (i < a.n || j < b.n)) {
        if (i < a.n && j < b.n && strcmp(a.v[i], b.v[j]) == 0) {
            ops[nops++] = '=';
            i++, j++;
        } else if (j < b.n && (i == a.n || T(i, j + 1) >= T(i + 1, j))) {
            ops[nops++] = '+';
            j++;
        } else {
            ops[nops++] = '-';
            i++;
        }
    }
#undef T
    kopt_buf_printf(out, "<pre class=\"diff\">");
    i = j = 0;
    for (k = 0; ops && k < nops; k++) {
        int near = 0;
        for (int d = k - 3; d <= k + 3 && !near; d++)
            near = d >= 0 && d < nops && ops[d] != '=';
        if (ops[k] == '=') {   /* context near a change; one "..." for each run skipped */
            if (near) {
                diff_line(out, ' ', "ctx", b.v[j]);
                gap = 0;
            } else if (!gap) {
                kopt_buf_printf(out, "<span class=\"gap\">...</span>\n");
                gap = 1;
            }
            i++, j++;
        } else if (ops[k] == '-') {
            diff_line(out, '-', "del", a.v[i++]);
            (*removed)++;
            gap = 0;
        } else {
            diff_line(out, '+', "add", b.v[j++]);
            (*added)++;
            gap = 0;
        }
    }
    kopt_buf_printf(out, "</pre>");
    free(ops);
    free(t);
    lines_free(&a);
    lines_free(&b);
}

/* ---- layout ------------------------------------------------------------------------------- */

typedef struct pos {
    double x, y;
    int depth, on_path;
} pos;

/* Leaves take the next column in depth-first order; a parent sits over its children. */
static double place(json_t *nodes, int i, pos *p, int depth, int *next_col)
{
    double sum = 0;
    int nkids = 0;
    size_t k;
    json_t *c;

    p[i].depth = depth;
    json_array_foreach(nodes, k, c) {
        if (json_integer_value(json_object_get(c, "parent")) == i && (int)k != i) {
            sum += place(nodes, (int)k, p, depth + 1, next_col);
            nkids++;
        }
    }
    p[i].x = nkids ? sum / nkids : (double)(*next_col)++;
    return p[i].x;
}

void kopt__report_tree(kopt_buf *b, json_t *doc)
{
    json_t *opt = json_object_get(doc, "optimize"), *nodes = json_object_get(opt, "nodes");
    json_t *best = json_object_get(opt, "best"), *path = json_object_get(opt, "path"), *n;
    int nn = (int)json_array_size(nodes), cols = 0, maxd = 0, npath = 0;
    pos *p = calloc((size_t)nn, sizeof(*p));
    const double dx = 46, dy = 70, pad = 30;
    double w, h;
    size_t i;

    if (!p)
        return;
    place(nodes, 0, p, 0, &cols);
    json_array_foreach(path, i, n) {
        json_int_t id = json_integer_value(json_object_get(n, "id"));
        if (id >= 0 && id < nn) {
            p[id].on_path = 1;
            npath++;
        }
    }
    for (int k = 0; k < nn; k++)
        maxd = p[k].depth > maxd ? p[k].depth : maxd;
    w = 2 * pad + (cols > 1 ? cols - 1 : 1) * dx;
    h = 2 * pad + maxd * dy;
    if (w < 400)
        w = 400;
    kopt_buf_printf(b, "<p>Tree %lld of <b>", (long long)json_integer_value(json_object_get(opt,
                    "tree_id")));
    kopt__report_esc(b, kopt__report_str(opt, "problem"));
    kopt_buf_printf(b, "</b>: %d nodes, policy %s, objective %s. ", nn,
                    kopt__report_str(opt, "policy"), kopt__report_str(opt, "objective"));
    if (best)
        kopt_buf_printf(b, "Best: <b>n%lld</b>, %.4f ms, %.2fx the reference (path of %d "
                        "nodes, drawn thick). ", (long long)json_integer_value(json_object_get(
                        best, "id")), json_number_value(json_object_get(best, "time_ms")),
                        json_number_value(json_object_get(best, "speedup")), npath);
    kopt_buf_printf(b, "Click a node for its plan and its diff against its parent.</p>\n"
                    "<p class=\"note legend\"><span class=\"sw ok\"></span>OK "
                    "<span class=\"sw suspect\"></span>SUSPECT <span class=\"sw fail\"></span>"
                    "wrong, crashed, did not compile or cheated <span class=\"sw agent\"></span>"
                    "agent failure <span class=\"sw pending\"></span>pending; area: visits</p>\n");
    kopt_buf_printf(b, "<svg class=\"tree\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f "
                    "%.0f\" xmlns=\"http://www.w3.org/2000/svg\">\n", w, h, w, h);
    for (int k = 0; k < nn; k++) {
        p[k].x = pad + p[k].x * dx;
        p[k].y = pad + p[k].depth * dy;
    }
    json_array_foreach(nodes, i, n) {   /* edges first, under the nodes */
        json_int_t par = json_integer_value(json_object_get(n, "parent"));
        if (par < 0 || par >= nn || (int)i == 0)
            continue;
        kopt_buf_printf(b, "<line class=\"te%s%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                        "y2=\"%.1f\"/>\n", p[i].on_path && p[par].on_path ? " path" : "",
                        strcmp(kopt__report_str(n, "kind"), "repair") == 0 ? " repair" : "",
                        p[par].x, p[par].y, p[i].x, p[i].y);
    }
    json_array_foreach(nodes, i, n) {
        json_int_t visits = json_integer_value(json_object_get(n, "visits"));
        double r = 6 + 3 * sqrt((double)(visits > 0 ? visits : 0));
        kopt_buf_printf(b, "<g class=\"tnode\" data-node=\"%zu\"><circle class=\"tn %s%s\" "
                        "data-node=\"%zu\" cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\"><title>n%zu %s: ",
                        i, verdict_class(n), p[i].on_path ? " path" : "", i, p[i].x, p[i].y,
                        r > 22 ? 22 : r, i, kopt__report_str(n, "kind"));
        kopt__report_esc(b, kopt__report_str(json_object_get(n, "plan"), "text"));
        kopt_buf_printf(b, "</title></circle><text data-node=\"%zu\" x=\"%.1f\" y=\"%.1f\">n%zu"
                        "</text></g>\n", i, p[i].x + 8, p[i].y - 8, i);
    }
    kopt_buf_printf(b, "</svg>\n<div id=\"node-panel\">\n");
    json_array_foreach(nodes, i, n) {   /* the panels, hidden until their node is clicked */
        json_int_t par = json_integer_value(json_object_get(n, "parent"));
        json_t *pn = par >= 0 ? json_array_get(nodes, (size_t)par) : NULL, *pl;
        int add = 0, del = 0;
        kopt_buf_printf(b, "<div class=\"nd\" id=\"nd-%zu\" hidden><h3>n%zu: %s", i, i,
                        kopt__report_str(n, "kind"));
        if (pn)
            kopt_buf_printf(b, " of n%lld", (long long)par);
        kopt_buf_printf(b, " &middot; <span class=\"%s\">", verdict_class(n));
        kopt__report_esc(b, json_object_get(n, "verdict") ? kopt__report_str(n, "verdict")
                                                           : "pending");
        kopt_buf_printf(b, "</span>");
        if (json_number_value(json_object_get(n, "time_ms")) > 0)
            kopt_buf_printf(b, " &middot; %.4f ms (%.2fx)",
                            json_number_value(json_object_get(n, "time_ms")),
                            json_number_value(json_object_get(n, "speedup")));
        kopt_buf_printf(b, " &middot; visits %lld</h3>\n<table>",
                        (long long)json_integer_value(json_object_get(n, "visits")));
        pl = json_object_get(n, "plan");
        kopt_buf_printf(b, "<tr><th>plan</th><td>");
        kopt__report_esc(b, kopt__report_str(pl, "text"));
        if (kopt__report_str(pl, "kind")[0]) {
            kopt_buf_printf(b, " <span class=\"note\">[");
            kopt__report_esc(b, kopt__report_str(pl, "kind"));
            kopt_buf_printf(b, "]</span>");
        }
        kopt_buf_printf(b, "</td></tr>");
        if (json_number_value(json_object_get(pl, "gain")) > 0)
            kopt_buf_printf(b, "<tr><th>predicted gain</th><td>%.2fx</td></tr>",
                            json_number_value(json_object_get(pl, "gain")));
        if (kopt__report_str(n, "advice")[0]) {
            kopt_buf_printf(b, "<tr><th>advice followed</th><td>");
            kopt__report_esc(b, kopt__report_str(n, "advice"));
            kopt_buf_printf(b, "</td></tr>");
        }
        if (kopt__report_str(n, "message")[0]) {
            kopt_buf_printf(b, "<tr><th>outcome</th><td>");
            kopt__report_esc(b, kopt__report_str(n, "message"));
            kopt_buf_printf(b, "</td></tr>");
        }
        if (kopt__report_str(n, "closed")[0]) {
            kopt_buf_printf(b, "<tr><th>closed</th><td>");
            kopt__report_esc(b, kopt__report_str(n, "closed"));
            kopt_buf_printf(b, "</td></tr>");
        }
        kopt_buf_printf(b, "</table>\n");
        if (pn) {
            kopt_buf btmp = KOPT_BUF_INIT;
            diff(&btmp, kopt__report_str(pn, "source"), kopt__report_str(n, "source"), &add,
                 &del);
            kopt_buf_printf(b, "<p class=\"note\">source against n%lld: %d line(s) added, %d "
                            "removed</p>\n%s\n", (long long)par, add, del, kopt_buf_cstr(&btmp));
            kopt_buf_free(&btmp);
        } else {
            kopt_buf_printf(b, "<p class=\"note\">the reference</p><pre class=\"src\">");
            kopt__report_esc(b, kopt__report_str(n, "source"));
            kopt_buf_printf(b, "</pre>\n");
        }
        if (kopt__report_str(n, "log")[0]) {
            kopt_buf_printf(b, "<details><summary>log</summary><pre class=\"src\">");
            kopt__report_esc(b, kopt__report_str(n, "log"));
            kopt_buf_printf(b, "</pre></details>\n");
        }
        kopt_buf_printf(b, "</div>\n");
    }
    kopt_buf_printf(b, "</div>\n");
    free(p);
}
