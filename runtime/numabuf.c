/* SPDX-License-Identifier: MIT */
/*
 * NUMA-local chunk buffers: per-worker caches in size classes, backed by
 * per-node depots and by memory that hwloc binds to the node, so that
 * chunk buffers are reused without malloc and live next to the core that
 * fills them.
 *
 * DESIGN
 * Sizes round up to one of four classes per power of two from 4 KiB to
 * 1 GiB (at most 25% slack); larger buffers bypass the caches.  Each buffer
 * carries a 64-byte header in front of it: its class, its NUMA node and a
 * free-list link.  A worker allocates from its own list of the class (no
 * lock), then from its node's depot (a mutex, once per miss), then from the
 * system with hwloc_alloc_membind on its node (strictly; hwloc_alloc when
 * the topology is a model or binding is refused).  A buffer freed on a
 * worker of its node goes to that worker's list while the lists hold less
 * than buf_cache_bytes and the class's list fewer than SL__BUF_LISTED_MAX;
 * otherwise, and when freed elsewhere, to its node's depot, and past the
 * depot's cap back to the system.  So a buffer never changes node.
 *
 * Why the count: in a pipeline one worker often frees what another
 * allocated (a chunk made by one task, consumed by a task on the other
 * worker).  With lists bounded by bytes alone, the freeing worker's list
 * grew to buf_cache_bytes while the allocating one missed and went to the
 * system each time: the process held up to buf_cache_bytes per worker
 * more than the pipeline ever used at once (the 5-D downsample bench's
 * peak RSS, docs/BENCHMARKS.md).  Past two of a class the surplus goes to
 * the depot, where the allocating worker finds it for one lock.
 *
 * Counters: workers own theirs (single-writer, relaxed); threads outside
 * the pool add to their node depot's with atomic adds.  Byte counters are
 * signed per holder because one worker may free what another allocated.
 */
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "runtime_internal.h"
#include "topo_internal.h"

#define BUF_HEADER 64
#define BUF_MIN_SHIFT 12
#define BUF_MAX_CACHED ((size_t)1 << 30)
#define BUF_UNCACHED UINT32_MAX
#define BUF_MAGIC 0x736c6275665f6864ULL /* "slbuf_hd" */

_Static_assert(SL__BUF_CLASSES == 73, "classes: 4 per power of two, 4 KiB to 1 GiB");

/* The header in front of every buffer. */
struct buf_header {
    uint64_t magic;          /* BUF_MAGIC xor the pool's address */
    uint32_t cls;            /* size class, or BUF_UNCACHED */
    uint32_t node;           /* NUMA node (logical index) the memory is on */
    size_t size;             /* class size (or the exact size, uncached) */
    struct buf_header *next; /* free-list link while cached */
    bool bound;              /* memory bound to `node` */
};
_Static_assert(sizeof(struct buf_header) <= BUF_HEADER, "buffer header exceeds 64 bytes");

static unsigned
buf_class(size_t n)
{
    if (n <= ((size_t)1 << BUF_MIN_SHIFT))
        return 0;
    /* 2^p < n <= 2^(p+1); four steps of 2^(p-2) cover that range. */
    unsigned p = (unsigned)(sizeof(unsigned long long) * CHAR_BIT - 1) -
                 (unsigned)__builtin_clzll((unsigned long long)(n - 1));
    size_t step = (size_t)1 << (p - 2);
    unsigned q = (unsigned)((n - ((size_t)1 << p) + step - 1) / step);
    return (p - BUF_MIN_SHIFT) * 4 + q;
}

static size_t
buf_class_size(unsigned c)
{
    if (c == 0)
        return (size_t)1 << BUF_MIN_SHIFT;
    unsigned p = BUF_MIN_SHIFT + (c - 1) / 4, q = (c - 1) % 4 + 1;
    return ((size_t)1 << p) + q * ((size_t)1 << (p - 2));
}

static uint64_t
buf_magic(const sl_pool *pool)
{
    return BUF_MAGIC ^ (uint64_t)(uintptr_t)pool;
}

/* Memory for a buffer of `size` on `node`, header included. */
static struct buf_header *
buf_system_alloc(sl_pool *pool, unsigned node, size_t size)
{
    hwloc_topology_t hw = sl__topo_hwloc(pool->topo);
    size_t bytes = BUF_HEADER + size;
    bool bound = false;
    void *p = NULL;
    if (sl_topo_is_this_system(pool->topo)) {
        p = hwloc_alloc_membind(hw, bytes, sl__topo_numa_nodeset(pool->topo, node),
                                HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_BYNODESET | HWLOC_MEMBIND_STRICT);
        bound = p != NULL;
    }
    if (p == NULL)
        p = hwloc_alloc(hw, bytes);
    if (p == NULL)
        return NULL;
    struct buf_header *h = p;
    h->magic = buf_magic(pool);
    h->node = node;
    h->size = size;
    h->next = NULL;
    h->bound = bound;
    return h;
}

