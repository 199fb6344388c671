/* SPDX-License-Identifier: MIT */
/*
 * Run journals (see <sluice/journal.h>): the fingerprint of a plan, the
 * file's lines and their checksums, reading an earlier run's journal into
 * one bitmap of done units per put, and appending the units a run
 * completes.
 *
 * The file is text, one record a line, each line "<payload> <sum>\n" where
 * <sum> is the first 16 hex digits of the SHA-256 of <payload>:
 *
 *     sluice-journal 1
 *     fp <item> <64 hex digits>      one per fingerprint item
 *     staging <dev> <ino> <directory>  where the outputs are written, and
 *                                    that directory's identity (stat(2))
 *     begin                          the header ends
 *     u <put> <unit>                 unit <unit> (C-order index in the put's
 *                                    shard grid) of the plan's put <put> is done
 *
 * DESIGN: a record is formatted into a fixed buffer under `mu` (writers of
 * transactions and pool workers report units at once) and written at once
 * with one write(2), so a killed process loses none; fdatasync comes when
 * `sync_interval_s` passed and at close; nothing allocates once a run
 * goes.  A unit is trusted on
 * resume only when every unit its chunks read from earlier puts is
 * trusted too (journal_distrust), so that a unit reading units that are
 * redone is redone as well, and no other.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <sluice/array.h>
#include <sluice/journal.h>
#include <sluice/sha256.h>

#include "core_internal.h"
#include "graph_internal.h"

#define JOURNAL_MAGIC "sluice-journal 1"
#define JOURNAL_BUF 65536
#define SUM_HEX 16
#define ITEM_NAME_MAX 96
#define LINE_MAX_BYTES (PATH_MAX + 64)

/* One item of a fingerprint. */
struct fp_item {
    char name[ITEM_NAME_MAX]; /* "graph", "input:<node>", "output:<node>", "option:..." */
    char hex[SL_SHA256_HEX_CHARS + 1];
};

/* A fingerprint: its items in a fixed order. */
struct fingerprint {
    uint32_t n;
    struct fp_item *items; /* owned */
};

/* The units of one put. */
struct journal_put {
    struct sl_grid units; /* the put's shard grid (its chunk grid when unsharded) */
    uint8_t *done;        /* one bit per unit (C-order), set when trusted done; owned */
    uint64_t n_done;      /* bits set */
    uint8_t *dropped;     /* one bit per unit recorded but not trusted: it reads units
                             that run again (journal_distrust); owned */
};

struct sl_journal {
    sl_plan *plan;            /* the plan it is attached to */
    int fd;                   /* the file, open for appending */
    pthread_mutex_t mu;       /* guards buf, len, last_sync_ns, io_err */
    char buf[JOURNAL_BUF];    /* records not yet written */
    size_t len;               /* bytes in buf */
    uint64_t last_sync_ns;    /* monotonic time of the last write and sync */
    uint64_t interval_ns;     /* most time between syncs */
    struct sl_error io_err;   /* the first write or sync failure */
    struct journal_put *puts; /* per plan->puts entry; owned */
    struct sl_journal_info info;
    _Atomic uint64_t busy_ns; /* time spent in the journal's calls, every thread's summed */
    char path[PATH_MAX];      /* the file, for messages */
};

/* ---- lines ------------------------------------------------------------------------ */

static void
line_sum(const char *payload, size_t n, char out[SUM_HEX + 1])
{
    uint8_t d[SL_SHA256_BYTES];
    char hex[SL_SHA256_HEX_CHARS + 1];
    sl_sha256(payload, n, d);
    sl_sha256_hex(d, hex);
    memcpy(out, hex, SUM_HEX);
    out[SUM_HEX] = '\0';
}

/* Append "<payload> <sum>\n" to buf (`cap` bytes, `*len` used); false if it
 * does not fit. */
static bool
line_put(char *buf, size_t cap, size_t *len, const char *payload)
{
    size_t n = strlen(payload);
    if (*len + n + SUM_HEX + 2 > cap)
        return false;
    char sum[SUM_HEX + 1];
    line_sum(payload, n, sum);
    memcpy(buf + *len, payload, n);
    buf[*len + n] = ' ';
    memcpy(buf + *len + n + 1, sum, SUM_HEX);
    buf[*len + n + 1 + SUM_HEX] = '\n';
    *len += n + SUM_HEX + 2;
    return true;
}

/* Check line `line` (`n` bytes, no newline) and cut its sum off in place.
 * @return its payload, or NULL when the sum does not match. */
static char *
line_check(char *line, size_t n)
{
    if (n < SUM_HEX + 2 || line[n - SUM_HEX - 1] != ' ')
        return NULL;
    char sum[SUM_HEX + 1];
    line_sum(line, n - SUM_HEX - 1, sum);
    if (memcmp(sum, line + n - SUM_HEX, SUM_HEX) != 0)
        return NULL;
    line[n - SUM_HEX - 1] = '\0';
    return line;
}

static sl_status
write_all(int fd, const char *p, size_t n, const char *path, struct sl_error *err)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return sl_error_set(err, SL_EIO, NULL, "journal %s: cannot write it: %s", path,
                                strerror(w < 0 ? errno : EIO));
        p += w;
        n -= (size_t)w;
    }
    return SL_OK;
}

/* ---- the fingerprint ---------------------------------------------------------------- */

static void
sha_u64(struct sl_sha256 *s, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    sl_sha256_update(s, b, sizeof(b));
}

static void
sha_str(struct sl_sha256 *s, const char *text)
{
    size_t n = strlen(text);
    sha_u64(s, n);
    sl_sha256_update(s, text, n);
}

static void
sha_grid(struct sl_sha256 *s, const struct sl_grid *g)
{
    sha_u64(s, g->rank);
    for (uint32_t d = 0; d < g->rank; d++) {
        sha_u64(s, g->shape[d]);
        sha_u64(s, g->chunk[d]);
        sha_u64(s, g->n_chunks[d]);
        for (uint64_t k = 0; g->bounds[d] != NULL && k <= g->n_chunks[d]; k++)
            sha_u64(s, g->bounds[d][k]);
    }
}

