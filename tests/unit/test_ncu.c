/*
 * Unit tests of the ncu metric source (src/profile/ncu.c): the raw-page and details-page
 * CSV parsers on the fixtures in tests/data/ncu/ (hand-written in ncu's format; see its
 * README.md) and on malformed text, each error naming file:line; kopt_profile_kernel; and
 * the ncu command lines (with a stand-in ncu executable in a temporary folder).
 */
#include "ktest.h"

#include "kopt/profile.h"

#include <dirent.h>
#include <sys/stat.h>

static kopt_ctx *ctx;

static char *fixture_path(const char *name)
{
    static char path[1024];
    snprintf(path, sizeof(path), "%s/ncu/%s", KOPT_TEST_DATA_DIR, name);
    return path;
}

/* Parse a raw-page fixture; errors are left on ctx. The path given to the parser is the
 * file's base name, so messages read "name.csv:LINE: ...". */
static kopt_status parse_raw(const char *name, kopt_profile **out)
{
    char *text = ktest_read_file(fixture_path(name));
    kopt_status rc;

    *out = NULL;
    if (!text) {
        KTEST_FAIL("cannot read the fixture %s", fixture_path(name));
        return KOPT_E_IO;
    }
    rc = kopt_ncu_parse_raw_csv(out, ctx, text, name);
    free(text);
    return rc;
}

static double metric(const kopt_kernel_profile *k, const char *name)
{
    double v = -12345;
    if (!kopt_metrics_get(&k->metrics, name, &v))
        KTEST_FAIL("metric %s missing from %s", name, k->kernel);
    return v;
}

/* ---- raw page ------------------------------------------------------------------------- */

static void test_raw_base_units(void)
{
    kopt_profile *p = NULL;
    const kopt_kernel_profile *k;
    double v;

    if (!CHECK_EQ_INT(parse_raw("raw_base_units.csv", &p), KOPT_OK)) {
        printf("  %s\n", kopt_errmsg(ctx));
        return;
    }
    CHECK_EQ_STR(p->source, "ncu");
    if (!CHECK_EQ_INT(p->nkernels, 2))
        goto out;
    k = &p->kernels[0];
    CHECK_EQ_STR(k->kernel, "softmax_fast(const float *, float *, int, int)");   /* quoted commas */
    CHECK_EQ_INT(k->block[0], 256);
    CHECK_EQ_INT(k->block[1], 1);
    CHECK_EQ_INT(k->grid[0], 8192);
    CHECK_EQ_INT(k->grid[2], 1);
    CHECK_NEAR(metric(k, "dram__bytes_read.sum"), 134217728.0, 0);        /* "134,217,728" */
    CHECK_NEAR(metric(k, "dram__bytes_write.sum"), 134217856.0, 0);
    CHECK_NEAR(metric(k, "gpu__time_duration.sum"), 65120.0, 0);           /* ns */
    CHECK_NEAR(metric(k, "dram__bytes_read.sum.per_second"), 2061083292383.29, 1e-3);
    CHECK_NEAR(metric(k, "sm__throughput.avg.pct_of_peak_sustained_elapsed"), 23.41, 1e-12);
    CHECK_NEAR(metric(k, "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"),
               11.72, 1e-12);
    /* Text-valued attributes are not metrics; the non-metric columns neither. */
    CHECK(!kopt_metrics_get(&k->metrics, "device__attribute_display_name", &v));
    CHECK(!kopt_metrics_get(&k->metrics, "launch__func_cache_config", &v));
    CHECK(!kopt_metrics_get(&k->metrics, "Process ID", &v));
    CHECK_EQ_INT(k->dyn_smem, 0);

    k = &p->kernels[1];
    CHECK_EQ_STR(k->kernel, "void tiled<64, 4>(const float *, float *)");
    CHECK_EQ_INT(k->block[0], 128);
    CHECK_EQ_INT(k->block[1], 2);
    CHECK_EQ_INT(k->grid[1], 32);
    CHECK_EQ_INT(k->dyn_smem, 8192);                                        /* "8,192" byte */
    CHECK_NEAR(metric(k, "dram__bytes_read.sum"), 1024.0, 0);
    CHECK(!kopt_metrics_get(&k->metrics,                                     /* "n/a" */
          "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", &v));
out:
    kopt_profile_free(p);
}

