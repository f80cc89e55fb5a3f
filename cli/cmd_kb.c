/* kopt kb import PATH --out DIR: KernelBench problem files into kopt problem folders
 * (docs/kernelbench.md). */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *f)
{
    fprintf(f,
        "usage: kopt kb import PATH --out DIR [options]\n"
        "\n"
        "Turn a KernelBench problem file (class Model, get_inputs(), get_init_inputs()), or a\n"
        "folder of them, into kopt problem folders under DIR: problem.json (sizes from the\n"
        "module's integer globals; inputs, parameters, buffers and outputs with their dtypes\n"
        "and shapes, read by running the module in Python with PyTorch) and model.py. Work\n"
        "counts: bytes moved always; FLOPs where PyTorch's FLOP counter counts the ops.\n"
        "\n"
        "Check sizes: where the shapes follow the integer globals, problem.json also gets\n"
        "\"check_sizes\", a second, smaller set of odd sizes (the tensors at most a quarter\n"
        "of the main set's bytes and 256 MiB) at which the model was probed (on the meta\n"
        "device) and every shape checked; kopt eval and kopt bench run each candidate there\n"
        "too (SHAPE_SPECIFIC: correct only at the benchmark's shapes). Globals that configure\n"
        "the model (kernel sizes, strides, padding, groups, heads, ...) stay unchanged, as\n"
        "does a size the model cannot change (one also fixed in a tuple such as bias_shape).\n"
        "Each problem's line says which check sizes it got, or why it has none.\n"
        "\n"
        "options:\n"
        "  --out DIR       where the problem folders go (required)\n"
        "  --atol X        the problems' absolute tolerance (default 1e-2, KernelBench's)\n"
        "  --rtol X        relative tolerance (default 1e-2)\n"
        "  --prefix P      prepend P to every problem's name\n"
        "  --device D      where the modules run while importing (default cpu)\n"
        "  --json          one JSON object per file\n"
        "\n"
        "Python: $KOPT_PYTHON or python3, with PyTorch installed.\n"
        "exit codes: 0 every file imported, 1 some could not be, 2 usage, 10 kopt error\n");
}

/* "M=511 N=383" from a JSON object of sizes (or "?" when it does not parse). */
static void print_sizes(const char *text)
{
    json_t *o = text ? json_loads(text, 0, NULL) : NULL, *v;
    const char *k;
    int first = 1;

    if (!json_is_object(o))
        printf("?");
    json_object_foreach(o, k, v) {
        printf("%s%s=%" JSON_INTEGER_FORMAT, first ? "" : " ", k, json_integer_value(v));
        first = 0;
    }
    json_decref(o);
}

/* Under an imported problem's line: the check sizes it got, or why it has none. */
static void print_check_sizes(const kopt_kb_import_record *r)
{
    if (r->check_sizes) {
        printf("          check sizes ");
        print_sizes(r->check_sizes);
        printf(" (main ");
        print_sizes(r->sizes);
        printf(")\n");
        if (r->check_sizes_note)
            printf("          %s\n", r->check_sizes_note);
    } else {
        printf("          no check sizes: %s\n", r->check_sizes_error ? r->check_sizes_error
                                                                    : "(not said)");
    }
}

static int kb_import(int argc, char **argv)
{
    static const struct option opts[] = {
        {"out", required_argument, NULL, 'o'}, {"atol", required_argument, NULL, 'a'},
        {"rtol", required_argument, NULL, 'r'}, {"prefix", required_argument, NULL, 'p'},
        {"device", required_argument, NULL, 'd'}, {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    kopt_kb_import_opts io = KOPT_KB_IMPORT_OPTS_INIT;
    kopt_kb_import_record *recs = NULL;
    const char *out_dir = NULL;
    int n = 0, c, json = 0, bad = 0, code = 0;
    kopt_ctx *ctx = cli_ctx(0);
    char *end;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out_dir = optarg; break;
        case 'a': io.atol = strtod(optarg, &end);
            if (*end || io.atol < 0) goto bad_value;
            break;
        case 'r': io.rtol = strtod(optarg, &end);
            if (*end || io.rtol < 0) goto bad_value;
            break;
        case 'p': io.prefix = optarg; break;
        case 'd': io.device = optarg; break;
        case 'j': json = 1; break;
        case 'h': help(stdout); goto done;
        default: help(stderr); code = KOPT_EXIT_USAGE; goto done;
        }
        continue;
bad_value:
        fprintf(stderr, "kopt kb import: bad value '%s'\n", optarg);
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    if (optind + 1 != argc || !out_dir) {
        help(stderr);
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    if (kopt_kb_import(ctx, argv[optind], out_dir, &io, &recs, &n) != KOPT_OK) {
        cli_error(ctx);
        code = KOPT_EXIT_ERROR;
        goto done;
    }
    for (int i = 0; i < n; i++) {
        const kopt_kb_import_record *r = &recs[i];
        bad += r->error != NULL;
        if (json) {
            json_t *o = json_pack("{s:s?, s:s?, s:s?, s:f, s:o}", "file", r->file, "problem",
                                  r->error ? NULL : r->problem, "error", r->error, "bytes",
                                  r->bytes, "flops", r->has_flops ? json_real(r->flops)
                                                                  : json_null());
            char *t;
            if (!r->error) {
                json_object_set_new(o, "sizes", r->sizes ? json_loads(r->sizes, 0, NULL)
                                                         : json_null());
                json_object_set_new(o, "check_sizes", r->check_sizes
                                    ? json_loads(r->check_sizes, 0, NULL) : json_null());
                if (r->check_sizes_note)
                    json_object_set_new(o, "check_sizes_note",
                                        json_string(r->check_sizes_note));
                if (r->check_sizes_error)
                    json_object_set_new(o, "check_sizes_error",
                                        json_string(r->check_sizes_error));
            }
            t = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
            printf("%s\n", t ? t : "{}");
            free(t);
            json_decref(o);
        } else if (r->error) {
            printf("error     %s\n", r->error);
        } else {
            printf("imported  %s -> %s  (work counts: bytes %.0f%s", r->file, r->problem,
                   r->bytes, r->has_flops ? ", flops " : "; no FLOP count)\n");
            if (r->has_flops)
                printf("%.0f)\n", r->flops);
            print_check_sizes(r);
        }
    }
    if (!json) {
        int nchecked = 0;
        for (int i = 0; i < n; i++)
            nchecked += !recs[i].error && recs[i].check_sizes;
        printf("%d of %d file(s) imported into %s; %d with check sizes\n", n - bad, n, out_dir,
               nchecked);
    }
    code = bad ? 1 : 0;
done:
    kopt_kb_import_free(recs, n);
    kopt_ctx_free(ctx);
    return code;
}

int cmd_kb(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "import") == 0)
        return kb_import(argc - 1, argv + 1);
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        help(stdout);
        return 0;
    }
    help(stderr);
    return KOPT_EXIT_USAGE;
}