/* An operation's parameters, field by field (no padding bytes). */
static void
sha_op(struct sl_sha256 *s, const struct sl_op *op)
{
    sha_str(s, op->desc->name);
    sha_u64(s, (uint64_t)op->in_dtype);
    sha_u64(s, (uint64_t)op->out_dtype);
    for (int i = 0; i < SL_OP_MAX_PARAMS; i++) {
        const struct sl_op_value *v = &op->args.value[i];
        char num[40];
        snprintf(num, sizeof(num), "%.17g", v->number);
        sha_u64(s, v->set);
        sha_str(s, num);
        sha_u64(s, (uint64_t)v->dtype);
        sha_u64(s, (uint64_t)v->method);
        sha_u64(s, v->n_factors);
        for (uint32_t d = 0; d < v->n_factors && d < SL_MAX_RANK; d++)
            sha_u64(s, v->factors[d]);
        sha_u64(s, v->n_numbers);
        for (uint32_t d = 0; d < v->n_numbers && d < SL_MAX_RANK; d++) {
            snprintf(num, sizeof(num), "%.17g", v->numbers[d]);
            sha_str(s, num);
        }
        sha_u64(s, (uint64_t)v->mode);
    }
}

/* The graph and its plan: every node as it computes, and the stages. */
static void
fp_graph(const sl_plan *plan, struct fp_item *it)
{
    const sl_graph *g = plan->graph;
    struct sl_sha256 s;
    sl_sha256_init(&s);
    sha_u64(&s, g->n_nodes);
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const struct sl__node *n = &g->nodes[i];
        sha_u64(&s, (uint64_t)n->kind);
        sha_str(&s, n->name);
        sha_str(&s, n->op_name);
        sha_u64(&s, (uint64_t)n->dtype);
        sha_grid(&s, &n->grid);
        sha_u64(&s, n->n_inputs);
        for (uint32_t k = 0; k < n->n_inputs; k++)
            sha_u64(&s, n->inputs[k]);
        for (uint32_t d = 0; d < n->grid.rank; d++) {
            sha_u64(&s, n->shard_chunks[d]);
            sha_u64(&s, n->map[d].num);
            sha_u64(&s, n->map[d].den);
            sha_u64(&s, n->map[d].halo_lo);
            sha_u64(&s, n->map[d].halo_hi);
        }
        if (n->has_op)
            sha_op(&s, &n->op);
        /* Rank-changing mappings and programs change what a node computes. */
        sha_u64(&s, n->axes_mapped | (uint64_t)n->by_region << 1);
        if (n->axes_mapped)
            for (uint32_t k = 0; k < n->n_inputs; k++)
                for (uint32_t d = 0; d < SL_MAX_RANK; d++)
                    sha_u64(&s, (uint64_t)(uint8_t)n->in_axis[k][d]);
        if (n->red_step != SL__REDUCE_NONE) {
            const struct sl_reduce_params *rp = &n->red;
            sha_u64(&s, (uint64_t)n->red_step);
            sha_u64(&s, (uint64_t)rp->method);
            sha_u64(&s, (uint64_t)rp->in_dtype);
            sha_u64(&s, (uint64_t)rp->out_dtype);
            for (uint32_t d = 0; d < rp->rank; d++)
                sha_u64(&s, rp->reduced[d]);
            uint64_t ddof;
            memcpy(&ddof, &rp->ddof, sizeof(ddof));
            sha_u64(&s, ddof);
        }
        if (n->expr != NULL) {
            char text[SL_EXPR_TEXT_MAX * 2];
            sl_expr_format(n->expr, text, sizeof(text));
            sha_str(&s, text);
            sha_u64(&s, (uint64_t)sl_expr_compute_dtype(n->expr));
        }
    }
    for (uint32_t k = 0; k < plan->fusion.n_stages; k++) {
        sha_u64(&s, plan->fusion.stages[k].root);
        sha_u64(&s, plan->fusion.stages[k].phase);
    }
    uint8_t d[SL_SHA256_BYTES];
    sl_sha256_final(&s, d);
    snprintf(it->name, sizeof(it->name), "graph");
    sl_sha256_hex(d, it->hex);
}

/* An array's metadata as it bears on bytes: layout, dtype, fill, codecs. */
static void
fp_array(const char *kind, const struct sl__node *n, struct fp_item *it)
{
    const sl_array *a = n->u.io.array;
    struct sl_sha256 s;
    sl_sha256_init(&s);
    uint32_t rank = sl_array_rank(a);
    sha_u64(&s, (uint64_t)sl_array_zarr_format(a));
    sha_u64(&s, (uint64_t)sl_array_dtype(a));
    sha_u64(&s, rank);
    for (uint32_t d = 0; d < rank; d++) {
        sha_u64(&s, sl_array_shape(a)[d]);
        sha_u64(&s, sl_array_chunk_shape(a)[d]);
        sha_u64(&s, sl_array_shard_shape(a) != NULL ? sl_array_shard_shape(a)[d] : 0);
    }
    char text[1024];
    sl_array_codecs_describe(a, text, sizeof(text));
    sha_str(&s, text);
    sl_array_fill_describe(a, text, sizeof(text));
    sha_str(&s, text);
    uint8_t d[SL_SHA256_BYTES];
    sl_sha256_final(&s, d);
    snprintf(it->name, sizeof(it->name), "%s:%s", kind, n->name);
    for (char *c = it->name; *c != '\0'; c++)
        if (*c == ' ' || *c == '\n')
            *c = '_';
    sl_sha256_hex(d, it->hex);
}

