/* layout_internal.h - the layout service's processes and what they say to
 * each other.
 *
 *   caller threads ──request + 2 fds (SOCK_SEQPACKET)──> layout server
 *                                                         │ fork per request
 *   caller <──DOT / result frame (data socket)──> worker ─┘
 *   caller <──STARTED pid, EXITED status (status socket)── layout server
 *
 * The layout server is forked once (hs_render_init, or the first layout)
 * and is single-threaded, so every worker it forks is a clean copy: no
 * lock of another thread can be held in it, whatever allocator the
 * program uses. The one fork from the program is checked: the server first
 * allocates a block of every allocator size class (a lock that another
 * thread held at the fork would hang it there), warms up, and only then
 * says READY; one that does not is killed and forked again. The server warms Graphviz once; workers inherit it. It
 * kills a worker at the request's deadline and reports how each worker
 * ended, so the caller never waits on a process it did not start. */
#ifndef HLOSCOPE_LAYOUT_INTERNAL_H
#define HLOSCOPE_LAYOUT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum {
    HS_LAYOUT_MAGIC = 0x594c5348, /* "HSLY" */
    HS_LAYOUT_GRACE_MS = 2000,    /* caller waits this long past the
                                     deadline for the server's report */
    HS_LAYOUT_START_MS = 5000,    /* a server not ready by then is killed
                                     and started again */
    HS_LAYOUT_START_TRIES = 3,
};

/* Engines and formats the worker accepts, by index. */
extern const char *const hs__layout_engines[];
extern const int hs__layout_n_engines;
extern const char *const hs__layout_formats[];
extern const int hs__layout_n_formats;

/* caller -> server, with the data and status sockets as SCM_RIGHTS */
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

/* server -> caller on the status socket */
typedef enum hs_layout_event {
    HS_LAYOUT_STARTED = 1, /* pid set */
    HS_LAYOUT_EXITED = 2,  /* wstatus, timed_out set */
    HS_LAYOUT_READY = 3    /* server -> program on the control socket */
} hs_layout_event;

typedef struct hs_layout_status {
    uint32_t magic;
    int32_t event;
    int32_t pid;
    int32_t wstatus;   /* as from waitpid */
    int32_t timed_out; /* killed at the deadline (or never started) */
    int32_t error;     /* errno when the server could not fork */
} hs_layout_status;

int64_t hs__now_ms(void);
/* Writes all n bytes (EINTR retried, no SIGPIPE on sockets). */
bool hs__write_all(int fd, const void *data, size_t n);
/* Closes every descriptor from `from` on. */
void hs__close_from(int from);
/* Every signal back to its default action, none blocked: a helper process
 * must not run the program's handlers (they belong to its other state). */
void hs__default_signals(void);

/* The server's loop on control socket fd; never returns. */
void hs__layout_server_main(int fd) __attribute__((noreturn));
/* Loads Graphviz's plugins and text metrics once (in the server). */
void hs__layout_warm_up(void);
/* A worker: reads the DOT from data_fd, lays it out, writes the frame and
 * payload, exits. It dies with the server (pid server). */
void hs__layout_worker_main(int data_fd, const hs_layout_request *rq,
                            pid_t server) __attribute__((noreturn));

/* The server's pid, or -1 when none is running, and how many servers were
 * forked so far (for tests). */
pid_t hs__layout_server_pid(void);
int hs__layout_server_forks(void);

#endif
