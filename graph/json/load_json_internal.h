/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the JSON graph loader (load_json*.c): the parsed
 * document, its arrays and nodes, and the steps each file implements; the
 * error list and the typed field readers are in load_json_fields_internal.h,
 * included here.  Open to the graph tests.
 *
 * DESIGN: loading runs in passes over one parsed document.  The document
 * pass (load_json.c, load_json_arrays.c, load_json_nodes.c) checks every
 * field's type and value, resolves names and finds cycles, and
 * load_json_array_open.c opens the arrays that must exist; the build pass
 * (load_json_build.c) adds the nodes to a graph in
 * dependency order, creating new arrays in memory so that shapes, ranks
 * and dtypes are checked by the graph itself.  Only when both passes found
 * nothing wrong, and the caller asked for it, does a second build pass
 * create the new arrays on disk.  Errors are appended to the caller's list;
 * an array or node with an error is marked `bad`, and whatever depends on
 * it is skipped silently, so one mistake is reported once.
 */
#ifndef SL_LOAD_JSON_INTERNAL_H
#define SL_LOAD_JSON_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include <sluice/array.h>
#include <sluice/fs.h>
#include <sluice/graph.h>
#include <sluice/graph_json.h>
#include <sluice/ops.h>
#include <sluice/pyramid.h>
#include <sluice/reduce.h>

#include "load_json_fields_internal.h"

/* The longest node id (the graph's limit on node names). */
#define SL__JNODE_ID_MAX 63

/* What an array entry asks for. */
typedef enum sl__jarray_role {
    SL__JARRAY_READ,   /* no "create" nor "like": the array must exist */
    SL__JARRAY_CREATE, /* "create" or "like": a new array */
} sl__jarray_role;

/* The "create" settings of an array or pyramid, as written (unset: absent). */
struct sl__jcreate {
    int format;                         /* 2 or 3; 0: not given */
    bool has_dtype;                     /* "dtype" given */
    sl_dtype dtype;                     /* ... its value */
    uint32_t n_shape;                   /* "shape" entries; 0: not given */
    uint64_t shape[SL_MAX_RANK];        /* "shape" */
    uint32_t n_chunks;                  /* "chunks" entries; 0: not given */
    uint64_t chunks[SL_MAX_RANK];       /* "chunks" */
    bool has_shards;                    /* "shards" given (null: explicitly none) */
    uint32_t n_shards;                  /* its entries; 0 for null */
    uint64_t shards[SL_MAX_RANK];       /* "shards" */
    bool has_codec;                     /* "codec" given */
    struct sl_codec_spec codec;         /* ... parsed */
    const json_t *fill_value;           /* "fill_value", borrowed; NULL: not given */
    bool has_dim_names;                 /* "dimension_names" given */
    uint32_t n_dim_names;               /* its entries */
    const char *dim_names[SL_MAX_RANK]; /* borrowed from the document; NULL entries */
    const json_t *attributes;           /* "attributes", borrowed; NULL: not given */
};

/* One entry of "arrays". */
struct sl__jarray {
    const char *name;              /* its key, borrowed from the document */
    char ptr[SL__JPTR_MAX];        /* "/arrays/<name>" */
    const char *path;              /* "path" as written; NULL when bad */
    char *full_path;               /* base directory joined with `path`; owned */
    sl__jarray_role role;          /* read or create */
    bool overwrite;                /* "overwrite" */
    bool in_place;                 /* "overwrite": "in-place" */
    bool missing_on_403;           /* "missing_on_403": a remote 403 reads as absent */
    const char *endpoint;          /* "endpoint": an s3:// array's server, or NULL */
    const char *region;            /* "region": an s3:// array's region, or NULL */
    bool exists;                   /* create: something is stored at the path already */
    const char *like_name;         /* "like" as written, or NULL */
    int like;                      /* index of the "like" array, or -1 */
    struct sl__jcreate create;     /* "create" settings */
    int writer;                    /* index of the put node writing it, or -1 */
    int n_readers;                 /* get nodes reading it */
    bool bad;                      /* an error was reported for it */
    int mark;                      /* cycle search and build state: 0, 1 visiting, 2 done */
    struct sl_array_spec spec;     /* create: the resolved spec */
    char *attributes;              /* create: spec.attributes_json, owned (json_dumps) */
    _Alignas(16) uint8_t fill[16]; /* create: spec.fill_value's element */
    sl_store *store;               /* the store at full_path or in memory; retained */
    sl_array *array;               /* the open array; retained */
    bool writable;                 /* read: `store` was opened for writing */
};

