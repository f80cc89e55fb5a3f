/* kopt-worker: the program libkopt starts for GPU work (one job per process, or a serving
 * worker); the library finds it as docs/install.md says. It reads its job on stdin and
 * answers with events on fd 3, so it is not meant to be run by hand. */
#include "kopt/eval.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    /* argv[1] is "__worker" when libkopt starts it (the same argv as `kopt __worker`) */
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        printf("kopt-worker %s\n", KOPT_VERSION);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "__worker") != 0) {
        fprintf(stderr, "usage: kopt-worker [--version]\n"
                        "libkopt starts this program for GPU work; it is not run by hand.\n");
        return 2;
    }
    return kopt_worker_main_args(argc - 1, argv + 1);
}
