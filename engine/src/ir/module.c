/* module.c - modules, computations and instructions: construction and the
 * structural queries every pass needs (users, dead-code removal). */
#include <string.h>

#include "hloscope/hs_ir.h"

hs_module *hs_module_new(const char *name)
{
    hs_arena *a = hs_arena_new(0);
    if (!a)
        return NULL;
    hs_module *m = hs_arena_alloc(a, sizeof *m);
    if (!m) {
        hs_arena_free(a);
        return NULL;
    }
    m->arena = a;
    m->name = hs_arena_strdup(a, name ? name : "module");
    return m;
}

void hs_module_free(hs_module *m)
{
    if (m)
        hs_arena_free(m->arena); /* m itself lives in the arena */
}

/* Grows an arena-held pointer array to hold one more element. The old
 * array stays in the arena; doubling bounds the waste to the live size. */
static bool grow(hs_arena *a, void ***items, int n, int *cap)
{
    if (n < *cap)
        return true;
    int new_cap = *cap ? *cap * 2 : 8;
    void **p = hs_arena_alloc(a, sizeof(void *) * (size_t)new_cap);
    if (!p)
        return false;
    if (n)
        memcpy(p, *items, sizeof(void *) * (size_t)n);
    *items = p;
    *cap = new_cap;
    return true;
}

hs_computation *hs_module_add_computation(hs_module *m, const char *name,
                                          bool is_entry)
{
    if (!grow(m->arena, (void ***)&m->comps, m->n_comps, &m->cap_comps))
        return NULL;
    hs_computation *c = hs_arena_alloc(m->arena, sizeof *c);
    if (!c)
        return NULL;
    c->name = hs_arena_strdup(m->arena, name ? name : "computation");
    c->module = m;
    c->id = m->n_comps;
    c->is_entry = is_entry;
    m->comps[m->n_comps++] = c;
    if (is_entry)
        m->entry = c;
    return c;
}

hs_computation *hs_module_find_computation(const hs_module *m,
                                           const char *name)
{
    for (int i = 0; i < m->n_comps; i++)
        if (strcmp(m->comps[i]->name, name) == 0)
            return m->comps[i];
    return NULL;
}

int64_t hs_module_instruction_count(const hs_module *m)
{
    int64_t n = 0;
    for (int i = 0; i < m->n_comps; i++)
        n += m->comps[i]->n_instrs;
    return n;
}

bool hs_module_set_io_aliases(hs_module *m, const hs_io_alias *a, int n)
{
    hs_io_alias *copy = NULL;
    if (n > 0) {
        copy = hs_arena_alloc(m->arena, sizeof *copy * (size_t)n);
        if (!copy)
            return false;
        memcpy(copy, a, sizeof *copy * (size_t)n);
    }
    m->io_aliases = copy;
    m->n_io_aliases = n > 0 ? n : 0;
    return true;
}

int hs_computation_index(const hs_module *m, const hs_computation *c)
{
    if (!c)
        return -1;
    if (c->id >= 0 && c->id < m->n_comps && m->comps[c->id] == c)
        return c->id;
    for (int k = 0; k < m->n_comps; k++)
        if (m->comps[k] == c)
            return k;
    return -1;
}

/* "<opcode>.<id>" without snprintf: names are made for every traced
 * instruction, so this is on the tracing hot path. */
