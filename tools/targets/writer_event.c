/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * writer_event.c - the event layer (tbevent.h) over the writer, as one
 * translation unit: everything a firmware image that traces needs, from
 * setting up an event writer to slices, instants, counters and the fresh
 * state after a loss, with the ring writer's open/close underneath.
 * Nothing here runs; it is compiled for each target to see what the layer
 * costs in code and that it needs nothing beyond <string.h>.
 *
 *   - make firmware  builds it bare-metal (Cortex-M4, -M33: -ffreestanding,
 *                    TB_ATOMIC_BUILTINS=1, TB_NO_FUTEX) and checks with nm
 *                    that nothing is undefined but memcpy/memset: no TLS
 *                    (freestanding builds get a plain global current
 *                    writer), no libc clock (firmware passes its own
 *                    struct tb_ev_clock), no strlen, no libgcc helpers.
 *   - make size      reports its .text (a row of tools/targets/size.sh).
 *
 * TBT_EVENT_ENTRY picks the entry points: 1 the macros alone (BEGIN, END,
 * INSTANT with an annotation, COUNTER, through the current writer), 2 the
 * functions (every public call of tbevent.h), 3 (default) both.
 */
#include "tbevent.h"

#ifndef TBT_EVENT_ENTRY
#define TBT_EVENT_ENTRY 3
#endif

TB_CATEGORY_DEFINE(tbt_cat, "fw", 1);

int tbt_ev_writer_init(struct tb_ev_writer *ew, struct tb_writer *w,
		       const struct tb_track *track,
		       const struct tb_ev_clock *clock, unsigned flags);
void tbt_ev_set_current(struct tb_ev_writer *ew);
int tbt_ev_begin(struct tb_ev_writer *ew, const struct tb_category *cat,
		 const char *name, const struct tb_arg *args, uint32_t nargs);
int tbt_ev_end(struct tb_ev_writer *ew, const struct tb_category *cat,
	       const struct tb_arg *args, uint32_t nargs);
int tbt_ev_instant(struct tb_ev_writer *ew, const struct tb_category *cat,
		   const char *name, const struct tb_arg *args,
		   uint32_t nargs);
int tbt_ev_counter(struct tb_ev_writer *ew, const struct tb_category *cat,
		   const struct tb_track *track, int64_t v);
int tbt_ev_counter_double(struct tb_ev_writer *ew,
			  const struct tb_category *cat,
			  const struct tb_track *track, double v);
int tbt_ev_emit(struct tb_ev_writer *ew, const struct tb_ev_event *ev);
int tbt_ev_add_track(struct tb_ev_writer *ew, const struct tb_track *track);
void tbt_ev_forget_track(struct tb_ev_writer *ew,
			 const struct tb_track *track);
void tbt_ev_reset(struct tb_ev_writer *ew);
int tbt_ev_writer_finish(struct tb_ev_writer *ew);
void tbt_trace_request(uint32_t seq, const struct tb_track *queue);

#if TBT_EVENT_ENTRY & 1
/* What instrumented firmware code expands to. */
void tbt_trace_request(uint32_t seq, const struct tb_track *queue)
{
	TB_TRACE_BEGIN(&tbt_cat, "HandleRequest", TB_ARG_UINT("seq", seq));
	TB_TRACE_INSTANT(&tbt_cat, "Checkpoint", TB_ARG_STR("state", "ok"));
	TB_TRACE_COUNTER(&tbt_cat, queue, seq & 15);
	TB_TRACE_END(&tbt_cat);
}

void tbt_ev_set_current(struct tb_ev_writer *ew)
{
	tb_ev_set_current(ew);
}
#endif

#if TBT_EVENT_ENTRY & 2
int tbt_ev_writer_init(struct tb_ev_writer *ew, struct tb_writer *w,
		       const struct tb_track *track,
		       const struct tb_ev_clock *clock, unsigned flags)
{
	return tb_ev_writer_init(ew, w, track, clock, flags);
}

int tbt_ev_begin(struct tb_ev_writer *ew, const struct tb_category *cat,
		 const char *name, const struct tb_arg *args, uint32_t nargs)
{
	return tb_ev_begin(ew, cat, name, args, nargs);
}

int tbt_ev_end(struct tb_ev_writer *ew, const struct tb_category *cat,
	       const struct tb_arg *args, uint32_t nargs)
{
	return tb_ev_end(ew, cat, args, nargs);
}

int tbt_ev_instant(struct tb_ev_writer *ew, const struct tb_category *cat,
		   const char *name, const struct tb_arg *args,
		   uint32_t nargs)
{
	return tb_ev_instant(ew, cat, name, args, nargs);
}

int tbt_ev_counter(struct tb_ev_writer *ew, const struct tb_category *cat,
		   const struct tb_track *track, int64_t v)
{
	return tb_ev_counter(ew, cat, track, v);
}

int tbt_ev_counter_double(struct tb_ev_writer *ew,
			  const struct tb_category *cat,
			  const struct tb_track *track, double v)
{
	return tb_ev_counter_double(ew, cat, track, v);
}

int tbt_ev_emit(struct tb_ev_writer *ew, const struct tb_ev_event *ev)
{
	return tb_ev_emit(ew, ev);
}

int tbt_ev_add_track(struct tb_ev_writer *ew, const struct tb_track *track)
{
	return tb_ev_add_track(ew, track);
}

void tbt_ev_forget_track(struct tb_ev_writer *ew,
			 const struct tb_track *track)
{
	tb_ev_forget_track(ew, track);
}

void tbt_ev_reset(struct tb_ev_writer *ew)
{
	tb_ev_reset(ew);
}

int tbt_ev_writer_finish(struct tb_ev_writer *ew)
{
	return tb_ev_writer_finish(ew);
}
#endif
