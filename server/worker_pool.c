/* worker_pool.c - the server's compile/run worker processes (worker.h):
 * one per pool thread, started at the server's start and again whenever
 * one dies or has done WORKER_JOBS jobs. A job goes to the idle worker
 * that last computed the same model (its compile cache has the
 * executable), else to any idle one. While a job runs, its pool thread
 * watches the worker: its resident size against the memory limit, the
 * request's deadline plus WORKER_GRACE_MS, the server's shutdown. A
 * worker that dies or is killed costs its request a JSON error, never the
 * server. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "hloscope/hs_process.h"
#include "worker.h"

#define AFFINITY 16 /* models remembered per worker */

typedef struct worker_proc {
    pid_t pid; /* 0: none running */
    int fd;
    int jobs;
    bool busy;
    uint64_t models[AFFINITY]; /* ring of the models it compiled */
    int next_model;
} worker_proc;

struct srv_workers {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n;
    char memory_entry[64]; /* HS_WORKER_MEMORY=<bytes>, for its RLIMIT_AS */
    worker_proc *procs;
};

static int start(srv_workers *w, worker_proc *p)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return errno;
    const char *const env[] = {w->memory_entry, NULL};
    hs_spawn_options o = {.role_var = WORKER_ROLE_VAR,
                          .role = "compute",
                          .argv0 = "hloscope-worker",
                          .env = env,
                          .ctl_fd = sv[1]};
    int e = hs_spawn_self(&o, &p->pid);
    close(sv[1]);
    if (e) {
        close(sv[0]);
        p->pid = 0;
        return e;
    }
    p->fd = sv[0];
    p->jobs = 0;
    memset(p->models, 0, sizeof p->models);
    return 0;
}

/* Closes the worker's socket (an idle worker exits at end of file),
 * kills it and reaps it; the wait status. */
static int stop(worker_proc *p, bool kill_it)
{
    int st = 0;
    if (p->pid <= 0)
        return 0;
    close(p->fd);
    if (kill_it)
        kill(p->pid, SIGKILL);
    while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR)
        ;
    p->pid = 0;
    p->fd = -1;
    return st;
}

srv_workers *srv_workers_new(int n, size_t memory, hs_error *e)
{
    srv_workers *w = calloc(1, sizeof *w);
    if (w)
        w->procs = calloc((size_t)n, sizeof *w->procs);
    if (!w || !w->procs) {
        free(w);
        hs_error_set(e, HS_ERR_NOMEM, "out of host memory");
        return NULL;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->n = n;
    snprintf(w->memory_entry, sizeof w->memory_entry, WORKER_MEMORY_VAR "=%zu", memory);
    for (int k = 0; k < n; k++) {
        int err = start(w, &w->procs[k]);
        if (err) {
            hs_error_set(e, HS_ERR_IO, "cannot start a worker process: %s", strerror(err));
            srv_workers_free(w);
            return NULL;
        }
    }
    return w;
}

void srv_workers_free(srv_workers *w)
{
    if (!w)
        return;
    for (int k = 0; k < w->n; k++)
        stop(&w->procs[k], true);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w->procs);
    free(w);
}

/* Which model a request compiles: its body and overrides, whatever the
 * endpoint (a compile and a run of one model share an executable). */
static uint64_t model_key(const api_request *ar)
{
    json_t *o = json_pack("{s:O, s:O}", "body", json_object_get(ar->canonical, "body"),
                          "query", json_object_get(ar->canonical, "query"));
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    uint64_t h = text ? XXH3_64bits(text, strlen(text)) : 0;
    free(text);
    json_decref(o);
    return h | 1; /* 0 marks an empty slot */
}

static worker_proc *acquire(srv_workers *w, uint64_t model)
{
    pthread_mutex_lock(&w->mu);
    worker_proc *got = NULL;
    while (!got) {
        for (int k = 0; k < w->n && !got; k++)
            for (int j = 0; j < AFFINITY && !w->procs[k].busy; j++)
                if (w->procs[k].models[j] == model) {
                    got = &w->procs[k];
                    break;
                }
        for (int k = 0; k < w->n && !got; k++)
            if (!w->procs[k].busy)
                got = &w->procs[k];
        if (!got)
            pthread_cond_wait(&w->cv, &w->mu);
    }
    got->busy = true;
    pthread_mutex_unlock(&w->mu);
    return got;
}

