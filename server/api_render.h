/* api_render.h - graphs and memory timelines for the results endpoints,
 * drawn by the render module (hs_render.h) when the build has it. */
#ifndef HLOSCOPE_API_RENDER_H
#define HLOSCOPE_API_RENDER_H

#include "hloscope/hs_steps.h"
#include "http.h"

typedef enum api_graph_format {
    API_GRAPH_SVG,
    API_GRAPH_DOT,
    API_GRAPH_JSON
} api_graph_format;

/* Draws m (?expand=, ?computation=, ?around=&hops=, ?overlay= from rq)
 * into rp, FLOPs and seconds from device's cost model. 0, or -1 with *e
 * set (422 for too many nodes, 503 for a layout timeout). */
int api_render_graph(srv *s, const hs_module *m, const char *device,
                     const srv_request *rq, api_graph_format fmt,
                     srv_reply *rp, hs_error *e);
/* ?q= over every instruction of m (?computation= and what it calls), each
 * hit with its group path (hs_render_search_json). 422 at ?q when empty. */
int api_render_search(srv *s, const hs_module *m, const srv_request *rq,
                      srv_reply *rp, hs_error *e);
/* The device-memory timeline of m as SVG. */
int api_render_memory(srv *s, const hs_module *m, const char *device,
                      const srv_request *rq, srv_reply *rp, hs_error *e);

/* A step timeline (hs_steps_run's) as its two-lane Gantt chart in SVG
 * (hs_steps_svg, under the request's deadline). */
int api_render_steps(srv *s, const hs_steps_result *r, const srv_request *rq,
                     srv_reply *rp, hs_error *e);

#endif
