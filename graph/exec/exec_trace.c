/* SPDX-License-Identifier: MIT */
/*
 * Chrome trace output: every task of a run as a complete ("X") event on its
 * worker's track, named after its stage, in the JSON Perfetto and
 * chrome://tracing open.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core_internal.h"
#include "exec_internal.h"

/* Print `s` inside a JSON string. */
static void
trace_escape(FILE *out, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', out);
        if ((unsigned char)*s >= 0x20)
            fputc(*s, out);
    }
}

/* The stage's name: its nodes joined by '+'. */
static void
trace_stage_name(FILE *out, const sl_graph *g, const struct sl__stage *s)
{
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        if (i > 0)
            fputc('+', out);
        trace_escape(out, sl__graph_node(g, s->nodes[i])->name);
    }
}

sl_status
sl__trace_write(const char *path, const sl_graph *g, const struct sl__fusion *f,
                const struct sl__exec_worker *workers, unsigned n_workers, struct sl_error *err)
{
    FILE *out = fopen(path, "w");
    if (out == NULL)
        return sl_error_set(err, SL_EIO, NULL, "cannot write trace \"%s\": %s", path,
                            strerror(errno));
    uint64_t dropped = 0;
    fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n", out);
    bool first = true;
    for (unsigned w = 0; w < n_workers; w++) {
        const struct sl__trace_buf *buf = &workers[w].trace;
        fprintf(out,
                "%s{\"ph\": \"M\", \"pid\": 1, \"tid\": %u, \"name\": \"thread_name\", "
                "\"args\": {\"name\": \"worker %u\"}}",
                first ? "" : ",\n", w, w);
        first = false;
        dropped += buf->dropped;
        for (size_t i = 0; i < buf->n; i++) {
            const struct sl__trace_event *e = &buf->events[i];
            const struct sl__stage *s = &f->stages[e->stage];
            fputs(",\n{\"ph\": \"X\", \"pid\": 1, \"cat\": \"chunk\", \"name\": \"", out);
            trace_stage_name(out, g, s);
            fprintf(out,
                    "\", \"tid\": %u, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"stage\": %" PRIu32
                    ", \"first_chunk\": %" PRIu64 ", \"chunks\": %" PRIu32 "}}",
                    w, (double)e->start_ns / 1000.0, (double)(e->end_ns - e->start_ns) / 1000.0,
                    e->stage, e->first, e->count);
        }
    }
    fprintf(out, "\n], \"otherData\": {\"dropped_events\": %" PRIu64 "}}\n", dropped);
    bool failed = ferror(out) != 0;
    if (fclose(out) != 0 || failed)
        return sl_error_set(err, SL_EIO, NULL, "cannot write trace \"%s\"", path);
    return SL_OK;
}
