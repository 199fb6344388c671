/* SPDX-License-Identifier: MIT */
/*
 * `sluice info PATH`: describe the Zarr array or group stored at PATH:
 * format, shape, dtype, chunk and shard grids, codecs, fill value,
 * dimension names, attributes, and how many chunk objects are stored and
 * their bytes; for a group, its attributes and the arrays and groups in it.
 * `--tree` draws a group's hierarchy, one member a line; `--json` prints
 * all of it as one JSON document (schema: docs/info.schema.json).
 *
 * DESIGN: what is known of a node is gathered once (struct node) and then
 * written as text, tree or JSON, so the three outputs cannot disagree.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "commands.h"
#include "json_out.h"
#include "runner.h"

static int run_info(int argc, char **argv);

const struct cmd cmd_info = {
    .name = "info",
    .summary = "describe a stored Zarr array or group",
    .usage = "usage: sluice info [--no-stored] [--tree | --json] PATH\n"
             "\n"
             "Describe the Zarr v2 or v3 array (or group) at PATH, a directory or a\n"
             "URL (http://, https://, s3://); a remote group's members come from its\n"
             "consolidated metadata.\n"
             "\n"
             "Options:\n"
             "  --no-stored          do not list the store to count stored chunks and "
             "bytes\n"
             "  --tree               a group's hierarchy, a line per member: shape, dtype,\n"
             "                       stored objects and bytes\n"
             "  --json               everything as one JSON document (schema:\n"
             "                       docs/info.schema.json)\n" REMOTE_OPTS_HELP
             "  --help               print this help\n",
    .run = run_info,
};

/* ---- what is known of a node ------------------------------------------------------ */

/* Stored chunk objects of an array: counted, not countable, or failed. */
enum stored_state { STORED_SKIPPED, STORED_COUNTED, STORED_UNLISTABLE, STORED_FAILED };

struct node {
    char *path; /* from the store's root ("" for the root), owned */
    sl_zarr_kind kind;
    int zarr_format;
    sl_array *array;  /* kind == SL_ZARR_ARRAY and it opened */
    char *attributes; /* compact JSON object text, owned; NULL when unread */
    char *problem;    /* why the node could not be read (owned), or NULL */
    enum stored_state stored;
    struct sl_array_stored counts;
    char *stored_note; /* why not counted (owned), or NULL */
    bool consolidated; /* a member described by consolidated metadata */
};

static char *
dup_text(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d != NULL)
        memcpy(d, s, n);
    return d;
}

static char *
error_text(const struct sl_error *err)
{
    char line[1200];
    sl_error_format(err, line, sizeof(line));
    return dup_text(line);
}

static void
node_fini(struct node *n)
{
    free(n->path);
    free(n->attributes);
    free(n->problem);
    free(n->stored_note);
    sl_array_unref(n->array);
    memset(n, 0, sizeof(*n));
}

static void
node_count_stored(struct node *n)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_status s = sl_array_stored(n->array, &n->counts, &err);
    if (s == SL_OK) {
        n->stored = STORED_COUNTED;
        return;
    }
    n->stored = s == SL_EUNSUPPORTED ? STORED_UNLISTABLE : STORED_FAILED;
    n->stored_note = error_text(&err);
}

/* Fill in an array's facts (`array` given, or opened here from `store` at
 * n->path). */
static void
node_read(struct node *n, sl_store *store, sl_array *array, bool stored)
{
    struct sl_error err = SL_ERROR_INIT;
    n->array = array != NULL ? array : sl_array_open(store, n->path, NULL, &err);
    if (n->array == NULL) {
        n->problem = error_text(&err);
        return;
    }
    n->attributes = dup_text(sl_array_attributes(n->array));
    if (stored)
        node_count_stored(n);
}

/* The members of a group, sorted by path. */
struct members {
    struct node *v;
    size_t n, cap;
    bool stored;
    bool failed; /* out of memory */
};

