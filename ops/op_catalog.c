/* SPDX-License-Identifier: MIT */
/*
 * The catalogue of operations graph files and programs name: the built-in
 * table of registry.c, then the operations a program or its plugins add at
 * run time (sl_op_register), in one process-wide table.  Lookup, listing,
 * and the checks an added descriptor must pass.
 *
 * DESIGN: added descriptors are copied into a fixed array of slots that is
 * only ever appended to, so a descriptor's address stays valid for the rest
 * of the process (bound ops point at it).  Writers (sl_op_register) take a
 * spin lock, which only they use: registration is rare and short.  Readers
 * take no lock: they load the count with acquire, which pairs with the
 * release store a writer makes after filling the slot, so every slot below
 * the count they see is complete.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <sluice/op_registry.h>

#include "ops_internal.h"

/* The added operations: slots [0, n_added) are complete and never change. */
static struct sl_op_desc added[SL_OP_MAX_ADDED];
static _Atomic uint32_t n_added;
/* Held by writers only, around the duplicate check and the append. */
static atomic_flag added_lock = ATOMIC_FLAG_INIT;

/* The names graph files give other kinds of nodes (graph/json), which an
 * op of the same name could never be reached by. */
static const char *const reserved_ops[] = {
    "get",    "put",   "select",  "rechunk",     "pyramid",   "copy",  "expr",
    "reduce", "stats", "squeeze", "expand_dims", "transpose", "stack", "concat",
};
/* The fields every op node of a graph file has besides its parameters. */
static const char *const reserved_params[] = {"op", "id", "input", "inputs", "chunks", "comment"};

static uint32_t
added_count(void)
{
    /* Acquire: pairs with the release store in sl_op_register, so the
     * slots below the count are seen complete. */
    return atomic_load_explicit(&n_added, memory_order_acquire);
}

uint32_t
sl_op_count(void)
{
    uint32_t n_builtin;
    (void)sl__op_builtins(&n_builtin);
    return n_builtin + added_count();
}

const struct sl_op_desc *
sl_op_at(uint32_t i)
{
    uint32_t n_builtin;
    const struct sl_op_desc *builtin = sl__op_builtins(&n_builtin);
    if (i < n_builtin)
        return &builtin[i];
    return i - n_builtin < added_count() ? &added[i - n_builtin] : NULL;
}

bool
sl_op_is_builtin(const struct sl_op_desc *d)
{
    uint32_t n_builtin;
    const struct sl_op_desc *builtin = sl__op_builtins(&n_builtin);
    for (uint32_t i = 0; i < n_builtin; i++)
        if (d == &builtin[i])
            return true;
    return false;
}

size_t
sl_op_names(char *buf, size_t size)
{
    size_t len = 0;
    if (size > 0)
        buf[0] = '\0';
    const uint32_t n = sl_op_count();
    for (uint32_t i = 0; i < n; i++) {
        const struct sl_op_desc *d = sl_op_at(i);
        if (d != NULL)
            sl__strbuf_append(buf, size, &len, "%s%s", i ? ", " : "", d->name);
    }
    return len;
}

/* The operation called `name`, or NULL. */
static const struct sl_op_desc *
op_find(const char *name)
{
    const uint32_t n = sl_op_count();
    for (uint32_t i = 0; name != NULL && i < n; i++) {
        const struct sl_op_desc *d = sl_op_at(i);
        if (d != NULL && strcmp(d->name, name) == 0)
            return d;
    }
    return NULL;
}

sl_status
sl_op_lookup(const char *name, const struct sl_op_desc **out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "op lookup: NULL argument");
    const struct sl_op_desc *d = op_find(name);
    if (d != NULL) {
        *out = d;
        return SL_OK;
    }
    char known[sizeof err->text];
    sl_op_names(known, sizeof known);
    return sl_error_set(err, SL_ENOTFOUND, NULL, "unknown op \"%.40s\"; known: %s",
                        name == NULL ? "(null)" : name, known);
}

/* ---- checking descriptors ---------------------------------------------- */

static bool
name_in(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], name) == 0)
            return true;
    return false;
}

