/* The report's section of PyTorch programs: each stored program profile (source "program":
 * kopt profile of a PyTorch reference or ModelNew, or the root of kopt optimize on a
 * KernelBench problem) as its kernel table (kernel, origin, torch op, launch, time, share of
 * the GPU time, DRAM rate, class), then the forward's time, the host gaps, the fusion bytes
 * and the program's class, from the analysis stored with the record. */
#include "report_int.h"

#include <string.h>

static int is_program(json_t *p)
{
    return strcmp(kopt__report_str(p, "source"), "program") == 0 &&
           json_is_object(json_object_get(json_object_get(p, "metrics"), "analysis"));
}

int kopt__report_has_programs(json_t *doc)
{
    json_t *p;
    size_t i;

    json_array_foreach(json_object_get(doc, "profiles"), i, p)
        if (is_program(p))
            return 1;
    return 0;
}

static void dim3(kopt_buf *b, json_t *v)
{
    kopt_buf_printf(b, "<td>%lldx%lldx%lld</td>",
                    (long long)json_integer_value(json_array_get(v, 0)),
                    (long long)json_integer_value(json_array_get(v, 1)),
                    (long long)json_integer_value(json_array_get(v, 2)));
}

static void text_cell(kopt_buf *b, json_t *o, const char *key)
{
    kopt_buf_printf(b, "<td>");
    kopt__report_esc(b, kopt__report_str(o, key));
    kopt_buf_printf(b, "</td>");
}

static void program(kopt_buf *b, json_t *p)
{
    json_t *a = json_object_get(json_object_get(p, "metrics"), "analysis"), *k;
    json_t *gaps = json_object_get(a, "host_gaps"), *fusion = json_object_get(a, "fusion");
    size_t i;

    kopt_buf_printf(b, "<h3>Profile %lld: ", (long long)json_integer_value(json_object_get(p, "id")));
    kopt__report_esc(b, kopt__report_str(p, "problem"));
    kopt_buf_printf(b, ", ");
    kopt__report_esc(b, kopt__report_str(a, "subject"));
    kopt_buf_printf(b, "</h3>\n<table class=\"program\"><tr><th>#</th><th>kernel</th><th>origin"
                    "</th><th>op</th><th>grid</th><th>block</th><th>regs</th><th>time ms</th>"
                    "<th>%% gpu</th><th>GB/s</th><th>class</th></tr>\n");
    json_array_foreach(json_object_get(a, "kernels"), i, k) {
        kopt_buf_printf(b, "<tr><td>%zu</td><td title=\"", i + 1);
        kopt__report_esc(b, kopt__report_str(k, "name"));
        kopt_buf_printf(b, "\">");
        kopt__report_esc(b, kopt__report_str(k, "short_name"));
        kopt_buf_printf(b, "</td>");
        text_cell(b, k, "origin");
        text_cell(b, k, "op");
        dim3(b, json_object_get(k, "grid"));
        dim3(b, json_object_get(k, "block"));
        kopt_buf_printf(b, "<td class=\"n\">%lld</td><td class=\"n\">",
                        (long long)json_integer_value(json_object_get(k, "registers")));
        kopt__report_num(b, json_object_get(k, "time_ms"), 4, "");
        kopt_buf_printf(b, "</td><td class=\"n\">%.1f</td><td class=\"n\">",
                        100 * json_number_value(json_object_get(k, "share")));
        kopt__report_num(b, json_object_get(k, "gbs"), 1, "");
        kopt_buf_printf(b, "</td>");
        text_cell(b, json_object_get(k, "class"), "final");
        kopt_buf_printf(b, "</tr>\n");
    }
    kopt_buf_printf(b, "</table>\n<p>forward ");
    kopt__report_num(b, json_object_get(a, "forward_ms"), 4, " ms");
    kopt_buf_printf(b, "; host gaps ");
    kopt__report_num(b, json_object_get(gaps, "ms"), 4, " ms");
    kopt_buf_printf(b, " (%.1f%% of the forward); fusion ",
                    100 * json_number_value(json_object_get(gaps, "share")));
    kopt__report_num(b, json_object_get(fusion, "bytes"), 0, " B");
    kopt_buf_printf(b, " beyond the compulsory (");
    kopt__report_num(b, json_object_get(fusion, "ms"), 4, " ms");
    kopt_buf_printf(b, " at the DRAM rate); class ");
    kopt__report_esc(b, kopt__report_str(json_object_get(a, "class"), "program"));
    kopt_buf_printf(b, " by time.</p>\n");
}

void kopt__report_programs(kopt_buf *b, json_t *doc)
{
    json_t *p;
    size_t i;

    kopt_buf_printf(b, "<p class=\"note\">The kernels PyTorch ran in one forward of each profiled "
                    "program (torch.profiler's trace, ncu's metrics joined by launch order); "
                    "the findings are in the Findings section.</p>\n");
    json_array_foreach(json_object_get(doc, "profiles"), i, p)
        if (is_program(p))
            program(b, p);
}
