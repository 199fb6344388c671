/* SPDX-License-Identifier: MIT */
/*
 * Zarr arrays (v2 and v3) in a store: open or create one, read its
 * metadata, and read or write whole chunks or any region, with the fill
 * value wherever nothing is stored.  Arrays are opaque and refcounted; their
 * metadata is immutable after open, and different chunks may be read and
 * written from many threads at once.
 *
 * Chunk buffers are always a whole chunk (the inner chunk of a sharded
 * array) in C order and this machine's byte order, edge chunks included at
 * full size: what lies outside the array is padding that writes fill with
 * the fill value.  <sluice/array_io.h> declares the chunk and region I/O.
 */
#ifndef SL_ARRAY_H
#define SL_ARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sluice/codec.h>
#include <sluice/common.h>
#include <sluice/dtype.h>
#include <sluice/error.h>
#include <sluice/grid.h>
#include <sluice/status.h>
#include <sluice/store.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Caps on what metadata may describe; larger values are refused on open
 * with SL_EOVERFLOW, so hostile metadata cannot make sluice allocate them. */
#define SL_CHUNK_MAX_BYTES ((size_t)1 << 30)    /* one decoded (inner) chunk */
#define SL_SHARD_MAX_CHUNKS ((uint64_t)1 << 22) /* inner chunks in one shard */

typedef struct sl_array sl_array;

/* Options of an open array. */
struct sl_array_opts {
    bool write_fill_chunks;           /* store chunks equal to the fill value
                                         (default: delete them instead) */
    const struct sl_allocator *alloc; /* copied; NULL: the default allocator */
};
/**
 * SL_ARRAY_OPTS_DEFAULT's value (the defaults) as a function, for C and C++ alike: every
 * field not named below is zero.
 * Thread-safety: any thread.
 */
static inline struct sl_array_opts
sl_array_opts_default(void)
{
    struct sl_array_opts o;
    memset(&o, 0, sizeof o);

    return o;
}
#define SL_ARRAY_OPTS_DEFAULT (sl_array_opts_default())

/* What sl_array_create makes. */
struct sl_array_spec {
    int zarr_format;                          /* 3 (default) or 2 */
    uint32_t rank;                            /* dimensions, 0..SL_MAX_RANK */
    uint64_t shape[SL_MAX_RANK];              /* array shape */
    sl_dtype dtype;                           /* element type */
    uint64_t chunk_shape[SL_MAX_RANK];        /* chunk shape; inner chunk shape when sharded */
    uint64_t shard_shape[SL_MAX_RANK];        /* all zero: unsharded; else a multiple of
                                                 chunk_shape (v3 only) */
    struct sl_codec_spec codec;               /* compressor of each (inner) chunk */
    bool checksum;                            /* append crc32c to each chunk (v3 only) */
    sl_endian endian;                         /* byte order stored */
    bool order_f;                             /* store chunks in Fortran order (v2 "F",
                                                 v3 a reversing transpose) */
    bool index_at_start;                      /* sharded: index before the chunks */
    const void *fill_value;                   /* one element, native order; NULL: zero */
    const char *dimension_names[SL_MAX_RANK]; /* NULL entries: unnamed; all NULL: none */
    const char *attributes_json;              /* a JSON object, or NULL for {} */
    char separator;                           /* '/' or '.'; 0: v3 '/', v2 '.' */
    bool overwrite;                           /* replace what is at the path whole: every
                                                 object under it is deleted first (not
                                                 atomic; sl_fs_replace_begin is) */
};
/**
 * SL_ARRAY_SPEC_DEFAULT's value (the defaults) as a function, for C and C++ alike: every
 * field not named below is zero.
 * Thread-safety: any thread.
 */
static inline struct sl_array_spec
sl_array_spec_default(void)
{
    struct sl_array_spec o;
    memset(&o, 0, sizeof o);
    o.zarr_format = 3;
    o.dtype = SL_DTYPE_U8;
    o.codec = SL_CODEC_SPEC_DEFAULT;
    o.endian = SL_ENDIAN_LITTLE;
    return o;
}
#define SL_ARRAY_SPEC_DEFAULT (sl_array_spec_default())

/**
 * Open the array at `path` in `store` ("" for the store's root): reads
 * `path`/zarr.json (v3) or `path`/.zarray and .zattrs (v2).
 * @param store  retained by the array.
 * @param opts   NULL for SL_ARRAY_OPTS_DEFAULT.
 * @return an array with one reference (release with sl_array_unref), or
 * NULL with: SL_ENOTFOUND (no array there; SL_EINVAL when it is a group);
 * SL_EPARSE (malformed metadata: line and column, or a JSON pointer);
 * SL_EUNSUPPORTED naming the codec, filter or data type sluice lacks;
 * SL_EOVERFLOW (sizes beyond the caps above); SL_EIO; SL_ENOMEM.
 * Thread-safety: any thread.
 */
