/*@kopt {"mode": "host"} */
// problem: examples/vector_add
// expect: TAMPER
// Host mode: overwrites every compiled binary it finds in kopt's compile cache
// ($KOPT_CACHE_DIR/compile), e.g. the reference's cubin, so later evaluations compare
// against something else. Its own output is right.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "host_common.cuh"

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    const char *cache = getenv("KOPT_CACHE_DIR");
    char dir[4096], path[8192];
    DIR *d;
    struct dirent *e;

    if (cache) {
        snprintf(dir, sizeof(dir), "%s/compile", cache);
        if ((d = opendir(dir))) {
            while ((e = readdir(d)))
                if (strstr(e->d_name, ".cubin")) {
                    FILE *f;
                    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
                    if ((f = fopen(path, "r+b"))) {
                        fputs("tampered", f);
                        fclose(f);
                    }
                }
            closedir(d);
        }
    }
    return adv_vector_add(io);
}
