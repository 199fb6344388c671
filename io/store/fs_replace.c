/* SPDX-License-Identifier: MIT */
/*
 * Replacing a node (an array's or group's directory) whole: the new node is
 * written in a hidden sibling ".sluice-tmp.node.<pid>@<host>+<name>" and
 * swapped with the old one at commit (renameat2 RENAME_EXCHANGE, or two
 * renames where the file system lacks it), then the old one is removed; or,
 * in place, the old node's contents are removed first.  Siblings of killed
 * runs on this host are removed at the next begin.
 *
 * DESIGN: these calls work on the directory above a store's root, which no
 * store owns, so they call the C library directly rather than a store's
 * I/O table.  Removal walks with file descriptors (openat, unlinkat) and
 * never follows a symbolic link out of the tree.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sluice/fs.h>

#include "core_internal.h"
#include "io_store.h"

#define NODE_PREFIX ".sluice-tmp.node."

struct sl_fs_replace {
    char given[PATH_MAX];   /* dest as the caller gave it, for messages */
    char dest[PATH_MAX];    /* dest resolved */
    char staging[PATH_MAX]; /* where the new node is written (dest in place) */
    char made[PATH_MAX];    /* the topmost parent begin made; "" if none */
    sl_fs_replace_mode mode;
    bool existed; /* a Zarr node was at dest */
};

/* ---- removing trees ------------------------------------------------------------ */

static sl_status remove_entry(int dirfd, const char *name, const char *top, struct sl_error *err);

/* Remove every entry of the open directory `fd` (closed here). */
static sl_status
remove_contents_fd(int fd, const char *top, struct sl_error *err)
{
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return sl_error_set(err, SL_EIO, NULL, "cannot read directory in \"%s\": %s", top,
                            strerror(errno));
    }
    sl_status st = SL_OK;
    struct dirent *e;
    while (st == SL_OK && (errno = 0, e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        st = remove_entry(dirfd(d), e->d_name, top, err);
    }
    if (st == SL_OK && errno != 0)
        st = sl_error_set(err, SL_EIO, NULL, "cannot read directory in \"%s\": %s", top,
                          strerror(errno));
    closedir(d);
    return st;
}

static sl_status
remove_entry(int dirfd, const char *name, const char *top, struct sl_error *err)
{
    struct stat sb;
    if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT
                   ? SL_OK
                   : sl_error_set(err, SL_EIO, NULL, "cannot remove \"%s\" in \"%s\": %s", name,
                                  top, strerror(errno));
    if (S_ISDIR(sb.st_mode)) {
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            return sl_error_set(err, SL_EIO, NULL, "cannot open \"%s\" in \"%s\": %s", name, top,
                                strerror(errno));
        SL_TRY(remove_contents_fd(fd, top, err));
    }
    if (unlinkat(dirfd, name, S_ISDIR(sb.st_mode) ? AT_REMOVEDIR : 0) != 0 && errno != ENOENT)
        return sl_error_set(err, SL_EIO, NULL, "cannot remove \"%s\" in \"%s\": %s", name, top,
                            strerror(errno));
    return SL_OK;
}

sl_status
sl_fs_remove_tree(const char *path, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    return remove_entry(AT_FDCWD, path, path, err);
}

/* Remove the tree at `path` where a failure only leaves a hidden sibling
 * for the next replacement to remove. */
static void
remove_quietly(const char *path)
{
    struct sl_error ignored = SL_ERROR_INIT;
    if (sl_fs_remove_tree(path, &ignored) != SL_OK)
        return;
}

/* Remove what directory `path` holds, keeping the directory. */
static sl_status
remove_contents(const char *path, struct sl_error *err)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return sl_error_set(err, SL_EIO, NULL, "cannot open \"%s\": %s", path, strerror(errno));
    return remove_contents_fd(fd, path, err);
}

/* ---- what is at the destination ---------------------------------------------- */

/* What a directory holds, as far as replacing it goes. */
struct dir_census {
    size_t n_entries;   /* entries */
    const char *marker; /* the first Zarr marker seen, or NULL */
    char foreign[256];  /* the first file that is no part of a Zarr node, or "" */
};

/* Whether a file at the top of a node may be part of it: metadata, a chunk
 * key of either format ("0.1.2", "c", "c.0.1") or a store temporary. */
