/* SPDX-License-Identifier: MIT */
/*
 * _sluice.Array: an open array's metadata, and reads and writes of regions
 * as numpy arrays.  The package's Array turns Python selections (steps,
 * negative indices, integers) into the regions these take.
 */
#include "sl_py.h"

#include <unistd.h>

#include <sluice/array_io.h>
#include <sluice/batch.h>
#include <sluice/region.h>
#include <sluice/sha256.h>
#include <sluice/txn.h>

static void
array_dealloc(SlPyArray *self)
{
    /* A child after fork leaves the parent's array, as it leaves its store. */
    if (self->array != NULL && self->store->pid == getpid())
        sl_array_unref(self->array);
    Py_XDECREF(self->store);
    PyObject_Free(self);
}

/* Region [start, stop) of `self` from two sequences; -1 with an exception
 * (IndexError for one outside the array). */
static int
region_of(SlPyArray *self, PyObject *start, PyObject *stop, struct sl_region *r)
{
    uint32_t rank = sl_array_rank(self->array);
    uint64_t a[SL_MAX_RANK], b[SL_MAX_RANK];
    if (sl_py_store_usable(self->store) != 0)
        return -1;
    if (sl_py_u64_seq(start, rank, a, "start") != 0 || sl_py_u64_seq(stop, rank, b, "stop") != 0)
        return -1;
    const uint64_t *shape = sl_array_shape(self->array);
    for (uint32_t d = 0; d < rank; d++) {
        if (a[d] > b[d] || b[d] > shape[d]) {
            PyErr_Format(PyExc_IndexError,
                         "dimension %u: [%llu, %llu) is not inside the array's extent %llu", d,
                         (unsigned long long)a[d], (unsigned long long)b[d],
                         (unsigned long long)shape[d]);
            return -1;
        }
    }
    struct sl_error err = SL_ERROR_INIT;
    if (sl_region_init(r, rank, a, b, &err) != SL_OK) {
        PyErr_SetString(PyExc_ValueError, err.text);
        return -1;
    }
    return 0;
}

/* A new C-order numpy array of the region's shape and the array's dtype. */
static PyArrayObject *
new_block(SlPyArray *self, const struct sl_region *r)
{
    npy_intp dims[SL_MAX_RANK];
    for (uint32_t d = 0; d < r->rank; d++)
        dims[d] = (npy_intp)(r->stop[d] - r->start[d]);
    return (PyArrayObject *)PyArray_SimpleNew((int)r->rank, dims,
                                              sl_py_npy_type(sl_array_dtype(self->array)));
}

/* read(start, stop) -> numpy array of the region */
static PyObject *
array_read(SlPyArray *self, PyObject *args)
{
    PyObject *start, *stop;
    struct sl_region r;
    if (!PyArg_ParseTuple(args, "OO", &start, &stop) || region_of(self, start, stop, &r) != 0)
        return NULL;
    const struct sl_parallel *par = sl_py_parallel();
    PyArrayObject *out = par != NULL ? new_block(self, &r) : NULL;
    if (out == NULL)
        return NULL;
    struct sl_error err = SL_ERROR_INIT;
    sl_status st;
    void *data = PyArray_DATA(out);
    size_t n = (size_t)PyArray_NBYTES(out);
    Py_BEGIN_ALLOW_THREADS;
    st = sl_array_read_region(self->array, &r, data, n, NULL, par, &err);
    Py_END_ALLOW_THREADS;
    if (st != SL_OK) {
        Py_DECREF(out);
        return sl_py_raise(&err, NULL);
    }
    return (PyObject *)out;
}

/* The buffer of `value`, which must be a C-contiguous numpy array of the
 * array's dtype (native order) and exactly the region's size. */
