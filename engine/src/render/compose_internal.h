/* compose_internal.h - what the composer (compose.c) and its cache of
 * laid-out pieces (compose_cache.c) share. */
#ifndef HLOSCOPE_COMPOSE_INTERNAL_H
#define HLOSCOPE_COMPOSE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

/* One edge of a piece: from item tail to item head (item indices), drawn
 * as points[first .. first + n) (a B-spline, Graphviz's 3k + 1 points),
 * then an arrow to (ex, ey) when has_end. */
typedef struct hs_piece_edge {
    int tail, head;
    int first, n;
    bool has_end;
    double ex, ey;
} hs_piece_edge;

/* The layout of one box: its items' centres, in points from the
 * lower-left corner of its bounding box (y up, as Graphviz's). */
typedef struct hs_piece {
    double w, h;
    int n_items;
    double *x, *y; /* n_items */
    int n_edges;
    hs_piece_edge *edges;
    int n_points;
    double *points; /* x, y pairs */
} hs_piece;

void hs__piece_free(hs_piece *p);
hs_piece *hs__piece_copy(const hs_piece *p);

/* The cache: a copy of the piece laid out from exactly this canonical DOT,
 * or NULL. */
hs_piece *hs__piece_cache_get(const char *key, size_t len);
/* Keeps a copy (silently nothing on OOM or when too large). */
void hs__piece_cache_put(const char *key, size_t len, const hs_piece *p);

#endif
