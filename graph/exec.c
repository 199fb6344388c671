/* SPDX-License-Identifier: MIT */
/*
 * The executor's driver: sl_plan_run walks every put's output chunks,
 * creates tasks lazily within the memory budget, tracks the intermediate
 * chunks unfused stages share, reports progress and gathers the results.
 *
 * DESIGN: the thread calling sl_plan_run is the driver; the pool's workers
 * run tasks.  Nothing of size O(chunks) exists besides the status arrays:
 * the driver emits tasks (batches of consecutive chunks of one stage, in
 * shard order) only while the chunk buffers accounted alive fit the budget
 * and few enough tasks are queued, and sleeps otherwise.  A chunk of a
 * stage with unfused inputs first gets the intermediate chunks it reads:
 * each is created once, with the number of reads it will get, by a task of
 * its own; the consumer task depends on the ones still pending and runs,
 * as a continuation, on the worker that finishes the last of them.
 *
 * Budget: the driver reserves a stage's task bytes before emitting a task;
 * the task returns them when done, except the bytes of an intermediate
 * chunk it publishes, returned when that chunk's last reader frees it.
 * Only the driver adds, so an admitted reservation is never overtaken.
 *
 * Lock order: ex->lock and the intermediate table's lock are never held
 * together.
 */
#include <inttypes.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sluice/checked.h>

#include "core_internal.h"
#include "exec_internal.h"

/* Tasks queued or running at most, per worker, when the budget allows more. */
#define EXEC_TASKS_PER_WORKER 32
/* Largest number of chunks one task computes in a row. */
#define EXEC_MAX_BATCH 64
/* How long the driver yields and looks again before it sleeps (ns). */
#define EXEC_DRIVER_SPIN_NS 200000u
/* Trace events kept per worker. */
#define EXEC_TRACE_CAP ((size_t)1 << 20)

uint64_t
sl__exec_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void
sl__exec_box_coords(const struct sl__exec *ex, uint32_t stage, uint64_t box, uint64_t pos,
                    uint64_t *coords)
{
    const struct sl_grid *bg = &ex->boxes[stage];
    uint64_t bc[SL_MAX_RANK];
    struct sl_region r;
    sl_grid_coords_of(bg, box, bc);
    sl_grid_chunk_region(bg, bc, &r);
    for (uint32_t d = bg->rank; d-- > 0;) {
        uint64_t ext = r.stop[d] - r.start[d];
        coords[d] = r.start[d] + pos % ext;
        pos /= ext;
    }
}

uint64_t
sl__exec_sum(const struct sl__exec *ex, size_t offset)
{
    uint64_t total = 0;
    for (unsigned w = 0; w <= ex->n_workers; w++) {
        const char *base = (const char *)&ex->workers[w];
        total += atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)(base + offset),
                                      memory_order_relaxed);
    }
    return total;
}

/*
 * Wake the driver if it sleeps for `why`: room (any finished task or freed
 * byte may give it) or idleness (only the last task's end does).
 */
static void
exec_wake_driver(struct sl__exec *ex, int why)
{
    /* Seq-cst: pairs with the driver's store of driver_waiting followed by
     * its re-check of the counters (a Dekker pattern): either it sees our
     * update or we see it waiting. */
    int waiting = atomic_load(&ex->driver_waiting);
    if (waiting != 0 && (waiting == why || why == SL__WAIT_IDLE)) {
        pthread_mutex_lock(&ex->lock);
        pthread_cond_signal(&ex->cond);
        pthread_mutex_unlock(&ex->lock);
    }
}

void
sl__exec_release(struct sl__exec *ex, size_t bytes)
{
    if (bytes == 0)
        return;
    atomic_fetch_sub(&ex->accounted, bytes);
    exec_wake_driver(ex, SL__WAIT_ROOM);
}

void
sl__exec_note_failure(struct sl__exec *ex, sl_status code, const struct sl_error *err)
{
    int expected = SL_OK;
    if (atomic_compare_exchange_strong(&ex->first_error, &expected, (int)code)) {
        pthread_mutex_lock(&ex->lock);
        ex->first_err = *err;
        pthread_mutex_unlock(&ex->lock);
    }
    if (ex->plan->opts.policy == SL_POLICY_FAIL_FAST)
        atomic_store(&ex->cancel, true);
}

/* Reserve `bytes` of budget (the driver only). */
static void
exec_reserve(struct sl__exec *ex, size_t bytes)
{
    /* The peak counts chunk data staged in transactions too. */
    size_t now = atomic_fetch_add(&ex->accounted, bytes) + bytes + sl__exec_staged(ex);
    size_t peak = atomic_load_explicit(&ex->peak, memory_order_relaxed);
    while (now > peak && !atomic_compare_exchange_weak(&ex->peak, &peak, now)) {
    }
}

