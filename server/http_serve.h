/* http_serve.h - what the three parts of `hloscope serve` give each other:
 * the options (http_serve_options.c), the transport (http_transport.c) and
 * the lifecycle (http_serve.c, cli_serve). */
#ifndef HLOSCOPE_HTTP_SERVE_H
#define HLOSCOPE_HTTP_SERVE_H

#include "http.h"

struct MHD_Daemon;

/* Parses serve's arguments into c (defaults already set); -1 after saying
 * why on stderr. --help prints the options and exits. */
int srv_parse_serve_args(int argc, char **argv, srv_config *c);

/* The read-deadline watchdog: a thread that closes connections past their
 * head or body deadline; NULL when out of memory. Stopped after the
 * daemon. */
struct srv_watchdog *srv_watchdog_start(const srv_config *c);
void srv_watchdog_stop(struct srv_watchdog *wd);

/* The libmicrohttpd daemon serving s on s->cfg's address, or NULL. */
struct MHD_Daemon *srv_daemon_start(srv *s);

#endif