static sl_status
collect_member(void *arg, const struct sl_group_member *m)
{
    struct members *ms = arg;
    if (ms->n == ms->cap) {
        size_t cap = ms->cap ? 2 * ms->cap : 16;
        struct node *v = realloc(ms->v, cap * sizeof(*v));
        if (v == NULL) {
            ms->failed = true;
            return SL_ENOMEM;
        }
        ms->v = v;
        ms->cap = cap;
    }
    struct node *n = &ms->v[ms->n++];
    memset(n, 0, sizeof(*n));
    n->path = dup_text(m->path);
    n->kind = m->kind;
    n->zarr_format = m->zarr_format;
    n->consolidated = m->consolidated;
    struct sl_error err = SL_ERROR_INIT;
    if (m->kind == SL_ZARR_ARRAY) {
        sl_array *a = sl_group_member_open(m, NULL, &err);
        if (a == NULL)
            n->problem = error_text(&err);
        else
            node_read(n, m->store, a, ms->stored);
    } else if (m->kind == SL_ZARR_GROUP) {
        struct sl_buf b = SL_BUF_INIT;
        if (sl_group_member_attributes(m, &b, &err) == SL_OK)
            n->attributes = dup_text((const char *)b.data);
        else
            n->problem = error_text(&err);
        sl_buf_fini(&b);
    } else {
        n->problem = dup_text("unreadable metadata");
    }
    return SL_OK;
}

static int
by_path(const void *a, const void *b)
{
    return strcmp(((const struct node *)a)->path, ((const struct node *)b)->path);
}

static void
members_fini(struct members *ms)
{
    for (size_t i = 0; i < ms->n; i++)
        node_fini(&ms->v[i]);
    free(ms->v);
}

/* ---- text ----------------------------------------------------------------------------- */

static void
print_dims(const char *label, uint32_t rank, const uint64_t *v)
{
    char text[512];
    sl_shape_format(rank, v, text, sizeof(text));
    printf("%-12s %s", label, text);
}

/* Chunks (or shards) of `piece` that cover `shape`. */
static uint64_t
grid_count(uint32_t rank, const uint64_t *shape, const uint64_t *piece, uint64_t *per_dim)
{
    uint64_t total = 1;
    for (uint32_t d = 0; d < rank; d++) {
        per_dim[d] = (shape[d] + piece[d] - 1) / piece[d];
        total *= per_dim[d];
    }
    return total;
}

/* "  (grid [8, 8, 8], 512 chunks)" for the grid of `shape` in pieces of `piece`. */
static void
print_grid(uint32_t rank, const uint64_t *shape, const uint64_t *piece, const char *noun)
{
    uint64_t n[SL_MAX_RANK];
    uint64_t total = grid_count(rank, shape, piece, n);
    char text[512];
    sl_shape_format(rank, n, text, sizeof(text));
    printf("  (grid %s, %" PRIu64 " %s)\n", text, total, noun);
}

static double
decoded_bytes(const sl_array *a)
{
    double n = (double)sl_dtype_size(sl_array_dtype(a));
    for (uint32_t d = 0; d < sl_array_rank(a); d++)
        n *= (double)sl_array_shape(a)[d];
    return n;
}

static void
text_stored(const struct node *n)
{
    const sl_array *a = n->array;
    if (n->stored == STORED_UNLISTABLE) {
        printf("%-12s not counted: the store cannot list (%s)\n", "stored:", n->stored_note);
        return;
    }
    double logical = decoded_bytes(a);
    printf("%-12s %" PRIu64 " %s, %" PRIu64 " bytes", "stored:", n->counts.n_objects,
           sl_array_shard_shape(a) != NULL ? "shards" : "chunks", n->counts.n_bytes);
    if (n->counts.n_bytes > 0)
        printf(" (%.0f bytes decoded, ratio %.2f)", logical, logical / (double)n->counts.n_bytes);
    printf("\n");
}