SL_API sl_array *sl_array_open(sl_store *store, const char *path, const struct sl_array_opts *opts,
                               struct sl_error *err);

/**
 * Create an array at `path` from `spec`, writing its metadata, and open it.
 * @return the open array, or NULL with SL_EINVAL (inconsistent spec, naming
 * the field), SL_EEXIST (an array or group is there and `overwrite` is
 * false), SL_EUNSUPPORTED (e.g. sharding or crc32c in v2), or a store error
 * (SL_EACCES, SL_ENOSPC, SL_EIO, SL_ENOMEM).
 * Thread-safety: any thread.
 */
SL_API sl_array *sl_array_create(sl_store *store, const char *path,
                                 const struct sl_array_spec *spec, const struct sl_array_opts *opts,
                                 struct sl_error *err);

/** Take a reference.  Thread-safety: any thread. */
SL_API void sl_array_ref(sl_array *a);

/** Drop a reference; the last one frees the array.  NULL is a no-op.  Thread-safety: any thread. */
SL_API void sl_array_unref(sl_array *a);

/* ---- metadata (immutable; any thread) ------------------------------------ */

/** 2 or 3.  Thread-safety: any thread (the metadata is immutable). */
SL_API int sl_array_zarr_format(const sl_array *a);
/** Number of dimensions.  Thread-safety: any thread (the metadata is immutable). */
SL_API uint32_t sl_array_rank(const sl_array *a);
/**
 * Shape, rank entries; valid while the array lives.
 * Thread-safety: any thread (the metadata is immutable).
 */
SL_API const uint64_t *sl_array_shape(const sl_array *a);
/** Element type.  Thread-safety: any thread (the metadata is immutable). */
SL_API sl_dtype sl_array_dtype(const sl_array *a);
/**
 * Shape of the chunks read and written: the inner chunk when sharded.
 * Thread-safety: any thread (the metadata is immutable).
 */
SL_API const uint64_t *sl_array_chunk_shape(const sl_array *a);
/**
 * Shape of a shard, or NULL when the array is not sharded.
 * Thread-safety: any thread (the metadata is immutable).
 */
SL_API const uint64_t *sl_array_shard_shape(const sl_array *a);
/**
 * Bytes of one chunk buffer (the product of the chunk shape and the element size).
 * Thread-safety: any thread (the metadata is immutable).
 */
SL_API size_t sl_array_chunk_bytes(const sl_array *a);
/**
 * The fill value: one element, native byte order (zero for a v2 null).
 * Thread-safety: any thread (the metadata is immutable).
 */
SL_API const void *sl_array_fill_value(const sl_array *a);
/**
 * Name of dimension `dim`, or NULL when it has none.
 * Thread-safety: any thread (the metadata is immutable).
 */
SL_API const char *sl_array_dimension_name(const sl_array *a, uint32_t dim);
/**
 * The attributes as compact JSON object text ("{}" when none).
 * Thread-safety: any thread (the metadata is immutable).
 */
SL_API const char *sl_array_attributes(const sl_array *a);
/**
 * The array's path in its store, "" for the store's root (borrowed).
 * Thread-safety: any thread (the metadata is immutable).
 */
SL_API const char *sl_array_path(const sl_array *a);
/**
 * The store the array lives in (borrowed).
 * Thread-safety: any thread (the metadata is immutable).
 */
SL_API sl_store *sl_array_store(const sl_array *a);

/**
 * Describe the codecs, e.g. "bytes(little) > zstd(level=1)" or
 * "sharding_indexed(inner=[32,32], index=end: bytes(little) > crc32c) >
 * bytes(little) > zstd(level=1)".  @return the length the full text needs.
 * Thread-safety: any thread (the metadata is immutable).
 */
SL_API size_t sl_array_codecs_describe(const sl_array *a, char *buf, size_t size);

/**
 * Describe the fill value as zarr.json would spell it ("0", "NaN",
 * "[1.0, 0.0]", "null").  @return the length the full text needs.
 * Thread-safety: any thread (the metadata is immutable).
 */
SL_API size_t sl_array_fill_describe(const sl_array *a, char *buf, size_t size);

/**
 * The grid of chunks read and written (inner chunks when sharded).
 * The grid allocates nothing.  @return SL_OK always; the status keeps the
 * shape of the grid calls.
 * Thread-safety: any thread (the metadata is immutable).
 */
SL_API SL_NODISCARD sl_status sl_array_chunk_grid(const sl_array *a, struct sl_grid *out,
                                                  struct sl_error *err);

/**
 * The grid of stored objects: shards when sharded, else the chunk grid.
 * @return SL_OK always, as sl_array_chunk_grid.
 * Thread-safety: any thread (the metadata is immutable).
 */