static void release(srv_workers *w, worker_proc *p)
{
    pthread_mutex_lock(&w->mu);
    p->busy = false;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void remember(worker_proc *p, uint64_t model)
{
    for (int j = 0; j < AFFINITY; j++)
        if (p->models[j] == model)
            return;
    p->models[p->next_model] = model;
    p->next_model = (p->next_model + 1) % AFFINITY;
}

/* Resident bytes of pid (/proc/pid/statm), 0 when unknown. */
static size_t resident(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/statm", (long)pid);
    FILE *f = fopen(path, "r");
    unsigned long long size = 0, rss = 0;
    if (!f)
        return 0;
    int n = fscanf(f, "%llu %llu", &size, &rss);
    fclose(f);
    return n == 2 ? (size_t)(rss * (unsigned long long)sysconf(_SC_PAGESIZE)) : 0;
}

typedef enum ending { ENDED_REPLY, ENDED_UNSENT, ENDED_DIED, ENDED_DEADLINE,
                      ENDED_MEMORY, ENDED_SHUTDOWN } ending;

/* Sends the job and waits for its outcome, watching the worker. */
static ending run_on(srv *s, worker_proc *p, const worker_job *job, const char *text,
                     api_outcome *out)
{
    if (!hs_write_all(p->fd, job, sizeof *job) || !hs_write_all(p->fd, text, job->len))
        return ENDED_UNSENT;
    int64_t kill_at = job->deadline_ns > 0
                          ? job->deadline_ns + (int64_t)WORKER_GRACE_MS * 1000000
                          : 0;
    for (;;) {
        struct pollfd pf = {.fd = p->fd, .events = POLLIN};
        int r = poll(&pf, 1, WORKER_WATCH_MS);
        if (r > 0)
            return worker_outcome_recv(p->fd, out) == 0 ? ENDED_REPLY : ENDED_DIED;
        if (r < 0 && errno != EINTR)
            return ENDED_DIED;
        if (atomic_load(&s->cancel))
            return ENDED_SHUTDOWN;
        if (kill_at > 0 && hs_now_ns() >= kill_at)
            return ENDED_DEADLINE;
        if (s->cfg.worker_memory > 0 && resident(p->pid) > s->cfg.worker_memory)
            return ENDED_MEMORY;
    }
}

static void describe_status(int st, char *out, size_t size)
{
    if (WIFSIGNALED(st))
        snprintf(out, size, "killed by signal %d, %s", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else if (WIFEXITED(st))
        snprintf(out, size, "exited with status %d", WEXITSTATUS(st));
    else
        snprintf(out, size, "stopped (wait status %d)", st);
}

/* What a job is, for its errors and the log. */
typedef struct job_label {
    const char *id;       /* the result id */
    const char *what;     /* "compile request", "steps of run" */
    size_t input_bytes;   /* of the canonical request */
    bool stored;          /* its outcome is the stored result */
} job_label;

/* The error of a job whose worker died or was killed; the request id goes
 * in the error object, so that the client can quote it. */
static void answer_ending(srv *s, const job_label *j, ending how, int st,
                          api_outcome *out)
{
    api_outcome_free(out); /* whatever a dying worker half sent */
    char msg[640], why[128];
    int status = 500;
    const char *code = "worker_crashed";
    bool keep = j->stored;
    describe_status(st, why, sizeof why);
    switch (how) {
    case ENDED_MEMORY:
        status = 422;
        code = "worker_memory_limit";
        snprintf(msg, sizeof msg,
                 "computing this request needed more host memory than a worker may "
                 "use (%zu MiB, --worker-memory); the worker was stopped, the server "
                 "goes on. Request id %s",
                 s->cfg.worker_memory >> 20, j->id);
        break;
    case ENDED_DEADLINE:
        status = 503;
        code = "deadline_exceeded";
        keep = false; /* like every deadline: pending, then interrupted */
        snprintf(msg, sizeof msg,
                 "deadline exceeded (limit --deadline-ms or ?timeout_ms): the worker "
                 "computing this request did not stop at the deadline and was killed "
                 "%d ms after it. Request id %s",
                 WORKER_GRACE_MS, j->id);
        break;
    case ENDED_SHUTDOWN:
        status = 503;
        code = "shutting_down";
        keep = false;
        snprintf(msg, sizeof msg, "the server is shutting down. Request id %s", j->id);
        break;
    default:
        snprintf(msg, sizeof msg,
                 "the worker process computing this request crashed (%s); the server "
                 "goes on. %s; please report it with its request id %s",
                 why,
                 j->stored ? "The request is stored as failed and never computed again "
                             "on its own (POST it again to retry)"
                           : "Nothing was stored",
                 j->id);
        break;
    }
    json_t *err = srv_error_object(code, msg, "", 0, 0, NULL);
    json_object_set_new(json_object_get(err, "error"), "request_id", json_string(j->id));
    api_outcome_error(out, status, keep, err);
    if (how == ENDED_DIED || how == ENDED_MEMORY)
        fprintf(stderr,
                "hloscope: worker %s on %s %s (%s): input fingerprint XXH3-128 %s of "
                "%zu bytes of canonical request; answered %d%s\n",
                how == ENDED_MEMORY ? "over its memory limit" : "crashed", j->what, j->id,
                why, j->id, j->input_bytes, status, keep ? ", stored as failed" : "");
}

/* Has a worker compute the job (kind, payload) into out. */
static void run_job(srv *s, uint32_t kind, const char *payload, const job_label *j,
                    uint64_t model, int64_t deadline_ns, api_outcome *out)
{
    memset(out, 0, sizeof *out);
    srv_workers *w = s->workers;
    worker_proc *p = acquire(w, model);
    worker_job job = {.magic = WORKER_MAGIC,
                      .kind = kind,
                      .len = strlen(payload),
                      .deadline_ns = deadline_ns,
                      .limits = s->cfg.limits};
    ending how = ENDED_UNSENT;
    /* A worker that died idle (found when the job is sent) is replaced and
     * the job sent again, once; a worker that died on the job is not
     * given another to crash. */
    for (int attempt = 0; attempt < 2 && how == ENDED_UNSENT; attempt++) {
        if (p->pid == 0 && start(w, p) != 0)
            break;
        how = run_on(s, p, &job, payload, out);
        if (how == ENDED_REPLY)
            break;
        int st = stop(p, true);
        if (how != ENDED_UNSENT)
            answer_ending(s, j, how, st, out);
    }
    if (how == ENDED_REPLY) {
        remember(p, model);
        if (out->out_of_memory) {
            /* In a worker, the engine's "out of host memory" is its limit. */
            char msg[512];
            snprintf(msg, sizeof msg,
                     "computing this request needed more host memory than a worker "
                     "may use (%zu MiB, --worker-memory). Request id %s",
                     s->cfg.worker_memory >> 20, j->id);
            json_t *err = srv_error_object("worker_memory_limit", msg, "", 0, 0, NULL);
            json_object_set_new(json_object_get(err, "error"), "request_id",
                                json_string(j->id));
            api_outcome_error(out, 422, j->stored, err);
            out->out_of_memory = true;
            stop(p, true); /* its heap may be in pieces: start afresh */
        } else if (++p->jobs >= WORKER_JOBS) {
            stop(p, false);
        }
    }
    if (p->pid == 0)
        start(w, p); /* ready for the next request; retried then if not */
    release(w, p);
    if (!out->summary)
        api_outcome_error(out, 503, false,
                          srv_error_object("host_out_of_memory",
                                           "cannot start a worker process", "", 0, 0,
                                           NULL));
}

void srv_workers_execute(srv *s, const api_request *ar, int64_t deadline_ns,
                         api_outcome *out)
{
    char what[32];
    snprintf(what, sizeof what, "%s request", ar->endpoint);
    job_label j = {.id = ar->id, .what = what, .input_bytes = strlen(ar->text),
                   .stored = true};
    run_job(s, WORKER_JOB_EXECUTE, ar->text, &j, model_key(ar), deadline_ns, out);
}

void srv_workers_steps(srv *s, const char *id, const char *payload, int64_t deadline_ns,
                       api_outcome *out)
{
    job_label j = {.id = id, .what = "steps of run", .input_bytes = strlen(payload),
                   .stored = false};
    run_job(s, WORKER_JOB_STEPS, payload, &j, XXH3_64bits(payload, strlen(payload)) | 1,
            deadline_ns, out);
}
