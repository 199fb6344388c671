/* SPDX-License-Identifier: MIT */
/*
 * JSON graph files, sluice's second public API.  A graph file names arrays
 * (existing ones, new ones from a spec, or new ones `like` another) and
 * nodes (get, select, rechunk, the built-in ops of <sluice/ops.h>, put) and
 * run options; examples/graphs/FORMAT.md documents every field.  The loader
 * validates the whole file before it creates anything, reports every error
 * it finds (up to the caller's limit) with a line and column (syntax) or a
 * JSON pointer (meaning), then builds a sealed graph over the arrays.
 *
 * Also here: the dry run's check of which stored input chunks a graph
 * reads are missing, reading no chunk data.
 */
#ifndef SL_GRAPH_JSON_H
#define SL_GRAPH_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <sluice/alloc.h>
#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/graph.h>
#include <sluice/journal.h>
#include <sluice/plan.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The format version this library reads: the value of the top-level
 * "sluice" field. */
#define SL_GRAPH_JSON_VERSION 1

/* Default limits on a graph file. */
#define SL_GRAPH_JSON_MAX_BYTES ((size_t)16 << 20) /* file size */
#define SL_GRAPH_JSON_MAX_DEPTH 32u                /* nesting of arrays and objects */

/* A loaded graph file: the sealed graph, the arrays it opened or created,
 * and its run options.  Opaque. */
typedef struct sl_graph_json sl_graph_json;

/* What the loader does with the arrays a file asks to create. */
typedef enum sl_graph_json_arrays {
    SL_GRAPH_JSON_IN_MEMORY, /* create them in memory only, so validating, explaining
                                and dry runs touch nothing on disk */
    SL_GRAPH_JSON_CREATE,    /* create them on disk (or on S3, where an old node that
                                "overwrite" allows is deleted first) once the whole file
                                is valid (what `sluice run` does) */
    SL_GRAPH_JSON_OPEN,      /* open them from disk or S3, where another process of the
                                same run created them (ranks of a run across processes
                                after the first); their "overwrite" is not checked
                                again and nothing is deleted */
} sl_graph_json_arrays;

/* How to load a graph file. */
/*
 * A function that a graph file's "map" nodes call by name ({"op": "map",
 * "fn": NAME, "inputs": [...]}), supplied by the program that loads the
 * file, never by the file itself: the Python package's sluice.Graph.map
 * hands its Python functions to the loader this way.
 */
struct sl_graph_json_map {
    const char *name; /* what "fn" names it: 1 to 63 characters; borrowed for the load */
    sl_map_fn *fn;    /* called per output block with the input blocks (see sl_map_fn) */
    void *ctx;        /* passed to `fn`; borrowed: must outlive every run of the graph */
};

