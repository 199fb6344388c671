/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the executor's trace (exec_trace.c): per-worker
 * event buffers and their Chrome trace output.  Open to the graph tests,
 * not to the rest of graph/.
 */
#ifndef SL_EXEC_TRACE_INTERNAL_H
#define SL_EXEC_TRACE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "graph_internal.h"

/* ---- trace (exec_trace.c) ------------------------------------------------------- */

/* One task as the Chrome trace shows it. */
struct sl__trace_event {
    uint64_t start_ns; /* since the run started */
    uint64_t end_ns;   /* since the run started */
    uint32_t stage;    /* which stage */
    uint32_t count;    /* chunks in the task */
    uint64_t first;    /* first chunk's linear index in the stage root's grid */
};

/* Events of one worker; full buffers drop further events and count them. */
struct sl__trace_buf {
    struct sl__trace_event *events; /* owned; NULL when tracing is off */
    size_t n;                       /* events recorded */
    size_t cap;                     /* events that fit */
    uint64_t dropped;               /* events beyond cap */
};

struct sl__exec_worker;

/* Write every worker's events as Chrome trace JSON to `path`. */
sl_status sl__trace_write(const char *path, const sl_graph *g, const struct sl__fusion *f,
                          const struct sl__exec_worker *workers, unsigned n_workers,
                          struct sl_error *err);

#endif /* SL_EXEC_TRACE_INTERNAL_H */
