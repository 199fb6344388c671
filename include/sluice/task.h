/* SPDX-License-Identifier: MIT */
/*
 * Task groups and tasks in caller-provided storage, run by the pool of
 * <sluice/pool.h>.  A group counts its unfinished tasks, can be waited for
 * (a worker runs other tasks meanwhile) and cancelled together; a task in
 * caller storage may depend on others, and the worker that releases its
 * last dependency runs it next.  The contract of every callback is
 * pool.h's: if the submit call returned SL_OK it runs exactly once, with
 * SL_OK or SL_ECANCELED; if the submit call failed it never runs.
 */
#ifndef SL_TASK_H
#define SL_TASK_H

#include <stdbool.h>
#include <stdint.h>

#include <sluice/common.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The pool that runs tasks: <sluice/pool.h> declares it and its calls; it is
 * named here too so that this header compiles alone. */
typedef struct sl_pool sl_pool;

/* A task's callback: `status` is SL_OK, or SL_ECANCELED (see above). */
typedef void sl_task_fn(void *arg, sl_status status);

/*
 * Fields of the two structs below that the caller provides storage for are
 * private to the pool: initialise them with sl_task_init/sl_task_group_init
 * and never touch them.  C++ sees their layout only.
 */
#ifdef __cplusplus
#define SL_POOL_ATOMIC_(T) T
#else
#define SL_POOL_ATOMIC_(T) _Atomic T
#endif

/*
 * A task in caller-provided storage, for tasks with dependencies or where
 * the caller wants to place tasks itself (an array for a whole chain).  The
 * storage must stay valid until the callback has started; the pool does not
 * touch it after calling the callback, so the callback may free or reuse it.
 */
struct sl_task {
    sl_task_fn *fn;                   /* private: the callback */
    void *arg;                        /* private: its argument */
    struct sl_task_group *group;      /* private: group counting this task, or NULL */
    struct sl_task *successor;        /* private: released when this task finishes */
    struct sl_task *next;             /* private: links of free lists and queues */
    sl_pool *pool;                    /* private: the pool it was submitted to */
    SL_POOL_ATOMIC_(uint32_t) n_deps; /* private: unfinished predecessors, +1 until submitted */
    SL_POOL_ATOMIC_(uint32_t) flags;  /* private: state and ownership bits */
    void *link;                       /* private: batch link of the pool's free lists */
};

/* A set of tasks that can be waited for and cancelled together. */
struct sl_task_group {
    sl_pool *pool;                      /* private: where its tasks run */
    SL_POOL_ATOMIC_(uint32_t) state;    /* private: 4 x unfinished tasks | sleeper bits */
    SL_POOL_ATOMIC_(uint32_t) canceled; /* private: nonzero once cancelled */
};

#undef SL_POOL_ATOMIC_

/**
 * Initialise a group whose tasks run on `pool`.  Groups need no _fini: a
 * group whose tasks have all finished holds nothing.  The storage must stay
 * valid until sl_task_group_wait has returned.
 * Thread-safety: one thread, before any task is submitted to the group.
 */
SL_API void sl_task_group_init(struct sl_task_group *group, sl_pool *pool);

/**
 * Queue `fn(arg, status)` as a task of `group`; as sl_pool_submit otherwise.
 * @return SL_OK, SL_EINVAL, SL_ENOMEM, SL_EOVERFLOW (2^29 unfinished tasks in
 *         the group) or SL_ECANCELED (group cancelled or pool shutting down).
 *         No `struct sl_error`, as sl_pool_submit.
 * Thread-safety: any thread, including the pool's own workers.
 */
SL_API SL_NODISCARD sl_status sl_task_group_submit(struct sl_task_group *group, sl_task_fn *fn,
                                                   void *arg);

