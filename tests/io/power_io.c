/* SPDX-License-Identifier: MIT */
/*
 * The power-loss model of power_io.h.
 *
 * DESIGN: paths under the root are kept relative to it.  `live` maps each
 * path to an inode (or -1 for a directory) as the running system sees it;
 * `durable` maps what a power cut keeps; `ops` lists, in call order, the
 * directory changes not yet made durable, each tagged with its directory.
 * fsync of a directory applies that directory's pending changes to
 * `durable`; fsync of a file copies its current bytes (read through the
 * descriptor) into its inode.  Sizes are those of a test (tens of paths),
 * so the maps are arrays searched linearly.
 */
#include "power_io.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PW_MAX_FD 4096
#define PW_DIR (-1)     /* the inode of a directory entry */
#define PW_UNKNOWN (-2) /* a file the model did not see made */

struct pw_entry {
    char *path; /* relative to the root */
    int ino;    /* inode, PW_DIR or PW_UNKNOWN */
};

struct pw_map {
    struct pw_entry *v;
    size_t n, cap;
};

struct pw_inode {
    uint8_t *data; /* content at the last fsync */
    size_t len;    /* its bytes */
    bool synced;   /* fsynced at least once */
};

/* A pending directory change. */
enum pw_op_kind { PW_LINK, PW_UNLINK, PW_RENAME };

struct pw_op {
    enum pw_op_kind kind;
    char *dir;  /* the directory changed */
    char *path; /* LINK, UNLINK: the entry; RENAME: the source */
    char *to;   /* RENAME: the target */
    int ino;    /* LINK, RENAME: what the entry names */
};

struct pw_fd {
    bool used;
    int ino;   /* file inode, PW_DIR or PW_UNKNOWN */
    char *dir; /* PW_DIR: its path */
};

struct sl_power_io {
    struct sl_io_table table;
    const struct sl_io_table *inner;
    pthread_mutex_t lock;
    char root[PATH_MAX];
    size_t root_len;
    struct pw_map live, durable;
    struct pw_inode *inodes;
    size_t n_inodes, cap_inodes;
    struct pw_op *ops;
    size_t n_ops, cap_ops;
    struct pw_fd fds[PW_MAX_FD];
    uint64_t cut_at;                        /* mutating call that cuts; 0: none */
    uint64_t n_dir_fsync_calls;             /* fsyncs of directories attempted */
    uint64_t dir_fsync_fail_at;             /* the one that fails; 0: none */
    void (*on_mkdir)(void *, const char *); /* see sl_power_io_on_mkdir */
    void *on_mkdir_arg;
    bool cut;
    struct sl_power_stats stats;
};

static void *
pw_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (q == NULL)
        abort(); /* a test helper: out of memory ends the test */
    return q;
}

static char *
pw_strdup(const char *s)
{
    char *d = strdup(s);
    if (d == NULL)
        abort();
    return d;
}

/* ---- maps -------------------------------------------------------------------------- */

static struct pw_entry *
map_find(struct pw_map *m, const char *path)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->v[i].path, path) == 0)
            return &m->v[i];
    return NULL;
}

static void
map_set(struct pw_map *m, const char *path, int ino)
{
    struct pw_entry *e = map_find(m, path);
    if (e != NULL) {
        e->ino = ino;
        return;
    }
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 64;
        m->v = pw_xrealloc(m->v, m->cap * sizeof(*m->v));
    }
    m->v[m->n++] = (struct pw_entry){pw_strdup(path), ino};
}

static void
map_remove(struct pw_map *m, const char *path)
{
    struct pw_entry *e = map_find(m, path);
    if (e == NULL)
        return;
    free(e->path);
    *e = m->v[--m->n];
}

static void
map_fini(struct pw_map *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->v[i].path);
    free(m->v);
    memset(m, 0, sizeof(*m));
}

static void
map_copy(struct pw_map *dst, const struct pw_map *src)
{
    memset(dst, 0, sizeof(*dst));
    for (size_t i = 0; i < src->n; i++)
        map_set(dst, src->v[i].path, src->v[i].ino);
}

