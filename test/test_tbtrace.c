/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_tbtrace.c - the command-line tool, build/tbtrace (found in
 * $TB_BUILD_DIR, default "build"; $TB_EXEC_WRAP, when set, is put in front
 * of it, as in test_e2e.c), run as a user would on rings and traces the
 * tests make:
 *
 *   - convert: a clean ring's image becomes a trace holding every packet,
 *     clean by tbcheck.h; a torn one (writers killed mid-fragment, one of
 *     them between the two halves of a packet) gives what was published
 *     and reports the rest; scribbled ones (reserved states, a free tag
 *     of another lap, a write_pos far ahead, a directory that does not
 *     parse) give a valid trace of what is readable, never a packet glued
 *     across a lost chunk, every loss flagged on a writer's next packet
 *     (on every writer's when the lost chunk's writer is unknown); images
 *     that are no ring are refused by the attach code's name;
 *   - ring: a ring in a shared file mapping with a chunk held and one
 *     pinned, the same through /proc/self/fd/N of a memfd, -w -n 2, and
 *     files that are no ring;
 *   - stat: exit codes and the checker's findings; usage errors.
 *
 * Every run has a deadline; outputs are read back and matched by lines.
 * TB_KEEP_TMP=1 keeps the scratch directory with the images and traces.
 */
/* the protocol steps, for ring_helpers.h (see tbring.h) */
#define TB_PROTOCOL_STEPS 1
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tbtrace.h"
#include "tools/tbcheck.h"
#include "ring_helpers.h"
#include "spawn_helpers.h"

static char tmp_root[256];

/* ------------------------------------------------------------------------
 * Files and runs.
 */
static void tmp_path(char *buf, size_t n, const char *name)
{
	ck_assert_msg(tmp_root[0], "no scratch directory");
	snprintf(buf, n, "%s/%s", tmp_root, name);
}

static void spit(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(p, 1, n, f), n);
	ck_assert_int_eq(fclose(f), 0);
}

static char *out;		/* the last run's stdout and stderr */

/*
 * Runs build/tbtrace with @args (NULL-terminated), stdout and stderr into
 * one file, read back into @out; returns its exit status.
 */
static int tbtrace(const char **args)
{
	char log[512];
	int status;
	pid_t pid;

	tmp_path(log, sizeof(log), "run.log");
	pid = spawn_to("tbtrace", log, args);
	mark_point();		/* a tbtrace that never exits hangs here */
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	free(out);
	out = spawn_slurp(log, NULL);
	ck_assert_ptr_nonnull(out);
	ck_assert_msg(WIFEXITED(status), "tbtrace %s died (signal %d):\n%s",
		      args[0], WIFSIGNALED(status) ? WTERMSIG(status) : 0,
		      out);
	return WEXITSTATUS(status);
}

/* The output holds @s (with the whole output in the message if not). */
#define ck_assert_out(s)						\
	ck_assert_msg(strstr(out, (s)) != NULL,				\
		      "no \"%s\" in the output:\n%s", (s), out)

#define ck_assert_not_out(s)						\
	ck_assert_msg(strstr(out, (s)) == NULL,				\
		      "\"%s\" in the output:\n%s", (s), out)

static unsigned count_of(const char *s)
{
	unsigned n = 0;
	const char *p;

	for (p = out; (p = strstr(p, s)); p += strlen(s))
		n++;
	return n;
}

/* ------------------------------------------------------------------------
 * TrackEvent packets, from Perfetto's field numbers.
 */
#define TP_TIMESTAMP	8
#define TP_TRACK_EVENT	11
#define TP_FLAGS	13
#define TP_TRACK_DESC	60
#define TD_UUID		1
#define TD_THREAD	4
#define TE_ANNOTATIONS	4
#define TE_TYPE		9
#define TE_TRACK	11
#define TE_NAME		23
#define DA_STRING	6
#define DA_NAME		10
#define CLEARED		1
#define BEGIN		1
#define END		2

struct pkt {
	uint8_t b[2048];
	size_t n;
};

static void p_uint(struct pkt *p, uint32_t f, uint64_t v)
{
	p->n += tb_pb_uint(p->b + p->n, f, v);
}

static void p_bytes(struct pkt *p, uint32_t f, const void *d, size_t n)
{
	ck_assert_uint_lt(p->n + n + 16, sizeof(p->b));
	p->n += tb_pb_len(p->b + p->n, f, n);
	memcpy(p->b + p->n, d, n);
	p->n += n;
}