SL_API SL_NODISCARD sl_status sl_array_shard_grid(const sl_array *a, struct sl_grid *out,
                                                  struct sl_error *err);

/**
 * The store key of the object holding chunk `coords` (its shard when
 * sharded), e.g. "arr/c/0/1".  @return the length the full key needs.
 * Thread-safety: any thread (the metadata is immutable).
 */
SL_API size_t sl_array_chunk_key(const sl_array *a, const uint64_t *coords, char *buf, size_t size);

/* ---- zarr nodes: arrays and groups
 * -------------------------------------------------------------------- */

/* What a path in a store holds. */
typedef enum sl_zarr_kind {
    SL_ZARR_NONE,  /* nothing recognized */
    SL_ZARR_ARRAY, /* an array */
    SL_ZARR_GROUP, /* a group */
} sl_zarr_kind;

/**
 * Look at `path` in `store`: an array or group, and which Zarr format.
 * `zarr_format` may be NULL.  @return SL_OK (with SL_ZARR_NONE when nothing
 * is there), SL_EPARSE for an unreadable zarr.json, or a store error
 * (SL_EACCES, SL_EIO, SL_ENOMEM).
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_zarr_probe(sl_store *store, const char *path, sl_zarr_kind *kind,
                                            int *zarr_format, struct sl_error *err);

/**
 * Make room for a new node at `path` of `store` where it is written in
 * place (an s3:// store, which cannot rename a prefix): nothing stored
 * under `path` is room; a Zarr array or group there is room only when
 * `overwrite`, and is then deleted key by key when `clear` (with `clear`
 * false this only checks, as a validation pass that must write nothing
 * does); any other object under `path` is never room.  Not atomic: the old
 * node is gone before the new one is written.
 * @param existed  may be NULL; set when a Zarr node was there.
 * @return SL_OK, SL_EEXIST (a Zarr node and not `overwrite`: the text says
 * "already holds a Zarr v3 array; replacing it needs the overwrite
 * option"; or objects that are no Zarr node), SL_EPARSE (an unreadable
 * zarr.json) or the store's error (listing or deleting: SL_EACCES,
 * SL_EIO, SL_ENOMEM); a failed delete may leave part of the old node.
 * Thread-safety: any thread; nothing else may write under `path` meanwhile.
 */
SL_API SL_NODISCARD sl_status sl_zarr_make_room(sl_store *store, const char *path, bool overwrite,
                                                bool clear, bool *existed, struct sl_error *err);

/**
 * Create a group at `path` (zarr.json with node_type "group", or v2
 * .zgroup and .zattrs).  `attributes_json` may be NULL.
 * @return SL_OK, SL_EINVAL (not a JSON object), SL_EEXIST or a store error
 * (SL_EACCES, SL_ENOSPC, SL_EIO, SL_ENOMEM).
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_group_create(sl_store *store, const char *path, int zarr_format,
                                              const char *attributes_json, struct sl_error *err);

/**
 * sl_zarr_probe, and for a group also its attributes (as
 * sl_group_attributes gives them) into `attrs` (may be NULL), from the same
 * read of a v3 zarr.json (v2: one more, of .zattrs), so that looking at a
 * remote group costs one request.
 * @return as sl_zarr_probe; for a group, also sl_group_attributes' SL_EPARSE.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_zarr_read_node(sl_store *store, const char *path,
                                                sl_zarr_kind *kind, int *zarr_format,
                                                struct sl_buf *attrs, struct sl_error *err);

/**
 * A group's own attributes (v3 zarr.json "attributes", v2 .zattrs) as
 * compact JSON object text in `out` (replacing its contents; NUL
 * terminated past `out->size`), "{}" when it has none.
 * @return SL_OK; SL_ENOTFOUND when nothing is at `path`; SL_EINVAL when
 * an array is; SL_EPARSE for attributes that are not a JSON object (the
 * key in the source); SL_EACCES for a path that is not a valid key; a
 * store error.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_group_attributes(sl_store *store, const char *path,
                                                  struct sl_buf *out, struct sl_error *err);

/* ---- a group's members
 * -------------------------------------------------------------------- */

/* One node below a group, as sl_group_members hands it over.  Valid only
 * during the callback. */
struct sl_group_member {
    sl_store *store;       /* the group's store (not retained) */
    const char *path;      /* from the store's root, e.g. "g/a" */
    sl_zarr_kind kind;     /* SL_ZARR_ARRAY, SL_ZARR_GROUP, or SL_ZARR_NONE (unreadable) */
    int zarr_format;       /* 2 or 3 */
    bool consolidated;     /* described by the group's consolidated metadata */
    const void *internal_; /* sluice's: the consolidated entry sl_group_member_open reads */
};

/* Called once per member; a status other than SL_OK stops the walk and is
 * returned. */
