/* SPDX-License-Identifier: MIT */
/*
 * The helpers of bench_remote.h: peer_remote.py's commands run through
 * popen, a server helper kept as a child until stopped, and a child's
 * wall time and peak RSS from wait4.
 */
#include "bench_remote.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

static const char *g_prog = "bench", *g_root = ".";

bool
bench_remote_init(const char *prog, const char **root, const char **exe, const char **dir)
{
    g_prog = prog;
    *dir = getenv("SL_BENCH_DATA");
    if (*dir == NULL || (*dir)[0] == '\0')
        *dir = "/tmp/sluice-bench-data";
    *root = getenv("SL_BENCH_SOURCE_ROOT");
    *exe = getenv("SL_SLUICE_EXE");
    if (*root == NULL || *exe == NULL) {
        fprintf(stderr,
                "%s: needs SL_BENCH_SOURCE_ROOT and SL_SLUICE_EXE (run via "
                "tests/bench/run.sh); skipped\n",
                prog);
        return false;
    }
    g_root = *root;
    return true;
}

int
bench_reps(int argc, char **argv, int dflt)
{
    int reps = argc > 1 ? atoi(argv[1]) : dflt;
    return reps < 1 ? dflt : reps;
}

void
bench_remote_fail(const char *what)
{
    fprintf(stderr, "%s: %s\n", g_prog, what);
    exit(1);
}

void
bench_remote_die(const char *what, const struct sl_error *err)
{
    char line[512];
    sl_error_format(err, line, sizeof(line));
    fprintf(stderr, "%s: %s: %s\n", g_prog, what, line);
    exit(1);
}

void
bench_report_tagged(const char *tag, const char *name, double v, const char *unit)
{
    char full[128];
    snprintf(full, sizeof(full), "%s_%s", tag, name);
    sl_bench_report(full, v, unit);
}

void
bench_shell(const char *cmd, const char *what)
{
    if (system(cmd) != 0)
        bench_remote_fail(what != NULL ? what : cmd);
}

void
bench_generate_once(const char *exe, const char *path, const char *opts)
{
    char cmd[8192];
    struct stat st;
    if (stat(path, &st) == 0)
        return;
    snprintf(cmd, sizeof(cmd), "%s generate %s %s --no-progress >/dev/null", exe, path, opts);
    bench_shell(cmd, NULL);
}

double
bench_lines_get(const struct bench_lines *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->name[i], name) == 0)
            return l->value[i];
    return -1;
}

double
bench_lines_need(const struct bench_lines *l, const char *name, const char *what)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->name[i], name) == 0)
            return l->value[i];
    fprintf(stderr, "%s: %s printed no \"%s\"\n", g_prog, what, name);
    exit(1);
}

void
bench_helper_run(const char *cmd, const char *prefix, struct bench_lines *l)
{
    FILE *f = popen(cmd, "r");
    if (f == NULL)
        bench_remote_fail(cmd);
    l->n = 0;
    char line[512], name[64], unit[32];
    double v;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "%63[a-z_0-9]: %lf %31s", name, &v, unit) < 2 || l->n == 32)
            continue;
        snprintf(l->name[l->n], sizeof(l->name[0]), "%s", name);
        l->value[l->n++] = v;
        if (prefix != NULL)
            printf("%s%s: %.4g %s\n", prefix, name, v, unit);
    }
    fflush(stdout);
    if (pclose(f) != 0) {
        fprintf(stderr, "%s: failed: %s\n", g_prog, cmd);
        exit(1);
    }
}

void
bench_peer_cmd(char *cmd, size_t size, const char *args)
{
    snprintf(cmd, size, "/usr/bin/python3 %s/tests/bench/io/peer_remote.py %s", g_root, args);
}

void
bench_server_start(struct bench_server *s, const char *args, int n_words, const char *why_not)
{
    char cmd[1024], exec_cmd[1100], line[1200];
    bench_peer_cmd(cmd, sizeof(cmd), args);
    snprintf(exec_cmd, sizeof(exec_cmd), "exec %s", cmd); /* the helper is our child */
    s->f = popen(exec_cmd, "r");
    s->n_words = 0;
    if (s->f == NULL || fgets(line, sizeof(line), s->f) == NULL)
        bench_remote_fail(why_not);
    int off = 0, used;
    if (sscanf(line, "%d%n", &s->pid, &used) != 1)
        bench_remote_fail(why_not);
    off += used;
    while (s->n_words < n_words && s->n_words < 4 &&
           sscanf(line + off, " %255s%n", s->word[s->n_words], &used) == 1) {
        s->n_words++;
        off += used;
    }
    if (s->n_words != n_words)
        bench_remote_fail(why_not);
}

