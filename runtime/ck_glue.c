/* SPDX-License-Identifier: MIT */
/*
 * Every call the runtime makes into Concurrency Kit: the MPMC ring of the
 * external queue and the epoch domain that reclaims outgrown deque arrays.
 *
 * DESIGN
 * ck implements its atomics in inline assembly, which ThreadSanitizer does
 * not see: instrumented, ck's own loads and stores would be reported as
 * races, and the orderings it provides would be invisible.  So this file
 * holds nothing but thin wrappers, and a TSan build compiles it with
 * -fno-sanitize=thread (runtime/meson.build).  Callers announce the
 * happens-before edges ck gives them with SL__TSAN_RELEASE/ACQUIRE on the
 * objects that cross threads (a task through the ring; the end of an epoch
 * section before a reclamation).  In other builds the cost is a call.
 */
#include <ck_epoch.h>
#include <ck_ring.h>

#include "ck_glue_internal.h"

void
sl__ck_epoch_init(struct sl__epoch *epoch)
{
    ck_epoch_init(&epoch->ck);
}

void
sl__ck_epoch_register(struct sl__epoch *epoch, struct sl__epoch_rec *rec)
{
    rec->epoch = epoch;
    ck_epoch_register(&epoch->ck, &rec->ck, NULL);
}

void
sl__ck_epoch_unregister(struct sl__epoch_rec *rec)
{
    ck_epoch_unregister(&rec->ck);
}

void
sl__ck_epoch_begin(struct sl__epoch_rec *rec)
{
    ck_epoch_begin(&rec->ck, NULL);
}

void
sl__ck_epoch_end(struct sl__epoch_rec *rec)
{
    ck_epoch_end(&rec->ck, NULL);
}

void
sl__ck_epoch_call(struct sl__epoch_rec *rec, ck_epoch_entry_t *entry, ck_epoch_cb_t *cb)
{
    ck_epoch_call(&rec->ck, entry, cb);
}

bool
sl__ck_epoch_poll(struct sl__epoch_rec *rec)
{
    return ck_epoch_poll(&rec->ck);
}

void
sl__ck_epoch_reclaim(struct sl__epoch_rec *rec)
{
    ck_epoch_reclaim(&rec->ck);
}

void
sl__ck_ring_init(struct ck_ring *ring, unsigned size)
{
    ck_ring_init(ring, size);
}

bool
sl__ck_ring_enqueue_mpmc(struct ck_ring *ring, struct ck_ring_buffer *buf, void *p)
{
    return ck_ring_enqueue_mpmc(ring, buf, p);
}

bool
sl__ck_ring_dequeue_mpmc(struct ck_ring *ring, struct ck_ring_buffer *buf, void **p)
{
    return ck_ring_dequeue_mpmc(ring, buf, p);
}

bool
sl__ck_ring_is_empty(const struct ck_ring *ring)
{
    return ck_ring_size(ring) == 0;
}
