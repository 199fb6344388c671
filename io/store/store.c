/* SPDX-License-Identifier: MIT */
/*
 * The store front end: reference counting, key checks, operation counters,
 * byte-range resolution and growable buffers.  Each kind of store (store_fs.c,
 * store_mem.c) implements a small vtable behind it.
 *
 * DESIGN: keys are checked here, once, before any backend sees them, so no
 * backend can be handed "../x" or "/etc/passwd".  Backends still check that
 * symbolic links do not lead outside their root, which only they can see.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

/* ---- buffers -------------------------------------------------------------- */

/* Grow `b` to exactly `cap` (> its capacity) bytes, keeping its contents. */
static sl_status
buf_grow(struct sl_buf *b, size_t cap, struct sl_error *err)
{
    const struct sl_allocator *a = b->alloc.alloc != NULL ? &b->alloc : NULL;
    /* Large buffers start on a page, so the filesystem store can hand
     * them to the device directly (O_DIRECT). */
    uint8_t *p = sl_alloc(a, cap, cap >= ((size_t)64 << 10) ? 4096 : 64);
    if (p == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "cannot allocate a buffer of %zu bytes", cap);
    if (b->size > 0)
        memcpy(p, b->data, b->size);
    sl_free(a, b->data, b->capacity);
    b->data = p;
    b->capacity = cap;
    return SL_OK;
}

sl_status
sl_buf_reserve(struct sl_buf *b, size_t n, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (n <= b->capacity)
        return SL_OK;
    size_t cap = b->capacity < 256 ? 256 : b->capacity;
    while (cap < n)
        cap = cap > SIZE_MAX / 2 ? n : cap * 2;
    return buf_grow(b, cap, err);
}

sl_status
sl_buf_reserve_exact(struct sl_buf *b, size_t n, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    return n <= b->capacity ? SL_OK : buf_grow(b, n, err);
}

sl_status
sl_buf_append(struct sl_buf *b, const void *data, size_t n, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    size_t need;
    if (!sl_size_add_fits(b->size, n, &need))
        return sl_error_set(err, SL_EOVERFLOW, NULL, "buffer of %zu bytes cannot grow by %zu",
                            b->size, n);
    SL_TRY(sl_buf_reserve(b, need, err));
    if (n > 0)
        memcpy(b->data + b->size, data, n);
    b->size = need;
    return SL_OK;
}

void
sl_buf_fini(struct sl_buf *b)
{
    if (b == NULL)
        return;
    sl_free(b->alloc.alloc != NULL ? &b->alloc : NULL, b->data, b->capacity);
    b->data = NULL;
    b->size = 0;
    b->capacity = 0;
}

/* ---- keys ----------------------------------------------------------------- */

#define SL_TMP_PREFIX ".sluice-tmp."

bool
sl__key_is_temporary(const char *name)
{
    return strncmp(name, SL_TMP_PREFIX, sizeof(SL_TMP_PREFIX) - 1) == 0;
}

static sl_status
key_refuse(struct sl_error *err, const char *key, size_t len, const char *why)
{
    int shown = len > 60 ? 60 : (int)len;
    return sl_error_set(err, SL_EACCES, NULL, "key \"%.*s%s\" refused: %s", shown, key,
                        len > 60 ? "..." : "", why);
}

/* Check one component [c, c + n); `partial` allows an empty or partial last
 * component of a prefix. */
static const char *
key_component_problem(const char *c, size_t n, bool partial)
{
    if (n == 0)
        return partial ? NULL : "empty path component";
    if (n > SL_STORE_KEY_COMPONENT_MAX)
        return "path component longer than 255 bytes";
    if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
        return "\".\" and \"..\" components could leave the store";
    if (n >= sizeof(SL_TMP_PREFIX) - 1 && memcmp(c, SL_TMP_PREFIX, sizeof(SL_TMP_PREFIX) - 1) == 0)
        return "names starting with \".sluice-tmp.\" are reserved for temporary files";
    return NULL;
}

