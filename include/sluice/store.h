/* SPDX-License-Identifier: MIT */
/*
 * Stores: maps from string keys ("arr/c/0/1") to byte objects.  A filesystem
 * store keeps each object in a file under a root directory and writes it
 * atomically; a memory store serves tests and scratch work.  Both are
 * opaque, refcounted and safe for concurrent get, set and delete of
 * different keys from many threads.
 *
 * Every system call of the filesystem store goes through a `struct
 * sl_io_table`, so tests can count calls, fail chosen ones and shorten
 * writes (crash, ENOSPC and "written exactly once" tests).
 */
#ifndef SL_STORE_H
#define SL_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sluice/alloc.h>
#include <sluice/buf.h>
#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The longest key a store accepts, in bytes, and the longest component. */
#define SL_STORE_KEY_MAX 1024
#define SL_STORE_KEY_COMPONENT_MAX 255

/* ---- byte ranges ---------------------------------------------------------- */

/* Which bytes of an object a read wants. */
typedef enum sl_range_kind {
    SL_RANGE_ALL,    /* the whole object */
    SL_RANGE_FROM,   /* `length` bytes from `offset` (SL_RANGE_TO_END: the rest) */
    SL_RANGE_SUFFIX, /* the last `length` bytes */
} sl_range_kind;

#define SL_RANGE_TO_END UINT64_MAX

struct sl_byte_range {
    sl_range_kind kind; /* how to read offset and length */
    uint64_t offset;    /* SL_RANGE_FROM: first byte */
    uint64_t length;    /* SL_RANGE_FROM, SL_RANGE_SUFFIX: bytes wanted */
};

/** The range [offset, offset + length).  Thread-safety: any thread. */
static inline struct sl_byte_range
sl_byte_range_at(uint64_t offset, uint64_t length)
{
    struct sl_byte_range r = {SL_RANGE_FROM, offset, length};
    return r;
}

/** The last `length` bytes.  Thread-safety: any thread. */
static inline struct sl_byte_range
sl_byte_range_suffix(uint64_t length)
{
    struct sl_byte_range r = {SL_RANGE_SUFFIX, 0, length};
    return r;
}

/* ---- the I/O table -------------------------------------------------------- */

/* Kind of a file system entry. */
typedef enum sl_io_kind { SL_IO_FILE, SL_IO_DIR, SL_IO_LINK, SL_IO_OTHER } sl_io_kind;

/* What fstat and lstat report. */
struct sl_io_stat {
    uint64_t size;   /* bytes (files) */
    sl_io_kind kind; /* file, directory, symbolic link or other */
};

/* Called once per directory entry ("." and ".." excluded); return 0 to go on,
 * anything else to stop listing and have list_dir return it. */
typedef int sl_io_dir_fn(void *arg, const char *name, sl_io_kind kind);

/*
 * The system calls of the filesystem store.  Each returns a value >= 0 on
 * success and a negated errno value (-ENOSPC) on failure, never touching
 * `errno` as the contract.  sl_io_table_default() calls the C library; a
 * test wraps it to count calls, fail the n-th one or shorten a write.
 * `ctx` is passed back untouched.  All functions may be called from many
 * threads at once.
 */
struct sl_io_table {
    void *ctx; /* implementation state */
    /* open(2): `flags` and `mode` as for open; returns a descriptor. */
    int (*open)(void *ctx, const char *path, int flags, unsigned mode);
    /* close(2). */
    int (*close)(void *ctx, int fd);
    /* pread(2): returns the bytes read, 0 at end of file. */
    int64_t (*pread)(void *ctx, int fd, void *buf, size_t n, uint64_t offset);
    /* write(2): returns the bytes written, which may be fewer than `n`. */
    int64_t (*write)(void *ctx, int fd, const void *buf, size_t n);
    /* fsync(2), on files and on directories opened read-only. */
    int (*fsync)(void *ctx, int fd);
    /* fstat(2), reduced to size and kind. */
    int (*fstat)(void *ctx, int fd, struct sl_io_stat *st);
    /* lstat(2), reduced to size and kind (a symbolic link is SL_IO_LINK). */
    int (*lstat)(void *ctx, const char *path, struct sl_io_stat *st);
    /* rename(2). */
    int (*rename)(void *ctx, const char *from, const char *to);
    /* unlink(2). */
    int (*unlink)(void *ctx, const char *path);
    /* mkdir(2). */
    int (*mkdir)(void *ctx, const char *path, unsigned mode);
    /* realpath(3) into `resolved` of `size` bytes. */
    int (*realpath)(void *ctx, const char *path, char *resolved, size_t size);
    /* opendir/readdir/closedir: call `fn` for each entry of directory `path`. */
    int (*list_dir)(void *ctx, const char *path, sl_io_dir_fn *fn, void *arg);
    /* syncfs(2) on the file system holding open descriptor `fd`.  NULL in a
     * table: stores opened with `defer_sync` refuse the table. */
    int (*syncfs)(void *ctx, int fd);
    /* posix_fadvise(2) with POSIX_FADV_WILLNEED: start reading `length`
     * bytes at `offset` of `fd` (0: to the end) into the page cache
     * without waiting.  NULL in a table: the store reads nothing ahead. */
    int (*willneed)(void *ctx, int fd, uint64_t offset, uint64_t length);
};

