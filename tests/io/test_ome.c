/* SPDX-License-Identifier: MIT */
/*
 * OME-Zarr multiscales (sl_ome_multiscale_read): 0.4 at the top of v2
 * attributes and 0.5 inside "ome" of v3 ones are read whole (axes, levels,
 * scales, translations, defaults where absent); every malformed field is
 * refused naming the attributes' key and its JSON pointer.
 */
#include <criterion/criterion.h>
#include <string.h>

#include <sluice.h>

TestSuite(io_ome, .timeout = 10.0);

static sl_store *
group_with(int format, const char *attrs)
{
    sl_store *st = sl_store_create_memory(NULL, NULL);
    cr_assert_not_null(st);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_group_create(st, "img", format, attrs, &err), SL_OK, "%s", err.text);
    return st;
}

#define AXES3                                                                               \
    "[{\"name\": \"z\", \"type\": \"space\", \"unit\": \"micrometer\"}, {\"name\": \"y\", " \
    "\"type\": \"space\"}, {\"name\": \"x\", \"type\": \"space\"}]"
#define LEVEL(p, s, t)                                                                          \
    "{\"path\": \"" p "\", \"coordinateTransformations\": [{\"type\": \"scale\", \"scale\": " s \
    "}, {\"type\": \"translation\", \"translation\": " t "}]}"

Test(io_ome, version_0_4_in_v2_attributes)
{
    sl_store *st = group_with(
        2,
        "{\"multiscales\": [{\"version\": \"0.4\", \"name\": \"img\", \"type\": \"mean\", "
        "\"axes\": " AXES3 ", \"datasets\": [" LEVEL("0", "[1, 0.5, 0.5]", "[0, 0, 0]") ", " LEVEL(
            "1", "[2, 1, 1]", "[0.5, 0.25, 0.25]") "]}], \"other\": 1}");
    struct sl_ome_multiscale m;
    uint32_t n = 99;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_ome_multiscale_read(st, "img", 0, &m, &n, &err), SL_OK, "%s", err.text);
    cr_expect_eq(n, 1);
    cr_expect_str_eq(m.version, "0.4");
    cr_expect_str_eq(m.name, "img");
    cr_expect_str_eq(m.type, "mean");
    cr_assert_eq(m.rank, 3);
    cr_expect_str_eq(m.axes[0].name, "z");
    cr_expect_str_eq(m.axes[0].unit, "micrometer");
    cr_expect_str_eq(m.axes[2].type, "space");
    cr_expect_str_eq(m.axes[2].unit, "");
    cr_assert_eq(m.n_levels, 2);
    cr_expect_str_eq(m.levels[1].path, "1");
    cr_expect_eq(m.levels[0].scale[1], 0.5);
    cr_expect_eq(m.levels[1].scale[0], 2.0);
    cr_expect_eq(m.levels[1].translation[2], 0.25);
    sl_store_unref(st);
}

Test(io_ome, version_0_5_inside_ome_of_v3_attributes_with_defaults)
{
    sl_store *st =
        group_with(3, "{\"ome\": {\"version\": \"0.5\", \"multiscales\": [{\"axes\": "
                      "[\"y\", \"x\"], \"datasets\": [{\"path\": \"s0\"}]}, {\"axes\": " AXES3
                      ", \"datasets\": [" LEVEL("a/b", "[1, 1, 1]", "[0, 0, 0]") "]}]}}");
    struct sl_ome_multiscale m;
    uint32_t n = 0;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_ome_multiscale_read(st, "img", 0, &m, &n, &err), SL_OK, "%s", err.text);
    cr_expect_eq(n, 2);
    cr_expect_str_eq(m.version, "0.5");
    cr_expect_str_eq(m.name, "");
    cr_assert_eq(m.rank, 2);
    cr_expect_str_eq(m.axes[1].name, "x");
    cr_expect_eq(m.levels[0].scale[1], 1.0);
    cr_expect_eq(m.levels[0].translation[0], 0.0);
    cr_assert_eq(sl_ome_multiscale_read(st, "img", 1, &m, NULL, &err), SL_OK, "%s", err.text);
    cr_expect_str_eq(m.levels[0].path, "a/b");
    cr_expect_eq(sl_ome_multiscale_read(st, "img", 2, &m, &n, &err), SL_ENOTFOUND);
    cr_expect(strstr(err.text, "2 multiscale images; no image 2") != NULL, "%s", err.text);
    sl_store_unref(st);
}