static void
text_array(const struct node *n)
{
    const sl_array *a = n->array;
    uint32_t rank = sl_array_rank(a);
    char text[2048];
    printf("%-12s Zarr v%d array\n", "format:", sl_array_zarr_format(a));
    print_dims("shape:", rank, sl_array_shape(a));
    printf("\n%-12s %s\n", "dtype:", sl_dtype_name(sl_array_dtype(a)));
    print_dims("chunks:", rank, sl_array_chunk_shape(a));
    print_grid(rank, sl_array_shape(a), sl_array_chunk_shape(a), "chunks");
    if (sl_array_shard_shape(a) != NULL) {
        print_dims("shards:", rank, sl_array_shard_shape(a));
        print_grid(rank, sl_array_shape(a), sl_array_shard_shape(a), "shards");
    } else {
        printf("%-12s none\n", "shards:");
    }
    sl_array_codecs_describe(a, text, sizeof(text));
    printf("%-12s %s\n", "codecs:", text);
    sl_array_fill_describe(a, text, sizeof(text));
    printf("%-12s %s\n", "fill value:", text);
    bool named = false;
    for (uint32_t d = 0; d < rank; d++)
        named = named || sl_array_dimension_name(a, d) != NULL;
    if (named) {
        printf("%-12s", "dimensions:");
        for (uint32_t d = 0; d < rank; d++) {
            const char *dn = sl_array_dimension_name(a, d);
            printf("%s%s", d ? ", " : " ", dn != NULL ? dn : "-");
        }
        printf("\n");
    }
    printf("%-12s %s\n", "attributes:", n->attributes);
    if (n->stored != STORED_SKIPPED)
        text_stored(n);
}

/* One member's line of the group listing, or of the tree (`tree`: indented
 * by depth, named by its last path element, with stored bytes). */
static void
text_member(const struct node *n, bool tree)
{
    const char *name = n->path;
    int depth = 0;
    if (tree) {
        for (const char *p = n->path; *p != '\0'; p++)
            if (*p == '/') {
                depth++;
                name = p + 1;
            }
    }
    char what[1400] = "";
    if (n->problem != NULL) {
        snprintf(what, sizeof(what), " (cannot open: %s)", n->problem);
    } else if (n->array != NULL) {
        char shape[256];
        sl_shape_format(sl_array_rank(n->array), sl_array_shape(n->array), shape, sizeof(shape));
        int len =
            snprintf(what, sizeof(what), " %s %s", sl_dtype_name(sl_array_dtype(n->array)), shape);
        if (tree && n->stored == STORED_COUNTED && len > 0 && (size_t)len < sizeof(what))
            snprintf(what + len, sizeof(what) - (size_t)len, ", %" PRIu64 " %s, %" PRIu64 " bytes",
                     n->counts.n_objects,
                     sl_array_shard_shape(n->array) != NULL ? "shards" : "chunks",
                     n->counts.n_bytes);
    }
    const char *kind = n->kind == SL_ZARR_GROUP   ? "group"
                       : n->kind == SL_ZARR_ARRAY ? "array"
                                                  : "unreadable";
    char label[1100];
    if (tree)
        snprintf(label, sizeof(label), "%*s%s%s", 2 * depth, "", name,
                 n->kind == SL_ZARR_GROUP ? "/" : "");
    else
        snprintf(label, sizeof(label), "%s", n->path);
    printf("  %-40s v%d %s%s\n", label, n->zarr_format, kind, what);
}

static const struct node *
member_find(const struct members *ms, const char *path)
{
    for (size_t i = 0; i < ms->n; i++)
        if (strcmp(ms->v[i].path, path) == 0)
            return &ms->v[i];
    return NULL;
}

