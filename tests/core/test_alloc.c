/* SPDX-License-Identifier: MIT */
/* Tests of allocators, the serial parallel-for and the version. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include <sluice.h>

#include "core_internal.h"
#include "testutil.h"

TestSuite(core_alloc, .timeout = 5.0);

Test(core_alloc, default_allocator_honours_alignment)
{
    size_t aligns[] = {0, 1, 8, 64, 128, 4096};
    for (size_t i = 0; i < sizeof(aligns) / sizeof(aligns[0]); i++) {
        void *p = sl_alloc(NULL, 100, aligns[i]);
        cr_assert_not_null(p);
        if (aligns[i] > 1)
            cr_assert_eq((uintptr_t)p % aligns[i], 0, "align %zu", aligns[i]);
        memset(p, 1, 100);
        sl_free(NULL, p, 100);
    }
    cr_assert_null(sl_alloc(NULL, 10, 3), "alignment must be a power of two");
    cr_assert_null(sl_alloc(NULL, 0, 8));
    sl_free(NULL, NULL, 0);
}

/* Large blocks start on a huge-page boundary (so the kernel can back them
 * with 2 MiB pages) whatever alignment was asked, and are whole. */
Test(core_alloc, large_blocks_are_huge_page_aligned)
{
    size_t sizes[] = {(size_t)16 << 20, ((size_t)26 << 20) + 123, ((size_t)32 << 20) - 1};
    size_t aligns[] = {0, 64, 4096, (size_t)2 << 20, (size_t)8 << 20};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        for (size_t j = 0; j < sizeof(aligns) / sizeof(aligns[0]); j++) {
            uint8_t *p = sl_alloc(NULL, sizes[i], aligns[j]);
            cr_assert_not_null(p, "size %zu align %zu", sizes[i], aligns[j]);
            size_t want = aligns[j] > ((size_t)2 << 20) ? aligns[j] : (size_t)2 << 20;
            cr_assert_eq((uintptr_t)p % want, 0, "size %zu align %zu", sizes[i], aligns[j]);
            p[0] = 1;
            p[sizes[i] - 1] = 2; /* the last byte is ours */
            sl_free(NULL, p, sizes[i]);
        }
    /* Just below the threshold: the C library's own alignment. */
    void *small = sl_alloc(NULL, ((size_t)16 << 20) - 1, 0);
    cr_assert_not_null(small);
    sl_free(NULL, small, ((size_t)16 << 20) - 1);
}

/* Whether the page holding `p` is mapped. */
static bool
is_mapped(const void *p)
{
    unsigned char vec;
    return mincore((void *)((uintptr_t)p & ~(uintptr_t)4095), 4096, &vec) == 0;
}

/* Large blocks are mappings of their own, not the C library's heap (where
 * small blocks would reuse them): a few freed ones are kept for the next
 * block of about their size, the rest are unmapped at once. */
Test(core_alloc, freed_large_blocks_are_reused_or_unmapped)
{
    size_t n = (size_t)20 << 20;
    void *p = sl_alloc(NULL, n, 0);
    cr_assert_not_null(p);
    sl_free(NULL, p, n);
    void *q = sl_alloc(NULL, n - 4096, 0);
    cr_assert_eq(q, p, "a kept mapping is given out again");
    sl_free(NULL, q, n - 4096);
    void *big = sl_alloc(NULL, 4 * n, 0);
    cr_assert_neq(big, p, "not a block of a quarter the size");
    sl_free(NULL, big, 4 * n);

    /* Twelve freed at once: at most 128 MiB stay mapped, the rest go. */
    enum { COUNT = 12 };
    void *v[COUNT];
    for (int i = 0; i < COUNT; i++) {
        v[i] = sl_alloc(NULL, n, 0);
        cr_assert_not_null(v[i]);
        memset(v[i], i, 4096);
    }
    for (int i = 0; i < COUNT; i++)
        sl_free(NULL, v[i], n);
    int mapped = 0;
    for (int i = 0; i < COUNT; i++)
        mapped += is_mapped(v[i]);
    cr_assert_leq(mapped, 4, "%d of %d freed 20 MiB blocks still mapped", mapped, COUNT);
}