static void
buf_system_free(sl_pool *pool, struct buf_header *h)
{
    h->magic = 0;
    hwloc_free(sl__topo_hwloc(pool->topo), h, BUF_HEADER + h->size);
}

/* Add to a counter: single-writer on workers, atomic elsewhere. */
static void
count_add(sl__counter *field, uint64_t n, bool shared)
{
    if (shared)
        atomic_fetch_add_explicit(field, n, memory_order_relaxed);
    else
        sl__counter_add(field, n);
}

static void
bytes_add(_Atomic int64_t *field, int64_t n, bool shared)
{
    if (shared)
        atomic_fetch_add_explicit(field, n, memory_order_relaxed);
    else
        atomic_store_explicit(field, atomic_load_explicit(field, memory_order_relaxed) + n,
                              memory_order_relaxed);
}

/* Pop a buffer of class `c` from node `node`'s depot, or NULL. */
static struct buf_header *
depot_pop(sl_pool *pool, unsigned node, unsigned c)
{
    struct sl__buf_depot *d = &pool->buf_depots[node];
    pthread_mutex_lock(&d->lock);
    struct buf_header *h = d->head[c];
    if (h != NULL) {
        d->head[c] = h->next;
        d->cached_bytes -= h->size;
    }
    pthread_mutex_unlock(&d->lock);
    return h;
}

/* The NUMA node of the calling thread outside the pool. */
static unsigned
external_node(const sl_pool *pool)
{
    if (pool->n_numa_nodes == 1 || !sl_topo_is_this_system(pool->topo))
        return 0;
    int cpu = sched_getcpu();
    unsigned node = cpu >= 0 ? sl__topo_numa_of_os_pu(pool->topo, (unsigned)cpu) : 0;
    return node < pool->n_numa_nodes ? node : 0;
}

void *
sl_pool_buf_alloc(sl_pool *pool, size_t n_bytes)
{
    if (pool == NULL || n_bytes == 0 || n_bytes > SIZE_MAX - BUF_HEADER - 4096)
        return NULL;
    struct sl__worker *w = sl__worker_of(pool);
    unsigned node = w != NULL ? w->place.numa_node : external_node(pool);
    struct sl__buf_cache *counts = w != NULL ? &w->bufs : &pool->buf_depots[node].counts;
    bool shared = w == NULL;
    struct buf_header *h = NULL;
    unsigned c = n_bytes <= BUF_MAX_CACHED ? buf_class(n_bytes) : BUF_UNCACHED;
    size_t size = c != BUF_UNCACHED ? buf_class_size(c) : n_bytes;
    if (c != BUF_UNCACHED && w != NULL && (h = w->bufs.head[c]) != NULL) {
        w->bufs.head[c] = h->next;
        w->bufs.n_listed[c]--;
        w->bufs.cached_bytes -= size;
    } else if (c != BUF_UNCACHED) {
        h = depot_pop(pool, node, c);
    }
    if (h != NULL) {
        count_add(&counts->n_hits, 1, shared);
    } else {
        h = buf_system_alloc(pool, node, size);
        if (h == NULL)
            return NULL;
        count_add(&counts->n_misses, 1, shared);
        if (h->bound)
            count_add(&counts->n_bound, 1, shared);
        bytes_add(&counts->bytes_system, (int64_t)size, shared);
    }
    h->cls = c;
    h->next = NULL;
    count_add(&counts->n_allocs, 1, shared);
    bytes_add(&counts->bytes_in_use, (int64_t)size, shared);
    return (char *)h + BUF_HEADER;
}

/* Put `h` in its node's depot, or give it back when the depot is full. */
static void
depot_push_or_release(sl_pool *pool, struct buf_header *h, struct sl__buf_cache *counts,
                      bool shared)
{
    struct sl__buf_depot *d = &pool->buf_depots[h->node];
    pthread_mutex_lock(&d->lock);
    if (h->cls != BUF_UNCACHED && d->cached_bytes + h->size <= d->cap_bytes) {
        h->next = d->head[h->cls];
        d->head[h->cls] = h;
        d->cached_bytes += h->size;
        h = NULL;
    }
    pthread_mutex_unlock(&d->lock);
    if (h != NULL) {
        bytes_add(&counts->bytes_system, -(int64_t)h->size, shared);
        buf_system_free(pool, h);
    }
}