/** The table that calls the C library.  Never NULL; static.  Thread-safety: any thread. */
SL_API const struct sl_io_table *sl_io_table_default(void);

/* ---- stores --------------------------------------------------------------- */

typedef struct sl_store sl_store;

/* Options of the filesystem store. */
struct sl_fs_store_opts {
    bool durable;                     /* also fsync the directory after each rename,
                                         unlink and mkdir, so a change survives a crash */
    bool create;                      /* make the root directory when it is missing */
    bool read_only;                   /* refuse set and delete with SL_EACCES */
    bool direct_writes;               /* objects of 1 MiB or more whose bytes start on a
                                         4096-byte boundary bypass the page cache (O_DIRECT;
                                         the ordinary way where the file system refuses it) */
    const struct sl_io_table *io;     /* borrowed, must outlive the store; NULL: default */
    const struct sl_allocator *alloc; /* copied; NULL: the default allocator */
    bool defer_sync;                  /* no fsync per object: sl_store_sync makes what was
                                         written durable at once (syncfs(2)); for outputs
                                         staged out of sight until a commit that syncs
                                         first; not with `durable` (default false) */
    uint64_t read_ahead_bytes;        /* hints of reads to come (sl_store_reads_ahead)
                                         start the kernel reading at most this many bytes
                                         ahead of the reads; later hints wait their turn
                                         (default 32 MiB); 0: hints are ignored */
};
/**
 * SL_FS_STORE_OPTS_DEFAULT's value (the defaults) as a function, for C and C++ alike: every
 * field not named below is zero.
 * Thread-safety: any thread.
 */
static inline struct sl_fs_store_opts
sl_fs_store_opts_default(void)
{
    struct sl_fs_store_opts o;
    memset(&o, 0, sizeof o);
    o.create = true;
    o.direct_writes = true;
    o.read_ahead_bytes = (uint64_t)32 << 20;
    return o;
}
#define SL_FS_STORE_OPTS_DEFAULT (sl_fs_store_opts_default())

/**
 * Open a filesystem store rooted at directory `root`.  Keys map to paths
 * under it ("a/c/0" is `root`/a/c/0).  Each set writes a temporary file in
 * the target directory, writes it fully, fsyncs it (unless `defer_sync`:
 * see sl_store_sync) and renames it over the target, so readers see the
 * old or the new object, never a mix.  Large
 * page-aligned objects bypass the page cache (`direct_writes`).  Keys that
 * could leave the root are refused (see sl_store_set), and so are keys that
 * resolve outside it through symbolic links.
 *
 * @param opts  NULL for SL_FS_STORE_OPTS_DEFAULT.
 * @return a store with one reference (release with sl_store_unref), or NULL
 * with SL_ENOTFOUND (root missing and `create` false), SL_EIO, SL_EACCES or
 * SL_ENOMEM in `err`.
 * Thread-safety: any thread.
 */
SL_API sl_store *sl_store_open_fs(const char *root, const struct sl_fs_store_opts *opts,
                                  struct sl_error *err);

/* Operations a memory store reports to its hook. */
typedef enum sl_store_op { SL_STORE_OP_GET, SL_STORE_OP_SET, SL_STORE_OP_DELETE } sl_store_op;

/* Called before each memory-store operation with its key and, for sets, the
 * byte count; return 0 to let it run or a negated errno value (-ENOSPC) to
 * fail it.  May be called from many threads at once. */
typedef int sl_mem_store_hook(void *ctx, sl_store_op op, const char *key, size_t bytes);

/* Options of the memory store. */
struct sl_mem_store_opts {
    const struct sl_allocator *alloc; /* copied; NULL: the default allocator */
    sl_mem_store_hook *hook;          /* NULL: none */
    void *hook_ctx;                   /* passed to `hook` */
};
/**
 * SL_MEM_STORE_OPTS_DEFAULT's value (the defaults) as a function, for C and C++ alike: every
 * field not named below is zero.
 * Thread-safety: any thread.
 */