static void test_raw_scaled_units(void)
{
    kopt_profile *p = NULL;
    const kopt_kernel_profile *k;

    if (!CHECK_EQ_INT(parse_raw("raw_scaled_units.csv", &p), KOPT_OK)) {
        printf("  %s\n", kopt_errmsg(ctx));
        return;
    }
    if (!CHECK_EQ_INT(p->nkernels, 2))
        goto out;
    k = &p->kernels[0];
    CHECK_NEAR(metric(k, "dram__bytes_read.sum"), 134.22e6, 1e-3);             /* Mbyte */
    CHECK_NEAR(metric(k, "dram__bytes_write.sum"), 1024.5e3, 1e-6);            /* "1,024.50" Kbyte */
    CHECK_NEAR(metric(k, "gpu__time_duration.sum"), 65120.0, 1e-6);            /* usecond -> ns */
    CHECK_NEAR(metric(k, "dram__bytes_read.sum.per_second"), 2061.08e9, 1.0);  /* Gbyte/second */
    CHECK_NEAR(metric(k, "sm__cycles_elapsed.avg.per_second"), 1.59e9, 1e-3); /* cycle/nsecond */
    CHECK_NEAR(metric(k, "sm__throughput.avg.pct_of_peak_sustained_elapsed"), 23.41, 1e-12);
    CHECK_NEAR(metric(k, "smsp__cycles_active.avg"), 103550.0, 1e-6);          /* Kcycle */
    CHECK_EQ_INT(k->dyn_smem, 1500);                                           /* 1.50 Kbyte */
    k = &p->kernels[1];
    CHECK_EQ_STR(k->kernel, "sgemm_ref");
    CHECK_NEAR(metric(k, "gpu__time_duration.sum"), 3931300.0, 1e-3);          /* "3,931.30" us */
    CHECK_NEAR(metric(k, "smsp__cycles_active.avg"), 7784310.0, 1e-3);
out:
    kopt_profile_free(p);
}

static void test_raw_crlf_and_msecond(void)
{
    kopt_profile *p = NULL;

    if (!CHECK_EQ_INT(parse_raw("raw_crlf.csv", &p), KOPT_OK)) {
        printf("  %s\n", kopt_errmsg(ctx));
        return;
    }
    if (CHECK_EQ_INT(p->nkernels, 1)) {
        CHECK_EQ_STR(p->kernels[0].kernel, "crlf_kernel");
        CHECK_NEAR(metric(&p->kernels[0], "gpu__time_duration.sum"), 1.5e6, 1e-6);  /* msecond */
        CHECK_NEAR(metric(&p->kernels[0], "dram__bytes_read.sum"), 2e9, 1e-3);      /* Gbyte */
    }
    kopt_profile_free(p);
}

/* A log with one table per profiled process (reference worker, then candidate worker),
 * with different column orders and ncu's ==PROF== lines between them. */
static void test_raw_two_processes(void)
{
    kopt_profile *p = NULL;

    if (!CHECK_EQ_INT(parse_raw("raw_two_processes.csv", &p), KOPT_OK)) {
        printf("  %s\n", kopt_errmsg(ctx));
        return;
    }
    if (!CHECK_EQ_INT(p->nkernels, 3))
        goto out;
    CHECK_STR_CONTAINS(p->kernels[0].kernel, "softmax_ref");
    CHECK_NEAR(metric(&p->kernels[0], "gpu__time_duration.sum"), 131744.0, 0);
    CHECK_NEAR(metric(&p->kernels[0], "dram__bytes_read.sum"), 268435456.0, 0);
    CHECK_STR_CONTAINS(p->kernels[1].kernel, "softmax_fast");
    CHECK_NEAR(metric(&p->kernels[1], "gpu__time_duration.sum"), 65120.0, 0);
    CHECK_NEAR(metric(&p->kernels[1], "dram__bytes_read.sum"), 134217728.0, 0);
    CHECK_EQ_INT(p->kernels[2].grid[0], 333);
    CHECK_NEAR(metric(&p->kernels[2], "gpu__time_duration.sum"), 3008.0, 0);
    /* By name: the first match; without a name: the longest-running launch. */
    CHECK(kopt_profile_kernel(p, "softmax_fast") == &p->kernels[1]);
    CHECK(kopt_profile_kernel(p, "softmax_ref") == &p->kernels[0]);
    CHECK(kopt_profile_kernel(p, NULL) == &p->kernels[0]);
    CHECK(kopt_profile_kernel(p, "no_such_kernel") == NULL);
    CHECK(kopt_profile_kernel(NULL, "softmax") == NULL);
out:
    kopt_profile_free(p);
}

