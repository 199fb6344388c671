/* SPDX-License-Identifier: MIT */
/*
 * Plugins: shared libraries that add operations to the registry of
 * <sluice/op_registry.h>, with the same descriptor (struct sl_op_desc) the
 * built-in operations have.  A graph file names them in a top-level
 * "plugins" list and a program loads them with sl_plugin_load; either way
 * their operations are then named in graph files like built-in ones.
 *
 * A plugin exports two symbols, both declared below:
 *
 *     #include <sluice.h>
 *
 *     SL_PLUGIN_DEFINE_ABI_VERSION;
 *
 *     SL_PLUGIN_EXPORT sl_status
 *     sl_plugin_register(struct sl_plugin_host *host)
 *     {
 *         return host->add_op(host, &my_op);
 *     }
 *
 * The loader reads `sl_plugin_abi_version` before it runs any of the
 * library's code (beyond its ELF constructors) and refuses a library built
 * against another ABI; then it calls `sl_plugin_register` once, which adds
 * each operation with host->add_op.  Every descriptor is checked
 * (sl_op_desc_check) and names are checked against the registry as they are
 * added; the operations enter the registry only when sl_plugin_register
 * returns SL_OK, all together, otherwise none does and the library is
 * closed.  A loaded library stays loaded for the rest of the process, since
 * bound operations point into it.
 *
 * An operation takes one input, as the built-in ones do; a computation of
 * several arrays is an `expr` node.
 */
#ifndef SL_PLUGIN_H
#define SL_PLUGIN_H

#include <stdint.h>

#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/op_registry.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The plugin ABI this header describes.  It changes whenever the layout or
 * meaning of what a plugin sees changes: struct sl_plugin_host, struct
 * sl_op_desc, sl_op_param, sl_op_value, sl_op_args, sl_op, sl_view,
 * sl_error, the sl_dtype, sl_status and sl_op_kind values.  A plugin built
 * against another version is refused.
 */
#define SL_PLUGIN_ABI_VERSION 1u

/* Gives a plugin's symbol default visibility and C linkage, also in
 * libraries built with -fvisibility=hidden or as C++. */
#if defined(__GNUC__)
#define SL_PLUGIN_VISIBLE __attribute__((visibility("default")))
#else
#define SL_PLUGIN_VISIBLE
#endif
#ifdef __cplusplus
#define SL_PLUGIN_EXPORT extern "C" SL_PLUGIN_VISIBLE
#else
#define SL_PLUGIN_EXPORT SL_PLUGIN_VISIBLE
#endif

/* What the loader hands sl_plugin_register. */
struct sl_plugin_host {
    uint32_t abi_version; /* the loader's SL_PLUGIN_ABI_VERSION (equal to the plugin's) */
    const char *library;  /* the path the library was loaded from, for messages */
    /* Add operation `desc` (copied; what it points to must live as long
     * as the library).  @return SL_OK; SL_EINVAL (a bad descriptor:
     * sl_op_desc_check); SL_EEXIST (a built-in op, another plugin's, or
     * one this plugin added has that name); SL_EOVERFLOW (too many).
     * A failure fails the load whatever sl_plugin_register returns, and
     * its message is the load's error. */
    sl_status (*add_op)(struct sl_plugin_host *host, const struct sl_op_desc *desc);
    struct sl_error *err; /* where sl_plugin_register may say why it fails
                             (sl_error_set); add_op records its refusals here */
    void *ctx;            /* the loader's; do not touch */
};

/* The symbols a plugin defines. */
SL_PLUGIN_VISIBLE extern const uint32_t sl_plugin_abi_version;
SL_PLUGIN_VISIBLE sl_status sl_plugin_register(struct sl_plugin_host *host);

/* Define `sl_plugin_abi_version` as the version of this header. */
#define SL_PLUGIN_DEFINE_ABI_VERSION \
    SL_PLUGIN_EXPORT const uint32_t sl_plugin_abi_version = SL_PLUGIN_ABI_VERSION

/**
 * Load the plugin at `path` (dlopen: a path without '/' is searched for
 * as the dynamic linker searches libraries) and add its operations to the
 * registry.  Loading the same library again does nothing and succeeds.
 * @return SL_OK; SL_EINVAL (`path` NULL or empty); SL_ENOTFOUND (the
 * library cannot be opened, with the dynamic linker's message; or it does
 * not export sl_plugin_abi_version or sl_plugin_register);
 * SL_EUNSUPPORTED (its ABI version is not this library's: both numbers
 * given); the error add_op or sl_plugin_register recorded (SL_EINVAL,
 * SL_EEXIST, SL_EOVERFLOW, or what the plugin chose); SL_EFUNC when
 * sl_plugin_register fails and recorded nothing; SL_EOVERFLOW (too many
 * libraries).  Every message starts with `plugin PATH: `.  On failure no
 * operation of the library is added and the library is closed.
 * Thread-safety: any thread; loads are serialized.  Load plugins before
 * loading or building the graphs that use them.
 */
SL_API SL_NODISCARD sl_status sl_plugin_load(const char *path, struct sl_error *err);

/**
 * The path of the plugin that added operation `d`, as given to
 * sl_plugin_load; NULL for built-in operations and those a program added
 * with sl_op_register.
 * Thread-safety: any thread.
 */
SL_API const char *sl_plugin_op_library(const struct sl_op_desc *d);

#ifdef __cplusplus
}
#endif

#endif /* SL_PLUGIN_H */
