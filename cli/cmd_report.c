/* kopt report RUN|--last [-o FILE.html]: a stored run as one self-contained HTML page
 * (kopt/report.h); --json prints the run's document the page is drawn from. */
#include "cli.h"
#include "kopt/report.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *f)
{
    fprintf(f,
        "usage: kopt report RUN_ID|--last [-o FILE.html] [options]\n"
        "\n"
        "Write one self-contained HTML page (inline CSS, SVG and script; nothing fetched from\n"
        "the network) for a stored run: the environment (device, clocks, driver, kopt version,\n"
        "command), the roofline with the device's measured ceilings and each evaluated\n"
        "candidate and profiled kernel on it, evaluations and profiles, the findings ranked\n"
        "with predicted and realized gain, and for tuning runs the best-so-far against\n"
        "evaluations and the parameter space explored. No GPU is needed. Guide: docs/report.md.\n"
        "\n"
        "options:\n"
        "  --last            the newest run (with --kind: of that kind)\n"
        "  --kind KIND       with --last: eval, profile, tune, ...\n"
        "  -o, --out FILE    the page (default report-RUN.html)\n"
        "  --title TEXT      the page's title\n"
        "  --db PATH         store (default ./kopt.db or $KOPT_DB)\n"
        "  --json            print the run's document (JSON) instead of writing a page\n"
        "\n"
        "exit codes: 0 written, 2 usage, 9 no such run, 10 kopt error.\n");
}

int cmd_report(int argc, char **argv)
{
    static const struct option opts[] = {
        {"last", no_argument, NULL, 'l'}, {"kind", required_argument, NULL, 'k'},
        {"out", required_argument, NULL, 'o'}, {"title", required_argument, NULL, 't'},
        {"db", required_argument, NULL, 'D'}, {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    kopt_report_opts ro = KOPT_REPORT_OPTS_INIT;
    const char *db = cli_default_db(), *out = NULL, *kind = NULL;
    char path[4096], *end = NULL, *doc = NULL;
    int last = 0, json = 0, c, code = 0;
    int64_t id = 0;
    kopt_ctx *ctx = cli_ctx(0);
    kopt_status rc;

    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'l': last = 1; break;
        case 'k': kind = optarg; break;
        case 'o': out = optarg; break;
        case 't': ro.title = optarg; break;
        case 'D': db = optarg; break;
        case 'j': json = 1; break;
        case 'h': help(stdout); goto done;
        default: help(stderr); code = KOPT_EXIT_USAGE; goto done;
        }
    }
    if (last == (optind < argc) || argc - optind > 1) {
        fprintf(stderr, "kopt report: give one run id or --last\n");
        help(stderr);
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    if (!last && ((id = strtoll(argv[optind], &end, 10)) <= 0 || *end)) {
        fprintf(stderr, "kopt report: bad run id '%s'\n", argv[optind]);
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    if (last && (rc = kopt_run_last(ctx, db, kind, &id)) != KOPT_OK) {
        cli_error(ctx);
        code = rc == KOPT_E_NOT_FOUND ? KOPT_EXIT_INVALID : KOPT_EXIT_ERROR;
        goto done;
    }
    if (json) {
        if ((rc = kopt_report_document_json(ctx, db, id, &doc)) != KOPT_OK) {
            cli_error(ctx);
            code = rc == KOPT_E_NOT_FOUND ? KOPT_EXIT_INVALID : KOPT_EXIT_ERROR;
            goto done;
        }
        cli_print_json(json_loads(doc, 0, NULL));
        goto done;
    }
    if (!out) {
        snprintf(path, sizeof(path), "report-%lld.html", (long long)id);
        out = path;
    }
    if ((rc = kopt_report_write(ctx, db, id, out, &ro)) != KOPT_OK) {
        cli_error(ctx);
        code = rc == KOPT_E_NOT_FOUND ? KOPT_EXIT_INVALID : KOPT_EXIT_ERROR;
        goto done;
    }
    printf("%s\n", out);
done:
    free(doc);
    kopt_ctx_free(ctx);
    return code;
}
