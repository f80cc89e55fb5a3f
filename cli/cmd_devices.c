/* kopt devices [--measure]: the GPUs, their properties and their measured ceilings. */
#include "cli.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *f)
{
    fprintf(f,
        "usage: kopt devices [--measure] [--json] [--db PATH]\n"
        "\n"
        "List the GPUs with their properties (from a worker process) and the ceilings kopt\n"
        "measured on them. --measure runs the microbenchmarks again (about a second: DRAM\n"
        "copy/read/write, L2 and shared-memory bandwidth, FP32 and FP64 rates, dense\n"
        "tensor-core rates for FP16, BF16, TF32 and FP8) and stores the result. Each ceiling\n"
        "is labeled: measured, spec-derived (from the architecture's per-SM rates and the\n"
        "clock; JSON \"spec\") when it was not measured, or unknown.\n"
        "Exit codes: 0 ok, 2 usage, 10 no GPU or failure.\n");
}

static const char *const compute_names[KOPT_NCOMPUTE] = {"fp32", "fp64", "fp16-tc", "bf16-tc",
                                                         "tf32-tc", "fp8-tc", "int32"};

/* "measured", "spec" (derived from the architecture) or "unknown" (neither). */
static const char *source_of(double value, int measured)
{
    return measured ? "measured" : value > 0 ? "spec" : "unknown";
}

static json_t *rated(double value, int measured)
{
    return json_pack("{s:f, s:s}", "value", value, "source", source_of(value, measured));
}

static void print_device_json(int i, int first, const kopt_device_info *d,
                              const kopt_ceilings *ce)
{
    char cc[16];
    json_t *o, *g;
    char *text;

    snprintf(cc, sizeof(cc), "%d.%d", d->cc_major, d->cc_minor);
    o = json_pack("{s:i, s:s, s:s, s:s, s:i, s:I, s:i, s:i, s:i, s:i}", "ordinal", i, "name",
                  d->name, "uuid", d->uuid, "cc", cc, "sm_count", d->sm_count, "memory_bytes",
                  (json_int_t)d->total_mem, "l2_bytes", d->l2_bytes, "clock_khz", d->clock_khz,
                  "smem_per_block_optin", d->max_smem_per_block_optin, "driver",
                  d->driver_version);
    if (o && ce) {
        g = json_object();
        for (int k = 0; k < KOPT_NCOMPUTE; k++)
            json_object_set_new(g, compute_names[k], rated(ce->gflops[k], ce->measured[k]));
        json_object_set_new(g, "fp64_fma", rated(ce->fp64_fma_gflops, ce->fp64_fma_gflops > 0));
        json_object_set_new(g, "fp64_dmma", rated(ce->fp64_tc_gflops, ce->fp64_tc_gflops > 0));
        json_object_set_new(o, "ceilings", json_pack(
            "{s:f, s:f, s:f, s:s, s:o, s:o, s:o}", "dram_copy_gbs", ce->dram_copy_gbs,
            "dram_read_gbs", ce->dram_read_gbs, "dram_write_gbs", ce->dram_write_gbs,
            "measured_at", ce->measured_at, "l2", rated(ce->l2_gbs, ce->l2_measured), "smem",
            rated(ce->smem_gbs, ce->smem_measured), "gflops", g));
    }
    text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    printf("%s%s", first ? "" : ", ", text ? text : "{}");
    free(text);
    json_decref(o);
}

/* One ceiling line: value, unit and where it comes from. */
static void print_rate(const char *what, double value, const char *unit, int measured)
{
    if (value <= 0 && !measured) {
        printf("    %-14s %10s %-8s  unknown (not measured)\n", what, "-", "");
        return;
    }
    printf("    %-14s %10.1f %-8s  %s\n", what, value, unit,
           measured ? "measured" : "spec-derived, not measured");
}

