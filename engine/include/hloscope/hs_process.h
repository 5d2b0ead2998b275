/*
 * hs_process.h - helper processes started from this program's own
 * executable: the layout service (render/) and the server's compile/run
 * workers (server/worker_*.c) are both made this way.
 *
 * A helper is posix_spawn'ed from /proc/self/exe (never forked: a fork of a
 * process where threads ran can inherit a lock whose owner does not exist
 * in the child) with a role in its environment and a socket as descriptor
 * HS_SPAWN_CTL_FD. A constructor of the role's code calls hs_spawned_role
 * before main() runs and, when it is that helper, never returns to main.
 *
 *     // the parent
 *     hs_spawn_options o = {.role_var = "HS_X_PROCESS", .role = "worker",
 *                           .argv0 = "hloscope-x", .ctl_fd = sv[1]};
 *     hs_spawn_self(&o, &pid);
 *     // the child, in a constructor of the same program
 *     char role[16];
 *     pid_t parent;
 *     if (hs_spawned_role("HS_X_PROCESS", SOCK_STREAM, role, sizeof role, &parent))
 *         x_worker_main(parent); // noreturn
 */
#ifndef HLOSCOPE_HS_PROCESS_H
#define HLOSCOPE_HS_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum { HS_SPAWN_CTL_FD = 3 }; /* a helper's control socket */

typedef struct hs_spawn_options {
    const char *role_var; /* environment variable carrying the role */
    const char *role;     /* one word; the parent's pid is appended */
    const char *exe_var;  /* names another executable linking the engine,
                             for hosts whose own is not one (NULL: none) */
    const char *argv0;    /* what ps shows */
    /* "NAME=value" entries set in the helper, replacing the program's
     * entries of those names; NULL-terminated, or NULL */
    const char *const *env;
    int ctl_fd;           /* becomes the helper's HS_SPAWN_CTL_FD */
} hs_spawn_options;

/* Starts the helper: this program's executable with ctl_fd as its
 * descriptor 3, /dev/null as stdin and stdout, stderr shared, no other
 * descriptor, every signal at its default and none blocked. 0 or an errno
 * value. Safe to call from any thread of a threaded program. */
int hs_spawn_self(const hs_spawn_options *o, pid_t *pid);

/* In a constructor: is this process a helper spawned with role_var, its
 * descriptor 3 a socket of sock_type? Then it fills role and *parent,
 * removes role_var from the environment (the helper's own helpers start
 * clean), puts every signal back to its default (a sanitizer runtime
 * installs its handlers again at the start of an image, but a helper that
 * crashes must die of the signal for its parent to read it) and closes
 * every other descriptor. A helper whose parent is gone already exits. */
bool hs_spawned_role(const char *role_var, int sock_type, char *role,
                     size_t role_size, pid_t *parent);

/* Writes all n bytes (EINTR retried, no SIGPIPE on sockets). */
bool hs_write_all(int fd, const void *data, size_t n);
/* Reads exactly n bytes; false at end of file or on an error. */
bool hs_read_all(int fd, void *data, size_t n);
/* Closes every descriptor from `from` on. */
void hs_close_from(int from);

#endif