/* ---- details page --------------------------------------------------------------------- */

static void test_details_rules(void)
{
    kopt_profile *p = NULL;
    char *text = ktest_read_file(fixture_path("details.csv"));
    const kopt_ncu_rule *r;

    if (!CHECK(text != NULL))
        return;
    if (!CHECK_EQ_INT(parse_raw("raw_two_processes.csv", &p), KOPT_OK))
        goto out;
    if (!CHECK_EQ_INT(kopt_ncu_parse_details_csv(p, ctx, text, "details.csv"), KOPT_OK)) {
        printf("  %s\n", kopt_errmsg(ctx));
        goto out;
    }
    if (!CHECK_EQ_INT(p->nrules, 4))           /* metric rows are skipped */
        goto out;
    r = &p->rules[0];
    CHECK_STR_CONTAINS(r->kernel, "softmax_ref");
    CHECK_EQ_STR(r->section, "GPU Speed Of Light Throughput");
    CHECK_EQ_STR(r->rule, "SOLBottleneck");
    CHECK_EQ_STR(r->type, "OPT");
    CHECK_EQ_STR(r->speedup_type, "local");
    CHECK_NEAR(r->speedup_pct, 47.12, 1e-12);
    CHECK_STR_CONTAINS(r->description, "latency");
    r = &p->rules[1];                          /* "" quotes, commas and a line break inside */
    CHECK_EQ_STR(r->rule, "CPIStall");
    CHECK_STR_CONTAINS(r->description, "\"long scoreboard\" dependency (L1TEX: global, local,\ntexture)");
    CHECK_EQ_STR(r->speedup_type, "global");
    CHECK_NEAR(r->speedup_pct, 71.3, 1e-12);
    r = &p->rules[2];
    CHECK_EQ_STR(r->type, "INF");
    CHECK_EQ_STR(r->speedup_type, "");
    CHECK_NEAR(r->speedup_pct, 0, 0);
    r = &p->rules[3];
    CHECK_STR_CONTAINS(r->kernel, "softmax_fast");
    CHECK_EQ_STR(r->type, "WRN");
    CHECK_NEAR(r->speedup_pct, 1234.5, 1e-9);  /* thousands separator */
    /* The kernels are untouched; a second parse appends. */
    CHECK_EQ_INT(p->nkernels, 3);
    CHECK_EQ_INT(kopt_ncu_parse_details_csv(p, ctx, text, "details.csv"), KOPT_OK);
    CHECK_EQ_INT(p->nrules, 8);
    CHECK_EQ_STR(p->rules[7].rule, "MemoryL2Compression");
out:
    free(text);
    kopt_profile_free(p);
}

/* ---- malformed input: each message names file:line ------------------------------------- */

typedef struct bad_case {
    const char *file;
    kopt_status status;
    const char *message;       /* expected prefix of kopt_errmsg */
} bad_case;