/* Writer @w's thread track, clearing its incremental state. */
static void mk_desc(struct pkt *p, uint16_t w)
{
	struct pkt td = { { 0 }, 0 }, th = { { 0 }, 0 };

	p->n = 0;
	p_uint(&th, 1, 4242);
	p_uint(&th, 2, w);
	p_uint(&td, TD_UUID, 1000 + w);
	p_bytes(&td, TD_THREAD, th.b, th.n);
	p_uint(p, TP_TIMESTAMP, 1);
	p_uint(p, TP_FLAGS, CLEARED);
	p_bytes(p, TP_TRACK_DESC, td.b, td.n);
}

/* A BEGIN or END on writer @w's track; @pad bytes of annotation. */
static void mk_event(struct pkt *p, uint16_t w, uint64_t ts, unsigned type,
		     size_t pad)
{
	static const char fill[1500] = { 'x' };
	struct pkt ev = { { 0 }, 0 }, da = { { 0 }, 0 };

	p->n = 0;
	p_uint(&ev, TE_TYPE, type);
	p_uint(&ev, TE_TRACK, 1000 + w);
	if (type == BEGIN)
		p_bytes(&ev, TE_NAME, "work", 4);
	if (pad) {
		ck_assert_uint_le(pad, sizeof(fill));
		p_bytes(&da, DA_NAME, "pad", 3);
		p_bytes(&da, DA_STRING, fill, pad);
		p_bytes(&ev, TE_ANNOTATIONS, da.b, da.n);
	}
	p_uint(p, TP_TIMESTAMP, ts);
	p_bytes(p, TP_TRACK_EVENT, ev.b, ev.n);
}

static void wr(struct twriter *tw, const struct pkt *p)
{
	ck_assert_int_eq(tb_writer_write_packet(&tw->w, p->b,
						(uint32_t)p->n), TB_OK);
}

/* Writer @w's descriptor, then @pairs BEGIN/END pairs; every 7th BEGIN
 * is large enough to span chunks.  Returns the packets written. */
static unsigned write_run(struct twriter *tw, uint16_t w, unsigned pairs)
{
	struct pkt p;
	unsigned i;

	mk_desc(&p, w);
	wr(tw, &p);
	for (i = 0; i < pairs; i++) {
		mk_event(&p, w, 100 + 2 * i, BEGIN, i % 7 == 3 ? 900 : 20);
		wr(tw, &p);
		mk_event(&p, w, 101 + 2 * i, END, 0);
		wr(tw, &p);
	}
	return 1 + 2 * pairs;
}

/* ------------------------------------------------------------------------
 * Reading a converted trace back with the library.
 */
struct back {
	uint64_t packets;
	uint64_t per_writer[8];
	uint64_t service;		/* the service's own packets */
	int stats_last;			/* the last is a TraceStats */
	uint64_t lossy;
	int ret;			/* tb_check_trace() */
	bool clean;
	uint64_t unexplained, explained;
	uint64_t rule[TB_CK_MAX];
	uint32_t pid, uid, producer;
};

/* Whether a TracePacket holds trace_stats (35). */
static int has_trace_stats(const uint8_t *p, size_t n)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;

	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0)
		if (f.number == TB_PB_TRACE_STATS && f.type == TB_PB_LEN)
			return 1;
	return 0;
}

static void read_back(const char *path, struct back *b)
{
	struct tb_trace_packet tp;
	struct tb_pb_reader r;
	struct tb_check c;
	size_t len;
	char *img = spawn_slurp(path, &len);
	unsigned i;
	int ret;

	ck_assert_msg(img != NULL, "%s: no trace", path);
	memset(b, 0, sizeof(*b));
	tb_pb_reader_init(&r, img, len);
	while ((ret = tb_trace_next(&r, &tp)) > 0) {
		ck_assert_uint_eq(tp.has & 7u, 7u);
		b->stats_last = 0;
		if (tp.trusted_seq_id == TB_TRACE_SERVICE_SEQ) {
			/* the tail convert writes as a service would */
			b->service++;
			b->stats_last = has_trace_stats(tp.data, tp.size);
			continue;
		}
		b->packets++;
		b->producer = (uint32_t)tp.trusted_seq_id >> 16;
		b->pid = (uint32_t)tp.trusted_pid;
		b->uid = (uint32_t)tp.trusted_uid;
		if ((tp.trusted_seq_id & 0xffff) < 8)
			b->per_writer[tp.trusted_seq_id & 0xffff]++;
		b->lossy += tp.dropped != 0;
	}
	ck_assert_int_eq(ret, 0);
	ck_assert_int_eq(tb_check_init(&c, NULL, NULL, 0), TB_OK);
	b->ret = tb_check_trace(&c, img, len);
	b->clean = tb_check_clean(&c);
	b->unexplained = tb_check_total(&c, false);
	b->explained = tb_check_total(&c, true);
	for (i = 0; i < TB_CK_MAX; i++)
		b->rule[i] = c.rule[i].count;
	tb_check_destroy(&c);
	free(img);
}