/* ---- tasks ------------------------------------------------------------------ */

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
        atomic_store(&ex->cancel, true);
    int w = sl_pool_worker_index(ex->pool);
    sl__exec_task_run(ex, t, w >= 0 ? (unsigned)w : ex->n_workers);
    exec_task_free(ex, t);
    /* Once in_flight reaches 0 the driver may end the run, whose state
     * lives on its stack, while this worker still wakes it: announce the
     * epilogue first (seq-cst, so a driver that sees in_flight at 0 sees
     * it), and let exec_fini wait until it is over. */
    atomic_fetch_add(&ex->n_exiting, 1);
    bool last = atomic_fetch_sub(&ex->in_flight, 1) == 1;
    exec_wake_driver(ex, last ? SL__WAIT_IDLE : SL__WAIT_ROOM);
    atomic_fetch_sub(&ex->n_exiting, 1); /* the last touch of the run */
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
        !atomic_load(&ex->cancel)) {
        sl__exec_task_run(ex, t, ex->n_workers);
        exec_task_free(ex, t);
        atomic_fetch_add_explicit(&ex->n_inline, 1, memory_order_relaxed);
        return SL_OK;
    }
    ex->n_submitted++;
    atomic_fetch_add(&ex->in_flight, 1);
    sl_status st = sl_pool_submit_task(ex->pool, &t->task);
    if (st != SL_OK) {
        /* Only a pool shutting down refuses: the task stays allocated, as
         * waiters may still point at it. */
        atomic_fetch_sub(&ex->in_flight, 1);
        sl__exec_release(ex, t->reserved);
        atomic_store(&ex->cancel, true);
        return sl_error_set(err, st, NULL, "the pool refused a task: %s", sl_status_message(st));
    }
    return SL_OK;
}

/* ---- the driver's waits -------------------------------------------------------- */

/* Call the progress callback with the run's counters. */
static void
exec_progress(struct sl__exec *ex, uint64_t total, uint64_t bytes_total, bool final)
{
    const struct sl_plan_opts *o = &ex->plan->opts;
    if (o->progress == NULL)
        return;
    struct sl_progress p = {
        .chunks_done = sl__exec_sum(ex, offsetof(struct sl__exec_worker, chunks_done)),
        .chunks_total = total,
        .chunks_failed = sl__exec_sum(ex, offsetof(struct sl__exec_worker, chunks_failed)),
        .bytes_done = sl__exec_sum(ex, offsetof(struct sl__exec_worker, bytes_done)),
        .bytes_total = bytes_total,
        .elapsed_s = (double)(sl__exec_now_ns() - ex->t0_ns) * 1e-9,
        .final = final,
    };
    p.bytes_per_s = p.elapsed_s > 0 ? (double)p.bytes_done / p.elapsed_s : 0;
    p.eta_s = p.bytes_done > 0 && p.bytes_per_s > 0
                  ? (double)(bytes_total - p.bytes_done) / p.bytes_per_s
                  : -1;
    o->progress(o->progress_ctx, &p);
}

/* Progress totals, computed once per run. */
struct exec_totals {
    uint64_t chunks;           /* output chunks of every put */
    uint64_t bytes;            /* their decoded bytes */
    uint64_t next_progress_ns; /* when the next progress call is due */
};

/* What the driver waits for. */
enum exec_wait {
    EXEC_WAIT_ROOM, /* budget for `need` bytes and a free task slot */
    EXEC_WAIT_IDLE  /* every task finished */
};

static bool
exec_ready(struct sl__exec *ex, enum exec_wait what, size_t need, uint64_t max_tasks)
{
    uint64_t in_flight = atomic_load(&ex->in_flight);
    if (what == EXEC_WAIT_IDLE)
        return in_flight == 0;
    size_t budget = ex->plan->opts.memory_budget;
    bool fits = budget == 0 || atomic_load(&ex->accounted) + sl__exec_staged(ex) + need <= budget;
    return fits && in_flight < max_tasks;
}

/*
 * Sleep until `what` holds, calling the progress callback when due.
 * @return SL_OK, or SL_EBUDGET when room is awaited with nothing running
 * (intermediate chunks waiting for consumers hold the budget).
 */
static sl_status
exec_wait(struct sl__exec *ex, enum exec_wait what, size_t need, uint64_t max_tasks,
          struct exec_totals *tot, struct sl_error *err)
{
    const uint64_t interval = (uint64_t)(ex->plan->opts.progress_interval_s * 1e9);
    const uint64_t wait_start = sl__exec_now_ns();
    for (;;) {
        uint64_t now = sl__exec_now_ns();
        if (now >= tot->next_progress_ns) {
            exec_progress(ex, tot->chunks, tot->bytes, false);
            tot->next_progress_ns = now + interval;
        }
        if (exec_ready(ex, what, need, max_tasks))
            return SL_OK;
        if (what == EXEC_WAIT_ROOM && atomic_load(&ex->in_flight) == 0)
            return sl_error_set(err, SL_EBUDGET, NULL,
                                "memory budget of %zu bytes exhausted: %zu bytes are held by "
                                "intermediate chunks awaiting their readers and the next task "
                                "needs %zu",
                                ex->plan->opts.memory_budget, atomic_load(&ex->accounted), need);
        /* Short runs end within microseconds: look again a few times
         * before paying for a sleep and a wake-up. */
        if (now - wait_start < EXEC_DRIVER_SPIN_NS) {
            sched_yield();
            continue;
        }
        pthread_mutex_lock(&ex->lock);
        atomic_store(&ex->driver_waiting, what == EXEC_WAIT_IDLE ? SL__WAIT_IDLE : SL__WAIT_ROOM);
        if (!exec_ready(ex, what, need, max_tasks)) {
            uint64_t until = tot->next_progress_ns;
            struct timespec ts = {.tv_sec = (time_t)(until / 1000000000u),
                                  .tv_nsec = (long)(until % 1000000000u)};
            pthread_cond_timedwait(&ex->cond, &ex->lock, &ts);
        }
        atomic_store(&ex->driver_waiting, 0);
        pthread_mutex_unlock(&ex->lock);
    }
}

