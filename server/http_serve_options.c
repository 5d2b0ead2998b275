/* http_serve_options.c - the `serve` command's options: their defaults
 * (srv_config_defaults), the table of flags with their help, and parsing
 * argv into a srv_config. docs/API.md lists them. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "http_serve.h"
#include "hloscope/hs_model.h"

void srv_config_defaults(srv_config *c)
{
    memset(c, 0, sizeof *c);
    c->bind = SRV_DEFAULT_BIND;
    c->port = SRV_DEFAULT_PORT;
    c->data_dir = SRV_DEFAULT_DATA;
#ifdef HS_EXAMPLES_DIR
    c->examples_dir = HS_EXAMPLES_DIR;
#endif
#ifdef HS_WEB_DIR
    c->web_dir = HS_WEB_DIR;
#endif
    c->threads = 4;
    c->workers = 2;
    c->isolate = 1;
    c->worker_memory = SRV_DEFAULT_WORKER_MEMORY;
    c->conn_limit = 1024;
    /* A class behind one NAT address shares the per-IP budget (40 browsers
     * with 6 connections each), and slow clients no longer hold slots for
     * long: the read deadlines below close them. */
    c->per_ip_limit = 256;
    c->conn_timeout_s = 20;
    c->header_timeout_s = SRV_DEFAULT_HEADER_TIMEOUT_S;
    c->body_timeout_s = SRV_DEFAULT_BODY_TIMEOUT_S;
    c->conn_memory = 64 * 1024;
    c->cache_bytes = SRV_DEFAULT_CACHE_BYTES;
    c->max_store_bytes = SRV_DEFAULT_MAX_STORE_BYTES;
    c->shutdown_grace_ms = 10000;
    c->limits.max_body_bytes = SRV_DEFAULT_MAX_BODY;
    c->limits.max_json_depth = HS_MODEL_DEFAULT_MAX_JSON_DEPTH;
    c->limits.max_layers = HS_MODEL_DEFAULT_MAX_LAYERS;
    c->limits.max_tensor_elements = HS_MODEL_DEFAULT_MAX_TENSOR_ELEMENTS;
    c->limits.max_instructions = SRV_DEFAULT_MAX_INSTRUCTIONS;
    c->limits.max_run_flops = SRV_DEFAULT_MAX_RUN_FLOPS;
    c->limits.max_run_bytes = SRV_DEFAULT_MAX_RUN_BYTES;
    c->limits.max_render_nodes = SRV_DEFAULT_MAX_RENDER_NODES;
    c->limits.deadline_ms = SRV_DEFAULT_DEADLINE_MS;
    c->limits.max_inflight = SRV_DEFAULT_MAX_INFLIGHT;
}

typedef enum { OPT_STR, OPT_INT, OPT_I64, OPT_UINT, OPT_SIZE, OPT_DBL } opt_kind;

typedef struct option_row {
    const char *flag;
    opt_kind kind;
    size_t offset;
    const char *help;
} option_row;

#define CFG(f) offsetof(srv_config, f)
static const option_row k_options[] = {
    {"--port", OPT_INT, CFG(port), "TCP port (0: any free port, printed)"},
    {"--bind", OPT_STR, CFG(bind), "address to listen on"},
    {"--data", OPT_STR, CFG(data_dir), "directory of the SQLite store"},
    {"--examples", OPT_STR, CFG(examples_dir), "directory of example models"},
    {"--web", OPT_STR, CFG(web_dir), "built browser explorer (web/dist)"},
    {"--threads", OPT_INT, CFG(threads), "libmicrohttpd event-loop threads"},
    {"--workers", OPT_INT, CFG(workers), "compile/run/render worker threads"},
    {"--max-connections", OPT_UINT, CFG(conn_limit), "open connections"},
    {"--max-per-ip", OPT_UINT, CFG(per_ip_limit), "connections per client IP (0: no limit)"},
    {"--connection-timeout", OPT_UINT, CFG(conn_timeout_s), "idle seconds"},
    {"--header-timeout", OPT_UINT, CFG(header_timeout_s),
     "seconds to send a request head (0: none)"},
    {"--body-timeout", OPT_UINT, CFG(body_timeout_s),
     "seconds to send a request body (0: none)"},
    {"--connection-memory", OPT_SIZE, CFG(conn_memory), "bytes of headers per connection"},
    {"--cache-bytes", OPT_SIZE, CFG(cache_bytes), "artefact LRU budget"},
    {"--max-store-bytes", OPT_I64, CFG(max_store_bytes),
     "SQLite store bytes, then eviction (0: none)"},
    {"--shutdown-grace-ms", OPT_I64, CFG(shutdown_grace_ms), "in-flight work at shutdown"},
    {"--max-body", OPT_SIZE, CFG(limits.max_body_bytes), "request body bytes (413)"},
    {"--max-json-depth", OPT_INT, CFG(limits.max_json_depth), "JSON nesting"},
    {"--max-layers", OPT_I64, CFG(limits.max_layers), "blocks after repeat"},
    {"--max-tensor-elements", OPT_I64, CFG(limits.max_tensor_elements), "elements of one tensor"},
    {"--max-instructions", OPT_I64, CFG(limits.max_instructions), "traced instructions"},
    {"--max-run-flops", OPT_DBL, CFG(limits.max_run_flops), "FLOPs a run may execute"},
    {"--max-run-bytes", OPT_DBL, CFG(limits.max_run_bytes), "bytes a run may touch"},
    {"--max-render-nodes", OPT_I64, CFG(limits.max_render_nodes), "nodes in one graph"},
    {"--deadline-ms", OPT_I64, CFG(limits.deadline_ms), "per request (0: none)"},
    {"--max-inflight", OPT_INT, CFG(limits.max_inflight), "compiles/runs at once (429)"},
    {"--inline-work", OPT_INT, CFG(inline_work),
     "1: work on the event loop (to measure)"},
    {"--isolate", OPT_INT, CFG(isolate),
     "1: compiles/runs in worker processes; 0: in process"},
    {"--worker-memory", OPT_SIZE, CFG(worker_memory),
     "address space a worker's requests may take (0: none)"},
};
#define N_OPTIONS ((int)(sizeof k_options / sizeof k_options[0]))