/* Writes @t's whole mapping to scratch file @name; its path in @path. */
static void save_image(const struct tring *t, const char *name, char *path,
		       size_t n)
{
	tmp_path(path, n, name);
	spit(path, t->mem, t->len);
}

/* ------------------------------------------------------------------------
 * convert
 */
START_TEST(test_convert_clean_ring_keeps_every_packet)
{
	char img[512], trace[512];
	struct twriter tw[3];
	struct tring t;
	struct back b;
	unsigned w, n[3];
	const char *conv[] = { "convert", "-P", "7", "-p", "1234", "-u",
			       "1000", img, trace, NULL };
	const char *stat[] = { "stat", trace, NULL };

	tring_new(&t, 1024, 64);
	for (w = 0; w < 3; w++)
		twriter_new(&tw[w], &t, (uint16_t)(w + 1), 0, TB_DROP);
	for (w = 0; w < 3; w++)
		n[w] = write_run(&tw[w], (uint16_t)(w + 1), 12);
	for (w = 0; w < 3; w++)
		ck_assert_int_eq(tb_writer_release(&tw[w].w), TB_OK);
	save_image(&t, "clean.bin", img, sizeof(img));
	tmp_path(trace, sizeof(trace), "clean.pftrace");
	ck_assert_int_eq(tbtrace(conv), 0);
	ck_assert_out("lost      nothing");
	ck_assert_out("check     clean");
	ck_assert_out("stopped: TB_NODATA");
	read_back(trace, &b);
	ck_assert_int_eq(b.ret, TB_OK);
	ck_assert(b.clean);
	ck_assert_uint_eq(b.explained, 0);
	for (w = 0; w < 3; w++)
		ck_assert_uint_eq(b.per_writer[w + 1], n[w]);
	ck_assert_uint_eq(b.packets, n[0] + n[1] + n[2]);
	ck_assert_uint_eq(b.producer, 7);
	ck_assert_uint_eq(b.pid, 1234);
	ck_assert_uint_eq(b.uid, 1000);
	ck_assert_uint_eq(b.lossy, 0);
	/* stat reads it back: sequences with producer and writer */
	ck_assert_int_eq(tbtrace(stat), 0);
	/* and the tail convert writes, as a service's: the ring's "events
	 * lost" track and value, its record, TraceStats */
	ck_assert_uint_eq(b.service, 5);
	ck_assert(b.stats_last);
	ck_assert_out("sequences 4");
	ck_assert_out("0x00070001     7      1     1234     1000");
	ck_assert_out("tracks    5: 3 thread, 0 process, 1 counter, 1 child");
	ck_assert_out("stats     TraceStats: 1 buffers; chunks discarded 0");
	ck_assert_out("36 slice begins, 36 ends");
	ck_assert_out("ui        Perfetto's UI shows no data loss\n");
	ck_assert_out("check     clean");
	for (w = 0; w < 3; w++)
		twriter_free(&tw[w]);
	tring_free(&t);
}
END_TEST