struct sl_graph_json_opts {
    sl_graph_json_arrays new_arrays;  /* see sl_graph_json_arrays */
    bool allow_outside;               /* accept absolute array paths and ".." components; false:
                                         every path must stay inside the base directory */
    bool allow_plugins;               /* load the libraries the file's "plugins" names
                                         (sl_plugin_load), running their code; false: a file
                                         that names any is refused (SL_EACCES) */
    const char *base_dir;             /* where relative array paths start; NULL: the graph file's
                                         directory (load_file) or "." (load_string).  Copied. */
    size_t max_bytes;                 /* longest file accepted; 0: SL_GRAPH_JSON_MAX_BYTES */
    uint32_t max_depth;               /* deepest nesting accepted; 0: SL_GRAPH_JSON_MAX_DEPTH */
    uint32_t io_concurrency;          /* remote arrays' requests in flight; 0: the file's
                                         "run.io_concurrency", else the store's default */
    uint32_t io_attempts;             /* tries per remote request; 0: the file's
                                         "run.io_attempts", else the store's default */
    double io_deadline_s;             /* seconds per remote request; 0: the file's
                                         "run.io_deadline_s", else the store's default */
    size_t memory;                    /* the run's memory budget, which bounds what remote
                                         arrays fetch ahead (a quarter); 0: the file's
                                         "run.memory", else none */
    bool missing_on_403;              /* every remote array reads a 403 as absent (else
                                         only those whose "missing_on_403" says so) */
    const char *endpoint;             /* s3:// arrays' server unless an array's "endpoint"
                                         says otherwise; NULL: AWS's rules.  Borrowed for
                                         the load */
    const char *region;               /* s3:// arrays' region unless an array's "region"
                                         says otherwise; NULL: AWS's rules.  Borrowed for
                                         the load */
    bool no_sign_request;             /* s3:// arrays are read and written anonymously */
    bool local_only;                  /* refuse remote paths (SL_EACCES) instead of reading
                                         them: validation that must not touch the network */
    const struct sl_allocator *alloc; /* copied; NULL: the default allocator */
    const struct sl_graph_json_map *maps;    /* the functions "map" nodes may call; borrowed
                                                for the load (a file naming another is
                                                refused); NULL: none */
    size_t n_maps;                           /* entries of `maps` */
    const struct sl_journal_staging *resume; /* with SL_GRAPH_JSON_CREATE: the directories
                                                an earlier run of the file wrote into (its
                                                journal's); each node is taken over from
                                                the one that is its (sl_fs_replace_resume)
                                                and its arrays opened there.  Borrowed for
                                                the load */
    uint32_t n_resume;                       /* how many; 0: begin every node afresh */
    bool resuming;                           /* a node at an output path may be the one an
                                                earlier run put in place, which a resume
                                                goes on with: not refused; with
                                                SL_GRAPH_JSON_CREATE s3:// nodes are
                                                opened where they are (see
                                                sl_graph_json_check_in_place) */
    bool defer_sync;                         /* with SL_GRAPH_JSON_CREATE: write the local
                                                nodes staged beside their paths (fresh, or
                                                "overwrite": true) without an fsync per
                                                object; sl_graph_json_commit syncs each
                                                node's file system once (sl_store_sync)
                                                before its rename.  Only for a run that
                                                records nothing as durable as it goes (no
                                                run journal) in one process; ignored when
                                                resuming (`n_resume`) and for nodes written
                                                in place (an existing node with
                                                "in-place", s3://).  Default false: every
                                                object is fsynced as it is written */
    bool no_sync;                            /* with defer_sync: those nodes are not synced
                                                at all before their rename.  A process
                                                killed at any point still leaves each path
                                                old or whole new; a power cut soon after
                                                may lose what neither the kernel nor the
                                                device had written.  For scratch outputs
                                                (default false) */
};
/**
 * SL_GRAPH_JSON_OPTS_DEFAULT's value (the defaults) as a function, for C and C++ alike: every
 * field not named below is zero.
 * Thread-safety: any thread.
 */
static inline struct sl_graph_json_opts
sl_graph_json_opts_default(void)
{
    struct sl_graph_json_opts o;
    memset(&o, 0, sizeof o);
    o.new_arrays = SL_GRAPH_JSON_IN_MEMORY;
    return o;
}
#define SL_GRAPH_JSON_OPTS_DEFAULT (sl_graph_json_opts_default())

/*
 * Where the loader reports what is wrong with a file: the caller's array of
 * `capacity` records, filled in the order the errors are found.  A syntax
 * error is the only error of its file (line, column and byte position set);
 * otherwise every semantic error is reported (path set to a JSON pointer,
 * source to the file name), until `capacity` is reached, when validation
 * stops and `truncated` is set.
 */
struct sl_graph_json_errors {
    struct sl_error *errors; /* `capacity` records, owned by the caller */
    size_t capacity;         /* how many records `errors` holds, >= 1 */
    size_t count;            /* records filled */
    bool truncated;          /* more errors may exist than were recorded */
};

