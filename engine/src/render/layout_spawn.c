/* layout_spawn.c - how a layout process starts: hs_spawn_self (ir's
 * process.c: posix_spawn of this program's own executable, and why), and
 * the constructor that turns the new image into the layout server or a
 * worker before main() runs. HS_LAYOUT_EXE names another executable
 * linking the engine, for hosts whose executable is not one (an
 * interpreter loading the engine). */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hloscope/hs_process.h"
#include "render/layout_internal.h"

#define ROLE_VAR "HS_LAYOUT_PROCESS"

static const char *const role_names[] = {"server", "worker"};

int hs__layout_spawn(hs_layout_role role, int ctl_fd, pid_t *pid)
{
    /* A layout process never multiplies matrices: OpenBLAS need not start
     * its thread pool. */
    static const char *const env[] = {"OPENBLAS_NUM_THREADS=1", NULL};
    hs_spawn_options o = {.role_var = ROLE_VAR,
                          .role = role_names[role],
                          .exe_var = "HS_LAYOUT_EXE",
                          .argv0 = "hloscope-layout",
                          .env = env,
                          .ctl_fd = ctl_fd};
    return hs_spawn_self(&o, pid);
}

/* Runs before main() in every program linking this file. A process we
 * spawned has our role in its environment, its spawner as parent and a
 * SOCK_SEQPACKET socket as descriptor 3; anything else is an ordinary start
 * of the program and goes on to main(). */
__attribute__((constructor)) static void become_layout_process(void)
{
    char role[16];
    pid_t parent;
    if (!hs_spawned_role(ROLE_VAR, SOCK_SEQPACKET, role, sizeof role, &parent))
        return;
    if (strcmp(role, role_names[HS_LAYOUT_ROLE_SERVER]) == 0)
        hs__layout_server_main();
    if (strcmp(role, role_names[HS_LAYOUT_ROLE_WORKER]) == 0)
        hs__layout_worker_main(parent);
    _exit(7); /* a role from another version of this program */
}