START_TEST(test_convert_torn_ring_gives_what_was_published)
{
	char img[512], trace[512];
	struct twriter tw[3];
	struct tb_span sp;
	struct tring t;
	struct back b;
	struct pkt p;
	unsigned w;
	const char *conv[] = { "convert", img, trace, NULL };

	tring_new(&t, 1024, 64);
	for (w = 0; w < 3; w++)
		twriter_new(&tw[w], &t, (uint16_t)(w + 1), 0, TB_DROP);
	/* writer 1: killed with a fragment open in a chunk it published
	 * two packets in (Acquired, 2 published) */
	mk_desc(&p, 1);
	wr(&tw[0], &p);
	mk_event(&p, 1, 100, BEGIN, 0);
	wr(&tw[0], &p);
	topen_with(&tw[0], "\x58\x01", 64, 0, &sp);
	/* writer 2: killed between the two halves of a packet */
	mk_desc(&p, 2);
	wr(&tw[1], &p);
	mk_event(&p, 2, 100, BEGIN, 0);
	wr(&tw[1], &p);
	ck_assert_int_eq(twrite(&tw[1], "\x0a\x7f\x00\x00",
				0, TB_CLOSE_CONT_NEXT), TB_OK);
	topen_with(&tw[1], "\x00\x00", 64, TB_OPEN_CONT_PREV, &sp);
	/* writer 3: finishes */
	write_run(&tw[2], 3, 4);
	ck_assert_int_eq(tb_writer_release(&tw[2].w), TB_OK);
	save_image(&t, "torn.bin", img, sizeof(img));
	tmp_path(trace, sizeof(trace), "torn.pftrace");
	ck_assert_int_eq(tbtrace(conv), 1);
	ck_assert_out("acquired 2 (torn: writers held them), complete 3");
	ck_assert_out("(2 scraped from chunks writers held)");
	ck_assert_out("lost      yes");
	ck_assert_not_out("; 0 bytes never completed");	/* writer 2's */
	read_back(trace, &b);
	ck_assert_int_eq(b.ret, TB_OK);
	ck_assert_uint_eq(b.per_writer[1], 2);
	ck_assert_uint_eq(b.per_writer[2], 2);
	ck_assert_uint_eq(b.per_writer[3], 9);
	/* the two BEGINs whose ENDs were never written: no packet after
	 * them carries a flag, but the trace's tail says the ring's
	 * writers held chunks when it was imaged: explained, by the trace
	 * alone (no -t) */
	ck_assert_uint_eq(b.rule[TB_CK_SLICE_NOT_ENDED], 0);
	ck_assert_uint_eq(b.unexplained, 0);
	ck_assert_uint_ge(b.explained, 2);
	ck_assert(b.stats_last);
	ck_assert_out("check     lossy: data was lost; 2 violations it "
		      "caused, every one explained");
	ck_assert_out("slice-not-ended                    0         2");
	for (w = 0; w < 3; w++)
		twriter_free(&tw[w]);
	tring_free(&t);
}
END_TEST

/* A clean ring of 3 writers for the scribbling tests, not yet saved. */
static void scribble_base(struct tring *t, struct twriter *tw)
{
	unsigned w;

	tring_new(t, 1024, 64);
	for (w = 0; w < 3; w++)
		twriter_new(&tw[w], t, (uint16_t)(w + 1), 0, TB_DROP);
	for (w = 0; w < 3; w++)
		write_run(&tw[w], (uint16_t)(w + 1), 12);
	for (w = 0; w < 3; w++)
		ck_assert_int_eq(tb_writer_release(&tw[w].w), TB_OK);
}

/* The index of the @k-th chunk (from 0) written by writer @w. */
static uint32_t chunk_of(const struct tring *t, uint16_t w, unsigned k)
{
	uint32_t i;

	for (i = 0; i < t->n; i++)
		if (tb_state_of(tword(t, i)) == TB_COMPLETE &&
		    tb_state_writer(tword(t, i)) == w && !k--)
			return i;
	ck_abort_msg("writer %u has no chunk %u", w, k);
	return 0;
}

START_TEST(test_convert_scribbled_states_become_holes)
{
	char img[512], trace[512];
	struct twriter tw[3];
	struct tring t;
	struct back b;
	uint32_t c1, c2;
	const char *conv[] = { "convert", img, trace, NULL };
	unsigned w;

	scribble_base(&t, tw);
	c1 = chunk_of(&t, 1, 1);
	c2 = chunk_of(&t, 2, 1);
	tset_word(&t, c1, 0xa0000001u);		/* reserved state 101 */
	tset_word(&t, c2, spec_free(7));	/* a free tag of lap 7 */
	tset_write_pos(&t, twrite_pos(&t) + 1000000);
	save_image(&t, "scribbled.bin", img, sizeof(img));
	tmp_path(trace, sizeof(trace), "scribbled.pftrace");
	ck_assert_int_eq(tbtrace(conv), 1);
	ck_assert_out("salvage   write_pos");
	ck_assert_out("reserved state, word 0xa0000001: read as a hole");
	ck_assert_out("free tag of another lap");
	ck_assert_out("salvage   2 words: 1 reserved states, 1 free tags");
	ck_assert_out("stopped: TB_NODATA");
	/* whose chunks they were nobody knows: every writer after them is
	 * charged, so no packet is glued across a hole, no loss unflagged */
	ck_assert_out("its loss is charged to the 3 writers with chunks "
		      "after it");
	ck_assert_out("0 invalid ones replaced");
	read_back(trace, &b);
	ck_assert_int_eq(b.ret, TB_OK);
	ck_assert(b.clean);
	ck_assert_uint_ge(b.lossy, 3);
	ck_assert_uint_eq(b.per_writer[3], 25);
	ck_assert_uint_lt(b.per_writer[1], 25);
	ck_assert_uint_lt(b.per_writer[2], 25);
	ck_assert_uint_gt(b.per_writer[1], 0);
	for (w = 0; w < 3; w++)
		twriter_free(&tw[w]);
	tring_free(&t);
}
END_TEST

