/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the runtime's ck glue (ck_glue.c): epoch domains
 * and records, the MPMC ring calls, and the ThreadSanitizer annotations
 * that stand in for ck's atomics.  Open to the runtime's tests.
 *
 * DESIGN
 * ThreadSanitizer cannot see ck's inline-assembly atomics, so the calls into
 * ck live in ck_glue.c, which a TSan build compiles uninstrumented; the
 * happens-before edges that ck provides are announced to TSan at the call
 * sites with SL__TSAN_RELEASE/SL__TSAN_ACQUIRE (no-ops in other builds).
 */
#ifndef SL_CK_GLUE_INTERNAL_H
#define SL_CK_GLUE_INTERNAL_H

#include <stdbool.h>

#include <ck_epoch.h>
#include <ck_ring.h>

/* ---- ThreadSanitizer annotations ------------------------------------- */

#if defined(__SANITIZE_THREAD__)
#define SL__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SL__TSAN 1
#endif
#endif

#ifdef SL__TSAN
#include <sanitizer/tsan_interface.h>
#define SL__TSAN_RELEASE(p) __tsan_release((void *)(p))
#define SL__TSAN_ACQUIRE(p) __tsan_acquire((void *)(p))
#else
#define SL__TSAN_RELEASE(p) ((void)(p))
#define SL__TSAN_ACQUIRE(p) ((void)(p))
#endif

/* ---- ck glue (ck_glue.c) ----------------------------------------------- */

/* An epoch domain: one per pool (or per deque test). */
struct sl__epoch {
    ck_epoch_t ck;  /* the ck domain */
    char tsan_sync; /* address TSan joins section ends and reclamations on */
};

/* A thread's record in an epoch domain. */
struct sl__epoch_rec {
    ck_epoch_record_t ck;    /* the ck record (cache-line aligned by ck) */
    struct sl__epoch *epoch; /* its domain */
};

void sl__ck_epoch_init(struct sl__epoch *epoch);
void sl__ck_epoch_register(struct sl__epoch *epoch, struct sl__epoch_rec *rec);
void sl__ck_epoch_unregister(struct sl__epoch_rec *rec);
void sl__ck_epoch_begin(struct sl__epoch_rec *rec);
void sl__ck_epoch_end(struct sl__epoch_rec *rec);
void sl__ck_epoch_call(struct sl__epoch_rec *rec, ck_epoch_entry_t *entry, ck_epoch_cb_t *cb);
bool sl__ck_epoch_poll(struct sl__epoch_rec *rec);
void sl__ck_epoch_reclaim(struct sl__epoch_rec *rec);

void sl__ck_ring_init(struct ck_ring *ring, unsigned size);
bool sl__ck_ring_enqueue_mpmc(struct ck_ring *ring, struct ck_ring_buffer *buf, void *p);
bool sl__ck_ring_dequeue_mpmc(struct ck_ring *ring, struct ck_ring_buffer *buf, void **p);
bool sl__ck_ring_is_empty(const struct ck_ring *ring);

/* Enter an epoch section: memory retired from now on outlives it. */
static inline void
sl__epoch_enter(struct sl__epoch_rec *rec)
{
    sl__ck_epoch_begin(rec);
}

/* Leave a section.  The release tells TSan that what the section read
 * happens before any reclamation that waited for it (ck_epoch's grace
 * period gives that order; TSan cannot see it). */
static inline void
sl__epoch_leave(struct sl__epoch_rec *rec)
{
    SL__TSAN_RELEASE(&rec->epoch->tsan_sync);
    sl__ck_epoch_end(rec);
}

#endif /* SL_CK_GLUE_INTERNAL_H */
