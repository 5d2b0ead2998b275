/* layout_spawn.c - how a layout process starts: posix_spawn of this
 * program's own executable, and the constructor that turns the new image
 * into the layout server or a worker before main() runs.
 *
 * Why exec and not fork: a fork copies one thread and every lock as it
 * was, so a child of a process where any thread ran can wait forever on a
 * lock whose owner does not exist in it. Debian 13's Pango starts a
 * fontconfig thread while Graphviz warms up, which hung every worker forked
 * from a warm server; the next library upgrade could do the same anywhere.
 * An exec'd image holds nothing of its parent but the descriptors and
 * environment we hand it.
 *
 * Why the program's own executable: the spawn and the entry point live in
 * this one object file, so any program that can ask for a layout (the CLI
 * and REST server, the unit tests, the benchmarks, another program linking
 * the engine) can also be its layout processes, with no helper binary to
 * install, find or keep at the same version. /proc/self/exe names the
 * running image even when its file was replaced by an upgrade.
 * HS_LAYOUT_EXE names another executable linking the engine, for hosts
 * whose executable is not one (an interpreter loading the engine). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "render/layout_internal.h"

#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
#define HS_SPAWN_CLOSEFROM 1 /* posix_spawn_file_actions_addclosefrom_np */
#endif

extern char **environ;

#define ROLE_VAR "HS_LAYOUT_PROCESS"

static const char *const role_names[] = {"server", "worker"};

/* The program's environment (fontconfig and Pango read theirs from it),
 * with our role, and OpenBLAS told not to start its thread pool: a layout
 * process never multiplies matrices. NULL when out of memory. */
static char **child_env(const char *role_entry)
{
    static const char blas[] = "OPENBLAS_NUM_THREADS=1";
    size_t n = 0;
    for (char **e = environ; e && *e; e++)
        n++;
    char **env = malloc((n + 3) * sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (char **e = environ; e && *e; e++)
        if (strncmp(*e, ROLE_VAR "=", sizeof ROLE_VAR) != 0 &&
            strncmp(*e, blas, sizeof "OPENBLAS_NUM_THREADS") != 0)
            env[k++] = *e;
    env[k++] = (char *)role_entry;
    env[k++] = (char *)blas;
    env[k] = NULL;
    return env;
}

int hs__layout_spawn(hs_layout_role role, int ctl_fd, pid_t *pid)
{
    const char *exe = getenv("HS_LAYOUT_EXE");
    if (!exe || !*exe)
        exe = "/proc/self/exe";
    /* dup2 of a descriptor onto itself would leave its close-on-exec flag
     * set on some C libraries: move it out of the way first. */
    int fd = ctl_fd, moved = -1;
    if (fd == HS_LAYOUT_CTL_FD) {
        moved = fcntl(fd, F_DUPFD_CLOEXEC, HS_LAYOUT_CTL_FD + 1);
        if (moved < 0)
            return errno;
        fd = moved;
    }
    char role_entry[64];
    snprintf(role_entry, sizeof role_entry, ROLE_VAR "=%s %ld",
             role_names[role], (long)getpid());
    char **env = child_env(role_entry);
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
    e = posix_spawn_file_actions_adddup2(&fa, fd, HS_LAYOUT_CTL_FD);
    if (!e)
        e = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (!e)
        e = posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
#ifdef HS_SPAWN_CLOSEFROM
    if (!e)
        e = posix_spawn_file_actions_addclosefrom_np(&fa, HS_LAYOUT_CTL_FD + 1);
#endif
    if (!e)
        e = posix_spawnattr_setsigdefault(&at, &all);
    if (!e)
        e = posix_spawnattr_setsigmask(&at, &none);
    if (!e)
        e = posix_spawnattr_setflags(&at,
                                     POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    char *argv[] = {"hloscope-layout", (char *)role_names[role], NULL};
    if (!e)
        e = posix_spawn(pid, exe, &fa, &at, argv, env);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    if (moved >= 0)
        close(moved);
    return e;
}

/* posix_spawn reset every signal, but a sanitizer runtime installs its
 * handlers again when the new image starts: a worker that crashes must die
 * of the signal, so that its caller reads "crashed (signal N)". */
static void default_signals(void)
{
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
}

/* Runs before main() in every program linking this file. A process we
 * spawned has our role in its environment, its spawner as parent and a
 * SOCK_SEQPACKET socket as descriptor 3; anything else is an ordinary start
 * of the program and goes on to main(). */
__attribute__((constructor)) static void become_layout_process(void)
{
    const char *v = getenv(ROLE_VAR);
    if (!v)
        return;
    char role[16];
    long parent;
    int type = 0;
    socklen_t len = sizeof type;
    if (sscanf(v, "%15s %ld", role, &parent) != 2 ||
        getsockopt(HS_LAYOUT_CTL_FD, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
        type != SOCK_SEQPACKET)
        return;
    if (getppid() != (pid_t)parent)
        _exit(6); /* the spawner is gone already */
    unsetenv(ROLE_VAR);
    default_signals();
#ifndef HS_SPAWN_CLOSEFROM
    hs__close_from(HS_LAYOUT_CTL_FD + 1);
#endif
    if (strcmp(role, role_names[HS_LAYOUT_ROLE_SERVER]) == 0)
        hs__layout_server_main();
    if (strcmp(role, role_names[HS_LAYOUT_ROLE_WORKER]) == 0)
        hs__layout_worker_main((pid_t)parent);
    _exit(7); /* a role from another version of this program */
}
