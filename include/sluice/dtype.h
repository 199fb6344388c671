/* SPDX-License-Identifier: MIT */
/*
 * Element types.  One X-macro list yields the enum, the sizes, the Zarr v3
 * names and the Zarr v2 typestr kinds; kernels instantiate their bodies from
 * the same list, so adding a type is one line and nothing is copied per type.
 */
#ifndef SL_DTYPE_H
#define SL_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Every type sluice stores.  Columns: enum suffix, short suffix, C storage
 * type, size in bytes, Zarr v3 name, Zarr v2 (numpy) kind, class.  bool is
 * stored as one byte, 0 or 1; float16 is storage only (its C type holds the
 * IEEE binary16 bits); complex types hold (real, imaginary) pairs.
 */
/* clang-format off */
#define SL_DTYPE_MAP(X)                                                         \
    X(BOOL, b8,   uint8_t,          1,  "bool",       'b', SL_DTYPE_CLASS_BOOL)    \
    X(I8,   i8,   int8_t,           1,  "int8",       'i', SL_DTYPE_CLASS_SINT)    \
    X(I16,  i16,  int16_t,          2,  "int16",      'i', SL_DTYPE_CLASS_SINT)    \
    X(I32,  i32,  int32_t,          4,  "int32",      'i', SL_DTYPE_CLASS_SINT)    \
    X(I64,  i64,  int64_t,          8,  "int64",      'i', SL_DTYPE_CLASS_SINT)    \
    X(U8,   u8,   uint8_t,          1,  "uint8",      'u', SL_DTYPE_CLASS_UINT)    \
    X(U16,  u16,  uint16_t,         2,  "uint16",     'u', SL_DTYPE_CLASS_UINT)    \
    X(U32,  u32,  uint32_t,         4,  "uint32",     'u', SL_DTYPE_CLASS_UINT)    \
    X(U64,  u64,  uint64_t,         8,  "uint64",     'u', SL_DTYPE_CLASS_UINT)    \
    X(F16,  f16,  uint16_t,         2,  "float16",    'f', SL_DTYPE_CLASS_FLOAT16) \
    X(F32,  f32,  float,            4,  "float32",    'f', SL_DTYPE_CLASS_FLOAT)   \
    X(F64,  f64,  double,           8,  "float64",    'f', SL_DTYPE_CLASS_FLOAT)   \
    X(C64,  c64,  float _Complex,   8,  "complex64",  'c', SL_DTYPE_CLASS_COMPLEX) \
    X(C128, c128, double _Complex,  16, "complex128", 'c', SL_DTYPE_CLASS_COMPLEX)

/*
 * The types kernels compute on (bool, integers, float32, float64), with the
 * accumulator a sum of many elements is kept in.  Columns: enum suffix,
 * short suffix, C type, accumulator type.
 */
#define SL_DTYPE_REAL_MAP(X)           \
    X(BOOL, b8,  uint8_t,  uint64_t)   \
    X(I8,   i8,  int8_t,   int64_t)    \
    X(I16,  i16, int16_t,  int64_t)    \
    X(I32,  i32, int32_t,  int64_t)    \
    X(I64,  i64, int64_t,  int64_t)    \
    X(U8,   u8,  uint8_t,  uint64_t)   \
    X(U16,  u16, uint16_t, uint64_t)   \
    X(U32,  u32, uint32_t, uint64_t)   \
    X(U64,  u64, uint64_t, uint64_t)   \
    X(F32,  f32, float,    double)     \
    X(F64,  f64, double,   double)
/* clang-format on */

/* What arithmetic a type supports. */
typedef enum sl_dtype_class {
    SL_DTYPE_CLASS_BOOL,
    SL_DTYPE_CLASS_SINT,
    SL_DTYPE_CLASS_UINT,
    SL_DTYPE_CLASS_FLOAT16,
    SL_DTYPE_CLASS_FLOAT,
    SL_DTYPE_CLASS_COMPLEX
} sl_dtype_class;

typedef enum sl_dtype {
#define SL_DTYPE_ENUM_(NAME, sfx, T, size, v3, kind, cls) SL_DTYPE_##NAME,
    SL_DTYPE_MAP(SL_DTYPE_ENUM_) /* SL_DTYPE_BOOL, SL_DTYPE_I8, ... */
#undef SL_DTYPE_ENUM_
    SL_DTYPE_COUNT_
} sl_dtype;

/* Byte order of stored elements. */
typedef enum sl_endian { SL_ENDIAN_LITTLE, SL_ENDIAN_BIG } sl_endian;

/** The byte order of this machine.  Thread-safety: any thread. */
SL_API sl_endian sl_endian_native(void);

/** Size of one element in bytes; 0 for a value outside the enum.  Thread-safety: any thread. */
SL_API size_t sl_dtype_size(sl_dtype dt);

/**
 * The type's class; SL_DTYPE_CLASS_BOOL for a value outside the enum.
 * Thread-safety: any thread.
 */
SL_API sl_dtype_class sl_dtype_get_class(sl_dtype dt);

/** Zarr v3 name ("uint16"); "invalid" for a value outside the enum.  Thread-safety: any thread. */
SL_API const char *sl_dtype_name(sl_dtype dt);

/** True for SL_DTYPE_I8 … SL_DTYPE_U64.  Thread-safety: any thread. */
SL_API bool sl_dtype_is_integer(sl_dtype dt);
/** True for signed integers, floats and complex types.  Thread-safety: any thread. */
SL_API bool sl_dtype_is_signed(sl_dtype dt);
/** True for float16, float32 and float64.  Thread-safety: any thread. */
SL_API bool sl_dtype_is_float(sl_dtype dt);
/** True for complex64 and complex128.  Thread-safety: any thread. */
SL_API bool sl_dtype_is_complex(sl_dtype dt);
/**
 * True for types listed in SL_DTYPE_REAL_MAP (what kernels compute on).
 * Thread-safety: any thread.
 */
SL_API bool sl_dtype_is_real(sl_dtype dt);

/**
 * Parse a Zarr v3 data type name ("int16", "float64", "bool", ...).
 * @return SL_OK, SL_EINVAL (`name` or `out` NULL) or SL_EUNSUPPORTED naming
 * the type when it is not one sluice stores.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_dtype_from_name(const char *name, sl_dtype *out,
                                                 struct sl_error *err);

/**
 * Parse a Zarr v2 (numpy) typestr: byte order '<', '>' or '|' (one-byte
 * types only), kind 'b' 'i' 'u' 'f' 'c', then the size in bytes, e.g. "<u2",
 * ">f8", "|b1".  `endian` may be NULL; one-byte types report little.
 * @return SL_OK, SL_EPARSE for a malformed string, or SL_EUNSUPPORTED for a
 * well-formed type sluice does not store ("<U7", "|O", "<M8[ns]"), each
 * naming the string.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_dtype_from_typestr(const char *typestr, sl_dtype *out,
                                                    sl_endian *endian, struct sl_error *err);

/**
 * Write the v2 typestr of `dt` in byte order `endian` into `buf` ("<u2",
 * ">f8"; one-byte types use '|').  @return SL_OK, or SL_EINVAL when `dt` is
 * invalid or `size` is under 8 (naming the value).
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_dtype_typestr(sl_dtype dt, sl_endian endian, char *buf,
                                               size_t size, struct sl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SL_DTYPE_H */