static void test_raw_malformed_fixtures(void)
{
    static const bad_case cases[] = {
        {"bad_empty.csv", KOPT_E_INVALID, "bad_empty.csv:1: no CSV header row"},
        {"bad_only_prof_lines.csv", KOPT_E_INVALID, "bad_only_prof_lines.csv:3: no CSV header row"},
        {"bad_header_only.csv", KOPT_E_INVALID,
         "bad_header_only.csv:1: header row but no units row"},
        {"bad_no_kernels.csv", KOPT_E_NOT_FOUND, "bad_no_kernels.csv:2: no kernel rows"},
        {"bad_unbalanced_quote.csv", KOPT_E_INVALID,
         "bad_unbalanced_quote.csv:3: unexpected '(' after the closing quote of field 3"},
        {"bad_short_row.csv", KOPT_E_INVALID,
         "bad_short_row.csv:4: row has 5 fields, header has 7"},
        {"bad_not_number.csv", KOPT_E_INVALID,
         "bad_not_number.csv:3: column \"dram__bytes_read.sum\" (byte): \"12x4\" is not a number"},
        {"bad_truncated_in_field.csv", KOPT_E_INVALID,
         "bad_truncated_in_field.csv:4: unterminated quoted field (field 5"},
        {"bad_truncated_row.csv", KOPT_E_INVALID,
         "bad_truncated_row.csv:4: row has 3 fields, header has 7 (text truncated?)"},
    };

    for (int i = 0; i < KTEST_COUNT(cases); i++) {
        kopt_profile *p = NULL;
        kopt_status rc = parse_raw(cases[i].file, &p);
        if (!CHECK_EQ_INT(rc, cases[i].status))
            printf("  %s: %s\n", cases[i].file, kopt_errmsg(ctx));
        CHECK(p == NULL);
        if (!CHECK(strncmp(kopt_errmsg(ctx), cases[i].message, strlen(cases[i].message)) == 0))
            printf("  got:      %s\n  expected: %s...\n", kopt_errmsg(ctx), cases[i].message);
        kopt_profile_free(p);
    }
}

static void expect_raw_error(const char *text, kopt_status status, const char *message)
{
    kopt_profile *p = NULL;
    kopt_status rc = kopt_ncu_parse_raw_csv(&p, ctx, text, "inline.csv");

    CHECK_EQ_INT(rc, status);
    CHECK(p == NULL);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), message);
    kopt_profile_free(p);
}

static void test_raw_malformed_inline(void)
{
    const char *hdr = "\"ID\",\"Kernel Name\",\"Block Size\",\"Grid Size\","
                      "\"sm__throughput.avg.pct_of_peak_sustained_elapsed\"\n"
                      "\"\",\"\",\"\",\"\",\"%\"\n";
    kopt_buf b = KOPT_BUF_INIT;

    /* A decimal comma is refused, not read as 5 (or 0.5). */
    kopt_buf_printf(&b, "%s\"0\",\"k\",\"(1, 1, 1)\",\"(1, 1, 1)\",\"0,5\"\n", hdr);
    expect_raw_error(b.ptr, KOPT_E_INVALID, "inline.csv:3: column "
                     "\"sm__throughput.avg.pct_of_peak_sustained_elapsed\" (%): \"0,5\" is not a number");
    kopt_buf_free(&b);
    kopt_buf_printf(&b, "%s\"0\",\"k\",\"(1, 1, 1)\",\"(1, 1, 1)\",\"12,34,567\"\n", hdr);
    expect_raw_error(b.ptr, KOPT_E_INVALID, "inline.csv:3: column");
    kopt_buf_free(&b);
    /* A block size that is not (x, y, z). */
    kopt_buf_printf(&b, "%s\"0\",\"k\",\"(256, 1)\",\"(1, 1, 1)\",\"5\"\n", hdr);
    expect_raw_error(b.ptr, KOPT_E_INVALID,
                     "inline.csv:3: column \"Block Size\": \"(256, 1)\" is not \"(x, y, z)\"");
    kopt_buf_free(&b);
    /* A row longer than the header. */
    kopt_buf_printf(&b, "%s\"0\",\"k\",\"(1, 1, 1)\",\"(1, 1, 1)\",\"5\",\"6\"\n", hdr);
    expect_raw_error(b.ptr, KOPT_E_INVALID, "inline.csv:3: row has 6 fields, header has 5");
    kopt_buf_free(&b);
    /* A row where the units row should be. */
    expect_raw_error("\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"0\",\"k\",\"5\"\n",
                     KOPT_E_INVALID, "inline.csv:2: expected the units row");
    /* Not ncu's raw page at all. */
    expect_raw_error("a,b,c\n1,2,3\n", KOPT_E_INVALID,
                     "inline.csv:1: no \"Kernel Name\" column");
    /* Line numbers count the lines inside quoted fields. */
    expect_raw_error("\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"\",\"\",\"nsecond\"\n"
                     "\"0\",\"two\nlines\",\"5\"\n\"1\",\"k\"\n",
                     KOPT_E_INVALID, "inline.csv:5: row has 2 fields, header has 3");
    /* NULL text reads as empty. */
    expect_raw_error(NULL, KOPT_E_INVALID, "inline.csv:1: no CSV header row");
}

