/* layout_internal.h - the layout service's processes and what they say to
 * each other.
 *
 *   caller threads ──request + 2 fds (SOCK_SEQPACKET)──> layout server
 *                                                         │ hands the job to
 *   caller <──DOT / result frame (data socket)──> worker ─┘ a warm worker
 *   caller <──STARTED pid, FINISHED status (status socket)── layout server
 *
 * Every layout process starts from a clean image: the program spawns the
 * server, and the server its workers, with posix_spawn of the program's own
 * executable (/proc/self/exe), which a constructor in layout_spawn.c turns
 * into the server or a worker before main() runs. Nothing in them is a
 * copy of a process where a thread ran, so no lock can be held in them by a
 * thread that does not exist there; the libraries a worker loads (Pango
 * starts a fontconfig thread while Graphviz warms up) may start threads of
 * their own, because nothing ever forks from a worker.
 *
 * The server keeps HS_LAYOUT_SPARE workers warm and idle ahead of need,
 * so that a layout does not wait for an exec and Graphviz's start. It
 * hands each job to an idle worker (one job at a time; a worker runs up to
 * HS_LAYOUT_WORKER_JOBS of them), kills a worker at the job's deadline and
 * replaces it, and reports how each job ended, so the caller never waits on
 * a process it did not start. */
#ifndef HLOSCOPE_LAYOUT_INTERNAL_H
#define HLOSCOPE_LAYOUT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum {
    HS_LAYOUT_MAGIC = 0x32594c48, /* "HLY2": protocol 2 (spawned workers) */
    HS_LAYOUT_GRACE_MS = 2000,    /* caller waits this long past the
                                     deadline for the server's report */
    HS_LAYOUT_START_MS = 5000,    /* a server or worker not ready by then
                                     is killed (and started again) */
    HS_LAYOUT_START_TRIES = 3,
    HS_LAYOUT_IDLE_MS = 30000,    /* idle workers beyond the spares (after
                                     a burst) leave after this long */
    HS_LAYOUT_CTL_FD = 3          /* a layout process's control socket
                                     (HS_SPAWN_CTL_FD) */
};

/* Defaults of the server's pool, each overridable by the environment
 * variable of the same name (read by the server at its start). */
enum {
    HS_LAYOUT_SPARE = 2,         /* idle warm workers kept ready */
    HS_LAYOUT_WORKER_JOBS = 100, /* jobs per worker before it is replaced
                                    (1: a fresh worker for every job) */
    HS_LAYOUT_MAX_WORKERS = 16   /* workers at once; more requests queue */
};

/* Engines and formats the worker accepts, by index. */
extern const char *const hs__layout_engines[];
extern const int hs__layout_n_engines;
extern const char *const hs__layout_formats[];
extern const int hs__layout_n_formats;

/* caller -> server, with the data and status sockets as SCM_RIGHTS; the
 * same message server -> worker, with the data socket only */
typedef struct hs_layout_request {
    uint32_t magic;
    uint32_t engine, format;
    uint32_t reserved;
    int64_t deadline_ms; /* CLOCK_MONOTONIC, shared by all processes */
    uint64_t dot_len;
} hs_layout_request;

/* worker -> caller on the data socket, before the payload */
typedef enum hs_layout_result {
    HS_LAYOUT_OK = 0,
    HS_LAYOUT_BAD_INPUT, /* DOT syntax error: payload is the message */
    HS_LAYOUT_FAILED     /* layout or rendering failed: payload message */
} hs_layout_result;

typedef struct hs_layout_frame {
    uint32_t magic;
    uint32_t result;
    uint64_t len;
} hs_layout_frame;

typedef enum hs_layout_event {
    HS_LAYOUT_STARTED = 1,  /* server -> caller: a worker has the job (pid) */
    HS_LAYOUT_FINISHED = 2, /* server -> caller: the job is over (wstatus
                               when the worker died, timed_out, error) */
    HS_LAYOUT_READY = 3,    /* server -> program, worker -> server */
    HS_LAYOUT_DONE = 4      /* worker -> server: answered, ready for more */
} hs_layout_event;

typedef struct hs_layout_status {
    uint32_t magic;
    int32_t event;
    int32_t pid;
    int32_t wstatus;   /* as from waitpid; 0 when the worker lives on */
    int32_t timed_out; /* killed at the deadline (or never started) */
    int32_t error;     /* errno when no worker could be started */
} hs_layout_status;

int64_t hs__now_ms(void);
/* Sends one status message (a SOCK_SEQPACKET record or stream bytes). */
bool hs__send_status(int fd, int event, pid_t pid, int wstatus,
                     bool timed_out, int error);

/* ---- starting a layout process (layout_spawn.c) -------------------------- */

typedef enum hs_layout_role {
    HS_LAYOUT_ROLE_SERVER,
    HS_LAYOUT_ROLE_WORKER
} hs_layout_role;

/* Starts a new process from this program's executable (or the one named by
 * HS_LAYOUT_EXE) in the given role, with ctl_fd as its descriptor 3
 * (hs_spawn_self). 0 or an errno value. */
int hs__layout_spawn(hs_layout_role role, int ctl_fd, pid_t *pid);

/* The server's loop on its control socket; never returns. */
void hs__layout_server_main(void) __attribute__((noreturn));
/* A worker's life: warm Graphviz, say READY, run jobs until the server
 * closes the socket. It dies with the server (pid server). */
void hs__layout_worker_main(pid_t server) __attribute__((noreturn));

/* ---- a job's graph (layout_graph.c) ---------------------------------------- */

struct Agraph_s;
/* The DOT read with the disciplines that make its drawing depend on the
 * DOT alone; NULL on a syntax error (Graphviz reports it). */
struct Agraph_s *hs__layout_read_graph(char *dot, size_t len);
/* After agclose of that graph: its memory starts over, zeroed. */
void hs__layout_graph_closed(void);

/* The server's pid, or -1 when none is running, and how many servers were
 * started so far (for tests). */
pid_t hs__layout_server_pid(void);
int hs__layout_server_starts(void);

#endif
