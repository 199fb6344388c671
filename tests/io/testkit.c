/* SPDX-License-Identifier: MIT */
/* The helpers of testkit.h. */
#include "testkit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct pool_run {
    size_t n;
    sl_parallel_body *body;
    void *arg;
    _Atomic size_t next;
};

struct pool_worker {
    struct pool_run *run;
    unsigned id;
};

static void *
pool_thread(void *arg)
{
    struct pool_worker *w = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&w->run->next, 1);
        if (i >= w->run->n)
            return NULL;
        w->run->body(w->run->arg, i, w->id);
    }
}

static sl_status
pool_run(void *ctx, size_t n, sl_parallel_body *body, void *arg)
{
    struct sl_test_pool *p = ctx;
    struct pool_run run = {n, body, arg, 0};
    pthread_t t[16];
    struct pool_worker w[16];
    unsigned nt = p->n_threads < 16 ? p->n_threads : 16;
    for (unsigned i = 0; i < nt; i++) {
        w[i] = (struct pool_worker){&run, i};
        pthread_create(&t[i], NULL, pool_thread, &w[i]);
    }
    for (unsigned i = 0; i < nt; i++)
        pthread_join(t[i], NULL);
    return SL_OK;
}

void
sl_test_pool_init(struct sl_test_pool *p, unsigned n_threads)
{
    p->n_threads = n_threads;
    p->par = (struct sl_parallel){.ctx = p, .n_workers = n_threads, .run = pool_run};
}

static uint32_t
mix(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

void
sl_test_fill_data(void *buf, size_t n, sl_dtype dt, unsigned seed, bool with_nan)
{
    uint8_t *p = buf;
    size_t es = sl_dtype_size(dt);
    for (size_t i = 0; i < n; i++) {
        uint32_t r = mix((uint32_t)i * 2654435761u ^ seed);
        int64_t v = (int64_t)(i / 3) + (int64_t)(r % 5) - 2;
        uint8_t *e = p + i * es;
        switch (dt) {
        case SL_DTYPE_BOOL:
            e[0] = (uint8_t)(r & 1);
            break;
        case SL_DTYPE_F16: {
            uint16_t h = (uint16_t)(0x3c00 + (v & 0x3ff));
            if (with_nan && i % 97 == 5)
                h = 0x7e01;
            memcpy(e, &h, 2);
            break;
        }
        case SL_DTYPE_F32:
        case SL_DTYPE_C64: {
            for (size_t part = 0; part < es / 4; part++) {
                float f = (float)v * 0.25f + (float)part;
                if (with_nan && i % 97 == 5) {
                    uint32_t nan = 0x7fc00123u; /* a NaN with a payload */
                    memcpy(&f, &nan, 4);
                }
                memcpy(e + 4 * part, &f, 4);
            }
            break;
        }
        case SL_DTYPE_F64:
        case SL_DTYPE_C128: {
            for (size_t part = 0; part < es / 8; part++) {
                double d = (double)v * 0.125 - (double)part;
                if (with_nan && i % 97 == 5) {
                    uint64_t nan = 0xfff8000000000001ull;
                    memcpy(&d, &nan, 8);
                }
                memcpy(e + 8 * part, &d, 8);
            }
            break;
        }
        default: {
            uint64_t u = (uint64_t)v ^ ((uint64_t)r << 13);
            memcpy(e, &u, es); /* the low bytes on little-endian hosts */
            break;
        }
        }
    }
}

void
sl_test_box_extract(void *dst, const void *src, uint32_t rank, const uint64_t *dims,
                    const uint64_t *start, const uint64_t *shape, size_t es)
{
    uint64_t n = sl_test_count(rank, shape);
    uint8_t *d = dst;
    const uint8_t *s = src;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t rem = i, off = 0, stride = 1;
        uint64_t idx[SL_MAX_RANK];
        for (uint32_t k = rank; k-- > 0;) {
            idx[k] = rem % shape[k] + start[k];
            rem /= shape[k];
        }
        for (uint32_t k = rank; k-- > 0;) {
            off += idx[k] * stride;
            stride *= dims[k];
        }
        memcpy(d + i * es, s + off * es, es);
    }
}

uint64_t
sl_test_count(uint32_t rank, const uint64_t *shape)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < rank; d++)
        n *= shape[d];
    return n;
}

struct sl_test_chunks_read
sl_test_read_chunks(sl_array *a, uint64_t side, uint64_t chunk,
                    uint16_t (*value_at)(uint64_t i, uint64_t j), sl_status *status,
                    struct sl_error *errors, struct sl_batch_stats *stats)
{
    return sl_test_read_chunks_on(a, side, chunk, value_at, status, errors, stats, 2);
}

struct sl_test_chunks_read
sl_test_read_chunks_on(sl_array *a, uint64_t side, uint64_t chunk,
                       uint16_t (*value_at)(uint64_t i, uint64_t j), sl_status *status,
                       struct sl_error *errors, struct sl_batch_stats *stats, unsigned n_workers)
{
    struct sl_test_chunks_read out = {.ret = SL_ENOMEM, .first_failed = SL_OK};
    size_t per_side = (size_t)(side / chunk), n = per_side * per_side, elems = chunk * chunk;
    uint16_t *data = malloc(n * elems * sizeof(uint16_t));
    void **bufs = malloc(n * sizeof(*bufs));
    size_t *sizes = malloc(n * sizeof(*sizes));
    struct sl_region *r = malloc(n * sizeof(*r));
    if (data != NULL && bufs != NULL && sizes != NULL && r != NULL) {
        for (size_t k = 0; k < n; k++) {
            uint64_t i = (uint64_t)(k / per_side) * chunk, j = (uint64_t)(k % per_side) * chunk;
            r[k] = (struct sl_region){2, {i, j}, {i + chunk, j + chunk}};
            bufs[k] = data + k * elems;
            sizes[k] = elems * sizeof(uint16_t);
        }
        struct sl_test_pool pool;
        sl_test_pool_init(&pool, n_workers);
        struct sl_batch_opts bo = SL_BATCH_OPTS_DEFAULT;
        bo.par = &pool.par;
        bo.stats = stats;
        struct sl_error err = SL_ERROR_INIT;
        out.ret = sl_array_read_batch(a, n, r, bufs, sizes, &bo, status, errors, &err);
        for (size_t k = 0; k < n; k++) {
            if (status[k] != SL_OK) {
                if (out.first_failed == SL_OK)
                    out.first_failed = status[k];
                continue;
            }
            const uint16_t *got = data + k * elems;
            for (uint64_t i = 0; i < chunk; i++)
                for (uint64_t j = 0; j < chunk; j++)
                    if (got[i * chunk + j] != value_at(r[k].start[0] + i, r[k].start[1] + j)) {
                        out.wrong++;
                        i = j = chunk;
                    }
        }
    }
    free(r);
    free(sizes);
    free(bufs);
    free(data);
    return out;
}