static bool
file_is_zarr(const char *name)
{
    static const char *const meta[] = {".zarray", ".zgroup", ".zattrs", "zarr.json", ".zmetadata"};
    for (size_t i = 0; i < sizeof(meta) / sizeof(meta[0]); i++)
        if (strcmp(name, meta[i]) == 0)
            return true;
    if (strncmp(name, ".sluice-tmp.", 12) == 0)
        return true;
    const char *p = name;
    if (*p == 'c')
        p++;
    else if (*p < '0' || *p > '9')
        return false;
    while (*p >= '0' && *p <= '9')
        p++;
    while (*p == '.' && p[1] >= '0' && p[1] <= '9') {
        p++;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return *p == '\0';
}

static void
dir_census(const char *path, struct dir_census *c)
{
    static const char *const markers[] = {".zarray", ".zgroup", "zarr.json", ".zattrs"};
    *c = (struct dir_census){0};
    DIR *d = opendir(path);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        c->n_entries++;
        for (size_t i = 0; i < sizeof(markers) / sizeof(markers[0]); i++)
            if (c->marker == NULL && strcmp(e->d_name, markers[i]) == 0)
                c->marker = markers[i];
        struct stat sb;
        if (c->foreign[0] == '\0' && !file_is_zarr(e->d_name) &&
            !(fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(sb.st_mode)))
            sl__strlcpy(c->foreign, e->d_name, sizeof(c->foreign));
    }
    closedir(d);
}

static const char *
marker_kind(const char *marker)
{
    if (strcmp(marker, ".zarray") == 0)
        return "a Zarr v2 array";
    if (strcmp(marker, ".zgroup") == 0)
        return "a Zarr v2 group";
    if (strcmp(marker, "zarr.json") == 0)
        return "a Zarr v3 array or group";
    return "Zarr attributes (.zattrs)";
}

/* ---- names of hidden siblings -------------------------------------------------- */

/* Split the resolved `path` into its parent directory and last component. */
static void
path_split(const char *path, char *parent, size_t size, const char **base)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash != NULL ? (size_t)(slash - path) : 0;
    if (n == 0) {
        sl__strlcpy(parent, "/", size);
    } else {
        sl__strlcpy(parent, path, n + 1 < size ? n + 1 : size);
    }
    *base = slash != NULL ? slash + 1 : path;
}

/* Kinds of hidden siblings. */
enum sibling { SIBLING_NONE, SIBLING_NEW, SIBLING_OLD };

/* What `name` is to `base`: ".sluice-tmp.node.<pid>@<host>+<base>" (a new
 * node being written) or the same with ".old" (an old node moved aside by
 * the two-rename swap); its pid and host (up to `host_size` bytes). */
static enum sibling
sibling_parse(const char *name, const char *base, long *pid, char *host, size_t host_size)
{
    size_t np = sizeof(NODE_PREFIX) - 1;
    if (strncmp(name, NODE_PREFIX, np) != 0)
        return SIBLING_NONE;
    char *end;
    errno = 0;
    *pid = strtol(name + np, &end, 10);
    if (errno != 0 || end == name + np || *end != '@' || *pid <= 0)
        return SIBLING_NONE;
    const char *plus = strchr(end + 1, '+'); /* host names hold no '+' */
    if (plus == NULL || (size_t)(plus - end - 1) >= host_size)
        return SIBLING_NONE;
    memcpy(host, end + 1, (size_t)(plus - end - 1));
    host[plus - end - 1] = '\0';
    size_t nb = strlen(base);
    if (strcmp(plus + 1, base) == 0)
        return SIBLING_NEW;
    if (strncmp(plus + 1, base, nb) == 0 && strcmp(plus + 1 + nb, ".old") == 0)
        return SIBLING_OLD;
    return SIBLING_NONE;
}

/* True when process `pid` of host `host` left it and no longer runs (a
 * process of another host, or of another PID namespace under the same host
 * name, is not judged). */
static bool
sibling_owner_gone(long pid, const char *owner_host, const char *host)
{
    if (strcmp(owner_host, host) != 0 || pid == (long)getpid())
        return false;
    return sl__pid_gone(pid);
}