static int
block_of(SlPyArray *self, PyObject *value, const struct sl_region *r, PyArrayObject **out)
{
    int type = sl_py_npy_type(sl_array_dtype(self->array));
    if (!PyArray_Check(value) || PyArray_TYPE((PyArrayObject *)value) != type ||
        !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)value) ||
        !PyArray_ISNOTSWAPPED((PyArrayObject *)value)) {
        PyErr_SetString(PyExc_TypeError,
                        "write: a C-contiguous numpy array of the array's dtype, native order");
        return -1;
    }
    uint64_t count = 1;
    for (uint32_t d = 0; d < r->rank; d++)
        count *= r->stop[d] - r->start[d];
    if ((uint64_t)PyArray_SIZE((PyArrayObject *)value) != count) {
        PyErr_Format(PyExc_ValueError, "write: %zd elements for a region of %llu",
                     (Py_ssize_t)PyArray_SIZE((PyArrayObject *)value), (unsigned long long)count);
        return -1;
    }
    *out = (PyArrayObject *)value;
    return 0;
}

/* Write through a transaction: every shard the region meets is written
 * once, whole, at commit. */
static sl_status
write_sharded(sl_array *a, const struct sl_region *r, const void *data, size_t n,
              struct sl_error *err)
{
    sl_txn *t = sl_txn_open(a, NULL, err);
    if (t == NULL)
        return err->code;
    sl_status st = sl_txn_write_region(t, r, data, n, NULL, err);
    if (st == SL_OK) {
        st = sl_txn_commit(t, NULL, err);
    } else {
        /* The write's error is the one to report; an abort that fails
         * too has nothing to add (the shards were never written). */
        sl_status ast = sl_txn_abort(t, NULL);
        (void)ast;
    }
    sl_txn_close(t);
    return st;
}

/* write(start, stop, block): block as block_of says */
static PyObject *
array_write(SlPyArray *self, PyObject *args)
{
    PyObject *start, *stop, *value;
    struct sl_region r;
    PyArrayObject *block;
    if (!PyArg_ParseTuple(args, "OOO", &start, &stop, &value) ||
        region_of(self, start, stop, &r) != 0 || block_of(self, value, &r, &block) != 0)
        return NULL;
    const struct sl_parallel *par = sl_py_parallel();
    if (par == NULL)
        return NULL;
    struct sl_error err = SL_ERROR_INIT;
    sl_status st;
    const void *data = PyArray_DATA(block);
    size_t n = (size_t)PyArray_NBYTES(block);
    bool sharded = sl_array_shard_shape(self->array) != NULL;
    Py_INCREF(block); /* the buffer stays alive while the GIL is released */
    Py_BEGIN_ALLOW_THREADS;
    if (sharded)
        st = write_sharded(self->array, &r, data, n, &err);
    else
        st = sl_array_write_region(self->array, &r, data, n, NULL, par, &err);
    Py_END_ALLOW_THREADS;
    Py_DECREF(block);
    if (st != SL_OK)
        return sl_py_raise(&err, NULL);
    Py_RETURN_NONE;
}

/* What one batched read needs, owned by read_many. */
struct batch {
    size_t n;
    struct sl_region *regions;
    void **bufs;
    size_t *bytes;
    sl_status *status;
    struct sl_error *errors;
};

static void
batch_free(struct batch *b)
{
    PyMem_Free(b->regions);
    PyMem_Free(b->bufs);
    PyMem_Free(b->bytes);
    PyMem_Free(b->status);
    PyMem_Free(b->errors);
}

