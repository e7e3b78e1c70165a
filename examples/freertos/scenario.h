/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * scenario.h - the FreeRTOS example's tasks (part of main.c): the ring,
 * its reader and the UART link, the four tasks, and the report at the
 * end.
 */
/* ------------------------------------------------------------------------
 * The timer interrupt (the board's second one): gives ctrl its
 * semaphore.  It names its slices the first time it runs.
 */
static SemaphoreHandle_t tick_sem, mutex;
static QueueHandle_t queue;
static TaskHandle_t h_ctrl, h_worker, h_logger, h_drain;
static volatile uint32_t stop;

static void fr_timer(void)
{
	static int named;
	BaseType_t woken = pdFALSE;

	if (!named++)
		tb_rtos_irq_name(TB_RTOS_IRQ(), "timer");
	traceISR_ENTER();
	xSemaphoreGiveFromISR(tick_sem, &woken);
	portYIELD_FROM_ISR(woken);
}

static void timer_start(void)
{
	board_irq2_start(FR_TIMER_HZ, fr_timer);
}

static void timer_stop(void)
{
	board_irq2_stop();
}

static void spin(uint32_t n)
{
	volatile uint32_t i;

	for (i = 0; i < n; i++)
		;
}

uint8_t fr_ring_mem[TB_RING_SIZE(FR_CHUNK, FR_NCHUNKS)] TB_RING_ALIGNED;
TB_RTOS_DEFINE(FR_TASKS);

static struct tb_ring ring;
static struct tb_reader rd;
static struct tb_link_tx tx;
static uint8_t rd_scratch[FR_CHUNK];
static const struct tb_ev_clock fr_clock = {
	fr_now, NULL, TB_CLOCK_USER + 1, TB_CLOCK_BOOTTIME, fr_now
};

TB_CATEGORY_DEFINE(cat_app, "app", 1);

/* What each task was told it wrote: the next "seq" of its events. */
static volatile uint32_t written[4], failed[4];
enum { T_CTRL, T_WORKER, T_LOGGER, T_DRAIN };

static void tagged(int who, const char *name, int instant)
{
	struct tb_arg a[2] = {
		tb_arg_uint("seq", written[who]),
		tb_arg_str("text", FR_LOG_TEXT),
	};
	struct tb_ev_writer *ew = tb_rtos_current();
	int ret;

	ret = instant ? tb_ev_instant(ew, &cat_app, name, a, 2) :
			tb_ev_begin(ew, &cat_app, name, a, 1);
	if (ret == TB_OK)
		written[who]++;
	else
		failed[who]++;
}

static void uart_put(void *ctx, const uint8_t *p, size_t n)
{
	(void)ctx;
	board_uart_put(p, n);
}

static void drain(enum tb_read_mode mode)
{
	int ret;

	do
		ret = tb_reader_drain(&rd, FR_NCHUNKS, mode, tb_link_chunk_fn,
				      &tx, NULL);
	while (ret == TB_LIMIT);
}

static void ctrl(void *arg)
{
	uint32_t i;

	(void)arg;
	timer_start();
	for (i = 0; i < FR_ROUNDS; i++) {
		xSemaphoreTake(tick_sem, portMAX_DELAY);
		tagged(T_CTRL, "round", 0);
		spin(100 + (i * 37) % 200);
		if (fr_fault_run && i == FR_ROUNDS / 40)
			(void)*(volatile uint32_t *)BOARD_BAD_ADDR;
		if (i % 4 == 0) {
			xSemaphoreTake(mutex, portMAX_DELAY);
			spin(100);
			xSemaphoreGive(mutex);
		}
		xQueueSend(queue, &i, portMAX_DELAY);
		TB_TRACE_END(&cat_app);
	}
	timer_stop();
	stop = 1;
	xQueueSend(queue, &i, 0);	/* the worker sees stop */
	xTaskNotifyGive(h_drain);
	vTaskSuspend(NULL);
}

static void worker(void *arg)
{
	uint32_t v;

	(void)arg;
	for (;;) {
		xQueueReceive(queue, &v, portMAX_DELAY);
		if (stop)
			vTaskSuspend(NULL);
		tagged(T_WORKER, "work", 0);
		spin(200 + (v * 131) % 500);
		xSemaphoreTake(mutex, portMAX_DELAY);
		spin(300);
		xSemaphoreGive(mutex);
		TB_TRACE_END(&cat_app);
	}
}

static void logger(void *arg)
{
	int i;

	(void)arg;
	for (;;) {
		vTaskDelay(3);
		if (stop)
			vTaskSuspend(NULL);
		xSemaphoreTake(mutex, portMAX_DELAY);
		for (i = 0; i < FR_LOG_BURST; i++)	/* ctrl preempts it */
			tagged(T_LOGGER, "log", 1);
		xSemaphoreGive(mutex);
	}
}

static int quiet(TaskHandle_t h)
{
	return eTaskGetState(h) == eSuspended;
}

/*
 * A task's line: its slot (tid, writer), what it wrote, and the kernel's
 * run-time count (@st NULL: none, after a fault).
 */
