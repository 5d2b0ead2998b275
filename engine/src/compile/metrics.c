/* metrics.c - counters and timings like torch_xla's metrics module, in an
 * object the caller owns (no global state), guarded by a mutex so that
 * concurrent compiles can record into one. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_compile.h"
#include "ir/strbuf.h"

typedef struct counter {
    char name[48];
    int64_t value;
} counter;

typedef struct timing {
    char name[48];
    hs_timing t;
} timing;

struct hs_metrics {
    pthread_mutex_t mu;
    int n_counters, n_timings;
    counter counters[HS_METRICS_MAX];
    timing timings[HS_METRICS_MAX];
};

hs_metrics *hs_metrics_new(void)
{
    hs_metrics *m = calloc(1, sizeof *m);
    if (m && pthread_mutex_init(&m->mu, NULL) != 0) {
        free(m);
        return NULL;
    }
    return m;
}

void hs_metrics_free(hs_metrics *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->mu);
    free(m);
}

/* Index of the counter (timing) called name; created when create and
 * there is room. -1 when absent. Called with the mutex held. */
static int find_counter(hs_metrics *m, const char *name, bool create)
{
    for (int k = 0; k < m->n_counters; k++)
        if (strcmp(m->counters[k].name, name) == 0)
            return k;
    if (!create || m->n_counters == HS_METRICS_MAX ||
        strlen(name) >= sizeof m->counters[0].name)
        return -1;
    counter *c = &m->counters[m->n_counters];
    memset(c, 0, sizeof *c);
    strcpy(c->name, name);
    return m->n_counters++;
}

static int find_timing(hs_metrics *m, const char *name, bool create)
{
    for (int k = 0; k < m->n_timings; k++)
        if (strcmp(m->timings[k].name, name) == 0)
            return k;
    if (!create || m->n_timings == HS_METRICS_MAX ||
        strlen(name) >= sizeof m->timings[0].name)
        return -1;
    timing *t = &m->timings[m->n_timings];
    memset(t, 0, sizeof *t);
    strcpy(t->name, name);
    return m->n_timings++;
}

void hs_metrics_counter_add(hs_metrics *m, const char *name, int64_t delta)
{
    if (!m || !name)
        return;
    pthread_mutex_lock(&m->mu);
    int k = find_counter(m, name, true);
    if (k >= 0)
        m->counters[k].value += delta;
    pthread_mutex_unlock(&m->mu);
}

int64_t hs_metrics_counter(hs_metrics *m, const char *name)
{
    if (!m || !name)
        return 0;
    pthread_mutex_lock(&m->mu);
    int k = find_counter(m, name, false);
    int64_t v = k >= 0 ? m->counters[k].value : 0;
    pthread_mutex_unlock(&m->mu);
    return v;
}

void hs_metrics_record_time(hs_metrics *m, const char *name, int64_t ns)
{
    if (!m || !name)
        return;
    if (ns < 0)
        ns = 0;
    pthread_mutex_lock(&m->mu);
    int k = find_timing(m, name, true);
    if (k >= 0) {
        hs_timing *t = &m->timings[k].t;
        if (t->count == 0 || ns < t->min_ns)
            t->min_ns = ns;
        if (t->count == 0 || ns > t->max_ns)
            t->max_ns = ns;
        t->count++;
        t->total_ns += ns;
    }
    pthread_mutex_unlock(&m->mu);
}

hs_timing hs_metrics_timing(hs_metrics *m, const char *name)
{
    hs_timing t = {0, 0, 0, 0};
    if (!m || !name)
        return t;
    pthread_mutex_lock(&m->mu);
    int k = find_timing(m, name, false);
    if (k >= 0)
        t = m->timings[k].t;
    pthread_mutex_unlock(&m->mu);
    return t;
}

double hs_timing_mean(const hs_timing *t)
{
    return t->count ? (double)t->total_ns / (double)t->count : 0.0;
}

void hs_metrics_reset(hs_metrics *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->n_counters = 0;
    m->n_timings = 0;
    pthread_mutex_unlock(&m->mu);
}

/* torch_xla prints durations as "01s228ms636.484us": the largest units
 * that apply, then microseconds with three decimals. */
static void format_duration(char *buf, size_t size, double ns)
{
    int64_t total_ns = (int64_t)(ns + 0.5);
    int64_t s = total_ns / 1000000000;
    int64_t ms = total_ns / 1000000 % 1000;
    double us = (double)(total_ns % 1000000) / 1000.0;
    if (s > 0)
        snprintf(buf, size, "%02llds%03lldms%07.3fus", (long long)s,
                 (long long)ms, us);
    else if (ms > 0)
        snprintf(buf, size, "%03lldms%07.3fus", (long long)ms, us);
    else
        snprintf(buf, size, "%.3fus", us);
}


char *hs_metrics_format(hs_metrics *m)
{
    hs_buf t = {0};
    hs__buf_puts(&t, ""); /* an empty report is "", not NULL */
    if (m) {
        pthread_mutex_lock(&m->mu);
        char a[64], b[64], c[64], d[64];
        for (int k = 0; k < m->n_timings; k++) {
            const hs_timing *x = &m->timings[k].t;
            format_duration(a, sizeof a, (double)x->total_ns);
            format_duration(b, sizeof b, hs_timing_mean(x));
            format_duration(c, sizeof c, (double)x->min_ns);
            format_duration(d, sizeof d, (double)x->max_ns);
            hs__buf_printf(&t,
                    "Metric: %s\n  TotalSamples: %lld\n  Accumulator: %s\n"
                    "  Mean: %s\n  Min: %s\n  Max: %s\n",
                    m->timings[k].name, (long long)x->count, a, b, c, d);
        }
        for (int k = 0; k < m->n_counters; k++)
            hs__buf_printf(&t, "Counter: %s\n  Value: %lld\n", m->counters[k].name,
                    (long long)m->counters[k].value);
        pthread_mutex_unlock(&m->mu);
    }
    if (t.oom) {
        free(t.data);
        return NULL;
    }
    return t.data;
}
