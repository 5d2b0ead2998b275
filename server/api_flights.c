/* api_flights.c - requests in flight by id: when the same request arrives
 * while it is being computed, the second waits for the first and is
 * answered from the store, so one id is computed once. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"

struct api_flights {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* on CLOCK_MONOTONIC */
    int n, cap;
    char (*ids)[API_ID_LEN + 1];
};

api_flights *api_flights_new(void)
{
    api_flights *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&f->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&f->mu, NULL);
    return f;
}

void api_flights_free(api_flights *f)
{
    if (!f)
        return;
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
    free(f->ids);
    free(f);
}

static int find(const api_flights *f, const char *id)
{
    for (int k = 0; k < f->n; k++)
        if (strcmp(f->ids[k], id) == 0)
            return k;
    return -1;
}

api_flight api_flight_begin(api_flights *f, const char *id, int64_t deadline_ns)
{
    pthread_mutex_lock(&f->mu);
    api_flight out = API_FLIGHT_OWNER;
    struct timespec until = {(time_t)(deadline_ns / 1000000000),
                             (long)(deadline_ns % 1000000000)};
    while (find(f, id) >= 0) {
        out = API_FLIGHT_WAITED;
        if (deadline_ns > 0) {
            if (pthread_cond_timedwait(&f->cv, &f->mu, &until) != 0 && find(f, id) >= 0) {
                out = API_FLIGHT_TIMEOUT;
                break;
            }
        } else {
            pthread_cond_wait(&f->cv, &f->mu);
        }
    }
    if (out == API_FLIGHT_OWNER) {
        if (f->n == f->cap) {
            int cap = f->cap ? f->cap * 2 : 16;
            void *p = realloc(f->ids, sizeof *f->ids * (size_t)cap);
            if (!p) {
                pthread_mutex_unlock(&f->mu);
                return API_FLIGHT_UNTRACKED; /* compute without sharing */
            }
            f->ids = p;
            f->cap = cap;
        }
        memcpy(f->ids[f->n++], id, API_ID_LEN + 1);
    }
    pthread_mutex_unlock(&f->mu);
    return out;
}

void api_flight_end(api_flights *f, const char *id)
{
    pthread_mutex_lock(&f->mu);
    int k = find(f, id);
    if (k >= 0)
        memcpy(f->ids[k], f->ids[--f->n], API_ID_LEN + 1);
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}
