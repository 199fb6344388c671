/* SPDX-License-Identifier: MIT */
/*
 * _sluice.run_graph: load a graph file's text, run it on the module's pool
 * (or a pool of the threads asked for), put its outputs in place, and
 * return the report as plain Python values: counts, the failed chunks,
 * every put's status array and every stats node's results.
 */
#include "sl_py.h"

#include <sluice/graph.h>
#include <sluice/graph_json.h>
#include <sluice/graph_node.h>
#include <sluice/plan.h>
#include <sluice/pool.h>
#include <sluice/pyramid.h>
#include <sluice/stats.h>

#define LOAD_ERRORS 32

/* Raise the loader's first error, with every one in the exception's
 * `errors` attribute (a list of messages). */
static PyObject *
raise_load_errors(const struct sl_graph_json_errors *e)
{
    if (e->count == 0) {
        struct sl_error none = SL_ERROR_INIT;
        none.code = SL_EINVAL;
        snprintf(none.text, sizeof none.text, "the graph could not be loaded");
        return sl_py_raise(&none, NULL);
    }
    sl_py_raise(&e->errors[0], NULL);
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *list = PyList_New((Py_ssize_t)e->count);
    for (size_t i = 0; list != NULL && i < e->count; i++) {
        const struct sl_error *x = &e->errors[i];
        PyObject *s = x->path[0] != '\0' ? PyUnicode_FromFormat("%s: %s", x->path, x->text)
                                         : PyUnicode_FromString(x->text);
        if (s == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, s);
    }
    if (list != NULL && value != NULL) {
        PyObject_SetAttrString(value, "errors", list);
        PyObject_SetAttrString(value, "truncated", e->truncated ? Py_True : Py_False);
    }
    Py_XDECREF(list);
    PyErr_Restore(type, value, tb);
    return NULL;
}

static int
dict_set(PyObject *d, const char *key, PyObject *v)
{
    if (v == NULL)
        return -1;
    int rc = PyDict_SetItemString(d, key, v);
    Py_DECREF(v);
    return rc;
}

static PyObject *
summary_dict(const struct sl_run_summary *s, sl_status st)
{
    PyObject *d = PyDict_New();
    if (d == NULL)
        return NULL;
    int rc = dict_set(d, "ok", PyBool_FromLong(st == SL_OK));
    rc |= dict_set(d, "n_chunks", PyLong_FromUnsignedLongLong(s->n_chunks));
    rc |= dict_set(d, "n_ok", PyLong_FromUnsignedLongLong(s->n_ok));
    rc |= dict_set(d, "n_failed", PyLong_FromUnsignedLongLong(s->n_failed));
    rc |= dict_set(d, "n_upstream", PyLong_FromUnsignedLongLong(s->n_upstream));
    rc |= dict_set(d, "n_canceled", PyLong_FromUnsignedLongLong(s->n_canceled));
    rc |= dict_set(d, "n_tasks", PyLong_FromUnsignedLongLong(s->n_tasks));
    rc |= dict_set(d, "bytes_read", PyLong_FromUnsignedLongLong(s->bytes_read));
    rc |= dict_set(d, "bytes_written", PyLong_FromUnsignedLongLong(s->bytes_written));
    rc |= dict_set(d, "peak_bytes", PyLong_FromSize_t(s->peak_bytes));
    rc |= dict_set(d, "errors_dropped", PyLong_FromSize_t(s->errors_dropped));
    rc |= dict_set(d, "elapsed_s", PyFloat_FromDouble(s->elapsed_s));
    rc |= dict_set(d, "remote_requests", PyLong_FromUnsignedLongLong(s->remote_requests));
    rc |= dict_set(d, "remote_retries", PyLong_FromUnsignedLongLong(s->remote_retries));
    rc |= dict_set(d, "run_error", PyUnicode_FromString(sl_status_name(s->run_error)));
    if (rc != 0)
        Py_CLEAR(d);
    return d;
}

/* [{"put", "chunk", "code", "message", "path"}, ...] */
static PyObject *
failed_list(const sl_plan *plan)
{
    const sl_graph *g = sl_plan_graph(plan);
    size_t n = 0;
    const struct sl_chunk_error *e = sl_plan_errors(plan, &n);
    PyObject *out = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; out != NULL && i < n; i++) {
        struct sl_node_info info;
        if (sl_graph_node_info(g, e[i].node, &info, NULL) != SL_OK)
            info = (struct sl_node_info){.name = "?"};
        const char *path = info.array != NULL ? sl_array_path(info.array) : "";
        PyObject *rec =
            Py_BuildValue("{s:s,s:N,s:s,s:s,s:s}", "put", info.name, "chunk",
                          sl_py_u64_tuple(e[i].key.idx, e[i].key.rank), "code",
                          sl_status_name(e[i].code), "message", e[i].text, "path", path);
        if (rec == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, (Py_ssize_t)i, rec);
    }
    return out;
}

