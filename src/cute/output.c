/* Search hits as JSON (for tools and the CLI's --json) and as text for a prompt. */
#include "kopt/cute.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

char *kopt_cute_hits_json(const kopt_cute_hits *h, const char *query)
{
    json_t *root = json_object(), *arr = json_array();
    char *text;

    for (int i = 0; h && i < h->n; i++) {
        const kopt_cute_hit *x = &h->hits[i];
        json_array_append_new(arr, json_pack("{s:s, s:s, s:i, s:i, s:f, s:s}", "file", x->file,
                                             "path", x->path, "line_start", x->line_start,
                                             "line_end", x->line_end, "score", x->score,
                                             "snippet", x->snippet));
    }
    json_object_set_new(root, "query", json_string(query ? query : ""));
    json_object_set_new(root, "query_ms", json_real(h ? h->query_ms : 0));
    json_object_set_new(root, "hits", arr);
    text = json_dumps(root, JSON_INDENT(2));
    json_decref(root);
    return text;
}

char *kopt_cute_hits_text(const kopt_cute_hits *h)
{
    kopt_buf b = KOPT_BUF_INIT;

    if (!h || h->n == 0)
        kopt_buf_printf(&b, "(no match)\n");
    for (int i = 0; h && i < h->n; i++) {
        const kopt_cute_hit *x = &h->hits[i];
        size_t n = strlen(x->snippet);
        kopt_buf_printf(&b, "%s## %s:%d-%d\n```cpp\n%s%s```\n", i ? "\n" : "", x->file,
                        x->line_start, x->line_end, x->snippet,
                        n && x->snippet[n - 1] == '\n' ? "" : "\n");
    }
    return kopt_buf_detach(&b);
}
