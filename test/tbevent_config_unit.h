/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tbevent_config_unit.h - what tbevent_config_unit.c (tbevent.h built
 * with other TB_EV_* sizes) offers test_tbevent_config.c.  Writers pass
 * as void *: each unit has its own struct tb_ev_writer.
 */
#ifndef TBEVENT_CONFIG_UNIT_H
#define TBEVENT_CONFIG_UNIT_H

#include <stddef.h>

struct tb_writer;
struct tb_track;

size_t unit_writer_size(void);
int unit_init(void *ew, struct tb_writer *w);
int unit_instant(void *ew);
int unit_add_track(void *ew, const struct tb_track *t);
int unit_finish(void *ew);

#endif