static sl_status
fingerprint_make(const sl_plan *plan, struct fingerprint *fp, struct sl_error *err)
{
    const sl_graph *g = plan->graph;
    uint32_t n = 2;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        n += g->nodes[i].kind == SL_NODE_GET || g->nodes[i].kind == SL_NODE_PUT;
    fp->items = calloc(n, sizeof(*fp->items));
    if (fp->items == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for a journal's fingerprint");
    fp->n = 0;
    fp_graph(plan, &fp->items[fp->n++]);
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const struct sl__node *nd = &g->nodes[i];
        if (nd->kind == SL_NODE_GET || nd->kind == SL_NODE_PUT)
            fp_array(nd->kind == SL_NODE_GET ? "input" : "output", nd, &fp->items[fp->n++]);
    }
    struct fp_item *o = &fp->items[fp->n++];
    snprintf(o->name, sizeof(o->name), "option:missing");
    uint8_t d[SL_SHA256_BYTES];
    const char *v = plan->opts.missing_is_error ? "error" : "fill";
    sl_sha256(v, strlen(v), d);
    sl_sha256_hex(d, o->hex);
    return SL_OK;
}

/* Name the items of `old` (n_old) and `now` that differ, in `err`. */
static sl_status
fingerprint_compare(const struct fp_item *old, uint32_t n_old, const struct fingerprint *now,
                    const char *path, struct sl_error *err)
{
    char what[512];
    size_t len = 0;
    uint32_t n_diff = 0;
    what[0] = '\0';
    for (uint32_t i = 0; i < now->n; i++) {
        const struct fp_item *o = NULL;
        for (uint32_t k = 0; k < n_old && o == NULL; k++)
            if (strcmp(old[k].name, now->items[i].name) == 0)
                o = &old[k];
        if (o != NULL && strcmp(o->hex, now->items[i].hex) == 0)
            continue;
        n_diff++;
        sl__strbuf_append(what, sizeof(what), &len, "%s%s%s", len > 0 ? ", " : "",
                          now->items[i].name, o == NULL ? " (new)" : "");
    }
    for (uint32_t k = 0; k < n_old; k++) {
        bool seen = false;
        for (uint32_t i = 0; i < now->n && !seen; i++)
            seen = strcmp(old[k].name, now->items[i].name) == 0;
        if (!seen) {
            n_diff++;
            sl__strbuf_append(what, sizeof(what), &len, "%s%s (gone)", len > 0 ? ", " : "",
                              old[k].name);
        }
    }
    if (n_diff == 0)
        return SL_OK;
    return sl_error_set(err, SL_ECONFLICT, NULL,
                        "journal %s was written for another computation: %s changed (graph: "
                        "the nodes or their parameters; input:/output:<node>: that array's "
                        "metadata; option: a setting)",
                        path, what);
}

/* ---- reading --------------------------------------------------------------------- */

/* What a journal file holds. */
struct journal_read {
    char *data;                         /* the file, NUL-terminated; owned */
    size_t size;                        /* its bytes */
    struct fp_item *items;              /* its fingerprint; owned */
    uint32_t n_items;                   /* items */
    uint32_t cap_items;                 /* allocated */
    struct sl_journal_staging *staging; /* the header's staging directories; owned */
    uint32_t n_staging;                 /* how many */
    size_t body;                        /* offset of the first record after "begin" */
    int64_t damaged_at;                 /* first damaged line's offset, or -1 */
};

static void
journal_read_fini(struct journal_read *r)
{
    free(r->data);
    free(r->items);
    free(r->staging);
}

static sl_status
file_slurp(const char *path, struct journal_read *r, struct sl_error *err)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return sl_error_set(err, errno == ENOENT ? SL_ENOTFOUND : SL_EIO, NULL,
                            "journal %s: cannot read it: %s", path, strerror(errno));
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap + 1);
    while (buf != NULL) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *bigger = cap > SIZE_MAX / 4 ? NULL : realloc(buf, cap * 2 + 1);
        if (bigger == NULL) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    bool bad = ferror(f) != 0;
    fclose(f);
    if (buf == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "journal %s: no memory to read it", path);
    if (bad) {
        free(buf);
        return sl_error_set(err, SL_EIO, NULL, "journal %s: reading it failed", path);
    }
    buf[n] = '\0';
    r->data = buf;
    r->size = n;
    return SL_OK;
}

/* The next line at *pos: its payload (sum checked, cut off) or NULL when
 * damaged (or a last line without its newline); *pos moves past it. */
static char *
next_line(struct journal_read *r, size_t *pos, bool *at_end)
{
    *at_end = *pos >= r->size;
    if (*at_end)
        return NULL;
    char *line = r->data + *pos;
    char *nl = memchr(line, '\n', r->size - *pos);
    if (nl == NULL) {
        *pos = r->size;
        return NULL;
    }
    *nl = '\0';
    *pos = (size_t)(nl - r->data) + 1;
    if (memchr(line, '\0', (size_t)(nl - line)) != NULL)
        return NULL;
    return line_check(line, (size_t)(nl - line));
}

static sl_status
add_item(struct journal_read *r, const char *text, const char *path, size_t at,
         struct sl_error *err)
{
    const char *sp = strrchr(text, ' ');
    if (sp == NULL || strlen(sp + 1) != SL_SHA256_HEX_CHARS || (size_t)(sp - text) >= ITEM_NAME_MAX)
        return sl_error_set(err, SL_ECORRUPT, NULL,
                            "journal %s: malformed fingerprint line at byte %zu", path, at);
    if (r->n_items == r->cap_items) {
        uint32_t cap = r->cap_items ? r->cap_items * 2 : 16;
        struct fp_item *m = realloc(r->items, cap * sizeof(*m));
        if (m == NULL)
            return sl_error_set(err, SL_ENOMEM, NULL, "journal %s: no memory", path);
        r->items = m;
        r->cap_items = cap;
    }
    struct fp_item *it = &r->items[r->n_items++];
    memcpy(it->name, text, (size_t)(sp - text));
    it->name[sp - text] = '\0';
    memcpy(it->hex, sp + 1, SL_SHA256_HEX_CHARS + 1);
    return SL_OK;
}

/* "<dev> <ino> <path>" into `out`; false when malformed. */
static bool
staging_parse(const char *p, struct sl_journal_staging *out)
{
    char *end;
    errno = 0;
    unsigned long long dev = strtoull(p, &end, 10);
    if (errno != 0 || end == p || *end != ' ')
        return false;
    const char *q = end + 1;
    unsigned long long ino = strtoull(q, &end, 10);
    if (errno != 0 || end == q || *end != ' ' || strlen(end + 1) >= sizeof(out->path))
        return false;
    out->dev = dev;
    out->ino = ino;
    sl__strlcpy(out->path, end + 1, sizeof(out->path));
    return true;
}

