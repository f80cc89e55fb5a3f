/* What the report's sections share (report.c and every section call it; it calls none of
 * them): text escaped for HTML, numbers with a suffix, a document's string members. */
#include "report_int.h"

void kopt__report_esc(kopt_buf *b, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': kopt_buf_append(b, "&lt;", 4); break;
        case '>': kopt_buf_append(b, "&gt;", 4); break;
        case '&': kopt_buf_append(b, "&amp;", 5); break;
        case '"': kopt_buf_append(b, "&quot;", 6); break;
        case '\'': kopt_buf_append(b, "&#39;", 5); break;
        default: kopt_buf_append(b, s, 1);
        }
    }
}

void kopt__report_num(kopt_buf *b, json_t *v, int decimals, const char *suffix)
{
    if (json_is_number(v))
        kopt_buf_printf(b, "%.*f%s", decimals, json_number_value(v), suffix);
    else
        kopt_buf_append(b, "-", 1);
}

const char *kopt__report_str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}
