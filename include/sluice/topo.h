/* SPDX-License-Identifier: MIT */
/*
 * Machine topology, as hwloc sees it: packages, NUMA nodes, shared caches,
 * cores and processing units (PUs), plus the two things the pool derives
 * from them: where each worker runs (the placement plan) and in which order
 * a worker looks for work to steal (nearest first).
 *
 * A topology is either this machine's or a model: an hwloc synthetic
 * description such as "pack:2 numa:2 l3:2 core:2 pu:2" or an hwloc XML
 * export.  Models let tests and users plan for multi-socket machines on
 * any host; threads are never bound to the cores of a model.
 */
#ifndef SL_TOPO_H
#define SL_TOPO_H

#include <stdbool.h>
#include <stddef.h>

#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A loaded topology: immutable after creation, readable from any thread. */
typedef struct sl_topo sl_topo;

/* "No such object", e.g. the shared cache of a core that shares none. */
#define SL_TOPO_NONE 0xffffffffu

/* How the pool places its workers on cores. */
typedef enum sl_pin {
    SL_PIN_COMPACT, /* worker i on core i mod n_cores, in topology order */
    SL_PIN_SPREAD,  /* workers dealt across NUMA nodes in turn, then cores */
    SL_PIN_NONE,    /* planned as COMPACT, but threads are not bound */
} sl_pin;

/* How many objects of each kind the topology has. */
struct sl_topo_counts {
    unsigned n_packages;      /* sockets; 1 when hwloc reports none */
    unsigned n_numa_nodes;    /* memory nodes; >= 1 */
    unsigned n_shared_caches; /* caches shared by two or more cores */
    unsigned n_cores;         /* cores, or PUs when hwloc reports no cores */
    unsigned n_pus;           /* hardware threads */
};

/* Where a core sits; all indices are hwloc logical indices. */
struct sl_topo_place {
    unsigned core;        /* core in [0, n_cores) */
    unsigned pu_os_index; /* operating-system number of the core's first PU */
    unsigned numa_node;   /* NUMA node in [0, n_numa_nodes) */
    unsigned package;     /* package in [0, n_packages) */
    unsigned cache;       /* shared cache in [0, n_shared_caches), or SL_TOPO_NONE */
};

/* How far apart two cores are, nearest first.  Stealing goes in this order. */
typedef enum sl_topo_distance {
    SL_TOPO_SAME_CORE,    /* one core (more workers than cores) */
    SL_TOPO_SAME_CACHE,   /* same NUMA node and a shared cache */
    SL_TOPO_SAME_NUMA,    /* same NUMA node, no shared cache */
    SL_TOPO_SAME_PACKAGE, /* another NUMA node of the same package */
    SL_TOPO_REMOTE,       /* another package */
    SL_TOPO_DISTANCE_COUNT_
} sl_topo_distance;

/**
 * Load a topology.
 *
 * @param desc  NULL or "" for this machine; a string starting with '<' is
 *              an hwloc XML document; one ending in ".xml" is the path of
 *              one; anything else is an hwloc synthetic description, e.g.
 *              "pack:2 numa:2 core:4 pu:2".  Borrowed for the call.
 * @param err   optional; says what hwloc refused and the description.
 * @return the topology (free with sl_topo_destroy), or NULL with
 *         SL_EINVAL (a description hwloc rejects), SL_EUNSUPPORTED (a
 *         topology without PUs) or SL_ENOMEM.
 * Thread-safety: any thread.
 */
SL_API sl_topo *sl_topo_create(const char *desc, struct sl_error *err);

/**
 * Free `topo`; NULL is a no-op.  Nothing may use it afterwards.
 * Thread-safety: one thread, once nothing uses `topo`.
 */
SL_API void sl_topo_destroy(sl_topo *topo);

/**
 * True when `topo` describes the machine this process runs on, so
 * threads and memory may be bound to its objects.
 * Thread-safety: any thread (a topology is immutable).
 */
SL_API bool sl_topo_is_this_system(const sl_topo *topo);

/**
 * The number of packages, NUMA nodes, shared caches, cores and PUs.
 * Thread-safety: any thread (a topology is immutable).
 */
SL_API struct sl_topo_counts sl_topo_counts(const sl_topo *topo);

/**
 * Where core `core` sits.
 * @return SL_OK, or SL_EINVAL (core out of range, named in `err`).
 * Thread-safety: any thread (a topology is immutable).
 */
SL_API SL_NODISCARD sl_status sl_topo_core_place(const sl_topo *topo, unsigned core,
                                                 struct sl_topo_place *out, struct sl_error *err);

/**
 * The distance class between cores `a` and `b` (SL_TOPO_REMOTE when either
 * is out of range).
 * Thread-safety: any thread (a topology is immutable).
 */
SL_API sl_topo_distance sl_topo_core_distance(const sl_topo *topo, unsigned a, unsigned b);

/**
 * Plan where `n_workers` workers run: `places[i]` is worker i's core.
 * COMPACT and NONE put worker i on core i mod n_cores; SPREAD takes one
 * core of each NUMA node in turn, so a few workers use every node's memory
 * bandwidth.  More workers than cores share cores round-robin.
 *
 * @return SL_OK, or SL_EINVAL (n_workers is 0, `places` NULL or `pin`
 *         unknown).
 * Thread-safety: any thread (a topology is immutable).
 */
SL_API SL_NODISCARD sl_status sl_topo_plan(const sl_topo *topo, unsigned n_workers, sl_pin pin,
                                           struct sl_topo_place *places, struct sl_error *err);

/**
 * The order in which worker `thief` of a plan looks for work in the other
 * workers' deques: every other worker once, sorted by distance class
 * (nearest first), then by worker index.  The pool walks each class from
 * a random start, so equally near victims share the load.
 *
 * @param places     the plan, `n_workers` entries (from sl_topo_plan).
 * @param victims    out: n_workers - 1 worker indices.
 * @param distances  out, optional: the class of each victim.
 * @return SL_OK, or SL_EINVAL (`thief` out of range or a NULL array).
 * Thread-safety: any thread (a topology is immutable).
 */
SL_API SL_NODISCARD sl_status sl_topo_victims(const sl_topo *topo,
                                              const struct sl_topo_place *places,
                                              unsigned n_workers, unsigned thief, unsigned *victims,
                                              sl_topo_distance *distances, struct sl_error *err);

/**
 * The name of a distance class, e.g. "same-numa"; never NULL.
 * Thread-safety: any thread (a topology is immutable).
 */
SL_API const char *sl_topo_distance_name(sl_topo_distance d);

/**
 * The name of a placement policy ("compact", "spread", "none"); never NULL.
 * Thread-safety: any thread (a topology is immutable).
 */
SL_API const char *sl_pin_name(sl_pin pin);

/**
 * Write a one-line summary, e.g. "2 packages, 4 NUMA nodes, 16 cores,
 * 32 PUs (synthetic)", into `buf` (always NUL-terminated when size > 0).
 * @return the length the full line needs, as snprintf does.
 * Thread-safety: any thread (a topology is immutable).
 */
SL_API size_t sl_topo_describe(const sl_topo *topo, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* SL_TOPO_H */