/* Node kinds of the format. */
typedef enum sl__jnode_kind {
    SL__JNODE_GET,     /* read an array */
    SL__JNODE_PUT,     /* write an array */
    SL__JNODE_SELECT,  /* slices */
    SL__JNODE_RECHUNK, /* new chunk shape */
    SL__JNODE_OP,      /* a built-in op of the registry */
    SL__JNODE_PYRAMID, /* a multiscale pyramid (fields checked; not built yet) */
    SL__JNODE_COPY,    /* a whole group copied (no input; nothing reads it) */
    SL__JNODE_EXPR,    /* arithmetic over named inputs ("inputs" instead of "input") */
    SL__JNODE_VIEW,    /* squeeze, expand_dims, transpose ("input"), stack, concat ("inputs") */
    SL__JNODE_REDUCE,  /* a reduction along axes */
    SL__JNODE_STATS,   /* statistics of the input (a sink, like a put) */
    SL__JNODE_MAP,     /* a function the loading program supplies, over "inputs" */
} sl__jnode_kind;

/* Most entries of a node's "inputs" (the graph's limit on a map's inputs). */
#define SL__JNODE_INPUTS_MAX 8

/* A node's "inputs": names the node's own text uses, each a node id. */
struct sl__jinputs {
    size_t n;                               /* entries */
    const char *name[SL__JNODE_INPUTS_MAX]; /* the keys, borrowed from the document */
    const char *id[SL__JNODE_INPUTS_MAX];   /* the node ids they name, borrowed */
    int node[SL__JNODE_INPUTS_MAX];         /* their node indices, or -1 */
};

/* A reduce node's fields ("axes" go to the node's n_axes and axes). */
struct sl__jreduce {
    sl_reduce_method method; /* "method" */
    bool keepdims;           /* "keepdims" */
    sl_dtype dtype;          /* "dtype"; SL_DTYPE_COUNT_: numpy's default */
    double ddof;             /* "ddof" */
    uint32_t split_every;    /* "split_every"; 0: the default */
};

/* An expr node's fields. */
struct sl__jexpr {
    const char *text; /* "expr" */
    sl_dtype dtype;   /* "dtype"; default the working type */
    sl_dtype compute; /* "compute": float64 (default) or float32 */
};

/* One slice of a select: per dimension [start, stop); stop UINT64_MAX
 * means the input's extent, and `whole` the whole dimension. */
struct sl__jslice {
    uint32_t rank;               /* dimensions given */
    bool whole[SL_MAX_RANK];     /* null: the whole dimension */
    uint64_t start[SL_MAX_RANK]; /* first index */
    uint64_t stop[SL_MAX_RANK];  /* one past the last; UINT64_MAX: the extent */
};

/* A pyramid node's fields, in the form sl_graph_add_pyramid takes them. */
struct sl__jpyramid {
    const char *group;                  /* "group": path of the group to create */
    char *full_path;                    /* base directory joined with it; owned */
    bool exists;                        /* something is stored there already */
    uint64_t n_levels;                  /* "levels": level 0 included */
    uint32_t n_factors;                 /* "factors" entries */
    uint64_t factors[SL_MAX_RANK];      /* downsampling factor between levels */
    sl_downsample_method method;        /* "method" */
    sl_pyramid_smooth smooth;           /* "smooth": "none" or "gaussian" */
    bool overwrite;                     /* "overwrite" */
    bool in_place;                      /* "overwrite": "in-place" */
    struct sl__jcreate create;          /* "create": format, chunks, shards, codec, fill_value */
    const char *name;                   /* "name" of the multiscales; NULL: none */
    uint32_t n_axes;                    /* "axes" entries; 0: the defaults */
    const char *axis_name[SL_MAX_RANK]; /* per axis; NULL: the default */
    const char *axis_type[SL_MAX_RANK]; /* per axis; NULL: the default */
    const char *axis_unit[SL_MAX_RANK]; /* per axis; NULL: none */
    uint32_t n_scale;                   /* "scale" entries; 0: all 1 */
    double scale[SL_MAX_RANK];          /* level 0's pixel size */
    uint32_t n_translation;             /* "translation" entries; 0: all 0 */
    double translation[SL_MAX_RANK];    /* level 0's offset */
    uint8_t fill[16];                   /* the levels' fill value, parsed when built */
    bool omero;                         /* "omero": write OME omero channel windows */
    double omero_percentiles[2];        /* "omero": {"percentiles": [lo, hi]}; else the
                                           defaults of SL_PYRAMID_OPTS_DEFAULT */
};

