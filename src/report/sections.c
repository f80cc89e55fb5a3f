/*
 * The report's sections: environment, roofline (SVG), evaluations and profiles, findings
 * ranked with predicted and realized gain, tuning (best-so-far chart, parameter space).
 * Each reads the run document (kopt_run_document_json) and appends HTML.
 */
#include "report_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define esc kopt__report_esc
#define num kopt__report_num
#define str kopt__report_str

static const char *const compute_names[] = {"fp32", "fp64", "fp16", "bf16", "tf32", "fp8",
                                            "int"};

/* A number cell: <td class="n">value</td>. */
static void num_cell(kopt_buf *b, json_t *v, int decimals, const char *suffix)
{
    kopt_buf_printf(b, "<td class=\"n\">");
    num(b, v, decimals, suffix);
    kopt_buf_printf(b, "</td>");
}

/* ---- environment ------------------------------------------------------------------------ */

static void row(kopt_buf *b, const char *name, const char *value)
{
    kopt_buf_printf(b, "<tr><th>%s</th><td>", name);
    esc(b, value && value[0] ? value : "-");
    kopt_buf_printf(b, "</td></tr>");
}

static void ceilings_table(kopt_buf *b, json_t *dev)
{
    json_t *c = json_object_get(dev, "ceilings"), *g = json_object_get(c, "gflops"),
           *m = json_object_get(c, "measured");

    kopt_buf_printf(b, "<h3>");
    esc(b, str(dev, "name"));
    kopt_buf_printf(b, " <span class=\"note\">");
    esc(b, str(dev, "uuid"));
    kopt_buf_printf(b, ", cc %s, %lld SMs; ceilings measured %s</span></h3>\n<table "
                    "class=\"ceilings\"><tr><th>ceiling</th><th>rate</th><th>source</th></tr>",
                    str(dev, "cc"), (long long)json_integer_value(json_object_get(dev,
                    "sm_count")), str(dev, "measured_at")[0] ? str(dev, "measured_at") : "?");
    kopt_buf_printf(b, "<tr><td>DRAM copy / read / write</td><td class=\"n\">");
    num(b, json_object_get(c, "dram_copy_gbs"), 0, "");
    kopt_buf_printf(b, " / ");
    num(b, json_object_get(c, "dram_read_gbs"), 0, "");
    kopt_buf_printf(b, " / ");
    num(b, json_object_get(c, "dram_write_gbs"), 0, "");
    kopt_buf_printf(b, " GB/s</td><td>measured</td></tr><tr><td>L2 read</td><td class=\"n\">");
    num(b, json_object_get(c, "l2_gbs"), 0, "");
    kopt_buf_printf(b, " GB/s</td><td>%s</td></tr><tr><td>shared memory</td><td class=\"n\">",
                    json_is_true(json_object_get(c, "l2_measured")) ? "measured" : "spec");
    num(b, json_object_get(c, "smem_gbs"), 0, "");
    kopt_buf_printf(b, " GB/s</td><td>%s</td></tr>",
                    json_is_true(json_object_get(c, "smem_measured")) ? "measured" : "spec");
    for (size_t k = 0; k < json_array_size(g) && k < 7; k++) {
        if (json_number_value(json_array_get(g, k)) <= 0)
            continue;
        kopt_buf_printf(b, "<tr><td>%s</td><td class=\"n\">%.0f GFLOP/s</td><td>%s</td></tr>",
                        compute_names[k], json_number_value(json_array_get(g, k)),
                        json_integer_value(json_array_get(m, k)) ? "measured" : "spec");
    }
    kopt_buf_printf(b, "</table>\n");
}

