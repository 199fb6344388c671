/* SPDX-License-Identifier: MIT */
/*
 * Real servers for the io tests that read over HTTP and S3: nginx serving a
 * directory, or s3rver, behind the project's fault-and-latency proxy
 * (tests/remote/serve.py, s3serve.py), started as a child and stopped by
 * the test.
 */
#ifndef SL_TEST_HTTP_SERVER_H
#define SL_TEST_HTTP_SERVER_H

#include <stdbool.h>
#include <sys/types.h>

/* A running server: its process and the proxy's base URL. */
struct sl_test_http_server {
    pid_t pid;
    char url[256];
    char bucket[64]; /* s3serve.py: the bucket it made; else "" */
};

/*
 * Serve directory `dir` with `delay_ms` per request and the proxy rules
 * `rules` (a JSON list, see tests/remote/README.md; NULL: none), written to
 * `dir`/rules.json.  @return false (the caller skips) when python3, serve.py
 * or nginx is missing.
 */
bool sl_test_http_start(const char *dir, int delay_ms, const char *rules,
                        struct sl_test_http_server *s);

/*
 * Start s3rver behind the proxy (tests/remote/s3serve.py: credentials
 * S3RVER / S3RVER, region us-east-1, one bucket) with the proxy rules
 * `rules` (NULL: none), written to `dir`/s3rules.json.  @return false
 * (the caller skips) when python3, node or s3rver is missing.
 */
bool sl_test_s3_start(const char *dir, const char *rules, struct sl_test_http_server *s);

/* Stop the server and wait for it. */
void sl_test_http_stop(struct sl_test_http_server *s);

#endif /* SL_TEST_HTTP_SERVER_H */