/* One entry of a copy node's "members": a member array's own layout. */
struct sl__jcopy_member {
    const char *path;          /* the member array's path in the source group (the key) */
    char ptr[SL__JPTR_MAX];    /* "/nodes/<id>/members/<path>" */
    struct sl__jcreate create; /* its "chunks", "shards", "codec" */
};

/* A copy node's fields, and the source's hierarchy read in the document
 * pass. */
struct sl__jcopy {
    const char *source;               /* "source": the group to copy, as written */
    char *source_full;                /* joined to the base directory, or the URL; owned */
    const char *group;                /* "group": the copy's path */
    char *full_path;                  /* joined to the base directory; owned */
    bool exists;                      /* something is stored at "group" already */
    bool overwrite;                   /* "overwrite" */
    bool in_place;                    /* "overwrite": "in-place" */
    struct sl__jcreate create;        /* "create": format, chunks, shards, codec */
    size_t n_members;                 /* "members" entries */
    struct sl__jcopy_member *members; /* owned */
    sl_store *in;                     /* the source's store; retained */
    bool have_tree;                   /* `tree` was read */
    struct sl_group_tree tree;        /* the source group and everything below it */
    int format;                       /* the copy's Zarr format */
    struct sl_array_spec *specs;      /* per node of `tree`: an array's layout; owned */
};

struct sl__jnode;

/* Add the pyramid of node `n` to the graph (a memory store in the first
 * pass, the group on disk in the second).  @return false after reporting. */
bool sl__jpyramid_build(sl_graph_json *doc, struct sl__jnode *n, bool on_disk);

/* One node of the file. */
struct sl__jnode {
    const char *id;                      /* its id, borrowed from the document */
    char ptr[SL__JPTR_MAX];              /* "/nodes/<id>" or "/nodes/<index>" */
    const json_t *obj;                   /* the node object, borrowed */
    sl__jnode_kind kind;                 /* what it is */
    const struct sl_op_desc *op;         /* SL__JNODE_OP: the operation */
    struct sl_op_args args;              /* SL__JNODE_OP: its parameters */
    const char *input_name;              /* "input", or NULL */
    int input;                           /* its node index, or -1 */
    const char *array_name;              /* get and put: "array" */
    int array;                           /* its index, or -1 */
    uint32_t n_chunks;                   /* rechunk, downsample: "chunks" entries; 0: none */
    uint64_t chunks[SL_MAX_RANK];        /* "chunks" */
    bool concat;                         /* select: "regions" (else "region") */
    uint32_t axis;                       /* select: "axis" */
    size_t n_slices;                     /* select: slices */
    struct sl__jslice *slices;           /* select: owned */
    struct sl__jpyramid pyramid;         /* pyramid fields */
    struct sl__jcopy copy;               /* copy fields */
    struct sl__jinputs inputs;           /* "inputs" of nodes with several */
    struct sl__jexpr expr;               /* expr fields */
    struct sl__jreduce reduce;           /* reduce fields */
    struct sl_stats_desc stats;          /* stats fields ("per" in n_axes and axes) */
    const struct sl_graph_json_map *map; /* map: the function "fn" names */
    sl_dtype map_dtype;                  /* map: "dtype"; SL_DTYPE_COUNT_: the first input's */
    const char *view_op;                 /* views: "squeeze", "stack", ... */
    uint32_t n_axes;                     /* views: "axes" entries */
    uint32_t axes[SL_MAX_RANK];          /* views: "axes" */
    int n_consumers;                     /* nodes naming it as input */
    bool bad;                            /* an error was reported for it, or an input is bad */
    int mark;                            /* cycle search and build state: 0, 1 visiting, 2 done */
    uint32_t gid;                        /* its id in the graph once built */
};

