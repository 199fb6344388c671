/* SPDX-License-Identifier: MIT */
/*
 * The "python" operation: a Python function called per block, the kernel
 * behind sluice.Graph.map.  The module adds it to the ops registry when it
 * is imported; a graph names the function by a number that
 * _sluice.fn_register handed out for the length of one run.  The kernel
 * runs on the pool's workers and takes the GIL for each call, so Python
 * functions run one at a time while reads, decodes and writes go on.
 *
 * It is a neighbourhood op with no margin: that kind's kernel is told
 * where its block lies, which the function gets as its second argument.
 */
#include "sl_py.h"

#include <pthread.h>

#include <sluice/op_registry.h>

#define FN_MAX 1024

/* The functions of the runs going on; slots are taken and freed with the
 * GIL held, and read by bind (without it) under the lock. */
static PyObject *fns[FN_MAX];
static pthread_mutex_t fns_lock = PTHREAD_MUTEX_INITIALIZER;

struct pymap_state {
    uint32_t fn;
};

static const struct sl_op_param pymap_params[] = {
    {"fn", SL_OP_PARAM_NUMBER, true,
     "the function's number (sluice.Graph.map gives it; valid during its run)"},
    {"dtype", SL_OP_PARAM_DTYPE, false, "output dtype; default the input's"},
};

static sl_status
pymap_bind(struct sl_op *op, const struct sl_op_args *args, sl_dtype in_dtype, uint32_t rank,
           struct sl_error *err)
{
    double k = args->value[0].number;
    if (!(k >= 0 && k < FN_MAX) || k != (double)(uint32_t)k)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "python: fn %g is no function number (0 .. %d, from sluice.Graph.map)",
                            k, FN_MAX - 1);
    pthread_mutex_lock(&fns_lock);
    bool known = fns[(uint32_t)k] != NULL;
    pthread_mutex_unlock(&fns_lock);
    if (!known)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "python: no Python function %u is registered: \"python\" nodes are "
                            "made by sluice.Graph.map and run by sluice.run",
                            (uint32_t)k);
    struct pymap_state *s = (struct pymap_state *)op->u.state;
    s->fn = (uint32_t)k;
    op->out_dtype = args->value[1].set ? args->value[1].dtype : in_dtype;
    for (uint32_t d = 0; d < rank; d++)
        op->halo_lo[d] = op->halo_hi[d] = 0;
    op->boundary = SL_BOUNDARY_NEAREST;
    return SL_OK;
}

/* A numpy array over view `v` (no copy); NULL with an exception. */
static PyObject *
view_array(const struct sl_view *v, bool writable)
{
    npy_intp dims[SL_MAX_RANK], strides[SL_MAX_RANK];
    size_t es = sl_dtype_size(v->dtype);
    for (uint32_t d = 0; d < v->rank; d++) {
        dims[d] = (npy_intp)v->shape[d];
        strides[d] = (npy_intp)(v->stride[d] * (int64_t)es);
    }
    int flags = NPY_ARRAY_ALIGNED | (writable ? NPY_ARRAY_WRITEABLE : 0);
    return PyArray_New(&PyArray_Type, (int)v->rank, dims, sl_py_npy_type(v->dtype), strides,
                       v->data, 0, flags, NULL);
}

/* The block's place: a tuple of slices, one per dimension. */
static PyObject *
location(const struct sl_view *out, const uint64_t *start)
{
    PyObject *t = PyTuple_New(out->rank);
    for (uint32_t d = 0; t != NULL && d < out->rank; d++) {
        PyObject *a = PyLong_FromUnsignedLongLong(start[d]);
        PyObject *b = PyLong_FromUnsignedLongLong(start[d] + out->shape[d]);
        PyObject *s = a != NULL && b != NULL ? PySlice_New(a, b, NULL) : NULL;
        Py_XDECREF(a);
        Py_XDECREF(b);
        if (s == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, d, s);
    }
    return t;
}

/* The pending exception as a chunk's error: its type and text. */
static sl_status
exception_error(PyObject *fn, struct sl_error *err)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    const char *tname = type != NULL ? ((PyTypeObject *)type)->tp_name : "exception";
    PyObject *text = value != NULL ? PyObject_Str(value) : NULL;
    const char *msg = text != NULL ? PyUnicode_AsUTF8(text) : NULL;
    PyObject *qn = PyObject_GetAttrString(fn, "__qualname__");
    const char *name = qn != NULL && PyUnicode_Check(qn) ? PyUnicode_AsUTF8(qn) : NULL;
    PyErr_Clear();
    sl_status st = sl_error_set(err, SL_EFUNC, NULL, "python function %s raised %s: %s",
                                name != NULL ? name : "?", tname, msg != NULL ? msg : "");
    Py_XDECREF(qn);
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return st;
}

/* Copy what the function returned into the output block; -1 with an
 * exception (a wrong shape, or values numpy cannot convert). */