void kopt__report_env(kopt_buf *b, json_t *doc)
{
    json_t *run = json_object_get(doc, "run"), *dev = json_object_get(run, "device"),
           *devs = json_object_get(doc, "devices"), *d;
    char text[128];
    size_t i;

    kopt_buf_printf(b, "<p>Every number below was measured in this environment (the run's "
                    "record in the store).</p>\n<table class=\"env\">");
    row(b, "device", str(dev, "name"));
    row(b, "device UUID", str(dev, "uuid"));
    row(b, "compute capability", str(dev, "cc"));
    snprintf(text, sizeof(text), "%lld", (long long)json_integer_value(json_object_get(dev,
             "driver_version")));
    row(b, "CUDA driver", strcmp(text, "0") ? text : "");
    if (json_integer_value(json_object_get(dev, "clock_khz")))
        snprintf(text, sizeof(text), "SM %lld MHz, memory %lld MHz",
                 (long long)json_integer_value(json_object_get(dev, "clock_khz")) / 1000,
                 (long long)json_integer_value(json_object_get(dev, "mem_clock_khz")) / 1000);
    else
        text[0] = '\0';
    row(b, "clocks (max)", text);
    row(b, "NVRTC", str(dev, "nvrtc_version"));
    row(b, "kopt", str(run, "kopt_version"));
    row(b, "host", str(run, "host"));
    snprintf(text, sizeof(text), "kopt %s", str(run, "command"));
    row(b, "command", text);
    row(b, "started", str(run, "started_at"));
    row(b, "finished", str(run, "finished_at"));
    kopt_buf_printf(b, "</table>\n");
    json_array_foreach(devs, i, d)
        ceilings_table(b, d);
    if (!json_array_size(devs))
        kopt_buf_printf(b, "<p class=\"note\">No device ceilings are stored for this run's "
                        "device.</p>\n");
}

/* ---- roofline ------------------------------------------------------------------------- */

typedef struct point {
    double x, y;                  /* FLOP/B, GFLOP/s */
    char cls[8], row[32], label[400];
} point;

/* The run's device (else the first stored one). */
static json_t *run_device(json_t *doc)
{
    const char *uuid = str(json_object_get(json_object_get(doc, "run"), "device"), "uuid");
    json_t *devs = json_object_get(doc, "devices"), *d;
    size_t i;

    json_array_foreach(devs, i, d)
        if (strcmp(str(d, "uuid"), uuid) == 0)
            return d;
    return json_array_get(devs, 0);
}

static double metric(json_t *m, const char *name)
{
    return json_number_value(json_object_get(m, name));
}

/* FLOP counted from SASS thread-instruction metrics (FP32 and FP64; tensor-core work is
 * not in them). */