/*
 * Load the graph file at `path`: read it (refusing files over max_bytes),
 * parse it (duplicate keys and nesting over max_depth refused), validate
 * every field, open the arrays it reads, check the arrays it creates, build
 * every node, seal the graph and, as opts->new_arrays says, create the new
 * arrays on disk or open them there.
 * @param opts    NULL for SL_GRAPH_JSON_OPTS_DEFAULT.
 * @param errors  receives every error found; may be NULL.
 * @return the loaded file, or NULL with at least one record in `errors`:
 * SL_EPARSE (syntax: line and column), SL_EOVERFLOW (size or depth limit),
 * SL_EINVAL (a field's meaning, a reference that names nothing, a cycle,
 * shapes or dtypes that do not fit: JSON pointer), SL_ENOTFOUND (the file,
 * or an array that must exist, does not), SL_EEXIST (an array to create
 * exists and overwriting is not allowed, or objects that are no Zarr node
 * lie under an s3:// output), SL_EACCES (a path that leaves the base
 * directory, an http(s) output, "plugins" without opts->allow_plugins),
 * a plugin's load error (sl_plugin_load, at /plugins/i), SL_EUNSUPPORTED
 * (a format version or node this build lacks), SL_ENOMEM, or the io error of opening or creating an
 * array (SL_EPARSE for its metadata, SL_EIO, ...), at the array's "path".
 * Nothing is created on disk or S3 unless the whole file is valid.
 * The graph returned is sealed and takes no more nodes: a program's own
 * operations enter a file's graph by name, added to the registry before
 * the load (sl_op_register, sl_plugin_load) and named by the file's nodes.
 * Thread-safety: any thread; loads of different files are independent.
 */
SL_API sl_graph_json *sl_graph_json_load_file(const char *path,
                                              const struct sl_graph_json_opts *opts,
                                              struct sl_graph_json_errors *errors);

/**
 * Load a graph file from the `len` bytes at `text`, as sl_graph_json_load_file
 * does; `source` (may be NULL) names it in error records.
 * Thread-safety: any thread; loads of different texts are independent.
 */
SL_API sl_graph_json *sl_graph_json_load_string(const char *text, size_t len, const char *source,
                                                const struct sl_graph_json_opts *opts,
                                                struct sl_graph_json_errors *errors);

/**
 * Free a loaded file and release its graph and arrays.  NULL is a no-op.
 * Thread-safety: one thread, once no other thread uses `doc`.
 */
SL_API void sl_graph_json_destroy(sl_graph_json *doc);

/**
 * Put the arrays and pyramid groups the document created on disk
 * (SL_GRAPH_JSON_CREATE writes each beside its path, in a hidden sibling)
 * in place, after the run.  `run_ok`: the run succeeded; every node is put
 * in place, replacing what was at its path ("overwrite").  Otherwise a node
 * whose path held nothing is still put in place (its failed chunks were
 * reported) and one that would replace a node is removed, leaving the old
 * node as it was.  A node written with `defer_sync` is synced
 * (sl_store_sync) before it is put in place; when that fails it is removed
 * instead, leaving the old node (or nothing) at its path, since some of its
 * objects may be lost.  Destroying a document without committing removes
 * them all, so a refused run leaves nothing behind.  s3:// nodes are
 * written in place, not atomically, and are not touched here: what the run
 * wrote stays.  Call once; afterwards the document's arrays must not be
 * read or written, only destroyed.
 * @return SL_OK, or the first failure to put a node in place (SL_EEXIST:
 * something appeared at its path meanwhile; SL_EIO: a rename, or the sync,
 * failed), naming the path; the other nodes are still handled.
 * Thread-safety: one thread, after the run has ended.
 */
SL_API SL_NODISCARD sl_status sl_graph_json_commit(sl_graph_json *doc, bool run_ok,
                                                   struct sl_error *err);

/**
 * Nodes the document writes in place: s3:// arrays, pyramid groups and
 * copies (S3 renames no prefix, so they have no staging directory).  A
 * run begun afresh that journals removes its earlier journals before it
 * loads the file for real, as that deletes the old nodes ("overwrite").
 * Thread-safety: any thread.
 */
SL_API size_t sl_graph_json_n_in_place(const sl_graph_json *doc);

/**
 * For a --resume, on a document loaded with SL_GRAPH_JSON_IN_MEMORY: check
 * that every node it writes in place is at its URL as the file makes it:
 * a Zarr node is there, and every metadata object the in-memory build made
 * for it (zarr.json, .zarray, .zattrs, .zgroup, levels and members) is
 * stored with the same bytes.  A resumed load (SL_GRAPH_JSON_CREATE with
 * `resuming`) then opens these nodes where they are and deletes nothing.
 * @return SL_OK; SL_ENOTFOUND (no node at a URL), SL_ECONFLICT (an object
 * missing or different: the first named), or the store's error; each
 * message names the node's JSON pointer and URL.
 * Thread-safety: one thread.
 */
