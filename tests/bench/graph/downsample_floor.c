/* SPDX-License-Identifier: MIT */
/*
 * The zstd floor, the cold read and the profile of bench_graph_downsample
 * (see downsample_floor.h).
 */
#include "downsample_floor.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zstd.h>

#include "bench.h"

const char *const profile_names[PROFILE_N] = {
    "zstd_decode",           "zstd_encode", "reduction",  "copies",
    "alloc_and_page_faults", "file_io",     "scheduling", "other",
};

/* Call fn(path, arg) for every regular file below `dir`, recursively;
 * files whose name begins with '.' (Zarr metadata) only when `all`. */
static int
walk_files(const char *dir, bool all, int (*fn)(const char *path, void *arg), void *arg)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "bench_graph_downsample: cannot open %s\n", dir);
        return -1;
    }
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode))
            rc = walk_files(path, all, fn, arg);
        else if (S_ISREG(st.st_mode) && (all || e->d_name[0] != '.'))
            rc = fn(path, arg);
    }
    closedir(d);
    return rc;
}

/* Append the file at `path` to the floor_chunks `arg`. */
static int
load_one(const char *path, void *arg)
{
    struct floor_chunks *c = arg;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    size_t got = buf != NULL ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    unsigned char **data = realloc(c->data, (c->n + 1) * sizeof(*data));
    size_t *size = data != NULL ? realloc(c->size, (c->n + 1) * sizeof(*size)) : NULL;
    if (data != NULL)
        c->data = data;
    if (size != NULL)
        c->size = size;
    if (buf == NULL || got != (size_t)n || data == NULL || size == NULL) {
        free(buf);
        fprintf(stderr, "bench_graph_downsample: cannot read %s\n", path);
        return -1;
    }
    c->data[c->n] = buf;
    c->size[c->n] = got;
    c->n++;
    c->bytes += got;
    return 0;
}

int
floor_load(const char *dir, struct floor_chunks *c)
{
    memset(c, 0, sizeof(*c));
    return walk_files(dir, false, load_one, c);
}

void
floor_free(struct floor_chunks *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->data[i]);
    free(c->data);
    free(c->size);
    memset(c, 0, sizeof(*c));
}

/* One floor thread's share: chunks k, k + step, k + 2 step, ... */
struct floor_job {
    const struct floor_chunks *c;
    size_t first, step;
    double share;
    int failed;
};

static void *
floor_thread(void *arg)
{
    struct floor_job *j = arg;
    ZSTD_DCtx *d = ZSTD_createDCtx();
    ZSTD_CCtx *e = ZSTD_createCCtx();
    void *raw = NULL, *packed = NULL;
    size_t raw_cap = 0, packed_cap = 0;
    for (size_t i = j->first; i < j->c->n && d != NULL && e != NULL; i += j->step) {
        unsigned long long n = ZSTD_getFrameContentSize(j->c->data[i], j->c->size[i]);
        if (n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN) {
            j->failed = 1;
            break;
        }
        if (n > raw_cap) {
            free(raw);
            raw_cap = (size_t)n;
            raw = malloc(raw_cap);
        }
        size_t part = (size_t)((double)n * j->share);
        if (ZSTD_compressBound(part) > packed_cap) {
            free(packed);
            packed_cap = ZSTD_compressBound(part);
            packed = malloc(packed_cap);
        }
        if (raw == NULL || packed == NULL ||
            ZSTD_isError(ZSTD_decompressDCtx(d, raw, raw_cap, j->c->data[i], j->c->size[i])) ||
            ZSTD_isError(ZSTD_compressCCtx(e, packed, packed_cap, raw, part, 1))) {
            j->failed = 1;
            break;
        }
    }
    j->failed |= d == NULL || e == NULL;
    ZSTD_freeDCtx(d);
    ZSTD_freeCCtx(e);
    free(raw);
    free(packed);
    return NULL;
}

int
floor_run(const struct floor_chunks *c, int threads, double share, double *wall_s, double *cpu_s)
{
    pthread_t t[16];
    struct floor_job jobs[16];
    if (threads < 1 || threads > 16)
        threads = 2;
    double w0 = sl_bench_now(), c0 = sl_bench_cpu();
    for (int k = 0; k < threads; k++) {
        jobs[k] =
            (struct floor_job){.c = c, .first = (size_t)k, .step = (size_t)threads, .share = share};
        if (pthread_create(&t[k], NULL, floor_thread, &jobs[k]) != 0)
            return -1;
    }
    int failed = 0;
    for (int k = 0; k < threads; k++) {
        pthread_join(t[k], NULL);
        failed |= jobs[k].failed;
    }
    *wall_s = sl_bench_now() - w0;
    *cpu_s = sl_bench_cpu() - c0;
    if (failed)
        fprintf(stderr, "bench_graph_downsample: a chunk is not a zstd frame of known size\n");
    return failed ? -1 : 0;
}

