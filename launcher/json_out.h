/* SPDX-License-Identifier: MIT */
/*
 * Writing JSON on stdout for the commands' --json outputs (the launcher
 * uses the public API only, which has no JSON writer).
 */
#ifndef SL_LAUNCHER_JSON_OUT_H
#define SL_LAUNCHER_JSON_OUT_H

/* Print `s` as a JSON string, quotes and escapes included. */
void json_out_string(const char *s);

#endif /* SL_LAUNCHER_JSON_OUT_H */