static inline struct sl_mem_store_opts
sl_mem_store_opts_default(void)
{
    struct sl_mem_store_opts o;
    memset(&o, 0, sizeof o);

    return o;
}
#define SL_MEM_STORE_OPTS_DEFAULT (sl_mem_store_opts_default())

/**
 * Create an empty store in memory.  @param opts NULL for the default.
 * @return a store with one reference, or NULL with SL_ENOMEM in `err`.
 * Thread-safety: any thread.
 */
SL_API sl_store *sl_store_create_memory(const struct sl_mem_store_opts *opts, struct sl_error *err);

/** Take a reference.  Thread-safety: any thread. */
SL_API void sl_store_ref(sl_store *s);

/**
 * Drop a reference; the last one closes the store.  NULL is a no-op.
 * Thread-safety: any thread.
 */
SL_API void sl_store_unref(sl_store *s);

/**
 * Read object `key`, or the part `range` names (NULL: all of it), into
 * `out` (replacing its contents).  `object_bytes`, when not NULL, receives
 * the whole object's size.  The bytes come from one version of the object
 * even while another thread replaces it.
 * @return SL_OK; SL_ENOTFOUND when there is no such object; SL_EBOUNDS when
 * the range reaches past its end; SL_EACCES for a refused key; SL_EIO or
 * SL_ENOMEM.  Messages name the key.
 * Thread-safety: any thread, concurrently with every other operation of the
 * store.
 */
SL_API SL_NODISCARD sl_status sl_store_get(sl_store *s, const char *key,
                                           const struct sl_byte_range *range, struct sl_buf *out,
                                           uint64_t *object_bytes, struct sl_error *err);

/**
 * The size of object `key` in `*bytes`.
 * @return SL_OK, SL_ENOTFOUND, SL_EACCES or SL_EIO.
 * Thread-safety: any thread, concurrently with every other operation of the
 * store.
 */
SL_API SL_NODISCARD sl_status sl_store_size(sl_store *s, const char *key, uint64_t *bytes,
                                            struct sl_error *err);

/**
 * Store `n` bytes as object `key`, replacing any previous one atomically.
 * Keys are 1 to SL_STORE_KEY_MAX bytes of '/'-separated components; a key
 * that is absolute, has an empty, "." or ".." component, a backslash, a NUL
 * or a component starting with ".sluice-tmp." is refused with SL_EACCES
 * naming it.
 * @return SL_OK, SL_EACCES (refused key, read-only store), SL_ENOSPC,
 * SL_EEXIST (a key prefix is an object), SL_EIO or SL_ENOMEM.  On failure
 * the previous object, if any, is intact.
 * Thread-safety: any thread, concurrently with every other operation of the
 * store.
 */
SL_API SL_NODISCARD sl_status sl_store_set(sl_store *s, const char *key, const void *data, size_t n,
                                           struct sl_error *err);

/**
 * Remove object `key`; removing an absent key succeeds.
 * @return SL_OK, SL_EACCES or SL_EIO.
 * Thread-safety: any thread, concurrently with every other operation of the
 * store.
 */
SL_API SL_NODISCARD sl_status sl_store_delete(sl_store *s, const char *key, struct sl_error *err);

/**
 * Make durable every object set or deleted through `s` before the call.  A
 * filesystem store opened with `defer_sync` writes back its root's file
 * system (syncfs(2) through its I/O table, on a descriptor opened with the
 * store, so that any write-back error since the store opened is reported
 * here, whichever object it hit); every other store made each write durable
 * as it went, and returns SL_OK.
 * @return SL_OK, or SL_EIO naming the store's root: then some object written
 * since the store opened may be lost to a crash (which one is not known).
 * Thread-safety: any thread; it covers the writes that returned before it.
 */
SL_API SL_NODISCARD sl_status sl_store_sync(sl_store *s, struct sl_error *err);

/**
 * Remove node `path` whole: every object whose key is `path` or starts with
 * `path` + "/" ("" removes everything in the store).  Not atomic: a failure
 * leaves part of it.  Most stores delete key by key; an S3 store deletes
 * up to 1000 keys per DeleteObjects request.
 * @return SL_OK, SL_EACCES (refused path, read-only store), SL_EIO or
 * SL_ENOMEM, naming the key that failed; a remote store's SL_EHTTP,
 * SL_ENETWORK or SL_ETIMEDOUT (for S3: naming `path`, and each key S3
 * refused with its code and message).
 * Thread-safety: any thread; objects set under `path` meanwhile may stay.
 */