/* ---- emitting work -------------------------------------------------------------- */

/* Scratch list of intermediate chunks one task reads. */
struct exec_needs {
    uint32_t *node;   /* producer node ids */
    uint64_t *coords; /* SL_MAX_RANK coordinates each */
    size_t n;         /* in use */
    size_t cap;       /* allocated */
};

static sl_status
needs_push(struct sl__exec *ex, struct exec_needs *nd, uint32_t node, const uint64_t *coords,
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
needs_collect(struct sl__exec *ex, uint32_t id, const uint64_t *coords, struct exec_needs *nd,
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

/* The driver's state while emitting. */
struct exec_drive {
    struct exec_totals tot;  /* progress totals */
    uint64_t max_tasks;      /* queued tasks at most */
    struct exec_needs needs; /* scratch */
};

static sl_status emit_task(struct sl__exec *ex, struct exec_drive *dr, uint32_t stage, uint64_t box,
                           uint64_t first, uint32_t count, struct sl__entry *output,
                           struct sl_error *err);

/*
 * Make sure intermediate chunk `coords` of stage root `node` exists (creating
 * it and its task) and make task `t` depend on it while it is pending.
 * `*accounted` tells whether one of t's dependencies is now taken care of
 * (released at once or registered with the entry), even when the status is
 * a failure of the producer's emission.
 */
static sl_status
need_entry(struct sl__exec *ex, struct exec_drive *dr, uint32_t node, const uint64_t *coords,
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
            atomic_store(&ex->cancel, true);
            (void)emit_task(ex, dr, stage, linear, 0, 1, e, NULL);
        }
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory to track an intermediate chunk");
    }
    *accounted = true;
    if (done)
        sl_task_release(&t->task);
    if (created)
        return emit_task(ex, dr, stage, linear, 0, 1, e, err);
    return SL_OK;
}

/* Make `t` depend on every intermediate chunk its (single) chunk reads. */
static sl_status
emit_deps(struct sl__exec *ex, struct exec_drive *dr, struct sl__exec_task *t, struct sl_error *err)
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
        atomic_store(&ex->cancel, true);
        for (; done < n; done++)
            sl_task_release(&t->task);
    }
    dr->needs.n = base;
    return st;
}