/* Read the file and its header; the body is left for journal_read_units. */
static sl_status
journal_read_header(const char *path, struct journal_read *r, struct sl_error *err)
{
    memset(r, 0, sizeof(*r));
    r->damaged_at = -1;
    SL_TRY(file_slurp(path, r, err));
    size_t pos = 0;
    bool at_end;
    size_t at = pos;
    char *p = next_line(r, &pos, &at_end);
    if (p == NULL || strcmp(p, JOURNAL_MAGIC) != 0)
        return sl_error_set(
            err, SL_ECORRUPT, NULL, "journal %s: %s at byte 0 (remove it to start the run afresh)",
            path, at_end ? "empty" : "not a sluice journal, or its first line is damaged");
    for (;;) {
        at = pos;
        p = next_line(r, &pos, &at_end);
        if (p == NULL)
            return sl_error_set(err, SL_ECORRUPT, NULL,
                                "journal %s: its header is %s at byte %zu (remove it to start "
                                "the run afresh)",
                                path, at_end ? "cut short" : "damaged", at);
        if (strncmp(p, "fp ", 3) == 0)
            SL_TRY(add_item(r, p + 3, path, at, err));
        else if (strncmp(p, "staging ", 8) == 0) {
            if (r->staging == NULL)
                r->staging = calloc(SL_JOURNAL_MAX_STAGING, sizeof(*r->staging));
            if (r->staging == NULL)
                return sl_error_set(err, SL_ENOMEM, NULL, "journal %s: no memory", path);
            if (r->n_staging == SL_JOURNAL_MAX_STAGING ||
                !staging_parse(p + 8, &r->staging[r->n_staging++]))
                return sl_error_set(err, SL_ECORRUPT, NULL,
                                    "journal %s: malformed staging line at byte %zu", path, at);
        } else if (strcmp(p, "begin") == 0)
            break;
        else
            return sl_error_set(err, SL_ECORRUPT, NULL,
                                "journal %s: unknown header line at byte %zu", path, at);
    }
    r->body = pos;
    return SL_OK;
}

/* Parse "u <put> <unit>"; false when malformed or out of range. */
static bool
unit_parse(const char *p, const sl_journal *j, uint32_t *put, uint64_t *unit)
{
    char *end;
    errno = 0;
    unsigned long long a = strtoull(p + 2, &end, 10);
    if (errno != 0 || end == p + 2 || *end != ' ' || a >= j->plan->n_puts)
        return false;
    const char *q = end + 1;
    unsigned long long b = strtoull(q, &end, 10);
    if (errno != 0 || end == q || *end != '\0' || b >= j->puts[a].units.n_total)
        return false;
    *put = (uint32_t)a;
    *unit = b;
    return true;
}

static void
bit_set(struct journal_put *jp, uint64_t unit)
{
    uint8_t m = (uint8_t)(1u << (unit % 8));
    if ((jp->done[unit / 8] & m) == 0) {
        jp->done[unit / 8] |= m;
        jp->n_done++;
    }
}

static bool
bit_get(const struct journal_put *jp, uint64_t unit)
{
    return (jp->done[unit / 8] >> (unit % 8)) & 1u;
}

/* The records of the body, up to the first damaged line; `file` is the
 * journal's index among those read, for the info. */
static void
journal_read_units(sl_journal *j, struct journal_read *r, uint32_t file)
{
    size_t pos = r->body;
    for (;;) {
        size_t at = pos;
        bool at_end;
        char *p = next_line(r, &pos, &at_end);
        if (at_end)
            return;
        uint32_t put;
        uint64_t unit;
        if (p == NULL || strncmp(p, "u ", 2) != 0 || !unit_parse(p, j, &put, &unit)) {
            r->damaged_at = (int64_t)at;
            if (j->info.damaged_at < 0) {
                j->info.damaged_at = (int64_t)at;
                j->info.damaged_in = file;
            }
            /* This line and every one after it. */
            for (size_t k = at; k < r->size; k++)
                j->info.records_ignored += r->data[k] == '\n' || r->data[k] == '\0';
            /* A last piece without its newline is a line too; a last line
             * damaged had its newline made NUL by next_line: counted. */
            j->info.records_ignored +=
                r->size > 0 && r->data[r->size - 1] != '\n' && r->data[r->size - 1] != '\0';
            return;
        }
        bit_set(&j->puts[put], unit);
    }
}

/* ---- trust across puts -------------------------------------------------------------- */

/* Steps (node chunks visited) spent tracing recorded units back to the
 * units they read, for all puts together; past it a put's remaining
 * records are dropped whole, which is safe, and the work stays bounded. */
#define TRUST_STEPS_MAX (UINT64_C(1) << 26)

/* A walk from one recorded unit of put `q` down to the gets it reads. */
struct trust_walk {
    const sl_journal *j;
    uint32_t q;     /* the put whose unit is checked */
    uint64_t steps; /* left, shared by every walk of the journal */
};

/* Whether node `id` depends on a get of array `a`: walks its inputs. */
static bool
reads_array(const sl_graph *g, uint32_t id, const sl_array *a, uint32_t depth)
{
    const struct sl__node *n = &g->nodes[id];
    if (n->kind == SL_NODE_GET)
        return sl__array_same(n->u.io.array, a);
    if (depth > g->n_nodes)
        return false;
    for (uint32_t k = 0; k < n->n_inputs; k++)
        if (reads_array(g, n->inputs[k], a, depth + 1))
            return true;
    return false;
}

/* Whether every unit of another put that region `r` of get `n`'s array
 * holds is done. */
