/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the executor's table of intermediate chunks
 * (exec_inter.c): chunks of a stage that feed other stages, computed once
 * and freed after their last reader.  Open to the graph tests, not to the
 * rest of graph/.
 */
#ifndef SL_EXEC_INTER_INTERNAL_H
#define SL_EXEC_INTER_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/alloc.h>
#include <sluice/block.h>
#include <sluice/error.h>
#include <sluice/pool.h>
#include <sluice/status.h>

struct sl__exec_task;

/* ---- intermediate chunks (exec_inter.c) ----------------------------------- */

/* Where an intermediate chunk stands. */
enum sl__entry_state {
    SL__ENTRY_PENDING, /* its task has not finished */
    SL__ENTRY_READY,   /* its block can be read */
    SL__ENTRY_FAILED   /* its task failed; `code` and `text` say why */
};

/* A task waiting for an entry to leave PENDING. */
struct sl__waiter {
    struct sl__exec_task *task; /* released when the entry is done */
    struct sl__waiter *next;    /* next waiter of the entry, or of the free list */
};

/*
 * One chunk of a stage whose root feeds other stages: computed once, read by
 * every consumer chunk that needs it, freed after the last.
 */
struct sl__entry {
    uint32_t stage;              /* producing stage */
    uint64_t linear;             /* chunk's linear index in the stage root's grid */
    enum sl__entry_state state;  /* guarded by the table lock */
    uint64_t refs_left;          /* consumer reads still to come */
    struct sl_block block;       /* the chunk, once READY */
    void *buf;                   /* owned buffer behind `block` */
    size_t buf_bytes;            /* its size, also its budget share */
    sl_status code;              /* why it FAILED */
    char text[256];              /* ... with the message (head and tail if long) */
    struct sl__waiter *waiters;  /* tasks to release when done */
    struct sl__entry *hash_next; /* bucket chain, or free list */
};

/* Entries by (stage, linear), under one mutex. */
struct sl__inter_table {
    pthread_mutex_t lock;            /* guards everything below and every entry */
    struct sl__entry **buckets;      /* power-of-two count */
    size_t n_buckets;                /* bucket count */
    size_t n_entries;                /* entries in the table */
    struct sl__entry *free_entries;  /* recycled entries */
    struct sl__waiter *free_waiters; /* recycled waiters */
    struct sl_allocator alloc;       /* the plan's */
};

sl_status sl__inter_init(struct sl__inter_table *t, const struct sl_allocator *alloc,
                         struct sl_error *err);
void sl__inter_fini(struct sl__inter_table *t, sl_pool *pool);
/* Find the entry of (stage, linear); lock held. */
struct sl__entry *sl__inter_find_locked(struct sl__inter_table *t, uint32_t stage, uint64_t linear);
/* Insert a new PENDING entry; lock held.  NULL when out of memory. */
struct sl__entry *sl__inter_insert_locked(struct sl__inter_table *t, uint32_t stage,
                                          uint64_t linear, uint64_t refs);
/* Remove and recycle `e` (its buffer already freed); lock held. */
void sl__inter_remove_locked(struct sl__inter_table *t, struct sl__entry *e);
/* A recycled or new waiter; lock held.  NULL when out of memory. */
struct sl__waiter *sl__inter_waiter_locked(struct sl__inter_table *t);

#endif /* SL_EXEC_INTER_INTERNAL_H */