static sl_status
emit_task(struct sl__exec *ex, struct exec_drive *dr, uint32_t stage, uint64_t box, uint64_t first,
          uint32_t count, struct sl__entry *output, struct sl_error *err)
{
    const struct sl__stage *s = &ex->fusion->stages[stage];
    struct sl__exec_task *t = exec_task_alloc(ex);
    if (t == NULL) {
        /* The chunk this task was to make will never be made: fail it, or
         * the tasks waiting for it would wait forever. */
        atomic_store(&ex->cancel, true);
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
        st = exec_wait(ex, EXEC_WAIT_ROOM, s->task_bytes, dr->max_tasks, &dr->tot, err);
    if (st == SL_OK) {
        t->reserved = s->task_bytes;
        exec_reserve(ex, t->reserved);
    } else {
        atomic_store(&ex->cancel, true);
    }
    /* Submitted even after a failure: waiters may point at it, and it runs
     * as cancelled. */
    sl_status sst = exec_submit(ex, t, st == SL_OK ? err : NULL);
    return st != SL_OK ? st : sst;
}

/* Chunks in box `box` of stage `stage`. */
static uint64_t
box_count(const struct sl__exec *ex, uint32_t stage, uint64_t box)
{
    const struct sl_grid *bg = &ex->boxes[stage];
    uint64_t bc[SL_MAX_RANK];
    struct sl_region r;
    sl_grid_coords_of(bg, box, bc);
    sl_grid_chunk_region(bg, bc, &r);
    uint64_t n = 1;
    for (uint32_t d = 0; d < bg->rank; d++)
        n *= r.stop[d] - r.start[d];
    return n;
}

/*
 * Where the driver is in one put stage's walk.  Positions number the
 * stage's chunks box after box; this process runs positions [lo, hi).
 */
struct exec_cursor {
    uint32_t stage; /* the put stage */
    uint64_t box;   /* current box */
    uint64_t pos;   /* next position in it */
    uint64_t base;  /* position of the box's first chunk */
    uint64_t lo;    /* first position of this part */
    uint64_t hi;    /* one past its last */
    uint32_t batch; /* chunks per task */
};

/*
 * The positions [lo, hi) of put stage `stage` that this part runs: the
 * chunks split into n_parts runs of about equal count, cut at box (shard)
 * boundaries when there are several boxes, so no shard is written by two
 * parts.
 */
static void
exec_part_range(const struct sl__exec *ex, uint32_t stage, uint64_t *lo, uint64_t *hi)
{
    const struct sl_grid *bg = &ex->boxes[stage];
    uint64_t total = sl__graph_node(ex->graph, ex->fusion->stages[stage].root)->grid.n_total;
    uint32_t n = ex->plan->opts.n_parts, p = ex->plan->opts.part;
    uint64_t want_lo = (uint64_t)((double)total * p / n);
    uint64_t want_hi = p + 1 == n ? total : (uint64_t)((double)total * (p + 1) / n);
    if (n == 1 || bg->n_total <= 1) {
        *lo = want_lo;
        *hi = want_hi;
        return;
    }
    *lo = *hi = total;
    bool have_lo = false;
    uint64_t at = 0;
    for (uint64_t b = 0; b < bg->n_total; b++) {
        if (!have_lo && at >= want_lo) {
            *lo = at;
            have_lo = true;
        }
        if (at >= want_hi) {
            *hi = at;
            return;
        }
        at += box_count(ex, stage, b);
    }
}

/* Emit the next task of `c`; false when its part of the stage is done. */
static bool
cursor_step(struct sl__exec *ex, struct exec_drive *dr, struct exec_cursor *c, sl_status *st,
            struct sl_error *err)
{
    const struct sl_grid *bg = &ex->boxes[c->stage];
    while (c->box < bg->n_total && c->base + c->pos < c->hi) {
        uint64_t n = box_count(ex, c->stage, c->box);
        if (c->base + n <= c->lo) {
            /* A box of another part, before ours. */
            c->base += n;
            c->box++;
            continue;
        }
        if (c->base + c->pos < c->lo)
            c->pos = c->lo - c->base;
        if (c->pos < n) {
            uint64_t left = n - c->pos;
            if (c->base + n > c->hi)
                left = c->hi - c->base - c->pos;
            uint32_t count = left < c->batch ? (uint32_t)left : c->batch;
            *st = emit_task(ex, dr, c->stage, c->box, c->pos, count, NULL, err);
            c->pos += count;
            return true;
        }
        c->base += n;
        c->box++;
        c->pos = 0;
    }
    return false;
}

/* Mark the chunks of put stage `stage` outside this part as SL_ESKIPPED. */
static void
exec_mark_skipped(struct sl__exec *ex, uint32_t stage, uint64_t lo, uint64_t hi)
{
    const struct sl_grid *bg = &ex->boxes[stage];
    const struct sl__node *root = sl__graph_node(ex->graph, ex->fusion->stages[stage].root);
    struct sl__put_state *ps = sl__plan_put(ex->plan, root->id);
    uint64_t at = 0;
    for (uint64_t b = 0; b < bg->n_total; b++) {
        uint64_t n = box_count(ex, stage, b);
        for (uint64_t k = 0; k < n; k++, at++) {
            if (at >= lo && at < hi)
                continue;
            uint64_t coords[SL_MAX_RANK];
            sl__exec_box_coords(ex, stage, b, k, coords);
            ps->codes[sl_grid_linear_index(&root->grid, coords)] = SL_ESKIPPED;
        }
    }
}

static void exec_commit_txns(struct sl__exec *ex, uint32_t phase);

/* Emit every put stage of `phase`, round robin, then wait for them. */
static sl_status
exec_phase(struct sl__exec *ex, struct exec_drive *dr, uint32_t phase, struct sl_error *err)
{
    const struct sl__fusion *f = ex->fusion;
    struct exec_cursor cur[64];
    uint32_t n_cur = 0;
    sl_status st = SL_OK;
    for (uint32_t s = 0; s < f->n_stages; s++) {
        const struct sl__node *root = sl__graph_node(ex->graph, f->stages[s].root);
        bool is_put = root->kind == SL_NODE_PUT || root->kind == SL_NODE_PUTTER;
        if (!is_put || f->stages[s].phase != phase)
            continue;
        if (n_cur == SL_ARRAY_LEN(cur))
            return sl_error_set(err, SL_EUNSUPPORTED, NULL, "more than %zu puts in one phase",
                                SL_ARRAY_LEN(cur));
        uint64_t per = root->grid.n_total / (16 * (uint64_t)ex->n_workers);
        uint32_t batch = per < 1 ? 1 : per > EXEC_MAX_BATCH ? EXEC_MAX_BATCH : (uint32_t)per;
        if (f->stages[s].n_unfused_inputs > 0)
            batch = 1;
        struct exec_cursor *c = &cur[n_cur++];
        *c = (struct exec_cursor){.stage = s, .batch = batch};
        exec_part_range(ex, s, &c->lo, &c->hi);
        if (ex->plan->opts.n_parts > 1)
            exec_mark_skipped(ex, s, c->lo, c->hi);
    }
    bool any = true;
    while (any && st == SL_OK && !atomic_load(&ex->cancel)) {
        any = false;
        for (uint32_t i = 0; i < n_cur && st == SL_OK; i++)
            any |= cursor_step(ex, dr, &cur[i], &st, err);
    }
    sl_status wst = exec_wait(ex, EXEC_WAIT_IDLE, 0, 0, &dr->tot, NULL);
    /* Later phases may read what this one wrote: write every shard now. */
    exec_commit_txns(ex, phase);
    return st != SL_OK ? st : wst;
}

/* ---- setting up and tearing down a run ---------------------------------------- */

/* Box grids: shards (in chunks) for puts, whole grids for putters, single
 * chunks for intermediate stages. */
static sl_status
exec_boxes(struct sl__exec *ex, struct sl_error *err)
{
    const struct sl__fusion *f = ex->fusion;
    ex->boxes = sl_alloc_zeroed(&ex->plan->alloc, f->n_stages, sizeof(struct sl_grid), 0);
    if (ex->boxes == NULL && f->n_stages > 0)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for %" PRIu32 " stages", f->n_stages);
    for (uint32_t s = 0; s < f->n_stages; s++) {
        const struct sl__node *root = sl__graph_node(ex->graph, f->stages[s].root);
        uint64_t box[SL_MAX_RANK];
        bool is_put = root->kind == SL_NODE_PUT || root->kind == SL_NODE_PUTTER;
        for (uint32_t d = 0; d < root->grid.rank; d++) {
            uint64_t n = root->grid.n_chunks[d];
            box[d] = is_put ? (n > 0 ? n : 1) : 1;
            if (is_put && root->shard_chunks[d] > 0)
                box[d] = root->shard_chunks[d];
        }
        SL_TRY(sl_grid_init_regular(&ex->boxes[s], root->grid.rank, root->grid.n_chunks, box, err));
    }
    return SL_OK;
}

sl_txn *
sl__exec_put_txn(const struct sl__exec *ex, uint32_t node)
{
    for (uint32_t i = 0; i < ex->plan->n_puts; i++)
        if (ex->puts[i].node == node)
            return ex->puts[i].txn;
    return NULL;
}

size_t
sl__exec_staged(const struct sl__exec *ex)
{
    size_t total = 0;
    for (uint32_t i = 0; ex->puts != NULL && i < ex->plan->n_puts; i++)
        if (ex->puts[i].txn != NULL)
            total += (size_t)sl_txn_staged_bytes(ex->puts[i].txn);
    return total;
}

/*
 * A put's shard (or unsharded chunk) write ended: on failure, every chunk
 * of the unit that was ok fails with the shard's error, as what was
 * reported ok must read back.  Runs on the thread that wrote the unit.
 */
static void
exec_on_unit(void *arg, const uint64_t *unit, sl_status status, const struct sl_error *uerr)
{
    struct sl__exec_put *xp = arg;
    struct sl__exec *ex = xp->ex;
    if (status == SL_OK)
        return;
    const struct sl__node *n = sl__graph_node(ex->graph, xp->node);
    struct sl__put_state *ps = sl__plan_put(ex->plan, xp->node);
    struct sl_array_iter it;
    if (sl_array_iter_shard_chunks(n->u.io.array, unit, &it, NULL) != SL_OK ||
        !sl_array_iter_next(&it))
        return;
    /* The unit's key, from its first chunk. */
    char key[SL_STORE_KEY_MAX];
    sl_array_chunk_key(n->u.io.array, it.iter.coords, key, sizeof(key));
    char text[160];
    snprintf(text, sizeof(text), "put \"%s\": shard %s not written: %s: %s", n->name, key,
             sl_status_name(status), uerr != NULL ? uerr->text : sl_status_message(status));
    uint64_t changed = 0;
    do
        changed += sl__plan_fail_chunk(ex->plan, ps, sl_grid_linear_index(&n->grid, it.iter.coords),
                                       status, text);
    while (sl_array_iter_next(&it));
    /* Not sl__exec_count: besides workers and the driver, the writer
     * threads of transactions (several at once) report here. */
    int w = sl_pool_worker_index(ex->pool);
    atomic_fetch_add_explicit(&ex->workers[w >= 0 ? (unsigned)w : ex->n_workers].chunks_failed,
                              changed, memory_order_relaxed);
    if (status != SL_ECANCELED) {
        struct sl_error e = SL_ERROR_INIT;
        sl_error_set(&e, status, NULL, "%s", text);
        sl__exec_note_failure(ex, status, &e);
    }
}

/* Nodes of `kind` (get or put) in `g` on array `a`. */
static uint32_t
nodes_on_array(const sl_graph *g, sl_node_kind kind, const sl_array *a)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < g->n_nodes; k++)
        n += g->nodes[k].kind == kind && sl__array_same(g->nodes[k].u.io.array, a);
    return n;
}