static bool
get_region_done(const struct trust_walk *w, const struct sl__node *n, const struct sl_region *r)
{
    const sl_plan *plan = w->j->plan;
    for (uint32_t p = 0; p < plan->n_puts; p++) {
        const struct sl__node *np = &plan->graph->nodes[plan->puts[p].node];
        const struct journal_put *jp = &w->j->puts[p];
        if (p == w->q || np->kind != SL_NODE_PUT || jp->n_done == jp->units.n_total ||
            !sl__array_same(np->u.io.array, n->u.io.array))
            continue;
        struct sl_grid_iter it;
        sl_grid_iter_init(&it, &jp->units, r);
        while (sl_grid_iter_next(&it))
            if (!bit_get(jp, sl_grid_linear_index(&jp->units, it.coords)))
                return false;
    }
    return true;
}

/*
 * Whether chunk `coords` of node `id` reads, through gets, only units of
 * other puts that are done: the chunks of its inputs it reads are those
 * the executor computes for it (sl__node_input_region).  False too when
 * the steps ran out.
 */
static bool chunk_trusted(struct trust_walk *w, uint32_t id, const uint64_t *coords);

/* Whether every chunk of node `n` that region `r` meets is trusted. */
static bool
region_trusted(struct trust_walk *w, const struct sl__node *n, const struct sl_region *r)
{
    struct sl_grid_iter it;
    sl_grid_iter_init(&it, &n->grid, r);
    while (sl_grid_iter_next(&it))
        if (!chunk_trusted(w, n->id, it.coords))
            return false;
    return true;
}

static bool
chunk_trusted(struct trust_walk *w, uint32_t id, const uint64_t *coords)
{
    const sl_graph *g = w->j->plan->graph;
    const struct sl__node *n = &g->nodes[id];
    if (w->steps == 0)
        return false;
    w->steps--;
    struct sl_region r;
    sl_grid_chunk_region(&n->grid, coords, &r);
    if (n->kind == SL_NODE_GET)
        return get_region_done(w, n, &r);
    for (uint32_t i = 0; i < n->n_inputs; i++) {
        const struct sl__node *in = &g->nodes[n->inputs[i]];
        struct sl_region rin;
        sl__node_input_region(g, n, i, &r, &rin);
        if (!sl_region_is_empty(&rin) && !region_trusted(w, in, &rin))
            return false;
    }
    return true;
}

/* Whether unit `u` of put `w->q` reads only units that are done. */
static bool
unit_trusted(struct trust_walk *w, uint64_t u)
{
    const struct journal_put *jq = &w->j->puts[w->q];
    const struct sl__node *nq = &w->j->plan->graph->nodes[w->j->plan->puts[w->q].node];
    uint64_t uc[SL_MAX_RANK];
    struct sl_region r;
    sl_grid_coords_of(&jq->units, u, uc);
    sl_grid_chunk_region(&jq->units, uc, &r);
    return region_trusted(w, nq, &r);
}

/* Drop recorded unit `u` of put `q`: it runs again. */
static void
unit_drop(sl_journal *j, uint32_t q, uint64_t u)
{
    struct journal_put *jq = &j->puts[q];
    jq->done[u / 8] &= (uint8_t) ~(1u << (u % 8));
    jq->dropped[u / 8] |= (uint8_t)(1u << (u % 8));
    jq->n_done--;
    j->info.units_dropped++;
}

/*
 * A recorded unit of a put that reads (through gets) units of an earlier
 * put that run again would be computed from bytes about to change: it is
 * not trusted, and runs again too.  Each recorded unit is traced down to
 * the units it reads; puts in phase order, so that distrust passes on (a
 * unit dropped makes those reading it dropped).  Units of puts that read
 * no unfinished put are kept without a walk.
 */
static void
journal_distrust(sl_journal *j)
{
    const sl_plan *plan = j->plan;
    const sl_graph *g = plan->graph;
    uint32_t n_phases = 0;
    for (uint32_t s = 0; s < plan->fusion.n_stages; s++)
        if (plan->fusion.stages[s].phase + 1 > n_phases)
            n_phases = plan->fusion.stages[s].phase + 1;
    struct trust_walk w = {.j = j, .steps = TRUST_STEPS_MAX};
    for (uint32_t ph = 0; ph < n_phases; ph++)
        for (uint32_t q = 0; q < plan->n_puts; q++) {
            const struct sl__node *nq = &g->nodes[plan->puts[q].node];
            struct journal_put *jq = &j->puts[q];
            if (plan->fusion.stages[plan->fusion.stage_of[nq->id]].phase != ph ||
                nq->kind != SL_NODE_PUT || jq->n_done == 0)
                continue;
            bool reads_unfinished = false;
            for (uint32_t p = 0; p < plan->n_puts && !reads_unfinished; p++) {
                const struct sl__node *np = &g->nodes[plan->puts[p].node];
                reads_unfinished = p != q && np->kind == SL_NODE_PUT &&
                                   j->puts[p].n_done < j->puts[p].units.n_total &&
                                   reads_array(g, nq->id, np->u.io.array, 0);
            }
            if (!reads_unfinished)
                continue;
            w.q = q;
            for (uint64_t u = 0; u < jq->units.n_total && jq->n_done > 0; u++)
                if (bit_get(jq, u) && !unit_trusted(&w, u))
                    unit_drop(j, q, u);
        }
}

/* ---- opening and closing ------------------------------------------------------------ */