/* Write back and drop the cached pages of the file at `path`. */
static int
evict_one(const char *path, void *arg)
{
    (void)arg;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    (void)fdatasync(fd);
    int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    return rc == 0 ? 0 : -1;
}

int
floor_evict(const char *dir)
{
    int rc = walk_files(dir, true, evict_one, NULL);
    if (rc != 0)
        fprintf(stderr, "bench_graph_downsample: posix_fadvise(DONTNEED) refused under %s\n", dir);
    return rc;
}

/* Read the file at `path` whole, adding its length to *(uint64_t *)arg. */
static int
read_one(const char *path, void *arg)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    static char buf[1 << 20];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0)
        *(uint64_t *)arg += (uint64_t)n;
    close(fd);
    return n < 0 ? -1 : 0;
}

int
floor_cold_read(const char *dir, double *seconds, uint64_t *bytes)
{
    *bytes = 0;
    if (floor_evict(dir) != 0)
        return -1;
    double t0 = sl_bench_now();
    int rc = walk_files(dir, true, read_one, bytes);
    *seconds = sl_bench_now() - t0;
    return rc;
}

/* Words of zstd's decoding functions' names. */
static const char *const zstd_decode_words[] = {
    "decompress", "decode",     "DCtx",        "DDict",        "FSETable", "readDTable",
    "readStats",  "readNCount", "FrameHeader", "execSequence", NULL};

static bool
zstd_is_decode(const char *name)
{
    for (int i = 0; zstd_decode_words[i] != NULL; i++)
        if (strstr(name, zstd_decode_words[i]) != NULL)
            return true;
    return false;
}

/* libzstd's exported functions by address: Debian strips its static ones,
 * so perf names a sample in them by address only, and the nearest exported
 * function below it (compression and decompression are separate objects,
 * laid out apart) tells which side it is on. */
struct zstd_sym {
    unsigned long addr;
    bool decode;
};
static struct zstd_sym *zstd_syms;
static size_t n_zstd_syms;

static int
zstd_sym_cmp(const void *a, const void *b)
{
    unsigned long x = ((const struct zstd_sym *)a)->addr, y = ((const struct zstd_sym *)b)->addr;
    return x < y ? -1 : x > y;
}

/* The path of the libzstd this process maps (the one sluice loads too), or
 * "" (/proc/self/maps). */
static void
zstd_path(char *out, size_t size)
{
    out[0] = '\0';
    FILE *m = fopen("/proc/self/maps", "r");
    char line[4400];
    while (m != NULL && out[0] == '\0' && fgets(line, sizeof(line), m) != NULL) {
        char *path = strchr(line, '/');
        if (path != NULL && strstr(path, "libzstd") != NULL) {
            path[strcspn(path, "\n")] = '\0';
            snprintf(out, size, "%s", path);
        }
    }
    if (m != NULL)
        fclose(m);
}

static void
zstd_syms_load(void)
{
    char lib[4096], cmd[4200];
    zstd_path(lib, sizeof(lib));
    if (n_zstd_syms > 0 || lib[0] == '\0')
        return;
    snprintf(cmd, sizeof(cmd), "nm -D --defined-only '%s' 2>/dev/null", lib);
    FILE *p = popen(cmd, "r");
    char line[512];
    while (p != NULL && fgets(line, sizeof(line), p) != NULL) {
        unsigned long addr;
        char type, name[400];
        if (sscanf(line, "%lx %c %399s", &addr, &type, name) != 3 || (type != 'T' && type != 't'))
            continue;
        struct zstd_sym *grown = realloc(zstd_syms, (n_zstd_syms + 1) * sizeof(*grown));
        if (grown == NULL)
            break;
        zstd_syms = grown;
        zstd_syms[n_zstd_syms++] = (struct zstd_sym){addr, zstd_is_decode(name)};
    }
    if (p != NULL)
        pclose(p);
    qsort(zstd_syms, n_zstd_syms, sizeof(*zstd_syms), zstd_sym_cmp);
}