static double kernel_flops(json_t *m)
{
    return metric(m, "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum") +
           metric(m, "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum") +
           2 * metric(m, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum") +
           metric(m, "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum") +
           metric(m, "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum") +
           2 * metric(m, "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum");
}

static const char *cand_name(json_t *item)
{
    if (json_integer_value(json_object_get(item, "is_reference")))
        return "reference";
    return str(item, "candidate_path")[0] ? str(item, "candidate_path") : "candidate";
}

/* The points of the document; *unplaced counts what could not be placed. */
static int collect_points(json_t *doc, point **out, int *unplaced)
{
    json_t *evs = json_object_get(doc, "evaluations"), *pfs = json_object_get(doc, "profiles");
    json_t *e, *p, *k;
    size_t i, j, cap = json_array_size(evs) + 1;
    int n = 0;
    point *pts;

    json_array_foreach(pfs, i, p)
        cap += json_array_size(json_object_get(p, "metrics"));
    *unplaced = 0;
    if (!(pts = calloc(cap, sizeof(*pts))))
        return 0;
    json_array_foreach(evs, i, e) {
        json_t *r = json_object_get(json_object_get(e, "result"), "roofline");
        double f = json_number_value(json_object_get(r, "flops")),
               by = json_number_value(json_object_get(r, "bytes")),
               g = json_number_value(json_object_get(r, "achieved_gflops"));
        if (!json_is_object(r))
            continue;
        if (f <= 0 || by <= 0 || g <= 0) {
            (*unplaced)++;
            continue;
        }
        pts[n].x = f / by;
        pts[n].y = g;
        snprintf(pts[n].cls, sizeof(pts[n].cls), "eval");
        snprintf(pts[n].row, sizeof(pts[n].row), "eval-%lld",
                 (long long)json_integer_value(json_object_get(e, "id")));
        snprintf(pts[n].label, sizeof(pts[n].label), "evaluation %lld: %s %s, %.4g ms, "
                 "%.3g FLOP/B, %.4g GFLOP/s", (long long)json_integer_value(json_object_get(e,
                 "id")), str(e, "problem"), cand_name(e), json_number_value(json_object_get(e,
                 "median_ms")), pts[n].x, pts[n].y);
        n++;
    }
    json_array_foreach(pfs, i, p) {
        json_array_foreach(json_object_get(p, "metrics"), j, k) {
            json_t *m = json_object_get(k, "metrics");
            double by = metric(m, "dram__bytes_read.sum") + metric(m, "dram__bytes_write.sum");
            double f = kernel_flops(m), ns = metric(m, "gpu__time_duration.sum");
            if (f <= 0 || by <= 0 || ns <= 0) {
                (*unplaced)++;
                continue;
            }
            pts[n].x = f / by;
            pts[n].y = f / ns;   /* FLOP per ns = GFLOP/s */
            snprintf(pts[n].cls, sizeof(pts[n].cls), "kernel");
            snprintf(pts[n].row, sizeof(pts[n].row), "prof-%lld",
                     (long long)json_integer_value(json_object_get(p, "id")));
            snprintf(pts[n].label, sizeof(pts[n].label), "profile %lld, %s %s, launch %s: "
                     "%.4g ms, %.3g FLOP/B (DRAM), %.4g GFLOP/s",
                     (long long)json_integer_value(json_object_get(p, "id")), str(p, "problem"),
                     cand_name(p), str(k, "kernel"), ns / 1e6, pts[n].x, pts[n].y);
            n++;
        }
    }
    *out = pts;
    return n;
}

int kopt__report_has_roofline(json_t *doc)
{
    point *pts = NULL;
    int unplaced, n = collect_points(doc, &pts, &unplaced);
    free(pts);
    return n > 0 || unplaced > 0;
}

#define RW 780.0
#define RH 440.0
#define ML 70.0
#define MR 150.0
#define MT 16.0
#define MB 46.0

typedef struct axes { double x0, x1, y0, y1; } axes;

static double sx(const axes *a, double x)
{
    return ML + (log10(x) - log10(a->x0)) / (log10(a->x1) - log10(a->x0)) * (RW - ML - MR);
}

static double sy(const axes *a, double y)
{
    return RH - MB - (log10(y) - log10(a->y0)) / (log10(a->y1) - log10(a->y0)) * (RH - MT - MB);
}

static void log_ticks(kopt_buf *b, const axes *a)
{
    for (double t = pow(10, floor(log10(a->x0))); t <= a->x1 * 1.0001; t *= 10) {
        if (t < a->x0)
            continue;
        kopt_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                        "stroke=\"#eee\"/><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">"
                        "%g</text>", sx(a, t), MT, sx(a, t), RH - MB, sx(a, t), RH - MB + 14, t);
    }
    for (double t = pow(10, floor(log10(a->y0))); t <= a->y1 * 1.0001; t *= 10) {
        if (t < a->y0)
            continue;
        kopt_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                        "stroke=\"#eee\"/><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g"
                        "</text>", ML, sy(a, t), RW - MR, sy(a, t), ML - 4, sy(a, t) + 4, t);
    }
}