SL_API SL_NODISCARD sl_status sl_store_delete_tree(sl_store *s, const char *path,
                                                   struct sl_error *err);

/* Called by sl_store_list once per key; a status other than SL_OK stops the
 * listing and is returned. */
typedef sl_status sl_store_list_fn(void *arg, const char *key, uint64_t bytes);

/**
 * Call `fn` for every key starting with `prefix` ("" for all), in byte
 * order of the key.  The filesystem store does not follow symbolic links to
 * directories and skips links that lead outside its root.
 * @return SL_OK, what `fn` returned, SL_EACCES (refused prefix), SL_EIO or
 * SL_ENOMEM.
 * Thread-safety: any thread, concurrently with every other operation of the
 * store.
 */
SL_API SL_NODISCARD sl_status sl_store_list(sl_store *s, const char *prefix, sl_store_list_fn *fn,
                                            void *arg, struct sl_error *err);

/**
 * Whether every object of `ref` is in `other` with the same bytes (objects
 * only `other` holds are not looked at).  A resumed run checks with it
 * that the metadata its build makes (in a memory store) is what the
 * earlier run wrote where the run goes on writing in place.
 * @param first  gets the first key of `ref`, in byte order, that `other`
 * lacks or holds other bytes of; "" when every one matched (`size` bytes).
 * @param missing  set when that key is missing from `other`.
 * @return SL_OK (with `first` saying whether all matched), or the error
 * of listing `ref` or of reading `other` (other than SL_ENOTFOUND).
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_store_objects_match(sl_store *ref, sl_store *other, char *first,
                                                     size_t size, bool *missing,
                                                     struct sl_error *err);

/* Operation counts of a store since it was opened. */
struct sl_store_stats {
    uint64_t n_get;         /* reads of objects or byte ranges */
    uint64_t n_set;         /* objects written */
    uint64_t n_delete;      /* delete calls */
    uint64_t n_list;        /* list calls */
    uint64_t bytes_read;    /* bytes returned by reads */
    uint64_t bytes_written; /* bytes passed to successful sets */
};

/** Copy the store's counters into `out`.  Thread-safety: any thread. */
SL_API void sl_store_get_stats(const sl_store *s, struct sl_store_stats *out);

/** "fs" or "memory".  Thread-safety: any thread. */
SL_API const char *sl_store_kind(const sl_store *s);

/**
 * Whether hints of reads to come (sl_array_prefetch_chunk) make `s` start
 * them early: a remote store fetches the objects, a filesystem store asks
 * the kernel to read the files into the page cache, `read_ahead_bytes` ahead
 * of the reads at most (when that is not 0 and its I/O table has
 * `willneed`); a memory store has nothing to start.  A hint never changes
 * what a read returns.
 * Thread-safety: any thread.
 */
SL_API bool sl_store_reads_ahead(const sl_store *s);

/**
 * Name object or node `key` of `s` for messages, as the user would type it:
 * a filesystem store joins its root as given to sl_store_open_fs with the
 * key and quotes the result (`"in.zarr"` for key "", `"in.zarr/c/0"`); a
 * memory store says `memory store key "c/0"` (`memory store root` for "").
 * Writes into `buf`, always NUL-terminated when `size` > 0.
 * @return the length the full name needs, as snprintf does.
 * Thread-safety: any thread.
 */
SL_API size_t sl_store_name(const sl_store *s, const char *key, char *buf, size_t size);

/* ---- stores of the program's own ------------------------------------------------- */

/* A read of a program's own store in progress (struct sl_store_impl.get_async). */
typedef struct sl_store_read sl_store_read;

/*
 * A store the program implements: a chunk store laid out its own way (as
 * katdal's), a client sluice does not have.  sluice reads it through the
 * same machinery as its HTTP store: a window of reads in flight whatever
 * the number of workers, retries with backoff of transient failures,
 * fetching ahead what the executor and batched reads hint (within
 * `prefetch_bytes`), and per-chunk errors in the status arrays.
 */