START_TEST(test_convert_unreadable_chunk_flags_its_writers_loss)
{
	char img[512], trace[512];
	struct twriter tw[3];
	struct tring t;
	struct back b;
	uint32_t c;
	unsigned w;
	const char *conv[] = { "convert", img, trace, NULL };
	const char *statv[] = { "stat", "-v", trace, NULL };

	scribble_base(&t, tw);
	/* writer 1's second chunk: a first size past the chunk's end */
	c = chunk_of(&t, 1, 1);
	tchunk(&t, c)[t.cs - 2] = 0xff;
	tchunk(&t, c)[t.cs - 1] = 0xff;
	save_image(&t, "baddir.bin", img, sizeof(img));
	tmp_path(trace, sizeof(trace), "baddir.pftrace");
	ck_assert_int_eq(tbtrace(conv), 1);
	/* it held the middle of a split packet: the tail after it goes,
	 * and the chain is seen broken, never glued to another packet */
	ck_assert_out("is unreadable: 1 packet tail after it dropped; the "
		      "loss is flagged on its next chunk");
	ck_assert_out("0 invalid ones replaced");
	ck_assert_out("1 malformed");
	ck_assert_out("1 chunks carried the writer's loss flag");
	read_back(trace, &b);
	ck_assert_int_eq(b.ret, TB_OK);
	ck_assert_uint_lt(b.per_writer[1], 25);
	ck_assert_uint_eq(b.per_writer[2], 25);
	ck_assert_uint_ge(b.lossy, 1);
	/* what the lost chunk orphaned is explained by that flag */
	ck_assert(b.clean);
	ck_assert_out("check     lossy");
	/* stat -v says where the flag fell, and why; lossy: status 3 */
	ck_assert_int_eq(tbtrace(statv), 3);
	ck_assert_out("0x100 SMB_FULL                         1 packets");
	/* the lost chunk's id is skipped (tbbridge.h): a gap, not a chain
	 * broken by whatever came next */
	ck_assert_out("seq 0x00010001  0x0113 PRESENT READ_GAP REASSEMBLY_GAP "
		      "SMB_FULL");
	/* and what Perfetto's UI shows of it: the flag, on a sequence the
	 * TraceStats packet lists, is a stat of severity data_loss */
	ck_assert_out("ui        Perfetto's UI shows data loss: 1 stat, 1 in "
		      "all");
	ck_assert_out("  traced_buf_sequence_packet_loss[0]");
	for (w = 0; w < 3; w++)
		twriter_free(&tw[w]);
	tring_free(&t);
}
END_TEST

START_TEST(test_convert_refuses_what_is_no_ring)
{
	char img[512], trace[512];
	const char *conv[] = { "convert", img, trace, NULL };
	struct tring t;
	uint8_t zero[4096];

	memset(zero, 0, sizeof(zero));
	tmp_path(img, sizeof(img), "zero.bin");
	tmp_path(trace, sizeof(trace), "zero.pftrace");
	spit(img, zero, sizeof(zero));
	ck_assert_int_eq(tbtrace(conv), 2);
	ck_assert_out("TB_EMAGIC (-21)");
	ck_assert_int_ne(access(trace, F_OK), 0);	/* nothing left */
	tring_new(&t, 1024, 64);
	tmp_path(img, sizeof(img), "short.bin");
	spit(img, t.mem, TB_RING_HDR_SIZE - 1);	/* not even a header */
	ck_assert_int_eq(tbtrace(conv), 2);
	ck_assert_out("TB_ESHORT");
	poke32(&t.r.hdr->version, 9);
	spit(img, t.mem, t.len);
	ck_assert_int_eq(tbtrace(conv), 2);
	ck_assert_out("TB_EVERSION");
	poke32(&t.r.hdr->version, TB_RING_VERSION);
	poke32(&t.r.hdr->chunk_log2, 20);
	spit(img, t.mem, t.len);
	ck_assert_int_eq(tbtrace(conv), 2);
	ck_assert_out("TB_EGEOMETRY");
	tring_free(&t);
	tmp_path(img, sizeof(img), "missing.bin");
	ck_assert_int_eq(tbtrace(conv), 2);
	ck_assert_out("No such file");
}
END_TEST