void kopt__report_roofline(kopt_buf *b, json_t *doc)
{
    json_t *dev = run_device(doc), *c = json_object_get(dev, "ceilings");
    json_t *g = json_object_get(c, "gflops"), *m = json_object_get(c, "measured");
    double bw = fmax(json_number_value(json_object_get(c, "dram_copy_gbs")),
                     fmax(json_number_value(json_object_get(c, "dram_read_gbs")),
                          json_number_value(json_object_get(c, "dram_write_gbs"))));
    double peak = 0, lo_y = INFINITY, hi_y = 0, lo_x = INFINITY, hi_x = 0;
    point *pts = NULL;
    int unplaced, n = collect_points(doc, &pts, &unplaced), nceil = 0;
    axes a;

    for (size_t k = 0; k < json_array_size(g) && k < 7; k++)
        peak = fmax(peak, json_number_value(json_array_get(g, k)));
    for (int i = 0; i < n; i++) {
        lo_x = fmin(lo_x, pts[i].x);
        hi_x = fmax(hi_x, pts[i].x);
        lo_y = fmin(lo_y, pts[i].y);
        hi_y = fmax(hi_y, pts[i].y);
    }
    if (bw > 0 && peak > 0) {
        lo_x = fmin(lo_x, peak / bw / 64);
        hi_x = fmax(hi_x, peak / bw * 8);
        hi_y = fmax(hi_y, peak);
    }
    if (!(lo_x < INFINITY)) {   /* no point and no ceiling */
        kopt_buf_printf(b, "<p>Nothing to place: %d item(s) without work counts.</p>\n",
                        unplaced);
        free(pts);
        return;
    }
    a.x0 = pow(2, floor(log2(lo_x)) - 1);
    a.x1 = pow(2, ceil(log2(hi_x)) + 1);
    a.y1 = pow(10, ceil(log10(hi_y * 1.5)));
    a.y0 = pow(10, floor(log10(fmin(lo_y, bw > 0 ? bw * a.x0 : lo_y) / 2)));
    kopt_buf_printf(b, "<svg id=\"roofline-svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 "
                    "%.0f %.0f\" xmlns=\"http://www.w3.org/2000/svg\" data-points=\"%d\">",
                    RW, RH, RW, RH, n);
    log_ticks(b, &a);
    kopt_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">arithmetic "
                    "intensity (FLOP/byte of DRAM traffic)</text><text transform=\"translate("
                    "14,%.1f) rotate(-90)\" text-anchor=\"middle\">GFLOP/s</text>",
                    (ML + RW - MR) / 2, RH - 8, (MT + RH - MB) / 2);
    /* the measured memory roof up to the highest compute ceiling, then each ceiling flat
     * from its ridge point */
    if (bw > 0 && peak > 0) {
        double xr = peak / bw, xs = fmax(a.x0, a.y0 / bw);
        kopt_buf_printf(b, "<line class=\"roof mem\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                        "y2=\"%.1f\" stroke=\"#1565c0\" stroke-width=\"2\"><title>DRAM %.0f "
                        "GB/s (measured)</title></line>", sx(&a, xs), sy(&a, bw * xs),
                        sx(&a, xr), sy(&a, peak), bw);
        kopt_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#1565c0\" transform=\"rotate("
                        "-%.1f %.1f %.1f)\">DRAM %.0f GB/s</text>", sx(&a, xs) + 6,
                        sy(&a, bw * xs) - 6,
                        atan2(sy(&a, bw * xs) - sy(&a, peak), sx(&a, xr) - sx(&a, xs)) * 180 /
                        M_PI, sx(&a, xs) + 6, sy(&a, bw * xs) - 6, bw);
        for (size_t k = 0; k < json_array_size(g) && k < 7; k++) {
            double gf = json_number_value(json_array_get(g, k));
            int measured = (int)json_integer_value(json_array_get(m, k));
            if (gf <= 0)
                continue;
            nceil++;
            kopt_buf_printf(b, "<line class=\"roof compute\" x1=\"%.1f\" y1=\"%.1f\" "
                            "x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" stroke-width=\"1.5\"%s>"
                            "<title>%s %.0f GFLOP/s (%s)</title></line><text x=\"%.1f\" "
                            "y=\"%.1f\">%s %.0f%s</text>", sx(&a, gf / bw), sy(&a, gf),
                            RW - MR, sy(&a, gf), measured ? "" : " stroke-dasharray=\"4 3\"",
                            compute_names[k], gf, measured ? "measured" : "spec",
                            RW - MR + 4, sy(&a, gf) + 4, compute_names[k], gf,
                            measured ? "" : " (spec)");
        }
    }
    for (int i = 0; i < n; i++) {
        kopt_buf_printf(b, "<circle class=\"pt %s\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\" "
                        "fill-opacity=\"0.8\" data-row=\"%s\"><title>", pts[i].cls,
                        sx(&a, pts[i].x), sy(&a, pts[i].y),
                        strcmp(pts[i].cls, "eval") == 0 ? "#e65100" : "#6a1b9a", pts[i].row);
        esc(b, pts[i].label);
        kopt_buf_printf(b, "</title></circle>");
    }
    kopt_buf_printf(b, "</svg>\n<p class=\"note\">Ceilings of ");
    esc(b, dev ? str(dev, "name") : "no stored device");
    kopt_buf_printf(b, " (solid: measured on the device; dashed: spec-derived), %d compute "
                    "ceiling(s). Orange: evaluated candidates (the problem's work at the timed "
                    "sizes over the median time); purple: profiled kernel launches (DRAM bytes "
                    "and FP32/FP64 FLOP counted by the profiler; tensor-core work is not "
                    "counted). Hover for values, click to find the row. %d point(s)",
                    nceil, n);
    if (unplaced)
        kopt_buf_printf(b, "; %d item(s) not placed (no FLOP or no bytes counted)", unplaced);
    kopt_buf_printf(b, ".</p>\n");
    free(pts);
}

