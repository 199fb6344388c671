/* SPDX-License-Identifier: MIT */
/*
 * Child processes of the graph benchmarks (bench_proc.h): spawn with
 * stdout captured and cost by wait4(), the lines they print, medians,
 * removing outputs, and the demo input made by `sluice generate`.
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "bench_proc.h"

/* See bench_proc_rss_at_fork. */
static double parent_rss_at_fork;

void
bench_proc_die(const char *what)
{
    fprintf(stderr, "%s: %s\n", program_invocation_short_name, what);
    exit(1);
}

/* This process's resident set now, MiB (VmRSS), or 0. */
static double
self_rss_mib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kib = 0;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = atof(line + 6);
    if (f != NULL)
        fclose(f);
    return kib / 1024.0;
}

double
bench_proc_rss_at_fork(void)
{
    return parent_rss_at_fork;
}

/* Read the child's stdout from `fd` into `out` (NULL: discard) until EOF. */
static void
lines_read(int fd, struct bench_proc_lines *out)
{
    char buf[1024];
    ssize_t n;
    if (out != NULL)
        out->len = 0;
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        if (out != NULL && out->len + (size_t)n < sizeof(out->text)) {
            memcpy(out->text + out->len, buf, (size_t)n);
            out->len += (size_t)n;
        }
    }
    if (out != NULL)
        out->text[out->len] = '\0';
}

int
bench_proc_spawn(char *const argv[], struct bench_proc_lines *out, struct bench_proc_cost *c)
{
    double rss = self_rss_mib();
    parent_rss_at_fork = rss > parent_rss_at_fork ? rss : parent_rss_at_fork;
    int fd[2];
    if (pipe(fd) != 0)
        bench_proc_die("pipe failed");
    double t0 = sl_bench_now();
    pid_t pid = fork();
    if (pid < 0)
        bench_proc_die("fork failed");
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        close(fd[0]);
        close(fd[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    lines_read(fd[0], out);
    close(fd[0]);
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid)
        bench_proc_die("wait4 failed");
    c->wall_s = sl_bench_now() - t0;
    c->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    c->rss_mib = (double)ru.ru_maxrss / 1024.0;
    c->faults = (double)ru.ru_minflt + (double)ru.ru_majflt;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

double
bench_proc_value(const struct bench_proc_lines *l, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = l->text; p != NULL && *p != '\0';) {
        if (strncmp(p, name, n) == 0 && p[n] == ':')
            return atof(p + n + 1);
        p = strchr(p, '\n');
        p = p != NULL ? p + 1 : NULL;
    }
    return -1;
}

void
bench_proc_notes(const struct bench_proc_lines *l)
{
    for (const char *p = l->text; p != NULL && *p != '\0';) {
        const char *end = strchr(p, '\n');
        size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
        if (p[0] == '#')
            printf("%.*s\n", (int)n, p);
        p = end != NULL ? end + 1 : NULL;
    }
    fflush(stdout);
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double
bench_proc_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return v[n / 2];
}

struct bench_proc_cost
bench_proc_median_cost(const struct bench_proc_cost *c, int n)
{
    double w[16], u[16], r[16], f[16];
    for (int i = 0; i < n; i++)
        w[i] = c[i].wall_s, u[i] = c[i].cpu_s, r[i] = c[i].rss_mib, f[i] = c[i].faults;
    return (struct bench_proc_cost){bench_proc_median(w, n), bench_proc_median(u, n),
                                    bench_proc_median(r, n), bench_proc_median(f, n)};
}

void
bench_proc_report_cost(const char *prefix, const struct bench_proc_cost *c)
{
    char name[160];
    snprintf(name, sizeof(name), "%s_wall", prefix);
    sl_bench_report(name, c->wall_s, "s");
    snprintf(name, sizeof(name), "%s_cpu", prefix);
    sl_bench_report(name, c->cpu_s, "s");
    if (c->rss_mib < 0)
        return;
    snprintf(name, sizeof(name), "%s_peak_rss", prefix);
    sl_bench_report(name, c->rss_mib, "MiB");
}

int
bench_proc_reps(int argc, char **argv, int max)
{
    const char *reps_env = getenv("REPS");
    int reps = argc > 1 ? atoi(argv[1]) : reps_env != NULL ? atoi(reps_env) : 3;
    return reps < 1 || reps > max ? 3 : reps;
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void
bench_proc_rm_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
        bench_proc_die("cannot remove an earlier output");
}

void
bench_proc_demo_raw(const char *sluice, const char *dir)
{
    char raw[4096], meta[4096], partial[4096];
    snprintf(raw, sizeof(raw), "%s/raw.zarr", dir);
    snprintf(meta, sizeof(meta), "%s/raw.zarr/.zarray", dir);
    snprintf(partial, sizeof(partial), "%s/raw.zarr.partial", dir);
    if (access(meta, F_OK) == 0)
        return;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        bench_proc_die("cannot make the data directory");
    bench_proc_rm_tree(partial);
    bench_proc_rm_tree(raw);
    char *argv[] = {(char *)sluice, "generate",       partial,    "--shape", "2,2,32,1024,1024",
                    "--chunks",     "1,1,32,256,256", "--format", "v2",      "--codec",
                    "zstd:1",       "--no-progress",  NULL};
    struct bench_proc_cost c;
    if (bench_proc_spawn(argv, NULL, &c) != 0 || rename(partial, raw) != 0)
        bench_proc_die("sluice generate could not make the raw");
    printf("# raw generated by sluice generate in %.2f s\n", c.wall_s);
}
