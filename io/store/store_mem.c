/* SPDX-License-Identifier: MIT */
/*
 * The memory store: a hash table from keys to immutable, refcounted values.
 *
 * DESIGN: one mutex guards the table; it is held only to look up, insert or
 * swap a value pointer, never while copying bytes.  A reader takes a
 * reference on the value it found and copies outside the lock, so a set that
 * replaces the value meanwhile cannot change what the reader sees: it reads
 * one version, as the filesystem store's open descriptor does.  The hook runs
 * outside the lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

/* A stored value; immutable once published. */
struct mem_value {
    _Atomic size_t refs; /* the table's reference plus readers' */
    size_t size;         /* bytes in data */
    uint8_t data[];      /* the object */
};

/* A key in a bucket's chain. */
struct mem_node {
    struct mem_node *next;   /* next in the bucket */
    uint64_t hash;           /* of key */
    struct mem_value *value; /* owned reference */
    size_t key_len;          /* strlen(key) */
    char key[];              /* NUL-terminated */
};

struct mem_store {
    struct sl_store base;      /* must come first */
    pthread_mutex_t lock;      /* guards buckets, n_buckets, n_keys */
    struct mem_node **buckets; /* n_buckets chains */
    size_t n_buckets;          /* a power of two */
    size_t n_keys;             /* nodes in the table */
    sl_mem_store_hook *hook;   /* may be NULL */
    void *hook_ctx;            /* passed to hook */
};

static struct mem_store *
mem_of(sl_store *s)
{
    return (struct mem_store *)s;
}

/* FNV-1a; keys are short and trusted to be spread enough. */
static uint64_t
mem_hash(const char *key, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)key[i]) * 0x100000001b3ull;
    return h;
}

static void
mem_value_unref(struct mem_store *ms, struct mem_value *v)
{
    if (v == NULL)
        return;
    /* Acq_rel: the release half pairs with the acquire half of the last
     * holder's decrement, so the freeing thread sees every other holder's
     * reads of the value done. */
    if (atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) == 1)
        sl_free(&ms->base.alloc, v, sizeof(*v) + v->size);
}

static sl_status
mem_hook(struct mem_store *ms, sl_store_op op, const char *key, size_t n, struct sl_error *err)
{
    if (ms->hook == NULL)
        return SL_OK;
    int rc = ms->hook(ms->hook_ctx, op, key, n);
    if (rc >= 0)
        return SL_OK;
    static const char *const names[] = {"get", "set", "delete"};
    return sl_error_set(err, sl__status_from_errno(rc), NULL, "%s of \"%s\" failed: %s", names[op],
                        key, strerror(-rc));
}

/* Find `key`'s node pointer slot; the caller holds the lock. */
static struct mem_node **
mem_find_locked(struct mem_store *ms, const char *key, size_t n, uint64_t h)
{
    struct mem_node **p = &ms->buckets[h & (ms->n_buckets - 1)];
    for (; *p != NULL; p = &(*p)->next)
        if ((*p)->hash == h && (*p)->key_len == n && memcmp((*p)->key, key, n) == 0)
            return p;
    return p;
}

/* Double the bucket array when the table gets full; failure is harmless. */
static void
mem_grow_locked(struct mem_store *ms)
{
    if (ms->n_keys < ms->n_buckets)
        return;
    size_t nb = ms->n_buckets * 2;
    struct mem_node **b = sl_alloc_zeroed(&ms->base.alloc, nb, sizeof(*b), 0);
    if (b == NULL)
        return;
    for (size_t i = 0; i < ms->n_buckets; i++) {
        struct mem_node *node = ms->buckets[i];
        while (node != NULL) {
            struct mem_node *next = node->next;
            node->next = b[node->hash & (nb - 1)];
            b[node->hash & (nb - 1)] = node;
            node = next;
        }
    }
    sl_free(&ms->base.alloc, ms->buckets, ms->n_buckets * sizeof(*b));
    ms->buckets = b;
    ms->n_buckets = nb;
}