/* ------------------------------------------------------------------------
 * ring
 */

/*
 * A ring of 16 x 1024 B in the shared mapping @mem of @len bytes: writer
 * 1 wrote and released, writer 2 holds a chunk with a fragment open,
 * writer 3 held one the reader scraped and never acknowledged (pinned).
 */
static void live_ring(void *mem, size_t len)
{
	struct twriter tw[3];
	struct treader tr;
	struct tring t;
	struct tb_span sp;
	unsigned w;

	memset(&t, 0, sizeof(t));
	t.cs = 1024;
	t.n = 16;
	t.mem = mem;
	t.len = len;
	ck_assert_int_eq(tb_ring_init(&t.r, mem, len, 1024, 16), TB_OK);
	for (w = 0; w < 3; w++)
		twriter_new(&tw[w], &t, (uint16_t)(w + 1), 0, TB_DROP);
	write_run(&tw[0], 1, 3);
	ck_assert_int_eq(tb_writer_release(&tw[0].w), TB_OK);
	treader_new(&tr, &t);
	ck_assert_int_ge(tdrain(&tr.rd, 16, TB_READ_SCRAPE, NULL, NULL), 0);
	topen_with(&tw[2], "abc", 16, 0, &sp);
	ck_assert_int_eq(tdrain(&tr.rd, 16, TB_READ_SCRAPE, NULL, NULL), 1);
	topen_with(&tw[1], "abc", 16, 0, &sp);
	treader_free(&tr);
	for (w = 0; w < 3; w++)
		twriter_free(&tw[w]);
}

START_TEST(test_ring_shows_a_live_ring_read_only)
{
	char path[512];
	const char *ring[] = { "ring", path, NULL };
	const char *watch[] = { "ring", "-w", "-n", "2", path, NULL };
	size_t len = tb_ring_size(1024, 16);
	struct stat st;
	void *mem;
	int fd;

	tmp_path(path, sizeof(path), "live.ring");
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)len), 0);
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert(mem != MAP_FAILED);
	close(fd);
	live_ring(mem, len);
	ck_assert_int_eq(tbtrace(ring), 0);
	ck_assert_out("16 x 1024 B chunks");
	ck_assert_out("magic TBR1, ABI version 3, header 512 B");
	ck_assert_out("write_pos 3, read_pos 2: distance 1 of 16 chunks");
	ck_assert_out("scrapes 1");
	/* every counter by its name, none by an index */
	ck_assert_out("futex-waits 0 futex-wakes");
	ck_assert_not_out("writers[");
	ck_assert_not_out("reader[");
	ck_assert_out("held      1 chunk: 2 (writer 2, 0 published)");
	ck_assert_out("pinned    1 chunk: 1 (writer 3, 0 published)");
	ck_assert_out("  rewrite              1  ##");
	ck_assert_out("  free                14  ");
	/* read-only: the tool changed nothing */
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(tb_state_of(((uint32_t *)mem)[(512 + 1024) / 4]),
			 TB_REWRITE);
	ck_assert_int_eq(tbtrace(watch), 0);
	ck_assert_uint_eq(count_of("cursors   write_pos 3"), 2);
	ck_assert_uint_eq(count_of("\033[H\033[2J"), 2);
	ck_assert_out("rate      written 0 chunks/s, read 0 chunks/s");
	munmap(mem, len);
}
END_TEST

