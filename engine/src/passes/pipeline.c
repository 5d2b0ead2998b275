/* pipeline.c - pipelines of passes: building (by hand or from text),
 * running with per-pass timing and verification, and the report rows. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hloscope/hs_passes.h"

typedef struct step {
    hs_pass pass;      /* when sub is NULL */
    hs_pipeline *sub;  /* a fixed-point group */
    int max_iterations;
} step;

struct hs_pipeline {
    int n, cap;
    step *steps;
    char *spec; /* canonical text, kept up to date by every add */
};

hs_pipeline *hs_pipeline_new(void)
{
    hs_pipeline *p = calloc(1, sizeof *p);
    if (p && !(p->spec = calloc(1, 1))) {
        free(p);
        return NULL;
    }
    return p;
}

void hs_pipeline_free(hs_pipeline *p)
{
    if (!p)
        return;
    for (int k = 0; k < p->n; k++)
        hs_pipeline_free(p->steps[k].sub);
    free(p->steps);
    free(p->spec);
    free(p);
}

const char *hs_pipeline_spec(const hs_pipeline *p)
{
    return p->spec;
}

static hs_status oom(hs_error *err)
{
    return hs_error_set(err, HS_ERR_NOMEM, "out of host memory");
}

/* Appends a step and its text ("name" or "fix(sub)") to the spec. */
static hs_status push(hs_pipeline *p, const step *s, hs_error *err)
{
    const char *text = s->sub ? s->sub->spec : s->pass.name;
    size_t len = strlen(p->spec), add = strlen(text) + 6;
    char *spec = realloc(p->spec, len + add + 1);
    if (!spec)
        return oom(err);
    p->spec = spec;
    snprintf(spec + len, add + 1, "%s%s%s%s", len ? "," : "",
             s->sub ? "fix(" : "", text, s->sub ? ")" : "");
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 8;
        step *steps = realloc(p->steps, sizeof *steps * (size_t)cap);
        if (!steps)
            return oom(err);
        p->steps = steps;
        p->cap = cap;
    }
    p->steps[p->n++] = *s;
    return HS_OK;
}

hs_status hs_pipeline_add(hs_pipeline *p, const hs_pass *pass, hs_error *err)
{
    if (!pass || !pass->name || !pass->run)
        return hs_error_set(err, HS_ERR_INVALID, "pass without name or run");
    step s = {*pass, NULL, 0};
    return push(p, &s, err);
}

hs_status hs_pipeline_add_named(hs_pipeline *p, const char *name,
                                hs_error *err)
{
    const hs_pass *pass = hs_pass_lookup(name);
    if (!pass) {
        hs_error_set(err, HS_ERR_INVALID, "unknown pass '%s' (known:",
                     name ? name : "");
        for (int k = 0; err && k < hs_pass_count(); k++) {
            size_t len = strlen(err->message);
            snprintf(err->message + len, sizeof err->message - len, " %s",
                     hs_pass_at(k)->name);
        }
        if (err) {
            size_t len = strlen(err->message);
            snprintf(err->message + len, sizeof err->message - len, ")");
        }
        return HS_ERR_INVALID;
    }
    return hs_pipeline_add(p, pass, err);
}

hs_status hs_pipeline_add_fix(hs_pipeline *p, hs_pipeline *sub,
                              int max_iterations, hs_error *err)
{
    if (!sub)
        return hs_error_set(err, HS_ERR_INVALID, "empty fix() group");
    step s = {{NULL, NULL, NULL}, sub,
              max_iterations > 0 ? max_iterations
                                 : HS_PIPELINE_MAX_FIX_ITERATIONS};
    hs_status st = push(p, &s, err);
    if (st != HS_OK)
        hs_pipeline_free(sub);
    return st;
}

/* ---- parsing ------------------------------------------------------------ */

typedef struct parser {
    const char *text;
    size_t pos;
    hs_error *err;
} parser;

static void skip_space(parser *ps)
{
    while (isspace((unsigned char)ps->text[ps->pos]))
        ps->pos++;
}

static hs_status syntax(parser *ps, const char *what)
{
    hs_error_set(ps->err, HS_ERR_INVALID,
                 "pipeline '%s': %s at offset %zu", ps->text, what, ps->pos);
    if (ps->err)
        ps->err->column = (int)ps->pos + 1;
    return HS_ERR_INVALID;
}

static bool name_char(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_';
}

/* spec := item (',' item)* ; item := name | 'fix(' spec ')' */
static hs_status parse_spec(parser *ps, hs_pipeline *p, int depth)
{
    if (depth > 8)
        return syntax(ps, "fix() nested too deeply");
    for (;;) {
        skip_space(ps);
        size_t start = ps->pos;
        while (name_char(ps->text[ps->pos]))
            ps->pos++;
        size_t len = ps->pos - start;
        if (len == 0)
            return syntax(ps, "expected a pass name");
        skip_space(ps);
        hs_status st;
        if (len == 3 && memcmp(ps->text + start, "fix", 3) == 0 &&
            ps->text[ps->pos] == '(') {
            ps->pos++;
            hs_pipeline *sub = hs_pipeline_new();
            if (!sub)
                return oom(ps->err);
            st = parse_spec(ps, sub, depth + 1);
            skip_space(ps);
            if (st == HS_OK && ps->text[ps->pos] != ')')
                st = syntax(ps, "expected ')'");
            if (st != HS_OK) {
                hs_pipeline_free(sub);
                return st;
            }
            ps->pos++;
            st = hs_pipeline_add_fix(p, sub, 0, ps->err);
        } else {
            char name[64];
            if (len >= sizeof name)
                return syntax(ps, "pass name too long");
            memcpy(name, ps->text + start, len);
            name[len] = '\0';
            st = hs_pipeline_add_named(p, name, ps->err);
        }
        if (st != HS_OK)
            return st;
        skip_space(ps);
        if (ps->text[ps->pos] != ',')
            return HS_OK;
        ps->pos++;
    }
}