static void test_details_malformed(void)
{
    kopt_profile p;
    char *text = ktest_read_file(fixture_path("bad_details_speedup.csv"));

    memset(&p, 0, sizeof(p));
    if (!CHECK(text != NULL))
        return;
    CHECK_EQ_INT(kopt_ncu_parse_details_csv(&p, ctx, text, "bad_details_speedup.csv"),
                 KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "bad_details_speedup.csv:2: column \"Estimated "
                       "Speedup\": \"about 47\" is not a number");
    free(text);
    /* The raw page is not the details page. */
    text = ktest_read_file(fixture_path("raw_base_units.csv"));
    if (CHECK(text != NULL)) {
        CHECK_EQ_INT(kopt_ncu_parse_details_csv(&p, ctx, text, "raw_base_units.csv"),
                     KOPT_E_INVALID);
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), "raw_base_units.csv:4: no \"Rule Name\" column");
    }
    free(text);
    CHECK_EQ_INT(kopt_ncu_parse_details_csv(&p, ctx,
                 "\"Kernel Name\",\"Rule Name\",\"Rule Type\"\n\"k\",\"R\"\n", "d.csv"),
                 KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "d.csv:2: row has 2 fields, header has 3");
    CHECK_EQ_INT(kopt_ncu_parse_details_csv(&p, ctx, "", "d.csv"), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "d.csv:1: no CSV header row");
    /* Nothing was added by the failures but the first rule row before it failed: none. */
    CHECK_EQ_INT(p.nrules, 0);
    for (int i = 0; i < p.nrules; i++)
        free(p.rules[i].description);
    free(p.rules);
}

/* ---- fixtures recorded on a GPU (tests/data/ncu/h200/, made by record.sh) -------------- */

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Every recorded raw page parses, has a kernel with every metric kopt asked for and a
 * positive duration; its details page parses and has rule results. */
static void test_recorded_h200(void)
{
    char dir[1024], path[1200];
    DIR *d;
    struct dirent *e;
    int nfiles = 0;

    snprintf(dir, sizeof(dir), "%s/ncu/h200", KOPT_TEST_DATA_DIR);
    if (!(d = opendir(dir))) {
        KTEST_SKIP("no recorded fixtures in tests/data/ncu/h200 (see README.md there)");
        return;
    }
    while ((e = readdir(d))) {
        kopt_profile *p = NULL;
        char *text, *details;
        size_t n;

        if (!ends_with(e->d_name, ".raw.csv"))
            continue;
        nfiles++;
        if (!CHECK(snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < (int)sizeof(path)) ||
            !CHECK((text = ktest_read_file(path)) != NULL))
            continue;
        if (!CHECK_EQ_INT(kopt_ncu_parse_raw_csv(&p, ctx, text, e->d_name), KOPT_OK)) {
            printf("  %s\n", kopt_errmsg(ctx));
            free(text);
            continue;
        }
        CHECK(p->nkernels >= 1);
        for (int k = 0; k < p->nkernels; k++) {
            double v;
            CHECK(kopt_metrics_value(&p->kernels[k].metrics, "gpu__time_duration.sum", 0) > 0);
            for (int m = 0; kopt_metrics_rules[m]; m++)
                if (!CHECK(kopt_metrics_get(&p->kernels[k].metrics, kopt_metrics_rules[m], &v)))
                    printf("  %s: %s lacks %s\n", e->d_name, p->kernels[k].kernel,
                           kopt_metrics_rules[m]);
        }
        n = strlen(path) - strlen(".raw.csv");
        snprintf(path + n, sizeof(path) - n, ".details.csv");
        if (CHECK((details = ktest_read_file(path)) != NULL)) {
            if (!CHECK_EQ_INT(kopt_ncu_parse_details_csv(p, ctx, details, path), KOPT_OK))
                printf("  %s\n", kopt_errmsg(ctx));
            CHECK(p->nrules >= 1);
        }
        free(details);
        free(text);
        kopt_profile_free(p);
    }
    closedir(d);
    printf("  %d recorded raw page(s) checked\n", nfiles);
    CHECK(nfiles > 0);
}