/* A table row's start: its id (PREFIX-ID, what roofline points name), the item's id,
 * problem and candidate cells. */
static void row_start(kopt_buf *b, const char *prefix, json_t *e)
{
    long long id = (long long)json_integer_value(json_object_get(e, "id"));

    kopt_buf_printf(b, "<tr id=\"%s-%lld\"><td>%lld</td><td>", prefix, id, id);
    esc(b, str(e, "problem"));
    kopt_buf_printf(b, "</td><td>");
    esc(b, cand_name(e));
    kopt_buf_printf(b, "</td>");
}

/* ---- evaluations and profiles ----------------------------------------------------------- */

int kopt__report_has_evals(json_t *doc)
{
    return json_array_size(json_object_get(doc, "evaluations")) +
           json_array_size(json_object_get(doc, "profiles")) > 0;
}

void kopt__report_evals(kopt_buf *b, json_t *doc)
{
    json_t *evs = json_object_get(doc, "evaluations"), *pfs = json_object_get(doc, "profiles");
    json_t *e;
    size_t i;

    if (json_array_size(evs)) {
        kopt_buf_printf(b, "<table class=\"evals\"><tr><th>#</th><th>problem</th><th>candidate"
                        "</th><th>verdict</th><th>median ms</th><th>speedup</th><th>%% of "
                        "bound</th><th>GB/s</th><th>GFLOP/s</th><th>tag</th></tr>\n");
        json_array_foreach(evs, i, e) {
            const char *v = str(e, "verdict");
            row_start(b, "eval", e);
            kopt_buf_printf(b, "<td class=\"%s\">", strcmp(v, "OK") == 0 ? "ok" :
                            strcmp(v, "SKIPPED") == 0 ? "" : "bad");
            esc(b, v);
            kopt_buf_printf(b, "</td>");
            num_cell(b, json_object_get(e, "median_ms"), 4, "");
            num_cell(b, json_object_get(e, "speedup"), 2, "x");
            num_cell(b, json_object_get(e, "pct_of_bound"), 1, "");
            num_cell(b, json_object_get(e, "achieved_gbs"), 0, "");
            num_cell(b, json_object_get(e, "achieved_gflops"), 1, "");
            kopt_buf_printf(b, "<td>");
            esc(b, str(e, "tag"));
            kopt_buf_printf(b, "</td></tr>\n");
        }
        kopt_buf_printf(b, "</table>\n");
    }
    if (json_array_size(pfs)) {
        kopt_buf_printf(b, "<h3>Profiles</h3><table class=\"profiles\"><tr><th>#</th><th>"
                        "problem</th><th>candidate</th><th>metrics</th><th>median ms</th><th>"
                        "kernel launches</th><th>findings</th><th>evaluation</th></tr>\n");
        json_array_foreach(pfs, i, e) {
            row_start(b, "prof", e);
            kopt_buf_printf(b, "<td>");
            esc(b, str(e, "source"));
            kopt_buf_printf(b, "</td><td class=\"n\">");
            num(b, json_object_get(e, "median_ms"), 4, "");
            kopt_buf_printf(b, "</td><td class=\"n\">%zu</td><td class=\"n\">%zu</td><td>%lld"
                            "</td></tr>\n", json_array_size(json_object_get(e, "metrics")),
                            json_array_size(json_object_get(e, "findings")),
                            (long long)json_integer_value(json_object_get(e, "eval_id")));
        }
        kopt_buf_printf(b, "</table>\n");
    }
}

/* ---- findings ----------------------------------------------------------------------------- */

int kopt__report_has_findings(json_t *doc)
{
    json_t *p;
    size_t i;

    json_array_foreach(json_object_get(doc, "profiles"), i, p)
        if (json_array_size(json_object_get(p, "findings")))
            return 1;
    return 0;
}

typedef struct ranked {
    json_t *profile, *finding;
    double gain;
} ranked;

static int by_gain(const void *x, const void *y)
{
    double a = ((const ranked *)x)->gain, b = ((const ranked *)y)->gain;
    return a < b ? 1 : a > b ? -1 : 0;
}

