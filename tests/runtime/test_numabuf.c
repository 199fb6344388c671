/* SPDX-License-Identifier: MIT */
/*
 * NUMA-local buffers: size classes, hits and misses of worker caches and
 * node depots, frees by another worker or thread, buffers staying on their
 * node (on a synthetic 2-node machine), the cache caps, buffers too large to
 * cache, binding on this machine, and the counters.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/task.h>

#include "plain_test.h"
#include "pool_test.h"
#include "runtime_internal.h"
#include "topo_internal.h"

TestSuite(runtime_numabuf, .timeout = 30.0);

static sl_pool *
pool_make(const char *topology, unsigned n_workers, size_t cache_bytes)
{
    struct sl_pool_opts o = SL_POOL_OPTS_DEFAULT;
    o.topology = topology;
    o.n_workers = n_workers;
    o.buf_cache_bytes = cache_bytes;
    struct sl_error err = SL_ERROR_INIT;
    sl_pool *pool = sl_pool_create(&o, &err);
    cr_assert_not_null(pool, "%s", err.text);
    return pool;
}

Test(runtime_numabuf, sizes_round_up_to_classes)
{
    sl_pool *pool = pool_make(NULL, 1, (size_t)64 << 20);
    static const size_t sizes[][2] = {
        {1, 4096},        {4096, 4096},       {4097, 5120},
        {6000, 6144},     {8192, 8192},       {8193, 10240},
        {100000, 114688}, {1 << 20, 1 << 20}, {(1 << 20) + 1, 1310720},
    };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        void *p = sl_pool_buf_alloc(pool, sizes[i][0]);
        cr_assert_not_null(p);
        cr_assert_eq((uintptr_t)p % 64, 0, "64-byte aligned");
        memset(p, 0xa5, sizes[i][0]);
        struct sl_pool_buf_stats s = pool_buf_stats(pool);
        cr_assert_eq(s.bytes_in_use, (int64_t)sizes[i][1], "%zu bytes rounds to %zu", sizes[i][0],
                     sizes[i][1]);
        sl_pool_buf_free(pool, p, sizes[i][0]);
    }
    cr_assert_null(sl_pool_buf_alloc(pool, 0));
    cr_assert_null(sl_pool_buf_alloc(NULL, 10));
    sl_pool_buf_free(pool, NULL, 10);
    sl_pool_destroy(pool);
}

Test(runtime_numabuf, outside_the_pool_buffers_come_back_from_the_depot)
{
    sl_pool *pool = pool_make(NULL, 1, (size_t)64 << 20);
    void *a = sl_pool_buf_alloc(pool, 100000);
    cr_assert_not_null(a);
    sl_pool_buf_free(pool, a, 100000);
    void *b = sl_pool_buf_alloc(pool, 110000); /* same class */
    cr_assert_eq(a, b, "the cached buffer is reused");
    struct sl_pool_buf_stats s = pool_buf_stats(pool);
    cr_assert_eq(s.n_allocs, 2);
    cr_assert_eq(s.n_misses, 1);
    cr_assert_eq(s.n_hits, 1);
    cr_assert_eq(s.n_frees, 1);
    cr_assert_eq(s.bytes_system, 114688);
    cr_assert_eq(s.bytes_in_use, 114688);
    cr_assert_eq(s.bytes_cached, 0);
    sl_pool_buf_free(pool, b, 110000);
    s = pool_buf_stats(pool);
    cr_assert_eq(s.bytes_in_use, 0);
    cr_assert_eq(s.bytes_cached, 114688);
    sl_pool_destroy(pool);
}

/* Work done inside a task on a chosen worker. */
struct on_worker {
    sl_pool *pool;
    void *buf;
    size_t n;
    int worker;
    unsigned node;
    bool free_it;
};

static void
on_worker_task(void *arg, sl_status status)
{
    struct on_worker *o = arg;
    (void)status;
    o->worker = sl_pool_worker_index(o->pool);
    if (o->free_it) {
        sl_pool_buf_free(o->pool, o->buf, o->n);
        return;
    }
    o->buf = sl_pool_buf_alloc(o->pool, o->n);
    if (o->buf != NULL) {
        memset(o->buf, 1, o->n);
        o->node = sl__buf_node(o->buf);
    }
}

