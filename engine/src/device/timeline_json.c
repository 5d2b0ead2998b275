/* timeline_json.c - the memory timeline of a run as JSON
 * (docs/MEMORY_TIMELINE.md): every buffer with its allocation and release
 * in program order (executed-instruction steps) and in simulated time, and
 * every host-link transfer on the DMA stream. */
#include <stdlib.h>

#include <jansson.h>

#include "device/device_internal.h"

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static const char *space_name(int memory_space)
{
    return memory_space == HS_MEMSPACE_HOST ? "host" : "device";
}

char *hs_memory_timeline_json(const hs_memory_timeline *t,
                              const hs_device_spec *spec,
                              const hs_run_stats *stats)
{
    json_t *root = json_object();
    json_t *bufs = json_array(), *xfers = json_array();
    if (!root || !bufs || !xfers) {
        json_decref(root);
        json_decref(bufs);
        json_decref(xfers);
        return NULL;
    }
    json_object_set_new(root, "schema", json_string("hloscope.memory_timeline/1"));
    if (spec) {
        json_t *d = json_object();
        json_object_set_new(d, "name", json_string(spec->name));
        json_object_set_new(d, "hbm_bytes", json_real(spec->hbm_bytes));
        json_object_set_new(d, "host_bytes", json_real(spec->host_bytes));
        json_object_set_new(d, "host_link_bandwidth",
                            json_real(spec->host_link_bandwidth));
        json_object_set_new(root, "device", d);
    }
    json_object_set_new(root, "steps", json_integer(t->steps));
    json_object_set_new(root, "end_time", json_real(t->end_time));
    if (stats) {
        json_t *s = json_object();
        json_object_set_new(s, "sim_seconds", json_real(stats->sim_seconds));
        json_object_set_new(s, "peak_device_bytes",
                            json_integer(stats->peak_device_bytes));
        json_object_set_new(s, "peak_host_bytes",
                            json_integer(stats->peak_host_bytes));
        json_object_set_new(s, "host_transfer_seconds",
                            json_real(stats->host_transfer_seconds));
        json_object_set_new(s, "host_transfer_bytes",
                            json_real(stats->host_transfer_bytes));
        json_object_set_new(s, "exposed_transfer_seconds",
                            json_real(stats->exposed_transfer_seconds));
        json_object_set_new(root, "stats", s);
    }
    for (int k = 0; k < t->n_buffers; k++) {
        const hs_buffer_record *r = &t->buffers[k];
        json_t *b = json_object();
        json_object_set_new(b, "id", json_integer(k));
        json_object_set_new(b, "instruction", json_string(r->instruction));
        json_object_set_new(b, "op_name", str_or_null(r->op_name));
        json_object_set_new(b, "computation", str_or_null(r->computation));
        json_object_set_new(b, "bytes", json_integer(r->bytes));
        json_object_set_new(b, "memory_space",
                            json_string(space_name(r->memory_space)));
        json_object_set_new(b, "kind", json_string(r->argument ? "argument"
                                                               : "allocated"));
        json_object_set_new(b, "alloc_step", json_integer(r->alloc_step));
        json_object_set_new(b, "free_step", r->free_step < 0
                                                ? json_null()
                                                : json_integer(r->free_step));
        json_object_set_new(b, "alloc_time", json_real(r->alloc_time));
        json_object_set_new(b, "free_time", r->free_time < 0
                                                ? json_null()
                                                : json_real(r->free_time));
        json_array_append_new(bufs, b);
    }
    for (int k = 0; k < t->n_transfers; k++) {
        const hs_transfer_record *r = &t->transfers[k];
        json_t *x = json_object();
        json_object_set_new(x, "instruction", json_string(r->instruction));
        json_object_set_new(x, "op_name", str_or_null(r->op_name));
        json_object_set_new(x, "bytes", json_integer(r->bytes));
        json_object_set_new(x, "to", json_string(space_name(r->to_memory_space)));
        json_object_set_new(x, "async", json_boolean(r->async));
        json_object_set_new(x, "issue_step", json_integer(r->issue_step));
        json_object_set_new(x, "issue_time", json_real(r->issue_time));
        json_object_set_new(x, "start_time", json_real(r->start_time));
        json_object_set_new(x, "end_time", json_real(r->end_time));
        json_object_set_new(x, "exposed_seconds", json_real(r->exposed_seconds));
        json_array_append_new(xfers, x);
    }
    json_object_set_new(root, "buffers", bufs);
    json_object_set_new(root, "transfers", xfers);
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return text;
}