SL_API SL_NODISCARD sl_status sl_graph_json_check_in_place(sl_graph_json *doc,
                                                           struct sl_error *err);

/**
 * The directories the document's new nodes are written into (hidden
 * siblings of their paths, or the paths in place), for a run journal: up
 * to `cap` of them in `dirs`, valid until commit or destroy.
 * @return how many there are.
 * Thread-safety: any thread.
 */
SL_API size_t sl_graph_json_staging(const sl_graph_json *doc, const char **dirs, size_t cap);

/**
 * End the document's new nodes without putting them in place or removing
 * them: each stays where it was written, for a run that resumes (a resume
 * that was refused keeps what the earlier run wrote).  Call instead of
 * sl_graph_json_commit.
 * Thread-safety: one thread, after the run has ended.
 */
SL_API void sl_graph_json_keep(sl_graph_json *doc);

/**
 * The sealed graph (borrowed: valid while `doc` lives; take a reference with
 * sl_graph_ref to keep it longer).  Node names are the file's node ids.
 * Thread-safety: any thread.
 */
SL_API sl_graph *sl_graph_json_graph(const sl_graph_json *doc);

/* The file's "run" options. */
struct sl_graph_json_run {
    uint32_t threads;        /* "threads"; 0 when not given (one per core) */
    size_t memory_budget;    /* "memory" in bytes; 0 when not given (no limit) */
    sl_error_policy policy;  /* "error_policy"; SL_POLICY_COLLECT when not given */
    bool missing_is_error;   /* "missing": "error"; false ("fill") when not given */
    uint32_t io_concurrency; /* "io_concurrency": remote requests in flight; 0 when not given */
    uint32_t io_attempts;    /* "io_attempts": tries per remote request; 0 when not given */
    double io_deadline_s;    /* "io_deadline_s": seconds per remote request; 0 when not given */
    const char *journal;     /* "journal": the run journal's path, relative ones joined to
                                the base directory; NULL when not given.  The document's */
    uint32_t retries;        /* "retries": tries again of a store operation that failed
                                transiently (sl_plan_opts.retries); 0 when not given */
};

/** Copy the file's run options into `out`.  Thread-safety: any thread. */
SL_API void sl_graph_json_run_opts(const sl_graph_json *doc, struct sl_graph_json_run *out);

/**
 * Write one line per array of the file: its name, path, whether it is read,
 * created or overwritten, its dtype, shape and chunking.
 * @return SL_OK or SL_EIO (the stream's error flag is set).
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_graph_json_write_arrays(const sl_graph_json *doc, FILE *out,
                                                         struct sl_error *err);

/* ---- dry runs -------------------------------------------------------------- */

/*
 * Called once per stored chunk a graph's get nodes read, with whether it is
 * stored: node ids ascending, chunks in C order of the node's grid (inner
 * chunks when sharded).  Return SL_OK to go on; anything else stops the
 * check and is returned.
 */
typedef sl_status sl_input_chunk_fn(void *ctx, uint32_t node, const struct sl_chunk_key *chunk,
                                    bool stored);

/**
 * Find which stored chunks the sealed graph `g` would read, from the regions
 * its puts' chunks need traced back through every node, and whether each is
 * stored (sl_array_shard_chunks_exist: chunk keys, or one index read per
 * shard), calling `fn` for each.  Reads and writes no chunk data.  Gets of
 * arrays that a put of the same graph writes are skipped: the run writes
 * them before reading them.
 * @return SL_OK; SL_ESTATE (not sealed); SL_ENOMEM; the io error of an
 * index or key that cannot be read (SL_ECORRUPT, SL_EACCES, SL_EIO); or
 * what `fn` returned.
 * Thread-safety: any thread; `fn` runs on the calling thread.
 */
SL_API SL_NODISCARD sl_status sl_graph_check_inputs(const sl_graph *g, sl_input_chunk_fn *fn,
                                                    void *ctx, struct sl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SL_GRAPH_JSON_H */
