/* SPDX-License-Identifier: MIT */
/*
 * Emitting tasks: the driver makes a task for a batch of chunks of one
 * stage, creates the intermediate chunks it reads (each by a task of its
 * own), makes it depend on those still pending, waits for room in the
 * budget and submits it to the pool.  Finished tasks come back to the
 * driver through a lock-free list.
 *
 * DESIGN: a chunk of a stage with unfused inputs first gets the
 * intermediate chunks it reads: each is created once, with the number of
 * reads it will get; the consumer task depends on the ones still pending
 * and runs, as a continuation, on the worker that finishes the last of
 * them.  Room is awaited after the inputs are under way, so their tasks
 * can run while the consumer waits.  A task that could not be prepared is
 * still submitted, to run as cancelled: waiters may point at it.
 */
#include <sched.h>
#include <stddef.h>
#include <string.h>

#include <sluice/task.h>

#include "core_internal.h"
#include "exec_internal.h"
#include "exec_steps_internal.h"

/* A task from the driver's free list, refilled from what workers returned. */
static struct sl__exec_task *
exec_task_alloc(struct sl__exec *ex)
{
    if (ex->free_tasks == NULL)
        /* Acquire: pairs with the release CAS in exec_task_free, so the
         * driver sees each returned task's last writes before reusing it.
         * Taking the whole list at once leaves no ABA window. */
        ex->free_tasks = atomic_exchange_explicit(&ex->returned, NULL, memory_order_acquire);
    struct sl__exec_task *t = ex->free_tasks;
    if (t != NULL)
        ex->free_tasks = t->next;
    if (t == NULL)
        t = sl_alloc(&ex->plan->alloc, sizeof(*t), 0);
    if (t != NULL)
        memset(t, 0, sizeof(*t));
    return t;
}

/* Return a finished task (any worker): a lock-free push. */
static void
exec_task_free(struct sl__exec *ex, struct sl__exec_task *t)
{
    struct sl__exec_task *head = atomic_load_explicit(&ex->returned, memory_order_relaxed);
    do
        t->next = head;
    /* Release: pairs with the driver's acquire exchange in exec_task_alloc. */
    while (!atomic_compare_exchange_weak_explicit(&ex->returned, &head, t, memory_order_release,
                                                  memory_order_relaxed));
}

/* The pool's callback for every task of a run. */
static void
exec_task_fn(void *arg, sl_status status)
{
    struct sl__exec_task *t = arg;
    struct sl__exec *ex = t->ex;
    atomic_fetch_add_explicit(&ex->n_started, 1, memory_order_relaxed);
    if (status != SL_OK)
        sl__exec_cancel(ex);
    int w = sl_pool_worker_index(ex->pool);
    sl__exec_task_run(ex, t, w >= 0 ? (unsigned)w : ex->n_workers);
    exec_task_free(ex, t);
    /* Once in_flight reaches 0 the driver may end the run, whose state
     * lives on its stack, while this worker still wakes it: announce the
     * epilogue first and let sl__exec_tasks_fini wait until it is over.
     * Relaxed: the release decrement of in_flight below carries it to the
     * driver, whose acquire load that finds the run idle comes before its
     * load of n_exiting. */
    atomic_fetch_add_explicit(&ex->n_exiting, 1, memory_order_relaxed);
    /* Seq-cst: the first half of the Dekker pair in sl__exec_wake_driver;
     * as a release it also hands this task's writes (status bytes,
     * counters, the returned task) to the driver's load in exec_ready
     * that finds the run idle. */
    bool last = atomic_fetch_sub_explicit(&ex->in_flight, 1, memory_order_seq_cst) == 1;
    sl__exec_wake_driver(ex, last ? SL__WAIT_IDLE : SL__WAIT_ROOM);
    /* Release: the last touch of the run; pairs with the acquire load in
     * sl__exec_tasks_fini, so the driver frees the run only after it. */
    atomic_fetch_sub_explicit(&ex->n_exiting, 1, memory_order_release);
}

/* Submit `t` (the driver only). */
static sl_status
exec_submit(struct sl__exec *ex, struct sl__exec_task *t, struct sl_error *err)
{
    /* While no submitted task has started yet (the workers are still waking
     * up), the driver computes a task without dependencies itself rather
     * than wait idle: short runs then start at once. */
    if (ex->n_submitted > 0 && t->output == NULL &&
        ex->fusion->stages[t->stage].n_unfused_inputs == 0 &&
        atomic_load_explicit(&ex->n_started, memory_order_relaxed) == 0 &&
        !sl__exec_is_canceled(ex)) {
        sl__exec_task_run(ex, t, ex->n_workers);
        exec_task_free(ex, t);
        atomic_fetch_add_explicit(&ex->n_inline, 1, memory_order_relaxed);
        return SL_OK;
    }
    ex->n_submitted++;
    /* Relaxed: only the driver increments, before submitting, and the
     * pool's hand-over orders the task's decrement after it. */
    atomic_fetch_add_explicit(&ex->in_flight, 1, memory_order_relaxed);
    sl_status st = sl_pool_submit_task(ex->pool, &t->task);
    if (st != SL_OK) {
        /* Only a pool shutting down refuses: the task stays allocated, as
         * waiters may still point at it. */
        atomic_fetch_sub_explicit(&ex->in_flight, 1, memory_order_relaxed);
        sl__exec_release(ex, t->reserved);
        sl__exec_cancel(ex);
        return sl_error_set(err, st, NULL, "the pool refused a task: %s", sl_status_message(st));
    }
    return SL_OK;
}

