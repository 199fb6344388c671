/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the io array tests: a small thread-pool "parallel for" that
 * implements struct sl_parallel, deterministic test data for any dtype, a
 * reference copy of a box out of a dense array, and a batched read of
 * every chunk of an array checked against the values written.
 */
#ifndef SL_TEST_TESTKIT_H
#define SL_TEST_TESTKIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice.h>

/* A parallel-for over `n_threads` threads made per call. */
struct sl_test_pool {
    struct sl_parallel par; /* pass &par */
    unsigned n_threads;
};

void sl_test_pool_init(struct sl_test_pool *p, unsigned n_threads);

/* Fill `n` elements of `dt` with values derived from `seed` and their index:
 * smooth runs with some noise, NaNs in floats every 97th element when
 * `with_nan`. */
void sl_test_fill_data(void *buf, size_t n, sl_dtype dt, unsigned seed, bool with_nan);

/* Copy box [start, start + shape) of a dense C-order `src` of `dims` into
 * the dense `dst`. */
void sl_test_box_extract(void *dst, const void *src, uint32_t rank, const uint64_t *dims,
                         const uint64_t *start, const uint64_t *shape, size_t es);

/* Number of elements of a shape. */
uint64_t sl_test_count(uint32_t rank, const uint64_t *shape);

/* What sl_test_read_chunks did. */
struct sl_test_chunks_read {
    sl_status ret;          /* what sl_array_read_batch returned (SL_ENOMEM: no buffers) */
    sl_status first_failed; /* the status of the first selection that failed; SL_OK: none */
    int wrong;              /* selections read ok whose values differ from value_at's */
};

/*
 * Read every chunk of the 2-D uint16 array `a` (`side` x `side` elements,
 * chunks of `chunk` x `chunk`) in one batch with 2 workers: one selection
 * per chunk, the chunks in row-major order; each selection's status and
 * error into `status` and `errors` ((side / chunk)^2 entries each), the
 * batch's counters into `stats` (NULL: none).  Every selection read is
 * compared with `value_at`.  Used by the remote stores' batch tests.
 */
struct sl_test_chunks_read sl_test_read_chunks(sl_array *a, uint64_t side, uint64_t chunk,
                                               uint16_t (*value_at)(uint64_t i, uint64_t j),
                                               sl_status *status, struct sl_error *errors,
                                               struct sl_batch_stats *stats);

/* The same with `n_workers` workers. */
struct sl_test_chunks_read sl_test_read_chunks_on(sl_array *a, uint64_t side, uint64_t chunk,
                                                  uint16_t (*value_at)(uint64_t i, uint64_t j),
                                                  sl_status *status, struct sl_error *errors,
                                                  struct sl_batch_stats *stats, unsigned n_workers);

/*
 * The transaction suites are built twice, the second time with
 * -DSL_TEST_ENCODE_ON_WRITE: every transaction is then opened with
 * encode_on_write, and the single-threaded helpers write with a codec
 * context where they would give none (sl_test_write_ctx), so that every
 * check also runs on chunks staged encoded.
 */
#ifdef SL_TEST_ENCODE_ON_WRITE
static inline sl_txn *
sl_test_txn_open_eow(sl_array *a, const struct sl_txn_opts *o, struct sl_error *err)
{
    struct sl_txn_opts c = o != NULL ? *o : SL_TXN_OPTS_DEFAULT;
    c.encode_on_write = true;
    return sl_txn_open(a, &c, err);
}
#define sl_txn_open(...) sl_test_txn_open_eow(__VA_ARGS__)
#define SL_TEST_ENCODE_ON_WRITE_ON true
#else
#define SL_TEST_ENCODE_ON_WRITE_ON false
#endif

/* `ctx`, or (encode_on_write builds, one thread only) a context kept for
 * the whole test where `ctx` is NULL. */
static inline sl_codec_ctx *
sl_test_write_ctx(sl_codec_ctx *ctx)
{
#ifdef SL_TEST_ENCODE_ON_WRITE
    static sl_codec_ctx *kept;
    if (ctx == NULL && kept == NULL)
        kept = sl_codec_ctx_create(NULL, NULL);
    return ctx != NULL ? ctx : kept;
#else
    return ctx;
#endif
}

#endif /* SL_TEST_TESTKIT_H */
