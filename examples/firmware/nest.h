/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nest.h - FW_NEST builds (part of fw.c): a third writer, in the board's
 * second interrupt (board_irq2_start()), at a higher priority than the
 * tick, so that it preempts the tick's handler anywhere, in the middle
 * of its packets too, while the tick preempts the main loop: three
 * levels, each with a writer of its own.  Its rate is not a multiple of
 * the tick's, so under -icount it lands at every point of the tick's
 * handler over a run.  It counts where it landed (nest_*); the trace
 * must show its slices inside the tick's and those inside the main
 * loop's, each level on its own track, every event once (fwcheck -n).
 */
#define FW_IRQ2_HZ	1009u
#define FW_IRQ2_ID	3u

static struct tb_writer irq2_w;
static struct tb_ev_writer irq2_ev;
static uint8_t irq2_scratch[FW_CHUNK];
static struct tb_track t_irq2;

static void fw_irq2(void)
{
	int ret;

	if (isr_w.cur.open)
		fw_report.nest_open++;	/* the tick holds an open packet */
	if (isr_in_event)
		fw_report.nest_emit++;
	if (isr_in_event && main_w.cur.open)
		fw_report.nest_three++;	/* ... that preempted main's */
	if (!isr_on)
		return;
	ret = tagged(&irq2_ev, &fw_report.irq2_written,
		     &fw_report.irq2_failed, K_BEGIN, "irq2_work");
	if (ret != TB_OK)
		return;
	tagged(&irq2_ev, &fw_report.irq2_written, &fw_report.irq2_failed,
	       K_INSTANT, "deep");
	tb_ev_end(&irq2_ev, &cat_fw, NULL, 0);
}

static void nest_setup(void)
{
	tb_writer_init(&irq2_w, &ring, FW_IRQ2_ID, 0, TB_STALL, irq2_scratch);
	tb_writer_set_headroom(&irq2_w, FW_ISR_HEADROOM);
	tb_track_thread(&t_irq2, tb_ev_uuid(1, 4), &t_proc, 1, 3, "irq2");
	tb_ev_writer_init(&irq2_ev, &irq2_w, &t_irq2, &fw_clock, 0);
	board_irq2_start(FW_IRQ2_HZ, fw_irq2);
}