typedef sl_status sl_group_member_fn(void *arg, const struct sl_group_member *m);

/**
 * Hand every array and group below the group at `path` (nested ones too;
 * not the group itself) to `fn`.  Consolidated metadata is used when the
 * group has it (a v3 zarr.json's inline "consolidated_metadata", else a v2
 * ".zmetadata"), so the walk costs one read; otherwise the store is listed
 * and each node probed.
 * @return SL_OK; SL_EUNSUPPORTED when there is no consolidated metadata and
 * the store cannot list (HTTP); SL_EPARSE for malformed consolidated
 * metadata (its key in the source, a JSON pointer to the bad entry);
 * SL_EINVAL when `path` holds an array; `fn`'s status; a store error.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_group_members(sl_store *store, const char *path,
                                               sl_group_member_fn *fn, void *arg,
                                               struct sl_error *err);

/**
 * Open member `m` (inside sl_group_members' callback) as an array: from its
 * consolidated entry without reading the store, else as sl_array_open does.
 * @return as sl_array_open; a malformed consolidated entry is SL_EPARSE
 * with the consolidated document's key and the JSON pointer into it.
 * Thread-safety: any thread.
 */
SL_API sl_array *sl_group_member_open(const struct sl_group_member *m,
                                      const struct sl_array_opts *opts, struct sl_error *err);

/**
 * The attributes of member `m` (inside sl_group_members' callback) as
 * sl_group_attributes gives them: from its consolidated entry without
 * reading the store, else read.  For arrays the same text as
 * sl_array_attributes.
 * @return SL_OK; SL_EPARSE for attributes that are not an object (the
 * consolidated document's key, the entry's pointer); as
 * sl_group_attributes when read.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_group_member_attributes(const struct sl_group_member *m,
                                                         struct sl_buf *out, struct sl_error *err);

/* One node below a group, as sl_group_tree_read lists it. */
struct sl_group_node {
    char *path;        /* from the store's root, e.g. "labels/cells" */
    sl_zarr_kind kind; /* SL_ZARR_ARRAY or SL_ZARR_GROUP */
    int zarr_format;   /* 2 or 3 */
    char *attributes;  /* a group's attributes (JSON object text); NULL for an array */
    sl_array *array;   /* an array, open (one reference); NULL for a group */
};

/* A group's hierarchy: the group's own attributes and everything below it. */
struct sl_group_tree {
    int zarr_format;             /* the group's */
    char *attributes;            /* the group's attributes (JSON object text) */
    bool consolidated;           /* its members came from consolidated metadata */
    struct sl_group_node *nodes; /* sorted by path: a group before its members */
    uint32_t n_nodes;            /* entries in nodes */
    uint32_t cap_nodes_;         /* sluice's */
    void *internal_;             /* sluice's */
};

/**
 * Read the group at `path` and every node below it (sl_group_members'
 * walk: one read with consolidated metadata) into `out`: arrays opened
 * (from their consolidated entries where there are some), groups'
 * attributes read, sorted so that a group comes before its members.
 * Release with sl_group_tree_fini, on success only.
 * @return SL_OK; SL_ENOTFOUND (nothing at `path`); SL_EINVAL (an array
 * there); SL_EPARSE (a member that is neither array nor group, named, or
 * unreadable metadata); SL_EUNSUPPORTED (a store that cannot list, without
 * consolidated metadata); SL_ENOMEM; a store error.  On failure `out`
 * holds nothing.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_group_tree_read(sl_store *store, const char *path,
                                                 struct sl_group_tree *out, struct sl_error *err);

/**
 * Release what sl_group_tree_read put in `t` (the arrays' references too)
 * and empty it; NULL or an empty tree is allowed.
 * Thread-safety: one thread per tree.
 */
SL_API void sl_group_tree_fini(struct sl_group_tree *t);

/**
 * Write the consolidated metadata of the group at `path`: every metadata
 * document below it, found by listing the store (older consolidated
 * metadata is not read, and is replaced), gathered as a v3 zarr.json's
 * inline "consolidated_metadata" (members named by path, "must_understand"
 * false) or a v2 ".zmetadata" (keys as zarr.consolidate_metadata writes
 * them, zarr_consolidated_format 1).  Only documents of the group's own
 * format are gathered.
 * @return SL_OK; SL_ENOTFOUND (nothing at `path`) or SL_EINVAL (an array
 * there); SL_EPARSE for a member document that is not JSON (its key);
 * SL_ENOMEM; a store error (SL_EACCES, SL_ENOSPC, SL_EIO).
 * Thread-safety: any thread; nothing may write below `path` meanwhile.
 */
SL_API SL_NODISCARD sl_status sl_group_consolidate(sl_store *store, const char *path,
                                                   struct sl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SL_ARRAY_H */