/* The resolution of `tool` fired on profile `pid`, recorded by a later profile. */
static json_t *resolution_of(json_t *doc, int64_t pid, const char *tool, json_t **later)
{
    json_t *p, *r;
    size_t i, j;

    json_array_foreach(json_object_get(doc, "profiles"), i, p)
        json_array_foreach(json_object_get(p, "resolutions"), j, r)
            if (json_integer_value(json_object_get(r, "earlier_profile")) == pid &&
                strcmp(str(r, "tool"), tool) == 0) {
                *later = p;
                return r;
            }
    return NULL;
}

void kopt__report_findings(kopt_buf *b, json_t *doc)
{
    json_t *p, *f;
    size_t i, j, n = 0, cap = 0;
    ranked *all;

    json_array_foreach(json_object_get(doc, "profiles"), i, p)
        cap += json_array_size(json_object_get(p, "findings"));
    if (!(all = calloc(cap + 1, sizeof(*all))))
        return;
    json_array_foreach(json_object_get(doc, "profiles"), i, p)
        json_array_foreach(json_object_get(p, "findings"), j, f) {
            all[n].profile = p;
            all[n].finding = f;
            all[n++].gain = json_number_value(json_object_get(f, "gain"));
        }
    qsort(all, n, sizeof(*all), by_gain);
    kopt_buf_printf(b, "<p>What the micro-tools found, ranked by predicted gain (the fraction "
                    "of the candidate's time a fix is expected to save). Realized: measured "
                    "when a later profiled candidate no longer triggers the tool (1 - its "
                    "time / this one's).</p>\n<table class=\"findings\"><tr><th>rank</th><th>"
                    "profile</th><th>tool</th><th>kernel</th><th>finding</th><th>predicted"
                    "</th><th>realized</th><th>confidence</th></tr>\n");
    for (i = 0; i < n; i++) {
        json_t *later = NULL, *r;
        int64_t pid = json_integer_value(json_object_get(all[i].profile, "id"));
        f = all[i].finding;
        r = resolution_of(doc, pid, str(f, "tool"), &later);
        kopt_buf_printf(b, "<tr class=\"finding\"><td class=\"n\">%zu</td><td>%lld ", i + 1,
                        (long long)pid);
        esc(b, cand_name(all[i].profile));
        kopt_buf_printf(b, "</td><td>");
        esc(b, str(f, "tool"));
        kopt_buf_printf(b, "</td><td>");
        esc(b, str(f, "kernel"));
        kopt_buf_printf(b, "</td><td>");
        esc(b, str(f, "title"));
        kopt_buf_printf(b, "</td><td class=\"n\">%.0f%%</td><td class=\"n\">", all[i].gain * 100);
        if (r && json_is_number(json_object_get(r, "realized_gain"))) {
            kopt_buf_printf(b, "%.0f%% <span class=\"note\">(profile %lld)</span>",
                            json_number_value(json_object_get(r, "realized_gain")) * 100,
                            (long long)json_integer_value(json_object_get(later, "id")));
        } else if (r) {
            kopt_buf_printf(b, "resolved, not timed");
        } else {
            kopt_buf_printf(b, "<span class=\"note\">not resolved here</span>");
        }
        kopt_buf_printf(b, "</td><td class=\"n\">");
        num(b, json_object_get(f, "confidence"), 2, "");
        kopt_buf_printf(b, "</td></tr>\n");
    }
    kopt_buf_printf(b, "</table>\n");
    free(all);
}

/* ---- tuning --------------------------------------------------------------------------------- */

int kopt__report_has_tuning(json_t *doc)
{
    return json_array_size(json_object_get(doc, "tune_runs")) > 0;
}

#define TW 780.0
#define TH 300.0

