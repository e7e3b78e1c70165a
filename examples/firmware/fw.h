/* SPDX-License-Identifier: BSD-2-Clause */
/* fw.h - what start.c and fw.c share. */
#ifndef FW_H
#define FW_H

void fw_puts(const char *s);
__attribute__((noreturn)) void fw_exit(int code);
__attribute__((noreturn)) void fw_halt(void);
__attribute__((noreturn)) void fw_fault(void);

#endif /* FW_H */
