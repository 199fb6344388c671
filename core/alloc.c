/* SPDX-License-Identifier: MIT */
/*
 * The default allocator and the helpers that route every allocation of the
 * library through a caller-chosen `struct sl_allocator`.
 */
#include <pthread.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <sluice/alloc.h>
#include <sluice/checked.h>

#include "core_internal.h"

/* From this size on, a block is a mapping of its own, aligned to huge
 * pages and advised to use them, so that filling a fresh one (store
 * values, shard buffers) faults in a few huge pages rather than thousands
 * of small ones.  Not below: a buffer used in part (codec scratch sized
 * for the worst case) is charged whole 2 MiB pages, which raises the peak
 * RSS of small-chunk pipelines.  Not through the C library: glibc serves
 * blocks of up to 32 MiB from its heap once it has freed one that size,
 * and the advice would then stay on heap memory that small blocks reuse.
 *
 * Buffers filled whole as soon as they are made (a fetched body, sized by
 * its Content-Length) are mappings from one huge page on: nothing of them
 * lies unused (sl__allocator_filled).
 *
 * A few freed mappings are kept for the next blocks of about their size
 * (HUGE_CACHE_SLOTS, HUGE_CACHE_BYTES in all), so that writing shard
 * after shard does not map and fault in a fresh one each time.  Measured
 * effects of both: docs/BENCHMARKS.md, "The allocator". */
#define HUGE_FROM ((size_t)16 << 20)
#define HUGE_PAGE ((size_t)2 << 20)
#define HUGE_MAGIC 0x736c2d6875676531ull
#define HUGE_CACHE_SLOTS 4
#define HUGE_CACHE_BYTES ((size_t)128 << 20)

/* What precedes a mapped block: its mapping, for the free and for reuse. */
struct huge_head {
    uint64_t magic; /* HUGE_MAGIC while the block is given out */
    void *base;     /* the mapping */
    size_t length;
    size_t body; /* bytes usable from the block's start */
};

static pthread_mutex_t huge_lock = PTHREAD_MUTEX_INITIALIZER;
static struct huge_head *huge_cache[HUGE_CACHE_SLOTS]; /* freed, kept mapped */
static size_t huge_cached;                             /* their lengths, summed */

/* A kept mapping for `body` bytes starting on an `a` boundary, or NULL. */
static struct huge_head *
huge_reuse(size_t body, size_t a)
{
    struct huge_head *h = NULL;
    pthread_mutex_lock(&huge_lock);
    for (int i = 0; i < HUGE_CACHE_SLOTS && h == NULL; i++) {
        struct huge_head *c = huge_cache[i];
        /* At most twice the size asked: no 128 MiB block for a 16 MiB one. */
        if (c != NULL && c->body >= body && c->body / 2 <= body && (uintptr_t)(c + 1) % a == 0) {
            h = c;
            huge_cache[i] = NULL;
            huge_cached -= c->length;
        }
    }
    pthread_mutex_unlock(&huge_lock);
    return h;
}

static void *
huge_alloc(size_t n, size_t align)
{
    size_t a = align > HUGE_PAGE ? align : HUGE_PAGE, body, length;
    /* Room for the head before an `a`-aligned start, and for the block. */
    if (!sl_size_mul_fits((n + HUGE_PAGE - 1) / HUGE_PAGE, HUGE_PAGE, &body) || body < n ||
        !sl_size_add_fits(body, a, &length) || !sl_size_add_fits(length, 4096, &length))
        return NULL;
    struct huge_head *h = huge_reuse(body, a);
    if (h != NULL) {
        h->magic = HUGE_MAGIC;
        return h + 1;
    }
    void *base = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return NULL;
    uintptr_t start = ((uintptr_t)base + sizeof(struct huge_head) + a - 1) / a * a;
    h = (struct huge_head *)start - 1;
    *h = (struct huge_head){HUGE_MAGIC, base, length, body};
#ifdef MADV_HUGEPAGE
    /* Advice only: where huge pages are off it fails, and nothing changes. */
    (void)madvise((void *)start, body, MADV_HUGEPAGE);
#endif
    return (void *)start;
}

