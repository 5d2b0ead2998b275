/* hello_mhd.c - a bare libmicrohttpd server with the same thread settings
 * as `hloscope serve` (internal epoll thread pool of 4, turbo), answering
 * every request with a fixed body: the baseline bench_http.sh compares the
 * REST server against.
 *     hello_mhd [PORT]     0 (default) picks a free port; prints its URL */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

static const char k_body[] = "{\"hello\":\"world\"}";

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    (void)cls, (void)url, (void)method, (void)version, (void)upload;
    if (!*con_cls) { /* first call: headers only */
        *con_cls = (void *)1;
        return MHD_YES;
    }
    *upload_size = 0;
    struct MHD_Response *r = MHD_create_response_from_buffer(
        sizeof k_body - 1, (void *)k_body, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ok;
}

int main(int argc, char **argv)
{
    unsigned port = argc > 1 ? (unsigned)atoi(argv[1]) : 0;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_TURBO,
        (uint16_t)port, NULL, NULL, on_request, NULL,
        MHD_OPTION_THREAD_POOL_SIZE, 4u, MHD_OPTION_CONNECTION_LIMIT, 1024u,
        MHD_OPTION_CONNECTION_TIMEOUT, 60u, MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u,
        MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "hello_mhd: cannot listen\n");
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("hello_mhd: serving http://127.0.0.1:%u/\n", info ? info->port : port);
    fflush(stdout);
    int sig;
    sigwait(&set, &sig);
    MHD_stop_daemon(d);
    return 0;
}
