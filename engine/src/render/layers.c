/* layers.c - layer keys: op_name "layers.N/..." (or exactly "layers.N") is
 * layer N of an unrolled model, as the model tracer scopes it; and the
 * expand list that keeps chosen layers open. */
#include <string.h>

#include "render/render_internal.h"

size_t hs__layer_key(const char *op_name)
{
    static const char prefix[] = "layers.";
    const size_t np = sizeof prefix - 1;
    if (!op_name || strncmp(op_name, prefix, np) != 0)
        return 0;
    size_t k = np;
    while (op_name[k] >= '0' && op_name[k] <= '9')
        k++;
    if (k == np || (op_name[k] != '\0' && op_name[k] != '/'))
        return 0;
    return k;
}

static bool is_layer_key(const char *s, size_t len)
{
    char tmp[64];
    if (len == 0 || len >= sizeof tmp)
        return false;
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    return hs__layer_key(tmp) == len;
}

hs_status hs__expand_parse(hs_arena *a, const char *text, hs_expand *out,
                           hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (!text || !*text)
        return HS_OK;
    int cap = 1;
    for (const char *p = text; *p; p++)
        cap += *p == ',';
    out->keys = hs_arena_alloc(a, sizeof *out->keys * (size_t)cap);
    out->lens = hs_arena_alloc(a, sizeof *out->lens * (size_t)cap);
    if (!out->keys || !out->lens)
        return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
    const char *p = text;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        /* Tolerate blanks around keys ("layers.1, layers.2"). */
        while (len && *p == ' ') {
            p++;
            len--;
        }
        while (len && p[len - 1] == ' ')
            len--;
        if (len == 0) {
            /* empty items ("a,,b", trailing comma) are skipped */
        } else if ((len == 3 && memcmp(p, "all", 3) == 0) ||
                   (len == 1 && *p == '*')) {
            out->all = true;
        } else if (is_layer_key(p, len)) {
            out->keys[out->n] = p;
            out->lens[out->n] = len;
            out->n++;
        } else {
            hs_buf shown = {0};
            char *copy = hs_arena_strndup(a, p, len < 64 ? len : 64);
            hs__text_clean(&shown, copy ? copy : "", 0);
            hs_error_set(err, HS_ERR_INVALID,
                         "expand: '%s' is not a layer key; expected "
                         "layers.N (e.g. layers.3), a comma-separated list of "
                         "them, or all",
                         shown.data ? shown.data : "");
            hs__buf_free(&shown);
            return HS_ERR_INVALID;
        }
        if (!end)
            break;
        p = end + 1;
    }
    return HS_OK;
}

bool hs__expand_has(const hs_expand *e, const char *key, size_t len)
{
    if (e->all)
        return true;
    for (int k = 0; k < e->n; k++)
        if (e->lens[k] == len && memcmp(e->keys[k], key, len) == 0)
            return true;
    return false;
}
