/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target for tbcheck.h and build/tbtrace's hostile-input paths:
 * arbitrary bytes as a trace image for the checker, and as a ring's raw
 * image for the tool's convert path (tools/tbtrace.c, included with
 * TBTRACE_NO_MAIN).
 *
 * The first input byte chooses; the rest is the image:
 *   bits 0-1  0: the checker on the image, through an allocator hook that
 *                checks every resize and free names a live block and its
 *                size; 1: the same with a 64 KiB budget; 2: tbtrace stat
 *                on it (every report line formatted, to /dev/null);
 *                3: tbtrace convert on it as a ring image, then the
 *                checker on the trace that came out
 *   bits 2-7  convert: the producer id stamped (bits + 1)
 * Checked:
 *  - the checker returns TB_OK, TB_EFRAMING, TB_ELIMIT or TB_ENOMEM, stays
 *    within its budget, reports each violation once to the callback (the
 *    callback's count matches the rule counts), and frees everything;
 *  - convert refuses with status 2 only an image tb_ring_attach()
 *    refuses, and takes one attach refuses only where it found a ring
 *    further in or salvaged a cut one; what it writes is always a trace (Trace.packet records, each
 *    with the three trusted fields and the producer asked for), which the
 *    checker never finds malformed;
 *  - nothing leaks (LeakSanitizer), nothing reads out of bounds (ASan).
 *
 * FUZZ_MKSEEDS=DIR makes the target write its seed corpus into DIR (a
 * clean trace, a trace breaking rules, clean, torn, scribbled and badly
 * framed ring images, and a ring with a stray header in its chunks) and
 * exit: fuzz/corpus_tbcheck was made so.
 */
#define TBTRACE_NO_MAIN 1
#include "tools/tbtrace.c"
#include "fuzz/fuzz_input.h"

#define MAXBLOCKS	64

/* ---- Allocator hook: checks sizes ------------------------------------- */

static struct {
	void *p[MAXBLOCKS];
	size_t size[MAXBLOCKS];
	unsigned n;
} A;

static unsigned find(void *p)
{
	unsigned i;

	for (i = 0; i < A.n && A.p[i] != p; i++)
		;
	return i;
}

static void *hook(void *ctx, void *ptr, size_t old, size_t n)
{
	unsigned i = ptr ? find(ptr) : A.n;
	void *q;

	(void)ctx;
	if (ptr)
		CHECK(i < A.n && A.size[i] == old);
	else
		CHECK(!old && n);	/* never asked to free nothing */
	if (!n) {
		free(ptr);
		A.p[i] = A.p[--A.n];
		A.size[i] = A.size[A.n];
		return NULL;
	}
	CHECK(ptr || A.n < MAXBLOCKS);
	q = realloc(ptr, n);
	if (!q)
		return NULL;
	if (!ptr)
		i = A.n++;
	A.p[i] = q;
	A.size[i] = n;
	return q;
}

/* ---- The checker ------------------------------------------------------ */

static uint64_t reported;

static void count(void *ctx, const struct tb_check_violation *v)
{
	(void)ctx;
	CHECK(v->rule < TB_CK_MAX);
	CHECK(!v->explained || tb_check_explainable(v->rule));
	reported++;
}

static int check(const uint8_t *img, size_t len, size_t budget)
{
	struct tb_check c;
	int ret;

	CHECK(tb_check_init(&c, hook, NULL, budget) == TB_OK);
	c.on_violation = count;
	reported = 0;
	ret = tb_check_trace(&c, img, len);
	CHECK(ret == TB_OK || ret == TB_EFRAMING || ret == TB_ELIMIT ||
	      ret == TB_ENOMEM);
	CHECK(c.used <= c.max_bytes);
	CHECK(reported == tb_check_total(&c, false) +
			  tb_check_total(&c, true));
	CHECK((ret == TB_EFRAMING) == (c.rule[TB_CK_NOT_A_TRACE].count == 1));
	CHECK(!tb_check_clean(&c) || !ret);
	tb_check_destroy(&c);
	CHECK(c.used == 0 && A.n == 0);
	return ret;
}

/* ---- The convert path ----------------------------------------------- */

static FILE *devnull;

static bool check_trace(const uint8_t *p, size_t n, uint16_t producer)
{
	struct tb_trace_packet tp;
	struct tb_pb_reader r;
	int ret;

	if (!n)
		return true;
	tb_pb_reader_init(&r, p, n);
	while ((ret = tb_trace_next(&r, &tp)) > 0) {
		CHECK((tp.has & 7u) == 7u);
		CHECK(tp.trusted_seq_id >> 16 == producer);
		CHECK((tp.trusted_seq_id & 0xffff) != 0);
		CHECK(tp.trusted_pid == 4242 && tp.trusted_uid == 77);
	}
	CHECK(ret == 0);	/* the writer writes only what reads back */
	return ret == 0;
}

static void convert(const uint8_t *data, size_t len, uint16_t producer)
{
	struct tbt_convert_opts o;
	struct tbt_convert_result res;
	struct tb_trace_out out;
	struct tbt_mem m;
	struct tb_ring r;
	uint8_t *img;
	int st, ret;

	/* aligned to TB_RING_LINE, as tb_ring_attach() requires */
	CHECK(!posix_memalign((void **)&img, TB_RING_LINE, len ? len : 1));
	memcpy(img, data, len);
	ret = tb_ring_attach(&r, img, len);
	memset(&o, 0, sizeof(o));
	o.producer = producer;
	o.pid = 4242;
	o.uid = 77;
	memset(&m, 0, sizeof(m));
	memset(&out, 0, sizeof(out));
	out.write = tbt_mem_write;
	out.ctx = &m;
	st = tbt_convert(img, len, &o, &out, devnull, &res);
	CHECK(st >= 0 && st <= 2);
	/* what attach takes is converted; convert also finds a ring
	 * further in, or salvages a cut one, which attach refuses */
	CHECK(ret != TB_OK || st != 2);
	CHECK(ret == TB_OK || st == 2 || res.offset || res.truncated);
	if (st != 2 && check_trace(m.p, m.len, producer))
		CHECK(check(m.p, m.len, 0) != TB_EFRAMING);
	free(m.p);
	free(img);
}

/* ---- Seeds ---------------------------------------------------------- */

static void seed(const char *dir, const char *name, uint8_t mode,
		 const void *p, size_t n)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	CHECK(f);
	CHECK(fwrite(&mode, 1, 1, f) == 1 && fwrite(p, 1, n, f) == n);
	CHECK(!fclose(f));
}

