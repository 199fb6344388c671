/* SPDX-License-Identifier: MIT */
/*
 * The crash test's child: opens the array at STORE/a and commits
 * generations FIRST, FIRST + 1, ... (txn_crash.h) until it is killed,
 * writing each generation number (8 bytes) to stdout after its commit
 * returned, and the byte 'R' once the array is open.  With DURABLE = 1 the
 * store fsyncs directories too.  Exits 2 with a message on any failure.
 *
 *   txn_crash_child STORE FIRST DURABLE
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <sluice.h>

#include "txn_crash.h"

/* What each box of a generation is written through. */
struct child {
    sl_txn *t;
    sl_codec_ctx *ctx;
    uint64_t g;
    sl_status st;
    struct sl_error err;
};

static void
write_box(void *arg, uint64_t y0, uint64_t y1, uint64_t x0, uint64_t x1)
{
    struct child *c = arg;
    uint16_t box[SL_CRASH_N * SL_CRASH_N];
    size_t n = 0;
    for (uint64_t y = y0; y < y1; y++)
        for (uint64_t x = x0; x < x1; x++)
            box[n++] = sl_crash_value(c->g, y, x);
    if (c->st != SL_OK)
        return;
    if (y1 - y0 == SL_CRASH_CHUNK && x1 - x0 == SL_CRASH_CHUNK && y0 % SL_CRASH_CHUNK == 0 &&
        x0 % SL_CRASH_CHUNK == 0) {
        const uint64_t coords[2] = {y0 / SL_CRASH_CHUNK, x0 / SL_CRASH_CHUNK};
        c->st = sl_txn_write_chunk(c->t, coords, box, n * 2, c->ctx, &c->err);
    } else {
        struct sl_region r = {.rank = 2, .start = {y0, x0}, .stop = {y1, x1}};
        c->st = sl_txn_write_region(c->t, &r, box, n * 2, c->ctx, &c->err);
    }
}

static void
die(const char *what, const struct sl_error *err)
{
    char line[400] = "";
    if (err != NULL)
        sl_error_format(err, line, sizeof(line));
    fprintf(stderr, "txn_crash_child: %s: %s\n", what, line);
    exit(2);
}

int
main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: txn_crash_child STORE FIRST DURABLE\n");
        return 2;
    }
    struct sl_error err = SL_ERROR_INIT;
    struct sl_fs_store_opts so = SL_FS_STORE_OPTS_DEFAULT;
    so.durable = atoi(argv[3]) != 0;
    so.create = false;
    sl_store *s = sl_store_open_fs(argv[1], &so, &err);
    sl_array *a = s != NULL ? sl_array_open(s, "a", NULL, &err) : NULL;
    if (a == NULL)
        die("open", &err);
    if (write(1, "R", 1) != 1)
        die("report", NULL);
    struct child c = {.ctx = sl_codec_ctx_create(NULL, NULL)};
    for (uint64_t g = strtoull(argv[2], NULL, 10);; g++) {
        c.t = sl_txn_open(a, NULL, &err);
        if (c.t == NULL)
            die("begin", &err);
        c.g = g;
        c.st = SL_OK;
        c.err = SL_ERROR_INIT;
        sl_crash_plan(g, write_box, &c);
        if (c.st != SL_OK)
            die("write", &c.err);
        if (sl_txn_commit(c.t, c.ctx, &err) != SL_OK)
            die("commit", &err);
        sl_txn_close(c.t);
        if (write(1, &g, sizeof(g)) != (ssize_t)sizeof(g))
            die("report", NULL);
    }
}