/* Best-so-far (step line) over every correct evaluation (dots), in evaluation order. */
static void best_chart(kopt_buf *b, json_t *tr, const char *field, size_t idx)
{
    json_t *evs = json_object_get(tr, "evals"), *e;
    size_t i, n = json_array_size(evs);
    double lo = INFINITY, hi = 0, best = INFINITY;
    int nok = 0, nfail = 0;
    kopt_buf path = KOPT_BUF_INIT;

    json_array_foreach(evs, i, e) {
        double v = json_number_value(json_object_get(e, field));
        if (strcmp(str(e, "state"), "ok") != 0 || v <= 0)
            continue;
        lo = fmin(lo, v);
        hi = fmax(hi, v);
    }
    if (!(hi > 0)) {
        kopt_buf_printf(b, "<p>No correct configuration was evaluated.</p>\n");
        return;
    }
    if (hi / lo < 1.01)
        hi = lo * 1.01;
    kopt_buf_printf(b, "<svg class=\"tune-chart\" id=\"tune-chart-%zu\" width=\"%.0f\" "
                    "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" xmlns=\"http://www.w3.org/2000/"
                    "svg\">", idx, TW, TH, TW, TH);
#define TX(k) (ML + ((double)(k) + 0.5) / (double)n * (TW - ML - 20))
#define TY(v) (TH - MB - (log10(v) - log10(lo)) / (log10(hi) - log10(lo)) * (TH - MT - MB))
    kopt_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\"/>"
                    "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.4g</text><text x=\"%.1f\" "
                    "y=\"%.1f\" text-anchor=\"end\">%.4g</text><text x=\"%.1f\" y=\"%.1f\" "
                    "text-anchor=\"middle\">evaluation (in the order run, %zu in all)</text>"
                    "<text transform=\"translate(14,%.1f) rotate(-90)\" text-anchor=\"middle\">"
                    "%s (log)</text>", ML, TH - MB, TW - 20, TH - MB, ML - 4, TY(lo) + 4, lo,
                    ML - 4, TY(hi) + 4, hi, (ML + TW) / 2, TH - 10, n, (MT + TH - MB) / 2,
                    strcmp(field, "energy_mj") == 0 ? "energy mJ" : "time ms");
    json_array_foreach(evs, i, e) {
        double v = json_number_value(json_object_get(e, field));
        if (strcmp(str(e, "state"), "ok") != 0 || v <= 0) {
            if (strcmp(str(e, "state"), "pruned") != 0) {
                nfail++;
                kopt_buf_printf(b, "<path class=\"fail\" d=\"M%.1f %.1fl6 6m0 -6l-6 6\" "
                                "stroke=\"#c62828\"><title>", TX(i) - 3, TH - MB + 4);
                esc(b, str(e, "label"));
                kopt_buf_printf(b, ": ");
                esc(b, str(e, "verdict"));
                kopt_buf_printf(b, "</title></path>");
            }
            continue;
        }
        if (best < INFINITY)   /* a step: across at the old best, then down to a new one */
            kopt_buf_printf(&path, " L%.1f %.1f", TX(i), TY(best));
        if (!(best < INFINITY) || v < best)
            kopt_buf_printf(&path, "%s%.1f %.1f", best < INFINITY ? " L" : "M", TX(i), TY(v));
        best = fmin(best, v);
        nok++;
        kopt_buf_printf(b, "<circle class=\"ev\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#90a4ae\">"
                        "<title>#%zu ", TX(i), TY(v), i + 1);
        esc(b, str(e, "label"));
        kopt_buf_printf(b, ": %.4g</title></circle>", v);
    }
    kopt_buf_printf(b, "<path class=\"best\" d=\"%s\" fill=\"none\" stroke=\"#e65100\" "
                    "stroke-width=\"2\"/></svg>\n<p class=\"note\">%d correct evaluation(s) "
                    "(dots), %d failed (red crosses); the orange line is the best so far.</p>\n",
                    kopt_buf_cstr(&path), nok, nfail);
    kopt_buf_free(&path);
#undef TX
#undef TY
}

/* One parameter's explored values: "NAME=V" parts of each label. */
typedef struct pval { char name[48]; long long v; int tried, ok; } pval;

static int by_name_value(const void *x, const void *y)
{
    const pval *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    return c ? c : (a->v > b->v) - (a->v < b->v);
}