/* One OME-Zarr multiscale image: axes, then a line per level. */
static void
text_image(const struct sl_ome_multiscale *m, const struct members *ms)
{
    if (m->name[0] != '\0')
        printf("  \"%s\": ", m->name);
    else
        printf("  (unnamed): ");
    printf("OME-Zarr %s, ", m->version[0] ? m->version : "(no version)");
    if (m->type[0] != '\0')
        printf("method %s, ", m->type);
    printf("%u level%s; axes", (unsigned)m->n_levels, m->n_levels == 1 ? "" : "s");
    for (uint32_t d = 0; d < m->rank; d++) {
        const struct sl_ome_axis *a = &m->axes[d];
        printf("%s %s", d ? "," : "", a->name);
        if (a->type[0] || a->unit[0])
            printf(" (%s%s%s)", a->type, a->type[0] && a->unit[0] ? ", " : "", a->unit);
    }
    printf("\n");
    for (uint32_t k = 0; k < m->n_levels; k++) {
        const struct sl_ome_level *l = &m->levels[k];
        printf("    %-10s scale [", l->path);
        for (uint32_t d = 0; d < m->rank; d++)
            printf("%s%g", d ? ", " : "", l->scale[d]);
        printf("]");
        const struct node *n = member_find(ms, l->path);
        if (n != NULL && n->array != NULL) {
            char shape[256];
            sl_shape_format(sl_array_rank(n->array), sl_array_shape(n->array), shape,
                            sizeof(shape));
            printf("  %s %s", sl_dtype_name(sl_array_dtype(n->array)), shape);
        } else if (ms->n > 0) {
            printf("  (no such array in the group)");
        }
        printf("\n");
    }
}

/* The group's OME-Zarr multiscale images, when its attributes have some. */
static void
text_multiscales(const struct node *g, const struct members *ms)
{
    struct sl_ome_multiscale *m = malloc(sizeof(*m));
    uint32_t n = 0;
    struct sl_error err = SL_ERROR_INIT;
    const char *src = g->zarr_format == 3 ? "zarr.json" : ".zattrs";
    sl_status s =
        m != NULL ? sl_ome_multiscale_parse(g->attributes, src, 0, m, &n, &err) : SL_ENOMEM;
    if (s == SL_ENOTFOUND && n == 0) {
        free(m);
        return;
    }
    printf("%-12s %u image%s\n", "multiscales:", (unsigned)n, n == 1 ? "" : "s");
    for (uint32_t i = 0; i < n && s == SL_OK; i++) {
        if (i > 0)
            s = sl_ome_multiscale_parse(g->attributes, src, i, m, NULL, &err);
        if (s == SL_OK)
            text_image(m, ms);
    }
    if (s != SL_OK) {
        char line[1200];
        sl_error_format(&err, line, sizeof(line));
        printf("  (unreadable: %s)\n", line);
    }
    free(m);
}

static void
text_group(const struct node *g, const struct members *ms, bool tree, const char *not_listed)
{
    printf("%-12s Zarr v%d group\n", "format:", g->zarr_format);
    printf("%-12s %s\n", "attributes:", g->attributes);
    text_multiscales(g, ms);
    printf("members:\n");
    if (not_listed != NULL) {
        printf("  (not listed: the store cannot list and the group has no consolidated "
               "metadata; %s)\n",
               not_listed);
        return;
    }
    bool consolidated = false;
    for (size_t i = 0; i < ms->n; i++) {
        text_member(&ms->v[i], tree);
        consolidated = consolidated || ms->v[i].consolidated;
    }
    if (ms->n == 0)
        printf("  (none)\n");
    else if (consolidated)
        printf("  (from consolidated metadata)\n");
}

/* ---- JSON ------------------------------------------------------------------------------ */

static void
json_dims(const char *key, uint32_t rank, const uint64_t *v)
{
    printf(",\"%s\":[", key);
    for (uint32_t d = 0; d < rank; d++)
        printf("%s%" PRIu64, d ? "," : "", v[d]);
    printf("]");
}