/* Keep the freed mapping of `h` for reuse, or unmap it. */
static void
huge_free(struct huge_head *h)
{
    h->magic = 0;
    pthread_mutex_lock(&huge_lock);
    for (int i = 0; i < HUGE_CACHE_SLOTS; i++)
        if (huge_cache[i] == NULL && huge_cached + h->length <= HUGE_CACHE_BYTES) {
            huge_cache[i] = h;
            huge_cached += h->length;
            h = NULL;
            break;
        }
    pthread_mutex_unlock(&huge_lock);
    if (h != NULL)
        munmap(h->base, h->length);
}

/* Free `p` when it is a mapped block (its head says so): true; else
 * nothing is done.  Only for blocks of a size that may have been mapped. */
static bool
huge_free_mapped(void *p)
{
    if (p == NULL)
        return false;
    struct huge_head *h = (struct huge_head *)p - 1;
    if (h->magic != HUGE_MAGIC)
        return false;
    huge_free(h);
    return true;
}

static void *
default_alloc(void *ctx, size_t n, size_t align)
{
    (void)ctx;
    if (n >= HUGE_FROM)
        return huge_alloc(n, align);
    if (align <= alignof(max_align_t))
        return malloc(n);
    /* aligned_alloc wants a size that is a multiple of the alignment. */
    size_t rounded = (n + align - 1) / align * align;
    if (rounded < n)
        return NULL;
    return aligned_alloc(align, rounded);
}

/* Blocks are told apart by size, which every free passes as allocated
 * (struct sl_allocator's contract); the head's magic is checked too. */
static void
default_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    if (n >= HUGE_FROM && huge_free_mapped(p))
        return;
    free(p);
}

struct sl_allocator
sl_allocator_default(void)
{
    return (struct sl_allocator){.ctx = NULL, .alloc = default_alloc, .free = default_free};
}

/* The default allocator for buffers filled whole as soon as they are
 * made: from one huge page on, a block is a mapping of its own.  Every
 * block from there on was mapped (free tells them apart by size). */
static void *
filled_alloc(void *ctx, size_t n, size_t align)
{
    return n >= HUGE_PAGE ? huge_alloc(n, align) : default_alloc(ctx, n, align);
}

static void
filled_free(void *ctx, void *p, size_t n)
{
    if (n >= HUGE_PAGE && huge_free_mapped(p))
        return;
    default_free(ctx, p, n);
}

struct sl_allocator
sl__allocator_filled(const struct sl_allocator *a)
{
    bool dflt = a == NULL || a->alloc == NULL || a->alloc == default_alloc;
    if (!dflt)
        return *a;
    return (struct sl_allocator){.ctx = NULL, .alloc = filled_alloc, .free = filled_free};
}

void *
sl_alloc(const struct sl_allocator *a, size_t n, size_t align)
{
    if (n == 0)
        return NULL;
    if (align == 0)
        align = alignof(max_align_t);
    if ((align & (align - 1)) != 0)
        return NULL;
    if (a == NULL || a->alloc == NULL)
        return default_alloc(NULL, n, align);
    return a->alloc(a->ctx, n, align);
}

void *
sl_alloc_zeroed(const struct sl_allocator *a, size_t count, size_t size, size_t align)
{
    size_t n;
    if (!sl_size_mul_fits(count, size, &n))
        return NULL;
    void *p = sl_alloc(a, n, align);
    if (p != NULL)
        memset(p, 0, n);
    return p;
}

void
sl_free(const struct sl_allocator *a, void *p, size_t n)
{
    if (p == NULL)
        return;
    if (a == NULL || a->free == NULL)
        default_free(NULL, p, n);
    else
        a->free(a->ctx, p, n);
}

char *
sl_strdup(const struct sl_allocator *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = sl_alloc(a, n, 1);
    if (p != NULL)
        memcpy(p, s, n);
    return p;
}
