/* A tools/call's stream of messages over HTTP (text/event-stream): the call's thread pushes
 * its progress and result (send.c), the HTTP response reads them as SSE events (http.c), a
 * reference each; ended after the call's last message. Calls nothing else in src/mcp. */
#include "mcp_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

typedef struct msg_node {
    char *text;
    struct msg_node *next;
} msg_node;

struct kopt__mcp_stream {
    pthread_mutex_t lock;
    pthread_cond_t more;
    msg_node *head, *tail;
    char *cur;                 /* the SSE event being sent, and how much of it is sent */
    size_t cur_len, cur_at;
    int ended, refs;
    volatile int *stopping;    /* the daemon is stopping: readers give up */
};

kopt__mcp_stream *kopt__mcp_stream_new(volatile int *stopping)
{
    kopt__mcp_stream *st = calloc(1, sizeof(*st));

    if (!st)
        return NULL;
    pthread_mutex_init(&st->lock, NULL);
    pthread_cond_init(&st->more, NULL);
    st->refs = 1;
    st->stopping = stopping;
    return st;
}

kopt__mcp_stream *kopt__mcp_stream_ref(kopt__mcp_stream *st)
{
    pthread_mutex_lock(&st->lock);
    st->refs++;
    pthread_mutex_unlock(&st->lock);
    return st;
}

void kopt__mcp_stream_unref(kopt__mcp_stream *st)
{
    int last;

    if (!st)
        return;
    pthread_mutex_lock(&st->lock);
    last = --st->refs == 0;
    pthread_mutex_unlock(&st->lock);
    if (!last)
        return;
    while (st->head) {
        msg_node *n = st->head;
        st->head = n->next;
        free(n->text);
        free(n);
    }
    free(st->cur);
    pthread_cond_destroy(&st->more);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

void kopt__mcp_stream_push(kopt__mcp_stream *st, char *text)
{
    msg_node *n = malloc(sizeof(*n));

    if (!n) {
        free(text);
        return;
    }
    n->text = text;
    n->next = NULL;
    pthread_mutex_lock(&st->lock);
    if (st->tail)
        st->tail->next = n;
    else
        st->head = n;
    st->tail = n;
    pthread_cond_signal(&st->more);
    pthread_mutex_unlock(&st->lock);
}

void kopt__mcp_stream_end(kopt__mcp_stream *st)
{
    pthread_mutex_lock(&st->lock);
    st->ended = 1;
    pthread_cond_signal(&st->more);
    pthread_mutex_unlock(&st->lock);
}

ssize_t kopt__mcp_stream_read(kopt__mcp_stream *st, char *buf, size_t max)
{
    size_t n;

    pthread_mutex_lock(&st->lock);
    while (!st->cur) {
        if (st->head) {
            msg_node *m = st->head;
            size_t len = strlen(m->text);
            if ((st->head = m->next) == NULL)
                st->tail = NULL;
            if ((st->cur = malloc(len + 24)) != NULL)
                st->cur_len = (size_t)snprintf(st->cur, len + 24, "event: message\ndata: %s\n\n",
                                               m->text);
            st->cur_at = 0;
            free(m->text);
            free(m);
            continue;
        }
        if (st->ended || *st->stopping) {
            pthread_mutex_unlock(&st->lock);
            return -1;
        }
        {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&st->more, &st->lock, &ts);
        }
    }
    n = st->cur_len - st->cur_at < max ? st->cur_len - st->cur_at : max;
    memcpy(buf, st->cur + st->cur_at, n);
    if ((st->cur_at += n) == st->cur_len) {
        free(st->cur);
        st->cur = NULL;
    }
    pthread_mutex_unlock(&st->lock);
    return (ssize_t)n;
}