/* ---- paths, inodes and pending changes ---------------------------------------------------- */

/* `path` relative to the root, or NULL when outside it. */
static const char *
pw_rel(const struct sl_power_io *p, const char *path)
{
    if (strncmp(path, p->root, p->root_len) != 0)
        return NULL;
    if (path[p->root_len] == '\0')
        return path + p->root_len;
    return path[p->root_len] == '/' ? path + p->root_len + 1 : NULL;
}

/* The directory holding `rel` ("" for the root's entries) into `out`. */
static void
pw_parent(const char *rel, char *out)
{
    const char *slash = strrchr(rel, '/');
    size_t n = slash != NULL ? (size_t)(slash - rel) : 0;
    memcpy(out, rel, n);
    out[n] = '\0';
}

static int
pw_new_inode(struct sl_power_io *p)
{
    if (p->n_inodes == p->cap_inodes) {
        p->cap_inodes = p->cap_inodes ? 2 * p->cap_inodes : 64;
        p->inodes = pw_xrealloc(p->inodes, p->cap_inodes * sizeof(*p->inodes));
    }
    p->inodes[p->n_inodes] = (struct pw_inode){NULL, 0, false};
    return (int)p->n_inodes++;
}

static void
pw_log(struct sl_power_io *p, enum pw_op_kind kind, const char *path, const char *to, int ino)
{
    if (p->n_ops == p->cap_ops) {
        p->cap_ops = p->cap_ops ? 2 * p->cap_ops : 64;
        p->ops = pw_xrealloc(p->ops, p->cap_ops * sizeof(*p->ops));
    }
    char dir[PATH_MAX];
    pw_parent(path, dir);
    p->ops[p->n_ops++] = (struct pw_op){kind, pw_strdup(dir), pw_strdup(path),
                                        to != NULL ? pw_strdup(to) : NULL, ino};
}

static void
op_apply(struct pw_map *m, const struct pw_op *op)
{
    switch (op->kind) {
    case PW_LINK:
        map_set(m, op->path, op->ino);
        break;
    case PW_UNLINK:
        map_remove(m, op->path);
        break;
    case PW_RENAME:
        map_remove(m, op->path);
        map_set(m, op->to, op->ino);
        break;
    }
}

static void
op_free(struct pw_op *op)
{
    free(op->dir);
    free(op->path);
    free(op->to);
}

/* fsync of directory `dir`: its pending changes become durable, in order. */
static void
pw_sync_dir(struct sl_power_io *p, const char *dir)
{
    size_t kept = 0;
    for (size_t i = 0; i < p->n_ops; i++) {
        if (strcmp(p->ops[i].dir, dir) == 0) {
            op_apply(&p->durable, &p->ops[i]);
            op_free(&p->ops[i]);
        } else {
            p->ops[kept++] = p->ops[i];
        }
    }
    p->n_ops = kept;
}

/* fsync of a file: its current bytes become its durable content.  The
 * descriptor may be write-only: the file is read through /proc/self/fd. */