/* A put's codes as a uint8 numpy array over its chunk grid. */
static PyObject *
status_array(const struct sl_put_status *ps)
{
    npy_intp dims[SL_MAX_RANK];
    for (uint32_t d = 0; d < ps->grid->rank; d++)
        dims[d] = (npy_intp)ps->grid->n_chunks[d];
    PyObject *a = PyArray_SimpleNew((int)ps->grid->rank, dims, NPY_UINT8);
    if (a != NULL && ps->grid->n_total > 0)
        memcpy(PyArray_DATA((PyArrayObject *)a), ps->codes, (size_t)ps->grid->n_total);
    return a;
}

static PyObject *
stats_set_dict(const struct sl_stats_info *si, const struct sl_stats_result *r, uint64_t set)
{
    PyObject *d =
        Py_BuildValue("{s:K,s:K,s:d,s:d,s:d,s:d,s:d}", "count", r->count, "nan_count", r->nan_count,
                      "min", r->min, "max", r->max, "sum", r->sum, "mean", r->mean, "std", r->std);
    if (d == NULL)
        return NULL;
    uint64_t idx[SL_MAX_RANK], rest = set;
    for (uint32_t k = si->n_per; k-- > 0;) {
        idx[k] = rest % si->per_extent[k];
        rest /= si->per_extent[k];
    }
    PyObject *at = sl_py_u64_tuple(idx, si->n_per);
    int rc = dict_set(d, "index", at);
    PyObject *pct = PyDict_New();
    for (size_t k = 0; pct != NULL && k < r->n_percentiles; k++) {
        PyObject *q = PyFloat_FromDouble(si->percentile_q[k]);
        PyObject *v = PyFloat_FromDouble(r->percentile[k]);
        if (q == NULL || v == NULL || PyDict_SetItem(pct, q, v) != 0)
            Py_CLEAR(pct);
        Py_XDECREF(q);
        Py_XDECREF(v);
    }
    rc |= dict_set(d, "percentiles", pct);
    if (r->bins > 0) {
        npy_intp n = (npy_intp)r->bins;
        PyObject *h = PyArray_SimpleNew(1, &n, NPY_UINT64);
        if (h != NULL)
            memcpy(PyArray_DATA((PyArrayObject *)h), r->histogram, r->bins * sizeof(uint64_t));
        rc |= dict_set(d, "histogram", h);
        rc |= dict_set(d, "range", Py_BuildValue("(dd)", r->lo, r->hi));
        rc |= dict_set(d, "below", PyLong_FromUnsignedLongLong(r->below));
        rc |= dict_set(d, "above", PyLong_FromUnsignedLongLong(r->above));
    }
    if (rc != 0)
        Py_CLEAR(d);
    return d;
}

/* One stats node's sets as a list of dicts, or the reason there are none
 * as a string (a chunk failed, ...). */
static PyObject *
stats_sets(const sl_plan *plan, uint32_t id, const struct sl_stats_info *si)
{
    struct sl_error err = SL_ERROR_INIT;
    if (si->omero && sl_plan_pyramid_omero(plan, id, &err) != SL_OK)
        return PyUnicode_FromString(err.text);
    PyObject *list = PyList_New(0);
    for (uint64_t k = 0; list != NULL && k < si->n_sets; k++) {
        struct sl_stats_result r;
        if (sl_plan_stats(plan, id, k, &r, &err) != SL_OK) {
            Py_DECREF(list);
            return PyUnicode_FromString(err.text);
        }
        PyObject *d = stats_set_dict(si, &r, k);
        if (d == NULL || PyList_Append(list, d) != 0)
            Py_CLEAR(list);
        Py_XDECREF(d);
    }
    return list;
}