/* EINVAL unless `s` is 1 to SL_OP_NAME_MAX of [A-Za-z0-9_], a letter first. */
static sl_status
check_name(const char *op, const char *what, const char *s, struct sl_error *err)
{
    if (s == NULL || s[0] == '\0')
        return sl_error_set(err, SL_EINVAL, NULL, "op \"%.40s\": %s is %s", op, what,
                            s == NULL ? "NULL" : "empty");
    const size_t len = strlen(s);
    bool ok =
        len <= SL_OP_NAME_MAX && ((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z'));
    for (size_t i = 0; ok && i < len; i++)
        ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
             (s[i] >= '0' && s[i] <= '9') || s[i] == '_';
    if (!ok)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "op \"%.40s\": %s \"%.40s\" is not 1 to %d letters, digits and '_' "
                            "starting with a letter",
                            op, what, s, SL_OP_NAME_MAX);
    return SL_OK;
}

static sl_status
check_params(const struct sl_op_desc *d, struct sl_error *err)
{
    if (d->n_params > SL_OP_MAX_PARAMS)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "op \"%s\": %" PRIu32 " parameters; at most %d (SL_OP_MAX_PARAMS)",
                            d->name, d->n_params, SL_OP_MAX_PARAMS);
    if (d->n_params > 0 && d->params == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "op \"%s\": %" PRIu32 " parameters but no params",
                            d->name, d->n_params);
    for (uint32_t i = 0; i < d->n_params; i++) {
        const struct sl_op_param *p = &d->params[i];
        char what[32];
        snprintf(what, sizeof what, "parameter %" PRIu32 "'s name", i);
        SL_TRY(check_name(d->name, what, p->name, err));
        if (name_in(p->name, reserved_params, SL_ARRAY_LEN(reserved_params)))
            return sl_error_set(err, SL_EINVAL, NULL,
                                "op \"%s\": parameter %" PRIu32 " \"%s\" is a field every op node "
                                "has (op, id, input, inputs, chunks, comment)",
                                d->name, i, p->name);
        for (uint32_t k = 0; k < i; k++)
            if (strcmp(d->params[k].name, p->name) == 0)
                return sl_error_set(err, SL_EINVAL, NULL,
                                    "op \"%s\": parameters %" PRIu32 " and %" PRIu32
                                    " are both called \"%s\"",
                                    d->name, k, i, p->name);
        if ((unsigned)p->type > SL_OP_PARAM_MODE)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "op \"%s\": parameter \"%s\" has unknown type %d", d->name, p->name,
                                (int)p->type);
        if (p->doc == NULL)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "op \"%s\": parameter \"%s\" has no doc (a line: its meaning "
                                "and default)",
                                d->name, p->name);
    }
    return SL_OK;
}

/* The functions each kind needs (see struct sl_op_desc). */
static sl_status
check_functions(const struct sl_op_desc *d, struct sl_error *err)
{
    static const char *const kinds[] = {"map", "regrid", "halo"};
    if ((unsigned)d->kind >= SL_ARRAY_LEN(kinds))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "op \"%s\": unknown kind %d (SL_OP_KIND_MAP, _REGRID or _HALO)",
                            d->name, (int)d->kind);
    if (d->bind == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "op \"%s\": no bind function", d->name);
    if (d->kind == SL_OP_KIND_HALO) {
        if (d->apply_at == NULL)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "op \"%s\": a halo op without apply_at (which applies it where "
                                "a block lies)",
                                d->name);
        return SL_OK;
    }
    if (d->apply == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "op \"%s\": a %s op without apply", d->name,
                            kinds[d->kind]);
    if (d->apply_at != NULL || d->scratch_bytes != NULL)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "op \"%s\": a %s op with %s, which only halo ops have", d->name,
                            kinds[d->kind], d->apply_at != NULL ? "apply_at" : "scratch_bytes");
    return SL_OK;
}

sl_status
sl_op_desc_check(const struct sl_op_desc *d, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (d == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "op descriptor: NULL");
    SL_TRY(check_name(d->name != NULL ? d->name : "", "the name", d->name, err));
    if (name_in(d->name, reserved_ops, SL_ARRAY_LEN(reserved_ops)))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "op \"%s\": graph files use that name for another kind of node",
                            d->name);
    if (d->summary == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "op \"%s\": no summary (one line for listings)",
                            d->name);
    SL_TRY(check_functions(d, err));
    return check_params(d, err);
}

/* ---- adding ------------------------------------------------------------ */

sl_status
sl_op_register(const struct sl_op_desc *d, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(sl_op_desc_check(d, err));
    /* Acquire: pairs with the release clear below, so this writer sees the
     * slots and count the previous one wrote. */
    while (atomic_flag_test_and_set_explicit(&added_lock, memory_order_acquire))
        ;
    sl_status st = SL_OK;
    const struct sl_op_desc *same = op_find(d->name);
    const uint32_t n = atomic_load_explicit(&n_added, memory_order_relaxed);
    if (same != NULL) {
        st = sl_error_set(err, SL_EEXIST, NULL, "op \"%s\" exists: %s", d->name,
                          sl_op_is_builtin(same) ? "a built-in operation"
                                                 : "an operation added before");
    } else if (n == SL_OP_MAX_ADDED) {
        st = sl_error_set(err, SL_EOVERFLOW, NULL,
                          "op \"%s\": the registry holds %d added operations already", d->name,
                          SL_OP_MAX_ADDED);
    } else {
        added[n] = *d;
        /* Release: pairs with the acquire load in added_count, so a reader
         * that sees n + 1 sees slot n filled. */
        atomic_store_explicit(&n_added, n + 1, memory_order_release);
    }
    /* Release: pairs with the acquire test-and-set above. */
    atomic_flag_clear_explicit(&added_lock, memory_order_release);
    return st;
}