START_TEST(test_ring_through_proc_fd_of_a_memfd)
{
	char path[64];
	const char *ring[] = { "ring", path, NULL };
	size_t len = tb_ring_size(1024, 16);
	void *mem;
	int fd;

	fd = memfd_create("tbtrace-test", 0);	/* inherited by the run */
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)len), 0);
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert(mem != MAP_FAILED);
	live_ring(mem, len);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ck_assert_int_eq(tbtrace(ring), 0);
	ck_assert_out("pinned    1 chunk");
	munmap(mem, len);
	close(fd);
}
END_TEST

START_TEST(test_ring_refuses_what_is_no_ring)
{
	char path[512];
	const char *ring[] = { "ring", path, NULL };
	uint8_t junk[1024];

	memset(junk, 0x5a, sizeof(junk));
	tmp_path(path, sizeof(path), "junk.ring");
	spit(path, junk, sizeof(junk));
	ck_assert_int_eq(tbtrace(ring), 2);
	ck_assert_out("TB_EMAGIC (-21): not a tbring ring");
	spit(path, junk, 100);
	ck_assert_int_eq(tbtrace(ring), 2);
	ck_assert_out("TB_ESHORT");
	spit(path, junk, 0);
	ck_assert_int_eq(tbtrace(ring), 2);
	ck_assert_out("empty");
	tmp_path(path, sizeof(path), "missing.ring");
	ck_assert_int_eq(tbtrace(ring), 2);
	ck_assert_out("No such file");
}
END_TEST

/* ------------------------------------------------------------------------
 * stat, usage
 */
START_TEST(test_stat_exit_status_follows_the_verdict)
{
	char img[512], trace[512], cut[512];
	const char *conv[] = { "convert", "-q", img, trace, NULL };
	const char *stat[] = { "stat", trace, NULL };
	const char *statv[] = { "stat", "-v", trace, NULL };
	const char *statt[] = { "stat", "-t", trace, NULL };
	const char *statc[] = { "stat", cut, NULL };
	struct twriter tw;
	struct tring t;
	struct pkt p;
	size_t len = 0;
	char *body;

	/* a BEGIN with no END and an END with no BEGIN */
	tring_new(&t, 1024, 16);
	twriter_new(&tw, &t, 1, 0, TB_DROP);
	mk_desc(&p, 1);
	wr(&tw, &p);
	mk_event(&p, 1, 100, END, 0);
	wr(&tw, &p);
	mk_event(&p, 1, 110, BEGIN, 0);
	wr(&tw, &p);
	ck_assert_int_eq(tb_writer_release(&tw.w), TB_OK);
	save_image(&t, "bad.bin", img, sizeof(img));
	tmp_path(trace, sizeof(trace), "bad.pftrace");
	ck_assert_int_eq(tbtrace(conv), 1);
	ck_assert_str_eq(out, "");			/* -q */
	ck_assert_int_eq(tbtrace(stat), 1);
	ck_assert_out("check     2 violations nothing explains");
	ck_assert_out("end-without-begin");
	ck_assert_out("slice-not-ended");
	ck_assert_int_eq(tbtrace(statv), 1);
	ck_assert_out("  packet 1        seq 0x00010001  end-without-begin");
	/* a lost tail explains the open slice, not the END */
	ck_assert_int_eq(tbtrace(statt), 1);
	ck_assert_out("check     1 violations nothing explains");
	ck_assert_out("slice-not-ended                    0         1");
	/* cut inside its last packet */
	body = spawn_slurp(trace, &len);
	tmp_path(cut, sizeof(cut), "cut.pftrace");
	spit(cut, body, len - 4);
	ck_assert_int_eq(tbtrace(statc), 1);
	ck_assert_out("truncated");
	/* not a trace at all */
	spit(cut, "\x12\x34", 2);
	ck_assert_int_eq(tbtrace(statc), 2);
	ck_assert_out("NOT A TRACE");
	free(body);
	twriter_free(&tw);
	tring_free(&t);
}
END_TEST

/*
 * stat reads standard input for "-", as stream does; a file that is no
 * trace gets the verdict alone, not a summary of zeros before it; an
 * unknown option gets the usage.
 */