/* report["status"] (put name -> codes) and report["stats"] (name -> sets). */
static int
node_results(const sl_plan *plan, PyObject *report)
{
    PyObject *status = PyDict_New(), *stats = PyDict_New();
    int rc = status != NULL && stats != NULL ? 0 : -1;
    const sl_graph *g = sl_plan_graph(plan);
    for (uint32_t id = 0; rc == 0 && id < sl_graph_node_count(g); id++) {
        struct sl_node_info info;
        struct sl_put_status ps;
        struct sl_stats_info si;
        if (sl_graph_node_info(g, id, &info, NULL) != SL_OK)
            continue;
        /* A stats node is a sink too, with a status of its own; its
         * results are what the report gives for it. */
        if (sl_plan_stats_info(plan, id, &si, NULL) == SL_OK) {
            PyObject *s = stats_sets(plan, id, &si);
            rc = s != NULL ? PyDict_SetItemString(stats, info.name, s) : -1;
            Py_XDECREF(s);
        } else if (sl_plan_put_status(plan, id, &ps, NULL) == SL_OK) {
            PyObject *a = status_array(&ps);
            rc = a != NULL ? PyDict_SetItemString(status, info.name, a) : -1;
            Py_XDECREF(a);
        }
    }
    if (rc == 0)
        rc = dict_set(report, "status", status) | dict_set(report, "stats", stats);
    else {
        Py_XDECREF(status);
        Py_XDECREF(stats);
    }
    return rc;
}

/* What a run needs besides the document, decided with the GIL held. */
struct run_args {
    unsigned threads;
    size_t memory;
    int fail_fast;     /* -1: the file's */
    int missing_error; /* -1: the file's */
    int retries;       /* -1: the file's */
};

static struct sl_plan_opts
plan_opts(const sl_graph_json *doc, const struct run_args *ra)
{
    struct sl_graph_json_run fr;
    sl_graph_json_run_opts(doc, &fr);
    struct sl_plan_opts o = SL_PLAN_OPTS_DEFAULT;
    o.memory_budget = ra->memory > 0 ? ra->memory : fr.memory_budget;
    o.policy = ra->fail_fast == 1   ? SL_POLICY_FAIL_FAST
               : ra->fail_fast == 0 ? SL_POLICY_COLLECT
                                    : fr.policy;
    o.missing_is_error = ra->missing_error >= 0 ? ra->missing_error == 1 : fr.missing_is_error;
    o.retries = ra->retries >= 0 ? (uint32_t)ra->retries : fr.retries;
    return o;
}

/* Run `doc`'s plan on a pool (the module's, or one of `threads`) with the
 * GIL released; the plan (or NULL) in *out. */
static sl_status
run_plan(sl_graph_json *doc, const struct run_args *ra, sl_pool *shared, sl_plan **out,
         struct sl_error *err)
{
    struct sl_plan_opts o = plan_opts(doc, ra);
    sl_plan *plan = sl_plan_create(sl_graph_json_graph(doc), &o, err);
    *out = plan;
    if (plan == NULL)
        return err->code;
    sl_pool *own = NULL;
    if (shared == NULL) {
        struct sl_pool_opts po = SL_POOL_OPTS_DEFAULT;
        if (sl_pool_opts_from_env(&po, err) != SL_OK)
            return err->code;
        po.n_workers = ra->threads;
        if ((own = sl_pool_create(&po, err)) == NULL)
            return err->code;
    }
    sl_status st = sl_plan_run(plan, own != NULL ? own : shared, err);
    sl_pool_destroy(own);
    return st;
}

static PyObject *
report_of(const sl_plan *plan, sl_status st, const struct sl_error *err,
          const struct sl_error *cerr)
{
    struct sl_run_summary s;
    sl_plan_summary(plan, &s);
    PyObject *report = summary_dict(&s, st);
    if (report == NULL)
        return NULL;
    int rc = dict_set(report, "failed", failed_list(plan));
    rc |= node_results(plan, report);
    rc |= dict_set(report, "error",
                   st != SL_OK && err->code != SL_OK ? PyUnicode_FromString(err->text)
                                                     : Py_NewRef(Py_None));
    rc |= dict_set(report, "commit_error",
                   cerr->code != SL_OK ? PyUnicode_FromString(cerr->text) : Py_NewRef(Py_None));
    if (rc != 0)
        Py_CLEAR(report);
    return report;
}

/* sluice's pool for this run: the module's unless another size is asked. */
static int
pool_for(const struct run_args *ra, sl_pool **shared)
{
    *shared = NULL;
    if (ra->threads > 0)
        return 0;
    *shared = sl_py_pool();
    return *shared != NULL ? 0 : -1;
}

/* Most Python functions one run's map nodes call. */
#define MAPS_MAX 256

/* The loader's table of dict `fns` ({name: callable}, kept alive by the
 * caller for the run); -1 with an exception. */
