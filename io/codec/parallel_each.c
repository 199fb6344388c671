/* SPDX-License-Identifier: MIT */
/*
 * Running per-chunk (or per-shard) work through the caller's "parallel for",
 * with a codec context per worker and the error of the lowest failing index
 * reported, as a plain loop would report it.
 *
 * DESIGN: worker w only ever touches slot w of the context and error arrays
 * (the sl_parallel contract: two iterations never run at once with the same
 * worker), so the slots need no locks.  Contexts are made on a worker's
 * first iteration; worker 0 uses the caller's when given.  After a failure
 * the remaining iterations return at once (the relaxed flag only hurries
 * them; correctness rests on the per-slot lowest index).
 */
#include <stdatomic.h>
#include <string.h>

#include "codec_internal.h"

/* One worker's state. */
struct each_slot {
    sl_codec_ctx *ctx;      /* made on first use, or the caller's (worker 0) */
    struct sl_error err;    /* error of this worker's lowest failing index */
    size_t failed_at;       /* that index; SIZE_MAX while none */
    char pad[SL_CACHELINE]; /* keep slots of different workers apart */
};

struct each_run {
    sl__each_fn *fn;
    void *arg;
    struct each_slot *slots;
    const struct sl_allocator *alloc;
    _Atomic bool failed; /* some iteration failed: skip the rest */
};

static void
each_body(void *arg, size_t index, unsigned worker)
{
    struct each_run *run = arg;
    struct each_slot *slot = &run->slots[worker];
    if (atomic_load_explicit(&run->failed, memory_order_relaxed))
        return;
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = SL_OK;
    if (slot->ctx == NULL)
        slot->ctx = sl_codec_ctx_create(run->alloc, &err);
    if (slot->ctx == NULL)
        st = SL_ENOMEM;
    else
        st = run->fn(run->arg, index, slot->ctx, &err);
    if (st == SL_OK)
        return;
    if (err.code == SL_OK)
        sl_error_set(&err, st, NULL, "%s", sl_status_message(st));
    if (index < slot->failed_at) {
        slot->failed_at = index;
        slot->err = err;
    }
    atomic_store_explicit(&run->failed, true, memory_order_relaxed);
}

sl_status
sl__for_each(const struct sl_parallel *par, size_t n, sl_codec_ctx *ctx0,
             const struct sl_allocator *alloc, sl__each_fn *fn, void *arg, struct sl_error *err)
{
    unsigned nw = sl_parallel_workers(par);
    struct each_slot *slots = sl_alloc_zeroed(alloc, nw, sizeof(*slots), SL_CACHELINE);
    if (slots == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "out of memory for %u workers", nw);
    for (unsigned w = 0; w < nw; w++) {
        slots[w].failed_at = SIZE_MAX;
        slots[w].err = SL_ERROR_INIT;
    }
    slots[0].ctx = ctx0;
    struct each_run run = {fn, arg, slots, alloc, false};
    sl_status st = sl_parallel_run(par, n, each_body, &run);
    size_t first = SIZE_MAX;
    unsigned who = 0;
    for (unsigned w = 0; w < nw; w++) {
        if (slots[w].failed_at < first) {
            first = slots[w].failed_at;
            who = w;
        }
        if (w > 0 || ctx0 == NULL)
            sl_codec_ctx_destroy(slots[w].ctx);
    }
    if (first != SIZE_MAX) {
        sl__error_forward(err, &slots[who].err);
        st = slots[who].err.code;
    } else if (st != SL_OK) {
        sl_error_set(err, st, NULL, "the parallel executor stopped early");
    }
    sl_free(alloc, slots, nw * sizeof(*slots));
    return st;
}
