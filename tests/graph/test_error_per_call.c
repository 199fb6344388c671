/* SPDX-License-Identifier: MIT */
/*
 * Error records are per call: a failure the program chose to tolerate does
 * not stay in the record of the next call, which says only what that call
 * did, with the code it returned; a call that succeeds leaves an empty
 * record.  Checked across modules (stores, arrays, the graph builder, the
 * op registry) with one record reused throughout, as programs do.
 */
#include <string.h>

#include <criterion/criterion.h>

#include <sluice.h>

TestSuite(graph_error_per_call, .timeout = 30.0);

/* The record agrees with `st`: same code, and a message exactly when it fails. */
static void
agrees(sl_status st, const struct sl_error *err, const char *what)
{
    cr_assert_eq(err->code, st, "%s: returned %s, the record says %s (%s)", what,
                 sl_status_name(st), sl_status_name(err->code), err->text);
    cr_assert_eq(err->text[0] != '\0', st != SL_OK, "%s: message \"%s\" for %s", what, err->text,
                 sl_status_name(st));
}

Test(graph_error_per_call, a_tolerated_failure_does_not_stay_in_the_next_calls_record)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_create_memory(NULL, &err);
    cr_assert_not_null(s, "%s", err.text);
    agrees(SL_OK, &err, "create a memory store");

    /* 1. An absent array: ENOTFOUND, tolerated. */
    sl_array *missing = sl_array_open(s, "nothing", NULL, &err);
    cr_assert_null(missing);
    agrees(SL_ENOTFOUND, &err, "open an absent array");

    /* 2. A successful call empties the record. */
    struct sl_array_spec spec = SL_ARRAY_SPEC_DEFAULT;
    spec.rank = 1;
    spec.shape[0] = 10;
    spec.chunk_shape[0] = 4;
    sl_array *a = sl_array_create(s, "a", &spec, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    agrees(SL_OK, &err, "create an array after a failed open");

    /* 3. The next failure is reported as itself, not as the earlier one. */
    sl_status st = sl_array_open(s, "nothing", NULL, &err) == NULL ? err.code : SL_OK;
    agrees(st, &err, "open an absent array again");
    uint8_t buf[16];
    struct sl_region r = {.rank = 1, .start = {8}, .stop = {12}};
    st = sl_array_read_region(a, &r, buf, sizeof buf, NULL, NULL, &err);
    cr_assert_eq(st, SL_EBOUNDS);
    agrees(st, &err, "read beyond the array after ENOTFOUND");
    cr_assert_null(strstr(err.text, "nothing"), "the earlier failure leaked in: %s", err.text);

    /* 4. Across modules: the graph builder and the op registry, same record. */
    const struct sl_op_desc *d = NULL;
    st = sl_op_lookup("no_such_op", &d, &err);
    cr_assert_eq(st, SL_ENOTFOUND);
    agrees(st, &err, "look up an unknown op");
    st = sl_op_lookup("downsample", &d, &err);
    agrees(st, &err, "look up a known op after an unknown one");
    cr_assert_eq(st, SL_OK);
    sl_graph *g = sl_graph_create(NULL, &err);
    cr_assert_not_null(g);
    uint32_t get;
    st = sl_graph_add_get(g, "x", a, &get, &err);
    agrees(st, &err, "add a get");
    st = sl_graph_add_get(g, "x", a, &get, &err);
    cr_assert_eq(st, SL_EEXIST);
    agrees(st, &err, "add a second node named x");
    st = sl_graph_add_get(g, "y", a, &get, &err);
    agrees(st, &err, "add a get after a refused node");
    cr_assert_eq(st, SL_OK);

    /* 5. A NULL record is always allowed. */
    cr_assert_eq(sl_op_lookup("no_such_op", &d, NULL), SL_ENOTFOUND);

    sl_graph_unref(g);
    sl_array_unref(a);
    sl_store_unref(s);
}
