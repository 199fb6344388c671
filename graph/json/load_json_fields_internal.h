/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the JSON graph loader's error list and typed
 * field readers (load_json_fields.c): where errors go, JSON pointers, and
 * reading a field of the expected type or reporting where it is not.
 * Open to the graph tests.
 */
#ifndef SL_LOAD_JSON_FIELDS_INTERNAL_H
#define SL_LOAD_JSON_FIELDS_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/graph_json.h>
#include <sluice/status.h>

/* A JSON pointer as error records hold it. */
#define SL__JPTR_MAX 80

/* Where a loader's errors go. */
struct sl__jdiag {
    struct sl_graph_json_errors *out; /* the caller's list; may be NULL */
    const char *source;               /* file name for the records */
    size_t count;                     /* errors found so far */
    bool full;                        /* the list is full: stop looking */
};

/*
 * Record an error at JSON pointer `ptr` (may be "" for the whole document)
 * unless the list is full.  @return `code`.
 */
sl_status sl__jdiag_add(struct sl__jdiag *d, sl_status code, const char *ptr, const char *fmt, ...)
    SL_PRINTF(4, 5);

/* Record a syntax or limit error at a text location (1-based line and
 * column, byte position).  @return `code`. */
sl_status sl__jdiag_add_at(struct sl__jdiag *d, sl_status code, int line, int column,
                           size_t position, const char *text);

/* Record `e` (a record some other function filled) at `ptr`, with the same
 * code and text.  @return e->code. */
sl_status sl__jdiag_add_error(struct sl__jdiag *d, const char *ptr, const struct sl_error *e);

/* `parent` + "/" + `key`, escaping "~" and "/" as RFC 6901 says. */
void sl__jptr_key(char out[SL__JPTR_MAX], const char *parent, const char *key);

/* `parent` + "/" + `index`. */
void sl__jptr_index(char out[SL__JPTR_MAX], const char *parent, size_t index);

/* The JSON type of `v` for messages: "a string", "an object", "null", ... */
const char *sl__json_type_name(const json_t *v);

/*
 * Report every key of object `obj` (at `ptr`) that is not in `known`
 * (NULL-terminated) nor a parameter of `op` (may be NULL), naming what a
 * `what` accepts.  @return true when every key is known.
 */
bool sl__jcheck_keys(struct sl__jdiag *d, const json_t *obj, const char *ptr, const char *what,
                     const char *const *known, const struct sl_op_desc *op);

/* Typed fields: each returns true and stores the value when `v` has the
 * type (and range) asked for, else reports what was expected and found at
 * `ptr` and returns false. */
bool sl__jget_string(struct sl__jdiag *d, const json_t *v, const char *ptr, const char **out);
bool sl__jget_bool(struct sl__jdiag *d, const json_t *v, const char *ptr, bool *out);
/* "overwrite": true, false or "in-place" (which sets both flags). */
bool sl__jget_overwrite(struct sl__jdiag *d, const json_t *v, const char *ptr, bool *overwrite,
                        bool *in_place);
/* Report graph error `err` of node `id` at JSON pointer `ptr`, its leading
 * `node "id": ` dropped (the pointer names the node).  @return false. */
bool sl__jdiag_add_node_error(struct sl__jdiag *d, const char *id, const char *ptr,
                              struct sl_error *err);
bool sl__jget_uint(struct sl__jdiag *d, const json_t *v, const char *ptr, uint64_t lo, uint64_t hi,
                   uint64_t *out);
/* A list of 1..SL_MAX_RANK integers >= `lo` (reported at ptr/i). */
bool sl__jget_dims(struct sl__jdiag *d, const json_t *v, const char *ptr, uint64_t lo,
                   uint64_t *out, uint32_t *n);
/* A list of 1..SL_MAX_RANK axes, each below SL_MAX_RANK (reported at
 * ptr/i), into `axes` and `*n`; *n is 0 after a failure. */
bool sl__jget_axes(struct sl__jdiag *d, const json_t *v, const char *ptr, uint32_t *axes,
                   uint32_t *n);

#endif /* SL_LOAD_JSON_FIELDS_INTERNAL_H */