hs_pipeline *hs_pipeline_parse(const char *spec, hs_error *err)
{
    hs_pipeline *p = hs_pipeline_new();
    if (!p) {
        oom(err);
        return NULL;
    }
    parser ps = {spec ? spec : "", 0, err};
    hs_status st = parse_spec(&ps, p, 0);
    skip_space(&ps);
    if (st == HS_OK && ps.text[ps.pos] != '\0')
        st = syntax(&ps, "unexpected character");
    if (st != HS_OK) {
        hs_pipeline_free(p);
        return NULL;
    }
    return p;
}

/* ---- running ------------------------------------------------------------ */

static hs_pass_stats *stats_row(hs_compile_report *r, const char *name)
{
    for (int k = 0; k < r->n_passes; k++)
        if (strcmp(r->passes[k].name, name) == 0)
            return &r->passes[k];
    if (r->n_passes == HS_REPORT_MAX_PASSES)
        return NULL;
    hs_pass_stats *s = &r->passes[r->n_passes++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    return s;
}

/* Prefixes err's message with "context: " so the user sees which pass
 * failed. */
static void prefix_error(hs_error *err, const char *fmt, const char *name)
{
    if (!err)
        return;
    char msg[sizeof err->message];
    snprintf(msg, sizeof msg, "%s", err->message);
    snprintf(err->message, sizeof err->message, fmt, name, msg);
}

static hs_status run_pass(const hs_pass *pass, hs_module *m,
                          hs_pass_context *ctx, hs_compile_report *r,
                          bool *changed, hs_error *err)
{
    int64_t before = hs_module_instruction_count(m);
    int64_t t0 = hs_now_ns();
    bool pass_changed = false;
    hs_status st = pass->run(m, ctx, &pass_changed, err);
    int64_t t1 = hs_now_ns();
    hs_pass_stats *row = stats_row(r, pass->name);
    if (row) {
        if (row->runs == 0)
            row->instructions_before = before;
        row->runs++;
        row->changed_runs += pass_changed;
        row->total_ns += t1 - t0;
        row->instructions_after = hs_module_instruction_count(m);
    }
    if (st != HS_OK) {
        if (st != HS_ERR_CANCELLED)
            prefix_error(err, "pass %s: %s", pass->name);
        return st;
    }
    if (!pass_changed)
        return HS_OK;
    *changed = true;
    if (ctx->verify) {
        st = hs_module_verify(m, err);
        r->verify_ns += hs_now_ns() - t1;
        if (st != HS_OK)
            prefix_error(err, "module invalid after pass %s: %s", pass->name);
    }
    return st;
}

static hs_status run_steps(const hs_pipeline *p, hs_module *m,
                           hs_pass_context *ctx, hs_compile_report *r,
                           bool *changed, hs_error *err)
{
    for (int k = 0; k < p->n; k++) {
        hs_status st = hs_pass_context_check(ctx, err);
        if (st != HS_OK)
            return st;
        const step *s = &p->steps[k];
        if (!s->sub) {
            st = run_pass(&s->pass, m, ctx, r, changed, err);
            if (st != HS_OK)
                return st;
            continue;
        }
        for (int it = 0; it < s->max_iterations; it++) {
            bool round_changed = false;
            st = run_steps(s->sub, m, ctx, r, &round_changed, err);
            if (st != HS_OK)
                return st;
            if (!round_changed)
                break;
            *changed = true;
        }
    }
    return HS_OK;
}

hs_status hs_pipeline_run(const hs_pipeline *p, hs_module *m,
                          hs_pass_context *ctx, hs_compile_report *report,
                          hs_error *err)
{
    hs_compile_report local;
    hs_compile_report *r = report ? report : &local;
    hs_pass_context default_ctx;
    if (!ctx) {
        hs_pass_context_init(&default_ctx);
        ctx = &default_ctx;
    }
    if (ctx->fold_max_elements <= 0)
        ctx->fold_max_elements = HS_FOLD_MAX_ELEMENTS;
    memset(r, 0, sizeof *r);
    snprintf(r->pipeline, sizeof r->pipeline, "%s", p->spec);
    r->instructions_before = hs_module_instruction_count(m);
    int64_t t0 = hs_now_ns();
    bool changed = false;
    hs_status st = run_steps(p, m, ctx, r, &changed, err);
    r->total_ns = hs_now_ns() - t0;
    r->instructions_after = hs_module_instruction_count(m);
    return st;
}
