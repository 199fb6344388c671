/* SPDX-License-Identifier: MIT */
/*
 * sluice's CPython extension, _sluice: what its files share.  The module is
 * a client of the public API only (<sluice/...>), like the launcher.  Every
 * call into the library that may read, decode, compute or write runs with
 * the GIL released; objects here are immutable once made, so several Python
 * threads may use one at once.
 */
#ifndef SL_PY_H
#define SL_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <sys/types.h>

/* numpy's C API: module.c imports it, the other files use its table. */
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL sl_py_numpy_api
#ifndef SL_PY_NUMPY_MAIN
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include <sluice/array.h>
#include <sluice/error.h>
#include <sluice/parallel.h>
#include <sluice/store.h>

/* An open store, and the URL and options it was opened with. */
typedef struct {
    PyObject_HEAD sl_store *store;
    PyObject *url; /* str */
    pid_t pid;     /* the process that opened it: a child after fork may not use
                      it (an HTTP store's I/O thread, a lock taken at the fork) */
} SlPyStore;

/* An open array. */
typedef struct {
    PyObject_HEAD sl_array *array;
    SlPyStore *store; /* strong reference */
} SlPyArray;

extern PyTypeObject SlPyStore_Type;
extern PyTypeObject SlPyArray_Type;

/* The module's exception class, sluice.Error. */
extern PyObject *sl_py_error_type;

/* 0 when `store` may be used in this process; -1 with sluice.Error set
 * (code "ESTATE") in a child after fork, which must open it again. */
int sl_py_store_usable(const SlPyStore *store);

/* Raise sluice.Error from `err` (its code, message and where); NULL. */
PyObject *sl_py_raise(const struct sl_error *err, const char *what);

/* The module's pool as a "parallel for", made on first use (again in a
 * child after fork); NULL with a Python exception set when it cannot start.
 * Call with the GIL held. */
const struct sl_parallel *sl_py_parallel(void);

/* The pool behind sl_py_parallel, made as it is; NULL with an exception. */
struct sl_pool;
struct sl_pool *sl_py_pool(void);

/* Codec contexts, one per worker of `par` (the module's pool), kept across
 * batched reads so their buffers stay warm: the pages of a chunk's body
 * and scratch are faulted in once, not on every read.  One read at a time
 * holds them: NULL when another does (the read then makes its own).  Give
 * them back with sl_py_ctxs_give.  Call with the GIL held. */
struct sl_codec_ctx;
struct sl_codec_ctx *const *sl_py_ctxs_take(const struct sl_parallel *par);
void sl_py_ctxs_give(void);

/* The numpy type number of a sluice dtype. */
int sl_py_npy_type(sl_dtype dt);

/* A sluice dtype from a numpy dtype name ("float32", "uint8", ...); -1 with
 * ValueError set when sluice has no such type. */
int sl_py_dtype_of_name(const char *name, sl_dtype *out);

/* A tuple of `n` Python ints; NULL with an exception. */
PyObject *sl_py_u64_tuple(const uint64_t *v, uint32_t n);

/* Parse a sequence of `rank` non-negative integers; -1 with an exception. */
int sl_py_u64_seq(PyObject *seq, uint32_t rank, uint64_t *out, const char *what);

/* The sl_map_fn of graph files' "map" nodes whose function is Python
 * callable `ctx` (pymap.c): ctx(*input_blocks, where) -> block. */
struct sl_block;
sl_status sl_py_map_call(void *ctx, struct sl_block *out, size_t n_inputs,
                         const struct sl_block *inputs, struct sl_error *err);

/* Set up each file's part of the module; -1 with an exception. */
int sl_py_store_init(PyObject *m);
int sl_py_array_init(PyObject *m);
int sl_py_run_init(PyObject *m);

#endif