/* A node the document writes in place (an s3:// URL: S3 renames no
 * prefix), with the metadata the in-memory build made for it. */
struct sl__jinplace {
    char *url;            /* owned */
    char *ptr;            /* the JSON pointer of its "path" or "group"; owned */
    const char *endpoint; /* the node's "endpoint" (the document owns it), or NULL */
    const char *region;   /* the node's "region", or NULL */
    sl_store *mem;        /* retained: what the build wrote */
};

/* A node the document writes beside its path, put in place by
 * sl_graph_json_commit. */
struct sl__jrep {
    sl_fs_replace *rep; /* NULL once committed, removed or kept */
    sl_store *sync;     /* retained: the node's store, opened with defer_sync, which the
                           commit syncs before the rename; NULL: each object was fsynced */
    const char *path;   /* its "path" or "group" as written, borrowed from the document */
};

struct sl_graph_json {
    struct sl_allocator alloc;      /* everything owned below */
    struct sl_graph_json_opts opts; /* copied; base_dir points at `base_dir` */
    char *base_dir;                 /* owned */
    char source[256];               /* the file name for error records */
    json_t *root;                   /* the parsed document */
    struct sl__jdiag diag;          /* the error list */
    struct sl_graph_json_run run;   /* "run" */
    size_t n_arrays;                /* entries of "arrays" */
    struct sl__jarray *arrays;      /* owned */
    size_t n_nodes;                 /* entries of "nodes" */
    struct sl__jnode *nodes;        /* owned */
    size_t n_order;                 /* nodes in `order` */
    size_t *order;                  /* node indices, each after what it depends on; owned,
                                       room for n_nodes + 1 */
    sl_graph *graph;                /* the graph built by the last build pass */
    struct sl__jrep *reps;          /* nodes written beside their paths; owned */
    size_t n_reps;                  /* entries of reps */
    struct sl__jinplace *inplace;   /* nodes written in place (s3://) as the in-memory build
                                       made them: a resume compares; owned */
    size_t n_inplace;               /* entries of inplace */
    char found[4096];               /* sl__jreplace_find's answer */
    char journal[4096];             /* "run"/"journal" resolved; run.journal points here */
};

/* The top-level "plugins": load each library, when opts.allow_plugins says
 * so (load_json_plugins.c).  @return false after reporting. */
bool sl__jplugins_load(sl_graph_json *doc, const json_t *plugins);

/* The document pass over "arrays": fields, paths, "create" and "like"
 * (load_json_arrays.c). */
void sl__jarrays_parse(sl_graph_json *doc, const json_t *arrays);

/* After sl__jarrays_parse: open the arrays that must exist and check that
 * new ones would replace nothing unless allowed (load_json_array_open.c). */
void sl__jarrays_open(sl_graph_json *doc);

/* Index of the array named `name`, or -1. */
int sl__jarrays_find(const sl_graph_json *doc, const char *name);

/* The longest chain of "like" references accepted. */
#define SL__JLIKE_MAX 16

/* Report chains of "like" that loop or are longer than SL__JLIKE_MAX. */
void sl__jarrays_check_like(sl_graph_json *doc);

/* Build pass: make array `i` usable (open, or create in memory or on disk
 * as `on_disk` says, its spec resolved from its writer's input, which must
 * be built already, and its "like" array). */
bool sl__jarray_resolve(sl_graph_json *doc, size_t i, bool on_disk);

/* Drop the arrays created by a build pass (keeping those read). */
void sl__jarrays_reset(sl_graph_json *doc);

/* Free everything the arrays hold. */
void sl__jarrays_fini(sl_graph_json *doc);

/* The document pass over "nodes": fields, names, references, unused
 * nodes, cycles, and the build order in doc->order. */
void sl__jnodes_parse(sl_graph_json *doc, const json_t *nodes);

