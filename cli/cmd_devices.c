/* kopt devices [--measure]: the GPUs, their properties and their measured ceilings. */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *f)
{
    fprintf(f,
        "usage: kopt devices [--measure] [--json] [--db PATH]\n"
        "\n"
        "List the GPUs with their properties (from a worker process) and the ceilings kopt\n"
        "measured on them. --measure runs the microbenchmarks again (DRAM copy/read/write\n"
        "bandwidth, FP32 FMA rate, about a second) and stores the result; compute rates\n"
        "not measured are derived from the architecture and marked 'spec'.\n"
        "Exit codes: 0 ok, 2 usage, 10 no GPU or failure.\n");
}

int cmd_devices(int argc, char **argv)
{
    static const struct option opts[] = {
        {"measure", no_argument, NULL, 'm'}, {"json", no_argument, NULL, 'j'},
        {"db", required_argument, NULL, 'D'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char *compute[] = {"fp32", "fp64", "fp16-tc", "bf16-tc", "tf32-tc", "fp8-tc",
                                    "int32"};
    const char *db = cli_default_db();
    int measure = 0, json = 0, c, n = 0, code = 0;
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
        if (json)
            printf("{\"devices\": [], \"reason\": \"%s\"}\n", kopt_errmsg(ctx));
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
        if (json) {
            printf("%s{\"ordinal\": %d, \"name\": \"%s\", \"uuid\": \"%s\", \"cc\": \"%d.%d\", "
                   "\"sm_count\": %d, \"memory_bytes\": %lld, \"l2_bytes\": %d, "
                   "\"clock_khz\": %d, \"smem_per_block_optin\": %d, \"driver\": %d",
                   i ? ", " : "", i, d.name, d.uuid, d.cc_major, d.cc_minor, d.sm_count,
                   (long long)d.total_mem, d.l2_bytes, d.clock_khz, d.max_smem_per_block_optin,
                   d.driver_version);
            if (found) {
                printf(", \"ceilings\": {\"dram_copy_gbs\": %.1f, \"dram_read_gbs\": %.1f, "
                       "\"dram_write_gbs\": %.1f, \"measured_at\": \"%s\", \"gflops\": {",
                       ce.dram_copy_gbs, ce.dram_read_gbs, ce.dram_write_gbs, ce.measured_at);
                for (int k = 0; k < KOPT_NCOMPUTE; k++)
                    printf("%s\"%s\": {\"value\": %.1f, \"source\": \"%s\"}", k ? ", " : "",
                           compute[k], ce.gflops[k], ce.measured[k] ? "measured" : "spec");
                printf("}}");
            }
            printf("}");
            continue;
        }
        printf("GPU %d: %s (%s)\n", i, d.name, d.uuid);
        printf("  compute capability %d.%d, %d SMs at up to %.0f MHz, %.1f GiB, L2 %.0f MiB,\n"
               "  %d B shared memory per block (opt-in), driver %d.%d\n", d.cc_major,
               d.cc_minor, d.sm_count, d.clock_khz / 1e3, d.total_mem / 1073741824.0,
               d.l2_bytes / 1048576.0, d.max_smem_per_block_optin, d.driver_version / 1000,
               d.driver_version % 1000 / 10);
        if (found) {
            printf("  DRAM bandwidth: copy %.0f GB/s, read %.0f GB/s, write %.0f GB/s "
                   "(measured %s)\n", ce.dram_copy_gbs, ce.dram_read_gbs, ce.dram_write_gbs,
                   ce.measured_at);
            for (int k = 0; k < KOPT_NCOMPUTE; k++)
                if (ce.gflops[k] > 0)
                    printf("  %-8s %9.1f TFLOP/s (%s)\n", compute[k], ce.gflops[k] / 1e3,
                           ce.measured[k] ? "measured" : "spec-derived, not measured");
        } else {
            printf("  ceilings not measured yet: kopt devices --measure\n");
        }
    }
    if (json)
        printf("]}\n");
    kopt_store_close(st);
    kopt_ctx_free(ctx);
    return code;
}
