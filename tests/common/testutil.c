/* SPDX-License-Identifier: MIT */
/*
 * Test helpers: the failing allocator, scratch directories, fixture lookup.
 */
#include "testutil.h"

#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Guards the counters of every sl_test_alloc: graph runs allocate from
 * several workers at once. */
static pthread_mutex_t test_alloc_lock = PTHREAD_MUTEX_INITIALIZER;

static void *
test_alloc_alloc(void *ctx, size_t n, size_t align)
{
    struct sl_test_alloc *s = ctx;
    pthread_mutex_lock(&test_alloc_lock);
    s->n_calls++;
    bool fail = s->fail_at != 0 && s->n_calls == s->fail_at;
    s->n_failed += fail;
    pthread_mutex_unlock(&test_alloc_lock);
    if (fail)
        return NULL;
    struct sl_allocator def = sl_allocator_default();
    void *p = def.alloc(NULL, n, align);
    if (p != NULL) {
        pthread_mutex_lock(&test_alloc_lock);
        s->n_live++;
        s->live_bytes += n;
        if (s->live_bytes > s->peak_bytes)
            s->peak_bytes = s->live_bytes;
        pthread_mutex_unlock(&test_alloc_lock);
    }
    return p;
}

static void
test_alloc_free(void *ctx, void *p, size_t n)
{
    struct sl_test_alloc *s = ctx;
    if (p == NULL)
        return;
    pthread_mutex_lock(&test_alloc_lock);
    s->n_live--;
    s->live_bytes -= n;
    pthread_mutex_unlock(&test_alloc_lock);
    free(p);
}

struct sl_allocator
sl_test_alloc_make(struct sl_test_alloc *state)
{
    return (struct sl_allocator){.ctx = state, .alloc = test_alloc_alloc, .free = test_alloc_free};
}

static int
rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void
sl_test_rmtree(const char *path)
{
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

bool
sl_test_takes_direct(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/.sluice-direct-probe", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_DIRECT, 0600);
    if (fd >= 0)
        close(fd);
    unlink(path);
    return fd >= 0;
}

const char *
sl_test_tmpdir(const char *tag)
{
    static char path[4096];
    const char *base = getenv("TMPDIR");
    if (base == NULL || base[0] == '\0')
        base = "/tmp";
    snprintf(path, sizeof(path), "%s/sluice-test-%s-%ld-XXXXXX", base, tag, (long)getpid());
    if (mkdtemp(path) == NULL) {
        /* No criterion here: the plain runner of ThreadSanitizer builds links this too. */
        fprintf(stderr, "cannot make a scratch directory under %s\n", base);
        abort();
    }
    return path;
}

const char *
sl_test_tmpdir_ram(const char *tag)
{
    static char path[4096];
    const char *base = "/dev/shm";
    struct stat st;
    if (stat(base, &st) != 0 || !S_ISDIR(st.st_mode) || access(base, W_OK | X_OK) != 0)
        return sl_test_tmpdir(tag);
    snprintf(path, sizeof(path), "%s/sluice-test-%s-%ld-XXXXXX", base, tag, (long)getpid());
    if (mkdtemp(path) == NULL)
        return sl_test_tmpdir(tag);
    return path;
}

const char *
sl_test_fixtures_dir(void)
{
    const char *dir = getenv("SL_FIXTURES_DIR");
    struct stat st;
    if (dir == NULL || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return NULL;
    return dir;
}

void *
sl_test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf != NULL) {
        buf[n] = '\0';
        *len = (size_t)n;
    }
    return buf;
}
