/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 throughput: `sluice checksum` hashes every decoded byte of an
 * array and S3 writes sign the SHA-256 of every body, so the hash bounds
 * both.  The CPU's SHA extensions (where it has them) and the portable
 * code, each the best of 5 hashes of 64 MiB, beside OpenSSL's (Python's
 * hashlib, the same buffer size, in a child process of the same run).
 */
#include <stdio.h>
#include <stdlib.h>

#include <sluice.h>

#include "bench.h"
#include "core_internal.h"

#define BYTES ((size_t)64 << 20)

/* Best MB/s of 5 hashes of `buf`. */
static double
rate(const uint8_t *buf, uint8_t digest[SL_SHA256_BYTES])
{
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = sl_bench_now();
        sl_sha256(buf, BYTES, digest);
        double dt = sl_bench_now() - t0;
        best = dt < best ? dt : best;
    }
    return (double)BYTES / best / 1e6;
}

/* OpenSSL's rate through Python's hashlib, or 0 when it cannot run. */
static double
openssl_rate(void)
{
    FILE *p = popen("/usr/bin/python3 -c 'import hashlib, time\n"
                    "b = bytes(range(256)) * (64 << 12)\n"
                    "best = 1e30\n"
                    "for _ in range(5):\n"
                    "    t = time.perf_counter(); hashlib.sha256(b).digest()\n"
                    "    best = min(best, time.perf_counter() - t)\n"
                    "print(len(b) / best / 1e6)' 2>/dev/null",
                    "r");
    double v = 0;
    if (p == NULL)
        return 0;
    if (fscanf(p, "%lf", &v) != 1)
        v = 0;
    pclose(p);
    return v;
}

int
main(void)
{
    uint8_t *buf = malloc(BYTES);
    if (buf == NULL)
        return 1;
    for (size_t i = 0; i < BYTES; i++)
        buf[i] = (uint8_t)i;
    uint8_t d_hw[SL_SHA256_BYTES], d_sw[SL_SHA256_BYTES];
    bool has_hw = sl__sha256_use_hw(true);
    double hw = rate(buf, d_hw);
    sl__sha256_use_hw(false);
    double sw = rate(buf, d_sw);
    sl__sha256_use_hw(true);
    free(buf);
    for (int i = 0; i < SL_SHA256_BYTES; i++)
        if (d_hw[i] != d_sw[i]) {
            fprintf(stderr, "bench_core_sha256: the two ways hash 64 MiB differently\n");
            return 1;
        }
    double ossl = openssl_rate();
    if (has_hw)
        sl_bench_report("sha256_sluice_cpu_extensions", hw, "MB/s");
    else
        printf("sha256_sluice_cpu_extensions: none (this CPU has no SHA extensions)\n");
    sl_bench_report("sha256_sluice_portable", sw, "MB/s");
    if (ossl > 0) {
        sl_bench_report("sha256_openssl", ossl, "MB/s");
        sl_bench_report("sha256_sluice_vs_openssl", hw / ossl, "x");
    } else {
        printf("sha256_openssl: not measured (python3 with hashlib missing)\n");
    }
    return 0;
}