/* The shared rules of keys and prefixes. */
static sl_status
key_check_common(const char *key, size_t len, bool prefix, struct sl_error *err)
{
    if (len > SL_STORE_KEY_MAX)
        return key_refuse(err, key, len, "longer than 1024 bytes");
    if (len > 0 && key[0] == '/')
        return key_refuse(err, key, len, "absolute paths are not keys");
    if (memchr(key, '\0', len) != NULL)
        return key_refuse(err, key, len, "contains a NUL byte");
    if (memchr(key, '\\', len) != NULL)
        return key_refuse(err, key, len, "contains a backslash");
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && key[i] != '/')
            continue;
        bool last = i == len;
        const char *why = key_component_problem(key + start, i - start, prefix && last);
        if (why != NULL)
            return key_refuse(err, key, len, why);
        start = i + 1;
    }
    return SL_OK;
}

sl_status
sl__key_check(const char *key, size_t len, struct sl_error *err)
{
    if (key == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "key is missing");
    if (len == 0)
        return key_refuse(err, key, len, "empty key");
    return key_check_common(key, len, false, err);
}

sl_status
sl__key_prefix_check(const char *prefix, struct sl_error *err)
{
    if (prefix == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "prefix is missing");
    size_t len = strlen(prefix);
    if (len == 0)
        return SL_OK;
    return key_check_common(prefix, len, true, err);
}

sl_status
sl__status_from_errno(int neg_errno)
{
    switch (-neg_errno) {
    case ENOENT:
    case ENOTDIR:
        return SL_ENOTFOUND;
    case ENOSPC:
    case EDQUOT:
        return SL_ENOSPC;
    case EACCES:
    case EPERM:
    case EROFS:
    case ELOOP:
        return SL_EACCES;
    case EEXIST:
    case EISDIR:
    case ENOTEMPTY:
        return SL_EEXIST;
    case ENOMEM:
        return SL_ENOMEM;
    default:
        return SL_EIO;
    }
}

/* ---- reference counting ---------------------------------------------------- */

void
sl__store_init(sl_store *s, const struct sl__store_vtable *vt, const struct sl_allocator *alloc)
{
    s->vt = vt;
    s->alloc = alloc != NULL ? *alloc : sl_allocator_default();
    s->given = NULL;
    atomic_init(&s->refs, 1);
    atomic_init(&s->n_get, 0);
    atomic_init(&s->n_set, 0);
    atomic_init(&s->n_delete, 0);
    atomic_init(&s->n_list, 0);
    atomic_init(&s->bytes_read, 0);
    atomic_init(&s->bytes_written, 0);
}

void
sl_store_ref(sl_store *s)
{
    /* Relaxed: the caller already holds a reference, so the store is alive. */
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void
sl_store_unref(sl_store *s)
{
    if (s == NULL)
        return;
    /* Release pairs with the acquire fence below, so the destroying thread
     * sees every write other holders made before dropping theirs. */
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_release) != 1)
        return;
    atomic_thread_fence(memory_order_acquire);
    s->vt->destroy(s);
}

const char *
sl_store_kind(const sl_store *s)
{
    return s->vt->kind;
}

size_t
sl_store_name(const sl_store *s, const char *key, char *buf, size_t size)
{
    size_t len = 0;
    if (size > 0)
        buf[0] = '\0';
    if (key == NULL)
        key = "";
    if (s->given == NULL) {
        if (key[0] == '\0')
            sl__strbuf_append(buf, size, &len, "memory store root");
        else
            sl__strbuf_append(buf, size, &len, "memory store key \"%s\"", key);
        return len;
    }
    size_t n = strlen(s->given);
    bool slash = key[0] != '\0' && n > 0 && s->given[n - 1] != '/';
    sl__strbuf_append(buf, size, &len, "\"%s%s%s\"", s->given, slash ? "/" : "", key);
    return len;
}

void
sl_store_get_stats(const sl_store *s, struct sl_store_stats *out)
{
    sl_store *m = (sl_store *)s; /* atomic loads take non-const pointers in C11 */
    out->n_get = atomic_load_explicit(&m->n_get, memory_order_relaxed);
    out->n_set = atomic_load_explicit(&m->n_set, memory_order_relaxed);
    out->n_delete = atomic_load_explicit(&m->n_delete, memory_order_relaxed);
    out->n_list = atomic_load_explicit(&m->n_list, memory_order_relaxed);
    out->bytes_read = atomic_load_explicit(&m->bytes_read, memory_order_relaxed);
    out->bytes_written = atomic_load_explicit(&m->bytes_written, memory_order_relaxed);
}

/* ---- readers and ranges ---------------------------------------------------- */

static void
error_name_key(struct sl_error *err, const char *key)
{
    sl_error_set_source(err, key);
}