static int
batch_alloc(struct batch *b, size_t n)
{
    b->n = n;
    b->regions = PyMem_Calloc(n + 1, sizeof *b->regions);
    b->bufs = PyMem_Calloc(n + 1, sizeof *b->bufs);
    b->bytes = PyMem_Calloc(n + 1, sizeof *b->bytes);
    b->status = PyMem_Calloc(n + 1, sizeof *b->status);
    b->errors = PyMem_Calloc(n + 1, sizeof *b->errors);
    if (b->regions == NULL || b->bufs == NULL || b->bytes == NULL || b->status == NULL ||
        b->errors == NULL) {
        batch_free(b);
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* Regions and output arrays of every (start, stop) pair in `sels`. */
static PyObject *
batch_prepare(SlPyArray *self, PyObject *sels, struct batch *b)
{
    Py_ssize_t n = PySequence_Fast_GET_SIZE(sels);
    PyObject *outs = PyList_New(n);
    if (outs == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(sels, i), *start, *stop;
        if (!PyTuple_Check(pair) || !PyArg_ParseTuple(pair, "OO", &start, &stop)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "read_many: selection %zd is not a (start, stop) pair",
                         i);
            Py_DECREF(outs);
            return NULL;
        }
        PyArrayObject *o = NULL;
        if (region_of(self, start, stop, &b->regions[i]) != 0 ||
            (o = new_block(self, &b->regions[i])) == NULL) {
            Py_DECREF(outs);
            return NULL;
        }
        b->bufs[i] = PyArray_DATA(o);
        b->bytes[i] = (size_t)PyArray_NBYTES(o);
        PyList_SET_ITEM(outs, i, (PyObject *)o);
    }
    return outs;
}

/* read_many([(start, stop), ...]) -> [numpy array, ...]: one batched plan */
static PyObject *
array_read_many(SlPyArray *self, PyObject *arg)
{
    /* A tuple of its own: nothing the pairs run can change it meanwhile. */
    PyObject *sels = PySequence_Tuple(arg);
    if (sels == NULL)
        return NULL;
    struct batch b;
    const struct sl_parallel *par = sl_py_parallel();
    if (par == NULL || batch_alloc(&b, (size_t)PySequence_Fast_GET_SIZE(sels)) != 0) {
        Py_DECREF(sels);
        return NULL;
    }
    PyObject *outs = batch_prepare(self, sels, &b);
    Py_DECREF(sels);
    if (outs == NULL) {
        batch_free(&b);
        return NULL;
    }
    struct sl_batch_opts o = SL_BATCH_OPTS_DEFAULT;
    o.par = par;
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = SL_OK;
    if (b.n > 0) {
        /* The module's warm codec contexts when no other read has them. */
        o.worker_ctxs = sl_py_ctxs_take(par);
        Py_BEGIN_ALLOW_THREADS;
        st = sl_array_read_batch(self->array, b.n, b.regions, b.bufs, b.bytes, &o, b.status,
                                 b.errors, &err);
        Py_END_ALLOW_THREADS;
        if (o.worker_ctxs != NULL)
            sl_py_ctxs_give();
    }
    batch_free(&b);
    if (st != SL_OK) {
        Py_DECREF(outs);
        return sl_py_raise(&err, "read_many");
    }
    return outs;
}

/* checksum() -> str: the hex SHA-256 `sluice checksum` prints */
static PyObject *
array_checksum(SlPyArray *self, PyObject *unused)
{
    (void)unused;
    if (sl_py_store_usable(self->store) != 0)
        return NULL;
    const struct sl_parallel *par = sl_py_parallel();
    if (par == NULL)
        return NULL;
    uint8_t digest[SL_SHA256_BYTES];
    struct sl_error err = SL_ERROR_INIT;
    sl_status st;
    Py_BEGIN_ALLOW_THREADS;
    st = sl_array_checksum(self->array, digest, par, &err);
    Py_END_ALLOW_THREADS;
    if (st != SL_OK)
        return sl_py_raise(&err, NULL);
    char hex[2 * SL_SHA256_BYTES + 1];
    for (size_t i = 0; i < SL_SHA256_BYTES; i++)
        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    return PyUnicode_FromString(hex);
}

/* ---- metadata ------------------------------------------------------------------- */

static PyObject *
array_get_shape(SlPyArray *self, void *closure)
{
    (void)closure;
    return sl_py_u64_tuple(sl_array_shape(self->array), sl_array_rank(self->array));
}

static PyObject *
array_get_chunks(SlPyArray *self, void *closure)
{
    (void)closure;
    return sl_py_u64_tuple(sl_array_chunk_shape(self->array), sl_array_rank(self->array));
}

static PyObject *
array_get_shards(SlPyArray *self, void *closure)
{
    (void)closure;
    const uint64_t *s = sl_array_shard_shape(self->array);
    if (s == NULL)
        Py_RETURN_NONE;
    return sl_py_u64_tuple(s, sl_array_rank(self->array));
}

static PyObject *
array_get_dtype(SlPyArray *self, void *closure)
{
    (void)closure;
    return (PyObject *)PyArray_DescrFromType(sl_py_npy_type(sl_array_dtype(self->array)));
}

static PyObject *
array_get_fill(SlPyArray *self, void *closure)
{
    (void)closure;
    PyArray_Descr *d = PyArray_DescrFromType(sl_py_npy_type(sl_array_dtype(self->array)));
    if (d == NULL)
        return NULL;
    /* PyArray_Scalar copies the element; it does not write through. */
    PyObject *v = PyArray_Scalar((void *)sl_array_fill_value(self->array), d, NULL);
    Py_DECREF(d);
    return v;
}

static PyObject *
array_get_attrs(SlPyArray *self, void *closure)
{
    (void)closure;
    const char *a = sl_array_attributes(self->array);
    return PyUnicode_FromString(a != NULL ? a : "{}");
}

static PyObject *
array_get_format(SlPyArray *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(sl_array_zarr_format(self->array));
}

static PyObject *
array_get_path(SlPyArray *self, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(sl_array_path(self->array));
}

static PyObject *
array_get_store(SlPyArray *self, void *closure)
{
    (void)closure;
    Py_INCREF(self->store);
    return (PyObject *)self->store;
}

static PyObject *
array_get_dim_names(SlPyArray *self, void *closure)
{
    (void)closure;
    uint32_t rank = sl_array_rank(self->array);
    bool any = false;
    for (uint32_t d = 0; d < rank; d++)
        any |= sl_array_dimension_name(self->array, d) != NULL;
    if (!any)
        Py_RETURN_NONE;
    PyObject *t = PyTuple_New(rank);
    for (uint32_t d = 0; t != NULL && d < rank; d++) {
        const char *name = sl_array_dimension_name(self->array, d);
        PyObject *v = name != NULL ? PyUnicode_FromString(name) : Py_NewRef(Py_None);
        if (v == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, d, v);
    }
    return t;
}

static PyObject *
array_get_codecs(SlPyArray *self, void *closure)
{
    (void)closure;
    char buf[512];
    sl_array_codecs_describe(self->array, buf, sizeof buf);
    return PyUnicode_FromString(buf);
}

static PyMethodDef array_methods[] = {
    {"read", (PyCFunction)array_read, METH_VARARGS,
     "read(start, stop) -> numpy array of the region [start, stop)."},
    {"write", (PyCFunction)array_write, METH_VARARGS,
     "write(start, stop, block): block a C-contiguous array of the region's size."},
    {"read_many", (PyCFunction)array_read_many, METH_O,
     "read_many([(start, stop), ...]) -> list of numpy arrays, in one batched read."},
    {"checksum", (PyCFunction)array_checksum, METH_NOARGS,
     "checksum() -> str: the SHA-256 of the decoded contents, as `sluice checksum`."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef array_getset[] = {
    {"shape", (getter)array_get_shape, NULL, "the array's shape", NULL},
    {"chunks", (getter)array_get_chunks, NULL, "the (inner) chunk shape", NULL},
    {"shards", (getter)array_get_shards, NULL, "the shard shape, or None", NULL},
    {"dtype", (getter)array_get_dtype, NULL, "a numpy dtype", NULL},
    {"fill_value", (getter)array_get_fill, NULL, "the fill value, a numpy scalar", NULL},
    {"attrs_json", (getter)array_get_attrs, NULL, "the attributes as JSON text", NULL},
    {"zarr_format", (getter)array_get_format, NULL, "2 or 3", NULL},
    {"path", (getter)array_get_path, NULL, "the array's path in its store", NULL},
    {"store", (getter)array_get_store, NULL, "the Store it was opened from", NULL},
    {"dimension_names", (getter)array_get_dim_names, NULL, "names, or None", NULL},
    {"codecs", (getter)array_get_codecs, NULL, "the codec chain, described", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject SlPyArray_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sluice._sluice.Array",
    .tp_basicsize = sizeof(SlPyArray),
    .tp_dealloc = (destructor)array_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An open array (made by Store.open_array or Store.create_array).",
    .tp_methods = array_methods,
    .tp_getset = array_getset,
};

int
sl_py_array_init(PyObject *m)
{
    if (PyType_Ready(&SlPyArray_Type) < 0)
        return -1;
    Py_INCREF(&SlPyArray_Type);
    return PyModule_AddObject(m, "Array", (PyObject *)&SlPyArray_Type);
}