static void
journal_free(sl_journal *j)
{
    for (uint32_t i = 0; j->puts != NULL && i < j->plan->n_puts; i++) {
        free(j->puts[i].done);
        free(j->puts[i].dropped);
        if (j->puts[i].units.rank > 0)
            sl_grid_fini(&j->puts[i].units);
    }
    free(j->puts);
    if (j->fd >= 0)
        close(j->fd);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

/* A unit grid and an empty bitmap per put. */
static sl_status
journal_puts_init(sl_journal *j, struct sl_error *err)
{
    const sl_plan *plan = j->plan;
    j->puts = calloc(plan->n_puts > 0 ? plan->n_puts : 1, sizeof(*j->puts));
    if (j->puts == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for a journal");
    for (uint32_t i = 0; i < plan->n_puts; i++) {
        const struct sl__node *n = sl__graph_node(plan->graph, plan->puts[i].node);
        struct journal_put *jp = &j->puts[i];
        if (n->kind == SL_NODE_PUT)
            SL_TRY(sl_array_shard_grid(n->u.io.array, &jp->units, err));
        /* Putters hand chunks to a function: they have no units (n_total 0). */
        jp->done = calloc((size_t)((jp->units.n_total + 7) / 8) + 1, 1);
        jp->dropped = calloc((size_t)((jp->units.n_total + 7) / 8) + 1, 1);
        if (jp->done == NULL || jp->dropped == NULL)
            return sl_error_set(err, SL_ENOMEM, NULL,
                                "no memory for a journal of %" PRIu64 " units", jp->units.n_total);
    }
    return SL_OK;
}

/* Write the header and the records trusted to `path`'s temporary file and
 * rename it over `path`; the file stays open for appending. */
static sl_status
journal_write_start(sl_journal *j, const char *path, const struct fingerprint *fp,
                    const char *const *staging, uint32_t n_staging, struct sl_error *err)
{
    char tmp[PATH_MAX + 16];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
        return sl_error_set(err, SL_EINVAL, NULL, "journal %s: path too long", path);
    j->fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (j->fd < 0)
        return sl_error_set(err, SL_EIO, NULL, "journal %s: cannot create %s: %s", path, tmp,
                            strerror(errno));
    char line[LINE_MAX_BYTES];
    j->len = 0;
    (void)line_put(j->buf, sizeof(j->buf), &j->len, JOURNAL_MAGIC);
    for (uint32_t i = 0; i < fp->n; i++) {
        snprintf(line, sizeof(line), "fp %s %s", fp->items[i].name, fp->items[i].hex);
        if (!line_put(j->buf, sizeof(j->buf), &j->len, line)) {
            SL_TRY(write_all(j->fd, j->buf, j->len, path, err));
            j->len = 0;
            (void)line_put(j->buf, sizeof(j->buf), &j->len, line);
        }
    }
    for (uint32_t i = 0; i < n_staging; i++) {
        struct stat sb;
        if (strchr(staging[i], '\n') != NULL || stat(staging[i], &sb) != 0)
            return sl_error_set(
                err, SL_EIO, NULL, "journal %s: cannot look at \"%s\": %s", path, staging[i],
                strchr(staging[i], '\n') ? "a newline in its name" : strerror(errno));
        snprintf(line, sizeof(line), "staging %llu %llu %s", (unsigned long long)sb.st_dev,
                 (unsigned long long)sb.st_ino, staging[i]);
        if (!line_put(j->buf, sizeof(j->buf), &j->len, line)) {
            SL_TRY(write_all(j->fd, j->buf, j->len, path, err));
            j->len = 0;
            (void)line_put(j->buf, sizeof(j->buf), &j->len, line);
        }
    }
    if (!line_put(j->buf, sizeof(j->buf), &j->len, "begin")) {
        SL_TRY(write_all(j->fd, j->buf, j->len, path, err));
        j->len = 0;
        (void)line_put(j->buf, sizeof(j->buf), &j->len, "begin");
    }
    for (uint32_t p = 0; p < j->plan->n_puts; p++)
        for (uint64_t u = 0; u < j->puts[p].units.n_total; u++) {
            if (!bit_get(&j->puts[p], u))
                continue;
            snprintf(line, sizeof(line), "u %" PRIu32 " %" PRIu64, p, u);
            if (!line_put(j->buf, sizeof(j->buf), &j->len, line)) {
                SL_TRY(write_all(j->fd, j->buf, j->len, path, err));
                j->len = 0;
                (void)line_put(j->buf, sizeof(j->buf), &j->len, line);
            }
        }
    SL_TRY(write_all(j->fd, j->buf, j->len, path, err));
    j->len = 0;
    if (fdatasync(j->fd) != 0 || rename(tmp, path) != 0)
        return sl_error_set(err, SL_EIO, NULL, "journal %s: cannot put it in place: %s", path,
                            strerror(errno));
    return SL_OK;
}

/* Whether `a` and `b` name the same staging directories (by identity). */
static bool
staging_same(const struct journal_read *a, const struct journal_read *b)
{
    if (a->n_staging != b->n_staging)
        return false;
    for (uint32_t i = 0; i < a->n_staging; i++)
        if (a->staging[i].dev != b->staging[i].dev || a->staging[i].ino != b->staging[i].ino)
            return false;
    return true;
}

/*
 * Read the earlier run's journals (o->resume_from, else `path`) into j's
 * bitmaps: each must be of fingerprint `fp`, and all must name the same
 * staging directories, as the processes of one run write them.
 */
static sl_status
journal_read_all(sl_journal *j, const char *path, const struct sl_journal_opts *o,
                 const struct fingerprint *fp, struct sl_error *err)
{
    uint32_t n = o->n_resume_from > 0 ? o->n_resume_from : 1;
    struct journal_read first, r;
    memset(&first, 0, sizeof(first));
    sl_status st = SL_OK;
    for (uint32_t i = 0; i < n && st == SL_OK; i++) {
        const char *p = o->n_resume_from > 0 ? o->resume_from[i] : path;
        memset(&r, 0, sizeof(r));
        st = journal_read_header(p, &r, err);
        if (st == SL_OK)
            st = fingerprint_compare(r.items, r.n_items, fp, p, err);
        if (st == SL_OK && i > 0 && !staging_same(&first, &r))
            st = sl_error_set(err, SL_ECONFLICT, NULL,
                              "journals %s and %s name different output directories: they are "
                              "of different runs (remove the stale one)",
                              o->resume_from[0], p);
        if (st == SL_OK)
            journal_read_units(j, &r, i);
        if (i == 0) {
            first = r;
            continue;
        }
        journal_read_fini(&r);
    }
    journal_read_fini(&first);
    return st;
}

sl_journal *
sl_journal_open(sl_plan *plan, const char *path, const struct sl_journal_opts *opts,
                struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct sl_journal_opts o = opts != NULL ? *opts : SL_JOURNAL_OPTS_DEFAULT;
    if (plan == NULL || path == NULL || path[0] == '\0') {
        sl_error_set(err, SL_EINVAL, NULL, "sl_journal_open needs a plan and a path");
        return NULL;
    }
    if (o.n_staging > SL_JOURNAL_MAX_STAGING) {
        sl_error_set(err, SL_EINVAL, NULL, "journal %s: %" PRIu32 " directories; at most %d", path,
                     o.n_staging, SL_JOURNAL_MAX_STAGING);
        return NULL;
    }
    if (o.n_resume_from > 0 && o.resume_from == NULL) {
        sl_error_set(err, SL_EINVAL, NULL,
                     "journal %s: %" PRIu32 " journals to resume from, none given", path,
                     o.n_resume_from);
        return NULL;
    }
    if (plan->journal != NULL) {
        sl_error_set(err, SL_ESTATE, NULL, "journal %s: the plan has a journal already", path);
        return NULL;
    }
    uint64_t t0 = sl__journal_now_ns();
    sl_journal *j = calloc(1, sizeof(*j));
    if (j == NULL) {
        sl_error_set(err, SL_ENOMEM, NULL, "no memory for journal %s", path);
        return NULL;
    }
    j->plan = plan;
    j->fd = -1;
    sl__strlcpy(j->path, path, sizeof(j->path));
    j->info.damaged_at = -1;
    j->io_err = SL_ERROR_INIT;
    j->interval_ns = (uint64_t)((o.sync_interval_s > 0 ? o.sync_interval_s : 0) * 1e9);
    pthread_mutex_init(&j->mu, NULL);
    struct fingerprint fp = {0};
    sl_status st = journal_puts_init(j, err);
    if (st == SL_OK)
        st = fingerprint_make(plan, &fp, err);
    if (st == SL_OK && o.resume) {
        st = journal_read_all(j, path, &o, &fp, err);
        if (st == SL_OK) {
            journal_distrust(j);
            for (uint32_t p = 0; p < plan->n_puts; p++)
                j->info.units_done += j->puts[p].n_done;
        }
    }
    if (st == SL_OK)
        st = journal_write_start(j, path, &fp, o.staging, o.n_staging, err);
    free(fp.items);
    if (st != SL_OK) {
        journal_free(j);
        return NULL;
    }
    j->last_sync_ns = sl__journal_now_ns();
    atomic_init(&j->busy_ns, j->last_sync_ns - t0);
    plan->journal = j;
    return j;
}

void
sl_journal_get_info(const sl_journal *j, struct sl_journal_info *out)
{
    *out = j->info;
}

/* Write what is buffered and sync it (under mu). */
static void
journal_flush_locked(sl_journal *j)
{
    if (j->len > 0 && j->io_err.code == SL_OK)
        (void)write_all(j->fd, j->buf, j->len, j->path, &j->io_err);
    j->len = 0;
    if (j->io_err.code == SL_OK && fdatasync(j->fd) != 0)
        sl_error_set(&j->io_err, SL_EIO, NULL, "journal %s: cannot sync it: %s", j->path,
                     strerror(errno));
    j->last_sync_ns = sl__journal_now_ns();
}

sl_status
sl_journal_close(sl_journal *j, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (j == NULL)
        return SL_OK;
    uint64_t t0 = sl__journal_now_ns();
    pthread_mutex_lock(&j->mu);
    journal_flush_locked(j);
    pthread_mutex_unlock(&j->mu);
    sl_status st = j->io_err.code;
    if (st != SL_OK && err != NULL && err->code == SL_OK)
        *err = j->io_err;
    if (close(j->fd) != 0 && st == SL_OK)
        st = sl_error_set(err, SL_EIO, NULL, "journal: closing it failed: %s", strerror(errno));
    j->fd = -1;
    uint64_t busy = atomic_load_explicit(&j->busy_ns, memory_order_relaxed);
    j->plan->summary.journal_s = (double)(busy + sl__journal_now_ns() - t0) * 1e-9;
    if (j->plan->journal == j)
        j->plan->journal = NULL;
    journal_free(j);
    return st;
}

sl_status
sl_journal_read_staging(const char *path, struct sl_journal_staging *out, uint32_t cap, uint32_t *n,
                        struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct journal_read r;
    *n = 0;
    sl_status st = journal_read_header(path, &r, err);
    if (st == SL_OK && r.n_staging > cap)
        st = sl_error_set(err, SL_ECORRUPT, NULL,
                          "journal %s names %" PRIu32 " directories; at most %" PRIu32, path,
                          r.n_staging, cap);
    if (st == SL_OK) {
        for (uint32_t i = 0; i < r.n_staging; i++)
            out[i] = r.staging[i];
        *n = r.n_staging;
    }
    journal_read_fini(&r);
    return st;
}

sl_status
sl_journal_check(const sl_plan *plan, const char *path, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct fingerprint fp = {0};
    struct journal_read r;
    memset(&r, 0, sizeof(r));
    sl_status st = fingerprint_make(plan, &fp, err);
    if (st == SL_OK)
        st = journal_read_header(path, &r, err);
    if (st == SL_OK)
        st = fingerprint_compare(r.items, r.n_items, &fp, path, err);
    journal_read_fini(&r);
    free(fp.items);
    return st;
}

/* ---- the executor's side ------------------------------------------------------------ */

uint64_t
sl__journal_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const struct sl_grid *
sl__journal_units(const sl_journal *j, uint32_t put)
{
    return &j->puts[put].units;
}

bool
sl__journal_done(const sl_journal *j, uint32_t put, uint64_t unit)
{
    const struct journal_put *jp = &j->puts[put];
    return unit < jp->units.n_total && bit_get(jp, unit);
}

void
sl__journal_record(sl_journal *j, uint32_t put, uint64_t unit)
{
    uint64_t t0 = sl__journal_now_ns();
    char line[64];
    snprintf(line, sizeof(line), "u %" PRIu32 " %" PRIu64, put, unit);
    pthread_mutex_lock(&j->mu);
    /* Written at once, so a killed process loses no record; synced in
     * batches, as durability against a crash of the machine costs more. */
    (void)line_put(j->buf, sizeof(j->buf), &j->len, line);
    if (j->io_err.code == SL_OK)
        (void)write_all(j->fd, j->buf, j->len, j->path, &j->io_err);
    j->len = 0;
    if (sl__journal_now_ns() - j->last_sync_ns >= j->interval_ns)
        journal_flush_locked(j);
    pthread_mutex_unlock(&j->mu);
    atomic_fetch_add_explicit(&j->busy_ns, sl__journal_now_ns() - t0, memory_order_relaxed);
}

/* ---- a report's failures ---------------------------------------------------------- */

/* Unit coordinates of chunk `coords` of put node `n`. */
static void
report_unit_of(const struct sl__node *n, const uint64_t *coords, uint64_t *unit)
{
    for (uint32_t d = 0; d < n->grid.rank; d++)
        unit[d] = n->shard_chunks[d] > 0 ? coords[d] / n->shard_chunks[d] : coords[d];
}

/* The failed units of put `i` (node `n`) that report put `rp` lists, as
 * bits in `bits` (one per unit); `*listed` counts chunks. */
static sl_status
report_put_failures(const sl_journal *j, uint32_t i, const struct sl__node *n, const json_t *rp,
                    uint8_t *bits, struct sl_error *err)
{
    const struct sl_grid *ug = &j->puts[i].units;
    const json_t *grid = json_object_get(rp, "grid");
    bool same = json_is_array(grid) && json_array_size(grid) == n->grid.rank;
    for (uint32_t d = 0; same && d < n->grid.rank; d++) {
        const json_t *v = json_array_get(grid, d);
        same = json_is_integer(v) && (uint64_t)json_integer_value(v) == n->grid.n_chunks[d];
    }
    if (!same)
        return sl_error_set(err, SL_ECONFLICT, NULL,
                            "put \"%s\": the report's chunk grid is not this run's", n->name);
    const json_t *failures = json_object_get(rp, "failures");
    if (!json_is_array(failures))
        return sl_error_set(err, SL_EPARSE, NULL, "put \"%s\": no \"failures\" list", n->name);
    size_t k;
    const json_t *f;
    json_array_foreach(failures, k, f)
    {
        const json_t *chunk = json_object_get(f, "chunk");
        uint64_t coords[SL_MAX_RANK], unit[SL_MAX_RANK];
        bool ok = json_is_array(chunk) && json_array_size(chunk) == n->grid.rank;
        for (uint32_t d = 0; ok && d < n->grid.rank; d++) {
            const json_t *v = json_array_get(chunk, d);
            ok = json_is_integer(v) && json_integer_value(v) >= 0 &&
                 (uint64_t)json_integer_value(v) < n->grid.n_chunks[d];
            coords[d] = ok ? (uint64_t)json_integer_value(v) : 0;
        }
        if (!ok)
            return sl_error_set(err, SL_EPARSE, NULL,
                                "put \"%s\": failure %zu: \"chunk\" is not a chunk of the put's "
                                "grid",
                                n->name, k);
        report_unit_of(n, coords, unit);
        uint64_t u = sl_grid_linear_index(ug, unit);
        bits[u / 8] |= (uint8_t)(1u << (u % 8));
    }
    return SL_OK;
}

sl_status
sl_journal_check_report(const sl_journal *j, const char *report_path, uint64_t *units,
                        struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    *units = 0;
    json_error_t jerr;
    json_t *doc = json_load_file(report_path, 0, &jerr);
    if (doc == NULL)
        return sl_error_set(err, SL_EPARSE, NULL, "%s: not a report: %s (line %d)", report_path,
                            jerr.text, jerr.line);
    const json_t *puts = json_object_get(doc, "puts");
    sl_status st = SL_OK;
    if (!json_is_array(puts))
        st = sl_error_set(err, SL_EPARSE, NULL, "%s: not a report: no \"puts\" list", report_path);
    const sl_plan *plan = j->plan;
    for (uint32_t i = 0; st == SL_OK && i < plan->n_puts; i++) {
        const struct sl__node *n = sl__graph_node(plan->graph, plan->puts[i].node);
        const struct sl_grid *ug = &j->puts[i].units;
        if (n->kind != SL_NODE_PUT || ug->n_total == 0)
            continue;
        const json_t *rp = NULL, *x;
        size_t k;
        json_array_foreach(puts, k, x)
        {
            const json_t *name = json_object_get(x, "name");
            if (json_is_string(name) && strcmp(json_string_value(name), n->name) == 0)
                rp = x;
        }
        if (rp == NULL) {
            st = sl_error_set(err, SL_ECONFLICT, NULL, "%s: the report has no put \"%s\"",
                              report_path, n->name);
            break;
        }
        uint8_t *bits = calloc((size_t)((ug->n_total + 7) / 8), 1);
        if (bits == NULL) {
            st = sl_error_set(err, SL_ENOMEM, NULL, "no memory for %" PRIu64 " units", ug->n_total);
            break;
        }
        st = report_put_failures(j, i, n, rp, bits, err);
        /* Every unit the journal lacks is one the report lists as failed,
         * and the other way round: else they are not of the same run.  A
         * unit recorded that reads units that run again runs again (its
         * record was dropped), whatever the report lists of it. */
        for (uint64_t u = 0; st == SL_OK && u < ug->n_total; u++) {
            bool failed = bits[u / 8] >> (u % 8) & 1;
            bool done = sl__journal_done(j, i, u);
            if (j->puts[i].dropped[u / 8] >> (u % 8) & 1) {
                *units += 1;
                continue;
            }
            if (failed == !done) {
                *units += failed;
                continue;
            }
            uint64_t uc[SL_MAX_RANK];
            sl_grid_coords_of(ug, u, uc);
            struct sl_chunk_key key = sl_chunk_key_make(ug->rank, uc);
            char at[SL_MAX_RANK * 21 + 4];
            sl_chunk_key_format(&key, at, sizeof(at));
            st = sl_error_set(err, SL_ECONFLICT, NULL,
                              "%s: put \"%s\": unit %s is %s in the journal, but the report lists "
                              "%s: the report and the journal are not of the same run",
                              report_path, n->name, at, done ? "done" : "not done",
                              failed ? "a failed chunk in it" : "no failed chunk in it");
        }
        free(bits);
    }
    json_decref(doc);
    return st;
}
