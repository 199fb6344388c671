/* SPDX-License-Identifier: MIT */
/* The fixture of graph_fault_fixture.h: stores over one directory, a pool,
 * whole-array reads and writes. */
#include "graph_fault_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plain_test.h"
#include "testutil.h"

void
sl_test_fault_fs_init(struct sl_test_fault_fs *f, const char *root, unsigned n_workers,
                      bool durable)
{
    memset(f, 0, sizeof(*f));
    snprintf(f->root, sizeof(f->root), "%s", root);
    sl_fault_io_init(&f->fio);
    struct sl_pool_opts po = SL_POOL_OPTS_DEFAULT;
    po.n_workers = n_workers;
    po.pin = SL_PIN_NONE;
    f->pool = sl_pool_create(&po, NULL);
    cr_assert_not_null(f->pool);
    struct sl_error err = SL_ERROR_INIT;
    f->plain = sl_store_open_fs(f->root, NULL, &err);
    cr_assert_not_null(f->plain, "%s", err.text);
    struct sl_fs_store_opts fo = SL_FS_STORE_OPTS_DEFAULT;
    fo.durable = durable;
    fo.io = &f->fio.table;
    f->fault = sl_store_open_fs(f->root, &fo, &err);
    cr_assert_not_null(f->fault, "%s", err.text);
}

void
sl_test_fault_fs_fini(struct sl_test_fault_fs *f)
{
    sl_store_unref(f->fault);
    sl_store_unref(f->plain);
    sl_pool_destroy(f->pool);
    sl_fault_io_fini(&f->fio);
    sl_test_rmtree(f->root);
}

sl_array *
sl_test_array_u16(sl_store *s, const char *path, const uint64_t *shape, const uint64_t *chunk,
                  const uint64_t *shard)
{
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U16;
    for (int d = 0; d < 2; d++) {
        sp.shape[d] = shape[d];
        sp.chunk_shape[d] = chunk[d];
        sp.shard_shape[d] = shard != NULL ? shard[d] : 0;
    }
    sp.checksum = true;
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(s, path, &sp, NULL, &err);
    cr_assert_not_null(a, "%s: %s", path, err.text);
    return a;
}

void
sl_test_write_whole_u16(sl_array *a, const uint16_t *img)
{
    const uint64_t *shape = sl_array_shape(a);
    struct sl_region all = sl_region_whole(2, shape);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_write_region(a, &all, img, shape[0] * shape[1] * 2, NULL, NULL, &err),
                 SL_OK, "%s", err.text);
}

uint16_t *
sl_test_read_whole_u16(sl_array *a)
{
    const uint64_t *shape = sl_array_shape(a);
    size_t bytes = (size_t)(shape[0] * shape[1] * 2);
    uint16_t *img = malloc(bytes);
    cr_assert_not_null(img);
    struct sl_region all = sl_region_whole(2, shape);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_read_region(a, &all, img, bytes, NULL, NULL, &err), SL_OK, "%s",
                 err.text);
    return img;
}