/* A transaction per put, writing each shard once (see struct sl__exec_put). */
static sl_status
exec_open_txns(struct sl__exec *ex, struct sl_error *err)
{
    sl_plan *plan = ex->plan;
    ex->puts = sl_alloc_zeroed(&plan->alloc, plan->n_puts, sizeof(*ex->puts), 0);
    if (ex->puts == NULL && plan->n_puts > 0)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for %" PRIu32 " puts", plan->n_puts);
    for (uint32_t i = 0; i < plan->n_puts; i++) {
        struct sl__exec_put *xp = &ex->puts[i];
        xp->ex = ex;
        xp->node = plan->puts[i].node;
        const struct sl__node *n = sl__graph_node(ex->graph, xp->node);
        if (n->kind != SL_NODE_PUT)
            continue;
        struct sl_txn_opts to = SL_TXN_OPTS_DEFAULT;
        ex->parallel = sl_pool_parallel(ex->pool);
        to.par = &ex->parallel;
        to.on_unit = exec_on_unit;
        to.on_unit_arg = xp;
        /* Another process of a split run may be writing its own shards
         * here: only a run alone removes what killed writers left. */
        to.clean_leftovers = plan->opts.n_parts == 1;
        /* Shards completed early are written by a writer thread where the
         * store waits for a device, so pool workers go on encoding.  Safe
         * while this put is the only writer of its array: gets of it run
         * in a later phase, after commit waited for that thread. */
        const sl_array *a = n->u.io.array;
        to.write_behind =
            nodes_on_array(ex->graph, SL_NODE_PUT, a) == 1 ? SL_TXN_WRITE_BEHIND_AUTO : 0;
        /* A get of the array runs in a later phase (the levels of a
         * pyramid are read back for the next): the page cache saves
         * reading it from the device. */
        to.reread = nodes_on_array(ex->graph, SL_NODE_GET, a) > 0;
        /* Pool workers write the chunks: each encodes its own as it stages
         * it, so staging holds compressed bytes and a completed shard only
         * needs assembling. */
        to.encode_on_write = true;
        xp->txn = sl_txn_open(n->u.io.array, &to, err);
        if (xp->txn == NULL)
            return err != NULL && err->code != SL_OK ? err->code : SL_ENOMEM;
    }
    return SL_OK;
}

