/* SPDX-License-Identifier: MIT */
/*
 * The writer threads of opts.write_behind: units completed early, their
 * chunks encoded by the write that completed them, are assembled and
 * written here while writes go on, so that a store's write and fsync do
 * not leave a pool worker's core idle, and a remote store's PUTs overlap.
 *
 * DESIGN: as many threads per transaction as its store says sets overlap
 * (one for files, whose fsyncs queue on one device; several for S3, whose
 * PUTs each wait a round trip; never more than write_behind), all started
 * by the first unit handed over, each with its own codec context.  They
 * inherit the CPU binding of the thread that starts them, one core when
 * that is a pool worker; bench io_txn runs slower with the file store's
 * thread free on every CPU the opener may use (docs/BENCHMARKS.md).  Their
 * queue: a FIFO of at most opts.write_behind units (queued or being
 * written) under one lock, with one condition variable broadcast at every
 * change; each thread takes the oldest unit, so units of one transaction
 * are written concurrently, as pool workers writing in place would.
 * A handed-over unit is flushing and stays in the staging table until
 * written (txn_flush.c), so readers and writers of it behave as with a
 * write in place; when the write handing it over had a codec context, it
 * also assembled the shard, and this thread only stores it.  The thread
 * never uses opts.par and takes no lock that a waiting writer holds (it
 * waits with none), so a pool worker may wait for room.  Commit and abort
 * drain the queue before they touch the table; close stops and joins the
 * thread.
 */
#include "txn_internal.h"

static void *
behind_main(void *arg)
{
    sl_txn *t = arg;
    struct sl_error ignored = SL_ERROR_INIT;
    /* NULL: each write makes a temporary one, or fails its unit. */
    sl_codec_ctx *ctx = sl_codec_ctx_create(&t->alloc, &ignored);
    pthread_mutex_lock(&t->behind_mu);
    for (;;) {
        while (t->behind_head == NULL && !t->behind_stop)
            pthread_cond_wait(&t->behind_cv, &t->behind_mu);
        struct sl__txn_unit *u = t->behind_head;
        if (u == NULL)
            break; /* stopped, and nothing is left */
        t->behind_head = u->behind_next;
        if (t->behind_head == NULL)
            t->behind_tail = NULL;
        pthread_mutex_unlock(&t->behind_mu);
        sl__txn_write_units(t, &u, 1, ctx, true);
        pthread_mutex_lock(&t->behind_mu);
        t->behind_n--;
        pthread_cond_broadcast(&t->behind_cv);
    }
    pthread_mutex_unlock(&t->behind_mu);
    sl_codec_ctx_destroy(ctx);
    return NULL;
}

bool
sl__txn_behind_take(sl_txn *t, struct sl__txn_unit *u)
{
    if (t->opts.write_behind == 0)
        return false;
    pthread_mutex_lock(&t->behind_mu);
    if (!t->behind_started) {
        t->behind_started = true;
        while (t->behind_running < t->behind_writers &&
               pthread_create(&t->behind_threads[t->behind_running], NULL, behind_main, t) == 0)
            t->behind_running++;
    }
    /* With no thread, or after close began (a caller's error), write in place. */
    bool taken = t->behind_running > 0 && !t->behind_stop;
    if (taken) {
        while (t->behind_n >= t->opts.write_behind)
            pthread_cond_wait(&t->behind_cv, &t->behind_mu);
        u->behind_next = NULL;
        if (t->behind_tail != NULL)
            t->behind_tail->behind_next = u;
        else
            t->behind_head = u;
        t->behind_tail = u;
        t->behind_n++;
        pthread_cond_broadcast(&t->behind_cv);
    }
    pthread_mutex_unlock(&t->behind_mu);
    return taken;
}

bool
sl__txn_behind_drain(sl_txn *t)
{
    pthread_mutex_lock(&t->behind_mu);
    bool any = t->behind_n > 0;
    while (t->behind_n > 0)
        pthread_cond_wait(&t->behind_cv, &t->behind_mu);
    pthread_mutex_unlock(&t->behind_mu);
    return any;
}

void
sl__txn_behind_stop(sl_txn *t)
{
    pthread_mutex_lock(&t->behind_mu);
    t->behind_stop = true;
    pthread_cond_broadcast(&t->behind_cv);
    unsigned running = t->behind_running;
    pthread_mutex_unlock(&t->behind_mu);
    for (unsigned i = 0; i < running; i++)
        pthread_join(t->behind_threads[i], NULL);
}

bool
sl_txn_wait_behind(sl_txn *t)
{
    return t != NULL && sl__txn_behind_drain(t);
}