/* Deal with what killed runs of this host left beside `dest` (`base` in
 * `parent`): an old node moved aside while nothing is at `dest` goes back
 * (the kill fell between the two renames of the fallback swap); the rest is
 * removed.  Best effort. */
static void
remove_stale_siblings(const char *parent, const char *base, const char *host, const char *dest)
{
    DIR *d = opendir(parent);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid;
        char owner[HOST_NAME_MAX + 1];
        enum sibling k = sibling_parse(e->d_name, base, &pid, owner, sizeof(owner));
        if (k == SIBLING_NONE || !sibling_owner_gone(pid, owner, host))
            continue;
        struct stat sb;
        if (k == SIBLING_OLD && stat(dest, &sb) != 0 && errno == ENOENT &&
            renameat(dirfd(d), e->d_name, AT_FDCWD, dest) == 0)
            continue;
        struct sl_error ignored = SL_ERROR_INIT;
        (void)remove_entry(dirfd(d), e->d_name, parent, &ignored);
    }
    closedir(d);
}

sl_status
sl_fs_replace_find(const char *dest, char *out, size_t size, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    char resolved[PATH_MAX], parent[PATH_MAX], found[NAME_MAX + 1] = "";
    SL_TRY(sl_fs_path_resolve(dest, resolved, sizeof(resolved), err));
    const char *base;
    path_split(resolved, parent, sizeof(parent), &base);
    DIR *d = opendir(parent);
    if (d == NULL)
        return sl_error_set(err, SL_ENOTFOUND, NULL, "no new node is being written for \"%s\"",
                            dest);
    sl_status st = SL_OK;
    struct dirent *e;
    while (st == SL_OK && (e = readdir(d)) != NULL) {
        long pid;
        char owner[HOST_NAME_MAX + 1];
        if (sibling_parse(e->d_name, base, &pid, owner, sizeof(owner)) != SIBLING_NEW)
            continue;
        if (found[0] != '\0')
            st = sl_error_set(err, SL_EEXIST, NULL,
                              "several runs are writing \"%s\" (\"%s\" and \"%s\")", dest, found,
                              e->d_name);
        else
            sl__strlcpy(found, e->d_name, sizeof(found));
    }
    closedir(d);
    if (st != SL_OK)
        return st;
    if (found[0] == '\0')
        return sl_error_set(err, SL_ENOTFOUND, NULL, "no new node is being written for \"%s\"",
                            dest);
    int n = snprintf(out, size, "%s/%s", strcmp(parent, "/") == 0 ? "" : parent, found);
    if (n < 0 || (size_t)n >= size)
        return sl_error_set(err, SL_EINVAL, NULL, "the path of \"%s\"'s new node is too long",
                            dest);
    return SL_OK;
}

/* mkdir -p the parents of r->dest, remembering the topmost one made. */
static sl_status
make_parents(struct sl_fs_replace *r, const char *parent, struct sl_error *err)
{
    char p[PATH_MAX];
    sl__strlcpy(p, parent, sizeof(p));
    size_t n = strlen(p);
    for (size_t i = 1; i <= n; i++) {
        if (i < n && p[i] != '/')
            continue;
        p[i] = '\0';
        if (mkdir(p, 0777) == 0) {
            if (r->made[0] == '\0')
                sl__strlcpy(r->made, p, sizeof(r->made));
        } else if (errno != EEXIST) {
            return sl_error_set(err, errno == EACCES ? SL_EACCES : SL_EIO, NULL,
                                "cannot make directory \"%s\" for \"%s\": %s", p, r->given,
                                strerror(errno));
        }
        if (i < n)
            p[i] = '/';
    }
    return SL_OK;
}

/* Remove the parents begin made, deepest first, while they are empty. */
static void
remove_made_parents(struct sl_fs_replace *r)
{
    if (r->made[0] == '\0')
        return;
    char p[PATH_MAX];
    const char *base;
    path_split(r->dest, p, sizeof(p), &base);
    size_t top = strlen(r->made);
    while (strlen(p) >= top && rmdir(p) == 0) {
        char *slash = strrchr(p, '/');
        if (slash == NULL || slash == p)
            break;
        *slash = '\0';
    }
}

/* ---- the replacement ------------------------------------------------------------ */