static sl_status
needs_push(struct sl__exec *ex, struct sl__exec_needs *nd, uint32_t node, const uint64_t *coords,
           struct sl_error *err)
{
    if (nd->n == nd->cap) {
        size_t cap = nd->cap ? nd->cap * 2 : 64;
        uint32_t *nn = sl_alloc_zeroed(&ex->plan->alloc, cap, sizeof(uint32_t), 0);
        uint64_t *nc = sl_alloc_zeroed(&ex->plan->alloc, cap, SL_MAX_RANK * sizeof(uint64_t), 0);
        if (nn == NULL || nc == NULL) {
            sl_free(&ex->plan->alloc, nn, cap * sizeof(uint32_t));
            sl_free(&ex->plan->alloc, nc, cap * SL_MAX_RANK * sizeof(uint64_t));
            return sl_error_set(err, SL_ENOMEM, NULL, "no memory to plan a task's inputs");
        }
        if (nd->n > 0) {
            memcpy(nn, nd->node, nd->n * sizeof(uint32_t));
            memcpy(nc, nd->coords, nd->n * SL_MAX_RANK * sizeof(uint64_t));
        }
        sl_free(&ex->plan->alloc, nd->node, nd->cap * sizeof(uint32_t));
        sl_free(&ex->plan->alloc, nd->coords, nd->cap * SL_MAX_RANK * sizeof(uint64_t));
        nd->node = nn;
        nd->coords = nc;
        nd->cap = cap;
    }
    nd->node[nd->n] = node;
    memcpy(&nd->coords[nd->n * SL_MAX_RANK], coords, SL_MAX_RANK * sizeof(uint64_t));
    nd->n++;
    return SL_OK;
}

/* Append the intermediate chunks chunk `coords` of node `id` reads, down its fused tree. */
static sl_status
needs_collect(struct sl__exec *ex, uint32_t id, const uint64_t *coords, struct sl__exec_needs *nd,
              struct sl_error *err)
{
    const struct sl__node *n = sl__graph_node(ex->graph, id);
    struct sl_region r;
    sl_grid_chunk_region(&n->grid, coords, &r);
    for (uint32_t i = 0; i < n->n_inputs; i++) {
        const struct sl__node *p = sl__graph_node(ex->graph, n->inputs[i]);
        struct sl_region rin;
        sl__node_input_region(ex->graph, n, i, &r, &rin);
        if (sl_region_is_empty(&rin))
            continue;
        if (ex->fusion->fused_to[p->id] == id) {
            uint64_t pc[SL_MAX_RANK] = {0};
            for (uint32_t d = 0; d < rin.rank; d++)
                pc[d] = sl_grid_chunk_at(&p->grid, d, rin.start[d]);
            SL_TRY(needs_collect(ex, p->id, pc, nd, err));
            continue;
        }
        struct sl_grid_iter it;
        sl_grid_iter_init(&it, &p->grid, &rin);
        while (sl_grid_iter_next(&it)) {
            uint64_t pc[SL_MAX_RANK] = {0};
            memcpy(pc, it.coords, p->grid.rank * sizeof(uint64_t));
            SL_TRY(needs_push(ex, nd, p->id, pc, err));
        }
    }
    return SL_OK;
}

/*
 * Make sure intermediate chunk `coords` of stage root `node` exists (creating
 * it and its task) and make task `t` depend on it while it is pending.
 * `*accounted` tells whether one of t's dependencies is now taken care of
 * (released at once or registered with the entry), even when the status is
 * a failure of the producer's emission.
 */
static sl_status
need_entry(struct sl__exec *ex, struct sl__exec_drive *dr, uint32_t node, const uint64_t *coords,
           struct sl__exec_task *t, bool *accounted, struct sl_error *err)
{
    const struct sl__node *p = sl__graph_node(ex->graph, node);
    uint32_t stage = ex->fusion->stage_of[node];
    uint64_t linear = sl_grid_linear_index(&p->grid, coords);
    *accounted = false;
    pthread_mutex_lock(&ex->inter.lock);
    struct sl__entry *e = sl__inter_find_locked(&ex->inter, stage, linear);
    bool created = false;
    if (e == NULL) {
        uint64_t uses = sl__fusion_chunk_uses(ex->graph, ex->fusion, node, coords);
        e = sl__inter_insert_locked(&ex->inter, stage, linear, uses);
        created = e != NULL;
    }
    struct sl__waiter *w = NULL;
    if (e != NULL && e->state == SL__ENTRY_PENDING) {
        w = sl__inter_waiter_locked(&ex->inter);
        if (w != NULL) {
            w->task = t;
            w->next = e->waiters;
            e->waiters = w;
        }
    }
    bool done = e != NULL && e->state != SL__ENTRY_PENDING;
    pthread_mutex_unlock(&ex->inter.lock);
    if (e == NULL || (!done && w == NULL)) {
        if (created) {
            /* Nobody waits for it yet: run its task anyway, as cancelled. */
            sl__exec_cancel(ex);
            (void)sl__exec_task_emit(ex, dr, stage, linear, 0, 1, e, NULL);
        }
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory to track an intermediate chunk");
    }
    *accounted = true;
    if (done)
        sl_task_release(&t->task);
    if (created)
        return sl__exec_task_emit(ex, dr, stage, linear, 0, 1, e, err);
    return SL_OK;
}

