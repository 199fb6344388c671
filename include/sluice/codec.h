/* SPDX-License-Identifier: MIT */
/*
 * Codecs: per-thread codec contexts (reused zstd and zlib state and scratch
 * buffers, so decoding a chunk allocates nothing once warm) and the
 * compressor choice used when creating arrays, with the parser behind the
 * launcher's `--codec` option.
 */
#ifndef SL_CODEC_H
#define SL_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <sluice/alloc.h>
#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * One thread's codec state: a zstd compression and decompression context,
 * zlib streams and scratch buffers, all reused from call to call.  Pass one
 * per thread to the chunk functions of array_io.h (a runtime keeps one per
 * worker); passing NULL there makes a temporary one for the call.
 */
typedef struct sl_codec_ctx sl_codec_ctx;

/**
 * Make a context.  @param alloc copied; NULL for the default allocator.
 * @return the context, or NULL with SL_ENOMEM in `err`.
 * Thread-safety: a context is used by one thread at a time.
 */
SL_API sl_codec_ctx *sl_codec_ctx_create(const struct sl_allocator *alloc, struct sl_error *err);

/**
 * Free a context and its buffers.  NULL is a no-op.
 * Thread-safety: the thread using `ctx`, once it is done with it.
 */
SL_API void sl_codec_ctx_destroy(sl_codec_ctx *ctx);

/* Compressors for new arrays. */
typedef enum sl_compressor {
    SL_COMPRESSOR_NONE,  /* store raw bytes */
    SL_COMPRESSOR_ZSTD,  /* zstd (v3 "zstd", v2 "zstd") */
    SL_COMPRESSOR_GZIP,  /* gzip (v3 "gzip", v2 "gzip"); needs zlib in the build */
    SL_COMPRESSOR_BLOSC, /* blosc (v3 and v2 "blosc"); needs libblosc in the build */
} sl_compressor;

/* Blosc's shuffle filter. */
typedef enum sl_blosc_shuffle {
    SL_BLOSC_NOSHUFFLE,  /* none */
    SL_BLOSC_SHUFFLE,    /* bytes of each element grouped by significance */
    SL_BLOSC_BITSHUFFLE, /* bits grouped likewise */
} sl_blosc_shuffle;

/* A compressor and its settings. */
struct sl_codec_spec {
    sl_compressor compressor;       /* which one */
    int level;                      /* zstd: -131072..22 (0: zstd's default, 3);
                                       gzip: 0..9; blosc: clevel 0..9 */
    bool checksum;                  /* zstd: store a content checksum (v3 only) */
    bool crc32c;                    /* end the chain with a crc32c codec, so each
                                       chunk carries its checksum (v3 only) */
    char blosc_cname[16];           /* blosc: blosclz, lz4, lz4hc, snappy, zlib, zstd */
    sl_blosc_shuffle blosc_shuffle; /* blosc: shuffle filter */
};

/* zstd level 1: fast, and what the benchmarks measure. */
/**
 * SL_CODEC_SPEC_DEFAULT's value (the defaults) as a function, for C and C++ alike: every
 * field not named below is zero.
 * Thread-safety: any thread.
 */
static inline struct sl_codec_spec
sl_codec_spec_default(void)
{
    struct sl_codec_spec o;
    memset(&o, 0, sizeof o);
    o.compressor = SL_COMPRESSOR_ZSTD;
    o.level = 1;
    memcpy(o.blosc_cname, "lz4", sizeof "lz4");
    o.blosc_shuffle = SL_BLOSC_SHUFFLE;
    return o;
}
#define SL_CODEC_SPEC_DEFAULT (sl_codec_spec_default())

/**
 * Parse a codec chain as the launcher's `--codec` option spells it: a
 * compressor, `none`, `zstd:LEVEL`, `gzip:LEVEL` or
 * `blosc:CNAME:CLEVEL[:shuffle|noshuffle|bitshuffle]` (default shuffle),
 * optionally followed by `,crc32c` (a checksum after it, v3 arrays only);
 * `crc32c` alone is no compressor and the checksum.
 * @return SL_OK; SL_EPARSE naming the text and what was expected;
 * SL_EUNSUPPORTED when the compressor is not in this build.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_codec_spec_parse(const char *text, struct sl_codec_spec *out,
                                                  struct sl_error *err);

/**
 * Write a spec back in the syntax sl_codec_spec_parse reads.
 * @return the length the full text needs, as snprintf does.
 * Thread-safety: any thread.
 */
SL_API size_t sl_codec_spec_format(const struct sl_codec_spec *spec, char *buf, size_t size);

/**
 * True when this build can encode and decode the Zarr codec `name`
 * ("bytes", "transpose", "crc32c", "zstd", "gzip", "blosc",
 * "sharding_indexed", or the v2 compressor ids "zlib", "gzip", "zstd",
 * "blosc").
 * Thread-safety: any thread.
 */
SL_API bool sl_codec_available(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* SL_CODEC_H */
