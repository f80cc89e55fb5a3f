/* What every compile path shares (compile.c, compile_host.c, compile_procs.c call it; it
 * calls none of them): kopt_compiled's lookup and free, ptxas' resource report, the headers
 * in a cache key, string-vector cleanup. */
#include "compile_int.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void kopt_compiled_free(kopt_compiled *c)
{
    if (!c)
        return;
    free(c->binary_path);
    free(c->log);
    free(c->kernels);
    free(c);
}

const kopt_kernel_info *kopt_compiled_kernel(const kopt_compiled *c, const char *name)
{
    for (int i = 0; c && i < c->nkernels; i++)
        if (strcmp(c->kernels[i].name, name) == 0)
            return &c->kernels[i];
    return NULL;
}

/* ptxas prints, per entry function:
 *   ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90a'
 *   ptxas         .     256 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
 *   ptxas info    : Used 32 registers, used 1 barriers, 4096 bytes smem, ...           */
void kopt_parse_ptxas_report(const char *log, kopt_kernel_info *kernels, int n)
{
    kopt_kernel_info *cur = NULL;    /* the entry function being reported */
    kopt_kernel_info *props = NULL;  /* whose "Function properties" block we are in */
    const char *line = log;

    while (line && *line) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        char buf[1024];
        const char *p;

        if (len >= sizeof(buf))
            len = sizeof(buf) - 1;
        memcpy(buf, line, len);
        buf[len] = '\0';
        if ((p = strstr(buf, "entry function '"))) {
            char name[512];
            const char *q = p + 16, *e = strchr(q, '\'');
            cur = NULL;
            if (e && (size_t)(e - q) < sizeof(name)) {
                memcpy(name, q, (size_t)(e - q));
                name[e - q] = '\0';
                for (int i = 0; i < n; i++)
                    if (strcmp(kernels[i].lowered, name) == 0)
                        cur = &kernels[i];
            }
            props = NULL;
        } else if ((p = strstr(buf, "Function properties for "))) {
            /* also printed for device functions that were not inlined: skip theirs */
            const char *q = p + 24;
            size_t nlen = strcspn(q, " \r\n");
            props = cur && strlen(cur->lowered) == nlen && strncmp(cur->lowered, q, nlen) == 0
                        ? cur : NULL;
        } else if (props && strstr(buf, "bytes stack frame")) {
            int a = 0, b = 0, c = 0;
            if ((p = strstr(buf, ".")) && sscanf(p + 1, " %d bytes stack frame, %d bytes spill "
                                                        "stores, %d bytes spill loads", &a, &b,
                                                 &c) == 3) {
                props->stack_frame = a;
                props->spill_stores = b;
                props->spill_loads = c;
            }
        } else if (cur && (p = strstr(buf, "Used "))) {
            const char *q;
            sscanf(p, "Used %d registers", &cur->registers);
            if ((q = strstr(p, "used ")) && q != p)
                sscanf(q, "used %d barriers", &cur->barriers);
            if ((q = strstr(p, "bytes smem"))) {
                while (q > p && q[-1] == ' ')
                    q--;
                while (q > p && q[-1] >= '0' && q[-1] <= '9')
                    q--;
                cur->static_smem = atoi(q);
            }
        }
        line = eol ? eol + 1 : NULL;
    }
}

/* Headers next to the source or in its include folders can change without the source
 * changing: their names, sizes and modification times go into the cache key. */
void kopt__hash_headers(kopt_hash *h, const char *dir)
{
    static const char *const exts[] = {".h", ".cuh", ".hpp", ".inl", ".inc", NULL};
    struct dirent **list = NULL;
    int n;

    if (!dir || (n = scandir(dir, &list, NULL, alphasort)) < 0)
        return;
    for (int i = 0; i < n; i++) {
        const char *name = list[i]->d_name, *dot = strrchr(name, '.');
        for (const char *const *e = exts; dot && *e; e++) {
            char path[4096], stamp[64];
            struct stat st;
            if (strcmp(dot, *e) != 0)
                continue;
            snprintf(path, sizeof(path), "%s/%s", dir, name);
            if (stat(path, &st) != 0)
                continue;
            snprintf(stamp, sizeof(stamp), "%lld:%lld.%09ld", (long long)st.st_size,
                     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
            kopt_hash_add_str(h, name);
            kopt_hash_add_str(h, stamp);
        }
        free(list[i]);
    }
    free(list);
}

void kopt__strv_free_n(int n, char **v)
{
    for (int i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}
