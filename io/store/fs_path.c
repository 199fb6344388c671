/* SPDX-License-Identifier: MIT */
/*
 * Paths as the kernel reaches them: the existing part of a path resolved
 * through realpath(3), its missing tail applied by name, and the relation
 * of two such paths by whole components.  Commands compare their inputs and
 * outputs with these before they touch anything.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sluice/fs.h>

#include "core_internal.h"
#include "io_store.h"

/* Append component `c` (`n` bytes) to the absolute path `out` of length
 * `*len`, applying "." and ".." by name; false when it does not fit. */
static bool
path_push(char *out, size_t size, size_t *len, const char *c, size_t n)
{
    if (n == 0 || (n == 1 && c[0] == '.'))
        return true;
    if (n == 2 && c[0] == '.' && c[1] == '.') {
        while (*len > 1 && out[*len - 1] != '/')
            (*len)--;
        if (*len > 1)
            (*len)--;
        out[*len] = '\0';
        return true;
    }
    size_t sep = *len > 1 ? 1 : 0;
    if (*len + sep + n + 1 > size)
        return false;
    if (sep)
        out[(*len)++] = '/';
    memcpy(out + *len, c, n);
    *len += n;
    out[*len] = '\0';
    return true;
}

/* The path made absolute against the working directory, into `abs`. */
static sl_status
path_absolute(const char *path, char *abs, size_t size, struct sl_error *err)
{
    if (path[0] == '/') {
        if (strlen(path) >= size)
            return sl_error_set(err, SL_EINVAL, NULL, "path \"%s\" is too long (%zu bytes)", path,
                                strlen(path));
        strcpy(abs, path);
        return SL_OK;
    }
    if (getcwd(abs, size) == NULL)
        return sl_error_set(err, SL_EIO, NULL, "cannot resolve \"%s\": working directory: %s", path,
                            strerror(errno));
    size_t n = strlen(abs);
    if (n + 1 + strlen(path) >= size)
        return sl_error_set(err, SL_EINVAL, NULL, "path \"%s\" is too long", path);
    abs[n] = '/';
    strcpy(abs + n + 1, path);
    return SL_OK;
}

sl_status
sl_fs_path_resolve(const char *path, char *out, size_t size, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (path == NULL || path[0] == '\0')
        return sl_error_set(err, SL_EINVAL, NULL, "empty path");
    char abs[PATH_MAX], real[PATH_MAX];
    SL_TRY(path_absolute(path, abs, sizeof(abs), err));
    /* The longest prefix that exists, ending at a '/' or the end. */
    size_t cut = strlen(abs);
    for (;;) {
        char saved = abs[cut];
        abs[cut] = '\0';
        bool ok = realpath(cut > 0 ? abs : "/", real) != NULL;
        int e = errno;
        abs[cut] = saved;
        if (ok)
            break;
        if (e != ENOENT && e != ENOTDIR)
            return sl_error_set(err, SL_EIO, NULL, "cannot resolve \"%s\": %s", path, strerror(e));
        while (cut > 0 && abs[cut - 1] != '/')
            cut--;
        while (cut > 1 && abs[cut - 1] == '/')
            cut--;
        if (cut <= 1)
            cut = 0;
    }
    size_t len = strlen(real);
    if (len >= size)
        return sl_error_set(err, SL_EINVAL, NULL, "resolved path of \"%s\" is too long", path);
    memcpy(out, real, len + 1);
    for (const char *p = abs + cut; *p != '\0';) {
        while (*p == '/')
            p++;
        size_t n = strcspn(p, "/");
        if (!path_push(out, size, &len, p, n))
            return sl_error_set(err, SL_EINVAL, NULL, "resolved path of \"%s\" is too long", path);
        p += n;
    }
    return SL_OK;
}

sl_fs_overlap
sl_fs_path_overlap(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    while (na > 1 && a[na - 1] == '/')
        na--;
    while (nb > 1 && b[nb - 1] == '/')
        nb--;
    size_t n = na < nb ? na : nb;
    if (memcmp(a, b, n) != 0)
        return SL_FS_APART;
    if (na == nb)
        return SL_FS_SAME;
    /* The shorter is a prefix: a whole component, or the root "/". */
    const char *longer = na > nb ? a : b;
    if (longer[n] != '/' && !(n == 1 && longer[0] == '/'))
        return SL_FS_APART;
    return na > nb ? SL_FS_INSIDE : SL_FS_CONTAINS;
}

bool
sl__pid_gone(long pid)
{
    if (pid <= 0)
        return false;
    if (kill((pid_t)pid, 0) != 0)
        return errno == ESRCH;
    char path[64], stat[512];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    size_t n = f != NULL ? fread(stat, 1, sizeof(stat) - 1, f) : 0;
    if (f != NULL)
        fclose(f);
    stat[n] = '\0';
    /* "PID (COMM) S ...": COMM may hold spaces and parentheses; the state
     * follows the last ')'. */
    const char *close = strrchr(stat, ')');
    return close != NULL && close[1] == ' ' && close[2] == 'Z';
}
