/* SPDX-License-Identifier: MIT */
/*
 * Starting and stopping tests/remote/serve.py and s3serve.py for the io
 * tests: the child prints its URLs as one JSON line on stdout, of which the
 * proxy's (and the bucket) are kept.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "http_server.h"

/* `name`'s string value in the one-line JSON object `line`, into `out`. */
static bool
json_field(const char *line, const char *name, char *out, size_t size)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\": \"", name);
    const char *p = strstr(line, pat);
    if (p == NULL)
        return false;
    p += strlen(pat);
    size_t n = strcspn(p, "\"");
    return (size_t)snprintf(out, size, "%.*s", (int)n, p) < size;
}

/* Run python3 with `argv` (NULL-terminated, argv[0] the script) and read
 * its first line; false (killed) when none came. */
static bool
spawn(char *const argv[], pid_t *pid, char *line, size_t size)
{
    if (access("/usr/bin/python3", X_OK) != 0 || access(argv[0], R_OK) != 0)
        return false;
    int out[2];
    if (pipe(out) != 0)
        return false;
    *pid = fork();
    if (*pid == 0) {
        /* A test that fails before it stops the server must not leave it
         * running (meson would wait for its output forever). */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        dup2(out[1], 1);
        close(out[0]);
        char *args[16] = {"python3"};
        for (int i = 0; argv[i] != NULL && i < 14; i++)
            args[i + 1] = argv[i];
        execv("/usr/bin/python3", args);
        _exit(127);
    }
    close(out[1]);
    FILE *in = fdopen(out[0], "r");
    bool got = in != NULL && fgets(line, (int)size, in) != NULL;
    if (in != NULL)
        fclose(in);
    if (!got) {
        kill(*pid, SIGTERM);
        waitpid(*pid, NULL, 0);
    }
    return got;
}

/* Write `rules` (NULL: none) to `path`. */
static bool
write_rules(const char *path, const char *rules)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return false;
    fputs(rules != NULL ? rules : "[]", f);
    return fclose(f) == 0;
}

bool
sl_test_http_start(const char *dir, int delay_ms, const char *rules, struct sl_test_http_server *s)
{
    const char *src = getenv("SL_SOURCE_ROOT");
    char script[4200], rules_path[4200], delay[16], line[2048];
    snprintf(script, sizeof(script), "%s/tests/remote/serve.py", src != NULL ? src : ".");
    snprintf(rules_path, sizeof(rules_path), "%s/rules.json", dir);
    snprintf(delay, sizeof(delay), "%d", delay_ms);
    if (!write_rules(rules_path, rules))
        return false;
    char *argv[] = {script, "--root",  (char *)dir, "--delay-ms",
                    delay,  "--rules", rules_path,  NULL};
    if (!spawn(argv, &s->pid, line, sizeof(line)))
        return false;
    s->bucket[0] = '\0';
    if (json_field(line, "proxy", s->url, sizeof(s->url)))
        return true;
    sl_test_http_stop(s);
    return false;
}

bool
sl_test_s3_start(const char *dir, const char *rules, struct sl_test_http_server *s)
{
    const char *src = getenv("SL_SOURCE_ROOT");
    char script[4200], rules_path[4200], line[2048];
    snprintf(script, sizeof(script), "%s/tests/remote/s3serve.py", src != NULL ? src : ".");
    snprintf(rules_path, sizeof(rules_path), "%s/s3rules.json", dir);
    if (!write_rules(rules_path, rules))
        return false;
    char *argv[] = {script, "--rules", rules_path, NULL};
    if (!spawn(argv, &s->pid, line, sizeof(line)))
        return false;
    if (json_field(line, "proxy", s->url, sizeof(s->url)) &&
        json_field(line, "bucket", s->bucket, sizeof(s->bucket)))
        return true;
    sl_test_http_stop(s);
    return false;
}

void
sl_test_http_stop(struct sl_test_http_server *s)
{
    kill(s->pid, SIGTERM);
    waitpid(s->pid, NULL, 0);
}