static int
store_result(PyObject *ret, PyObject *out)
{
    PyArrayObject *o = (PyArrayObject *)out;
    PyArrayObject *r = (PyArrayObject *)PyArray_FROM_O(ret);
    if (r == NULL)
        return -1;
    int same = PyArray_NDIM(r) == PyArray_NDIM(o);
    for (int d = 0; same && d < PyArray_NDIM(o); d++)
        same = PyArray_DIM(r, d) == PyArray_DIM(o, d);
    if (!same) {
        PyObject *rs = PyObject_GetAttrString((PyObject *)r, "shape");
        PyObject *os = PyObject_GetAttrString(out, "shape");
        PyErr_Format(PyExc_ValueError, "returned an array of shape %S for a block of shape %S",
                     rs != NULL ? rs : Py_None, os != NULL ? os : Py_None);
        Py_XDECREF(rs);
        Py_XDECREF(os);
        Py_DECREF(r);
        return -1;
    }
    if (PyArray_TYPE(r) == NPY_OBJECT || PyArray_TYPE(r) == NPY_STRING ||
        PyArray_TYPE(r) == NPY_UNICODE) {
        PyErr_Format(PyExc_TypeError, "returned values of dtype %S, not numbers",
                     (PyObject *)PyArray_DESCR(r));
        Py_DECREF(r);
        return -1;
    }
    int rc = PyArray_CopyInto(o, r);
    Py_DECREF(r);
    return rc;
}

static sl_status
pymap_apply_at(const struct sl_op *op, const uint64_t *shape, const struct sl_view *in,
               const uint64_t *in_start, const struct sl_view *out, const uint64_t *out_start,
               void *scratch, size_t scratch_bytes, struct sl_error *err)
{
    (void)shape, (void)in_start, (void)scratch, (void)scratch_bytes;
    const struct pymap_state *s = (const struct pymap_state *)op->u.state;
    PyGILState_STATE g = PyGILState_Ensure();
    sl_status st = SL_OK;
    PyObject *fn = fns[s->fn];
    if (fn == NULL) {
        st = sl_error_set(err, SL_EINVAL, NULL, "python: function %u was released", s->fn);
        PyGILState_Release(g);
        return st;
    }
    Py_INCREF(fn);
    PyObject *a = view_array(in, false), *o = view_array(out, true);
    PyObject *where = location(out, out_start);
    PyObject *ret = NULL;
    if (a != NULL && o != NULL && where != NULL)
        ret = PyObject_CallFunctionObjArgs(fn, a, where, NULL);
    if (ret == NULL || store_result(ret, o) != 0)
        st = exception_error(fn, err);
    Py_XDECREF(ret);
    Py_XDECREF(where);
    Py_XDECREF(o);
    Py_XDECREF(a);
    Py_DECREF(fn);
    PyGILState_Release(g);
    return st;
}

static const struct sl_op_desc pymap_op = {
    .name = "python",
    .kind = SL_OP_KIND_HALO,
    .summary = "a Python function per block (sluice.Graph.map): fn(block, where) -> block",
    .n_params = 2,
    .params = pymap_params,
    .bind = pymap_bind,
    .apply = NULL,
    .scratch_bytes = NULL,
    .apply_at = pymap_apply_at,
};

/* fn_register(callable) -> number */
static PyObject *
py_fn_register(PyObject *self, PyObject *fn)
{
    (void)self;
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "map: a function, not %s", Py_TYPE(fn)->tp_name);
        return NULL;
    }
    pthread_mutex_lock(&fns_lock);
    uint32_t k = 0;
    while (k < FN_MAX && fns[k] != NULL)
        k++;
    if (k < FN_MAX) {
        Py_INCREF(fn);
        fns[k] = fn;
    }
    pthread_mutex_unlock(&fns_lock);
    if (k == FN_MAX) {
        PyErr_Format(PyExc_RuntimeError, "more than %d Python functions in runs at once", FN_MAX);
        return NULL;
    }
    return PyLong_FromUnsignedLong(k);
}

/* fn_release(number) */
static PyObject *
py_fn_release(PyObject *self, PyObject *arg)
{
    (void)self;
    unsigned long k = PyLong_AsUnsignedLong(arg);
    if (PyErr_Occurred())
        return NULL;
    if (k >= FN_MAX) {
        PyErr_Format(PyExc_ValueError, "fn_release: %lu is no function number", k);
        return NULL;
    }
    pthread_mutex_lock(&fns_lock);
    PyObject *fn = fns[k];
    fns[k] = NULL;
    pthread_mutex_unlock(&fns_lock);
    Py_XDECREF(fn);
    Py_RETURN_NONE;
}

static PyMethodDef pymap_methods[] = {
    {"fn_register", py_fn_register, METH_O,
     "fn_register(fn) -> number: fn callable from \"python\" nodes until fn_release"},
    {"fn_release", py_fn_release, METH_O, "fn_release(number)"},
    {NULL, NULL, 0, NULL},
};

int
sl_py_pymap_init(PyObject *m)
{
    const struct sl_op_desc *d;
    struct sl_error err = SL_ERROR_INIT;
    /* Imported again in a process (a second interpreter, a reload): the
     * row is there already. */
    if (sl_op_lookup("python", &d, NULL) != SL_OK && sl_op_register(&pymap_op, &err) != SL_OK) {
        sl_py_raise(&err, "registering the \"python\" operation");
        return -1;
    }
    return PyModule_AddFunctions(m, pymap_methods);
}
