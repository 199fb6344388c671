/* SPDX-License-Identifier: MIT */
/*
 * Starting and stopping tests/remote/serve.py for the io tests: the child
 * prints its URLs as one JSON line on stdout, of which the proxy's is kept.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "http_server.h"

bool
sl_test_http_start(const char *dir, int delay_ms, const char *rules, struct sl_test_http_server *s)
{
    const char *src = getenv("SL_SOURCE_ROOT");
    char script[4200], rules_path[4200], delay[16];
    snprintf(script, sizeof(script), "%s/tests/remote/serve.py", src != NULL ? src : ".");
    snprintf(rules_path, sizeof(rules_path), "%s/rules.json", dir);
    snprintf(delay, sizeof(delay), "%d", delay_ms);
    FILE *f = fopen(rules_path, "w");
    if (f == NULL)
        return false;
    fputs(rules != NULL ? rules : "[]", f);
    fclose(f);
    if (access("/usr/bin/python3", X_OK) != 0 || access(script, R_OK) != 0)
        return false;
    int out[2];
    if (pipe(out) != 0)
        return false;
    s->pid = fork();
    if (s->pid == 0) {
        /* A test that fails before it stops the server must not leave it
         * running (meson would wait for its output forever). */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        dup2(out[1], 1);
        close(out[0]);
        execl("/usr/bin/python3", "python3", script, "--root", dir, "--delay-ms", delay, "--rules",
              rules_path, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    char line[1024] = "";
    FILE *in = fdopen(out[0], "r");
    bool got = in != NULL && fgets(line, sizeof(line), in) != NULL;
    if (in != NULL)
        fclose(in);
    const char *p = got ? strstr(line, "\"proxy\": \"") : NULL;
    if (p == NULL) {
        kill(s->pid, SIGTERM);
        waitpid(s->pid, NULL, 0);
        return false;
    }
    p += strlen("\"proxy\": \"");
    size_t n = strcspn(p, "\"");
    snprintf(s->url, sizeof(s->url), "%.*s", (int)n, p);
    return true;
}

void
sl_test_http_stop(struct sl_test_http_server *s)
{
    kill(s->pid, SIGTERM);
    waitpid(s->pid, NULL, 0);
}