/* Commit the transactions of the puts of `phase`: write what is still staged. */
static void
exec_commit_txns(struct sl__exec *ex, uint32_t phase)
{
    for (uint32_t i = 0; i < ex->plan->n_puts; i++) {
        struct sl__exec_put *xp = &ex->puts[i];
        if (xp->txn == NULL || ex->fusion->stages[ex->fusion->stage_of[xp->node]].phase != phase)
            continue;
        struct sl_error e = SL_ERROR_INIT;
        /* A unit's failure reaches its chunks through exec_on_unit; a
         * commit that could not start (out of memory) fails what it held. */
        sl_status st = sl_txn_commit(xp->txn, ex->workers[ex->n_workers].codec, &e);
        struct sl_txn_stats ts;
        sl_txn_get_stats(xp->txn, &ts);
        /* (Units, not bytes: chunks of fill staged encoded count none.) */
        if (st != SL_OK && ts.staged_units > 0)
            sl__exec_note_failure(ex, st, &e);
        sl_txn_close(xp->txn);
        xp->txn = NULL;
    }
}

/* The distinct stores the graph reads and writes, and their counters now. */
static sl_status
exec_stores(struct sl__exec *ex, struct sl_error *err)
{
    const sl_graph *g = ex->graph;
    ex->stores = sl_alloc_zeroed(&ex->plan->alloc, g->n_nodes + 1, sizeof(sl_store *), 0);
    ex->stats0 =
        sl_alloc_zeroed(&ex->plan->alloc, g->n_nodes + 1, sizeof(struct sl_store_stats), 0);
    if (ex->stores == NULL || ex->stats0 == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory to track stores");
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const struct sl__node *n = &g->nodes[i];
        if (n->kind != SL_NODE_GET && n->kind != SL_NODE_PUT)
            continue;
        sl_store *st = sl_array_store(n->u.io.array);
        bool seen = false;
        for (uint32_t k = 0; k < ex->n_stores; k++)
            seen |= ex->stores[k] == st;
        if (!seen) {
            ex->stores[ex->n_stores] = st;
            sl_store_get_stats(st, &ex->stats0[ex->n_stores]);
            ex->n_stores++;
        }
    }
    return SL_OK;
}

/* Bytes read and written through the stores since exec_stores. */
static void
exec_store_bytes(const struct sl__exec *ex, struct sl_run_summary *s)
{
    s->bytes_read = s->bytes_written = s->objects_written = 0;
    for (uint32_t k = 0; k < ex->n_stores; k++) {
        struct sl_store_stats now;
        sl_store_get_stats(ex->stores[k], &now);
        s->bytes_read += now.bytes_read - ex->stats0[k].bytes_read;
        s->bytes_written += now.bytes_written - ex->stats0[k].bytes_written;
        s->objects_written += now.n_set - ex->stats0[k].n_set;
    }
}