/* Whether the zstd sample `sym` (a name, or "0x<address>") decodes. */
static bool
zstd_sample_decodes(const char *sym)
{
    if (strncmp(sym, "0x", 2) != 0)
        return zstd_is_decode(sym);
    unsigned long a = strtoul(sym, NULL, 16);
    size_t lo = 0, hi = n_zstd_syms;
    while (lo < hi) { /* the first exported function above `a` */
        size_t mid = (lo + hi) / 2;
        if (zstd_syms[mid].addr <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && zstd_syms[lo - 1].decode;
}

/* The category of a sampled function `sym` in object `dso`, in the kernel
 * when `kernel` (whose copies are the page cache's: file I/O). */
static int
profile_class(const char *dso, const char *sym, bool kernel)
{
    static const char *const reduce[] = {"mean_",      "min_",    "max_",       "stride_",
                                         "median_",    "mode_",   "reduce_",    "order_",
                                         "block_rows", "sl__ds_", "downsample", NULL};
    static const char *const copy[] = {"memcpy", "memmove", "walk_copy", "_copy", NULL};
    static const char *const mem[] = {"malloc", "free",  "calloc", "realloc",   "_int_", "mmap",
                                      "munmap", "page",  "fault",  "clear_",    "folio", "lru",
                                      "zap_",   "vma",   "memcg",  "mas_",      "mm_",   "pte",
                                      "memset", "alloc", "brk",    "anonymous", NULL};
    static const char *const fileio[] = {
        "filemap", "ext4",   "jbd2",  "vfs_",   "ksys_",     "iter",  "read",     "write",
        "fsync",   "rename", "open",  "path_",  "dentry",    "d_",    "iomap",    "blk_",
        "bio",     "inode",  "link_", "lookup", "copy_user", "statx", "getdents", NULL};
    static const char *const sched[] = {
        "futex", "schedule", "switch", "wake", "pthread_cond", "pthread_mutex", "sched", "spin",
        "ck_",   "sl__pool", "steal",  "idle", "nanosleep",    "epoll",         "poll",  NULL};
    static const char *const none[] = {NULL};
    if (strstr(dso, "zstd") != NULL)
        return zstd_sample_decodes(sym) ? PROFILE_ZSTD_DECODE : PROFILE_ZSTD_ENCODE;
    const struct {
        const char *const *words;
        int cls;
    } order[] = {{kernel ? none : reduce, PROFILE_REDUCTION},
                 {kernel ? none : copy, PROFILE_COPIES},
                 {sched, PROFILE_SCHEDULING},
                 {fileio, PROFILE_FILE_IO},
                 {mem, PROFILE_ALLOC_FAULTS}};
    for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++)
        for (int i = 0; order[k].words[i] != NULL; i++)
            if (strstr(sym, order[k].words[i]) != NULL)
                return order[k].cls;
    return PROFILE_OTHER;
}

int
profile_run(char *const argv[], double share[PROFILE_N])
{
    char data[] = "/tmp/sluice-bench-perf-XXXXXX";
    int fd = mkstemp(data);
    if (fd < 0)
        return -1;
    close(fd);
    char *rec[64] = {"perf", "record", "-q", "-F", "1999", "-o", data, "--"};
    int n = 8;
    for (int i = 0; argv[i] != NULL && n < 63; i++)
        rec[n++] = argv[i];
    rec[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        execvp("perf", rec);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr,
                "bench_graph_downsample: perf record failed or is missing (exit %d): no "
                "profile\n",
                WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        unlink(data);
        return -1;
    }
    zstd_syms_load();
    char cmd[256];
    snprintf(cmd, sizeof(cmd),
             "perf report -i %s --stdio -q --sort dso,sym --percent-limit 0 2>/dev/null", data);
    FILE *p = popen(cmd, "r");
    double total = 0;
    for (int k = 0; k < PROFILE_N; k++)
        share[k] = 0;
    char line[1024];
    while (p != NULL && fgets(line, sizeof(line), p) != NULL) {
        /* "    12.34%  libzstd.so.1.5.4  [.] ZSTD_decompressBlock_internal" */
        double pct;
        char dso[256], kind[8], sym[512];
        if (sscanf(line, " %lf%% %255s %7s %511s", &pct, dso, kind, sym) != 4)
            continue;
        share[profile_class(dso, sym, strcmp(kind, "[k]") == 0)] += pct;
        total += pct;
    }
    int rc = p != NULL ? pclose(p) : -1;
    unlink(data);
    if (rc != 0 || total <= 0) {
        fprintf(stderr, "bench_graph_downsample: perf report gave no samples: no profile\n");
        return -1;
    }
    for (int k = 0; k < PROFILE_N; k++)
        share[k] /= total;
    return 0;
}