/* Run `o` as a task of a one-worker pool, so on worker 0. */
static void
run_on_worker0(sl_pool *pool, struct on_worker *o)
{
    cr_assert_eq(sl_pool_worker_count(pool), 1);
    struct sl_task_group g;
    sl_task_group_init(&g, pool);
    cr_assert_eq(sl_task_group_submit(&g, on_worker_task, o), SL_OK);
    cr_assert_eq(sl_task_group_wait(&g), SL_OK);
    cr_assert_eq(o->worker, 0);
}

/* Let the test thread act as worker `w` of `pool` (or as an outsider for
 * -1).  Valid while the real worker runs no task, as in these tests: its
 * caches are touched by one thread at a time. */
static void
act_as_worker(sl_pool *pool, int w)
{
    sl__tls_worker = w >= 0 ? &pool->workers[w] : NULL;
}

Test(runtime_numabuf, worker_cache_hits_without_locks)
{
    sl_pool *pool = pool_make(NULL, 1, (size_t)64 << 20);
    struct on_worker o = {.pool = pool, .n = 256 * 1024};
    run_on_worker0(pool, &o);
    void *first = o.buf;
    o.free_it = true;
    run_on_worker0(pool, &o);
    o.free_it = false;
    run_on_worker0(pool, &o);
    cr_assert_eq(o.buf, first, "freed on its worker, reused from its worker's cache");
    struct sl_pool_worker_info info;
    cr_assert_eq(sl_pool_worker_info(pool, 0, &info, NULL), SL_OK);
    cr_assert_eq(o.node, info.place.numa_node);
    struct sl_pool_buf_stats s = pool_buf_stats(pool);
    cr_assert_eq(s.n_misses, 1);
    cr_assert_eq(s.n_hits, 1);
    o.free_it = true;
    run_on_worker0(pool, &o);
    sl_pool_destroy(pool);
}

Test(runtime_numabuf, buffers_stay_on_their_node_when_freed_elsewhere)
{
    /* Two NUMA nodes with two cores each: workers 0, 1 on node 0; 2, 3 on node 1. */
    sl_pool *pool = pool_make("numa:2 core:2 pu:1", 4, (size_t)64 << 20);
    for (unsigned w = 0; w < 4; w++) {
        struct sl_pool_worker_info info;
        cr_assert_eq(sl_pool_worker_info(pool, w, &info, NULL), SL_OK);
        cr_assert_eq(info.place.numa_node, w / 2);
    }
    size_t n = 64 * 1024;
    act_as_worker(pool, 0);
    void *node0_buf = sl_pool_buf_alloc(pool, n);
    cr_assert_not_null(node0_buf);
    cr_assert_eq(sl__buf_node(node0_buf), 0);
    /* Freed on worker 2 (node 1): back to node 0's depot, not worker 2's cache. */
    act_as_worker(pool, 2);
    sl_pool_buf_free(pool, node0_buf, n);
    act_as_worker(pool, 3);
    void *node1_buf = sl_pool_buf_alloc(pool, n);
    cr_assert_neq(node1_buf, node0_buf, "node 1 must not get node 0's buffer");
    cr_assert_eq(sl__buf_node(node1_buf), 1);
    /* Worker 1 shares node 0: it gets the buffer back from the depot. */
    act_as_worker(pool, 1);
    void *again = sl_pool_buf_alloc(pool, n);
    cr_assert_eq(again, node0_buf);
    /* A thread outside the pool frees into the buffer's own node too. */
    act_as_worker(pool, -1);
    sl_pool_buf_free(pool, node1_buf, n);
    act_as_worker(pool, 2);
    cr_assert_eq(sl_pool_buf_alloc(pool, n), node1_buf);
    struct sl_pool_buf_stats s = pool_buf_stats(pool);
    cr_assert_eq(s.n_misses, 2);
    cr_assert_eq(s.n_hits, 2);
    cr_assert_eq(s.n_bound, 0, "a model binds nothing");
    sl_pool_buf_free(pool, node1_buf, n);
    act_as_worker(pool, 0);
    sl_pool_buf_free(pool, node0_buf, n);
    act_as_worker(pool, -1);
    s = pool_buf_stats(pool);
    cr_assert_eq(s.bytes_in_use, 0);
    cr_assert_eq(s.n_frees, 4);
    cr_assert_eq(s.bytes_cached, 2 * n);
    sl_pool_destroy(pool);
}

