/* SPDX-License-Identifier: MIT */
/*
 * _sluice.Store: an open store (a directory, file://, http(s):// or s3://),
 * and what is found at paths inside it: arrays, groups, their members.
 */
#include "sl_py.h"

#include <unistd.h>

#include <sluice/buf.h>
#include <sluice/codec.h>
#include <sluice/remote.h>

static void
store_dealloc(SlPyStore *self)
{
    /* In a child after fork the store is the parent's: closing it would
     * wait for an I/O thread the child does not have.  It is left. */
    if (self->store != NULL && self->pid == getpid())
        sl_store_unref(self->store);
    Py_XDECREF(self->url);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Store(url, *, endpoint=None, region=None, profile=None, anonymous=False,
 *       io_concurrency=0, retries=-1, deadline_s=0, missing_on_403=False,
 *       read_only=False, create=True) */
static int
store_init(SlPyStore *self, PyObject *args, PyObject *kwargs)
{
    static char *kw[] = {
        "url",     "endpoint",   "region",         "profile",   "anonymous", "io_concurrency",
        "retries", "deadline_s", "missing_on_403", "read_only", "create",    NULL};
    const char *url, *endpoint = NULL, *region = NULL, *profile = NULL;
    int anonymous = 0, missing_on_403 = 0, read_only = 0, create = 1;
    int io_concurrency = 0;
    int retries = -1;
    double deadline_s = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|$zzzpiidppp", kw, &url, &endpoint, &region,
                                     &profile, &anonymous, &io_concurrency, &retries, &deadline_s,
                                     &missing_on_403, &read_only, &create))
        return -1;
    if (self->store != NULL) {
        PyErr_SetString(PyExc_TypeError, "a Store is opened once: make another Store");
        return -1;
    }
    if (io_concurrency < 0 || io_concurrency > 4096) {
        PyErr_Format(PyExc_ValueError, "io_concurrency=%d: 1 .. 4096 requests in flight",
                     io_concurrency);
        return -1;
    }
    if (retries < -1 || retries > 100) {
        PyErr_Format(PyExc_ValueError, "retries=%d: 0 .. 100 tries after the first", retries);
        return -1;
    }
    if (deadline_s < 0 || deadline_s != deadline_s) {
        PyErr_SetString(PyExc_ValueError, "deadline_s: seconds per remote request, >= 0");
        return -1;
    }
    struct sl_url_store_opts o = SL_URL_STORE_OPTS_DEFAULT;
    o.fs.create = create != 0;
    o.fs.read_only = read_only != 0;
    if (io_concurrency > 0)
        o.http.io_concurrency = (unsigned)io_concurrency;
    if (retries >= 0)
        o.http.max_attempts = (unsigned)retries + 1;
    if (deadline_s > 0)
        o.http.request_deadline_s = deadline_s;
    o.http.missing_on_403 = missing_on_403 != 0;
    o.s3.endpoint = endpoint;
    o.s3.region = region;
    o.s3.profile = profile;
    o.s3.anonymous = anonymous != 0;
    o.s3.read_only = read_only != 0;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s;
    Py_BEGIN_ALLOW_THREADS;
    s = sl_store_open_url(url, &o, &err);
    Py_END_ALLOW_THREADS;
    if (s == NULL) {
        sl_py_raise(&err, url);
        return -1;
    }
    self->store = s;
    self->pid = getpid();
    Py_XSETREF(self->url, PyUnicode_FromString(url));
    return self->url != NULL ? 0 : -1;
}

static int
store_ready(SlPyStore *self)
{
    if (self->store == NULL) {
        PyErr_SetString(PyExc_ValueError, "the store is not open (Store.__init__ was not called)");
        return -1;
    }
    return sl_py_store_usable(self);
}

int
sl_py_store_usable(const SlPyStore *self)
{
    if (self->pid == getpid())
        return 0;
    struct sl_error err = SL_ERROR_INIT;
    err.code = SL_ESTATE;
    snprintf(err.text, sizeof err.text,
             "%s was opened in process %ld, before a fork: open it again in this one "
             "(sluice.open; pickled arrays reopen themselves)",
             self->url != NULL ? PyUnicode_AsUTF8(self->url) : "the store", (long)self->pid);
    sl_py_raise(&err, NULL);
    return -1;
}

/* probe(path) -> ("array" | "group" | None, zarr_format or None) */
static PyObject *
store_probe(SlPyStore *self, PyObject *args)
{
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path) || store_ready(self) != 0)
        return NULL;
    struct sl_error err = SL_ERROR_INIT;
    sl_zarr_kind kind = SL_ZARR_NONE;
    int fmt = 0;
    sl_status st;
    Py_BEGIN_ALLOW_THREADS;
    st = sl_zarr_probe(self->store, path, &kind, &fmt, &err);
    Py_END_ALLOW_THREADS;
    if (st != SL_OK)
        return sl_py_raise(&err, path[0] != '\0' ? path : NULL);
    if (kind == SL_ZARR_NONE)
        return Py_BuildValue("(OO)", Py_None, Py_None);
    return Py_BuildValue("(si)", kind == SL_ZARR_ARRAY ? "array" : "group", fmt);
}

