/* SPDX-License-Identifier: MIT */
/*
 * _sluice: the module, its exception, its pool and the conversions every
 * file uses.
 */
#define SL_PY_NUMPY_MAIN
#include "sl_py.h"

#include <pthread.h>
#include <unistd.h>

#include <sluice/checked.h>
#include <sluice/codec.h>
#include <sluice/pool.h>
#include <sluice/version.h>

PyObject *sl_py_error_type;

/* ---- errors ---------------------------------------------------------------- */

static int
set_attr_steal(PyObject *obj, const char *name, PyObject *value)
{
    if (value == NULL)
        return -1;
    int rc = PyObject_SetAttrString(obj, name, value);
    Py_DECREF(value);
    return rc;
}

static PyObject *
str_or_none(const char *s)
{
    if (s == NULL || s[0] == '\0')
        Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

PyObject *
sl_py_u64_tuple(const uint64_t *v, uint32_t n)
{
    PyObject *t = PyTuple_New(n);
    for (uint32_t d = 0; t != NULL && d < n; d++) {
        PyObject *x = PyLong_FromUnsignedLongLong(v[d]);
        if (x == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, d, x);
    }
    return t;
}

static PyObject *
chunk_tuple(const struct sl_chunk_key *k)
{
    if (k->rank == 0)
        Py_RETURN_NONE;
    return sl_py_u64_tuple(k->idx, k->rank);
}

static PyObject *
int_or_none(int v)
{
    if (v < 0)
        Py_RETURN_NONE;
    return PyLong_FromLong(v);
}

/* The exception object for `err`, its attributes set; NULL on failure. */
static PyObject *
error_object(const struct sl_error *err, const char *what)
{
    const char *text = err->text[0] != '\0' ? err->text : sl_status_message(err->code);
    PyObject *msg =
        what != NULL ? PyUnicode_FromFormat("%s: %s", what, text) : PyUnicode_FromString(text);
    if (msg == NULL)
        return NULL;
    PyObject *exc = PyObject_CallOneArg(sl_py_error_type, msg);
    if (exc == NULL) {
        Py_DECREF(msg);
        return NULL;
    }
    int rc = set_attr_steal(exc, "message", msg);
    rc |= set_attr_steal(exc, "code", PyUnicode_FromString(sl_status_name(err->code)));
    rc |= set_attr_steal(exc, "status", PyLong_FromLong((long)err->code));
    rc |= set_attr_steal(exc, "source", str_or_none(err->source));
    rc |= set_attr_steal(exc, "path", str_or_none(err->source));
    rc |= set_attr_steal(exc, "pointer", str_or_none(err->path));
    rc |= set_attr_steal(exc, "chunk", chunk_tuple(&err->chunk));
    rc |= set_attr_steal(exc, "line", int_or_none(err->line));
    rc |= set_attr_steal(exc, "column", int_or_none(err->column));
    if (rc != 0)
        Py_CLEAR(exc);
    return exc;
}

PyObject *
sl_py_raise(const struct sl_error *err, const char *what)
{
    PyObject *exc = error_object(err, what);
    if (exc != NULL) {
        PyErr_SetObject(sl_py_error_type, exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* ---- the pool ------------------------------------------------------------------ */

/* One pool per process, made on first use with the GIL held (which
 * serializes its creation); a child after fork has none of the parent's
 * workers, so it makes its own and leaves the parent's structure alone. */
static sl_pool *g_pool;
static pid_t g_pool_pid;
static struct sl_parallel g_par;

sl_pool *
sl_py_pool(void)
{
    return sl_py_parallel() != NULL ? g_pool : NULL;
}

const struct sl_parallel *
sl_py_parallel(void)
{
    if (g_pool != NULL && g_pool_pid == getpid())
        return &g_par;
    struct sl_pool_opts po = SL_POOL_OPTS_DEFAULT;
    struct sl_error err = SL_ERROR_INIT;
    if (sl_pool_opts_from_env(&po, &err) != SL_OK) {
        sl_py_raise(&err, "SLUICE_* environment");
        return NULL;
    }
    /* The GIL stays held: another thread must not make a second pool. */
    sl_pool *pool = sl_pool_create(&po, &err);
    if (pool == NULL) {
        sl_py_raise(&err, "starting sluice's worker pool");
        return NULL;
    }
    g_pool = pool;
    g_pool_pid = getpid();
    g_par = sl_pool_parallel(pool);
    return &g_par;
}

/* ---- warm codec contexts --------------------------------------------------------- */

static sl_codec_ctx **g_ctxs;
static unsigned g_n_ctxs;
static pid_t g_ctxs_pid;
static pthread_mutex_t g_ctxs_lock = PTHREAD_MUTEX_INITIALIZER;

struct sl_codec_ctx *const *
sl_py_ctxs_take(const struct sl_parallel *par)
{
    /* After fork a lock taken by a thread the child lacks stays taken:
     * trylock never waits, the child's reads make their own contexts. */
    if (pthread_mutex_trylock(&g_ctxs_lock) != 0)
        return NULL;
    if (g_ctxs_pid != getpid()) {
        /* A child's copy of its parent's contexts is not its own to free. */
        g_ctxs = NULL;
        g_n_ctxs = 0;
        g_ctxs_pid = getpid();
    }
    unsigned n = sl_parallel_workers(par);
    if (g_ctxs == NULL || g_n_ctxs != n) {
        for (unsigned i = 0; g_ctxs != NULL && i < g_n_ctxs; i++)
            sl_codec_ctx_destroy(g_ctxs[i]);
        free(g_ctxs);
        g_n_ctxs = 0;
        if ((g_ctxs = calloc(n > 0 ? n : 1, sizeof *g_ctxs)) == NULL) {
            pthread_mutex_unlock(&g_ctxs_lock);
            return NULL;
        }
        g_n_ctxs = n;
        /* A context that cannot be made stays NULL: the read makes one. */
        for (unsigned i = 0; i < n; i++)
            g_ctxs[i] = sl_codec_ctx_create(NULL, NULL);
    }
    return g_ctxs;
}

void
sl_py_ctxs_give(void)
{
    pthread_mutex_unlock(&g_ctxs_lock);
}

static void
ctxs_free(void)
{
    if (g_ctxs_pid != getpid())
        return;
    for (unsigned i = 0; g_ctxs != NULL && i < g_n_ctxs; i++)
        sl_codec_ctx_destroy(g_ctxs[i]);
    free(g_ctxs);
    g_ctxs = NULL;
    g_n_ctxs = 0;
}

static void
pool_free(void *module)
{
    ctxs_free();
    (void)module;
    if (g_pool != NULL && g_pool_pid == getpid()) {
        Py_BEGIN_ALLOW_THREADS;
        sl_pool_destroy(g_pool);
        Py_END_ALLOW_THREADS;
    }
    g_pool = NULL;
}

/* ---- dtypes and sequences ------------------------------------------------------- */

int
sl_py_npy_type(sl_dtype dt)
{
    static const int types[SL_DTYPE_COUNT_] = {
        [SL_DTYPE_BOOL] = NPY_BOOL,     [SL_DTYPE_I8] = NPY_INT8,
        [SL_DTYPE_I16] = NPY_INT16,     [SL_DTYPE_I32] = NPY_INT32,
        [SL_DTYPE_I64] = NPY_INT64,     [SL_DTYPE_U8] = NPY_UINT8,
        [SL_DTYPE_U16] = NPY_UINT16,    [SL_DTYPE_U32] = NPY_UINT32,
        [SL_DTYPE_U64] = NPY_UINT64,    [SL_DTYPE_F16] = NPY_HALF,
        [SL_DTYPE_F32] = NPY_FLOAT32,   [SL_DTYPE_F64] = NPY_FLOAT64,
        [SL_DTYPE_C64] = NPY_COMPLEX64, [SL_DTYPE_C128] = NPY_COMPLEX128,
    };
    return (unsigned)dt < SL_DTYPE_COUNT_ ? types[dt] : NPY_NOTYPE;
}

int
sl_py_dtype_of_name(const char *name, sl_dtype *out)
{
    for (int d = 0; d < SL_DTYPE_COUNT_; d++) {
        if (strcmp(sl_dtype_name((sl_dtype)d), name) == 0) {
            *out = (sl_dtype)d;
            return 0;
        }
    }
    PyErr_Format(PyExc_ValueError,
                 "dtype %s: sluice stores bool, int8..int64, uint8..uint64, float16, "
                 "float32, float64, complex64 and complex128",
                 name);
    return -1;
}

int
sl_py_u64_seq(PyObject *seq, uint32_t rank, uint64_t *out, const char *what)
{
    PyObject *fast = PySequence_Fast(seq, what);
    if (fast == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n != (Py_ssize_t)rank) {
        PyErr_Format(PyExc_ValueError, "%s: %zd values for %u dimensions", what, n, rank);
        Py_DECREF(fast);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PySequence_Fast_GET_ITEM(fast, i);
        if (!PyLong_Check(v)) {
            PyErr_Format(PyExc_TypeError, "%s[%zd]: an int, not %.100s", what, i,
                         Py_TYPE(v)->tp_name);
            Py_DECREF(fast);
            return -1;
        }
        unsigned long long x = PyLong_AsUnsignedLongLong(v);
        if (x == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "%s[%zd]: %R is not a size (0 .. 2**64-1)", what, i, v);
            Py_DECREF(fast);
            return -1;
        }
        out[i] = (uint64_t)x;
    }
    Py_DECREF(fast);
    return 0;
}

/* ---- the module ------------------------------------------------------------------ */

static PyObject *
py_status_name(PyObject *self, PyObject *arg)
{
    (void)self;
    long code = PyLong_AsLong(arg);
    if (code == -1 && PyErr_Occurred())
        return NULL;
    if (code < 0 || code > 255)
        return PyErr_Format(PyExc_ValueError, "status_name(%ld): codes are 0 .. 255", code);
    return PyUnicode_FromString(sl_status_name((sl_status)code));
}

static PyObject *
py_parse_size(PyObject *self, PyObject *arg)
{
    (void)self;
    Py_ssize_t size;
    const char *text = PyUnicode_AsUTF8AndSize(arg, &size);
    if (text == NULL)
        return NULL;
    if ((size_t)size != strlen(text))
        return PyErr_Format(PyExc_ValueError, "parse_size(%R): a size holds no NUL character", arg);
    uint64_t n = 0;
    struct sl_error err = SL_ERROR_INIT;
    if (sl_size_parse(text, &n, &err) != SL_OK) {
        PyErr_SetString(PyExc_ValueError, err.text);
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(n);
}

static PyMethodDef module_methods[] = {
    {"parse_size", py_parse_size, METH_O,
     "parse_size(text) -> int: bytes of \"512M\", \"2G\", \"1.5GiB\", ... (powers of 1024)."},
    {"status_name", py_status_name, METH_O,
     "status_name(code) -> str: the name of a sluice status code (0 is \"OK\")."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "sluice._sluice",
    .m_doc = "sluice's C engine; use the sluice package, which wraps it.",
    .m_size = -1,
    .m_methods = module_methods,
    .m_free = pool_free,
};

static int
add_error_type(PyObject *m)
{
    sl_py_error_type = PyErr_NewExceptionWithDoc(
        "sluice.Error",
        "A failure inside sluice.  Attributes: code (the status name, e.g. \"EIO\"), "
        "status (its number), message (the error record's text), path and source (the "
        "file, store key or node it names, or None), pointer (a JSON pointer, or None), "
        "chunk (grid coordinates, or None), line and column (1-based, or None).",
        PyExc_RuntimeError, NULL);
    if (sl_py_error_type == NULL)
        return -1;
    Py_INCREF(sl_py_error_type);
    return PyModule_AddObject(m, "Error", sl_py_error_type);
}

PyMODINIT_FUNC PyInit__sluice(void);

PyMODINIT_FUNC
PyInit__sluice(void)
{
    import_array();
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    if (add_error_type(m) != 0 || sl_py_store_init(m) != 0 || sl_py_array_init(m) != 0 ||
        sl_py_run_init(m) != 0 || PyModule_AddStringConstant(m, "version", sl_version()) != 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
