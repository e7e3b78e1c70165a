/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tbevent_config_unit.c - the other translation unit of
 * test_tbevent_config: tbevent.h built with smaller tables than the
 * suite's (the Makefile passes -DTB_EV_TRACKS=4 -DTB_EV_NAME_BYTES=64
 * -DTB_EV_FLOWS=2), so its struct tb_ev_writer has another layout.
 */
#include "tbevent.h"
#include "tbevent_config_unit.h"

#if TB_EV_TRACKS != 4
#error "build this unit with -DTB_EV_TRACKS=4 (see the Makefile)"
#endif

size_t unit_writer_size(void)
{
	return sizeof(struct tb_ev_writer);
}

int unit_init(void *ew, struct tb_writer *w)
{
	return tb_ev_writer_init((struct tb_ev_writer *)ew, w, NULL, NULL, 0);
}

int unit_instant(void *ew)
{
	return tb_ev_instant((struct tb_ev_writer *)ew, NULL, "unit", NULL, 0);
}

int unit_add_track(void *ew, const struct tb_track *t)
{
	return tb_ev_add_track((struct tb_ev_writer *)ew, t);
}

int unit_finish(void *ew)
{
	return tb_ev_writer_finish((struct tb_ev_writer *)ew);
}