/* After the fields of every node: resolve "input" and "array" names, count
 * consumers, report unused nodes and cycles, and fill doc->order
 * (load_json_links.c). */
void sl__jnodes_link(sl_graph_json *doc);

/* Build pass: add node `i` to doc->graph (what it depends on comes earlier
 * in doc->order).  @return false when it or a dependency failed. */
bool sl__jnode_build(sl_graph_json *doc, size_t i, bool on_disk);

/* True when node `i` is in the graph of this build pass. */
static inline bool
sl__jnode_built(const sl_graph_json *doc, int i)
{
    return i >= 0 && doc->nodes[i].mark == 2 && !doc->nodes[i].bad;
}

/* The fields of pyramid node `n` (load_json_pyramid.c). */
void sl__jpyramid_parse(sl_graph_json *doc, struct sl__jnode *n);

/* The fields of expr node `n` (load_json_expr.c). */
void sl__jexpr_parse(sl_graph_json *doc, struct sl__jnode *n);

/* Add expr node `n` to the graph (its inputs are built).  @return false
 * after reporting. */
bool sl__jexpr_build(sl_graph_json *doc, struct sl__jnode *n);

/* The fields of stats node `n` (load_json_stats.c). */
void sl__jstats_parse(sl_graph_json *doc, struct sl__jnode *n);

/* Add stats node `n` to the graph.  @return false after reporting. */
bool sl__jstats_build(sl_graph_json *doc, struct sl__jnode *n);

/* The fields of reduce node `n` (load_json_reduce.c). */
void sl__jreduce_parse(sl_graph_json *doc, struct sl__jnode *n);

/* Add reduce node `n` to the graph.  @return false after reporting. */
bool sl__jreduce_build(sl_graph_json *doc, struct sl__jnode *n);

/* "inputs" of node `n` as a list of 1 to 8 node ids, in order
 * (load_json_view.c; stack, concat and map nodes). */
void sl__jinputs_parse_list(sl_graph_json *doc, struct sl__jnode *n);

/* The fields of map node `n` (load_json_map.c). */
void sl__jmap_parse(sl_graph_json *doc, struct sl__jnode *n);

/* Add map node `n` to the graph (its inputs are built).  @return false
 * after reporting. */
bool sl__jmap_build(sl_graph_json *doc, struct sl__jnode *n);

/* The fields of view node `n` (load_json_view.c). */
void sl__jview_parse(sl_graph_json *doc, struct sl__jnode *n);

/* Add view node `n` to the graph (its inputs are built).  @return false
 * after reporting. */
bool sl__jview_build(sl_graph_json *doc, struct sl__jnode *n);

/* Whether node `n` reads node index `k` through "input" or "inputs". */
bool sl__jnode_reads(const struct sl__jnode *n, int k);

/* The fields of copy node `n`, then the source's hierarchy and each member
 * array's layout (load_json_copy.c). */
void sl__jcopy_parse(sl_graph_json *doc, struct sl__jnode *n);

/* Add copy node `n`'s groups, arrays and get -> put pairs (a memory store
 * in the first pass, "group" in the second).  @return false after
 * reporting. */
bool sl__jcopy_build(sl_graph_json *doc, struct sl__jnode *n, bool on_disk);

/* Free what copy node `n` holds. */
void sl__jcopy_fini(sl_graph_json *doc, struct sl__jnode *n);

/* Free everything the nodes hold. */
void sl__jnodes_fini(sl_graph_json *doc);

/*
 * Join `base` and `path` into an owned string, checking `path` first: not
 * empty; when outside paths are not allowed, neither absolute nor with a
 * ".." component, nor leading out of the base directory once resolved
 * (through a symbolic link).  Reports at `ptr`.  @return NULL after
 * reporting.
 */
char *sl__jpath_join(sl_graph_json *doc, const char *path, const char *ptr);

/* After both document passes: refuse two paths of "arrays" and pyramid
 * groups that name one directory, or one inside the other where either is
 * written (load_json_alias.c). */
void sl__jpaths_check_alias(sl_graph_json *doc);

/* Where a new node of the file (an array or a pyramid's group) is written,
 * and what may be replaced there. */
