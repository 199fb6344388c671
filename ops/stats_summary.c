/* SPDX-License-Identifier: MIT */
/*
 * The quantile summary behind the percentiles of wide dtypes: a
 * deterministic compactor hierarchy over uint64 keys (values mapped into
 * IEEE totalOrder or biased to unsigned, so key order is value order).
 *
 * DESIGN: level h holds fewer than k keys of weight 2^h; level 0 is an
 * unsorted append buffer, the others are sorted.  When a level reaches k
 * keys it is compacted: sorted, and every other key (alternately the even
 * and the odd positions) moves up with twice the weight; an odd key out
 * stays.  For any key y, the compacted set's weight at or below y changes
 * by at most the old weight, so `err`, the sum of those weights, bounds the
 * error of every rank estimate; merging concatenates levels and compacts
 * the same way, so the bound of a merge is the sum of both.  Each
 * compaction at level h removes at least k keys of weight 2^h for good,
 * so with n values it happens at most n / (k 2^h) times and adds at most
 * n / k; only levels h with k 2^h <= n compact.  The top level, reached
 * past 2^40 values with the default sizes, compacts into itself: its
 * weight doubles, an odd key out is dropped (counted twice in `err`), and
 * runs arriving from below are compacted up to its weight first.
 * Sorting is an LSD radix sort that skips bytes all keys share; merges are
 * backward merges in the scratch, so nothing allocates.
 */
#include <assert.h>
#include <string.h>

#include "ops_internal.h"
#include "stats_internal.h"

size_t
sl__summary_bytes(uint32_t k, uint32_t n_levels)
{
    return ((size_t)n_levels + 2) * k * sizeof(uint64_t);
}

void
sl__summary_init(struct sl__summary *q, uint32_t k, uint32_t n_levels, uint64_t *mem)
{
    q->k = k;
    q->n_levels = n_levels;
    q->keys = mem;
    q->scratch = mem + (size_t)n_levels * k;
    sl__summary_reset(q);
}

void
sl__summary_reset(struct sl__summary *q)
{
    for (uint32_t h = 0; h < SL__SUMMARY_MAX_LEVELS; h++) {
        q->count[h] = 0;
        q->weight[h] = h < 64 ? (uint64_t)1 << h : 0;
    }
    q->parity = 0;
    q->err = 0;
}

static uint64_t *
summary_level(const struct sl__summary *q, uint32_t h)
{
    return q->keys + (size_t)h * q->k;
}

/* Sort a[0..n) with tmp (n keys) as room; returns where the sorted keys are. */
static uint64_t *
summary_radix_sort(uint64_t *a, uint64_t *tmp, size_t n)
{
    uint32_t h[8][256];
    memset(h, 0, sizeof h);
    for (size_t i = 0; i < n; i++)
        for (unsigned b = 0; b < 8; b++)
            h[b][(a[i] >> (8 * b)) & 0xff]++;
    for (unsigned b = 0; b < 8; b++) {
        if (h[b][(a[0] >> (8 * b)) & 0xff] == n)
            continue; /* every key has this byte */
        uint32_t pos = 0;
        for (unsigned d = 0; d < 256; d++) {
            const uint32_t c = h[b][d];
            h[b][d] = pos;
            pos += c;
        }
        for (size_t i = 0; i < n; i++)
            tmp[h[b][(a[i] >> (8 * b)) & 0xff]++] = a[i];
        uint64_t *t = a;
        a = tmp;
        tmp = t;
    }
    return a;
}

/* Keep every other key of the sorted src[0..2m) in dst[0..m) (dst <= src),
 * alternating the offset per level; adds the compaction's weight to err. */
static void
summary_halve(struct sl__summary *q, uint32_t h, uint64_t w, uint64_t *dst, const uint64_t *src,
              size_t m)
{
    const size_t off = (q->parity >> h) & 1;
    q->parity ^= (uint64_t)1 << h;
    for (size_t i = 0; i < m; i++)
        dst[i] = src[2 * i + off];
    q->err += w;
}

/* Halve run[0..*m) of weight *w in place until its weight is `target`,
 * dropping an odd key out each time (the top level only). */
static void
summary_raise(struct sl__summary *q, uint64_t *run, uint32_t *m, uint64_t *w, uint64_t target)
{
    const uint32_t top = q->n_levels - 1;
    while (*w < target) {
        if (*m & 1)
            q->err += 2 * *w; /* the last key is dropped */
        summary_halve(q, top, *w, run, run, *m / 2);
        *m /= 2;
        *w *= 2;
    }
}

/* Merge the sorted level h with the sorted run scratch[0..m) into
 * scratch[0..c + m), back to front so the run is never overwritten unread. */
