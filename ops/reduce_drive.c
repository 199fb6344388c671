/* SPDX-License-Identifier: MIT */
/*
 * The one driver of every reduction: it walks a plan (reduce_internal.h)
 * output row by output row and the tiled kept dimension in tiles of
 * up to SL__RD_TILE_BYTES of accumulators, with one kernel's typed steps.
 *
 * DESIGN: per tile, the inputs of its outputs are folded into a tile of
 * accumulators on the stack one input row at a time (a row is the tile's
 * extent of the kept dimension at one index of the reduced ones, or, when
 * the innermost dimension is reduced, that dimension's run for each
 * output), then the tile is finished into the output through the
 * elementwise stores (the cast rules), folded into the states, or merged.
 * States are folded by the same path: partial records read row by row
 * along the reduced dimensions are merged into a tile of records.  Rows
 * are visited in C order of their indices, so results never depend on the
 * output's layout; the kernel's row loop over a contiguous kept dimension
 * is what runs for a reduction along an outer axis.
 */
#include <string.h>

#include "reduce_internal.h"

/* Room for one tile: accumulators or records, and the wide results. */
union rd_tile {
    unsigned char acc[SL__RD_TILE_BYTES]; /* accumulators or state records */
    uint64_t align_;                      /* 8-byte alignment for them */
};
union rd_wide {
    int64_t i64[SL__RD_TILE];  /* SL__EW_I64 results */
    uint64_t u64[SL__RD_TILE]; /* SL__EW_U64 results */
    double f64[SL__RD_TILE];   /* SL__EW_F64 results */
};

/* The box of reduced dimensions walked row by row (the last entry spare). */
static void
red_box(const struct sl__rd_plan *pl, struct sl__ops_box *box)
{
    box->rank = pl->n_red + 1;
    for (uint32_t d = 0; d < pl->n_red; d++) {
        box->ext[d] = pl->red_ext[d];
        box->step[d] = pl->red_in[d];
    }
    box->ext[pl->n_red] = 1;
    box->step[pl->n_red] = 0;
}

/* Fold the inputs of one tile (n outputs from `in`) into `acc`. */
static void
tile_fold_inputs(const struct sl__rd_plan *pl, const struct sl__rd_kernel *k,
                 const struct sl__ops_box *box, const unsigned char *in, size_t n, void *acc)
{
    k->init(acc, n);
    if (pl->count == 0)
        return;
    uint64_t idx[SL_MAX_RANK + 1] = {0};
    ptrdiff_t off = 0;
    do
        k->row(acc, in + off, pl->j_in, n, pl->i_in, pl->i_ext);
    while (sl__ops_box_next_row(box, idx, &off));
}

/* Merge the partial records of one tile (n outputs from `in`) into `tile`,
 * which starts as copies of the empty record `empty`. */
static void
tile_merge_states(const struct sl__rd_plan *pl, const struct sl__rd_kernel *k,
                  const struct sl__ops_box *box, const unsigned char *in, size_t n,
                  const void *empty, void *tile)
{
    const size_t rec = (size_t)k->words * sizeof(uint64_t);
    for (size_t j = 0; j < n; j++)
        memcpy((unsigned char *)tile + j * rec, empty, rec);
    if (pl->count == 0)
        return;
    uint64_t idx[SL_MAX_RANK + 1] = {0};
    ptrdiff_t off = 0;
    do
        k->merge(tile, in + off, pl->j_in, n);
    while (sl__ops_box_next_row(box, idx, &off));
}

/* Write n records of `tile` to `out`, `step` bytes apart. */
static void
tile_write_states(const struct sl__rd_kernel *k, const void *tile, size_t n, unsigned char *out,
                  ptrdiff_t step)
{
    const size_t rec = (size_t)k->words * sizeof(uint64_t);
    for (size_t j = 0; j < n; j++)
        memcpy(out + (ptrdiff_t)j * step, (const unsigned char *)tile + j * rec, rec);
}

/* Finish n accumulators (DIRECT) or records (FINISH) of `tile`, `size`
 * bytes each, into `out`, SL__RD_TILE at a time. */
static void
tile_finish(const struct sl__rd_plan *pl, const struct sl__rd_kernel *k, enum sl__rd_mode mode,
            sl__ew_store_fn *store, const unsigned char *tile, size_t size, size_t n,
            unsigned char *out, const struct sl__rd_ctx *ctx)
{
    union rd_wide wide;
    for (size_t j = 0; j < n; j += SL__RD_TILE) {
        const size_t m = n - j < SL__RD_TILE ? n - j : SL__RD_TILE;
        if (mode == SL__RD_DIRECT)
            k->final(&wide, tile + j * size, m, pl->count, ctx);
        else
            k->result(&wide, tile + j * size, m, ctx);
        store(out + (ptrdiff_t)j * pl->j_out, pl->j_out, &wide, m);
    }
}

bool
sl__rd_drive(const struct sl__rd_plan *pl, const struct sl__rd_kernel *k, enum sl__rd_mode mode,
             sl_dtype out_dtype, const struct sl__rd_ctx *ctx)
{
    const bool states = mode == SL__RD_MERGE || mode == SL__RD_FINISH || mode == SL__RD_CHECK;
    sl__ew_store_fn *store = sl__ew_conv_table[out_dtype].store[k->kind];
    union rd_tile tile;
    const size_t size = states ? (size_t)k->words * sizeof(uint64_t) : k->acc_bytes;
    const uint64_t per_tile = SL__RD_TILE_BYTES / size;
    uint64_t empty[SL__RD_ACC_MAX / sizeof(uint64_t)];
    struct sl__ops_box box;
    red_box(pl, &box);
    if (states) {
        k->init(tile.acc, 1);
        k->save((unsigned char *)empty, 0, tile.acc, 1, 0);
    }
    uint64_t o[SL_MAX_RANK] = {0};
    do {
        ptrdiff_t in_off = 0, out_off = 0;
        for (uint32_t d = 0; d < pl->n_outer; d++) {
            in_off += (ptrdiff_t)o[d] * pl->outer_in[d];
            out_off += (ptrdiff_t)o[d] * pl->outer_out[d];
        }
        for (uint64_t j0 = 0; j0 < pl->j_ext; j0 += per_tile) {
            const size_t n = (size_t)(pl->j_ext - j0 < per_tile ? pl->j_ext - j0 : per_tile);
            const unsigned char *in = pl->in + in_off + (ptrdiff_t)j0 * pl->j_in;
            unsigned char *out = pl->out + out_off + (ptrdiff_t)j0 * pl->j_out;
            if (!states)
                tile_fold_inputs(pl, k, &box, in, n, tile.acc);
            else
                tile_merge_states(pl, k, &box, in, n, empty, tile.acc);
            switch (mode) {
            case SL__RD_DIRECT:
            case SL__RD_FINISH:
                tile_finish(pl, k, mode, store, tile.acc, size, n, out, ctx);
                break;
            case SL__RD_ADD:
                k->fold(out, pl->j_out, tile.acc, n, pl->count);
                break;
            case SL__RD_MERGE:
                tile_write_states(k, tile.acc, n, out, pl->j_out);
                break;
            case SL__RD_CHECK:
                if (k->unseen != NULL && k->unseen(tile.acc, n) < n)
                    return false;
                break;
            }
        }
    } while (sl__index_next(o, pl->outer_ext, pl->n_outer));
    return true;
}