static const char *default_name(hs_arena *a, hs_opcode op, int64_t number)
{
    const char *base = hs_opcode_name(op);
    size_t len = strlen(base);
    char digits[24];
    int nd = 0;
    uint64_t v = (uint64_t)number;
    do {
        digits[nd++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    char *s = hs_arena_alloc(a, len + 1 + (size_t)nd + 1);
    if (!s)
        return NULL;
    memcpy(s, base, len);
    s[len] = '.';
    for (int i = 0; i < nd; i++)
        s[len + 1 + i] = digits[nd - 1 - i];
    s[len + 1 + nd] = '\0';
    return s;
}

void hs_module_note_name(hs_module *m, const char *name)
{
    const char *dot = name ? strrchr(name, '.') : NULL;
    if (!dot || !dot[1])
        return;
    int64_t n = 0;
    for (const char *p = dot + 1; *p; p++) {
        /* 18 digits at most: past that no counter reaches it */
        if (*p < '0' || *p > '9' || p - dot > 18)
            return;
        n = n * 10 + (*p - '0');
    }
    if (n >= m->next_name)
        m->next_name = n + 1;
}

hs_instruction *hs_computation_add(hs_computation *c, hs_opcode op,
                                   const hs_shape *shape,
                                   hs_instruction *const *operands,
                                   int n_operands, const char *name)
{
    hs_module *m = c->module;
    hs_arena *a = m->arena;
    if (!grow(a, (void ***)&c->instrs, c->n_instrs, &c->cap_instrs))
        return NULL;
    hs_instruction *i = hs_arena_alloc(a, sizeof *i);
    if (!i)
        return NULL;
    i->opcode = op;
    i->id = m->next_id++;
    i->parent = c;
    i->shape = *shape;
    i->known_trip_count = -1;
    if (name) {
        i->name = hs_arena_strdup(a, name);
        hs_module_note_name(m, name);
    } else {
        int64_t n = m->next_name > i->id ? m->next_name : i->id;
        m->next_name = n + 1;
        i->name = default_name(a, op, n);
    }
    if (n_operands > 0) {
        i->operands =
            hs_arena_alloc(a, sizeof(hs_instruction *) * (size_t)n_operands);
        if (!i->operands)
            return NULL;
        memcpy(i->operands, operands,
               sizeof(hs_instruction *) * (size_t)n_operands);
        i->n_operands = n_operands;
    }
    if (!i->name)
        return NULL;
    c->instrs[c->n_instrs++] = i;
    return i;
}

hs_instruction *hs_computation_add_parameter(hs_computation *c,
                                             int64_t number,
                                             const hs_shape *shape,
                                             const char *name)
{
    if (number < 0 || number > (1 << 24))
        return NULL;
    hs_arena *a = c->module->arena;
    while (c->n_params <= number) {
        if (!grow(a, (void ***)&c->params, c->n_params, &c->cap_params))
            return NULL;
        c->params[c->n_params++] = NULL;
    }
    hs_instruction *i =
        hs_computation_add(c, HS_OP_PARAMETER, shape, NULL, 0, name);
    if (!i)
        return NULL;
    i->index = number;
    c->params[number] = i;
    return i;
}

hs_arena *hs_instruction_arena(const hs_instruction *i)
{
    return i->parent->module->arena;
}

void hs_instruction_set_dims(hs_instruction *i, const int64_t *dims, int n)
{
    i->n_dims = 0;
    i->dims = NULL;
    if (n <= 0)
        return;
    i->dims = hs_arena_alloc(hs_instruction_arena(i), sizeof(int64_t) * (size_t)n);
    if (!i->dims)
        return;
    memcpy(i->dims, dims, sizeof(int64_t) * (size_t)n);
    i->n_dims = n;
}

void hs_instruction_set_called(hs_instruction *i, hs_computation *const *c,
                               int n)
{
    i->n_called = 0;
    i->called = NULL;
    if (n <= 0)
        return;
    i->called = hs_arena_alloc(hs_instruction_arena(i),
                               sizeof(hs_computation *) * (size_t)n);
    if (!i->called)
        return;
    memcpy(i->called, c, sizeof(hs_computation *) * (size_t)n);
    i->n_called = n;
}

void hs_instruction_add_extra(hs_instruction *i, const char *key,
                              const char *value)
{
    hs_arena *a = hs_instruction_arena(i);
    hs_attr *p = hs_arena_alloc(a, sizeof(hs_attr) * (size_t)(i->n_extra + 1));
    if (!p)
        return;
    if (i->n_extra)
        memcpy(p, i->extra, sizeof(hs_attr) * (size_t)i->n_extra);
    p[i->n_extra].key = hs_arena_strdup(a, key);
    p[i->n_extra].value = hs_arena_strdup(a, value);
    i->extra = p;
    i->n_extra++;
}

hs_user_list *hs_computation_users(hs_computation *c)
{
    hs_arena *a = c->module->arena;
    int n = c->n_instrs;
    hs_user_list *lists = hs_arena_alloc(a, sizeof(hs_user_list) * (size_t)(n ? n : 1));
    if (!lists)
        return NULL;
    for (int k = 0; k < n; k++)
        c->instrs[k]->scratch = k;
    for (int k = 0; k < n; k++) {
        hs_instruction *i = c->instrs[k];
        for (int o = 0; o < i->n_operands; o++)
            if (i->operands[o]->parent == c)
                lists[i->operands[o]->scratch].n++;
    }
    for (int k = 0; k < n; k++) {
        if (lists[k].n) {
            lists[k].users = hs_arena_alloc(
                a, sizeof(hs_instruction *) * (size_t)lists[k].n);
            if (!lists[k].users)
                return NULL;
        }
        lists[k].n = 0;
    }
    for (int k = 0; k < n; k++) {
        hs_instruction *i = c->instrs[k];
        for (int o = 0; o < i->n_operands; o++) {
            hs_instruction *op = i->operands[o];
            if (op->parent != c)
                continue;
            hs_user_list *l = &lists[op->scratch];
            /* An instruction that uses op twice is listed once. */
            if (l->n && l->users[l->n - 1] == i)
                continue;
            l->users[l->n++] = i;
        }
    }
    return lists;
}

int hs_computation_remove_dead(hs_computation *c)
{
    if (!c->root)
        return 0;
    for (int k = 0; k < c->n_instrs; k++)
        c->instrs[k]->scratch = 0;
    c->root->scratch = 1;
    /* Definition order is a post order, so one backward sweep marks
     * everything reachable from the root. */
    for (int k = c->n_instrs - 1; k >= 0; k--) {
        hs_instruction *i = c->instrs[k];
        if (i->opcode == HS_OP_PARAMETER)
            i->scratch = 1;
        if (!i->scratch)
            continue;
        for (int o = 0; o < i->n_operands; o++)
            i->operands[o]->scratch = 1;
    }
    int kept = 0;
    for (int k = 0; k < c->n_instrs; k++)
        if (c->instrs[k]->scratch)
            c->instrs[kept++] = c->instrs[k];
    int removed = c->n_instrs - kept;
    c->n_instrs = kept;
    return removed;
}

static const char *const direction_names[] = {"", "EQ", "NE", "LT",
                                              "LE", "GT", "GE"};

const char *hs_direction_name(hs_direction d)
{
    return (unsigned)d <= HS_DIR_GE ? direction_names[d] : "";
}

bool hs_direction_parse(const char *s, size_t len, hs_direction *out)
{
    for (int d = HS_DIR_EQ; d <= HS_DIR_GE; d++) {
        if (len == 2 && memcmp(s, direction_names[d], 2) == 0) {
            *out = (hs_direction)d;
            return true;
        }
    }
    return false;
}