Test(runtime_numabuf, a_worker_lists_two_of_a_class_and_shares_the_rest)
{
    /* One node, two workers: worker 0 makes chunks, worker 1 frees them,
     * as a pipeline's consumer does. */
    sl_pool *pool = pool_make("numa:1 core:2 pu:1", 2, (size_t)64 << 20);
    size_t n = 256 * 1024;
    void *bufs[4];
    act_as_worker(pool, 0);
    for (int i = 0; i < 4; i++)
        cr_assert_not_null(bufs[i] = sl_pool_buf_alloc(pool, n));
    act_as_worker(pool, 1);
    for (int i = 0; i < 4; i++)
        sl_pool_buf_free(pool, bufs[i], n);
    unsigned listed = 0;
    for (unsigned c = 0; c < SL__BUF_CLASSES; c++)
        listed += pool->workers[1].bufs.n_listed[c];
    cr_assert_eq(listed, SL__BUF_LISTED_MAX, "worker 1 lists %u, the depot has the rest", listed);
    /* Worker 0 gets the two worker 1 did not keep, from the depot; only
     * then does it miss. */
    act_as_worker(pool, 0);
    void *again[3];
    for (int i = 0; i < 3; i++)
        cr_assert_not_null(again[i] = sl_pool_buf_alloc(pool, n));
    struct sl_pool_buf_stats s = pool_buf_stats(pool);
    cr_assert_eq(s.n_misses, 5, "4 first, then 1 once the depot's 2 were taken; got %llu",
                 (unsigned long long)s.n_misses);
    cr_assert_eq(s.n_hits, 2);
    cr_assert(again[0] == bufs[2] || again[0] == bufs[3], "a buffer worker 1 freed");
    cr_assert(again[1] == bufs[2] || again[1] == bufs[3]);
    /* Worker 1 kept two, and reuses them without a miss. */
    act_as_worker(pool, 1);
    void *kept0 = sl_pool_buf_alloc(pool, n), *kept1 = sl_pool_buf_alloc(pool, n);
    cr_assert((kept0 == bufs[0] || kept0 == bufs[1]) && (kept1 == bufs[0] || kept1 == bufs[1]));
    s = pool_buf_stats(pool);
    cr_assert_eq(s.n_misses, 5);
    cr_assert_eq(s.n_hits, 4);
    sl_pool_buf_free(pool, kept0, n);
    sl_pool_buf_free(pool, kept1, n);
    act_as_worker(pool, 0);
    for (int i = 0; i < 3; i++)
        sl_pool_buf_free(pool, again[i], n);
    act_as_worker(pool, -1);
    s = pool_buf_stats(pool);
    cr_assert_eq(s.bytes_in_use, 0);
    cr_assert_eq(s.bytes_system, 5 * (uint64_t)n);
    sl_pool_destroy(pool);
}

Test(runtime_numabuf, caches_are_capped_and_release_the_rest)
{
    /* 64 KiB per worker cache, and so 64 KiB in the one node's depot. */
    sl_pool *pool = pool_make(NULL, 1, 64 * 1024);
    void *bufs[8];
    for (int i = 0; i < 8; i++) {
        bufs[i] = sl_pool_buf_alloc(pool, 32 * 1024);
        cr_assert_not_null(bufs[i]);
    }
    struct sl_pool_buf_stats s = pool_buf_stats(pool);
    cr_assert_eq(s.bytes_system, 8 * 32 * 1024);
    for (int i = 0; i < 8; i++)
        sl_pool_buf_free(pool, bufs[i], 32 * 1024);
    s = pool_buf_stats(pool);
    cr_assert_eq(s.bytes_in_use, 0);
    cr_assert_eq(s.bytes_cached, 64 * 1024, "the depot keeps its cap, no more");
    cr_assert_eq(s.bytes_system, 64 * 1024, "the rest went back to the system");
    sl_pool_destroy(pool);
}