/* Per-worker scratch for ops kernels, and trace buffers. */
static sl_status
exec_workers(struct sl__exec *ex, struct sl_error *err)
{
    size_t scratch = 0;
    for (uint32_t i = 0; i < ex->graph->n_nodes; i++) {
        const struct sl__node *n = sl__graph_node(ex->graph, i);
        if (!n->has_op)
            continue;
        size_t bytes = 0;
        SL_TRY(sl_op_scratch_bytes(&n->op, NULL, &bytes, err));
        scratch = bytes > scratch ? bytes : scratch;
    }
    bool need_codec = false;
    for (uint32_t i = 0; i < ex->graph->n_nodes; i++) {
        sl_node_kind k = sl__graph_node(ex->graph, i)->kind;
        need_codec |= k == SL_NODE_GET || k == SL_NODE_PUT;
    }
    unsigned n = ex->n_workers + 1;
    ex->workers =
        sl_alloc_zeroed(&ex->plan->alloc, n, sizeof(struct sl__exec_worker), SL_CACHELINE);
    if (ex->workers == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for %u workers' state", n);
    for (unsigned w = 0; w < n; w++) {
        struct sl__exec_worker *wk = &ex->workers[w];
        if (scratch > 0) {
            wk->scratch = sl_alloc(&ex->plan->alloc, scratch, 64);
            if (wk->scratch == NULL)
                return sl_error_set(err, SL_ENOMEM, NULL, "no memory for %zu bytes of scratch",
                                    scratch);
            wk->scratch_bytes = scratch;
        }
        if (need_codec) {
            wk->codec = sl_codec_ctx_create(&ex->plan->alloc, err);
            if (wk->codec == NULL)
                return err != NULL ? err->code : SL_ENOMEM;
        }
        if (ex->plan->opts.trace_path != NULL) {
            wk->trace.cap = EXEC_TRACE_CAP;
            wk->trace.events =
                sl_alloc(&ex->plan->alloc, wk->trace.cap * sizeof(struct sl__trace_event), 0);
            if (wk->trace.events == NULL)
                return sl_error_set(err, SL_ENOMEM, NULL, "no memory for trace events");
        }
    }
    return SL_OK;
}

static void
exec_fini(struct sl__exec *ex)
{
    /* Workers past their last task may still be waking the driver. */
    while (atomic_load(&ex->n_exiting) != 0)
        sched_yield();
    const struct sl_allocator *a = &ex->plan->alloc;
    if (ex->workers != NULL) {
        for (unsigned w = 0; w <= ex->n_workers; w++) {
            struct sl__exec_worker *wk = &ex->workers[w];
            sl_free(a, wk->scratch, wk->scratch_bytes);
            sl_codec_ctx_destroy(wk->codec);
            sl_free(a, wk->trace.events, wk->trace.cap * sizeof(struct sl__trace_event));
        }
        sl_free(a, ex->workers, (ex->n_workers + 1) * sizeof(struct sl__exec_worker));
    }
    if (ex->boxes != NULL) {
        for (uint32_t s = 0; s < ex->fusion->n_stages; s++)
            sl_grid_fini(&ex->boxes[s]);
        sl_free(a, ex->boxes, ex->fusion->n_stages * sizeof(struct sl_grid));
    }
    if (ex->inter.buckets != NULL)
        sl__inter_fini(&ex->inter, ex->pool);
    for (uint32_t i = 0; ex->puts != NULL && i < ex->plan->n_puts; i++)
        sl_txn_close(ex->puts[i].txn); /* aborts what an early stop left staged */
    sl_free(a, ex->puts, ex->plan->n_puts * sizeof(*ex->puts));
    sl_free(a, ex->stores, (ex->graph->n_nodes + 1) * sizeof(sl_store *));
    sl_free(a, ex->stats0, (ex->graph->n_nodes + 1) * sizeof(struct sl_store_stats));
    for (int list = 0; list < 2; list++) {
        struct sl__exec_task *t = list == 0 ? ex->free_tasks : atomic_load(&ex->returned);
        while (t != NULL) {
            struct sl__exec_task *next = t->next;
            sl_free(a, t, sizeof(*t));
            t = next;
        }
    }
    pthread_cond_destroy(&ex->cond);
    pthread_mutex_destroy(&ex->lock);
}

static sl_status
exec_init(struct sl__exec *ex, sl_plan *plan, sl_pool *pool, struct sl_error *err)
{
    memset(ex, 0, sizeof(*ex));
    ex->plan = plan;
    ex->graph = plan->graph;
    ex->fusion = &plan->fusion;
    ex->pool = pool;
    ex->n_workers = sl_pool_worker_count(pool);
    atomic_init(&ex->first_error, SL_OK);
    ex->first_err = SL_ERROR_INIT;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&ex->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0 || pthread_mutex_init(&ex->lock, NULL) != 0)
        return sl_error_set(err, SL_ENOMEM, NULL, "cannot create the run's lock");
    SL_TRY(sl__inter_init(&ex->inter, &plan->alloc, err));
    SL_TRY(exec_boxes(ex, err));
    SL_TRY(exec_stores(ex, err));
    SL_TRY(exec_workers(ex, err));
    return exec_open_txns(ex, err);
}