struct sl_store_impl {
    const char *kind; /* a short name for messages ("katdal"); keys are named
                         "<kind>://<key>"; NULL: "custom" */
    /*
     * Read object `key`, or the part `range` names (SL_RANGE_ALL: all of
     * it), into `out` (empty; append the bytes), and the whole object's size
     * into `*object_bytes` (needed for SL_RANGE_SUFFIX; 0: the bytes given,
     * for a whole object).  A range must come back exactly (a suffix longer
     * than the object: the whole object).  Return SL_OK; SL_ENOTFOUND for
     * an absent object (read as the fill value); SL_EBOUNDS for a range past
     * its end; else a failure described in `err`: SL_ENETWORK, SL_ETIMEDOUT
     * and SL_EIO are retried with backoff, anything else is final.  Called
     * from many threads at once.  Required unless `get_async` is set.
     */
    sl_status (*get)(void *ctx, const char *key, const struct sl_byte_range *range,
                     struct sl_buf *out, uint64_t *object_bytes, struct sl_error *err);
    /*
     * The same read, started and left to run: return at once and end it
     * later, from any thread, with sl_store_read_done (append the bytes to
     * sl_store_read_buf(rd) first).  At most `io_concurrency` reads are
     * outstanding.  NULL: sluice calls `get` on `io_concurrency` threads of
     * the store's own.
     */
    void (*get_async)(void *ctx, const char *key, const struct sl_byte_range *range,
                      sl_store_read *rd);
    /* Store an object; NULL: the store is read-only (SL_EACCES).  Called
     * from several threads at once (up to 4 writers of a transaction, and
     * pool workers), never twice at once for one key. */
    sl_status (*set)(void *ctx, const char *key, const void *data, size_t n, struct sl_error *err);
    /* Remove an object (absent: SL_OK); NULL: read-only (SL_EACCES). */
    sl_status (*del)(void *ctx, const char *key, struct sl_error *err);
    /* Call `fn` for each key under `prefix`, in byte order; NULL: the store
     * cannot list (SL_EUNSUPPORTED). */
    sl_status (*list)(void *ctx, const char *prefix, sl_store_list_fn *fn, void *arg,
                      struct sl_error *err);
    /* Called once, at the last sl_store_unref, after every read ended;
     * NULL: nothing. */
    void (*destroy)(void *ctx);
};

/* Options of a program's own store, with their defaults. */
struct sl_custom_store_opts {
    unsigned io_concurrency;          /* reads outstanding at most (64) */
    unsigned max_attempts;            /* tries per read, the first included (10) */
    double backoff_first_s;           /* a first retry waits up to this, doubling (0.1 s) */
    double backoff_cap_s;             /* no wait longer than this (15 s) */
    double request_deadline_s;        /* no retry starts after this (300 s) */
    uint64_t prefetch_bytes;          /* bytes fetched ahead at most (256 MiB); 0: none */
    const struct sl_allocator *alloc; /* copied; NULL: the default allocator */
};
/**
 * SL_CUSTOM_STORE_OPTS_DEFAULT's value (the defaults) as a function, for C and C++ alike: every
 * field not named below is zero.
 * Thread-safety: any thread.
 */
static inline struct sl_custom_store_opts
sl_custom_store_opts_default(void)
{
    struct sl_custom_store_opts o;
    memset(&o, 0, sizeof o);
    o.io_concurrency = 64;
    o.max_attempts = 10;
    o.backoff_first_s = 0.1;
    o.backoff_cap_s = 15;
    o.request_deadline_s = 300;
    o.prefetch_bytes = (uint64_t)256 << 20;
    return o;
}
#define SL_CUSTOM_STORE_OPTS_DEFAULT (sl_custom_store_opts_default())

/**
 * Open a store whose objects the program reads (and optionally writes)
 * through `impl`.  `impl` and `ctx` must outlive the store; `impl->destroy`
 * (if any) is called with `ctx` at the last unref, which first waits for
 * every outstanding get_async to end.
 * @param opts  NULL for SL_CUSTOM_STORE_OPTS_DEFAULT.
 * @return a store with one reference, or NULL with SL_EINVAL (no get and no
 * get_async, an option out of range), SL_EIO (no thread could start) or
 * SL_ENOMEM in `err`.
 * Thread-safety: any thread.
 */
SL_API sl_store *sl_store_open_custom(const struct sl_store_impl *impl, void *ctx,
                                      const struct sl_custom_store_opts *opts,
                                      struct sl_error *err);

/** The buffer a get_async appends its bytes to.  Thread-safety: the read's owner. */
SL_API struct sl_buf *sl_store_read_buf(sl_store_read *rd);

/**
 * End a read started by get_async, exactly once, from any thread: with
 * SL_OK and the whole object's size in `object_bytes` (as for get), or
 * with a status as get returns it and `err` (may be NULL) saying why.
 * `rd` is invalid afterwards.
 * Thread-safety: any thread.
 */
SL_API void sl_store_read_done(sl_store_read *rd, sl_status status, uint64_t object_bytes,
                               const struct sl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SL_STORE_H */
