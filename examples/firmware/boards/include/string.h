/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * string.h - the four functions the tbring headers need, for a firmware
 * built with no C library at all (-nostdinc -nostdlib).  start.c defines
 * them.  With a C library (newlib, picolibc), drop this directory.
 */
#ifndef FW_STRING_H
#define FW_STRING_H

#include <stddef.h>

void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);

#endif /* FW_STRING_H */
