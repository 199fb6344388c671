/* SPDX-License-Identifier: MIT */
/*
 * The table of intermediate chunks: chunks of stages whose root feeds other
 * stages, keyed by (stage, linear index), each computed once and freed
 * after its last consumer has read it.
 *
 * DESIGN: one mutex guards the table and every entry's state, refcount and
 * waiter list.  Only runs with unfused edges touch it, a few times per task,
 * never while a kernel runs.  The table holds what the budget admits, so it
 * grows by doubling its buckets and recycles entries and waiters in free
 * lists instead of returning them.
 */
#include <string.h>

#include "core_internal.h"
#include "exec_inter_internal.h"

static size_t
inter_hash(uint32_t stage, uint64_t linear, size_t n_buckets)
{
    uint64_t h = linear * UINT64_C(0x9e3779b97f4a7c15) ^ ((uint64_t)stage << 56 | stage);
    h ^= h >> 29;
    return (size_t)(h & (n_buckets - 1));
}

sl_status
sl__inter_init(struct sl__inter_table *t, const struct sl_allocator *alloc, struct sl_error *err)
{
    memset(t, 0, sizeof(*t));
    t->alloc = *alloc;
    t->n_buckets = 256;
    t->buckets = sl_alloc_zeroed(&t->alloc, t->n_buckets, sizeof(struct sl__entry *), 0);
    if (t->buckets == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for the intermediate chunk table");
    if (pthread_mutex_init(&t->lock, NULL) != 0) {
        sl_free(&t->alloc, t->buckets, t->n_buckets * sizeof(struct sl__entry *));
        return sl_error_set(err, SL_ENOMEM, NULL, "cannot create the intermediate table lock");
    }
    return SL_OK;
}

void
sl__inter_fini(struct sl__inter_table *t, sl_pool *pool)
{
    for (size_t b = 0; b < t->n_buckets; b++) {
        struct sl__entry *e = t->buckets[b];
        while (e != NULL) {
            struct sl__entry *next = e->hash_next;
            sl_pool_buf_free(pool, e->buf, e->buf_bytes);
            for (struct sl__waiter *w = e->waiters; w != NULL;) {
                struct sl__waiter *wn = w->next;
                sl_free(&t->alloc, w, sizeof(*w));
                w = wn;
            }
            sl_free(&t->alloc, e, sizeof(*e));
            e = next;
        }
    }
    for (struct sl__entry *e = t->free_entries; e != NULL;) {
        struct sl__entry *next = e->hash_next;
        sl_free(&t->alloc, e, sizeof(*e));
        e = next;
    }
    for (struct sl__waiter *w = t->free_waiters; w != NULL;) {
        struct sl__waiter *next = w->next;
        sl_free(&t->alloc, w, sizeof(*w));
        w = next;
    }
    sl_free(&t->alloc, t->buckets, t->n_buckets * sizeof(struct sl__entry *));
    pthread_mutex_destroy(&t->lock);
    memset(t, 0, sizeof(*t));
}

struct sl__entry *
sl__inter_find_locked(struct sl__inter_table *t, uint32_t stage, uint64_t linear)
{
    for (struct sl__entry *e = t->buckets[inter_hash(stage, linear, t->n_buckets)]; e != NULL;
         e = e->hash_next)
        if (e->stage == stage && e->linear == linear)
            return e;
    return NULL;
}

/* Double the buckets when entries outnumber them; keeps the old ones on failure. */
static void
inter_grow_locked(struct sl__inter_table *t)
{
    size_t n = t->n_buckets * 2;
    struct sl__entry **b = sl_alloc_zeroed(&t->alloc, n, sizeof(*b), 0);
    if (b == NULL)
        return;
    for (size_t i = 0; i < t->n_buckets; i++) {
        for (struct sl__entry *e = t->buckets[i]; e != NULL;) {
            struct sl__entry *next = e->hash_next;
            size_t h = inter_hash(e->stage, e->linear, n);
            e->hash_next = b[h];
            b[h] = e;
            e = next;
        }
    }
    sl_free(&t->alloc, t->buckets, t->n_buckets * sizeof(*b));
    t->buckets = b;
    t->n_buckets = n;
}

struct sl__entry *
sl__inter_insert_locked(struct sl__inter_table *t, uint32_t stage, uint64_t linear, uint64_t refs)
{
    struct sl__entry *e = t->free_entries;
    if (e != NULL)
        t->free_entries = e->hash_next;
    else
        e = sl_alloc(&t->alloc, sizeof(*e), 0);
    if (e == NULL)
        return NULL;
    memset(e, 0, sizeof(*e));
    e->stage = stage;
    e->linear = linear;
    e->state = SL__ENTRY_PENDING;
    e->refs_left = refs;
    if (t->n_entries >= t->n_buckets)
        inter_grow_locked(t);
    size_t h = inter_hash(stage, linear, t->n_buckets);
    e->hash_next = t->buckets[h];
    t->buckets[h] = e;
    t->n_entries++;
    return e;
}

void
sl__inter_remove_locked(struct sl__inter_table *t, struct sl__entry *e)
{
    struct sl__entry **p = &t->buckets[inter_hash(e->stage, e->linear, t->n_buckets)];
    while (*p != NULL && *p != e)
        p = &(*p)->hash_next;
    if (SL_NEVER(*p == NULL))
        return;
    *p = e->hash_next;
    t->n_entries--;
    e->hash_next = t->free_entries;
    t->free_entries = e;
}

struct sl__waiter *
sl__inter_waiter_locked(struct sl__inter_table *t)
{
    struct sl__waiter *w = t->free_waiters;
    if (w != NULL) {
        t->free_waiters = w->next;
        return w;
    }
    return sl_alloc(&t->alloc, sizeof(*w), 0);
}
