/* api_routes.c - the route table: every endpoint of the REST API, once.
 * docs/openapi.json documents each of them (a test checks both agree). */
#include "api.h"

const srv_route srv_routes[] = {
    {"GET", "/healthz", "healthz", api_healthz},
    {"GET", "/metrics", "metrics", api_prometheus},
    {"GET", "/v1/openapi.json", "openapi", api_openapi},
    {"GET", "/v1/devices", "devices", api_devices},
    {"GET", "/v1/examples", "examples", api_examples_list},
    {"GET", "/v1/examples/{name}", "example", api_example_get},
    {"POST", "/v1/compile", "compile", api_post_compile},
    {"POST", "/v1/run", "run", api_post_run},
    {"POST", "/v1/compare", "compare", api_post_compare},
    {"GET", "/v1/results/{id}", "result", api_result_summary},
    {"GET", "/v1/results/{id}/hlo", "result_hlo", api_result_hlo},
    {"GET", "/v1/results/{id}/graph.svg", "result_graph_svg", api_result_graph_svg},
    {"GET", "/v1/results/{id}/graph.dot", "result_graph_dot", api_result_graph_dot},
    {"GET", "/v1/results/{id}/graph.json", "result_graph_json", api_result_graph_json},
    {"GET", "/v1/results/{id}/search", "result_search", api_result_search},
    {"GET", "/v1/results/{id}/memory.json", "result_memory_json", api_result_memory_json},
    {"GET", "/v1/results/{id}/memory.svg", "result_memory_svg", api_result_memory_svg},
    {"GET", "/v1/results/{id}/steps.json", "result_steps_json", api_result_steps_json},
    {"GET", "/v1/results/{id}/steps.svg", "result_steps_svg", api_result_steps_svg},
    {"GET", "/v1/results/{id}/metrics", "result_metrics", api_result_metrics},
    {"GET", "/v1/results/{id}/source", "result_source", api_result_source},
    {"GET", "/v1/results/{id}/whatif.json", "result_whatif_json", api_result_whatif_json},
    {"GET", "/v1/results/{id}/diff/{other}", "result_diff", api_result_diff},
};
const int srv_routes_count = (int)(sizeof srv_routes / sizeof srv_routes[0]);