/* Totals for progress: the chunks of every put (this part's) and their bytes. */
static void
exec_totals(const struct sl__exec *ex, struct exec_totals *tot)
{
    memset(tot, 0, sizeof(*tot));
    for (uint32_t s = 0; s < ex->fusion->n_stages; s++) {
        const struct sl__node *n = sl__graph_node(ex->graph, ex->fusion->stages[s].root);
        if (n->kind != SL_NODE_PUT && n->kind != SL_NODE_PUTTER)
            continue;
        uint64_t lo, hi, count;
        exec_part_range(ex, s, &lo, &hi);
        if (sl_shape_count(n->grid.rank, n->grid.shape, &count, NULL) != SL_OK)
            count = 0;
        tot->chunks += hi - lo;
        /* A part's bytes in proportion to its chunks: exact for even grids. */
        uint64_t bytes = count * sl_dtype_size(n->dtype);
        tot->bytes += n->grid.n_total > 0
                          ? (uint64_t)((double)bytes * (double)(hi - lo) / (double)n->grid.n_total)
                          : 0;
    }
}

/* After the run: pending chunks become cancelled, counts and first error. */
static sl_status
exec_finish(struct sl__exec *ex, sl_status st, struct sl_error *run_err, struct sl_error *err)
{
    sl_plan *plan = ex->plan;
    for (uint32_t i = 0; i < plan->n_puts; i++)
        for (uint64_t k = 0; k < plan->puts[i].n_chunks; k++)
            if (plan->puts[i].codes[k] == SL__CODE_PENDING)
                plan->puts[i].codes[k] = SL_ECANCELED;
    sl__plan_count(plan);
    struct sl_run_summary *s = &plan->summary;
    /* A run whose setup failed (out of memory) may have no worker state. */
    s->n_tasks =
        ex->workers != NULL ? sl__exec_sum(ex, offsetof(struct sl__exec_worker, n_tasks)) : 0;
    s->peak_bytes = atomic_load(&ex->peak);
    s->budget_bytes = plan->opts.memory_budget;
    s->elapsed_s = (double)(sl__exec_now_ns() - ex->t0_ns) * 1e-9;
    s->first_error = (sl_status)atomic_load(&ex->first_error);
    if (ex->stores != NULL)
        exec_store_bytes(ex, s);
    if (st != SL_OK) {
        /* The run itself failed (budget, memory): that is the first error. */
        if (s->first_error == SL_OK)
            s->first_error = st;
        if (err != NULL)
            *err = *run_err;
        return st;
    }
    if (s->first_error != SL_OK) {
        if (err != NULL && err->code == SL_OK)
            *err = ex->first_err;
        return s->first_error;
    }
    if (s->n_ok + s->n_skipped != s->n_chunks)
        return sl_error_set(err, SL_ECANCELED, NULL, "%" PRIu64 " chunks were not run",
                            s->n_chunks - s->n_ok - s->n_skipped);
    return SL_OK;
}

sl_status
sl_plan_run(sl_plan *plan, sl_pool *pool, struct sl_error *err)
{
    if (plan == NULL || pool == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "sl_plan_run needs a plan and a pool");
    struct sl__exec ex;
    struct sl_error run_err = SL_ERROR_INIT;
    sl__plan_reset(plan);
    memset(&plan->summary, 0, sizeof(plan->summary));
    sl_status st = exec_init(&ex, plan, pool, &run_err);
    struct exec_drive dr;
    memset(&dr, 0, sizeof(dr));
    if (st == SL_OK) {
        ex.t0_ns = sl__exec_now_ns();
        exec_totals(&ex, &dr.tot);
        dr.max_tasks = (uint64_t)EXEC_TASKS_PER_WORKER * ex.n_workers;
        uint32_t n_phases = 0;
        for (uint32_t s = 0; s < ex.fusion->n_stages; s++)
            n_phases = ex.fusion->stages[s].phase + 1 > n_phases ? ex.fusion->stages[s].phase + 1
                                                                 : n_phases;
        for (uint32_t ph = 0; ph < n_phases && st == SL_OK && !atomic_load(&ex.cancel); ph++) {
            st = exec_phase(&ex, &dr, ph, &run_err);
            if (st == SL_OK && plan->opts.phase_done != NULL)
                st = plan->opts.phase_done(plan->opts.phase_ctx, ph, n_phases);
            if (st != SL_OK && run_err.code == SL_OK)
                sl_error_set(&run_err, st, NULL, "phase %" PRIu32 " of %" PRIu32 " ended with %s",
                             ph + 1, n_phases, sl_status_message(st));
        }
        /* Whatever happened, nothing may still run when the run returns. */
        (void)exec_wait(&ex, EXEC_WAIT_IDLE, 0, 0, &dr.tot, NULL);
        exec_progress(&ex, dr.tot.chunks, dr.tot.bytes, true);
        if (plan->opts.trace_path != NULL && st == SL_OK)
            st = sl__trace_write(plan->opts.trace_path, ex.graph, ex.fusion, &ex.workers[0],
                                 ex.n_workers + 1, &run_err);
    }
    sl_free(&plan->alloc, dr.needs.node, dr.needs.cap * sizeof(uint32_t));
    sl_free(&plan->alloc, dr.needs.coords, dr.needs.cap * SL_MAX_RANK * sizeof(uint64_t));
    st = exec_finish(&ex, st, &run_err, err);
    exec_fini(&ex);
    return st;
}