static void print_device_text(int i, const kopt_device_info *d, const kopt_ceilings *ce)
{
    printf("GPU %d: %s (%s)\n", i, d->name, d->uuid);
    printf("  compute capability %d.%d, %d SMs at up to %.0f MHz, %.1f GiB, L2 %.0f MiB,\n"
           "  %d B shared memory per block (opt-in), driver %d.%d\n", d->cc_major,
           d->cc_minor, d->sm_count, d->clock_khz / 1e3, d->total_mem / 1073741824.0,
           d->l2_bytes / 1048576.0, d->max_smem_per_block_optin, d->driver_version / 1000,
           d->driver_version % 1000 / 10);
    if (!ce) {
        printf("  ceilings not measured yet: kopt devices --measure\n");
        return;
    }
    printf("  ceilings (measured %s):\n",
           ce->measured_at[0] ? ce->measured_at : "at an unknown time");
    print_rate("DRAM copy", ce->dram_copy_gbs, "GB/s", ce->dram_copy_gbs > 0);
    print_rate("DRAM read", ce->dram_read_gbs, "GB/s", ce->dram_read_gbs > 0);
    print_rate("DRAM write", ce->dram_write_gbs, "GB/s", ce->dram_write_gbs > 0);
    print_rate("L2 read", ce->l2_gbs, "GB/s", ce->l2_measured);
    print_rate("shared memory", ce->smem_gbs, "GB/s", ce->smem_measured);
    for (int k = 0; k < KOPT_NCOMPUTE; k++) {
        if (k == KOPT_COMPUTE_FP64 && (ce->fp64_fma_gflops > 0 || ce->fp64_tc_gflops > 0)) {
            /* two paths with their own rates: a kernel is held to the one it uses */
            print_rate("fp64 FMA", ce->fp64_fma_gflops / 1e3, "TFLOP/s", ce->fp64_fma_gflops > 0);
            print_rate("fp64 DMMA (TC)", ce->fp64_tc_gflops / 1e3, "TFLOP/s",
                       ce->fp64_tc_gflops > 0);
            continue;
        }
        print_rate(compute_names[k], ce->gflops[k] / 1e3, "TFLOP/s", ce->measured[k]);
    }
}

int cmd_devices(int argc, char **argv)
{
    static const struct option opts[] = {
        {"measure", no_argument, NULL, 'm'}, {"json", no_argument, NULL, 'j'},
        {"db", required_argument, NULL, 'D'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *db = cli_default_db();
    int measure = 0, json = 0, c, n = 0, code = 0, shown = 0;
    kopt_ctx *ctx = cli_ctx(0);
    kopt_store *st = NULL;
    kopt_device_info first;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': measure = 1; break;
        case 'j': json = 1; break;
        case 'D': db = optarg; break;
        case 'h': help(stdout); kopt_ctx_free(ctx); return 0;
        default: help(stderr); kopt_ctx_free(ctx); return KOPT_EXIT_USAGE;
        }
    }
    if (kopt_device_nvml(ctx, 0, &first, &n) != KOPT_OK) {
        if (json) {
            json_t *o = json_pack("{s:[], s:s}", "devices", "reason", kopt_errmsg(ctx));
            char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
            printf("%s\n", text ? text : "{\"devices\": []}");
            free(text);
            json_decref(o);
        }
        else
            printf("no GPU: %s\n", kopt_errmsg(ctx));
        kopt_ctx_free(ctx);
        return KOPT_EXIT_ERROR;
    }
    if (kopt_store_open(&st, ctx, db) != KOPT_OK)
        kopt_log(ctx, KOPT_LOG_WARN, "store %s not opened: %s", db, kopt_errmsg(ctx));
    if (json)
        printf("{\"devices\": [");
    for (int i = 0; i < n; i++) {
        kopt_device_info d;
        kopt_ceilings ce;
        int found = 0;
        if (kopt_device_query(ctx, i, &d) != KOPT_OK) {
            cli_error(ctx);
            code = KOPT_EXIT_ERROR;
            continue;
        }
        if (measure) {
            if (kopt_device_measure(ctx, i, NULL, &d, &ce) != KOPT_OK) {
                cli_error(ctx);
                code = KOPT_EXIT_ERROR;
                continue;
            }
            found = 1;
            if (st)
                kopt_store_put_device(st, ctx, &d, &ce);
        } else if (st) {
            kopt_store_get_ceilings(st, ctx, d.uuid, &ce, &found);
        }
        if (found)
            kopt_ceilings_fill_spec(&ce, &d);
        if (json)
            print_device_json(i, shown++ == 0, &d, found ? &ce : NULL);
        else
            print_device_text(i, &d, found ? &ce : NULL);
    }
    if (json)
        printf("]}\n");
    kopt_store_close(st);
    kopt_ctx_free(ctx);
    return code;
}