void
bench_server_stop(struct bench_server *s)
{
    if (s->f == NULL)
        return;
    kill(s->pid, SIGTERM);
    pclose(s->f);
    s->f = NULL;
}

void
bench_http_start(struct bench_server *s, const char *dir)
{
    char args[4200];
    snprintf(args, sizeof(args), "serve %s", dir);
    bench_server_start(s, args, 3, "nginx did not start (nginx-light installed?)");
}

static void
proxy_do(const char *what, const char *control, struct bench_lines *l)
{
    char cmd[1024], args[512];
    snprintf(args, sizeof(args), "%s %s", what, control);
    bench_peer_cmd(cmd, sizeof(cmd), args);
    bench_helper_run(cmd, NULL, l);
}

void
bench_proxy_delay(const char *control, double ms)
{
    char cmd[1024], args[512];
    struct bench_lines l;
    snprintf(args, sizeof(args), "delay %s %g", control, ms);
    bench_peer_cmd(cmd, sizeof(cmd), args);
    bench_helper_run(cmd, NULL, &l);
}

void
bench_proxy_clear(const char *control)
{
    struct bench_lines l;
    proxy_do("clear", control, &l);
}

void
bench_proxy_log(const char *control, struct bench_lines *l)
{
    proxy_do("log", control, l);
}

void
bench_proxy_totals(const char *control, struct bench_proxy_totals *t)
{
    struct bench_lines l;
    bench_proxy_log(control, &l);
    static const char *const what = "the proxy's log";
    t->requests = bench_lines_need(&l, "requests", what);
    t->get = bench_lines_need(&l, "get", what);
    t->put = bench_lines_need(&l, "put", what);
    t->other = bench_lines_need(&l, "other", what);
    t->bytes = bench_lines_need(&l, "bytes", what);
    t->req_bytes = bench_lines_need(&l, "req_bytes", what);
    t->get_max_open = bench_lines_need(&l, "get_max_open", what);
    t->put_max_open = bench_lines_need(&l, "put_max_open", what);
    t->get_busy = bench_lines_need(&l, "get_busy", what);
    t->put_busy = bench_lines_need(&l, "put_busy", what);
}

double
bench_bandwidth(const char *dir, const char *url)
{
    char cmd[1024], args[768];
    struct bench_lines l;
    snprintf(args, sizeof(args), "bandwidth %s %s 3", dir, url);
    bench_peer_cmd(cmd, sizeof(cmd), args);
    bench_helper_run(cmd, NULL, &l);
    return bench_lines_need(&l, "bandwidth", cmd);
}

double
bench_child_run(const char *cmd, double *rss_mib, double *cpu_s)
{
    double t0 = sl_bench_now();
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s: failed: %s\n", g_prog, cmd);
        exit(1);
    }
    *rss_mib = (double)ru.ru_maxrss / 1024;
    if (cpu_s != NULL)
        *cpu_s = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
    return sl_bench_now() - t0;
}

/* utime + stime of one process, in clock ticks; 0 when it is gone. */
static double
proc_ticks(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the name may hold spaces */
    unsigned long long utime, stime;
    /* After the name: state, then fields 4..13, then utime and stime. */
    if (p == NULL || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                            &stime) != 2)
        return 0;
    return (double)(utime + stime);
}

double
bench_tree_cpu(int pid)
{
    double ticks = proc_ticks(pid);
    char path[96];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", pid, pid);
    FILE *f = fopen(path, "r");
    int child;
    while (f != NULL && fscanf(f, "%d", &child) == 1)
        ticks += bench_tree_cpu(child) * (double)sysconf(_SC_CLK_TCK);
    if (f != NULL)
        fclose(f);
    return ticks / (double)sysconf(_SC_CLK_TCK);
}

void
bench_ds512_make(const char *exe, const char *dir)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/remote_ds512.zarr", dir);
    bench_generate_once(exe, path, "--shape 512,512,512 --chunks 64,64,64 --dtype uint16");
}