static void
pw_sync_file(struct sl_power_io *p, int fd, int ino)
{
    if (ino < 0)
        return;
    char self[64];
    snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
    FILE *f = fopen(self, "rb");
    if (f == NULL)
        abort(); /* the model cannot see the file: its figures would be wrong */
    struct pw_inode *in = &p->inodes[ino];
    size_t cap = 4096, len = 0;
    uint8_t *data = pw_xrealloc(NULL, cap);
    size_t got;
    while ((got = fread(data + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap)
            data = pw_xrealloc(data, cap *= 2);
    }
    fclose(f);
    free(in->data);
    in->data = data;
    in->len = len;
    in->synced = true;
}

/* ---- the table ---------------------------------------------------------------------------- */

static struct sl_power_io *
pw_of(void *ctx)
{
    return ctx;
}

/* Count a mutating call; true when the power is (now) off. */
static bool
pw_mutating(struct sl_power_io *p)
{
    if (p->cut)
        return true;
    p->stats.n_mutating++;
    if (p->cut_at != 0 && p->stats.n_mutating == p->cut_at) {
        p->cut = true;
        p->stats.n_mutating--;
        p->stats.n_pending = p->n_ops;
    }
    return p->cut;
}

static int
pw_open(void *ctx, const char *path, int flags, unsigned mode)
{
    struct sl_power_io *p = pw_of(ctx);
    pthread_mutex_lock(&p->lock);
    bool writes = (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0;
    if (p->cut || (writes && pw_mutating(p))) {
        pthread_mutex_unlock(&p->lock);
        return -EIO;
    }
    int fd = p->inner->open(p->inner->ctx, path, flags, mode);
    const char *rel = fd >= 0 ? pw_rel(p, path) : NULL;
    if (rel != NULL && fd < PW_MAX_FD) {
        struct pw_entry *e = map_find(&p->live, rel);
        int ino = e != NULL ? e->ino : PW_UNKNOWN;
        if ((flags & O_DIRECTORY) != 0 || rel[0] == '\0')
            ino = PW_DIR;
        if ((flags & O_CREAT) != 0 && e == NULL) {
            ino = pw_new_inode(p);
            map_set(&p->live, rel, ino);
            pw_log(p, PW_LINK, rel, NULL, ino);
        }
        p->fds[fd] = (struct pw_fd){true, ino, ino == PW_DIR ? pw_strdup(rel) : NULL};
    }
    pthread_mutex_unlock(&p->lock);
    return fd;
}

static int
pw_close(void *ctx, int fd)
{
    struct sl_power_io *p = pw_of(ctx);
    pthread_mutex_lock(&p->lock);
    if (fd >= 0 && fd < PW_MAX_FD && p->fds[fd].used) {
        free(p->fds[fd].dir);
        p->fds[fd] = (struct pw_fd){false, 0, NULL};
    }
    bool cut = p->cut;
    pthread_mutex_unlock(&p->lock);
    int rc = p->inner->close(p->inner->ctx, fd); /* the descriptor goes either way */
    return cut ? -EIO : rc;
}

static int64_t
pw_pread(void *ctx, int fd, void *buf, size_t n, uint64_t off)
{
    struct sl_power_io *p = pw_of(ctx);
    if (sl_power_io_is_cut(p))
        return -EIO;
    return p->inner->pread(p->inner->ctx, fd, buf, n, off);
}

static int64_t
pw_write(void *ctx, int fd, const void *buf, size_t n)
{
    struct sl_power_io *p = pw_of(ctx);
    pthread_mutex_lock(&p->lock);
    bool cut = pw_mutating(p);
    pthread_mutex_unlock(&p->lock);
    if (cut)
        return -EIO;
    return p->inner->write(p->inner->ctx, fd, buf, n);
}

static int
pw_fsync(void *ctx, int fd)
{
    struct sl_power_io *p = pw_of(ctx);
    pthread_mutex_lock(&p->lock);
    if (pw_mutating(p)) {
        pthread_mutex_unlock(&p->lock);
        return -EIO;
    }
    if (fd >= 0 && fd < PW_MAX_FD && p->fds[fd].used) {
        if (p->fds[fd].ino == PW_DIR && ++p->n_dir_fsync_calls == p->dir_fsync_fail_at) {
            pthread_mutex_unlock(&p->lock);
            return -EIO;
        }
        if (p->fds[fd].ino == PW_DIR) {
            p->stats.n_dir_fsyncs++;
            pw_sync_dir(p, p->fds[fd].dir);
        } else {
            p->stats.n_file_fsyncs++;
            pw_sync_file(p, fd, p->fds[fd].ino);
        }
    }
    pthread_mutex_unlock(&p->lock);
    return 0; /* modelled: the page cache is all this test needs */
}

static int
pw_fstat(void *ctx, int fd, struct sl_io_stat *st)
{
    struct sl_power_io *p = pw_of(ctx);
    if (sl_power_io_is_cut(p))
        return -EIO;
    return p->inner->fstat(p->inner->ctx, fd, st);
}

static int
pw_lstat(void *ctx, const char *path, struct sl_io_stat *st)
{
    struct sl_power_io *p = pw_of(ctx);
    if (sl_power_io_is_cut(p))
        return -EIO;
    return p->inner->lstat(p->inner->ctx, path, st);
}

static int
pw_rename(void *ctx, const char *from, const char *to)
{
    struct sl_power_io *p = pw_of(ctx);
    pthread_mutex_lock(&p->lock);
    if (pw_mutating(p)) {
        pthread_mutex_unlock(&p->lock);
        return -EIO;
    }
    int rc = p->inner->rename(p->inner->ctx, from, to);
    const char *rf = pw_rel(p, from), *rt = pw_rel(p, to);
    if (rc == 0 && rf != NULL && rt != NULL) {
        struct pw_entry *e = map_find(&p->live, rf);
        int ino = e != NULL ? e->ino : PW_UNKNOWN;
        map_remove(&p->live, rf);
        map_set(&p->live, rt, ino);
        char df[PATH_MAX], dt[PATH_MAX];
        pw_parent(rf, df);
        pw_parent(rt, dt);
        if (strcmp(df, dt) == 0) {
            pw_log(p, PW_RENAME, rf, rt, ino);
        } else {
            pw_log(p, PW_UNLINK, rf, NULL, 0);
            pw_log(p, PW_LINK, rt, NULL, ino);
        }
    }
    pthread_mutex_unlock(&p->lock);
    return rc;
}

static int
pw_unlink(void *ctx, const char *path)
{
    struct sl_power_io *p = pw_of(ctx);
    pthread_mutex_lock(&p->lock);
    if (pw_mutating(p)) {
        pthread_mutex_unlock(&p->lock);
        return -EIO;
    }
    int rc = p->inner->unlink(p->inner->ctx, path);
    const char *rel = pw_rel(p, path);
    if (rc == 0 && rel != NULL) {
        map_remove(&p->live, rel);
        pw_log(p, PW_UNLINK, rel, NULL, 0);
    }
    pthread_mutex_unlock(&p->lock);
    return rc;
}

static int
pw_mkdir(void *ctx, const char *path, unsigned mode)
{
    struct sl_power_io *p = pw_of(ctx);
    pthread_mutex_lock(&p->lock);
    if (pw_mutating(p)) {
        pthread_mutex_unlock(&p->lock);
        return -EIO;
    }
    int rc = p->inner->mkdir(p->inner->ctx, path, mode);
    const char *rel = pw_rel(p, path);
    if (rc == 0 && rel != NULL) {
        map_set(&p->live, rel, PW_DIR);
        pw_log(p, PW_LINK, rel, NULL, PW_DIR);
    }
    void (*fn)(void *, const char *) = p->on_mkdir;
    void *arg = p->on_mkdir_arg;
    pthread_mutex_unlock(&p->lock);
    if (rc == 0 && fn != NULL)
        fn(arg, path);
    return rc;
}

static int
pw_realpath(void *ctx, const char *path, char *resolved, size_t size)
{
    struct sl_power_io *p = pw_of(ctx);
    if (sl_power_io_is_cut(p))
        return -EIO;
    return p->inner->realpath(p->inner->ctx, path, resolved, size);
}

static int
pw_list_dir(void *ctx, const char *path, sl_io_dir_fn *fn, void *arg)
{
    struct sl_power_io *p = pw_of(ctx);
    if (sl_power_io_is_cut(p))
        return -EIO;
    return p->inner->list_dir(p->inner->ctx, path, fn, arg);
}

/* ---- making the model ------------------------------------------------------------------- */

static struct sl_power_io *pw_scanning; /* nftw has no context argument */

static int
pw_scan(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)ftw;
    struct sl_power_io *p = pw_scanning;
    const char *rel = pw_rel(p, path);
    if (rel == NULL || rel[0] == '\0')
        return 0;
    if (flag == FTW_D || flag == FTW_DP) {
        map_set(&p->live, rel, PW_DIR);
        map_set(&p->durable, rel, PW_DIR);
        return 0;
    }
    if (!S_ISREG(st->st_mode))
        return 0;
    int ino = pw_new_inode(p);
    size_t len = 0;
    FILE *f = fopen(path, "rb");
    struct pw_inode *in = &p->inodes[ino];
    in->data = pw_xrealloc(NULL, (size_t)st->st_size + 1);
    if (f != NULL) {
        len = fread(in->data, 1, (size_t)st->st_size, f);
        fclose(f);
    }
    in->len = len;
    in->synced = true;
    map_set(&p->live, rel, ino);
    map_set(&p->durable, rel, ino);
    return 0;
}

struct sl_power_io *
sl_power_io_create(const char *root)
{
    struct sl_power_io *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return NULL;
    if (realpath(root, p->root) == NULL) {
        free(p);
        return NULL;
    }
    p->root_len = strlen(p->root);
    p->inner = sl_io_table_default();
    pthread_mutex_init(&p->lock, NULL);
    pw_scanning = p;
    nftw(p->root, pw_scan, 16, FTW_PHYS);
    pw_scanning = NULL;
    p->table = (struct sl_io_table){
        .ctx = p,
        .open = pw_open,
        .close = pw_close,
        .pread = pw_pread,
        .write = pw_write,
        .fsync = pw_fsync,
        .fstat = pw_fstat,
        .lstat = pw_lstat,
        .rename = pw_rename,
        .unlink = pw_unlink,
        .mkdir = pw_mkdir,
        .realpath = pw_realpath,
        .list_dir = pw_list_dir,
    };
    return p;
}

void
sl_power_io_destroy(struct sl_power_io *p)
{
    if (p == NULL)
        return;
    map_fini(&p->live);
    map_fini(&p->durable);
    for (size_t i = 0; i < p->n_inodes; i++)
        free(p->inodes[i].data);
    free(p->inodes);
    for (size_t i = 0; i < p->n_ops; i++)
        op_free(&p->ops[i]);
    free(p->ops);
    for (int fd = 0; fd < PW_MAX_FD; fd++)
        free(p->fds[fd].dir);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

const struct sl_io_table *
sl_power_io_table(struct sl_power_io *p)
{
    return &p->table;
}

void
sl_power_io_cut_at(struct sl_power_io *p, uint64_t at)
{
    pthread_mutex_lock(&p->lock);
    p->cut_at = p->stats.n_mutating + at;
    pthread_mutex_unlock(&p->lock);
}

bool
sl_power_io_is_cut(struct sl_power_io *p)
{
    pthread_mutex_lock(&p->lock);
    bool cut = p->cut;
    pthread_mutex_unlock(&p->lock);
    return cut;
}

void
sl_power_io_fail_dir_fsync(struct sl_power_io *p, uint64_t at)
{
    pthread_mutex_lock(&p->lock);
    p->dir_fsync_fail_at = p->n_dir_fsync_calls + at;
    pthread_mutex_unlock(&p->lock);
}

void
sl_power_io_on_mkdir(struct sl_power_io *p, void (*fn)(void *arg, const char *path), void *arg)
{
    pthread_mutex_lock(&p->lock);
    p->on_mkdir = fn;
    p->on_mkdir_arg = arg;
    pthread_mutex_unlock(&p->lock);
}

void
sl_power_io_stats(struct sl_power_io *p, struct sl_power_stats *out)
{
    pthread_mutex_lock(&p->lock);
    *out = p->stats;
    if (!p->cut)
        out->n_pending = p->n_ops;
    pthread_mutex_unlock(&p->lock);
}

/* ---- after the cut ---------------------------------------------------------------------- */

static uint64_t
pw_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static size_t
pw_depth(const char *path)
{
    size_t d = 0;
    for (; *path != '\0'; path++)
        d += *path == '/';
    return d;
}

static int
pw_entry_cmp(const void *a, const void *b)
{
    const struct pw_entry *x = a, *y = b;
    size_t dx = pw_depth(x->path), dy = pw_depth(y->path);
    if (dx != dy)
        return dx < dy ? -1 : 1;
    return strcmp(x->path, y->path);
}

/* The name `rel` has after the reboot: temporary files carry `dead_pid`. */
static void
pw_final_name(const char *rel, long dead_pid, char *out, size_t size)
{
    char dir[PATH_MAX];
    pw_parent(rel, dir);
    const char *base = rel + strlen(dir) + (dir[0] != '\0');
    const char *seq = NULL;
    if (strncmp(base, ".sluice-tmp.", 12) == 0)
        seq = strchr(base + 12, '.');
    if (seq == NULL)
        snprintf(out, size, "%s", rel);
    else
        snprintf(out, size, "%s%s.sluice-tmp.%ld%s", dir, dir[0] != '\0' ? "/" : "", dead_pid, seq);
}

/* Apply a random prefix of each directory's pending changes to `m`. */
static uint64_t
pw_keep_some(struct sl_power_io *p, struct pw_map *m, uint64_t *rng)
{
    uint64_t kept = 0;
    bool *done = calloc(p->n_ops + 1, sizeof(bool));
    if (done == NULL)
        abort();
    for (size_t i = 0; i < p->n_ops; i++) {
        if (done[i])
            continue;
        size_t n = 0;
        for (size_t j = i; j < p->n_ops; j++)
            n += strcmp(p->ops[j].dir, p->ops[i].dir) == 0;
        size_t take = (size_t)(pw_rand(rng) % (n + 1));
        for (size_t j = i; j < p->n_ops; j++) {
            if (done[j] || strcmp(p->ops[j].dir, p->ops[i].dir) != 0)
                continue;
            done[j] = true;
            if (take > 0) {
                op_apply(m, &p->ops[j]);
                take--;
                kept++;
            }
        }
    }
    free(done);
    return kept;
}

int
sl_power_io_materialize(struct sl_power_io *p, const char *dst, sl_power_keep keep, uint64_t *rng,
                        long dead_pid)
{
    pthread_mutex_lock(&p->lock);
    struct pw_map m;
    map_copy(&m, &p->durable);
    p->stats.n_pending_kept = keep == SL_POWER_KEEP_SOME ? pw_keep_some(p, &m, rng) : 0;
    p->stats.n_unsynced = 0;
    qsort(m.v, m.n, sizeof(*m.v), pw_entry_cmp);
    struct pw_map made = {0}; /* directories made, so children know their parent exists */
    int rc = 0;
    for (size_t i = 0; i < m.n && rc == 0; i++) {
        char parent[PATH_MAX], name[PATH_MAX], path[2 * PATH_MAX];
        pw_parent(m.v[i].path, parent);
        if (parent[0] != '\0' && map_find(&made, parent) == NULL)
            continue; /* its directory did not survive */
        pw_final_name(m.v[i].path, dead_pid, name, sizeof(name));
        snprintf(path, sizeof(path), "%s/%s", dst, name);
        if (m.v[i].ino == PW_DIR) {
            rc = mkdir(path, 0777) == 0 ? 0 : -errno;
            map_set(&made, m.v[i].path, PW_DIR);
            continue;
        }
        const struct pw_inode *in = m.v[i].ino >= 0 ? &p->inodes[m.v[i].ino] : NULL;
        bool synced = in != NULL && in->synced;
        p->stats.n_unsynced += !synced;
        FILE *f = fopen(path, "wb");
        if (f == NULL)
            rc = -errno;
        else if (synced && in->len > 0 && fwrite(in->data, 1, in->len, f) != in->len)
            rc = -EIO;
        if (f != NULL && fclose(f) != 0 && rc == 0)
            rc = -EIO;
    }
    map_fini(&made);
    map_fini(&m);
    pthread_mutex_unlock(&p->lock);
    return rc;
}