/* Buffers filled whole at once (a fetched body) are mappings of their own
 * from one huge page on, reused when freed; below, and for a caller's own
 * allocator, nothing changes. */
Test(core_alloc, filled_buffers_are_huge_page_mappings_from_2_mib)
{
    struct sl_allocator f = sl__allocator_filled(NULL);
    size_t n = ((size_t)7 << 20) + 12345; /* a 7.6 MB chunk's body */
    uint8_t *p = sl_alloc(&f, n, 4096);
    cr_assert_not_null(p);
    cr_assert_eq((uintptr_t)p % ((size_t)2 << 20), 0, "on a huge-page boundary");
    memset(p, 7, n);
    sl_free(&f, p, n);
    uint8_t *q = sl_alloc(&f, n - 100000, 64);
    cr_assert_eq(q, p, "a freed mapping is given out again");
    sl_free(&f, q, n - 100000);

    struct sl_allocator dflt = sl_allocator_default();
    struct sl_allocator g = sl__allocator_filled(&dflt);
    uint8_t *small = sl_alloc(&g, ((size_t)2 << 20) - 1, 64);
    cr_assert_not_null(small);
    memset(small, 1, ((size_t)2 << 20) - 1);
    sl_free(&g, small, ((size_t)2 << 20) - 1);

    struct sl_test_alloc state = {.fail_at = 0};
    struct sl_allocator mine = sl_test_alloc_make(&state);
    struct sl_allocator h = sl__allocator_filled(&mine);
    cr_assert(h.alloc == mine.alloc && h.free == mine.free && h.ctx == mine.ctx,
              "a caller's allocator is kept");
    void *r = sl_alloc(&h, n, 0);
    cr_assert_eq(state.n_live, 1, "the caller's allocator gave it");
    sl_free(&h, r, n);
    cr_assert_eq(state.n_live, 0);
}

Test(core_alloc, zeroed_checks_overflow)
{
    cr_assert_null(sl_alloc_zeroed(NULL, SIZE_MAX / 2, 4, 0));
    uint32_t *p = sl_alloc_zeroed(NULL, 16, sizeof(uint32_t), 0);
    cr_assert_not_null(p);
    for (int i = 0; i < 16; i++)
        cr_assert_eq(p[i], 0);
    sl_free(NULL, p, 64);
}

Test(core_alloc, custom_allocator_is_used_and_can_fail)
{
    struct sl_test_alloc state = {.fail_at = 2};
    struct sl_allocator a = sl_test_alloc_make(&state);
    char *s = sl_strdup(&a, "hello");
    cr_assert_str_eq(s, "hello");
    cr_assert_eq(state.n_live, 1);
    cr_assert_null(sl_alloc(&a, 8, 0), "second allocation fails");
    sl_free(&a, s, 6);
    cr_assert_eq(state.n_live, 0);
    cr_assert_eq(state.live_bytes, 0);
}

static void
count_body(void *arg, size_t i, unsigned worker)
{
    unsigned *seen = arg;
    cr_assert_eq(worker, 0);
    seen[i]++;
}

Test(core_alloc, serial_parallel_for_runs_each_index_once)
{
    unsigned seen[10] = {0};
    cr_assert_eq(sl_parallel_run(NULL, 10, count_body, seen), SL_OK);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(seen[i], 1);
    cr_assert_eq(sl_parallel_workers(NULL), 1);
    cr_assert_eq(sl_parallel_run(NULL, 1, NULL, NULL), SL_EINVAL);
}

Test(core_alloc, version_matches_headers_and_build)
{
    cr_assert_str_eq(sl_version(), SL_VERSION_STRING);
    cr_assert_str_eq(sl_version(), SL_TEST_PROJECT_VERSION, "version.h disagrees with meson.build");
}
