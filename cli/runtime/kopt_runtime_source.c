/* Build tool: writes kopt's runtime kernels' source (src/cuda/runtime_kernels.c) to a .cu
 * file and its SHA-256 beside it, so the build can compile them ahead of time with nvcc
 * for the common architectures (CMakeLists.txt, KOPT_PREBUILT_RUNTIME_ARCHS); at run time
 * kopt_compile_runtime takes a prebuilt cubin whose hash matches its own source.
 * Usage: kopt-runtime-source OUT.cu OUT.sha256 */
#include "kopt/core.h"
#include "../../src/cuda/compile_int.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    const char *src = kopt__runtime_source();
    char sum[65];
    kopt_ctx *ctx = kopt_ctx_new();
    int rc = 1;

    if (argc != 3 || !ctx) {
        fprintf(stderr, "usage: kopt-runtime-source OUT.cu OUT.sha256\n");
        return 2;
    }
    kopt_sha256_hex(src, strlen(src), sum);
    if (kopt_file_write(ctx, argv[1], src, strlen(src)) == KOPT_OK &&
        kopt_file_write(ctx, argv[2], sum, strlen(sum)) == KOPT_OK)
        rc = 0;
    else
        fprintf(stderr, "kopt-runtime-source: %s\n", kopt_errmsg(ctx));
    kopt_ctx_free(ctx);
    return rc;
}