/* Make `t` depend on every intermediate chunk its (single) chunk reads. */
static sl_status
emit_deps(struct sl__exec *ex, struct sl__exec_drive *dr, struct sl__exec_task *t,
          struct sl_error *err)
{
    const struct sl__stage *s = &ex->fusion->stages[t->stage];
    uint64_t coords[SL_MAX_RANK] = {0};
    sl__exec_box_coords(ex, t->stage, t->box, t->first, coords);
    size_t base = dr->needs.n;
    sl_status st = needs_collect(ex, s->root, coords, &dr->needs, err);
    size_t n = dr->needs.n - base, done = 0;
    if (st == SL_OK && n > UINT32_MAX - 2)
        st = sl_error_set(err, SL_EOVERFLOW, NULL, "a chunk reads %zu intermediate chunks", n);
    if (st == SL_OK && n > 0)
        st = sl_task_add_deps(&t->task, (uint32_t)n);
    if (st != SL_OK)
        n = 0;
    /* Each accounted need is one dependency released at once or by the
     * entry's producer; the others are released here after a failure, so
     * the task runs (as cancelled) instead of waiting forever. */
    while (done < n && st == SL_OK) {
        bool accounted;
        st = need_entry(ex, dr, dr->needs.node[base + done],
                        &dr->needs.coords[(base + done) * SL_MAX_RANK], t, &accounted, err);
        done += accounted;
    }
    if (st != SL_OK) {
        sl__exec_cancel(ex);
        for (; done < n; done++)
            sl_task_release(&t->task);
    }
    dr->needs.n = base;
    return st;
}

sl_status
sl__exec_task_emit(struct sl__exec *ex, struct sl__exec_drive *dr, uint32_t stage, uint64_t box,
                   uint64_t first, uint32_t count, struct sl__entry *output, struct sl_error *err)
{
    const struct sl__stage *s = &ex->fusion->stages[stage];
    struct sl__exec_task *t = exec_task_alloc(ex);
    if (t == NULL) {
        /* The chunk this task was to make will never be made: fail it, or
         * the tasks waiting for it would wait forever. */
        sl__exec_cancel(ex);
        if (output != NULL)
            sl__exec_entry_abandon(ex, output, SL_ENOMEM, "no memory for the task of this chunk");
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for a task");
    }
    t->ex = ex;
    t->stage = stage;
    t->box = box;
    t->first = first;
    t->count = count;
    t->output = output;
    sl_task_init(&t->task, exec_task_fn, t);
    sl_status st = SL_OK;
    if (s->n_unfused_inputs > 0)
        st = emit_deps(ex, dr, t, err);
    /* Room is awaited after the inputs are under way: their tasks must be
     * able to run while this one waits. */
    if (st == SL_OK)
        st = sl__exec_wait(ex, SL__WAIT_ROOM, s->task_bytes, dr->max_tasks, &dr->tot, err);
    if (st == SL_OK) {
        t->reserved = s->task_bytes;
        sl__exec_reserve(ex, t->reserved);
        sl__exec_prefetch(ex, stage, box, first, count);
    } else {
        sl__exec_cancel(ex);
    }
    /* Submitted even after a failure: waiters may point at it, and it runs
     * as cancelled. */
    sl_status sst = exec_submit(ex, t, st == SL_OK ? err : NULL);
    return st != SL_OK ? st : sst;
}

void
sl__exec_tasks_fini(struct sl__exec *ex)
{
    /* Workers past their last task may still be waking the driver.
     * Acquire: pairs with the release decrement at the end of
     * exec_task_fn.  A spin, not a sleep: what it waits for is the few
     * instructions of a wake-up already under way on a running worker
     * (at worst one lock, signal and unlock), and blocking instead would
     * cost every task a lock; sched_yield lets a preempted worker finish. */
    while (atomic_load_explicit(&ex->n_exiting, memory_order_acquire) != 0)
        sched_yield();
    for (int list = 0; list < 2; list++) {
        /* Relaxed: the run is idle; the acquire above and the driver's
         * acquire load of in_flight ordered every push before this. */
        struct sl__exec_task *t =
            list == 0 ? ex->free_tasks : atomic_load_explicit(&ex->returned, memory_order_relaxed);
        while (t != NULL) {
            struct sl__exec_task *next = t->next;
            sl_free(&ex->plan->alloc, t, sizeof(*t));
            t = next;
        }
    }
    ex->free_tasks = NULL;
    atomic_store_explicit(&ex->returned, NULL, memory_order_relaxed);
}