/* Look at what is at r->dest and decide; SL_OK to go on. */
static sl_status
replace_check_dest(struct sl_fs_replace *r, bool *dir_there, struct sl_error *err)
{
    struct stat sb;
    *dir_there = false;
    if (stat(r->dest, &sb) != 0) {
        if (errno == ENOENT)
            return SL_OK;
        return sl_error_set(err, SL_EIO, NULL, "cannot look at \"%s\": %s", r->given,
                            strerror(errno));
    }
    if (!S_ISDIR(sb.st_mode))
        return sl_error_set(err, SL_EEXIST, NULL,
                            "\"%s\" is a file, not a Zarr array or group; it is never replaced "
                            "(remove it or choose another path)",
                            r->given);
    *dir_there = true;
    struct dir_census c;
    dir_census(r->dest, &c);
    if (c.n_entries == 0)
        return SL_OK;
    if (c.marker == NULL)
        return sl_error_set(err, SL_EEXIST, NULL,
                            "\"%s\" is a directory of %zu entr%s but no Zarr array or group (no "
                            ".zarray, .zgroup or zarr.json); it is never replaced (remove it or "
                            "choose another path)",
                            r->given, c.n_entries, c.n_entries == 1 ? "y" : "ies");
    if (c.foreign[0] != '\0')
        return sl_error_set(err, SL_EEXIST, NULL,
                            "\"%s\" holds %s but also \"%s\", which is no part of a Zarr node; "
                            "it is never replaced (move that file away, or choose another path)",
                            r->given, marker_kind(c.marker), c.foreign);
    r->existed = true;
    if (r->mode == SL_FS_REPLACE_REFUSE)
        return sl_error_set(err, SL_EEXIST, NULL,
                            "\"%s\" already holds %s; replacing it needs the overwrite option",
                            r->given, marker_kind(c.marker));
    return SL_OK;
}

/* Make the hidden sibling r->staging, fresh. */
static sl_status
replace_make_staging(struct sl_fs_replace *r, const char *parent, const char *base,
                     const char *host, struct sl_error *err)
{
    int n = snprintf(r->staging, sizeof(r->staging), "%s/" NODE_PREFIX "%ld@%s+%s",
                     strcmp(parent, "/") == 0 ? "" : parent, (long)getpid(), host, base);
    if (n < 0 || (size_t)n >= sizeof(r->staging) || strlen(strrchr(r->staging, '/') + 1) > NAME_MAX)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "the name of \"%s\" is too long to write its new node beside it; "
                            "replace it in place instead",
                            r->given);
    remove_quietly(r->staging);
    if (mkdir(r->staging, 0777) != 0)
        return sl_error_set(err, errno == EACCES ? SL_EACCES : SL_EIO, NULL,
                            "cannot make \"%s\" beside \"%s\": %s", r->staging, r->given,
                            strerror(errno));
    return SL_OK;
}

static sl_status
replace_start(struct sl_fs_replace *r, struct sl_error *err)
{
    char parent[PATH_MAX], host[HOST_NAME_MAX + 1] = "";
    const char *base;
    path_split(r->dest, parent, sizeof(parent), &base);
    if (base[0] == '\0')
        return sl_error_set(err, SL_EINVAL, NULL, "\"%s\" names no directory to write", r->given);
    if (gethostname(host, sizeof(host)) != 0 || host[0] == '\0')
        sl__strlcpy(host, "localhost", sizeof(host));
    host[HOST_NAME_MAX] = '\0';
    for (char *h = host; *h != '\0'; h++)
        if (*h == '/' || *h == '+' || *h == '@')
            *h = '_';
    /* First what killed runs left: an old node may come back to its path. */
    remove_stale_siblings(parent, base, host, r->dest);
    bool dir_there;
    SL_TRY(replace_check_dest(r, &dir_there, err));
    if (r->mode == SL_FS_REPLACE_IN_PLACE && r->existed) {
        sl__strlcpy(r->staging, r->dest, sizeof(r->staging));
        return remove_contents(r->dest, err);
    }
    if (!dir_there)
        SL_TRY(make_parents(r, parent, err));
    return replace_make_staging(r, parent, base, host, err);
}