void
sl_pool_buf_free(sl_pool *pool, void *buf, size_t n_bytes)
{
    if (pool == NULL || buf == NULL)
        return;
    struct buf_header *h = (struct buf_header *)((char *)buf - BUF_HEADER);
    /* A foreign pointer or a wrong size is a programming error: leak the
     * buffer rather than corrupt a free list. */
    if (SL_NEVER(h->magic != buf_magic(pool) || h->node >= pool->n_numa_nodes || n_bytes > h->size))
        return;
    struct sl__worker *w = sl__worker_of(pool);
    struct sl__buf_cache *counts = w != NULL ? &w->bufs : &pool->buf_depots[h->node].counts;
    bool shared = w == NULL;
    count_add(&counts->n_frees, 1, shared);
    bytes_add(&counts->bytes_in_use, -(int64_t)h->size, shared);
    if (w != NULL && h->cls != BUF_UNCACHED && h->node == w->place.numa_node &&
        w->bufs.n_listed[h->cls] < SL__BUF_LISTED_MAX &&
        w->bufs.cached_bytes + h->size <= pool->buf_cache_bytes) {
        h->next = w->bufs.head[h->cls];
        w->bufs.head[h->cls] = h;
        w->bufs.n_listed[h->cls]++;
        w->bufs.cached_bytes += h->size;
        return;
    }
    depot_push_or_release(pool, h, counts, shared);
}

unsigned
sl__buf_node(const void *buf)
{
    return ((const struct buf_header *)((const char *)buf - BUF_HEADER))->node;
}

bool
sl__buf_is_bound(const void *buf)
{
    return ((const struct buf_header *)((const char *)buf - BUF_HEADER))->bound;
}

static void
stats_add(struct sl_pool_buf_stats *s, const struct sl__buf_cache *c)
{
    s->n_allocs += sl__counter_get(&c->n_allocs);
    s->n_hits += sl__counter_get(&c->n_hits);
    s->n_misses += sl__counter_get(&c->n_misses);
    s->n_frees += sl__counter_get(&c->n_frees);
    s->n_bound += sl__counter_get(&c->n_bound);
    s->bytes_system +=
        (uint64_t)atomic_load_explicit((_Atomic int64_t *)&c->bytes_system, memory_order_relaxed);
    s->bytes_in_use +=
        atomic_load_explicit((_Atomic int64_t *)&c->bytes_in_use, memory_order_relaxed);
}

void
sl_pool_buf_get_stats(const sl_pool *pool, struct sl_pool_buf_stats *out)
{
    struct sl_pool_buf_stats s = {0};
    for (unsigned i = 0; i < pool->n_workers; i++)
        stats_add(&s, &pool->workers[i].bufs);
    for (unsigned i = 0; i < pool->n_numa_nodes; i++)
        stats_add(&s, &pool->buf_depots[i].counts);
    /* Holders' byte counters are signed; their sums are not. */
    int64_t cached = (int64_t)s.bytes_system - s.bytes_in_use;
    s.bytes_cached = cached > 0 ? (uint64_t)cached : 0;
    *out = s;
}

sl_status
sl__buf_depots_init(sl_pool *pool)
{
    unsigned n = pool->n_numa_nodes;
    pool->buf_depots = sl_alloc_zeroed(&pool->alloc, n, sizeof(*pool->buf_depots), SL_CACHELINE);
    if (pool->buf_depots == NULL)
        return SL_ENOMEM;
    /* Room for the caches of the node's share of the workers. */
    size_t per_node = (pool->n_workers + n - 1) / n;
    size_t cap = pool->buf_cache_bytes;
    cap = per_node != 0 && cap > SIZE_MAX / per_node ? SIZE_MAX : cap * (per_node ? per_node : 1);
    for (unsigned i = 0; i < n; i++) {
        pthread_mutex_init(&pool->buf_depots[i].lock, NULL);
        pool->buf_depots[i].cap_bytes = cap;
    }
    return SL_OK;
}

/* Free every buffer of a list array. */
static void
lists_release(sl_pool *pool, void **heads)
{
    for (unsigned c = 0; c < SL__BUF_CLASSES; c++) {
        struct buf_header *h = heads[c];
        while (h != NULL) {
            struct buf_header *next = h->next;
            buf_system_free(pool, h);
            h = next;
        }
        heads[c] = NULL;
    }
}

void
sl__buf_cache_fini(sl_pool *pool, struct sl__worker *w)
{
    lists_release(pool, w->bufs.head);
    memset(w->bufs.n_listed, 0, sizeof(w->bufs.n_listed));
    w->bufs.cached_bytes = 0;
}

void
sl__buf_depots_fini(sl_pool *pool)
{
    if (pool->buf_depots == NULL)
        return;
    for (unsigned i = 0; i < pool->n_numa_nodes; i++) {
        lists_release(pool, pool->buf_depots[i].head);
        pthread_mutex_destroy(&pool->buf_depots[i].lock);
    }
    sl_free(&pool->alloc, pool->buf_depots, pool->n_numa_nodes * sizeof(*pool->buf_depots));
}