/* ---- command lines ---------------------------------------------------------------------- */

static int argv_has(char **argv, const char *a, const char *b)
{
    for (int i = 0; argv && argv[i]; i++)
        if (strcmp(argv[i], a) == 0 && (!b || (argv[i + 1] && strcmp(argv[i + 1], b) == 0)))
            return 1;
    return 0;
}

static char *fake_ncu(const char *dir)
{
    char *path = ktest_write_file(dir, "ncu", "#!/bin/sh\nexit 0\n");
    if (path)
        chmod(path, 0755);
    return path;
}

static void test_ncu_argv(void)
{
    char *dir = ktest_tmpdir("ncu");
    char *ncu = dir ? fake_ncu(dir) : NULL;
    char *saved_path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    char **argv = NULL, *found = NULL;
    int argc = -1;
    kopt_ncu_opts o = KOPT_NCU_OPTS_INIT;
    static const char *const metrics[] = {"gpu__time_duration.sum", "dram__bytes_read.sum", NULL};

    if (!CHECK(ncu != NULL))
        goto out;
    setenv("KOPT_NCU", ncu, 1);
    o.metrics = metrics;
    o.kernel_regex = "^softmax_fast";
    o.launch_count = 2;
    o.log_file = "/tmp/x.csv";
    if (!CHECK_EQ_INT(kopt_ncu_argv(&argv, &argc, ctx, &o), KOPT_OK)) {
        printf("  %s\n", kopt_errmsg(ctx));
        goto out;
    }
    CHECK_EQ_STR(argv[0], ncu);
    CHECK(argc > 0 && argv[argc] == NULL);
    CHECK(argv_has(argv, "--target-processes", "all"));
    CHECK(argv_has(argv, "--clock-control", "none"));
    CHECK(argv_has(argv, "--metrics", "gpu__time_duration.sum,dram__bytes_read.sum"));
    CHECK(argv_has(argv, "-k", "regex:^softmax_fast"));
    CHECK(argv_has(argv, "-c", "2"));
    CHECK(!argv_has(argv, "-s", NULL));
    CHECK(argv_has(argv, "--csv", NULL));
    CHECK(argv_has(argv, "--page", "raw"));
    CHECK(argv_has(argv, "--log-file", "/tmp/x.csv"));
    CHECK(!argv_has(argv, "--set", NULL));
    CHECK(!argv_has(argv, "--nvtx", NULL));
    kopt_ncu_argv_free(argv);
    argv = NULL;

    /* Only the kernels of an NVTX push/pop range (a PyTorch program's one forward). */
    o.nvtx_range = "kopt_profile";
    CHECK_EQ_INT(kopt_ncu_argv(&argv, NULL, ctx, &o), KOPT_OK);
    CHECK(argv_has(argv, "--nvtx", NULL));
    CHECK(argv_has(argv, "--nvtx-include", "kopt_profile/"));
    kopt_ncu_argv_free(argv);
    argv = NULL;
    o.nvtx_range = NULL;

    /* Locked clocks, a set and sections, the details page, a skip count. */
    o.metrics = NULL;
    o.lock_clocks = 1;
    o.set = "full";
    o.sections = (const char *const[]){"SpeedOfLight", "Occupancy", NULL};
    o.page = "details";
    o.launch_skip = 3;
    CHECK_EQ_INT(kopt_ncu_argv(&argv, NULL, ctx, &o), KOPT_OK);
    CHECK(argv_has(argv, "--clock-control", "base"));
    CHECK(argv_has(argv, "--set", "full"));
    CHECK(argv_has(argv, "--section", "SpeedOfLight"));
    CHECK(argv_has(argv, "--section", "Occupancy"));
    CHECK(argv_has(argv, "--page", "details"));
    CHECK(argv_has(argv, "-s", "3"));
    CHECK(!argv_has(argv, "--metrics", NULL));
    kopt_ncu_argv_free(argv);
    argv = NULL;

    /* Export a report instead of CSV; then import it. */
    o.export_path = "/tmp/r.ncu-rep";
    CHECK_EQ_INT(kopt_ncu_argv(&argv, NULL, ctx, &o), KOPT_OK);
    CHECK(argv_has(argv, "-o", "/tmp/r.ncu-rep"));
    CHECK(argv_has(argv, "-f", NULL));
    CHECK(!argv_has(argv, "--csv", NULL));
    kopt_ncu_argv_free(argv);
    argv = NULL;
    CHECK_EQ_INT(kopt_ncu_import_argv(&argv, &argc, ctx, ncu, "details"), KOPT_OK);
    CHECK_EQ_STR(argv[0], ncu);
    CHECK(argv_has(argv, "-i", ncu));
    CHECK(argv_has(argv, "--csv", NULL));
    CHECK(argv_has(argv, "--page", "details"));
    CHECK(argc > 0 && argv[argc] == NULL);
    kopt_ncu_argv_free(argv);
    argv = NULL;
    CHECK_EQ_INT(kopt_ncu_import_argv(&argv, NULL, ctx, "/no/such/report.ncu-rep", NULL),
                 KOPT_E_NOT_FOUND);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "/no/such/report.ncu-rep");
    CHECK(argv == NULL);

    /* Bad options. */
    o = (kopt_ncu_opts)KOPT_NCU_OPTS_INIT;
    o.metrics = (const char *const[]){"a.sum,b.sum", NULL};
    CHECK_EQ_INT(kopt_ncu_argv(&argv, NULL, ctx, &o), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "a.sum,b.sum");
    o = (kopt_ncu_opts)KOPT_NCU_OPTS_INIT;
    o.page = "source";
    CHECK_EQ_INT(kopt_ncu_argv(&argv, NULL, ctx, &o), KOPT_E_INVALID);
    o = (kopt_ncu_opts)KOPT_NCU_OPTS_INIT;
    o.version = 99;
    CHECK_EQ_INT(kopt_ncu_argv(&argv, NULL, ctx, &o), KOPT_E_INVALID);
    CHECK(argv == NULL);

    /* Finding ncu: $KOPT_NCU must be executable; else PATH. */
    setenv("KOPT_NCU", "/no/such/ncu", 1);
    CHECK_EQ_INT(kopt_ncu_find(&found, ctx), KOPT_E_NOT_FOUND);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "$KOPT_NCU=/no/such/ncu");
    unsetenv("KOPT_NCU");
    setenv("PATH", dir, 1);
    if (CHECK_EQ_INT(kopt_ncu_find(&found, ctx), KOPT_OK))
        CHECK_EQ_STR(found, ncu);
    free(found);
out:
    if (saved_path)
        setenv("PATH", saved_path, 1);
    unsetenv("KOPT_NCU");
    free(saved_path);
    free(ncu);
    ktest_rmtree(dir);
    free(dir);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_raw_base_units),
        KTEST(test_raw_scaled_units),
        KTEST(test_raw_crlf_and_msecond),
        KTEST(test_raw_two_processes),
        KTEST(test_details_rules),
        KTEST(test_raw_malformed_fixtures),
        KTEST(test_raw_malformed_inline),
        KTEST(test_details_malformed),
        KTEST(test_recorded_h200),
        KTEST(test_ncu_argv),
    };
    int rc;

    ctx = kopt_ctx_new();
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    kopt_ctx_free(ctx);
    return rc;
}