Test(io_ome, a_group_without_multiscales_an_array_and_nothing_are_told_apart)
{
    sl_store *st = group_with(3, "{\"title\": \"x\"}");
    struct sl_ome_multiscale m;
    uint32_t n = 7;
    struct sl_error err = SL_ERROR_INIT;
    cr_expect_eq(sl_ome_multiscale_read(st, "img", 0, &m, &n, &err), SL_ENOTFOUND);
    cr_expect_eq(n, 0);
    err = SL_ERROR_INIT;
    cr_expect_eq(sl_ome_multiscale_read(st, "nothing", 0, &m, &n, &err), SL_ENOTFOUND);
    err = SL_ERROR_INIT;
    cr_expect_eq(sl_ome_multiscale_read(st, "img", 0, NULL, &n, &err), SL_EINVAL);
    sl_store_unref(st);
}

/* `attrs` (v3) refused with `code`, naming zarr.json and pointer `at`. */
static void
expect_refused(const char *attrs, sl_status code, const char *at)
{
    sl_store *st = group_with(3, attrs);
    struct sl_ome_multiscale m;
    struct sl_error err = SL_ERROR_INIT;
    cr_expect_eq(sl_ome_multiscale_read(st, "img", 0, &m, NULL, &err), code, "%s: %s", attrs,
                 err.text);
    cr_expect_str_eq(err.path, at, "%s: %s", attrs, err.text);
    cr_expect_str_eq(err.source, "img/zarr.json");
    sl_store_unref(st);
}

Test(io_ome, malformed_multiscales_are_refused_naming_the_field)
{
    expect_refused("{\"multiscales\": 3}", SL_EPARSE, "/multiscales");
    expect_refused("{\"multiscales\": [5]}", SL_EPARSE, "/multiscales/0");
    expect_refused("{\"multiscales\": [{\"datasets\": [{\"path\": \"0\"}]}]}", SL_EPARSE,
                   "/multiscales/0/axes");
    expect_refused("{\"multiscales\": [{\"axes\": [{\"name\": 3}], \"datasets\": []}]}", SL_EPARSE,
                   "/multiscales/0/axes/0/name");
    expect_refused("{\"multiscales\": [{\"axes\": [\"x\"], \"datasets\": []}]}", SL_EPARSE,
                   "/multiscales/0/datasets");
    expect_refused("{\"ome\": {\"multiscales\": [{\"axes\": [\"x\"], \"datasets\": [{}]}]}}",
                   SL_EPARSE, "/ome/multiscales/0/datasets/0/path");
    expect_refused(
        "{\"multiscales\": [{\"axes\": [\"x\"], \"datasets\": [{\"path\": \"../up\"}]}]}",
        SL_EPARSE, "/multiscales/0/datasets/0/path");
    expect_refused("{\"multiscales\": [{\"axes\": [\"x\", \"y\"], \"datasets\": [{\"path\": \"0\", "
                   "\"coordinateTransformations\": [{\"type\": \"scale\", \"scale\": [1]}]}]}]}",
                   SL_EPARSE, "/multiscales/0/datasets/0/coordinateTransformations/0/scale");
    expect_refused("{\"multiscales\": [{\"axes\": [\"x\"], \"datasets\": [{\"path\": \"0\", "
                   "\"coordinateTransformations\": [{\"scale\": [1]}]}]}]}",
                   SL_EPARSE, "/multiscales/0/datasets/0/coordinateTransformations/0");
    expect_refused("{\"multiscales\": [{\"axes\": [\"x\"], \"datasets\": [{\"path\": \"0\", "
                   "\"coordinateTransformations\": [{\"type\": \"translation\", "
                   "\"translation\": [\"a\"]}]}]}]}",
                   SL_EPARSE, "/multiscales/0/datasets/0/coordinateTransformations/0/translation");
    char many[4096] = "{\"multiscales\": [{\"axes\": [\"x\"], \"datasets\": [";
    for (int k = 0; k < SL_OME_MAX_LEVELS + 1; k++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%s{\"path\": \"%d\"}",
                 k ? ", " : "", k);
    strcat(many, "]}]}");
    expect_refused(many, SL_EUNSUPPORTED, "/multiscales/0/datasets");
}