static sl_status
mem_reader_open(sl_store *s, const char *key, const struct sl_byte_range *first,
                struct sl__reader *rd, struct sl_error *err)
{
    (void)first; /* a local read costs nothing up front */
    struct mem_store *ms = mem_of(s);
    SL_TRY(mem_hook(ms, SL_STORE_OP_GET, key, 0, err));
    size_t n = strlen(key);
    uint64_t h = mem_hash(key, n);
    pthread_mutex_lock(&ms->lock);
    struct mem_node *node = *mem_find_locked(ms, key, n, h);
    struct mem_value *v = node != NULL ? node->value : NULL;
    if (v != NULL)
        atomic_fetch_add_explicit(&v->refs, 1, memory_order_relaxed);
    pthread_mutex_unlock(&ms->lock);
    if (v == NULL)
        return sl_error_set(err, SL_ENOTFOUND, NULL, "no object \"%s\"", key);
    rd->blob = v;
    rd->size = v->size;
    return SL_OK;
}

static sl_status
mem_reader_read(struct sl__reader *rd, uint64_t offset, size_t n, void *dst, struct sl_error *err)
{
    (void)err;
    const struct mem_value *v = rd->blob;
    memcpy(dst, v->data + offset, n);
    return SL_OK;
}

static const uint8_t *
mem_reader_view(struct sl__reader *rd, uint64_t offset, size_t n)
{
    (void)n; /* within the value: sl__reader_view_range checked */
    const struct mem_value *v = rd->blob;
    return v->data + offset;
}

static void
mem_reader_close(struct sl__reader *rd)
{
    mem_value_unref(mem_of(rd->store), rd->blob);
    rd->blob = NULL;
}

static sl_status
mem_set(sl_store *s, const char *key, const void *data, size_t n, unsigned flags,
        struct sl_error *err)
{
    (void)flags; /* memory is its own cache */
    struct mem_store *ms = mem_of(s);
    SL_TRY(mem_hook(ms, SL_STORE_OP_SET, key, n, err));
    size_t key_len = strlen(key);
    struct mem_value *v = sl_alloc(&s->alloc, sizeof(*v) + n, 0);
    struct mem_node *fresh = sl_alloc(&s->alloc, sizeof(*fresh) + key_len + 1, 0);
    if (v == NULL || fresh == NULL) {
        sl_free(&s->alloc, v, sizeof(*v) + n);
        sl_free(&s->alloc, fresh, sizeof(*fresh) + key_len + 1);
        return sl_error_set(err, SL_ENOMEM, NULL, "out of memory storing %zu bytes", n);
    }
    atomic_init(&v->refs, 1);
    v->size = n;
    if (n > 0)
        memcpy(v->data, data, n);
    uint64_t h = mem_hash(key, key_len);
    pthread_mutex_lock(&ms->lock);
    struct mem_node **slot = mem_find_locked(ms, key, key_len, h);
    struct mem_value *old = NULL;
    if (*slot != NULL) {
        old = (*slot)->value;
        (*slot)->value = v;
    } else {
        *fresh = (struct mem_node){.next = NULL, .hash = h, .value = v, .key_len = key_len};
        memcpy(fresh->key, key, key_len + 1);
        *slot = fresh;
        fresh = NULL;
        ms->n_keys++;
        mem_grow_locked(ms);
    }
    pthread_mutex_unlock(&ms->lock);
    sl_free(&s->alloc, fresh, sizeof(*fresh) + key_len + 1);
    mem_value_unref(ms, old);
    return SL_OK;
}

static void
mem_node_free(struct mem_store *ms, struct mem_node *node)
{
    mem_value_unref(ms, node->value);
    sl_free(&ms->base.alloc, node, sizeof(*node) + node->key_len + 1);
}

static sl_status
mem_del(sl_store *s, const char *key, struct sl_error *err)
{
    struct mem_store *ms = mem_of(s);
    SL_TRY(mem_hook(ms, SL_STORE_OP_DELETE, key, 0, err));
    size_t n = strlen(key);
    uint64_t h = mem_hash(key, n);
    pthread_mutex_lock(&ms->lock);
    struct mem_node **slot = mem_find_locked(ms, key, n, h);
    struct mem_node *node = *slot;
    if (node != NULL) {
        *slot = node->next;
        ms->n_keys--;
    }
    pthread_mutex_unlock(&ms->lock);
    if (node != NULL)
        mem_node_free(ms, node);
    return SL_OK;
}

/* A matching key copied out of the table, with its size. */
struct mem_listed {
    char *key;
    uint64_t size;
};

static int
mem_listed_cmp(const void *a, const void *b)
{
    return strcmp(((const struct mem_listed *)a)->key, ((const struct mem_listed *)b)->key);
}