/* A TracePacket body: a thread track, or a slice event on it. */
static size_t mk_packet(uint8_t *p, uint16_t w, unsigned k)
{
	uint8_t in[64], th[16];
	size_t n = 0, i = 0, t = 0;

	if (!k) {
		t += tb_pb_uint(th + t, 1, 4242);
		t += tb_pb_uint(th + t, 2, w);
		i += tb_pb_uint(in + i, 1, 1000u + w);
		i += tb_pb_len(in + i, 4, t);
		memcpy(in + i, th, t);
		i += t;
		n += tb_pb_uint(p + n, 8, 1);
		n += tb_pb_uint(p + n, 13, 1);		/* cleared */
		n += tb_pb_len(p + n, 60, i);		/* track_descriptor */
	} else {
		i += tb_pb_uint(in + i, 9, k % 2 ? 1 : 2);	/* type */
		i += tb_pb_uint(in + i, 11, 1000u + w);
		if (k % 2)
			i += tb_pb_len(in + i, 23, 0);	/* name "" */
		n += tb_pb_uint(p + n, 8, 100 + k);
		n += tb_pb_len(p + n, 11, i);		/* track_event */
	}
	memcpy(p + n, in, i);
	return n + i;
}

static int mkseeds(const char *dir)
{
	static uint8_t mem[TB_RING_SIZE(256, 16)] TB_RING_ALIGNED;
	uint8_t scratch[3][256], pkt[128], trace[4096];
	struct tb_writer w[3];
	struct tb_span sp;
	struct tb_ring r;
	size_t n, t = 0, k;
	unsigned i, j;
	uint32_t *word;

	/* traces: clean, and breaking rules */
	for (j = 0; j < 7; j++) {
		n = mk_packet(pkt, 1, j);
		n += tb_pb_uint(pkt + n, 3, 77);
		n += tb_pb_uint(pkt + n, 10, 0x10001);
		n += tb_pb_uint(pkt + n, 79, 4242);
		t += tb_pb_len(trace + t, 1, n);
		memcpy(trace + t, pkt, n);
		t += n;
	}
	seed(dir, "trace-clean", 0, trace, t);
	seed(dir, "trace-stat", 2, trace, t);
	k = t;
	n = mk_packet(pkt, 2, 3);		/* no descriptor, no seq id */
	n += tb_pb_uint(pkt + n, 42, 0x41);
	t += tb_pb_len(trace + t, 1, n);
	memcpy(trace + t, pkt, n);
	t += n;
	seed(dir, "trace-rules", 0, trace, t);
	seed(dir, "trace-cut", 1, trace, k - 3);
	/* rings: clean, torn, scribbled, a bad directory */
	for (j = 0; j < 4; j++) {
		memset(mem, 0, sizeof(mem));
		CHECK(!tb_ring_init(&r, mem, sizeof(mem), 256, 16));
		for (i = 0; i < 3; i++)
			CHECK(!tb_writer_init(&w[i], &r, (uint16_t)(i + 1), 0,
					      TB_DROP, scratch[i]));
		for (k = 0; k < 9; k++)
			for (i = 0; i < 3; i++) {
				n = mk_packet(pkt, (uint16_t)(i + 1),
					      (unsigned)k);
				CHECK(!tb_writer_write_packet(&w[i], pkt,
							      (uint32_t)n));
			}
		if (j == 1)
			CHECK(!tb_writer_open(&w[0], 40, 0, &sp));
		else
			for (i = 0; i < 3; i++)
				CHECK(!tb_writer_release(&w[i]));
		word = (uint32_t *)(void *)(mem + 512);
		if (j == 2) {
			word[256 / 4] = 0xc0000002u;	/* reserved state */
			r.hdr->write_pos += 100000;
		}
		if (j == 3)
			mem[512 + 256 - 1] = 0xff;	/* a size too big */
		seed(dir, j == 0 ? "ring-clean" : j == 1 ? "ring-torn" :
		     j == 2 ? "ring-scribbled" : "ring-baddir",
		     (uint8_t)(3 | (j << 2)), mem, sizeof(mem));
	}
	/*
	 * A ring attach takes, its padding not zero, and in its chunks a
	 * valid header claiming far more than the image: convert must not
	 * settle on that one and refuse (a finding of CI's fuzz run).
	 */
	memset(mem, 0, sizeof(mem));
	CHECK(!tb_ring_init(&r, mem, TB_RING_SIZE(256, 2), 256, 2));
	r.hdr->pad0[0] = 1;
	memcpy(mem + TB_RING_HDR_SIZE, mem,
	       offsetof(struct tb_ring_hdr, pad0));	/* magic..count_log2 */
	word = (uint32_t *)(void *)(mem + TB_RING_HDR_SIZE);
	word[3] = 15;
	word[4] = 20;
	seed(dir, "ring-stray-large", 3, mem, TB_RING_SIZE(256, 2));
	return 0;
}

/* ---- libFuzzer ------------------------------------------------------ */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("FUZZ_MKSEEDS");

	(void)tbt_main;		/* the command line is tested elsewhere */
	if (dir)
		exit(mkseeds(dir));
	devnull = fopen("/dev/null", "w");
	CHECK(devnull);
	fuzz_init(argc, argv);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tbt_stat_opts so = { 1, 1 << 20, false };
	unsigned mode;

	if (!size)
		return 0;
	mode = data[0];
	data++;
	size--;
	switch (mode & 3) {
	case 0:
		check(data, size, 0);
		break;
	case 1:
		check(data, size, 64 << 10);
		break;
	case 2:
		tbt_stat_image(data, size, &so, devnull, "fuzz");
		break;
	case 3:
		convert(data, size, (uint16_t)((mode >> 2) + 1));
		break;
	}
	return 0;
}