static PyObject *
array_object(SlPyStore *self, sl_array *a)
{
    SlPyArray *obj = PyObject_New(SlPyArray, &SlPyArray_Type);
    if (obj == NULL) {
        sl_array_unref(a);
        return NULL;
    }
    obj->array = a;
    Py_INCREF(self);
    obj->store = self;
    return (PyObject *)obj;
}

/* open_array(path) -> Array */
static PyObject *
store_open_array(SlPyStore *self, PyObject *args)
{
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path) || store_ready(self) != 0)
        return NULL;
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a;
    Py_BEGIN_ALLOW_THREADS;
    a = sl_array_open(self->store, path, NULL, &err);
    Py_END_ALLOW_THREADS;
    if (a == NULL)
        return sl_py_raise(&err, NULL);
    return array_object(self, a);
}

/* Fill `spec`'s codec from "zstd:1", "none", "blosc:lz4:5", ...; -1 with ValueError. */
static int
parse_codec(const char *text, struct sl_array_spec *spec)
{
    struct sl_error err = SL_ERROR_INIT;
    if (sl_codec_spec_parse(text, &spec->codec, &err) == SL_OK)
        return 0;
    PyErr_Format(PyExc_ValueError, "codec=%s: %s", text, err.text);
    return -1;
}

static int
parse_shape_args(PyObject *shape, PyObject *chunks, PyObject *shards, struct sl_array_spec *spec)
{
    Py_ssize_t rank = PySequence_Size(shape);
    if (rank < 0)
        return -1;
    if (rank > SL_MAX_RANK) {
        PyErr_Format(PyExc_ValueError, "shape has %zd dimensions; sluice takes at most %d", rank,
                     SL_MAX_RANK);
        return -1;
    }
    spec->rank = (uint32_t)rank;
    if (sl_py_u64_seq(shape, spec->rank, spec->shape, "shape") != 0 ||
        sl_py_u64_seq(chunks, spec->rank, spec->chunk_shape, "chunks") != 0)
        return -1;
    if (shards != Py_None && sl_py_u64_seq(shards, spec->rank, spec->shard_shape, "shards") != 0)
        return -1;
    return 0;
}

/* create_array(path, shape, chunks, dtype, shards, codec, zarr_format,
 *              fill (bytes of one element, native order, or None),
 *              attrs_json or None, overwrite) -> Array */
static PyObject *
store_create_array(SlPyStore *self, PyObject *args)
{
    const char *path, *dtype, *codec, *attrs = NULL;
    PyObject *shape, *chunks, *shards, *fill;
    int zarr_format, overwrite;
    if (!PyArg_ParseTuple(args, "sOOsOsiOzp", &path, &shape, &chunks, &dtype, &shards, &codec,
                          &zarr_format, &fill, &attrs, &overwrite) ||
        store_ready(self) != 0)
        return NULL;
    struct sl_array_spec spec = SL_ARRAY_SPEC_DEFAULT;
    spec.zarr_format = zarr_format;
    spec.attributes_json = attrs;
    spec.overwrite = overwrite != 0;
    if (parse_shape_args(shape, chunks, shards, &spec) != 0 ||
        sl_py_dtype_of_name(dtype, &spec.dtype) != 0 || parse_codec(codec, &spec) != 0)
        return NULL;
    if (fill != Py_None) {
        if (!PyBytes_Check(fill) || (size_t)PyBytes_GET_SIZE(fill) != sl_dtype_size(spec.dtype)) {
            PyErr_Format(PyExc_ValueError, "fill_value: one %s element", dtype);
            return NULL;
        }
        spec.fill_value = PyBytes_AS_STRING(fill);
    }
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a;
    Py_BEGIN_ALLOW_THREADS;
    a = sl_array_create(self->store, path, &spec, NULL, &err);
    Py_END_ALLOW_THREADS;
    if (a == NULL)
        return sl_py_raise(&err, NULL);
    return array_object(self, a);
}

/* group_attrs(path) -> str (JSON object text) */
static PyObject *
store_group_attrs(SlPyStore *self, PyObject *args)
{
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path) || store_ready(self) != 0)
        return NULL;
    struct sl_error err = SL_ERROR_INIT;
    struct sl_buf buf = SL_BUF_INIT;
    sl_status st;
    Py_BEGIN_ALLOW_THREADS;
    st = sl_group_attributes(self->store, path, &buf, &err);
    Py_END_ALLOW_THREADS;
    PyObject *out = st == SL_OK
                        ? PyUnicode_FromStringAndSize((const char *)buf.data, (Py_ssize_t)buf.size)
                        : sl_py_raise(&err, NULL);
    sl_buf_fini(&buf);
    return out;
}

/* What sl_group_members finds, gathered without the GIL. */
struct member_list {
    size_t n, cap;
    char **paths;
    sl_zarr_kind *kinds;
};