static void serve_usage(FILE *f)
{
    srv_config d;
    srv_config_defaults(&d);
    fprintf(f, "usage: hloscope serve [options]\n\noptions (defaults in docs/API.md):\n");
    for (int k = 0; k < N_OPTIONS; k++) {
        const option_row *o = &k_options[k];
        const void *v = (const char *)&d + o->offset;
        char def[64];
        switch (o->kind) {
        case OPT_STR: {
            const char *str = *(const char *const *)v;
            snprintf(def, sizeof def, "%s", str ? str : "-");
            break;
        }
        case OPT_INT: snprintf(def, sizeof def, "%d", *(const int *)v); break;
        case OPT_UINT: snprintf(def, sizeof def, "%u", *(const unsigned *)v); break;
        case OPT_I64: snprintf(def, sizeof def, "%lld", (long long)*(const int64_t *)v); break;
        case OPT_SIZE: snprintf(def, sizeof def, "%zu", *(const size_t *)v); break;
        case OPT_DBL: snprintf(def, sizeof def, "%g", *(const double *)v); break;
        }
        fprintf(f, "  %-22s %-44s [%s]\n", o->flag, o->help, def);
    }
}

int srv_parse_serve_args(int argc, char **argv, srv_config *c)
{
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            serve_usage(stdout);
            exit(0);
        }
        const option_row *o = NULL;
        for (int k = 0; k < N_OPTIONS; k++)
            if (strcmp(argv[i], k_options[k].flag) == 0)
                o = &k_options[k];
        if (!o) {
            fprintf(stderr, "hloscope serve: unknown option '%s'\n", argv[i]);
            serve_usage(stderr);
            return -1;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "hloscope serve: %s needs a value\n", argv[i]);
            return -1;
        }
        const char *v = argv[++i];
        char *end = NULL;
        void *field = (char *)c + o->offset;
        errno = 0;
        switch (o->kind) {
        case OPT_STR: *(const char **)field = v; end = (char *)v + strlen(v); break;
        case OPT_INT: *(int *)field = (int)strtol(v, &end, 10); break;
        case OPT_UINT: *(unsigned *)field = (unsigned)strtoul(v, &end, 10); break;
        case OPT_I64: *(int64_t *)field = strtoll(v, &end, 10); break;
        case OPT_SIZE: *(size_t *)field = (size_t)strtoull(v, &end, 10); break;
        case OPT_DBL: *(double *)field = strtod(v, &end); break;
        }
        if (errno || !end || *end || end == v) {
            fprintf(stderr, "hloscope serve: %s: bad value '%s'\n", o->flag, v);
            return -1;
        }
    }
    if (c->threads < 1 || c->workers < 1 || c->port < 0 || c->port > 65535 ||
        c->limits.max_inflight < 1 || c->limits.max_json_depth < 1) {
        fprintf(stderr, "hloscope serve: --threads, --workers, --max-inflight and "
                        "--max-json-depth must be >= 1; --port in [0, 65535]\n");
        return -1;
    }
    return 0;
}