sl_status
sl__reader_open(sl_store *s, const char *key, struct sl__reader *rd, struct sl_error *err)
{
    return sl__reader_open_first(s, key, NULL, rd, err);
}

sl_status
sl__reader_open_first(sl_store *s, const char *key, const struct sl_byte_range *first,
                      struct sl__reader *rd, struct sl_error *err)
{
    *rd = (struct sl__reader){.store = s, .key = key, .size = 0, .fd = -1, .blob = NULL};
    if (s == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "store is missing");
    sl_status st = sl__key_check(key, key != NULL ? strlen(key) : 0, err);
    if (st == SL_OK)
        st = s->vt->reader_open(s, key, first, rd, err);
    if (st != SL_OK) {
        rd->store = NULL;
        if (st != SL_ENOTFOUND)
            error_name_key(err, key);
    }
    return st;
}

sl_status
sl__reader_read(struct sl__reader *rd, uint64_t offset, size_t n, void *dst, struct sl_error *err)
{
    if (offset > rd->size || n > rd->size - offset) {
        sl_error_set(err, SL_EBOUNDS, NULL,
                     "range [%" PRIu64 ", +%zu) exceeds object of %" PRIu64 " bytes", offset, n,
                     rd->size);
        error_name_key(err, rd->key);
        return SL_EBOUNDS;
    }
    if (n == 0)
        return SL_OK;
    sl_status st = rd->store->vt->reader_read(rd, offset, n, dst, err);
    if (st != SL_OK) {
        error_name_key(err, rd->key);
        return st;
    }
    atomic_fetch_add_explicit(&rd->store->n_get, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&rd->store->bytes_read, n, memory_order_relaxed);
    return SL_OK;
}

sl_status
sl__range_resolve(const struct sl_byte_range *range, uint64_t size, const char *key,
                  uint64_t *offset, uint64_t *n, struct sl_error *err)
{
    sl_range_kind kind = range != NULL ? range->kind : SL_RANGE_ALL;
    uint64_t off = 0, len = size;
    if (kind == SL_RANGE_SUFFIX) {
        if (range->length > size) {
            sl_error_set(err, SL_EBOUNDS, NULL,
                         "last %" PRIu64 " bytes wanted of an object of %" PRIu64 " bytes",
                         range->length, size);
            error_name_key(err, key);
            return SL_EBOUNDS;
        }
        len = range->length;
        off = size - len;
    } else if (kind == SL_RANGE_FROM) {
        off = range->offset;
        len = range->length;
        if (len == SL_RANGE_TO_END && off <= size)
            len = size - off;
        /* Two tests, so that off + len cannot overflow. */
        if (off > size || len > size - off) {
            sl_error_set(err, SL_EBOUNDS, NULL,
                         "byte range [%" PRIu64 ", +%" PRIu64 ") exceeds object of %" PRIu64
                         " bytes",
                         off, len, size);
            error_name_key(err, key);
            return SL_EBOUNDS;
        }
    }
    *offset = off;
    *n = len;
    return SL_OK;
}

sl_status
sl__reader_read_range(struct sl__reader *rd, const struct sl_byte_range *range, struct sl_buf *out,
                      struct sl_error *err)
{
    uint64_t off, len;
    SL_TRY(sl__range_resolve(range, rd->size, rd->key, &off, &len, err));
    if (len > SIZE_MAX)
        return sl_error_set(err, SL_EOVERFLOW, NULL, "object of %" PRIu64 " bytes", len);
    SL_TRY(sl_buf_reserve(out, (size_t)len, err));
    out->size = 0;
    SL_TRY(sl__reader_read(rd, off, (size_t)len, out->data, err));
    out->size = (size_t)len;
    return SL_OK;
}

sl_status
sl__reader_view_range(struct sl__reader *rd, const struct sl_byte_range *range,
                      struct sl_buf *scratch, const uint8_t **data, size_t *n, struct sl_error *err)
{
    uint64_t off, len;
    SL_TRY(sl__range_resolve(range, rd->size, rd->key, &off, &len, err));
    const uint8_t *held = NULL;
    if (len > 0 && len <= SIZE_MAX && rd->store->vt->reader_view != NULL)
        held = rd->store->vt->reader_view(rd, off, (size_t)len);
    if (held == NULL) {
        SL_TRY(sl__reader_read_range(rd, range, scratch, err));
        *data = scratch->data;
        *n = scratch->size;
        return SL_OK;
    }
    atomic_fetch_add_explicit(&rd->store->n_get, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&rd->store->bytes_read, len, memory_order_relaxed);
    *data = held;
    *n = (size_t)len;
    return SL_OK;
}

