/* http_router.c - matching a method and path against the route table.
 * Patterns are matched segment by segment; "{x}" captures one segment. */
#include <stdio.h>
#include <string.h>

#include "http.h"

/* Does pattern match path? Captures {..} segments into rq->params. */
static bool match(const char *pattern, const char *path, srv_request *rq)
{
    int n_params = 0;
    const char *p = pattern, *u = path;
    while (*p && *u) {
        if (*p != '/' || *u != '/')
            return false;
        p++, u++;
        size_t plen = strcspn(p, "/"), ulen = strcspn(u, "/");
        if (plen >= 2 && p[0] == '{' && p[plen - 1] == '}') {
            if (ulen == 0 || ulen >= sizeof rq->params[0] ||
                n_params >= SRV_MAX_PARAMS)
                return false;
            if (rq) {
                memcpy(rq->params[n_params], u, ulen);
                rq->params[n_params][ulen] = '\0';
            }
            n_params++;
        } else if (plen != ulen || strncmp(p, u, plen) != 0) {
            return false;
        }
        p += plen, u += ulen;
    }
    if (*p || *u)
        return false;
    if (rq)
        rq->n_params = n_params;
    return true;
}

int srv_route_match(const char *method, const char *path, srv_request *rq,
                    char *allow, size_t allow_size)
{
    bool path_known = false;
    size_t used = 0;
    if (allow_size)
        allow[0] = '\0';
    /* HEAD is answered like GET (libmicrohttpd drops the body). */
    const char *m = strcmp(method, "HEAD") == 0 ? "GET" : method;
    for (int k = 0; k < srv_routes_count; k++) {
        if (!match(srv_routes[k].pattern, path, NULL))
            continue;
        if (strcmp(srv_routes[k].method, m) == 0) {
            match(srv_routes[k].pattern, path, rq);
            return k;
        }
        path_known = true;
        if (!strstr(allow, srv_routes[k].method) && allow_size > used)
            used += (size_t)snprintf(allow + used, allow_size - used, "%s%s",
                                     used ? ", " : "", srv_routes[k].method);
    }
    return path_known ? -2 : -1;
}
