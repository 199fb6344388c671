/* SPDX-License-Identifier: MIT */
/*
 * Options that shape a new output array (--format, --chunks, --shards,
 * --codec, --overwrite), shared by copy, downsample and pyramid, and the
 * spec they give starting from a source array.
 */
#ifndef SL_LAUNCHER_ARRAY_OPTS_H
#define SL_LAUNCHER_ARRAY_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include <sluice.h>

#include "commands.h"

/* Output array options. */
struct array_opts {
    int format;                   /* --format v2|v3; 0: the source's */
    uint32_t n_chunks;            /* entries in chunks; 0: the source's */
    uint64_t chunks[SL_MAX_RANK]; /* --chunks C (inner chunks with --shards) */
    uint32_t n_shards;            /* entries in shards; 0: none (or the source's) */
    uint64_t shards[SL_MAX_RANK]; /* --shards S */
    bool have_codec;              /* --codec given */
    struct sl_codec_spec codec;   /* --codec SPEC */
    bool overwrite;               /* --overwrite */
    bool overwrite_in_place;      /* --overwrite-in-place */
};

/* Help lines of the overwrite options, for commands' usage texts. */
#define DEST_OPTS_HELP                                                                           \
    "  --overwrite          replace an existing output array or group whole: the new one is\n"   \
    "                       written beside it and swapped in when the run succeeds (space for\n" \
    "                       both meanwhile; a failed or killed run leaves the old one)\n"        \
    "  --overwrite-in-place delete an existing output array or group first, then write (for\n"   \
    "                       data too large to hold twice; a failed run leaves neither)\n"

#define ARRAY_OPTS_HELP                                                                         \
    "  --format v2|v3       Zarr format of the output (default: the input's)\n"                 \
    "  --chunks C           chunk shape, comma separated, e.g. 32,256,256; with --shards\n"     \
    "                       the inner chunk shape (default: the input's)\n"                     \
    "  --shards S           shard shape (v3), a multiple of the chunk shape (default: the\n"    \
    "                       input's sharding when both are v3, else none)\n"                    \
    "  --codec SPEC         zstd:LEVEL | gzip:LEVEL | blosc:CNAME:CLEVEL[:shuffle|noshuffle|\n" \
    "                       bitshuffle] | none (default: zstd:1), then ,crc32c for a\n"         \
    "                       checksum in each chunk (v3), e.g. zstd:3,crc32c\n" DEST_OPTS_HELP

/*
 * Consume the option at argv[*i] (and its value).
 * @return 1 consumed, 0 not one of these, 2 after a usage error.
 */
int array_opts_parse(const struct cmd *c, struct array_opts *o, int argc, char **argv, int *i);

/*
 * The spec of an output array of `shape` and `dtype` like `src` (fill
 * value, dimension names, attributes, chunking and format unless `o` says
 * otherwise).  Fails with a message when --chunks or --shards has the wrong
 * rank.  @return 0, or 2 after a usage error.
 */
int array_opts_spec(const struct cmd *c, const struct array_opts *o, const sl_array *src,
                    const uint64_t *shape, struct sl_array_spec *spec);

#endif /* SL_LAUNCHER_ARRAY_OPTS_H */
