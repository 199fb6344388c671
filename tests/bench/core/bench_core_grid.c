/* SPDX-License-Identifier: MIT */
/*
 * How fast the chunk-grid iterator walks a large grid, regular and with
 * explicit boundaries: the executor walks output grids with it, so its cost
 * per chunk bounds the scheduling cost per task from below.
 */
#include <inttypes.h>
#include <stdlib.h>

#include <sluice.h>

#include "bench.h"

/* Best of `reps` walks of the whole grid; returns ns per chunk. */
static double
walk_ns_per_chunk(const struct sl_grid *g, int reps, uint64_t *checksum)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        struct sl_grid_iter it;
        double t0 = sl_bench_now();
        sl_grid_iter_init(&it, g, NULL);
        while (sl_grid_iter_next(&it))
            *checksum += it.part.start[g->rank - 1];
        double dt = sl_bench_now() - t0;
        if (dt < best)
            best = dt;
    }
    return best * 1e9 / (double)g->n_total;
}

int
main(void)
{
    uint64_t checksum = 0;
    /* 10^6 chunks of a 3-D array. */
    const uint64_t shape[] = {6400, 6400, 1600}, chunk[] = {64, 64, 16};
    struct sl_grid g;
    if (sl_grid_init_regular(&g, 3, shape, chunk, NULL) != SL_OK)
        return 1;
    sl_bench_report("grid_iter_regular_1e6_chunks", walk_ns_per_chunk(&g, 5, &checksum),
                    "ns/chunk");

    /* The same grid given as explicit boundaries of uneven chunks. */
    uint64_t *b[3];
    for (int d = 0; d < 3; d++) {
        b[d] = malloc((g.n_chunks[d] + 1) * sizeof(uint64_t));
        for (uint64_t i = 0; i <= g.n_chunks[d]; i++)
            b[d][i] = i * chunk[d] + (i > 0 && i < g.n_chunks[d] ? i % 3 : 0);
    }
    struct sl_grid irr;
    if (sl_grid_init_bounds(&irr, NULL, 3, g.n_chunks, (const uint64_t *const *)b, NULL) != SL_OK)
        return 1;
    sl_bench_report("grid_iter_irregular_1e6_chunks", walk_ns_per_chunk(&irr, 5, &checksum),
                    "ns/chunk");

    /* Chunk lookup by coordinate, irregular dimension (binary search). */
    double t0 = sl_bench_now();
    const int n_lookups = 10000000;
    for (int i = 0; i < n_lookups; i++)
        checksum += sl_grid_chunk_at(&irr, 0, (uint64_t)i % shape[0]);
    sl_bench_report("grid_lookup_irregular", (sl_bench_now() - t0) * 1e9 / n_lookups, "ns/lookup");

    sl_grid_fini(&irr);
    for (int d = 0; d < 3; d++)
        free(b[d]);
    fprintf(stderr, "checksum %" PRIu64 "\n", checksum);
    return 0;
}