void
sl__reader_close(struct sl__reader *rd)
{
    if (rd->store != NULL)
        rd->store->vt->reader_close(rd);
    rd->store = NULL;
}

/* ---- the public operations -------------------------------------------------- */

sl_status
sl_store_get(sl_store *s, const char *key, const struct sl_byte_range *range, struct sl_buf *out,
             uint64_t *object_bytes, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct sl__reader rd;
    SL_TRY(sl__reader_open_first(s, key, range, &rd, err));
    sl_status st = sl__reader_read_range(&rd, range, out, err);
    if (st == SL_OK && object_bytes != NULL)
        *object_bytes = rd.size;
    sl__reader_close(&rd);
    return st;
}

sl_status
sl_store_size(sl_store *s, const char *key, uint64_t *bytes, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct sl__reader rd;
    SL_TRY(sl__reader_open(s, key, &rd, err));
    *bytes = rd.size;
    sl__reader_close(&rd);
    return SL_OK;
}

sl_status
sl_store_set(sl_store *s, const char *key, const void *data, size_t n, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    return sl__store_set(s, key, data, n, 0, err);
}

sl_status
sl__store_set(sl_store *s, const char *key, const void *data, size_t n, unsigned flags,
              struct sl_error *err)
{
    if (s == NULL || (data == NULL && n > 0))
        return sl_error_set(err, SL_EINVAL, NULL, "store or data is missing");
    SL_TRY(sl__key_check(key, key != NULL ? strlen(key) : 0, err));
    sl_status st = s->vt->set(s, key, data, n, flags, err);
    if (st != SL_OK) {
        error_name_key(err, key);
        return st;
    }
    atomic_fetch_add_explicit(&s->n_set, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->bytes_written, n, memory_order_relaxed);
    return SL_OK;
}

sl_status
sl_store_delete(sl_store *s, const char *key, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (s == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "store is missing");
    SL_TRY(sl__key_check(key, key != NULL ? strlen(key) : 0, err));
    atomic_fetch_add_explicit(&s->n_delete, 1, memory_order_relaxed);
    sl_status st = s->vt->del(s, key, err);
    if (st != SL_OK)
        error_name_key(err, key);
    return st;
}

sl_status
sl_store_sync(sl_store *s, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (s == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "store is missing");
    return s->vt->sync != NULL ? s->vt->sync(s, err) : SL_OK;
}

sl_status
sl_store_list(sl_store *s, const char *prefix, sl_store_list_fn *fn, void *arg,
              struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (s == NULL || fn == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "store or callback is missing");
    SL_TRY(sl__key_prefix_check(prefix, err));
    atomic_fetch_add_explicit(&s->n_list, 1, memory_order_relaxed);
    return s->vt->list(s, prefix, fn, arg, err);
}

/* sl_store_objects_match's walk over `ref`'s keys. */
struct objects_match {
    sl_store *ref, *other;
    char *first;
    size_t size;
    bool *missing;
    struct sl_error *err;
};

static sl_status
objects_match_key(void *arg, const char *key, uint64_t bytes)
{
    struct objects_match *m = arg;
    (void)bytes;
    struct sl_buf a = SL_BUF_INIT, b = SL_BUF_INIT;
    sl_status st = sl_store_get(m->ref, key, NULL, &a, NULL, m->err);
    if (st != SL_OK) { /* `ref`'s own failure, never a difference */
        sl_buf_fini(&a);
        return st;
    }
    sl_status so = sl_store_get(m->other, key, NULL, &b, NULL, m->err);
    bool differs =
        so == SL_ENOTFOUND ||
        (so == SL_OK && (a.size != b.size || (a.size > 0 && memcmp(a.data, b.data, a.size) != 0)));
    sl_buf_fini(&a);
    sl_buf_fini(&b);
    if (!differs)
        return so;
    *m->missing = so == SL_ENOTFOUND;
    if (m->size > 0)
        snprintf(m->first, m->size, "%s", key);
    if (m->err != NULL)
        *m->err = SL_ERROR_INIT;
    return SL_ECANCELED; /* found: stop */
}