static sl_status
member_add(void *arg, const struct sl_group_member *m)
{
    struct member_list *l = arg;
    if (l->n == l->cap) {
        size_t cap = l->cap == 0 ? 16 : 2 * l->cap;
        char **p = realloc(l->paths, cap * sizeof *p);
        if (p == NULL)
            return SL_ENOMEM;
        l->paths = p;
        sl_zarr_kind *k = realloc(l->kinds, cap * sizeof *k);
        if (k == NULL)
            return SL_ENOMEM;
        l->kinds = k;
        l->cap = cap;
    }
    if ((l->paths[l->n] = strdup(m->path)) == NULL)
        return SL_ENOMEM;
    l->kinds[l->n++] = m->kind;
    return SL_OK;
}

static PyObject *
member_tuples(const struct member_list *l)
{
    PyObject *out = PyList_New((Py_ssize_t)l->n);
    for (size_t i = 0; out != NULL && i < l->n; i++) {
        const char *kind = l->kinds[i] == SL_ZARR_ARRAY   ? "array"
                           : l->kinds[i] == SL_ZARR_GROUP ? "group"
                                                          : "unreadable";
        PyObject *t = Py_BuildValue("(ss)", l->paths[i], kind);
        if (t == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, (Py_ssize_t)i, t);
    }
    return out;
}

/* members(path) -> [(path from the store's root, kind), ...], nested ones too */
static PyObject *
store_members(SlPyStore *self, PyObject *args)
{
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path) || store_ready(self) != 0)
        return NULL;
    struct sl_error err = SL_ERROR_INIT;
    struct member_list l = {0};
    sl_status st;
    Py_BEGIN_ALLOW_THREADS;
    st = sl_group_members(self->store, path, member_add, &l, &err);
    Py_END_ALLOW_THREADS;
    PyObject *out;
    if (st == SL_ENOMEM && err.code == SL_OK)
        out = PyErr_NoMemory();
    else
        out = st == SL_OK ? member_tuples(&l) : sl_py_raise(&err, NULL);
    for (size_t i = 0; i < l.n; i++)
        free(l.paths[i]);
    free(l.paths);
    free(l.kinds);
    return out;
}

/* create_group(path, zarr_format, attrs_json or None) */
static PyObject *
store_create_group(SlPyStore *self, PyObject *args)
{
    const char *path, *attrs = NULL;
    int fmt;
    if (!PyArg_ParseTuple(args, "siz", &path, &fmt, &attrs) || store_ready(self) != 0)
        return NULL;
    struct sl_error err = SL_ERROR_INIT;
    sl_status st;
    Py_BEGIN_ALLOW_THREADS;
    st = sl_group_create(self->store, path, fmt, attrs, &err);
    Py_END_ALLOW_THREADS;
    if (st != SL_OK)
        return sl_py_raise(&err, NULL);
    Py_RETURN_NONE;
}

static PyObject *
store_get_url(SlPyStore *self, void *closure)
{
    (void)closure;
    if (self->url == NULL)
        Py_RETURN_NONE;
    Py_INCREF(self->url);
    return self->url;
}

static PyObject *
store_get_kind(SlPyStore *self, void *closure)
{
    (void)closure;
    if (store_ready(self) != 0)
        return NULL;
    return PyUnicode_FromString(sl_store_kind(self->store));
}

static PyMethodDef store_methods[] = {
    {"probe", (PyCFunction)store_probe, METH_VARARGS,
     "probe(path) -> (kind, zarr_format): \"array\", \"group\" or None."},
    {"open_array", (PyCFunction)store_open_array, METH_VARARGS, "open_array(path) -> Array"},
    {"create_array", (PyCFunction)store_create_array, METH_VARARGS,
     "create_array(path, shape, chunks, dtype, shards, codec, zarr_format, fill, attrs_json, "
     "overwrite) -> Array"},
    {"group_attrs", (PyCFunction)store_group_attrs, METH_VARARGS,
     "group_attrs(path) -> str: the group's attributes as JSON text."},
    {"members", (PyCFunction)store_members, METH_VARARGS,
     "members(path) -> list of (path, kind) below the group, nested ones too."},
    {"create_group", (PyCFunction)store_create_group, METH_VARARGS,
     "create_group(path, zarr_format, attrs_json)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef store_getset[] = {
    {"url", (getter)store_get_url, NULL, "the URL or path the store was opened with", NULL},
    {"kind", (getter)store_get_kind, NULL, "\"fs\", \"http\", \"s3\", ...", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject SlPyStore_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sluice._sluice.Store",
    .tp_basicsize = sizeof(SlPyStore),
    .tp_dealloc = (destructor)store_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Store(url, **options): an open store; see sluice.open for the options.",
    .tp_methods = store_methods,
    .tp_getset = store_getset,
    .tp_init = (initproc)store_init,
    .tp_new = PyType_GenericNew,
};

int
sl_py_store_init(PyObject *m)
{
    if (PyType_Ready(&SlPyStore_Type) < 0)
        return -1;
    Py_INCREF(&SlPyStore_Type);
    return PyModule_AddObject(m, "Store", (PyObject *)&SlPyStore_Type);
}