START_TEST(test_stat_reads_stdin_and_says_only_why_a_file_is_no_trace)
{
	char img[512], trace[512], text[512];
	struct twriter tw;
	struct tring t;
	const char *conv[] = { "convert", "-q", img, trace, NULL };
	const char *stdin_[] = { "stat", "-", NULL };
	const char *notrace[] = { "stat", text, NULL };
	const char *badopt[] = { "stat", "-x", trace, NULL };
	int fd;

	tring_new(&t, 1024, 8);
	twriter_new(&tw, &t, 1, 0, TB_DROP);
	write_run(&tw, 1, 4);
	ck_assert_int_eq(tb_writer_release(&tw.w), TB_OK);
	save_image(&t, "stdin.bin", img, sizeof(img));
	tmp_path(trace, sizeof(trace), "stdin.pftrace");
	ck_assert_int_eq(tbtrace(conv), 0);
	fd = open(trace, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(dup2(fd, STDIN_FILENO), STDIN_FILENO);
	close(fd);
	ck_assert_int_eq(tbtrace(stdin_), 0);
	ck_assert_out("file      -: ");
	ck_assert_out("check     clean");
	tmp_path(text, sizeof(text), "notrace.txt");
	spit(text, "# not a trace\n\nbut some text\n", 29);
	ck_assert_int_eq(tbtrace(notrace), 2);
	ck_assert_out("NOT A TRACE");
	ck_assert_not_out("sequences");
	ck_assert_not_out("events ");
	ck_assert_not_out("lost ");
	ck_assert_int_eq(tbtrace(badopt), 2);
	ck_assert_out("usage: tbtrace stat");
	twriter_free(&tw);
	tring_free(&t);
}
END_TEST

START_TEST(test_usage_errors_exit_2)
{
	const char *none[] = { NULL };
	const char *bogus[] = { "frobnicate", NULL };
	const char *help[] = { "help", NULL };
	const char *version[] = { "--version", NULL };
	const char *two[] = { "stat", "a", "b", NULL };
	const char *prod[] = { "convert", "-P", "0", "a", "b", NULL };
	const char *iters[] = { "ring", "-n", "x", "a", NULL };

	ck_assert_int_eq(tbtrace(none), 2);
	ck_assert_out("usage: tbtrace stat");
	ck_assert_int_eq(tbtrace(bogus), 2);
	ck_assert_out("unknown command 'frobnicate'");
	ck_assert_int_eq(tbtrace(help), 0);
	ck_assert_out("tbtrace convert");
	/* the exit statuses of stat, as the tests above see them */
	ck_assert_out("3 lossy: data");
	ck_assert_out("1 violations of");
	ck_assert_int_eq(tbtrace(version), 0);
	ck_assert_out("tbtrace " TBRING_VERSION_STRING " (tbring, ring ABI ");
	ck_assert_int_eq(tbtrace(two), 2);
	ck_assert_int_eq(tbtrace(prod), 2);
	ck_assert_out("a producer id is 1 to 65535");
	ck_assert_int_eq(tbtrace(iters), 2);
}
END_TEST

/* ------------------------------------------------------------------------
 * Suite
 */
static int rm_fn(const char *path, const struct stat *st, int flag,
		 struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int main(void)
{
	const char *base = getenv("TMPDIR");
	Suite *s = suite_create("tbtrace");
	TCase *t = tcase_create("tool");
	SRunner *sr;
	int failed;

	snprintf(tmp_root, sizeof(tmp_root), "%s/tbtrace-test-XXXXXX",
		 base && *base ? base : "/tmp");
	if (!mkdtemp(tmp_root)) {
		perror(tmp_root);
		return EXIT_FAILURE;
	}
	tcase_set_timeout(t, 60);
	tcase_add_test(t, test_convert_clean_ring_keeps_every_packet);
	tcase_add_test(t, test_convert_torn_ring_gives_what_was_published);
	tcase_add_test(t, test_convert_scribbled_states_become_holes);
	tcase_add_test(t,
		test_convert_unreadable_chunk_flags_its_writers_loss);
	tcase_add_test(t, test_convert_refuses_what_is_no_ring);
	tcase_add_test(t, test_ring_shows_a_live_ring_read_only);
	tcase_add_test(t, test_ring_through_proc_fd_of_a_memfd);
	tcase_add_test(t, test_ring_refuses_what_is_no_ring);
	tcase_add_test(t, test_stat_exit_status_follows_the_verdict);
	tcase_add_test(t,
		test_stat_reads_stdin_and_says_only_why_a_file_is_no_trace);
	tcase_add_test(t, test_usage_errors_exit_2);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (getenv("TB_KEEP_TMP"))	/* for a look at the images */
		printf("scratch files kept in %s\n", tmp_root);
	else
		nftw(tmp_root, rm_fn, 16, FTW_DEPTH | FTW_PHYS);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