sl_status
sl_store_objects_match(sl_store *ref, sl_store *other, char *first, size_t size, bool *missing,
                       struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (size > 0)
        first[0] = '\0';
    *missing = false;
    if (ref == NULL || other == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "sl_store_objects_match needs two stores");
    struct objects_match m = {ref, other, first, size, missing, err};
    sl_status st = sl_store_list(ref, "", objects_match_key, &m, err);
    return st == SL_ECANCELED ? SL_OK : st;
}

bool
sl_store_reads_ahead(const sl_store *s)
{
    return s->vt->prefetch != NULL;
}

void
sl__store_prefetch(sl_store *s, const char *key, const struct sl_byte_range *range)
{
    if (s->vt->prefetch != NULL && sl__key_check(key, strlen(key), NULL) == SL_OK)
        s->vt->prefetch(s, key, range);
}

void
sl__store_prefetch_ranges(sl_store *s, const char *key, const struct sl_byte_range *ranges,
                          size_t n, uint64_t gap, uint64_t cap)
{
    if (s->vt->prefetch == NULL || sl__key_check(key, strlen(key), NULL) != SL_OK)
        return;
    if (s->vt->prefetch_ranges != NULL) {
        s->vt->prefetch_ranges(s, key, ranges, n, gap, cap);
        return;
    }
    for (size_t i = 0; i < n; i++)
        s->vt->prefetch(s, key, &ranges[i]);
}

bool
sl__store_fetches_ahead(const sl_store *s)
{
    return s->vt->fetched != NULL;
}

bool
sl__store_fetched(sl_store *s, const char *key)
{
    return s->vt->fetched != NULL && s->vt->fetched(s, key);
}

bool
sl__store_has_first(sl_store *s, const char *key, const struct sl_byte_range *first)
{
    return s->vt->has_first != NULL && s->vt->has_first(s, key, first);
}

unsigned
sl__store_set_writers(const sl_store *s)
{
    return s->vt->set_writers;
}

/* Keys collected by a listing, NUL-separated in one growing buffer. */
struct key_list {
    char *text;
    size_t len, cap;
    const char *path; /* the node whose keys are wanted */
    size_t path_len;
};

static sl_status
key_list_add(void *arg, const char *key, uint64_t bytes)
{
    (void)bytes;
    struct key_list *k = arg;
    if (k->path_len > 0 && key[k->path_len] != '\0' && key[k->path_len] != '/')
        return SL_OK; /* "a/bc" under "a/b" */
    size_t n = strlen(key) + 1;
    if (k->len + n > k->cap) {
        size_t cap = k->cap > 0 ? k->cap * 2 : 4096;
        while (cap < k->len + n)
            cap *= 2;
        char *grown = realloc(k->text, cap);
        if (grown == NULL)
            return SL_ENOMEM;
        k->text = grown;
        k->cap = cap;
    }
    memcpy(k->text + k->len, key, n);
    k->len += n;
    return SL_OK;
}

sl_status
sl_store_delete_tree(sl_store *s, const char *path, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (s == NULL || path == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "store or path is missing");
    struct key_list k = {.path = path, .path_len = strlen(path)};
    sl_status st = sl_store_list(s, path, key_list_add, &k, err);
    if (st == SL_ENOMEM)
        sl_error_set(err, st, NULL, "out of memory listing the keys under \"%s\"", path);
    if (st == SL_OK && s->vt->del_keys != NULL && k.len > 0) {
        /* The kind deletes many keys per request (S3's DeleteObjects). */
        size_t n = 0;
        for (size_t at = 0; at < k.len; at += strlen(k.text + at) + 1)
            n++;
        const char **keys = malloc(n * sizeof(*keys));
        if (keys == NULL) {
            free(k.text);
            return sl_error_set(err, SL_ENOMEM, NULL,
                                "out of memory deleting the %zu keys under \"%s\"", n, path);
        }
        n = 0;
        for (size_t at = 0; at < k.len; at += strlen(k.text + at) + 1)
            keys[n++] = k.text + at;
        atomic_fetch_add_explicit(&s->n_delete, n, memory_order_relaxed);
        st = s->vt->del_keys(s, path, keys, n, err);
        free(keys);
        free(k.text);
        return st;
    }
    for (size_t at = 0; st == SL_OK && at < k.len; at += strlen(k.text + at) + 1)
        st = sl_store_delete(s, k.text + at, err);
    free(k.text);
    return st;
}