Test(runtime_numabuf, buffers_over_a_gibibyte_bypass_the_caches)
{
    sl_pool *pool = pool_make(NULL, 1, (size_t)64 << 20);
    size_t n = ((size_t)1 << 30) + 1;
    void *p = sl_pool_buf_alloc(pool, n);
    if (p == NULL)
        cr_skip_test("cannot reserve 1 GiB of address space here");
    ((char *)p)[0] = 1;
    ((char *)p)[n - 1] = 1;
    struct sl_pool_buf_stats s = pool_buf_stats(pool);
    cr_assert_eq(s.bytes_in_use, (int64_t)n);
    sl_pool_buf_free(pool, p, n);
    s = pool_buf_stats(pool);
    cr_assert_eq(s.bytes_system, 0, "an uncached buffer goes straight back");
    cr_assert_eq(s.bytes_cached, 0);
    sl_pool_destroy(pool);
}

/* Whether this host binds memory at all: hwloc says it can, and a probe
 * page bound to `set` the way numabuf.c binds (strictly) is granted.
 * Containers often refuse mbind (no CAP_SYS_NICE under seccomp). */
static bool
host_binds_memory(hwloc_topology_t hw, hwloc_const_nodeset_t set)
{
    const struct hwloc_topology_support *sup = hwloc_topology_get_support(hw);
    if (!sup->membind->alloc_membind || !sup->membind->get_area_membind)
        return false;
    void *p = hwloc_alloc_membind(hw, 4096, set, HWLOC_MEMBIND_BIND,
                                  HWLOC_MEMBIND_BYNODESET | HWLOC_MEMBIND_STRICT);
    if (p == NULL)
        return false;
    hwloc_free(hw, p, 4096);
    return true;
}

/* Asks the kernel, through hwloc, where a worker's buffer is bound and
 * where its pages are, rather than trusting the buffer's own header. */
Test(runtime_numabuf, this_machine_binds_buffers_to_the_worker_node)
{
    sl_pool *pool = pool_make(NULL, 1, (size_t)64 << 20);
    cr_assert(sl_topo_is_this_system(sl_pool_topo(pool)));
    hwloc_topology_t hw = sl__topo_hwloc(sl_pool_topo(pool));
    struct sl_pool_worker_info info;
    cr_assert_eq(sl_pool_worker_info(pool, 0, &info, NULL), SL_OK);
    hwloc_const_nodeset_t want = sl__topo_numa_nodeset(sl_pool_topo(pool), info.place.numa_node);
    if (!host_binds_memory(hw, want)) {
        sl_pool_destroy(pool);
        cr_skip_test("this host refuses to bind memory to a NUMA node (hwloc_alloc_membind)");
    }
    struct on_worker o = {.pool = pool, .n = 1 << 20};
    run_on_worker0(pool, &o);
    cr_assert_not_null(o.buf);
    cr_assert_eq(o.node, info.place.numa_node, "the header names the worker's node");
    cr_assert(sl__buf_is_bound(o.buf), "the host binds, yet the buffer is not bound");
    cr_assert_eq(pool_buf_stats(pool).n_bound, 1);

    hwloc_nodeset_t got = hwloc_bitmap_alloc();
    cr_assert_not_null(got);
    hwloc_membind_policy_t policy;
    cr_assert_eq(hwloc_get_area_membind(hw, o.buf, o.n, got, &policy, HWLOC_MEMBIND_BYNODESET), 0);
    cr_assert_eq(policy, HWLOC_MEMBIND_BIND, "policy %d", (int)policy);
    cr_assert(hwloc_bitmap_isequal(got, want), "bound to other nodes than the worker's");
    /* The task wrote every byte, so every page is placed by now. */
    if (hwloc_topology_get_support(hw)->membind->get_area_memlocation) {
        cr_assert_eq(hwloc_get_area_memlocation(hw, o.buf, o.n, got, HWLOC_MEMBIND_BYNODESET), 0);
        cr_assert(!hwloc_bitmap_iszero(got) && hwloc_bitmap_isincluded(got, want),
                  "pages lie outside the worker's node");
    }
    hwloc_bitmap_free(got);
    o.free_it = true;
    run_on_worker0(pool, &o);
    sl_pool_destroy(pool);
}
