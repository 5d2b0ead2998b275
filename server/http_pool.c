/* http_pool.c - a fixed pool of worker threads with a FIFO queue: compiles,
 * runs and renders execute here, never on the libmicrohttpd threads. */
#include <pthread.h>
#include <stdlib.h>

#include "http.h"

typedef struct job {
    void (*fn)(void *);
    void *arg;
    struct job *next;
} job;

struct srv_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job *head, *tail;
    bool stopping;
    int n_threads;
    pthread_t *threads;
};

static void *worker_main(void *arg)
{
    srv_pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->cv, &p->mu);
        job *j = p->head;
        if (!j) { /* stopping and drained */
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        p->head = j->next;
        if (!p->head)
            p->tail = NULL;
        pthread_mutex_unlock(&p->mu);
        j->fn(j->arg);
        free(j);
        srv_heap_release(); /* what the job freed, back to the system */
    }
}

srv_pool *srv_pool_new(int threads)
{
    srv_heap_configure(); /* before the jobs' allocations start */
    srv_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->threads = calloc((size_t)threads, sizeof(pthread_t));
    if (!p->threads) {
        free(p);
        return NULL;
    }
    for (int k = 0; k < threads; k++) {
        if (pthread_create(&p->threads[k], NULL, worker_main, p) != 0)
            break;
        p->n_threads++;
    }
    if (p->n_threads == 0) {
        free(p->threads);
        free(p);
        return NULL;
    }
    return p;
}

int srv_pool_submit(srv_pool *p, void (*fn)(void *), void *arg)
{
    job *j = malloc(sizeof *j);
    if (!j)
        return -1;
    j->fn = fn, j->arg = arg, j->next = NULL;
    pthread_mutex_lock(&p->mu);
    if (p->stopping) {
        pthread_mutex_unlock(&p->mu);
        free(j);
        return -1;
    }
    if (p->tail)
        p->tail->next = j;
    else
        p->head = j;
    p->tail = j;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

void srv_pool_free(srv_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int k = 0; k < p->n_threads; k++)
        pthread_join(p->threads[k], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->threads);
    free(p);
}
