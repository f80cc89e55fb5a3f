/* Retry policy of the HTTP backends: which answers are retried, how long to wait (exponential
 * backoff with jitter, or the server's Retry-After), and the jitter's random numbers. */
#include "llm_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int kopt__llm_status_retryable(int s)
{
    return s == 408 || s == 409 || s == 425 || s == 429 || (s >= 500 && s <= 599);
}

double kopt__llm_backoff_s(double base_s, double max_s, int retry, double retry_after_s, double u)
{
    double d;

    if (retry_after_s >= 0)
        return retry_after_s;     /* the server knows best; the caller checks it against max */
    if (retry > 30)
        retry = 30;
    d = base_s * ldexp(1.0, retry) * (0.5 + 0.5 * u);
    return d < max_s ? d : max_s;
}

double kopt__llm_parse_retry_after(const char *v, double now)
{
    char *end;
    double s;
    struct tm tm;

    if (!v)
        return -1;
    while (*v == ' ' || *v == '\t')
        v++;
    if (!*v)
        return -1;
    s = strtod(v, &end);
    if (end != v) {
        while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
            end++;
        return *end || !isfinite(s) || s < 0 ? -1 : s;
    }
    /* an HTTP date: "Wed, 21 Oct 2015 07:28:00 GMT" */
    memset(&tm, 0, sizeof(tm));
    end = strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (!end)
        return -1;
    s = (double)timegm(&tm) - now;
    return s > 0 ? s : 0;
}

double kopt__llm_uniform(uint64_t *state)
{
    uint64_t x = *state ? *state : 0x9E3779B97F4A7C15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return (double)(x >> 11) / 9007199254740992.0;   /* 2^53 */
}
