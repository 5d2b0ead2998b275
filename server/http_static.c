/* http_static.c - the browser explorer: the files of web/dist (built by
 * `npm ci && npm run build` in web/) served for GET/HEAD requests that no
 * API route matches. `--web DIR` picks the directory; the default is the
 * source tree's web/dist. Paths are confined to DIR (no "..", symlinks
 * resolved and checked). Without a built explorer, "/" explains how to
 * build it and everything else stays a JSON 404. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "http.h"

#ifndef HS_WEB_DIR
#define HS_WEB_DIR ""
#endif
#define STATIC_MAX_BYTES (64u << 20)

static const char *content_type(const char *path)
{
    static const struct { const char *ext, *type; } types[] = {
        {".html", "text/html; charset=utf-8"}, {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"}, {".css", "text/css; charset=utf-8"},
        {".svg", "image/svg+xml"}, {".png", "image/png"}, {".ico", "image/x-icon"},
        {".json", "application/json"}, {".map", "application/json"},
        {".woff2", "font/woff2"}, {".txt", "text/plain; charset=utf-8"},
    };
    const char *dot = strrchr(path, '.');
    for (size_t k = 0; dot && k < sizeof types / sizeof types[0]; k++)
        if (strcmp(dot, types[k].ext) == 0)
            return types[k].type;
    return "application/octet-stream";
}

static bool not_built(const char *dir, srv_reply *rp)
{
    char page[1024];
    int n = snprintf(page, sizeof page,
                     "<!doctype html><meta charset=utf-8><title>hloscope</title>"
                     "<body style=\"font:18px system-ui;margin:3em\"><h1>hloscope</h1>"
                     "<p>The REST API is at <a href=\"/v1/examples\">/v1/</a> (docs/API.md).</p>"
                     "<p>The browser explorer is not built (no %s/index.html): run "
                     "<code>cd web &amp;&amp; npm ci &amp;&amp; npm run build</code>, or pass "
                     "<code>--web DIR</code>.</p></body>\n",
                     *dir ? dir : "web/dist");
    srv_reply_copy(rp, 200, "text/html; charset=utf-8", page, (size_t)n);
    return true;
}

bool srv_static_reply(const srv *s, const char *method, const char *url, srv_reply *rp)
{
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return false;
    if (url[0] != '/' || strncmp(url, "/v1/", 4) == 0 || strstr(url, "..") ||
        strchr(url, '\\'))
        return false;
    const char *dir = s->cfg.web_dir ? s->cfg.web_dir : HS_WEB_DIR;
    bool index = url[strlen(url) - 1] == '/';
    char root[PATH_MAX], want[PATH_MAX], real[PATH_MAX];
    if (!*dir || !realpath(dir, root))
        return strcmp(url, "/") == 0 && not_built(dir, rp);
    int n = snprintf(want, sizeof want, "%s%s%s", root, url, index ? "index.html" : "");
    size_t rlen = strlen(root);
    struct stat st;
    if (n < 0 || (size_t)n >= sizeof want || !realpath(want, real) ||
        strncmp(real, root, rlen) != 0 || real[rlen] != '/' || stat(real, &st) != 0 ||
        !S_ISREG(st.st_mode) || (size_t)st.st_size > STATIC_MAX_BYTES)
        return strcmp(url, "/") == 0 && not_built(dir, rp);
    FILE *f = fopen(real, "rb");
    if (!f)
        return false;
    size_t size = (size_t)st.st_size;
    char *data = malloc(size + 1);
    size_t got = data ? fread(data, 1, size, f) : 0;
    fclose(f);
    if (!data || got != size) {
        free(data);
        return false;
    }
    srv_reply_text(rp, 200, content_type(real), data, size);
    return true;
}