static void
summary_merge_back(const struct sl__summary *q, uint32_t h, uint32_t m)
{
    const uint64_t *lv = summary_level(q, h);
    uint64_t *s = q->scratch;
    size_t i = m, j = q->count[h], o = m + (size_t)q->count[h];
    while (j > 0) {
        if (i > 0 && s[i - 1] > lv[j - 1])
            s[--o] = s[--i];
        else
            s[--o] = lv[--j];
    }
}

/* Make the top level and a run of weight w agree on one weight. */
static void
summary_top_align(struct sl__summary *q, uint32_t *m, uint64_t *w)
{
    const uint32_t top = q->n_levels - 1;
    if (q->count[top] == 0)
        q->weight[top] = *w;
    summary_raise(q, q->scratch, m, w, q->weight[top]);
    uint32_t c = q->count[top];
    summary_raise(q, summary_level(q, top), &c, &q->weight[top], *w);
    q->count[top] = c;
}

/* Push the sorted run scratch[0..m) of weight w into level h, compacting
 * upward while levels fill. */
static void
summary_push(struct sl__summary *q, uint32_t h, uint32_t m, uint64_t w)
{
    const uint32_t top = q->n_levels - 1;
    for (;;) {
        if (h == top)
            summary_top_align(q, &m, &w);
        summary_merge_back(q, h, m);
        const size_t total = (size_t)q->count[h] + m;
        uint64_t *s = q->scratch, *lv = summary_level(q, h);
        if (total < q->k) {
            memcpy(lv, s, total * sizeof *s);
            q->count[h] = (uint32_t)total;
            return;
        }
        q->count[h] = 0;
        if (total & 1) {
            if (h < top)
                lv[q->count[h]++] = s[total - 1]; /* stays at level h */
            else
                q->err += 2 * w; /* dropped */
        }
        m = (uint32_t)(total / 2);
        summary_halve(q, h, w, s, s, m);
        w *= 2;
        if (h == top)
            q->weight[top] = w;
        else
            h++;
    }
}

/* Sort and compact the full level 0. */
static void
summary_compact0(struct sl__summary *q)
{
    uint64_t *lv = summary_level(q, 0);
    const uint64_t *sorted = summary_radix_sort(lv, q->scratch, q->k);
    const uint32_t m = q->k / 2;
    summary_halve(q, 0, 1, q->scratch, sorted, m);
    q->count[0] = 0;
    summary_push(q, 1, m, 2);
}

void
sl__summary_add(struct sl__summary *q, const uint64_t *keys, size_t n)
{
    uint64_t *lv = summary_level(q, 0);
    while (n > 0) {
        const size_t room = q->k - q->count[0], take = n < room ? n : room;
        memcpy(lv + q->count[0], keys, take * sizeof *keys);
        q->count[0] += (uint32_t)take;
        keys += take;
        n -= take;
        if (q->count[0] == q->k)
            summary_compact0(q);
    }
}

void
sl__summary_merge(struct sl__summary *q, const struct sl__summary *from)
{
    assert(q->k == from->k && q->n_levels == from->n_levels);
    sl__summary_add(q, summary_level(from, 0), from->count[0]);
    for (uint32_t h = 1; h < from->n_levels; h++) {
        const uint32_t m = from->count[h];
        if (m == 0)
            continue;
        memcpy(q->scratch, summary_level(from, h), (size_t)m * sizeof *q->scratch);
        summary_push(q, h, m, from->weight[h]);
    }
    q->err += from->err;
}

uint64_t
sl__summary_weight(const struct sl__summary *q)
{
    uint64_t w = 0;
    for (uint32_t h = 0; h < q->n_levels; h++)
        w += q->weight[h] * q->count[h];
    return w;
}

/* Keys of the sorted a[0..n) that are <= y. */
static size_t
summary_upper_bound(const uint64_t *a, size_t n, uint64_t y)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (a[mid] <= y)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

uint64_t
sl__summary_rank(const struct sl__summary *q, uint64_t y)
{
    const uint64_t *lv = summary_level(q, 0);
    uint64_t r = 0;
    for (uint32_t i = 0; i < q->count[0]; i++)
        r += lv[i] <= y;
    for (uint32_t h = 1; h < q->n_levels; h++)
        r += q->weight[h] * summary_upper_bound(summary_level(q, h), q->count[h], y);
    return r;
}

uint64_t
sl__summary_select(const struct sl__summary *q, uint64_t pos, uint64_t lo, uint64_t hi)
{
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo) / 2;
        if (sl__summary_rank(q, mid) > pos)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}
