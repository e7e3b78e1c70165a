/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * stdlib.h - FreeRTOS's sources include it and use nothing from it: the
 * example builds with no C library (-nostdinc -nostdlib).
 */
#ifndef FR_STDLIB_H
#define FR_STDLIB_H
#include <stddef.h>
#endif
