/* SPDX-License-Identifier: MIT */
/*
 * Writing JSON strings on stdout for the commands' --json outputs.
 */
#include <stdio.h>

#include "json_out.h"

void
json_out_string(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p == '\n')
            printf("\\n");
        else if (*p == '\t')
            printf("\\t");
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}
