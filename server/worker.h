/*
 * worker.h - compile and run requests in worker processes, so that a crash,
 * an abort or runaway memory while computing untrusted input costs one
 * request and not the server (issue 12, docs/API.md "Containment").
 *
 *   pool thread ──job: limits, deadline, canonical request──> worker process
 *   pool thread <──outcome (api_outcome as JSON text)──────── (one job at a time)
 *
 * A worker is this program's own executable started with hs_spawn_self
 * (hs_process.h, as the layout service's processes are) and a SOCK_STREAM
 * socket as descriptor 3; a constructor in worker_main.c makes it one. It
 * computes with the same code as the server process would (api_execute_compute)
 * and sends back what the server stores: results and the store stay in the
 * server process. The pool (worker_pool.c) keeps one worker per pool
 * thread, limits each worker's memory (RLIMIT_AS, and its resident size
 * watched), kills it at the request's deadline plus a grace, answers a dead
 * worker's request with a JSON error and starts a new worker.
 */
#ifndef HLOSCOPE_WORKER_H
#define HLOSCOPE_WORKER_H

#include <stdint.h>

#include "api.h"
#include "http.h"

#define WORKER_ROLE_VAR "HS_WORKER_PROCESS"
/* Bytes of address space a worker may use, for its RLIMIT_AS. */
#define WORKER_MEMORY_VAR "HS_WORKER_MEMORY"
/* Test hook: a secret token (16 characters or more) set in the server's
 * environment; a request whose canonical text holds TOKEN:crash, :abort,
 * :hang or :memory makes its worker do that (TOKEN:steps:crash etc. only
 * in the steps of its run). Unset, nothing is looked at. */
#define WORKER_FAULT_VAR "HS_WORKER_FAULT"

enum {
    WORKER_MAGIC = 0x314b5748, /* "HWK1" */
    WORKER_GRACE_MS = 2000,    /* past the request's deadline before a kill */
    WORKER_JOBS = 1000,        /* jobs per worker before it is replaced */
    WORKER_WATCH_MS = 20       /* how often a running job's worker is looked at */
};

typedef enum worker_job_kind {
    WORKER_JOB_EXECUTE = 1, /* payload: the canonical request */
    WORKER_JOB_STEPS = 2    /* payload: api_steps_job_text's */
} worker_job_kind;

/* server -> worker, then the payload */
typedef struct worker_job {
    uint32_t magic;
    uint32_t kind;
    uint64_t len;
    int64_t deadline_ns; /* CLOCK_MONOTONIC, shared by all processes; 0: none */
    srv_limits limits;   /* the same executable: the same layout */
} worker_job;

/* worker -> server, then the outcome (worker_outcome_send) */
typedef struct worker_reply {
    uint32_t magic;
    uint32_t reserved;
} worker_reply;

typedef struct srv_workers srv_workers;

/* Starts n workers, each limited to memory bytes. NULL with *e set. */
srv_workers *srv_workers_new(int n, size_t memory, hs_error *e);
/* Stops and reaps every worker. */
void srv_workers_free(srv_workers *w);
/* Has ar computed by a worker; out is its outcome, or the error that says
 * why there is none (crash, memory limit, deadline, shutdown). */
void srv_workers_execute(srv *s, const api_request *ar, int64_t deadline_ns,
                         api_outcome *out);
/* The same for the steps of run result id (worker_steps.c's job). */
void srv_workers_steps(srv *s, const char *id, const char *payload, int64_t deadline_ns,
                       api_outcome *out);

/* ---- an outcome over the socket (worker_outcome.c) ------------------------ */

/* Sends out after a worker_reply; false when the socket is closed. */
bool worker_outcome_send(int fd, const api_outcome *out);
/* Reads an outcome (blocking); -1 at end of file or on a garbled stream. */
int worker_outcome_recv(int fd, api_outcome *out);

/* ---- the step timeline as a job (worker_steps.c) ------------------------ */

/* The steps of run result id (its stored request and summary) with
 * settings sp: out's summary is the steps JSON text (status 200) or an
 * error object. In a worker when the server has them, else here. */
void api_steps_compute(srv *s, const char *id, const char *request, const char *summary,
                       const api_steps_params *sp, int64_t deadline_ns, api_outcome *out);
/* A worker's side of that job. */
void api_steps_job_run(srv *s, const char *payload, int64_t deadline_ns, api_outcome *out);

#endif