static int
maps_of(PyObject *fns, struct sl_graph_json_map *maps, size_t *n)
{
    *n = 0;
    if (PyDict_Size(fns) > MAPS_MAX) {
        PyErr_Format(PyExc_ValueError, "a run calls at most %d Python functions, not %zd", MAPS_MAX,
                     PyDict_Size(fns));
        return -1;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *fn;
    while (PyDict_Next(fns, &pos, &key, &fn)) {
        const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        if (name == NULL || !PyCallable_Check(fn)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "run_graph: maps is a dict {str: function}");
            return -1;
        }
        maps[*n].name = name;
        maps[*n].fn = sl_py_map_call;
        maps[*n].ctx = fn;
        (*n)++;
    }
    return 0;
}

/* Load `text` with the loader's options `lo`, run it, commit it; the
 * report dict, or NULL with an exception. */
static PyObject *
run_text(const char *text, Py_ssize_t len, const char *source, const struct sl_graph_json_opts *lo,
         const struct run_args *ra, sl_pool *shared)
{
    struct sl_error records[LOAD_ERRORS];
    struct sl_graph_json_errors errs = {.errors = records, .capacity = LOAD_ERRORS};
    struct sl_error err = SL_ERROR_INIT, cerr = SL_ERROR_INIT;
    sl_graph_json *doc;
    sl_plan *plan = NULL;
    sl_status st = SL_OK;
    Py_BEGIN_ALLOW_THREADS;
    doc = sl_graph_json_load_string(text, (size_t)len, source, lo, &errs);
    if (doc != NULL) {
        st = run_plan(doc, ra, shared, &plan, &err);
        if (plan != NULL) {
            /* cerr holds why a commit failed; the report carries it. */
            sl_status cst = sl_graph_json_commit(doc, st == SL_OK, &cerr);
            (void)cst;
        }
    }
    Py_END_ALLOW_THREADS;
    if (doc == NULL)
        return raise_load_errors(&errs);
    PyObject *report = plan != NULL ? report_of(plan, st, &err, &cerr) : sl_py_raise(&err, NULL);
    Py_BEGIN_ALLOW_THREADS;
    sl_plan_destroy(plan);
    sl_graph_json_destroy(doc);
    Py_END_ALLOW_THREADS;
    return report;
}

/* run_graph(text, source, base_dir, allow_plugins, threads, memory, fail_fast,
 *           missing_error, retries, maps) -> report dict */
static PyObject *
py_run_graph(PyObject *self, PyObject *args)
{
    (void)self;
    const char *text, *source, *base_dir;
    Py_ssize_t len;
    int allow_plugins;
    struct run_args ra;
    unsigned long long memory;
    PyObject *fns;
    if (!PyArg_ParseTuple(args, "s#zzpIKiiiO!", &text, &len, &source, &base_dir, &allow_plugins,
                          &ra.threads, &memory, &ra.fail_fast, &ra.missing_error, &ra.retries,
                          &PyDict_Type, &fns))
        return NULL;
    ra.memory = (size_t)memory;
    sl_pool *shared;
    if (pool_for(&ra, &shared) != 0)
        return NULL;
    /* The run's own copy of the functions: their names and the functions
     * stay alive whatever the functions do to the caller's dict. */
    PyObject *own = PyDict_Copy(fns);
    struct sl_graph_json_map maps[MAPS_MAX];
    struct sl_graph_json_opts lo = SL_GRAPH_JSON_OPTS_DEFAULT;
    if (own == NULL || maps_of(own, maps, &lo.n_maps) != 0) {
        Py_XDECREF(own);
        return NULL;
    }
    lo.maps = maps;
    lo.new_arrays = SL_GRAPH_JSON_CREATE;
    lo.base_dir = base_dir;
    lo.allow_outside = true;
    lo.allow_plugins = allow_plugins != 0;
    lo.memory = ra.memory;
    PyObject *report = run_text(text, len, source, &lo, &ra, shared);
    Py_DECREF(own);
    return report;
}

static PyMethodDef run_methods[] = {
    {"run_graph", py_run_graph, METH_VARARGS,
     "run_graph(text, source, base_dir, allow_plugins, threads, memory, fail_fast, "
     "missing_error, retries, maps) -> dict: load a graph file's text (its map nodes calling "
     "the functions of `maps`, {name: function}), run it, commit it."},
    {NULL, NULL, 0, NULL},
};

int
sl_py_run_init(PyObject *m)
{
    return PyModule_AddFunctions(m, run_methods);
}