struct sl__jdest {
    const char *full_path; /* the base directory joined with `path`, or the s3:// URL */
    const char *path;      /* as written */
    const char *ptr;       /* where it is reported: the JSON pointer of its "path" or "group" */
    const char *endpoint;  /* s3://: the array's "endpoint"; NULL: the document's */
    const char *region;    /* s3://: the array's "region"; NULL: the document's */
    bool overwrite;        /* "overwrite" */
    bool in_place;         /* "overwrite": "in-place" (local nodes; S3 is always in place) */
};

/* The destination of created array `a`, reported at `ptr`. */
struct sl__jdest sl__jarray_dest(const struct sl__jarray *a, const char *ptr);

/* Where copy `c` is written, reported at `ptr` (load_json_copy.c). */
struct sl__jdest sl__jcopy_dest(const struct sl__jcopy *c, const char *ptr);

/*
 * Open the store at `full_path` (a path or URL) with the document's remote
 * options (endpoint and region: these when not NULL, else the document's;
 * credentials, io_* settings, the budget), for writing when `writable`.
 * @return the store, or NULL with `err` set.
 */
sl_store *sl__jstore_open_url(sl_graph_json *doc, const char *full_path, const char *endpoint,
                              const char *region, bool missing_on_403, bool writable,
                              struct sl_error *err);

/*
 * Begin writing a new local node (array or pyramid group) at
 * `d->full_path`: beside what is there, replacing it at
 * sl_graph_json_commit when `overwrite` allows, or in place
 * (load_json_replace.c).
 * @return the directory to write into (valid while `doc` lives), or NULL
 * after reporting why.
 */
const char *sl__jreplace_begin(sl_graph_json *doc, const struct sl__jdest *d);

/*
 * The store a new node is written into: on disk (`on_disk`) beside its
 * path, begun with sl__jreplace_begin, or for SL_GRAPH_JSON_OPEN where the
 * creating process writes it; on S3 at its URL, the old node deleted first
 * when "overwrite" allows (not for SL_GRAPH_JSON_OPEN: the creating process
 * did; not when resuming: the earlier run's node goes on); else a memory
 * store (kept for sl_graph_json_check_in_place when the node is s3://).
 * A local node staged beside its path is opened with `defer_sync` when the
 * options allow, its store then retained for sl_graph_json_commit's sync.
 * @return the store, or NULL: with `err` set when a store could not open,
 * with `err` untouched when the node was refused (already reported).
 */
sl_store *sl__jnode_store(sl_graph_json *doc, const struct sl__jdest *d, bool on_disk,
                          struct sl_error *err);

/* Whether the node at `d` is opened as it is rather than begun: by the
 * other processes of a run (SL_GRAPH_JSON_OPEN), and by a resumed run
 * (its local nodes from the staging directories it takes over, its s3://
 * nodes where they are). */
bool sl__jnode_opens(const sl_graph_json *doc, const struct sl__jdest *d, bool on_disk);

/* Where to open a node another process of the run is writing for
 * `full_path` (SL_GRAPH_JSON_OPEN): its hidden sibling while there is one,
 * else the path itself (valid until the next call). */
const char *sl__jreplace_find(sl_graph_json *doc, const char *full_path);

/* Abort the replacements not committed (the document is being destroyed). */
void sl__jreplace_fini(sl_graph_json *doc);

/*
 * Check what is stored at `d->full_path`: `*exists` when a Zarr array or
 * group is there, which is an error (SL_EEXIST) unless "overwrite" or the
 * new arrays are opened, not created; on S3 objects that are no Zarr node
 * are refused too; http(s) URLs are refused (SL_EACCES: read only).  Reads
 * only.  @return false after reporting.
 */
bool sl__jpath_check_free(sl_graph_json *doc, const struct sl__jdest *d, bool *exists);

/* Parse a "create" object at `ptr` into `c`; `allowed` names the keys
 * accepted.  @return false after reporting. */
bool sl__jcreate_parse(sl_graph_json *doc, const json_t *obj, const char *ptr,
                       const char *const *allowed, struct sl__jcreate *c);

#endif /* SL_LOAD_JSON_INTERNAL_H */