/* "chunks", "chunk_grid" and "n_chunks" (or shards). */
static void
json_grid(const char *noun, uint32_t rank, const uint64_t *shape, const uint64_t *piece)
{
    uint64_t n[SL_MAX_RANK];
    uint64_t total = grid_count(rank, shape, piece, n);
    char key[32];
    snprintf(key, sizeof(key), "%ss", noun);
    json_dims(key, rank, piece);
    snprintf(key, sizeof(key), "%s_grid", noun);
    json_dims(key, rank, n);
    printf(",\"n_%ss\":%" PRIu64, noun, total);
}

static void
json_stored(const struct node *n)
{
    printf(",\"stored\":");
    switch (n->stored) {
    case STORED_SKIPPED:
        printf("null");
        break;
    case STORED_COUNTED:
        printf("{\"objects\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"decoded_bytes\":%.0f}",
               n->counts.n_objects, n->counts.n_bytes, decoded_bytes(n->array));
        break;
    case STORED_UNLISTABLE:
    case STORED_FAILED:
        printf("{\"error\":");
        json_out_string(n->stored_note);
        printf("}");
        break;
    }
}

/* One node as a JSON object (its fields, not the braces' context). */
static void
json_node(const struct node *n)
{
    printf("{\"path\":");
    json_out_string(n->path);
    printf(",\"node_type\":\"%s\",\"zarr_format\":%d",
           n->kind == SL_ZARR_GROUP   ? "group"
           : n->kind == SL_ZARR_ARRAY ? "array"
                                      : "unreadable",
           n->zarr_format);
    if (n->problem != NULL) {
        printf(",\"error\":");
        json_out_string(n->problem);
        printf("}");
        return;
    }
    if (n->consolidated)
        printf(",\"consolidated\":true");
    const sl_array *a = n->array;
    if (a != NULL) {
        uint32_t rank = sl_array_rank(a);
        char text[2048];
        json_dims("shape", rank, sl_array_shape(a));
        printf(",\"dtype\":\"%s\"", sl_dtype_name(sl_array_dtype(a)));
        json_grid("chunk", rank, sl_array_shape(a), sl_array_chunk_shape(a));
        if (sl_array_shard_shape(a) != NULL)
            json_grid("shard", rank, sl_array_shape(a), sl_array_shard_shape(a));
        else
            printf(",\"shards\":null");
        sl_array_codecs_describe(a, text, sizeof(text));
        printf(",\"codecs\":");
        json_out_string(text);
        sl_array_fill_describe(a, text, sizeof(text));
        printf(",\"fill_value\":");
        json_out_string(text);
        printf(",\"dimension_names\":[");
        for (uint32_t d = 0; d < rank; d++) {
            const char *dn = sl_array_dimension_name(a, d);
            printf("%s", d ? "," : "");
            if (dn != NULL)
                json_out_string(dn);
            else
                printf("null");
        }
        printf("]");
        json_stored(n);
    }
    printf(",\"attributes\":%s}", n->attributes != NULL ? n->attributes : "{}");
}

static void
json_group(const struct node *g, const struct members *ms, const char *not_listed)
{
    printf("{\"schema\":\"sluice-info/1\",\"node\":");
    json_node(g);
    printf(",\"members\":");
    if (not_listed != NULL) {
        printf("null,\"members_error\":");
        json_out_string(not_listed);
    } else {
        printf("[");
        for (size_t i = 0; i < ms->n; i++) {
            printf("%s", i ? "," : "");
            json_node(&ms->v[i]);
        }
        printf("]");
    }
    printf("}\n");
}

/* ---- the command ----------------------------------------------------------------------- */

enum output { OUT_TEXT, OUT_TREE, OUT_JSON };

