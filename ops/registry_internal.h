/* SPDX-License-Identifier: MIT */
/*
 * Private to the registry: the rows of operation families kept in files of
 * their own (the neighbourhood filters, registry_filter.c), which
 * registry.c's table points at.
 */
#ifndef SL_REGISTRY_INTERNAL_H
#define SL_REGISTRY_INTERNAL_H

#include <sluice/op_registry.h>

/* Parameters of gaussian and gradient_magnitude; of the box filters
 * (uniform, median, minimum_filter, maximum_filter); of laplace. */
extern const struct sl_op_param sl__gaussian_params[4];
extern const struct sl_op_param sl__box_params[3];
extern const struct sl_op_param sl__laplace_params[2];

/* The descriptor functions every filter row shares (the row's name picks
 * the filter). */
sl_status sl__filter_bind(struct sl_op *op, const struct sl_op_args *args, sl_dtype in_dtype,
                          uint32_t rank, struct sl_error *err);
sl_status sl__filter_scratch_bytes(const struct sl_op *op, const uint64_t *out_shape, size_t *bytes,
                                   struct sl_error *err);
sl_status sl__filter_apply_at(const struct sl_op *op, const uint64_t *shape,
                              const struct sl_view *in, const uint64_t *in_start,
                              const struct sl_view *out, const uint64_t *out_start, void *scratch,
                              size_t scratch_bytes, struct sl_error *err);

#endif /* SL_REGISTRY_INTERNAL_H */
