/* SPDX-License-Identifier: MIT */
/*
 * Output array options of copy, downsample and pyramid, and the spec of a
 * new array derived from a source array and those options.
 */
#include <string.h>

#include "array_opts.h"
#include "runner.h"

int
array_opts_parse(const struct cmd *c, struct array_opts *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (strcmp(a, "--overwrite") == 0) {
        o->overwrite = true;
        return 1;
    }
    if (strcmp(a, "--overwrite-in-place") == 0) {
        o->overwrite_in_place = true;
        return 1;
    }
    bool takes = strcmp(a, "--format") == 0 || strcmp(a, "--chunks") == 0 ||
                 strcmp(a, "--shards") == 0 || strcmp(a, "--codec") == 0;
    if (!takes)
        return 0;
    if (*i + 1 >= argc)
        return cmd_usage_error(c, "%s needs a value", a);
    const char *v = argv[++*i];
    if (strcmp(a, "--format") == 0) {
        if (strcmp(v, "v2") == 0 || strcmp(v, "2") == 0)
            o->format = 2;
        else if (strcmp(v, "v3") == 0 || strcmp(v, "3") == 0)
            o->format = 3;
        else
            return cmd_usage_error(c, "--format: \"%s\" is neither v2 nor v3", v);
    } else if (strcmp(a, "--chunks") == 0) {
        if (!parse_u64_list(v, o->chunks, SL_MAX_RANK, &o->n_chunks))
            return cmd_usage_error(c, "--chunks: \"%s\" is not a list of positive integers", v);
    } else if (strcmp(a, "--shards") == 0) {
        if (!parse_u64_list(v, o->shards, SL_MAX_RANK, &o->n_shards))
            return cmd_usage_error(c, "--shards: \"%s\" is not a list of positive integers", v);
    } else {
        struct sl_error err = SL_ERROR_INIT;
        if (sl_codec_spec_parse(v, &o->codec, &err) != SL_OK)
            return cmd_usage_error(c, "--codec: %s", err.text);
        o->have_codec = true;
    }
    return 1;
}

int
array_opts_spec(const struct cmd *c, const struct array_opts *o, const sl_array *src,
                const uint64_t *shape, struct sl_array_spec *spec)
{
    uint32_t rank = sl_array_rank(src);
    *spec = SL_ARRAY_SPEC_DEFAULT;
    spec->zarr_format = o->format != 0 ? o->format : sl_array_zarr_format(src);
    spec->rank = rank;
    spec->dtype = sl_array_dtype(src);
    spec->fill_value = sl_array_fill_value(src);
    spec->attributes_json = sl_array_attributes(src);
    spec->overwrite = false; /* dest_begin replaced what was there (dest.c) */
    if (o->have_codec)
        spec->codec = o->codec;
    if (o->n_chunks != 0 && o->n_chunks != rank)
        return cmd_usage_error(c, "--chunks has %u values; the array has %u dimensions",
                               o->n_chunks, rank);
    if (o->n_shards != 0 && o->n_shards != rank)
        return cmd_usage_error(c, "--shards has %u values; the array has %u dimensions",
                               o->n_shards, rank);
    if (o->n_shards != 0 && spec->zarr_format == 2)
        return cmd_usage_error(c, "--shards needs --format v3 (Zarr v2 has no sharding)");
    const uint64_t *chunk = sl_array_chunk_shape(src);
    const uint64_t *shard = sl_array_shard_shape(src);
    bool keep_shards =
        o->n_shards == 0 && o->n_chunks == 0 && shard != NULL && spec->zarr_format == 3;
    for (uint32_t d = 0; d < rank; d++) {
        spec->shape[d] = shape[d];
        spec->chunk_shape[d] = o->n_chunks != 0 ? o->chunks[d] : chunk[d];
        spec->shard_shape[d] = o->n_shards != 0 ? o->shards[d] : keep_shards ? shard[d] : 0;
        spec->dimension_names[d] = sl_array_dimension_name(src, d);
    }
    return 0;
}