sl_fs_replace *
sl_fs_replace_begin(const char *dest, sl_fs_replace_mode mode, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (dest == NULL || dest[0] == '\0') {
        sl_error_set(err, SL_EINVAL, NULL, "empty destination path");
        return NULL;
    }
    struct sl_fs_replace *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        sl_error_set(err, SL_ENOMEM, NULL, "out of memory replacing \"%s\"", dest);
        return NULL;
    }
    r->mode = mode;
    sl__strlcpy(r->given, dest, sizeof(r->given));
    sl_status st = sl_fs_path_resolve(dest, r->dest, sizeof(r->dest), err);
    if (st == SL_OK)
        st = replace_start(r, err);
    if (st != SL_OK) {
        remove_made_parents(r);
        free(r);
        return NULL;
    }
    return r;
}

/* Take over hidden sibling `staging` of r->dest (resolved), renaming it as
 * this process's. */
static sl_status
replace_adopt(struct sl_fs_replace *r, const char *staging, struct sl_error *err)
{
    char parent[PATH_MAX], sparent[PATH_MAX], host[HOST_NAME_MAX + 1] = "";
    char owner[HOST_NAME_MAX + 1];
    const char *base, *sbase;
    long pid;
    path_split(r->dest, parent, sizeof(parent), &base);
    path_split(staging, sparent, sizeof(sparent), &sbase);
    if (strcmp(parent, sparent) != 0 ||
        sibling_parse(sbase, base, &pid, owner, sizeof(owner)) != SIBLING_NEW)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "\"%s\" is not where a run writes a new node for \"%s\"", staging,
                            r->given);
    if (gethostname(host, sizeof(host)) != 0 || host[0] == '\0')
        sl__strlcpy(host, "localhost", sizeof(host));
    host[HOST_NAME_MAX] = '\0';
    for (char *h = host; *h != '\0'; h++)
        if (*h == '/' || *h == '+' || *h == '@')
            *h = '_';
    if (pid != (long)getpid() && !sibling_owner_gone(pid, owner, host))
        return sl_error_set(err, SL_EEXIST, NULL,
                            "\"%s\" belongs to process %ld of host %s, which still runs or "
                            "runs elsewhere",
                            staging, pid, owner);
    bool dir_there;
    SL_TRY(replace_check_dest(r, &dir_there, err));
    int n = snprintf(r->staging, sizeof(r->staging), "%s/" NODE_PREFIX "%ld@%s+%s",
                     strcmp(parent, "/") == 0 ? "" : parent, (long)getpid(), host, base);
    if (n < 0 || (size_t)n >= sizeof(r->staging))
        return sl_error_set(err, SL_EINVAL, NULL, "the name of \"%s\" is too long", r->given);
    if (strcmp(staging, r->staging) != 0 && rename(staging, r->staging) != 0)
        return sl_error_set(err, SL_EIO, NULL, "cannot take over \"%s\": %s", staging,
                            strerror(errno));
    return SL_OK;
}

/* Whether `path` is the directory (`dev`, `ino`). */
static bool
dir_is(const char *path, uint64_t dev, uint64_t ino)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode) && (uint64_t)sb.st_dev == dev &&
           (uint64_t)sb.st_ino == ino;
}

/* Find the hidden sibling of `dest` (resolved) that is the directory
 * (`dev`, `ino`), whatever process's name it has; its path in `out`. */
static bool
sibling_find(const char *dest, uint64_t dev, uint64_t ino, char *out, size_t size)
{
    char parent[PATH_MAX];
    const char *base;
    path_split(dest, parent, sizeof(parent), &base);
    DIR *d = opendir(parent);
    if (d == NULL)
        return false;
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        long pid;
        char owner[HOST_NAME_MAX + 1];
        if (sibling_parse(e->d_name, base, &pid, owner, sizeof(owner)) != SIBLING_NEW)
            continue;
        int n = snprintf(out, size, "%s/%s", strcmp(parent, "/") == 0 ? "" : parent, e->d_name);
        found = n > 0 && (size_t)n < size && dir_is(out, dev, ino);
    }
    closedir(d);
    return found;
}