/**
 * Wait until every task of `group` submitted before the call (and every
 * task those submit into it) has finished.  A worker of the pool runs other
 * tasks meanwhile, any tasks, so this never deadlocks the pool; another
 * thread sleeps.  The group can be reused afterwards.
 *
 * @return SL_OK, or SL_ECANCELED when the group was cancelled.  No `struct
 *         sl_error`: cancelling is the caller's own act, there is nothing
 *         more to say.
 * Thread-safety: any thread; one waiter per group at a time.
 */
SL_API SL_NODISCARD sl_status sl_task_group_wait(struct sl_task_group *group);

/**
 * Cancel `group`: its tasks that have not started yet run their callbacks
 * with SL_ECANCELED, later submits to it fail with SL_ECANCELED, and
 * running tasks may poll sl_task_group_is_canceled to stop early.
 * Thread-safety: any thread, including the group's own tasks.
 */
SL_API void sl_task_group_cancel(struct sl_task_group *group);

/** True once `group` has been cancelled.  Thread-safety: any thread. */
SL_API bool sl_task_group_is_canceled(const struct sl_task_group *group);

/**
 * Initialise a task in caller storage: `fn(arg, status)`, no group, no
 * dependencies.  Submit it with sl_pool_submit_task or sl_task_group_submit_task.
 * Thread-safety: one thread, before the task is submitted.
 */
SL_API void sl_task_init(struct sl_task *task, sl_task_fn *fn, void *arg);

/**
 * Make `succ` wait for `pred`: when `pred`'s callback has returned, `succ`
 * loses one dependency, and the worker that removes its last one runs it
 * next.  A task has at most one such successor (for more, call
 * sl_task_release from the callback).  A cancelled predecessor cancels
 * its successor.  Both must be initialised and not yet submitted.
 *
 * @return SL_OK, SL_EINVAL (NULL or `pred` == `succ`), SL_ESTATE (`pred`
 *         already has a successor, or either task was submitted) or
 *         SL_EOVERFLOW (2^32 - 2 dependencies).  No `struct sl_error`, as
 *         sl_pool_submit.
 * Thread-safety: one thread, before either task is submitted.
 */
SL_API SL_NODISCARD sl_status sl_task_precede(struct sl_task *pred, struct sl_task *succ);

/**
 * Add `n` dependencies to `task`, each removed by one sl_task_release call.
 * @return SL_OK, SL_EINVAL, SL_ESTATE (already submitted) or SL_EOVERFLOW.
 *         No `struct sl_error`, as sl_pool_submit.
 * Thread-safety: one thread, before the task is submitted.
 */
SL_API SL_NODISCARD sl_status sl_task_add_deps(struct sl_task *task, uint32_t n);

/**
 * Remove one dependency of `task`.  When it was the last and the task is
 * submitted, the task becomes ready: a worker of its pool runs it next (as
 * a continuation), any other thread queues it.  Releasing more
 * dependencies than the task has is a programming error.
 * Thread-safety: any thread.
 */
SL_API void sl_task_release(struct sl_task *task);

/**
 * Submit a caller-provided task to `pool` without a group.  It runs once all
 * its dependencies are released.
 * @return SL_OK, SL_EINVAL, SL_ESTATE (already submitted) or SL_ECANCELED.
 *         No `struct sl_error`, as sl_pool_submit.
 * Thread-safety: any thread, including the pool's own workers.
 */
SL_API SL_NODISCARD sl_status sl_pool_submit_task(sl_pool *pool, struct sl_task *task);

/**
 * Submit a caller-provided task as a task of `group`: the group counts it
 * from now on, even while it waits for its dependencies.
 * @return as sl_pool_submit_task (SL_OK, SL_EINVAL, SL_ESTATE,
 *         SL_ECANCELED), plus SL_EOVERFLOW.  No `struct sl_error`, as
 *         sl_pool_submit.
 * Thread-safety: any thread, including the pool's own workers.
 */
SL_API SL_NODISCARD sl_status sl_task_group_submit_task(struct sl_task_group *group,
                                                        struct sl_task *task);

#ifdef __cplusplus
}
#endif

#endif /* SL_TASK_H */
