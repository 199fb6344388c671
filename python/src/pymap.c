/* SPDX-License-Identifier: MIT */
/*
 * Python functions as the functions of graph files' "map" nodes
 * (sluice.Graph.map): sl_py_map_call is the sl_map_fn behind every one,
 * its context the Python callable.  It runs on the pool's workers and
 * takes the GIL for each call, so Python functions run one at a time
 * while reads, decodes and writes go on.
 */
#include "sl_py.h"

#include <sluice/graph_json.h>

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
    PyObject *a = PyArray_New(&PyArray_Type, (int)v->rank, dims, sl_py_npy_type(v->dtype), strides,
                              v->data, 0, flags, NULL);
    /* A base that is no buffer: numpy then refuses to make an input block
     * writable (the memory is the executor's). */
    PyObject *guard = a != NULL && !writable ? PyCapsule_New(v->data, NULL, NULL) : NULL;
    if (guard != NULL && PyArray_SetBaseObject((PyArrayObject *)a, guard) != 0) {
        Py_DECREF(guard);
        Py_CLEAR(a);
    } else if (a != NULL && !writable && guard == NULL) {
        Py_CLEAR(a);
    }
    return a;
}

/* The block's place: a tuple of slices, one per dimension. */
static PyObject *
location(const struct sl_region *r)
{
    PyObject *t = PyTuple_New(r->rank);
    for (uint32_t d = 0; t != NULL && d < r->rank; d++) {
        PyObject *a = PyLong_FromUnsignedLongLong(r->start[d]);
        PyObject *b = PyLong_FromUnsignedLongLong(r->stop[d]);
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

/* The arguments of one call: the input blocks as read-only arrays, then
 * the output block's place; NULL with an exception. */
static PyObject *
call_args(const struct sl_block *out, size_t n_inputs, const struct sl_block *inputs)
{
    PyObject *args = PyTuple_New((Py_ssize_t)n_inputs + 1);
    for (size_t i = 0; args != NULL && i <= n_inputs; i++) {
        PyObject *v = i < n_inputs ? view_array(&inputs[i].view, false) : location(&out->region);
        if (v == NULL)
            Py_CLEAR(args);
        else
            PyTuple_SET_ITEM(args, (Py_ssize_t)i, v);
    }
    return args;
}

sl_status
sl_py_map_call(void *ctx, struct sl_block *out, size_t n_inputs, const struct sl_block *inputs,
               struct sl_error *err)
{
    PyObject *fn = ctx;
    PyGILState_STATE g = PyGILState_Ensure();
    sl_status st = SL_OK;
    PyObject *args = call_args(out, n_inputs, inputs);
    PyObject *o = args != NULL ? view_array(&out->view, true) : NULL;
    PyObject *ret = o != NULL ? PyObject_Call(fn, args, NULL) : NULL;
    if (ret == NULL || store_result(ret, o) != 0)
        st = exception_error(fn, err);
    Py_XDECREF(ret);
    Py_XDECREF(o);
    Py_XDECREF(args);
    PyGILState_Release(g);
    return st;
}