static int
info_group(sl_store *store, const char *path, int format, const char *attrs, enum output out,
           bool stored)
{
    struct node g = {.path = dup_text(""),
                     .kind = SL_ZARR_GROUP,
                     .zarr_format = format,
                     .attributes = dup_text(attrs)};
    struct members ms = {.stored = stored && out != OUT_TEXT};
    struct sl_error err = SL_ERROR_INIT;
    sl_status s = sl_group_members(store, "", collect_member, &ms, &err);
    char *not_listed = NULL;
    int rc = 0;
    if (s == SL_EUNSUPPORTED && ms.n == 0 && err.path[0] == '\0')
        not_listed = error_text(&err);
    else if (ms.failed)
        rc = cmd_fail("info", path,
                      (sl_error_set(&err, SL_ENOMEM, NULL, "out of memory listing members"), &err));
    else if (s != SL_OK)
        rc = cmd_fail("info", path, &err);
    if (rc == 0) {
        if (ms.n > 1)
            qsort(ms.v, ms.n, sizeof(*ms.v), by_path);
        if (out == OUT_JSON) {
            json_group(&g, &ms, not_listed);
        } else {
            printf("%-12s %s\n", "path:", path);
            text_group(&g, &ms, out == OUT_TREE, not_listed);
        }
    }
    free(not_listed);
    members_fini(&ms);
    node_fini(&g);
    return rc;
}

static int
info_array(sl_store *store, const char *path, int format, enum output out, bool stored)
{
    struct node n = {.path = dup_text(""), .kind = SL_ZARR_ARRAY, .zarr_format = format};
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_open(store, "", NULL, &err);
    if (a == NULL) {
        node_fini(&n);
        return cmd_fail("info", path, &err);
    }
    node_read(&n, store, a, stored);
    int rc = 0;
    if (n.stored == STORED_FAILED) {
        fprintf(stderr, "sluice info: %s: %s\n", path, n.stored_note);
        rc = 1;
    } else if (out == OUT_JSON) {
        printf("{\"schema\":\"sluice-info/1\",\"node\":");
        json_node(&n);
        printf(",\"members\":null}\n");
    } else {
        printf("%-12s %s\n", "path:", path);
        text_array(&n);
    }
    node_fini(&n);
    return rc;
}

static int
run_info(int argc, char **argv)
{
    const char *path = NULL;
    bool stored = true;
    enum output out = OUT_TEXT;
    struct run_opts ro = RUN_OPTS_DEFAULT;
    for (int i = 1; i < argc; i++) {
        int used = remote_opts_parse(&cmd_info, &ro, argc, argv, &i);
        if (used == 2)
            return 2;
        if (used == 1)
            continue;
        if (strcmp(argv[i], "--no-stored") == 0) {
            stored = false;
        } else if (strcmp(argv[i], "--tree") == 0 || strcmp(argv[i], "--json") == 0) {
            enum output o = argv[i][2] == 't' ? OUT_TREE : OUT_JSON;
            if (out != OUT_TEXT && out != o)
                return cmd_usage_error(&cmd_info, "--tree and --json exclude each other");
            out = o;
        } else if (argv[i][0] == '-' && strcmp(argv[i], "-") != 0) {
            return cmd_usage_error(&cmd_info, "unknown option \"%s\"", argv[i]);
        } else if (path != NULL) {
            return cmd_usage_error(&cmd_info, "more than one PATH");
        } else {
            path = argv[i];
        }
    }
    if (path == NULL)
        return cmd_usage_error(&cmd_info, "PATH is missing");
    struct sl_error err = SL_ERROR_INIT;
    sl_store *store = open_input_store(path, &ro, &err);
    if (store == NULL)
        return cmd_fail("info", path, &err);
    /* One request for a remote v3 group: its kind and attributes at once. */
    sl_zarr_kind kind = SL_ZARR_NONE;
    int format = 0, rc;
    struct sl_buf attrs = SL_BUF_INIT;
    if (sl_zarr_read_node(store, "", &kind, &format, &attrs, &err) != SL_OK)
        rc = cmd_fail("info", path, &err);
    else if (kind == SL_ZARR_GROUP)
        rc = info_group(store, path, format, (const char *)attrs.data, out, stored);
    else
        rc = info_array(store, path, format, out, stored);
    sl_buf_fini(&attrs);
    sl_store_unref(store);
    return rc;
}