/* Copy the keys matching `prefix` under the lock. */
static sl_status
mem_collect(struct mem_store *ms, const char *prefix, struct mem_listed **out, size_t *n_out,
            size_t *cap_out, struct sl_error *err)
{
    size_t plen = strlen(prefix), n = 0;
    sl_status status = SL_OK;
    pthread_mutex_lock(&ms->lock);
    size_t cap = ms->n_keys;
    struct mem_listed *v = cap > 0 ? sl_alloc(&ms->base.alloc, cap * sizeof(*v), 0) : NULL;
    if (cap > 0 && v == NULL)
        status = SL_ENOMEM;
    for (size_t i = 0; i < ms->n_buckets && status == SL_OK; i++) {
        for (struct mem_node *node = ms->buckets[i]; node != NULL; node = node->next) {
            if (strncmp(node->key, prefix, plen) != 0)
                continue;
            char *k = sl_strdup(&ms->base.alloc, node->key);
            if (k == NULL) {
                status = SL_ENOMEM;
                break;
            }
            v[n++] = (struct mem_listed){k, node->value->size};
        }
    }
    pthread_mutex_unlock(&ms->lock);
    *out = v;
    *n_out = n;
    *cap_out = cap;
    if (status != SL_OK)
        return sl_error_set(err, SL_ENOMEM, NULL, "out of memory listing %zu keys", cap);
    return SL_OK;
}

static sl_status
mem_list(sl_store *s, const char *prefix, sl_store_list_fn *fn, void *arg, struct sl_error *err)
{
    struct mem_store *ms = mem_of(s);
    struct mem_listed *v = NULL;
    size_t n = 0, cap = 0;
    sl_status status = mem_collect(ms, prefix, &v, &n, &cap, err);
    if (status == SL_OK && n > 1)
        qsort(v, n, sizeof(*v), mem_listed_cmp);
    for (size_t i = 0; i < n && status == SL_OK; i++)
        status = fn(arg, v[i].key, v[i].size);
    for (size_t i = 0; i < n; i++)
        sl_free(&s->alloc, v[i].key, strlen(v[i].key) + 1);
    sl_free(&s->alloc, v, cap * sizeof(*v));
    return status;
}

static void
mem_destroy(sl_store *s)
{
    struct mem_store *ms = mem_of(s);
    struct sl_allocator alloc = s->alloc;
    for (size_t i = 0; i < ms->n_buckets; i++) {
        struct mem_node *node = ms->buckets[i];
        while (node != NULL) {
            struct mem_node *next = node->next;
            mem_node_free(ms, node);
            node = next;
        }
    }
    sl_free(&alloc, ms->buckets, ms->n_buckets * sizeof(*ms->buckets));
    pthread_mutex_destroy(&ms->lock);
    sl_free(&alloc, ms, sizeof(*ms));
}

static const struct sl__store_vtable mem_vtable = {
    .kind = "memory",
    .set_writers = 0,
    .reader_open = mem_reader_open,
    .reader_read = mem_reader_read,
    .reader_close = mem_reader_close,
    .reader_view = mem_reader_view,
    .set = mem_set,
    .del = mem_del,
    .list = mem_list,
    .destroy = mem_destroy,
};

sl_store *
sl_store_create_memory(const struct sl_mem_store_opts *opts, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct sl_mem_store_opts o = opts != NULL ? *opts : SL_MEM_STORE_OPTS_DEFAULT;
    struct sl_allocator alloc = o.alloc != NULL ? *o.alloc : sl_allocator_default();
    struct mem_store *ms = sl_alloc(&alloc, sizeof(*ms), 0);
    struct mem_node **buckets = sl_alloc_zeroed(&alloc, 64, sizeof(*buckets), 0);
    if (ms == NULL || buckets == NULL || pthread_mutex_init(&ms->lock, NULL) != 0) {
        sl_free(&alloc, ms, sizeof(*ms));
        sl_free(&alloc, buckets, 64 * sizeof(*buckets));
        sl_error_set(err, SL_ENOMEM, NULL, "out of memory creating a memory store");
        return NULL;
    }
    sl__store_init(&ms->base, &mem_vtable, &alloc);
    ms->buckets = buckets;
    ms->n_buckets = 64;
    ms->n_keys = 0;
    ms->hook = o.hook;
    ms->hook_ctx = o.hook_ctx;
    return &ms->base;
}
