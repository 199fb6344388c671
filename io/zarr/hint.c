/* SPDX-License-Identifier: MIT */
/*
 * Inner chunks of sharded arrays hinted to a remote store before their
 * shard's index is known.  The hint fetches the index ahead and waits here;
 * the first read that decodes the index hints the waiting chunks' byte
 * ranges at once, nearby ones coalesced into one request, so the rest of
 * the shard is in flight together in few requests.  Only
 * the executor's hints and the first reads of shards come here; reads of
 * local stores never do.
 */
#include <stdlib.h>
#include <string.h>

#include "io_zarr.h"

/* Hints waiting at most; beyond, a hint is dropped (the read fetches). */
#define SL__HINTS_MAX 4096

/* Hinted inner chunks of a shard are fetched together where the gap
 * between them is at most HINT_GAP_BYTES, in requests of at most
 * HINT_MAX_BYTES: a batched read's defaults (sl_batch_opts). */
#define HINT_GAP_BYTES ((uint64_t)1 << 20)
#define HINT_MAX_BYTES ((uint64_t)16 << 20)

/* Ranges hinted per pass of a drain, outside the lock (and coalesced). */
#define DRAIN_BATCH SL__PREFETCH_RANGES_MAX

void
sl__hint_add(const sl_array *ca, uint64_t shard, uint64_t k)
{
    sl_array *a = (sl_array *)ca; /* mutable state of a const array */
    pthread_mutex_lock(&a->hint_lock);
    bool known = false;
    for (size_t i = 0; i < a->n_hints && !known; i++)
        known = a->hints[i].shard == shard && a->hints[i].k == k;
    if (!known && a->n_hints == a->cap_hints && a->cap_hints < SL__HINTS_MAX) {
        size_t cap = a->cap_hints > 0 ? a->cap_hints * 2 : 64;
        struct sl__hint *grown = realloc(a->hints, cap * sizeof(*grown));
        if (grown != NULL) {
            a->hints = grown;
            a->cap_hints = cap;
        }
    }
    if (!known && a->n_hints < a->cap_hints)
        a->hints[a->n_hints++] = (struct sl__hint){.shard = shard, .k = k};
    pthread_mutex_unlock(&a->hint_lock);
}

void
sl__hint_drain(const sl_array *ca, uint64_t shard, const char *key, const uint64_t *entries)
{
    sl_array *a = (sl_array *)ca;
    for (;;) {
        uint64_t ks[DRAIN_BATCH];
        size_t n = 0;
        pthread_mutex_lock(&a->hint_lock);
        for (size_t i = 0; i < a->n_hints && n < DRAIN_BATCH;) {
            if (a->hints[i].shard == shard) {
                ks[n++] = a->hints[i].k;
                a->hints[i] = a->hints[--a->n_hints];
            } else {
                i++;
            }
        }
        pthread_mutex_unlock(&a->hint_lock);
        /* Nearby inner chunks in one request, as a batched read
         * coalesces them. */
        struct sl_byte_range rs[DRAIN_BATCH];
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (entries[2 * ks[i]] != SL__SHARD_EMPTY)
                rs[m++] = sl_byte_range_at(entries[2 * ks[i]], entries[2 * ks[i] + 1]);
        sl__store_prefetch_ranges(a->store, key, rs, m, HINT_GAP_BYTES, HINT_MAX_BYTES);
        if (n < DRAIN_BATCH)
            return;
    }
}

void
sl__hint_fini(sl_array *a)
{
    free(a->hints);
    a->hints = NULL;
    a->n_hints = a->cap_hints = 0;
    pthread_mutex_destroy(&a->hint_lock);
}
