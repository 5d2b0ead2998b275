/* process.c - helper processes spawned from the program's own executable
 * (hs_process.h): the layout service and the server's compile/run workers.
 *
 * Why exec and not fork: a fork copies one thread and every lock as it
 * was, so a child of a process where any thread ran can wait forever on a
 * lock whose owner does not exist in it. Debian 13's Pango starts a
 * fontconfig thread while Graphviz warms up, which hung every layout worker
 * forked from a warm server; the next library upgrade could do the same
 * anywhere. An exec'd image holds nothing of its parent but the
 * descriptors and environment we hand it.
 *
 * Why the program's own executable: a helper's entry point is a
 * constructor linked into the program, so any program that can ask for a
 * helper (the CLI and REST server, the unit tests, the benchmarks) can also
 * be one, with no helper binary to install, find or keep at the same
 * version. /proc/self/exe names the running image even when its file was
 * replaced by an upgrade. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hloscope/hs_process.h"

#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
#define HS_SPAWN_CLOSEFROM 1 /* posix_spawn_file_actions_addclosefrom_np */
#endif

extern char **environ;

/* Does entry ("NAME=value") set the variable named by `named` (also
 * "NAME=value", or "NAME")? */
static bool same_name(const char *entry, const char *named)
{
    size_t n = strcspn(named, "=");
    return strncmp(entry, named, n) == 0 && entry[n] == '=';
}

/* The program's environment (fontconfig and Pango read theirs from it)
 * without role_var and the names `extra` sets, then extra and the role.
 * NULL when out of memory. */
static char **child_env(const char *role_var, const char *const *extra,
                        const char *role_entry)
{
    size_t n = 0, n_extra = 0;
    for (char **e = environ; e && *e; e++)
        n++;
    while (extra && extra[n_extra])
        n_extra++;
    char **env = malloc((n + n_extra + 2) * sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (char **e = environ; e && *e; e++) {
        bool drop = same_name(*e, role_var);
        for (size_t j = 0; j < n_extra && !drop; j++)
            drop = same_name(*e, extra[j]);
        if (!drop)
            env[k++] = *e;
    }
    for (size_t j = 0; j < n_extra; j++)
        env[k++] = (char *)extra[j];
    env[k++] = (char *)role_entry;
    env[k] = NULL;
    return env;
}

int hs_spawn_self(const hs_spawn_options *o, pid_t *pid)
{
    const char *exe = o->exe_var ? getenv(o->exe_var) : NULL;
    if (!exe || !*exe)
        exe = "/proc/self/exe";
    /* dup2 of a descriptor onto itself would leave its close-on-exec flag
     * set on some C libraries: move it out of the way first. */
    int fd = o->ctl_fd, moved = -1;
    if (fd == HS_SPAWN_CTL_FD) {
        moved = fcntl(fd, F_DUPFD_CLOEXEC, HS_SPAWN_CTL_FD + 1);
        if (moved < 0)
            return errno;
        fd = moved;
    }
    char role_entry[128];
    snprintf(role_entry, sizeof role_entry, "%s=%s %ld", o->role_var, o->role,
             (long)getpid());
    char **env = child_env(o->role_var, o->env, role_entry);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    int e = env ? 0 : ENOMEM;
    if (!e)
        e = posix_spawn_file_actions_init(&fa);
    if (!e && (e = posix_spawnattr_init(&at)) != 0)
        posix_spawn_file_actions_destroy(&fa);
    if (e) {
        free(env);
        if (moved >= 0)
            close(moved);
        return e;
    }
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    e = posix_spawn_file_actions_adddup2(&fa, fd, HS_SPAWN_CTL_FD);
    if (!e)
        e = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (!e)
        e = posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
#ifdef HS_SPAWN_CLOSEFROM
    if (!e)
        e = posix_spawn_file_actions_addclosefrom_np(&fa, HS_SPAWN_CTL_FD + 1);
#endif
    if (!e)
        e = posix_spawnattr_setsigdefault(&at, &all);
    if (!e)
        e = posix_spawnattr_setsigmask(&at, &none);
    if (!e)
        e = posix_spawnattr_setflags(&at,
                                     POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    char *argv[] = {(char *)o->argv0, (char *)o->role, NULL};
    if (!e)
        e = posix_spawn(pid, exe, &fa, &at, argv, env);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    if (moved >= 0)
        close(moved);
    return e;
}

bool hs_spawned_role(const char *role_var, int sock_type, char *role,
                     size_t role_size, pid_t *parent)
{
    const char *v = getenv(role_var);
    if (!v)
        return false;
    char word[32];
    long ppid;
    int type = 0;
    socklen_t len = sizeof type;
    if (sscanf(v, "%31s %ld", word, &ppid) != 2 ||
        getsockopt(HS_SPAWN_CTL_FD, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
        type != sock_type)
        return false;
    if (getppid() != (pid_t)ppid)
        _exit(6); /* the spawner is gone already */
    unsetenv(role_var);
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
#ifndef HS_SPAWN_CLOSEFROM
    hs_close_from(HS_SPAWN_CTL_FD + 1);
#endif
    snprintf(role, role_size, "%s", word);
    *parent = (pid_t)ppid;
    return true;
}

bool hs_write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == ENOTSOCK)
            w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

bool hs_read_all(int fd, void *data, size_t n)
{
    char *p = data;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        p += r;
        n -= (size_t)r;
    }
    return true;
}

void hs_close_from(int from)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)from, ~0u, 0u) == 0)
        return;
#endif
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
        max = 65536;
    for (long k = from; k < max; k++)
        close((int)k);
}