static void param_space(kopt_buf *b, json_t *tr)
{
    json_t *e;
    size_t i, n = 0, cap = 64;
    pval *pv = calloc(cap, sizeof(*pv));
    const char *best = str(tr, "best_label");

    json_array_foreach(json_object_get(tr, "evals"), i, e) {
        char lab[512], *save = NULL;
        snprintf(lab, sizeof(lab), "%s", str(e, "label"));
        for (char *t = strtok_r(lab, ",", &save); t && pv; t = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(t, '=');
            size_t k;
            if (!eq)
                continue;
            *eq = '\0';
            for (k = 0; k < n; k++)
                if (strcmp(pv[k].name, t) == 0 && pv[k].v == atoll(eq + 1))
                    break;
            if (k == n) {
                if (n == cap) {
                    pval *grown = realloc(pv, 2 * cap * sizeof(*pv));
                    if (!grown)
                        break;
                    pv = grown;
                    cap *= 2;
                }
                memset(&pv[n], 0, sizeof(pv[n]));
                snprintf(pv[n].name, sizeof(pv[n].name), "%s", t);
                pv[n++].v = atoll(eq + 1);
            }
            pv[k].tried++;
            pv[k].ok += strcmp(str(e, "state"), "ok") == 0;
        }
    }
    if (!pv)
        return;
    qsort(pv, n, sizeof(*pv), by_name_value);
    kopt_buf_printf(b, "<h4>Parameter space explored</h4><p class=\"note\">For each parameter, "
                    "each value tried: how many evaluated configurations had it (green: "
                    "correct). The winner's value is bold.</p><table class=\"space\"><tr><th>"
                    "param</th><th>values tried (configurations: correct/all)</th></tr>\n");
    for (i = 0; i < n; i++) {
        char want[64];
        int is_best;
        if (i == 0 || strcmp(pv[i].name, pv[i - 1].name) != 0) {
            kopt_buf_printf(b, "%s<tr><th>", i ? "</td></tr>\n" : "");
            esc(b, pv[i].name);
            kopt_buf_printf(b, "</th><td>");
        }
        snprintf(want, sizeof(want), "%s=%lld", pv[i].name, pv[i].v);
        is_best = strstr(best, want) && (strstr(best, want) == best ||
                                         strstr(best, want)[-1] == ',') &&
                  (strstr(best, want)[strlen(want)] == ',' ||
                   strstr(best, want)[strlen(want)] == '\0');
        kopt_buf_printf(b, "<span class=\"pv\" style=\"display:inline-block;margin:2px 6px 2px "
                        "0;padding:1px 4px;border:1px solid #ccc;background:linear-gradient(90deg,"
                        "#c8e6c9 %d%%,#fff 0)\">%s%lld%s <span class=\"note\">%d/%d</span></span>",
                        pv[i].tried ? 100 * pv[i].ok / pv[i].tried : 0, is_best ? "<b>" : "",
                        pv[i].v, is_best ? "</b>" : "", pv[i].ok, pv[i].tried);
    }
    if (n)
        kopt_buf_printf(b, "</td></tr>\n");
    kopt_buf_printf(b, "</table>\n");
    free(pv);
}

void kopt__report_tuning(kopt_buf *b, json_t *doc)
{
    json_t *tr;
    size_t i;

    json_array_foreach(json_object_get(doc, "tune_runs"), i, tr) {
        const char *obj = str(tr, "objective");
        kopt_buf_printf(b, "<h3>Tuning run %lld: ", (long long)json_integer_value(
                        json_object_get(tr, "id")));
        esc(b, str(tr, "problem"));
        kopt_buf_printf(b, " at ");
        esc(b, str(tr, "sizes"));
        kopt_buf_printf(b, "</h3><table class=\"tune\">");
        row(b, "template", str(tr, "template_path"));
        row(b, "device (recorded)", str(tr, "device"));
        row(b, "strategy", str(tr, "strategy"));
        row(b, "options", str(tr, "options"));
        row(b, "objective", obj);
        kopt_buf_printf(b, "<tr><th>seed / budget</th><td>%lld / %lld</td></tr>",
                        (long long)json_integer_value(json_object_get(tr, "seed")),
                        (long long)json_integer_value(json_object_get(tr, "max_evals")));
        row(b, "stopped", json_integer_value(json_object_get(tr, "finished")) ?
            str(tr, "stop") : "unfinished (resumable)");
        row(b, "best", str(tr, "best_label"));
        kopt_buf_printf(b, "<tr><th>best value</th><td>");
        num(b, json_object_get(tr, "best_value"), 4, strcmp(obj, "energy") == 0 ? " mJ" : " ms");
        kopt_buf_printf(b, "</td></tr></table>\n");
        best_chart(b, tr, strcmp(obj, "energy") == 0 ? "energy_mj" : "time_ms", i);
        param_space(b, tr);
    }
}