sl_fs_replace *
sl_fs_replace_resume(const char *dest, const char *staging, uint64_t dev, uint64_t ino,
                     struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct sl_fs_replace *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        sl_error_set(err, SL_ENOMEM, NULL, "out of memory resuming \"%s\"", dest);
        return NULL;
    }
    r->mode = SL_FS_REPLACE_STAGED;
    sl__strlcpy(r->given, dest, sizeof(r->given));
    char st_path[PATH_MAX];
    sl_status st = sl_fs_path_resolve(dest, r->dest, sizeof(r->dest), err);
    if (st == SL_OK)
        st = sl_fs_path_resolve(staging, st_path, sizeof(st_path), err);
    if (st == SL_OK && dir_is(r->dest, dev, ino)) {
        /* Written where it is: commit has nothing to move. */
        r->mode = SL_FS_REPLACE_IN_PLACE;
        r->existed = true;
        sl__strlcpy(r->staging, r->dest, sizeof(r->staging));
    } else if (st == SL_OK && dir_is(st_path, dev, ino)) {
        st = replace_adopt(r, st_path, err);
    } else if (st == SL_OK && sibling_find(r->dest, dev, ino, st_path, sizeof(st_path))) {
        /* A resume refused after it took the directory over renamed it. */
        st = replace_adopt(r, st_path, err);
    } else if (st == SL_OK) {
        st = sl_error_set(err, SL_ENOTFOUND, NULL,
                          "the directory where the earlier run wrote \"%s\" (\"%s\") is gone", dest,
                          staging);
    }
    if (st != SL_OK) {
        free(r);
        return NULL;
    }
    return r;
}

const char *
sl_fs_replace_path(const sl_fs_replace *r)
{
    return r->staging;
}

bool
sl_fs_replace_existed(const sl_fs_replace *r)
{
    return r->existed;
}

/* Swap r->staging and r->dest, both directories; the old node ends at
 * r->staging.  Two renames where the exchange is not supported. */
static sl_status
replace_swap(struct sl_fs_replace *r, struct sl_error *err)
{
    if (renameat2(AT_FDCWD, r->staging, AT_FDCWD, r->dest, RENAME_EXCHANGE) == 0)
        return SL_OK;
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
        return sl_error_set(err, SL_EIO, NULL, "cannot swap the new node into \"%s\": %s", r->given,
                            strerror(errno));
    char old[PATH_MAX];
    if ((size_t)snprintf(old, sizeof(old), "%s.old", r->staging) >= sizeof(old) ||
        rename(r->dest, old) != 0)
        return sl_error_set(err, SL_EIO, NULL, "cannot move the old node out of \"%s\": %s",
                            r->given, strerror(errno));
    if (rename(r->staging, r->dest) != 0) {
        int e = errno;
        (void)rename(old, r->dest);
        return sl_error_set(err, SL_EIO, NULL, "cannot move the new node into \"%s\": %s", r->given,
                            strerror(e));
    }
    (void)rename(old, r->staging);
    return SL_OK;
}

sl_status
sl_fs_replace_commit(sl_fs_replace *r, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (r->mode == SL_FS_REPLACE_IN_PLACE && r->existed) {
        free(r);
        return SL_OK;
    }
    struct stat sb;
    bool dir_there = stat(r->dest, &sb) == 0 && S_ISDIR(sb.st_mode);
    sl_status st;
    if (dir_there) {
        struct dir_census c;
        dir_census(r->dest, &c);
        if (!r->existed && c.n_entries > 0)
            st = sl_error_set(err, SL_EEXIST, NULL,
                              "\"%s\" was filled by someone else during the run; the new node "
                              "is not put there",
                              r->given);
        else
            st = replace_swap(r, err);
    } else if (rename(r->staging, r->dest) == 0) {
        st = SL_OK;
    } else {
        st = sl_error_set(err, errno == EEXIST || errno == ENOTEMPTY ? SL_EEXIST : SL_EIO, NULL,
                          "cannot move the new node into \"%s\": %s", r->given, strerror(errno));
    }
    /* After a swap r->staging holds the old node; after a failure, the new. */
    remove_quietly(r->staging);
    if (st != SL_OK)
        remove_made_parents(r);
    free(r);
    return st;
}

void
sl_fs_replace_keep(sl_fs_replace *r)
{
    free(r);
}

void
sl_fs_replace_abort(sl_fs_replace *r)
{
    if (r == NULL)
        return;
    if (!(r->mode == SL_FS_REPLACE_IN_PLACE && r->existed)) {
        remove_quietly(r->staging);
        remove_made_parents(r);
    }
    free(r);
}
