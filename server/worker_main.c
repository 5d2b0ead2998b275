/* worker_main.c - the life of a compile/run worker process (worker.h): a
 * constructor makes a process spawned as one a worker before main() runs;
 * it limits its own address space, then computes one job after another
 * with api_execute_compute, as the server process would, and sends back
 * each outcome, until the server closes the socket. It keeps its own
 * compile cache (the pool sends requests for the same model to the same
 * worker) and dies with the server. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "hloscope/hs_buffers.h"
#include "hloscope/hs_device.h"
#include "hloscope/hs_process.h"
#include "worker.h"

#if defined(__SANITIZE_ADDRESS__)
#define WORKER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WORKER_ASAN 1
#endif
#endif

/* The address space the worker holds now (its code, libraries, thread
 * stacks and OpenBLAS's work buffer), from /proc/self/statm; 0 when
 * unknown. */
static unsigned long long address_space_now(void)
{
    unsigned long long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%llu", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    return pages * (unsigned long long)sysconf(_SC_PAGESIZE);
}

/* RLIMIT_AS at what the worker holds once started plus the limit, so that
 * the limit is what its requests may take (a limit below the libraries'
 * own 300 MiB of address space would otherwise refuse everything): past
 * it malloc and mmap fail, and the engine answers "out of host memory"
 * (the pool says which limit). AddressSanitizer reserves terabytes of
 * shadow address space up front, so a sanitizer build relies on the
 * pool's watch of the resident size alone. */
static void limit_memory(void)
{
#ifndef WORKER_ASAN
    const char *v = getenv(WORKER_MEMORY_VAR);
    unsigned long long bytes = v ? strtoull(v, NULL, 10) : 0;
    if (bytes > 0) {
        bytes += address_space_now();
        struct rlimit r = {.rlim_cur = (rlim_t)bytes, .rlim_max = (rlim_t)bytes};
        setrlimit(RLIMIT_AS, &r);
    }
#endif
}

/* The test hook (worker.h): what a kernel bug would do, on demand. */
static void fault_hook(const char *token, uint32_t kind, const char *request,
                       api_outcome *out)
{
    const char *at = token && strlen(token) >= 16 ? strstr(request, token) : NULL;
    if (!at)
        return;
    const char *what = at + strlen(token);
    if (strncmp(what, ":steps", 6) == 0) { /* only in the run's step timeline */
        if (kind != WORKER_JOB_STEPS)
            return;
        what += 6;
    }
    if (strncmp(what, ":crash", 6) == 0)
        raise(SIGSEGV);
    if (strncmp(what, ":abort", 6) == 0)
        abort();
    if (strncmp(what, ":hang", 5) == 0)
        for (;;)
            pause();
    if (strncmp(what, ":memory", 7) == 0) {
        /* Touch memory until there is none (the address space limit) or
         * the pool kills the worker (its resident size); leaked on purpose. */
        for (;;) {
            char *p = malloc(16u << 20);
            if (!p)
                break;
            memset(p, 1, 16u << 20);
        }
        api_outcome_error(out, 503, false,
                          srv_error_object("host_out_of_memory", "out of host memory",
                                           "", 0, 0, NULL));
        out->out_of_memory = true;
    }
}

static void run_job(srv *ws, const worker_job *job, const char *text, api_outcome *out)
{
    memset(out, 0, sizeof *out);
    ws->cfg.limits = job->limits;
    api_request ar;
    memset(&ar, 0, sizeof ar);
    hs_error e;
    hs_error_clear(&e);
    if (job->kind == WORKER_JOB_EXECUTE && api_request_from_text(text, &ar, &e) != 0) {
        api_outcome_error(out, srv_status_for(e.status), false, srv_error_json(&e));
        out->out_of_memory = e.status == HS_ERR_NOMEM;
        return;
    }
    fault_hook(getenv(WORKER_FAULT_VAR), job->kind, text, out);
    if (!out->summary && job->kind == WORKER_JOB_STEPS) {
        api_steps_job_run(ws, text, job->deadline_ns, out);
    } else if (!out->summary) {
        int64_t hits0, misses0, hits1, misses1;
        int64_t assigned = hs_buffers_assignment_count();
        srv_metrics_compile_counts(ws->metrics, &hits0, &misses0);
        api_execute_compute(ws, &ar, job->deadline_ns, out);
        srv_metrics_compile_counts(ws->metrics, &hits1, &misses1);
        out->compile_hits = hits1 - hits0;
        out->compile_misses = misses1 - misses0;
        out->buffer_assignments = hs_buffers_assignment_count() - assigned;
    }
    api_request_free(&ar);
}

static void reply(const api_outcome *out)
{
    if (!worker_outcome_send(HS_SPAWN_CTL_FD, out))
        _exit(0); /* the server is gone (or no memory: the pool answers) */
}

__attribute__((noreturn)) static void worker_main(pid_t parent)
{
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (getppid() != parent)
        _exit(6);
    hs_device_warm_up(); /* before the limit: OpenBLAS hangs if short there */
    limit_memory();
    signal(SIGPIPE, SIG_IGN);
    /* A Ctrl-C in a terminal (or a stop that signals the whole group) also
     * reaches the workers: the server's shutdown decides when they stop
     * (it lets in-flight work finish first), so they do not die of it
     * and answer their requests as crashes. They end at the end of their
     * socket, by SIGKILL from the server, or with it (PR_SET_PDEATHSIG). */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    static srv ws; /* the worker's own: limits, cache, counters */
    srv_config_defaults(&ws.cfg);
    ws.compile_cache = hs_compile_cache_new(256);
    ws.metrics = srv_metrics_new();
    if (!ws.compile_cache || !ws.metrics)
        _exit(3);
    for (;;) {
        worker_job job;
        if (!hs_read_all(HS_SPAWN_CTL_FD, &job, sizeof job) || job.magic != WORKER_MAGIC ||
            job.len > SIZE_MAX / 2)
            _exit(0); /* the server closed the socket: our time is over */
        char *text = malloc(job.len + 1);
        if (!text || !hs_read_all(HS_SPAWN_CTL_FD, text, job.len))
            _exit(text ? 0 : 3);
        text[job.len] = '\0';
        api_outcome out;
        run_job(&ws, &job, text, &out);
        free(text);
        reply(&out);
        api_outcome_free(&out);
        srv_heap_release(); /* as the server's pool does (heap.c) */
    }
}

/* Runs before main() in the hloscope binary: a process the pool spawned
 * has our role in its environment and a stream socket as descriptor 3;
 * anything else is an ordinary start and goes on to main(). */
__attribute__((constructor)) static void become_worker(void)
{
    char role[16];
    pid_t parent;
    if (!hs_spawned_role(WORKER_ROLE_VAR, SOCK_STREAM, role, sizeof role, &parent))
        return;
    if (strcmp(role, "compute") == 0)
        worker_main(parent);
    _exit(7); /* a role from another version of this program */
}