static void report_task(struct tb_rtos_task *t, const TaskStatus_t *st)
{
	const void *h = t ? t->tcb : st->xHandle;
	static char line[200];	/* static: a fault handler's stack is small */
	char *s;
	int who = h == h_ctrl ? T_CTRL : h == h_worker ? T_WORKER :
		  h == h_logger ? T_LOGGER : h == h_drain ? T_DRAIN : -1;

	s = fmt_str(line, "fr: task name=");
	s = fmt_str(s, t ? t->name : st->pcTaskName);
	s = fmt_kv(s, "tid", t ? (uint64_t)t->tid : 0);
	s = fmt_kv(s, "writer", t && t->wr ? t->wr->w.id : 0);
	s = fmt_kv(s, "written", who >= 0 ? written[who] : 0);
	s = fmt_kv(s, "failed", who >= 0 ? failed[who] : 0);
	if (st)
		s = fmt_kv(s, "runtime_ns", st->ulRunTimeCounter);
	line_end(line, s);
}

static void fr_fault_report(void)
{
	uint32_t i;

	for (i = 0; i < tb_rtos_ntasks; i++)
		if (tb_rtos_tasks[i].tcb)
			report_task(&tb_rtos_tasks[i], NULL);
}

static void report(void)
{
	static TaskStatus_t st[8];
	struct tb_rtos_stats *h = &tb_rtos.stats;
	static char line[300];
	char *s;
	UBaseType_t i, n;
	uint64_t at = fr_now(NULL);	/* the running task's count ends */

	n = uxTaskGetSystemState(st, 8, NULL);
	for (i = 0; i < n; i++) {
		uint32_t k = uxTaskGetTaskNumber(st[i].xHandle);

		/* no slot: the kernel was built without the hooks */
		report_task(k ? &tb_rtos_tasks[k - 1] : NULL, &st[i]);
	}
	s = fmt_str(line, "fr: " BOARD_NAME " hooks");
	s = fmt_kv(s, "switches", h->switches);
	s = fmt_kv(s, "preempt_open", h->preempt_open);
	s = fmt_kv(s, "wakes", h->wakes);
	s = fmt_kv(s, "isr_wakes", h->isr_wakes);
	s = fmt_kv(s, "isrs", h->isrs);
	s = fmt_kv(s, "packets", h->packets);
	s = fmt_kv(s, "lost", h->lost);
	s = fmt_kv(s, "untraced", h->untraced);
	s = fmt_kv(s, "frames", tx.seq);
	s = fmt_kv(s, "counted_at_ns", at);
	line_end(line, s);
}

/*
 * The end: once the others are suspended (none is inside an event), the
 * kernel's counts are taken with the scheduler suspended, the trace is
 * stopped with interrupts masked, and the rest of the ring goes out.
 */
static void finish(void)
{
	while (!quiet(h_ctrl) || !quiet(h_worker) || !quiet(h_logger)) {
		drain(TB_READ_LAZY);
		vTaskDelay(1);
	}
	vTaskSuspendAll();
	taskDISABLE_INTERRUPTS();
	tb_rtos_stop();
	drain(TB_READ_SCRAPE);
	tb_link_tx_stats(&tx, &ring);
	tb_link_tx_end(&tx);
	report();
#ifdef FR_NO_HOOKS
	board_exit(0);
#else
	board_exit(tb_rtos.stats.lost || tb_rtos.stats.preempt_open == 0 ? 3 : 0);
#endif
}

static void drainer(void *arg)
{
	(void)arg;
	for (;;) {
		ulTaskNotifyTake(pdTRUE, 1);	/* ctrl's, or the next tick */
		if (stop)
			break;
		if (!fr_fault_run)
			drain(TB_READ_LAZY);
	}
	finish();
}

static void fr_setup(void)
{
	tb_ring_init(&ring, fr_ring_mem, sizeof(fr_ring_mem), FR_CHUNK,
		     FR_NCHUNKS);
	tb_reader_init(&rd, &ring, rd_scratch);
	tb_link_tx_init(&tx, uart_put, NULL);
	if (!fr_fault_run)
		tb_link_tx_hello(&tx, &ring);
	if (tb_rtos_start(&ring, &fr_clock, "FreeRTOS " BOARD_NAME))
		board_exit(5);
	tick_sem = xSemaphoreCreateBinary();
	mutex = xSemaphoreCreateMutex();
	queue = xQueueCreate(4, sizeof(uint32_t));
	vQueueAddToRegistry(tick_sem, "tick");
	vQueueAddToRegistry(mutex, "shared");
	vQueueAddToRegistry(queue, "rounds");
	xTaskCreate(ctrl, "ctrl", FR_STACK, NULL, 4, &h_ctrl);
	xTaskCreate(worker, "worker", FR_STACK, NULL, 3, &h_worker);
	xTaskCreate(drainer, "drain", FR_STACK + 64, NULL, 2, &h_drain);
	xTaskCreate(logger, "logger", FR_STACK, NULL, 1, &h_logger);
}
