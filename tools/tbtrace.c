/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copyright (c) 2026, tbring contributors.  BSD-2-Clause: see COPYING, or
 * https://opensource.org/license/bsd-2-clause for the text.
 *
 * tbtrace - look at traces and rings.
 *
 *   tbtrace stat [-v] [-t] [-m BYTES] FILE.pftrace|-
 *	packets, sequences, tracks, slices, counters, loss by DataLossReason
 *	bit and where it falls, and the verdict of tbcheck.h's checker
 *   tbtrace ring [-w] [-n N] PATH
 *	a live ring mapped read-only (a file, a /dev/shm object,
 *	/proc/PID/fd/N of a producer's memfd): header, geometry, cursors,
 *	counters, a histogram of chunk states, chunks held and pinned
 *   tbtrace convert [-P ID] [-p PID] [-u UID] [-b SIZE] [-O OFF] [-q] IMG OUT
 *	a ring's raw image (from a RAM dump or a core file) drained offline
 *	into a Perfetto trace, with every loss reported; the ring is found
 *	at any 4-byte aligned offset of a larger image, and a cut image
 *	gives its complete chunks
 *   tbtrace stream [-P ID] [-p PID] [-u UID] [-b SIZE] [-q] IN|- OUT
 *	a target's tblink.h byte stream (tools/tbt_stream.c) into a trace
 *   tbtrace --version
 *
 * Exit status of stat (TBT_EXIT_*): 0 clean, nothing lost; 1 violations
 * of the importer's rules that no loss explains; 2 the command line is
 * wrong, or the input could not be read or checked (not a trace, I/O,
 * the checker's budget); 3 data was lost (loss flags, buffers that
 * discarded or overwrote chunks, producers that died or were refused
 * writes), and every violation it caused is explained.  ring: 0, or 2.
 * convert: 0 nothing lost, 1 something lost or a violation (the report
 * names it), 2 refused.
 *
 * Every input is untrusted.  A trace is read whole and checked within a
 * memory budget; a ring image is copied into private memory, and what the
 * ring reader would stop on is turned into holes there first.  A live
 * ring is mapped PROT_READ and only read; a mapping that shrinks under
 * the tool (SIGBUS) is reported, not crashed on.
 *
 * Defining TBTRACE_NO_MAIN leaves main() out (tbt_main() is the same), so
 * a fuzzer can include this file and call tbt_convert() and
 * tbt_stat_image() on its own bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tbbridge.h"
#include "tbtrace.h"
#include "tbcheck.h"

#define TBT_MAX_BUFS	16		/* central buffers convert makes */
#define TBT_LIST	16		/* chunks listed per kind */
#define TBT_ROWS	64		/* table rows shown without -v */
#define TBT_VIOLATIONS	1000		/* violations listed with -v */

/* stat's exit status */
#define TBT_EXIT_CLEAN		0
#define TBT_EXIT_VIOLATIONS	1
#define TBT_EXIT_ERROR		2
#define TBT_EXIT_LOSSY		3

/* ------------------------------------------------------------------------
 * Output: a report stream that may be NULL (say nothing).
 */
static void say(FILE *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(FILE *f, const char *fmt, ...)
{
	va_list ap;

	if (!f)
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
}

static unsigned long long ull(uint64_t v)
{
	return (unsigned long long)v;
}

/* A packet index, or "-" for none. */
static const char *pkt(char *buf, size_t n, uint64_t v)
{
	if (v == TB_CHECK_NONE)
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%llu", ull(v));
	return buf;
}

static const char *tbt_result_name(int r)
{
	switch (r) {
	case TB_OK: return "TB_OK";
	case TB_EINVAL: return "TB_EINVAL";
	case TB_EALIGN: return "TB_EALIGN";
	case TB_ESHORT: return "TB_ESHORT";
	case TB_EMAGIC: return "TB_EMAGIC";
	case TB_EVERSION: return "TB_EVERSION";
	case TB_EHEADER: return "TB_EHEADER";
	case TB_EGEOMETRY: return "TB_EGEOMETRY";
	case TB_EPROTO: return "TB_EPROTO";
	case TB_EPINNED: return "TB_EPINNED";
	case TB_ENOMEM: return "TB_ENOMEM";
	case TB_ELIMIT: return "TB_ELIMIT";
	case TB_EFRAMING: return "TB_EFRAMING";
	case TB_NODATA: return "TB_NODATA";
	case TB_LIMIT: return "TB_LIMIT";
	case TB_RETRY_LATER: return "TB_RETRY_LATER";
	}
	return "?";
}

static const char *const tbt_loss_bit[TB_CHECK_LOSS_BITS] = {
	"PRESENT", "READ_GAP", "CHUNK_CORRUPTED", "ORPHAN_CONTINUATION",
	"REASSEMBLY_GAP", "REASSEMBLY_BROKEN_CHAIN", "OVERWRITE",
	"WRITER_ABORT", "SMB_FULL",
};

static const char *const tbt_state[8] = {
	"free", "acquired", "complete", "rewrite", "acked",
	"reserved-5", "reserved-6", "reserved-7",
};

static const char *const tbt_proto[] = {
	"running", "reserved state", "free tag of another lap",
	"acknowledged word not reclaimable", "write_pos beyond the ring",
};

static const char *tbt_proto_rule(uint32_t r)
{
	return r < sizeof(tbt_proto) / sizeof(tbt_proto[0]) ? tbt_proto[r] :
							       "unknown rule";
}

/* ------------------------------------------------------------------------
 * Files.
 */
#define TBT_READ_MAX	(SIZE_MAX / 2)

/*
 * Reads all of @path (regular file, pipe or /proc entry) into memory that
 * malloc() aligns for any object; 0, or -1 with the reason on stderr.
 */
static int tbt_slurp(const char *path, uint8_t **out, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = NULL, *nb;
	struct stat st;
	ssize_t got;
	int fd;

	/* "-": standard input (a copy of the descriptor, closed below) */
	fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) :
				 dup(STDIN_FILENO);
	if (fd < 0) {
		fprintf(stderr, "tbtrace: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0)
		cap = (size_t)st.st_size + 1;
	for (;;) {
		if (!buf || n == cap) {
			if (buf)
				cap = cap < TBT_READ_MAX / 2 ? cap * 2 : 0;
			nb = cap ? (uint8_t *)realloc(buf, cap) : NULL;
			if (!nb) {
				fprintf(stderr, "tbtrace: %s: too large to "
					"read into memory\n", path);
				goto fail;
			}
			buf = nb;
		}
		got = read(fd, buf + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			fprintf(stderr, "tbtrace: %s: %s\n", path,
				strerror(errno));
			goto fail;
		}
		if (!got)
			break;
		n += (size_t)got;
	}
	close(fd);
	*out = buf;
	*len = n;
	return 0;
fail:
	free(buf);
	close(fd);
	return -1;
}

/* Sizes: a number with an optional k, m or g suffix. */
static int tbt_size(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		return -1;
	switch (*end) {
	case 'k': case 'K': n <<= 10; end++; break;
	case 'm': case 'M': n <<= 20; end++; break;
	case 'g': case 'G': n <<= 30; end++; break;
	}
	if (*end)
		return -1;
	*v = n;
	return 0;
}

/* ------------------------------------------------------------------------
 * stat: a trace, and the checker's verdict.
 */
struct tbt_stat_opts {
	int verbose;
	size_t budget;
	bool tail_lost;			/* -t */
};

struct tbt_vlist {
	FILE *f;
	unsigned shown;
	uint64_t more;
};

static void tbt_violation(void *ctx, const struct tb_check_violation *v)
{
	struct tbt_vlist *l = (struct tbt_vlist *)ctx;

	if (l->shown == TBT_VIOLATIONS) {
		l->more++;
		return;
	}
	l->shown++;
	say(l->f, "  packet %-8llu seq 0x%08x  %-24s%s detail 0x%llx\n",
	    ull(v->packet), v->seq_id, tb_check_rule_name(v->rule),
	    v->explained ? " (loss)" : "       ", ull(v->detail));
}

static const char *tbt_kind(enum tb_check_track_kind k)
{
	static const char *const name[] = {
		"undefined", "thread", "process", "counter", "child",
		"global", "seq-thread",
	};

	return (unsigned)k < sizeof(name) / sizeof(name[0]) ? name[k] : "?";
}

static void tbt_stat_seqs(FILE *f, const struct tb_check *c, int verbose)
{
	char a[24], b[24];
	uint32_t i;

	say(f, "sequences %u\n", c->nseqs);
	if (!c->nseqs)
		return;
	say(f, "  (packets: count, and the index in the file of the first "
	    "and last that carry a loss flag)\n");
	say(f, "  %-10s %5s %6s %8s %8s %9s %9s %6s %7s %6s %9s %10s %10s\n",
	    "seq id", "prod", "writer", "pid", "uid", "packets", "events",
	    "clears", "skipped", "lossy", "loss bits", "1st lossy",
	    "last lossy");
	for (i = 0; i < c->nseqs; i++) {
		const struct tb_check_seq *s = &c->seqs[i];
		char pid[16], uid[16];

		if (i == TBT_ROWS && !verbose) {
			say(f, "  ... %u more (-v lists them)\n", c->nseqs - i);
			break;
		}
		if (s->has & TB_TRACE_HAS_PID)
			snprintf(pid, sizeof(pid), "%d", s->pid);
		else
			snprintf(pid, sizeof(pid), "-");
		if (s->has & TB_TRACE_HAS_UID)
			snprintf(uid, sizeof(uid), "%u", s->uid);
		else
			snprintf(uid, sizeof(uid), "-");
		say(f, "  0x%08x %5u %6u %8s %8s %9llu %9llu %6llu %7llu "
		    "%6llu %#9x %10s %10s\n", s->seq_id, s->seq_id >> 16,
		    s->seq_id & 0xffffu, pid, uid, ull(s->packets),
		    ull(s->events), ull(s->clears), ull(s->skipped),
		    ull(s->lossy_packets), s->loss_bits,
		    pkt(a, sizeof(a), s->first_loss),
		    pkt(b, sizeof(b), s->last_loss));
	}
}

static void tbt_stat_tracks(FILE *f, const struct tb_check *c, int verbose)
{
	uint64_t kinds[7] = { 0 };
	char a[24];
	uint32_t i;

	for (i = 0; i < c->ntracks; i++)
		kinds[c->tracks[i].kind < 7 ? c->tracks[i].kind : 0]++;
	say(f, "tracks    %u: %llu thread, %llu process, %llu counter, "
	    "%llu child, %llu implicit, %llu with no descriptor\n",
	    c->ntracks, ull(kinds[1]), ull(kinds[2]), ull(kinds[3]),
	    ull(kinds[4]), ull(kinds[5] + kinds[6]), ull(kinds[0]));
	if (!c->ntracks)
		return;
	say(f, "  (descr. at: the index in the file of the packet that "
	    "defines the track)\n");
	say(f, "  %-18s %-10s %8s %8s %18s %9s %8s %11s\n", "uuid", "kind",
	    "pid", "tid", "parent", "events", "slices", "descr. at");
	for (i = 0; i < c->ntracks; i++) {
		const struct tb_check_track *t = &c->tracks[i];

		if (i == TBT_ROWS && !verbose) {
			say(f, "  ... %u more (-v lists them)\n",
			    c->ntracks - i);
			break;
		}
		say(f, "  0x%016llx %-10s %8d %8d 0x%016llx %9llu %8llu "
		    "%11s\n", ull(t->uuid), tbt_kind(t->kind), t->pid, t->tid,
		    ull(t->parent), ull(t->events), ull(t->slices),
		    pkt(a, sizeof(a), t->descriptor));
	}
}

static void tbt_stat_loss(FILE *f, const struct tb_check *c)
{
	char a[24];
	unsigned i;

	say(f, "loss      %llu packets carry previous_packet_dropped\n",
	    ull(c->stats.lossy_packets));
	for (i = 0; i < TB_CHECK_LOSS_BITS; i++)
		if (c->stats.loss_bit_packets[i])
			say(f, "  %#05x %-24s %9llu packets, first at packet "
			    "%s\n", 1u << i, tbt_loss_bit[i],
			    ull(c->stats.loss_bit_packets[i]),
			    pkt(a, sizeof(a), c->stats.loss_bit_first[i]));
}

/* -v: every packet that carries a loss flag, and its bits. */
static void tbt_stat_lossy(FILE *f, const uint8_t *img, size_t len)
{
	struct tb_trace_packet tp;
	struct tb_pb_reader r;
	uint64_t idx = 0, shown = 0;
	unsigned i;

	tb_pb_reader_init(&r, len ? img : (const uint8_t *)"", len);
	while (tb_trace_next(&r, &tp) > 0) {
		if (tp.dropped && shown++ < TBT_VIOLATIONS) {
			say(f, "  packet %-8llu seq 0x%08llx  %#06llx",
			    ull(idx), ull(tp.trusted_seq_id),
			    ull(tp.dropped));
			for (i = 0; i < TB_CHECK_LOSS_BITS; i++)
				if (tp.dropped >> i & 1)
					say(f, " %s", tbt_loss_bit[i]);
			say(f, "\n");
		}
		idx++;
	}
	if (shown > TBT_VIOLATIONS)
		say(f, "  ... %llu more\n", ull(shown - TBT_VIOLATIONS));
}

/* Flows, the TraceStats packet and the producers' ends the trace holds. */
static void tbt_stat_service(FILE *f, const struct tb_check *c)
{
	const struct tb_check_stats *st = &c->stats;

	say(f, "flows     %llu begun, %llu continued, %llu ended, %llu "
	    "still open at the end; %llu ids on more than one sequence "
	    "(joined by the importer)\n", ull(st->flows_begun),
	    ull(st->flow_steps), ull(st->flows_ended), ull(st->flows_open),
	    ull(st->flows_shared));
	if (st->trace_stats)
		say(f, "stats     TraceStats: %llu buffers; chunks discarded "
		    "%llu, overwritten %llu; bytes never completed %llu; "
		    "patches failed %llu; ABI violations %llu; chunks "
		    "refused before a buffer %llu; invalid packets %llu\n",
		    ull(st->ts_buffers), ull(st->ts_chunks_discarded),
		    ull(st->ts_chunks_overwritten), ull(st->ts_unread_bytes),
		    ull(st->ts_patches_failed), ull(st->ts_abi_violations),
		    ull(st->ts_refused_chunks), ull(st->ts_invalid_packets));
	else
		say(f, "stats     no TraceStats packet\n");
	if (st->producer_ends)
		say(f, "producers %llu rings recorded by the service: %llu "
		    "died, %llu more lost data at their end (chunks held, "
		    "writes refused)\n", ull(st->producer_ends),
		    ull(st->producer_deaths), ull(st->producers_lossy));
}

/* The scheduling the ftrace sched events make: CPU time per thread. */
static void tbt_stat_sched(FILE *f, const struct tb_check *c, int verbose)
{
	const struct tb_check_sched *k = &c->sched;
	uint32_t i;

	if (!k->bundles)
		return;
	say(f, "sched     %llu ftrace events: %llu switches, %llu wakings, "
	    "%llu blocked reasons; %llu ns of CPU time in slices that "
	    "ended\n", ull(k->events), ull(k->switches), ull(k->wakings),
	    ull(k->blocked_reasons), ull(k->cpu_ns));
	if (!k->nthreads)
		return;
	say(f, "  (tid 0 is the idle task; cpu ns: in its sched slices that "
	    "ended, as trace_processor's sched table sums them)\n");
	say(f, "  %8s %14s %6s %8s %8s %8s %8s %8s %8s %4s\n", "tid",
	    "cpu ns", "share", "slices", "blocked", "reasons", "wakes",
	    "irq", "spurious", "end");
	for (i = 0; i < k->nthreads; i++) {
		const struct tb_check_thread *t = &k->threads[i];

		if (i == TBT_ROWS && !verbose) {
			say(f, "  ... %u more (-v lists them)\n",
			    k->nthreads - i);
			break;
		}
		say(f, "  %8d %14llu %5.1f%% %8llu %8llu %8llu %8llu %8llu "
		    "%8llu %4s\n", t->tid, ull(t->cpu_ns), k->cpu_ns ?
		    100.0 * (double)t->cpu_ns / (double)k->cpu_ns : 0.0,
		    ull(t->slices), ull(t->blocked), ull(t->reasons),
		    ull(t->wakes), ull(t->irq_wakes), ull(t->spurious),
		    t->running ? "run" : "-");
	}
}

static bool tbt_lossy(const struct tb_check *c);

/*
 * What Perfetto's UI shows as data loss (tbcheck.h's model of the stats of
 * severity data_loss the importer sets from TraceStats), and whether that
 * leaves out a loss the trace holds.
 */
static void tbt_stat_ui(FILE *f, const struct tb_check *c)
{
	const struct tb_check_ui *u = &c->ui;
	uint64_t rows, sum = tb_check_ui_loss(c, &rows);
	unsigned k, i;

	if (!sum) {
		say(f, "ui        Perfetto's UI shows no data loss%s\n",
		    tbt_lossy(c) ? ", although the trace holds some: its "
		    "TraceStats does not say it where the importer reads it" :
		    "");
		return;
	}
	say(f, "ui        Perfetto's UI shows data loss: %llu stat%s, %llu "
	    "in all\n", ull(rows), rows == 1 ? "" : "s", ull(sum));
	for (k = 0; k < TB_CK_UI_MAX; k++)
		for (i = 0; i < TB_CHECK_UI_BUFS; i++)
			if (u->buf[k][i])
				say(f, "  %s[%u]%*s %llu\n",
				    tb_check_ui_name((int)k), i,
				    (int)(44 - strlen(tb_check_ui_name(
					(int)k))), "", ull(u->buf[k][i]));
	if (u->flushes_failed)
		say(f, "  traced_flushes_failed %llu\n",
		    ull(u->flushes_failed));
	if (u->final_flush_failed)
		say(f, "  traced_final_flush_failed %llu\n",
		    ull(u->final_flush_failed));
}

/* Whether the trace says data was lost (explained or not). */
static bool tbt_lossy(const struct tb_check *c)
{
	const struct tb_check_stats *st = &c->stats;

	return tb_check_total(c, true) || st->lossy_packets ||
	       st->ts_chunks_discarded || st->ts_chunks_overwritten ||
	       st->ts_patches_failed || st->ts_abi_violations ||
	       st->ts_unread_bytes ||
	       st->ts_refused_chunks || st->ts_invalid_packets ||
	       st->producer_deaths || st->producers_lossy;
}

/* The verdict; returns the exit status (TBT_EXIT_*). */
static int tbt_verdict(FILE *f, const struct tb_check *c, int ret)
{
	char a[24];
	unsigned i;

	if (ret == TB_EFRAMING)
		say(f, "check     NOT A TRACE: packet %llu (byte %llu) is not "
		    "a Trace.packet record; Perfetto refuses the file\n",
		    ull(c->rule[TB_CK_NOT_A_TRACE].first),
		    ull(c->rule[TB_CK_NOT_A_TRACE].first_offset));
	else if (ret)
		say(f, "check     INCOMPLETE: %s at packet %llu (budget %zu "
		    "bytes, -m raises it)\n", tb_strerror(ret),
		    ull(c->error_packet), c->max_bytes);
	else if (tb_check_clean(c) && !tbt_lossy(c))
		say(f, "check     clean: nothing lost, nothing Perfetto's "
		    "importer would drop or misplace\n");
	else if (tb_check_clean(c))
		say(f, "check     lossy: data was lost; %llu violations it "
		    "caused, every one explained (a loss flag, TraceStats, a "
		    "producer's end)\n", ull(tb_check_total(c, true)));
	else
		say(f, "check     %llu violations nothing explains\n",
		    ull(tb_check_total(c, false)));
	if (tb_check_total(c, false) || tb_check_total(c, true)) {
		say(f, "  (first at: the index in the file of the first "
		    "unexplained one, else of the first explained one)\n");
		say(f, "  %-24s %11s %9s %12s %10s %12s\n", "rule",
		    "unexplained", "explained", "first at", "first seq",
		    "first detail");
		for (i = 0; i < TB_CK_MAX; i++) {
			const struct tb_check_count *k = &c->rule[i];

			if (!k->count && !k->explained)
				continue;
			say(f, "  %-24s %11llu %9llu %12s 0x%08x %#12llx\n",
			    tb_check_rule_name((int)i), ull(k->count),
			    ull(k->explained),
			    pkt(a, sizeof(a), k->count ? k->first :
				k->first_explained),
			    k->count ? k->first_seq : k->first_explained_seq,
			    ull(k->count ? k->first_detail : 0));
		}
		for (i = 0; i < TB_CK_MAX; i++)
			if (c->rule[i].count || c->rule[i].explained)
				say(f, "  %-24s %s\n",
				    tb_check_rule_name((int)i),
				    tb_check_rule_text((int)i));
	}
	if (ret)
		return TBT_EXIT_ERROR;
	if (!tb_check_clean(c))
		return TBT_EXIT_VIOLATIONS;
	return tbt_lossy(c) ? TBT_EXIT_LOSSY : TBT_EXIT_CLEAN;
}

/*
 * Checks and describes the trace image @img; the report goes to @f (NULL:
 * none).  Returns the exit status.
 */
static int tbt_stat_image(const uint8_t *img, size_t len,
			  const struct tbt_stat_opts *o, FILE *f,
			  const char *name)
{
	struct tbt_vlist vl = { f, 0, 0 };
	struct tb_check c;
	int ret, status;

	if (tb_check_init(&c, NULL, NULL, o->budget))
		return 2;
	c.tail_lost = o->tail_lost;
	if (o->verbose) {
		c.on_violation = tbt_violation;
		c.ctx = &vl;
		say(f, "violations, in the order the check meets them:\n");
	}
	ret = tb_check_trace(&c, img, len);
	if (vl.more)
		say(f, "  ... %llu more\n", ull(vl.more));
	say(f, "file      %s: %zu bytes, %llu packets\n", name, len,
	    ull(c.stats.packets));
	if (ret == TB_EFRAMING)		/* no summary of what is no trace */
		goto verdict;
	tbt_stat_seqs(f, &c, o->verbose);
	tbt_stat_tracks(f, &c, o->verbose);
	say(f, "events    %llu track events: %llu slice begins, %llu ends, "
	    "%llu instants, %llu counters; %llu on the global track; %llu "
	    "slices open at the end\n", ull(c.stats.track_events),
	    ull(c.stats.slice_begins), ull(c.stats.slice_ends),
	    ull(c.stats.instants), ull(c.stats.counters),
	    ull(c.stats.global_track_events), ull(c.stats.open_slices));
	say(f, "other     %llu track descriptors, %llu interned entries, "
	    "%llu clock snapshots\n", ull(c.stats.descriptors),
	    ull(c.stats.interned), ull(c.stats.clock_snapshots));
	tbt_stat_loss(f, &c);
	tbt_stat_service(f, &c);
	tbt_stat_ui(f, &c);
	tbt_stat_sched(f, &c, o->verbose);
	if (o->verbose && c.stats.lossy_packets)
		tbt_stat_lossy(f, img, len);
verdict:
	status = tbt_verdict(f, &c, ret);
	tb_check_destroy(&c);
	return status;
}

static int tbt_stat_usage(void)
{
	fprintf(stderr, "usage: tbtrace stat [-v] [-t] [-m BYTES] "
		"FILE.pftrace|-\n");
	return 2;
}

static int tbt_stat_main(int argc, char **argv)
{
	struct tbt_stat_opts o = { 0, 0, false };
	uint64_t v;
	uint8_t *img;
	size_t len;
	int opt, st;

	while ((opt = getopt(argc, argv, "vtm:")) != -1) {
		switch (opt) {
		case 'v':
			o.verbose++;
			break;
		case 't':
			o.tail_lost = true;
			break;
		case 'm':
			if (tbt_size(optarg, &v) || !v || v > SIZE_MAX) {
				fprintf(stderr, "tbtrace stat: -m %s: not a "
					"size\n", optarg);
				return 2;
			}
			o.budget = (size_t)v;
			break;
		default:
			return tbt_stat_usage();
		}
	}
	if (optind + 1 != argc)
		return tbt_stat_usage();
	if (tbt_slurp(argv[optind], &img, &len))
		return 2;
	st = tbt_stat_image(img, len, &o, stdout, argv[optind]);
	free(img);
	return st;
}

/* ------------------------------------------------------------------------
 * ring: a live ring, read-only.
 */
static sigjmp_buf tbt_bus_jmp;
static volatile sig_atomic_t tbt_bus_armed;

static void tbt_on_bus(int sig)
{
	(void)sig;
	if (tbt_bus_armed)
		siglongjmp(tbt_bus_jmp, 1);
	_exit(2);
}

/* The chunk @i's state word, read once. */
static uint32_t tbt_word(const struct tb_ring *r, uint32_t i)
{
	return tb_atomic_load((const uint32_t *)(const void *)
			      (r->chunks + (size_t)i * r->chunk_size),
			      TB_RLX);
}

static void tbt_bar(FILE *f, const char *name, uint32_t n, uint32_t total)
{
	unsigned w = total ? (unsigned)((uint64_t)n * 40 / total) : 0;

	say(f, "  %-11s %10u  ", name, n);
	if (n && !w)
		w = 1;
	while (w--)
		say(f, "#");
	say(f, "\n");
}

/* Up to TBT_LIST chunks in @state, with their writer and fragments. */
static void tbt_list(FILE *f, const struct tb_ring *r, unsigned state,
		     const char *what, uint32_t count)
{
	uint32_t i, shown = 0, w;

	if (!count)
		return;
	say(f, "%-9s %u chunk%s:", what, count, count == 1 ? "" : "s");
	for (i = 0; i < r->num_chunks && shown < TBT_LIST; i++) {
		w = tbt_word(r, i);
		if (tb_state_of(w) != state)
			continue;
		say(f, "%s %u (writer %u, %u published)", shown ? "," : "", i,
		    tb_state_writer(w), tb_state_nfrags(w));
		shown++;
	}
	say(f, "%s\n", count > shown ? ", ..." : "");
}

struct tbt_prev {
	int have;
	struct tb_ring_stats s;
	struct timespec t;
};

static const char *tbt_wstat_name(unsigned i)
{
	switch (i) {
	case TB_WS_FULL: return "full";
	case TB_WS_NO_CHUNK: return "no-chunk";
	case TB_WS_HOLES: return "holes";
	case TB_WS_RELOCATIONS: return "relocations";
	case TB_WS_DROPPED_FRAGS: return "dropped-frags";
	case TB_WS_STALLS: return "stalls";
	case TB_WS_FUTEX_WAITS: return "futex-waits";
	case TB_WS_FUTEX_WAKES: return "futex-wakes";
	case TB_WS_POLLS: return "polls";
	case TB_WS_YIELDS: return "yields";
	}
	return NULL;
}

static const char *tbt_rstat_name(unsigned i)
{
	switch (i) {
	case TB_RS_EMITTED: return "emitted";
	case TB_RS_HOLES: return "holes";
	case TB_RS_SCRAPES: return "scrapes";
	case TB_RS_MALFORMED: return "malformed";
	case TB_RS_UNKNOWN_FORMAT: return "unknown-format";
	case TB_RS_RETRY_LATER: return "retry-later";
	case TB_RS_PINNED: return "pinned-holes";
	case TB_RS_FUTEX_WAITS: return "futex-waits";
	case TB_RS_FUTEX_WAKES: return "futex-wakes";
	case TB_RS_POLLS: return "polls";
	}
	return NULL;
}

/* Counters by name; ones this tool has no name for by index. */
static void tbt_counters(FILE *f, const char *what, const uint32_t *v,
			 unsigned n, const char *(*name)(unsigned))
{
	unsigned i;

	say(f, "%-9s", what);
	for (i = 0; i < n; i++) {
		if (name(i))
			say(f, " %s %u", name(i), v[i]);
		else	/* a newer ring ABI's: named by its index */
			say(f, " counter-%u %u", i, v[i]);
	}
	say(f, "\n");
}

static void tbt_ring_show(FILE *f, const char *path, const struct tb_ring *r,
			  size_t maplen, struct tbt_prev *prev)
{
	struct tb_ring_stats s;
	struct timespec now;
	double dt = 0;
	unsigned i;

	tb_ring_stats(r, &s);
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (prev->have)
		dt = (double)(now.tv_sec - prev->t.tv_sec) +
		     (double)(now.tv_nsec - prev->t.tv_nsec) * 1e-9;
	say(f, "ring      %s: %u x %u B chunks, %zu of %zu mapped bytes\n",
	    path, r->num_chunks, r->chunk_size,
	    tb_ring_size(r->chunk_size, r->num_chunks), maplen);
	say(f, "header    magic TBR1, ABI version %u, header %u B, "
	    "incremental-state generation %u\n",
	    tb_atomic_load(&r->hdr->version, TB_RLX),
	    tb_atomic_load(&r->hdr->hdr_size, TB_RLX),
	    tb_ring_generation(r));
	say(f, "cursors   write_pos %u, read_pos %u: distance %u of %u "
	    "chunks%s\n", s.write_pos, s.read_pos, s.write_pos - s.read_pos,
	    r->num_chunks, s.write_pos - s.read_pos > r->num_chunks ?
	    " (beyond the ring: a reader stops it)" : "");
	if (dt > 0)
		say(f, "rate      written %.0f chunks/s, read %.0f chunks/s\n",
		    (double)(s.write_pos - prev->s.write_pos) / dt,
		    (double)(s.read_pos - prev->s.read_pos) / dt);
	tbt_counters(f, "writers", s.wstat, TB_WS_MAX, tbt_wstat_name);
	tbt_counters(f, "reader", s.rstat, TB_RS_MAX, tbt_rstat_name);
	say(f, "stopped   %s\n", s.stopped ? tbt_proto_rule(s.stopped) :
	    "no (the reader runs, or never stopped this ring)");
	say(f, "chunks    states now:\n");
	for (i = 0; i < 8; i++)
		if (i < 5 || s.states[i])
			tbt_bar(f, tbt_state[i], s.states[i], r->num_chunks);
	tbt_list(f, r, TB_ACQUIRED, "held", s.states[TB_ACQUIRED]);
	tbt_list(f, r, TB_REWRITE, "pinned", s.pinned);
	if (s.pinned)
		say(f, "          (RewriteRequested: scraped, never "
		    "acknowledged; a writer that died holding it pins it "
		    "for good)\n");
	prev->have = 1;
	prev->s = s;
	prev->t = now;
}

/* Attaches and shows the ring @map; a SIGBUS ends it with status 2. */
static int tbt_ring_loop(const char *path, void *map, size_t len,
			 unsigned long iters, int watch)
{
	volatile unsigned long k;
	struct tbt_prev prev;
	struct tb_ring r;
	int ret;

	if (sigsetjmp(tbt_bus_jmp, 1)) {
		tbt_bus_armed = 0;
		fflush(stdout);
		fprintf(stderr, "tbtrace: %s: the mapping shrank while it "
			"was read (SIGBUS)\n", path);
		return 2;
	}
	tbt_bus_armed = 1;
	/* attach and stats only load: the read-only mapping is never
	 * written */
	ret = tb_ring_attach(&r, map, len);
	if (ret) {
		tbt_bus_armed = 0;
		fprintf(stderr, "tbtrace: %s: not a ring this tool can read: "
			"%s (%d): %s\n", path, tbt_result_name(ret), ret,
			tb_strerror(ret));
		return 2;
	}
	memset(&prev, 0, sizeof(prev));
	for (k = 0; !iters || k < iters; k++) {
		if (k)
			sleep(1);
		if (watch)
			printf("\033[H\033[2J");
		tbt_ring_show(stdout, path, &r, len, &prev);
		fflush(stdout);
	}
	tbt_bus_armed = 0;
	return 0;
}

static int tbt_ring_main(int argc, char **argv)
{
	unsigned long iters = 1;
	struct sigaction sa;
	struct stat st;
	int opt, fd, watch = 0, ret;
	char *end;
	void *map;
	size_t len;

	while ((opt = getopt(argc, argv, "wn:")) != -1) {
		switch (opt) {
		case 'w':
			watch = 1;
			iters = 0;
			break;
		case 'n':
			errno = 0;
			iters = strtoul(optarg, &end, 10);
			if (errno || *end || *optarg == '-') {
				fprintf(stderr, "tbtrace ring: -n %s: not a "
					"count\n", optarg);
				return 2;
			}
			break;
		default:
			return 2;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "usage: tbtrace ring [-w] [-n N] PATH\n");
		return 2;
	}
	fd = open(argv[optind], O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "tbtrace: %s: %s\n", argv[optind],
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return 2;
	}
	if (st.st_size <= 0 || (uint64_t)st.st_size > SIZE_MAX) {
		fprintf(stderr, "tbtrace: %s: empty, not a ring\n",
			argv[optind]);
		close(fd);
		return 2;
	}
	len = (size_t)st.st_size;
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		fprintf(stderr, "tbtrace: %s: mmap: %s\n", argv[optind],
			strerror(errno));
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = tbt_on_bus;
	sigaction(SIGBUS, &sa, NULL);
	ret = tbt_ring_loop(argv[optind], map, len, iters, watch);
	munmap(map, len);
	return ret;
}

/* ------------------------------------------------------------------------
 * convert: a ring image drained offline into a trace.
 */
struct tbt_convert_opts {
	uint16_t producer;
	int32_t pid;
	uint32_t uid;
	uint64_t buf_size;		/* 0: from the image */
	size_t budget;			/* checker's, 0: default */
	bool at;			/* -O: the ring is at @offset */
	uint64_t offset;		/* else it is looked for */
};

struct tbt_convert_result {
	int error;			/* attach refused: its code, else 0 */
	uint32_t salvaged;		/* words turned into holes */
	size_t offset;			/* of the ring in the image */
	size_t candidates;		/* rings the scan found (no -O) */
	bool truncated;			/* the image ends inside the ring */
	uint32_t complete;		/* chunks it holds whole */
	uint32_t cut_bytes;		/* of the first chunk it cuts */
	uint32_t missing;		/* chunks the image cut off */
	uint32_t missing_pending;	/* ... that held pending positions */
	uint32_t write_pos_clamped;
	uint64_t lost;			/* anything lost, any cause */
	uint64_t packets;
	bool tail_lost;			/* data after the end may be lost */
	int check;			/* checker: 0 clean, 1, 2 */
	/* for the trace's tail (tbt_convert_tail()) */
	struct tb_ring_stats ring;	/* after the drain */
	struct tb_buf_stats bufs[TBT_MAX_BUFS];	/* by BufferID order */
	unsigned nbufs;
	uint64_t refused;		/* chunks refused before a buffer */
};

/* The free word the reader expects for position @pos. */
static uint32_t tbt_free_tag(const struct tb_ring *r, uint32_t pos)
{
	return pos >> r->chunk_bits & TB_WRAP_MASK;
}

/*
 * Turns what would stop the reader into holes, in the private copy: a
 * write_pos more than a ring ahead, reserved states, free tags of another
 * lap, Acknowledged words with low bits set.  Returns words changed.
 */
#define TBT_HOLES	256	/* salvaged holes charged one by one */

static uint32_t tbt_salvage(FILE *f, struct tb_ring *r,
			    struct tbt_convert_result *res, uint32_t *holes,
			    unsigned *nholes)
{
	uint32_t rp = r->hdr->read_pos, wp = r->hdr->write_pos, pos, i, w;
	uint32_t kinds[3] = { 0 }, n = 0;
	uint32_t *word;
	const char *why;

	if (wp - rp > r->num_chunks) {
		say(f, "salvage   write_pos %u is %u positions past read_pos "
		    "%u (a ring has %u): drained one ring's worth from "
		    "read_pos\n", wp, wp - rp, rp, r->num_chunks);
		wp = rp + r->num_chunks;
		r->hdr->write_pos = wp;
		res->write_pos_clamped = 1;
	}
	for (pos = rp; pos != wp; pos++) {
		i = pos & (r->num_chunks - 1);
		word = (uint32_t *)(void *)(r->chunks +
					    (size_t)i * r->chunk_size);
		w = *word;
		if (tb_state_of(w) > TB_ACKED) {
			why = "reserved state";
			kinds[0]++;
		} else if (tb_state_of(w) == TB_FREE &&
			   w != tbt_free_tag(r, pos)) {
			why = "free tag of another lap";
			kinds[1]++;
		} else if (tb_state_of(w) == TB_ACKED &&
			   w != TB_WORD_ACKED) {
			why = "acknowledged word with bits set";
			kinds[2]++;
		} else {
			continue;
		}
		if (n < TBT_LIST)
			say(f, "salvage   chunk %u (position %u): %s, word "
			    "%#010x: read as a hole\n", i, pos, why, w);
		if (*nholes < TBT_HOLES)
			holes[(*nholes)++] = pos;
		else
			holes[TBT_HOLES - 1] = pos;	/* charged as one */
		n++;
		*word = tbt_free_tag(r, pos);
	}
	if (n > TBT_LIST)
		say(f, "salvage   ... %u more\n", n - TBT_LIST);
	if (n)
		say(f, "salvage   %u words: %u reserved states, %u free tags "
		    "of another lap, %u bad acknowledged words\n", n,
		    kinds[0], kinds[1], kinds[2]);
	res->salvaged = n;
	return n;
}

/* Whether the reader would drop chunk @chunk of @word as unreadable. */
static bool tbt_unreadable(const struct tb_ring *r, const uint8_t *chunk,
			   uint32_t word)
{
	unsigned n = tb_state_nfrags(word), w = r->width;
	uint16_t sizes[TB_FRAG_MAX];
	uint32_t cs = r->chunk_size;

	if (!n)
		return false;	/* empty: a hole, nothing was in it */
	if (tb_state_format(word) != TB_FORMAT_TARGET ||
	    !tb_frag_dir_fits(cs, n, w))
		return true;
	return tb_frag_parse_dir(chunk + cs - n * w, n, w, cs, sizes) < 0;
}

/* The chunk of position @pos, and its state word. */
static uint8_t *tbt_chunk(const struct tb_ring *r, uint32_t pos)
{
	return r->chunks + (size_t)(pos & (r->num_chunks - 1)) *
			   r->chunk_size;
}

static uint32_t *tbt_wordp(const struct tb_ring *r, uint32_t pos)
{
	return (uint32_t *)(void *)tbt_chunk(r, pos);
}

/* The next position after @pos, before @wp, holding data of @writer. */
static uint32_t tbt_next_of(const struct tb_ring *r, uint32_t pos,
			    uint32_t wp, uint16_t writer)
{
	unsigned st;

	for (pos++; pos != wp; pos++) {
		st = tb_state_of(*tbt_wordp(r, pos));
		if ((st == TB_ACQUIRED || st == TB_COMPLETE) &&
		    tb_state_writer(*tbt_wordp(r, pos)) == writer)
			break;
	}
	return pos;
}

/*
 * Drops the first fragment of the readable chunk at @pos (the tail of a
 * packet whose start was lost) and its "continues from previous" flag.
 */
static void tbt_drop_first(const struct tb_ring *r, uint32_t pos)
{
	uint8_t *chunk = tbt_chunk(r, pos);
	uint32_t *word = tbt_wordp(r, pos), cs = r->chunk_size, first;
	unsigned n = tb_state_nfrags(*word), w = r->width, i;
	uint16_t sizes[TB_FRAG_MAX];
	int32_t total;

	total = tb_frag_parse_dir(chunk + cs - n * w, n, w, cs, sizes);
	if (total < 0 || !n)
		return;
	first = sizes[0];
	memmove(chunk + TB_FRAG_PAYLOAD_OFF, chunk + TB_FRAG_PAYLOAD_OFF +
		first, (size_t)total - first);
	for (i = 1; i < n; i++)
		tb__frag_put_le(chunk + cs - i * w, w, sizes[i]);
	tb__frag_put_le(chunk + cs - n * w, w, 0);
	*word = (*word & ~(TB_F_CONT_PREV | 0xffu << TB_NFRAGS_SHIFT)) |
		(uint32_t)(n - 1) << TB_NFRAGS_SHIFT;
}

/*
 * Charges a loss to @writer's chunks after position @from: the tails at
 * their start that continue a packet begun before (or in) what was lost
 * are dropped, and the data-loss flag goes on the first chunk with
 * anything left.  Returns that chunk's position, @wp when the writer has
 * none, or the position of an unreadable one (which carries it on).
 */
static uint32_t tbt_charge(const struct tb_ring *r, uint32_t from,
			   uint32_t wp, uint16_t writer, unsigned *tails)
{
	uint32_t next, word;

	for (next = tbt_next_of(r, from, wp, writer); next != wp;
	     next = tbt_next_of(r, next, wp, writer)) {
		word = *tbt_wordp(r, next);
		if (tbt_unreadable(r, tbt_chunk(r, next), word))
			break;
		if (word & TB_F_CONT_PREV) {
			tbt_drop_first(r, next);
			(*tails)++;
		}
		if (tb_state_nfrags(*tbt_wordp(r, next))) {
			*tbt_wordp(r, next) |= TB_F_DATA_LOSS;
			break;
		}
	}
	return next;
}

/*
 * The reader drops a chunk whose format is unknown or whose directory
 * does not parse, and the bridge never hears of it: the central buffer
 * would glue the start of a packet before it to the tail of another after
 * it, and nothing would tell the trace that its writer lost data.  So
 * the loss is charged to its writer (tbt_charge()): the buffer sees a
 * broken chain where a packet was cut, and the writer's next packet
 * carries previous_packet_dropped.
 */
static uint32_t tbt_flag_unreadable(FILE *f, struct tb_ring *r)
{
	uint32_t rp = r->hdr->read_pos, wp = r->hdr->write_pos, pos, next;
	uint32_t n = 0, word;
	unsigned st, tails;
	uint16_t writer;

	for (pos = rp; pos != wp; pos++) {
		word = *tbt_wordp(r, pos);
		st = tb_state_of(word);
		if ((st != TB_ACQUIRED && st != TB_COMPLETE) ||
		    !tbt_unreadable(r, tbt_chunk(r, pos), word))
			continue;
		n++;
		writer = tb_state_writer(word);
		tails = 0;
		next = tbt_charge(r, pos, wp, writer, &tails);
		say(f, "salvage   chunk %u (position %u) of writer %u is "
		    "unreadable: ", pos & (r->num_chunks - 1), pos, writer);
		if (tails)
			say(f, "%u packet tail%s after it dropped; ", tails,
			    tails == 1 ? "" : "s");
		if (next == wp)
			say(f, "the writer has no later chunk to carry the "
			    "loss\n");
		else if (tbt_unreadable(r, tbt_chunk(r, next),
					*tbt_wordp(r, next)))
			say(f, "its next chunk is unreadable too\n");
		else
			say(f, "the loss is flagged on its next chunk "
			    "(position %u)\n", next);
	}
	return n;
}

/*
 * A word salvage turned into a hole named no writer we can trust: the
 * chunk may have been anyone's.  Every writer with a chunk after it is
 * charged the loss (tbt_charge()), so no packet is glued across it and
 * no loss goes unflagged, at the price of flags on writers that lost
 * nothing there.
 */
static void tbt_charge_holes(FILE *f, const struct tb_ring *r,
			     const uint32_t *holes, unsigned nholes)
{
	uint32_t wp = r->hdr->write_pos, q, word;
	static uint8_t seen[65536 / 8];
	unsigned h, st, tails, writers;
	uint16_t w;

	for (h = 0; h < nholes; h++) {
		memset(seen, 0, sizeof(seen));
		tails = writers = 0;
		for (q = holes[h] + 1; q != wp; q++) {
			word = *tbt_wordp(r, q);
			st = tb_state_of(word);
			w = tb_state_writer(word);
			if ((st != TB_ACQUIRED && st != TB_COMPLETE) ||
			    seen[w / 8] & (1u << (w % 8)))
				continue;
			seen[w / 8] |= (uint8_t)(1u << (w % 8));
			writers++;
			tbt_charge(r, holes[h], wp, w, &tails);
		}
		say(f, "salvage   position %u named no writer: its loss is "
		    "charged to the %u writer%s with chunks after it (%u "
		    "packet tail%s dropped)\n", holes[h], writers,
		    writers == 1 ? "" : "s", tails, tails == 1 ? "" : "s");
	}
}

#define TBT_GROW_MAX	(64u << 20)	/* the largest ring salvaged cut */

#define TBT_CANDIDATES	8		/* candidate rings named */

static uint32_t tbt_peek32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * What tb_ring_attach() says of a ring starting at @p, with the @n bytes
 * the image has from there: the scan and the attach agree on what a ring
 * is because this is the attach, on a copy of the header aligned as it
 * wants (it reads nothing past the header).  TB_OK, TB_ESHORT for a
 * valid header of a ring the image cuts, or why it is none; *@need gets
 * the size of the ring a valid header describes (0: none).
 */
static int tbt_ring_at(const uint8_t *p, size_t n, size_t *need)
{
	static uint8_t raw[TB_RING_HDR_SIZE + TB_RING_LINE];
	uint8_t *hdr = raw + (-(uintptr_t)raw & (TB_RING_LINE - 1));
	const struct tb_ring_hdr *h = (const struct tb_ring_hdr *)
				      (const void *)hdr;
	struct tb_ring r;
	int ret;

	*need = 0;
	if (n < TB_RING_HDR_SIZE)
		return TB_ESHORT;
	if (tbt_peek32(p) != TB_RING_MAGIC)
		return TB_EMAGIC;	/* what attach says, without a copy */
	memcpy(hdr, p, TB_RING_HDR_SIZE);
	ret = tb_ring_attach(&r, hdr, n);
	if (ret == TB_OK || ret == TB_ESHORT)
		*need = tb_ring_size(1u << h->chunk_log2,
				     1u << h->count_log2);
	return ret;
}

/*
 * Whether the ring at @p can be converted: attach takes it, or it is cut
 * but small enough to salvage.  A header that claims more is other
 * memory to the scan, which goes on looking.
 */
static bool tbt_ring_usable(const uint8_t *p, size_t n)
{
	size_t need;
	int ret = tbt_ring_at(p, n, &need);

	return ret == TB_OK ||
	       (ret == TB_ESHORT && need && need <= TBT_GROW_MAX);
}

/*
 * The 4-byte aligned offsets of @img where a ring that can be converted
 * starts (a RAM dump holds other memory around it): the first
 * TBT_CANDIDATES of them into @at; how many there are.
 */
static size_t tbt_candidates(const uint8_t *img, size_t len, size_t *at)
{
	size_t off, n = 0;

	for (off = 0; off + TB_RING_HDR_SIZE <= len; off += 4)
		if (tbt_ring_usable(img + off, len - off) &&
		    n++ < TBT_CANDIDATES)
			at[n - 1] = off;
	return n;
}

/* More than one candidate: which were found, which is converted. */
static void tbt_say_candidates(FILE *f, const size_t *at, size_t n)
{
	size_t i, shown = n < TBT_CANDIDATES ? n : TBT_CANDIDATES;

	if (n < 2)
		return;
	say(f, "ring      %zu candidate rings in the image, at offsets", n);
	for (i = 0; i < shown; i++)
		say(f, "%s %zu", i ? "," : "", at[i]);
	say(f, "%s: converting the first, at %zu; -O %zu converts the "
	    "next\n", n > shown ? ", ..." : "", at[0], at[1]);
}

/*
 * Where the ring is in @img: at @o->offset (-O), or at the first 4-byte
 * aligned offset where tb_ring_attach() finds a ring that can be
 * converted (tbt_candidates(); more than one are named); without one, at
 * the first magic (or 0), for attach to say what is wrong there.  The
 * ring is moved to the start of @img.  An image that ends inside the
 * ring (after its header), or that is not aligned to TB_RING_LINE, is
 * copied into *@grown (aligned), zero-filled to the ring's size (the
 * caller frees it), and res->complete says how many chunks it holds
 * whole.  Returns 0, or -1 (reported) when @o->offset is outside the
 * image.
 */
static int tbt_locate(FILE *f, uint8_t **img, size_t *len,
		      const struct tbt_convert_opts *o,
		      struct tbt_convert_result *res, uint8_t **grown)
{
	const struct tb_ring_hdr *h;
	size_t off = 0, avail, need, at[TBT_CANDIDATES], n;
	bool valid;
	int ret;

	*grown = NULL;
	if (o->at) {
		if (o->offset >= *len || o->offset % 4) {
			say(f, "ring      -O %llu: not a 4-byte aligned offset "
			    "inside the %zu-byte image\n", ull(o->offset),
			    *len);
			return -1;
		}
		off = (size_t)o->offset;
	} else if ((n = tbt_candidates(*img, *len, at))) {
		off = at[0];
		tbt_say_candidates(f, at, n);
		res->candidates = n;
	} else {
		while (off + 4 <= *len && tbt_peek32(*img + off) !=
		       TB_RING_MAGIC)
			off += 4;
		if (off + 4 > *len)
			off = 0;
	}
	res->offset = off;
	avail = *len - off;
	ret = tbt_ring_at(*img + off, avail, &need);
	valid = ret == TB_OK || ret == TB_ESHORT;
	h = (const struct tb_ring_hdr *)(const void *)*img;
	if (off) {
		say(f, "ring      %s at offset %zu%s of the %zu-byte image\n",
		    valid ? "found" : "looked for", off,
		    o->at ? " (-O)" : "", *len);
		memmove(*img, *img + off, avail);
		*len = avail;
	}
	if ((!need || avail >= need) && (uintptr_t)*img % TB_RING_LINE == 0)
		return 0;
	if (need > avail && need > TBT_GROW_MAX)
		return 0;	/* attach says TB_ESHORT for a cut one */
	/* a copy aligned to TB_RING_LINE, as attach wants; zero past avail */
	if (posix_memalign((void **)grown, TB_RING_LINE,
			   need > avail ? need : avail)) {
		*grown = NULL;
		return 0;	/* attach says TB_EALIGN or TB_ESHORT */
	}
	memcpy(*grown, *img, avail);
	if (!need || avail >= need) {
		*img = *grown;
		return 0;
	}
	memset(*grown + avail, 0, need - avail);
	res->truncated = true;
	res->complete = (uint32_t)((avail - TB_RING_HDR_SIZE) >>
				   h->chunk_log2);
	res->cut_bytes = (uint32_t)((avail - TB_RING_HDR_SIZE) &
				    ((1u << h->chunk_log2) - 1));
	*img = *grown;
	*len = need;
	return 0;
}

/*
 * The chunks a cut image lacks, from res->complete on, read as holes: a
 * pending position among them lost what it held, and named no writer we
 * can see.  The first position of each run of them goes into @holes, to
 * be charged to every writer with chunks after it (tbt_charge_holes():
 * the same for any position of the run, as none inside holds data).
 */
static void tbt_missing(FILE *f, struct tb_ring *r,
			struct tbt_convert_result *res, uint32_t *holes,
			unsigned *nholes)
{
	uint32_t rp = r->hdr->read_pos, wp = r->hdr->write_pos, pos, n = 0;
	bool run = false;

	if (!res->truncated)
		return;
	if (wp - rp > r->num_chunks)
		wp = rp + r->num_chunks;	/* as salvage clamps it */
	for (pos = rp; pos != wp; pos++) {
		if ((pos & (r->num_chunks - 1)) < res->complete) {
			run = false;
			continue;
		}
		*tbt_wordp(r, pos) = tbt_free_tag(r, pos);
		if (!run && *nholes < TBT_HOLES)
			holes[(*nholes)++] = pos;	/* at most two runs */
		run = true;
		n++;
	}
	res->missing = r->num_chunks - res->complete;
	res->missing_pending = n;
	say(f, "salvage   image truncated: %u of %u chunks complete (it ends "
	    "%u bytes into chunk %u); %u missing chunk%s held pending "
	    "positions: lost\n", res->complete, r->num_chunks,
	    res->cut_bytes, res->complete, n, n == 1 ? "" : "s");
}

/*
 * One central buffer per BufferID the pending chunks name (the first
 * TBT_MAX_BUFS of them), each big enough for every chunk that names it.
 */
static unsigned tbt_make_bufs(FILE *f, const struct tb_ring *r,
			      const struct tbt_convert_opts *o,
			      struct tb_buf **bufs, unsigned *nbufs,
			      uint16_t *ids)
{
	uint32_t rp = r->hdr->read_pos, wp = r->hdr->write_pos, pos, i;
	uint64_t count[TBT_MAX_BUFS] = { 0 }, size;
	unsigned n = 0, k, max = 0, st;
	const uint8_t *chunk;
	uint16_t bid;

	for (pos = rp; pos != wp; pos++) {
		i = pos & (r->num_chunks - 1);
		chunk = r->chunks + (size_t)i * r->chunk_size;
		st = tb_state_of(*(const uint32_t *)(const void *)chunk);
		if (st != TB_ACQUIRED && st != TB_COMPLETE && st != TB_REWRITE)
			continue;
		bid = tb_frag_bid(chunk);
		for (k = 0; k < n && ids[k] != bid; k++)
			;
		if (k == n && n < TBT_MAX_BUFS)
			ids[n++] = bid;
		if (k < n)
			count[k]++;
	}
	for (k = 0; k < n; k++)
		max = ids[k] + 1u > max ? ids[k] + 1u : max;
	for (k = 0; k < n; k++) {
		size = o->buf_size ? o->buf_size :
		       count[k] * ((uint64_t)r->chunk_size + 64) + 65536;
		if (size > TB_BUF_MAX_SIZE)
			size = TB_BUF_MAX_SIZE;
		bufs[ids[k]] = tb_buf_create((size_t)size, TB_BUF_DISCARD);
		if (!bufs[ids[k]]) {
			say(f, "buffer    BufferID %u: no memory for %llu "
			    "bytes\n", ids[k], ull(size));
			continue;
		}
	}
	*nbufs = max;
	return n;
}

/* The stats of a whole drain. */
struct tbt_drain {
	int ret;			/* why it stopped */
	uint64_t positions;
	unsigned rounds;
};

static void tbt_drain(struct tb_bridge *br, const struct tb_ring *r,
		      struct tbt_drain *d)
{
	unsigned n, rounds;

	d->ret = TB_LIMIT;
	d->positions = 0;
	/* offline nobody races the reader: a ring's worth of positions,
	 * and a round or two to see TB_NODATA, is all there can be */
	for (rounds = 0; d->ret == TB_LIMIT || d->ret == TB_RETRY_LATER;
	     rounds++) {
		if ((uint64_t)rounds * 4096 > (uint64_t)r->num_chunks + 8192)
			break;
		d->ret = tb_bridge_drain(br, 4096, TB_READ_SCRAPE, &n);
		d->positions += n;
	}
	d->rounds = rounds;
}

/*
 * Converts the ring image @img (@len bytes, writable private memory, at
 * least 4-byte aligned) into a trace written through @out.  Reports to
 * @f (NULL: silent).  Returns the exit status: 0 nothing lost, 1 losses
 * (reported), 2 not a ring.
 */
static int tbt_convert(uint8_t *img, size_t len,
		       const struct tbt_convert_opts *o,
		       struct tb_trace_out *out, FILE *f,
		       struct tbt_convert_result *res)
{
	struct tb_buf **bufs;
	uint16_t ids[TBT_MAX_BUFS];
	uint32_t holes[TBT_HOLES];
	unsigned nholes = 0;
	struct tb_ring_stats before, after;
	struct tb_bridge_config bc;
	struct tbt_drain d;
	struct tb_bridge br;
	struct tb_ring r;
	unsigned nbufs = 0, nb, k;
	uint64_t rejected, unread, lost = 0;
	uint8_t *scratch = NULL, *grown;
	int ret, status = 0;

	memset(res, 0, sizeof(*res));
	if (tbt_locate(f, &img, &len, o, res, &grown))
		return 2;
	ret = tb_ring_attach(&r, img, len);
	if (ret) {
		res->error = ret;
		say(f, "ring      not a ring this tool can read: %s (%d): "
		    "%s\n", tbt_result_name(ret), ret, tb_strerror(ret));
		free(grown);
		return 2;
	}
	tb_ring_stats(&r, &before);
	say(f, "ring      %u x %u B chunks (%zu of %zu image bytes); "
	    "write_pos %u, read_pos %u: %u positions pending\n",
	    r.num_chunks, r.chunk_size,
	    tb_ring_size(r.chunk_size, r.num_chunks), len, before.write_pos,
	    before.read_pos, before.write_pos - before.read_pos);
	say(f, "states    free %u, acquired %u (torn: writers held them), "
	    "complete %u, rewrite %u (pinned), acked %u, reserved %u\n",
	    before.states[0], before.states[1], before.states[2],
	    before.states[3], before.states[4],
	    before.states[5] + before.states[6] + before.states[7]);
	tbt_counters(f, "writers", before.wstat, TB_WS_MAX, tbt_wstat_name);
	if (before.stopped)
		say(f, "note      the image's reader had stopped this ring: "
		    "%s\n", tbt_proto_rule(before.stopped));
	lost += before.wstat[TB_WS_FULL] + before.wstat[TB_WS_NO_CHUNK] +
		before.wstat[TB_WS_DROPPED_FRAGS];
	/* a fresh reader starts at read_pos: forget the image's own */
	memset(r.hdr->rstat, 0, sizeof(r.hdr->rstat));
	tbt_missing(f, &r, res, holes, &nholes);
	lost += res->missing_pending;
	if (tbt_salvage(f, &r, res, holes, &nholes))
		lost++;
	tbt_charge_holes(f, &r, holes, nholes);
	tbt_flag_unreadable(f, &r);
	lost += res->write_pos_clamped;
	bufs = (struct tb_buf **)calloc(65536, sizeof(*bufs));
	if (!bufs) {
		say(f, "convert   out of memory\n");
		free(grown);
		return 2;
	}
	nb = tbt_make_bufs(f, &r, o, bufs, &nbufs, ids);
	scratch = (uint8_t *)malloc(r.chunk_size);
	memset(&bc, 0, sizeof(bc));
	bc.ring = &r;
	bc.scratch = scratch;
	bc.producer_id = o->producer;
	bc.ident.pid = o->pid;
	bc.ident.uid = o->uid;
	bc.bufs = bufs;
	bc.nbufs = nbufs;
	if (!scratch || tb_bridge_init(&br, &bc)) {
		say(f, "convert   cannot set up the reader (memory, or "
		    "producer id 0)\n");
		status = 2;
		goto out;
	}
	tbt_drain(&br, &r, &d);
	tb_ring_stats(&r, &after);
	res->ring = after;
	say(f, "reader    %llu positions: %u chunks emitted (%u scraped "
	    "from chunks writers held), %u holes (%u pinned), %u "
	    "malformed, %u of an unknown format; stopped: %s (%s)\n",
	    ull(d.positions), after.rstat[TB_RS_EMITTED],
	    after.rstat[TB_RS_SCRAPES], after.rstat[TB_RS_HOLES],
	    after.rstat[TB_RS_PINNED], after.rstat[TB_RS_MALFORMED],
	    after.rstat[TB_RS_UNKNOWN_FORMAT], tbt_result_name(d.ret),
	    d.ret == TB_NODATA ? "drained to write_pos" :
	    d.ret == TB_EPROTO ? tbt_proto_rule(after.stopped) :
	    tb_strerror(d.ret));
	/* a pinned position is a hole its writer could not write: the
	 * writers' counters have that loss; a scrape is a torn chunk */
	lost += after.rstat[TB_RS_MALFORMED] +
		after.rstat[TB_RS_UNKNOWN_FORMAT] +
		after.rstat[TB_RS_SCRAPES] + (d.ret == TB_EPROTO);
	rejected = br.stat[TB_BS_REJECTED] + br.stat[TB_BS_BAD_TARGET] +
		   br.stat[TB_BS_TOO_MANY_KEYS] + br.stat[TB_BS_KEYS_NOMEM];
	say(f, "bridge    producer %u (pid %d, uid %u): %llu chunks into %u "
	    "central buffer%s; refused %llu (no memory %llu, full %llu, "
	    "malformed %llu, other %llu), unknown BufferID %llu; %llu "
	    "chunks carried the writer's loss flag\n", o->producer, o->pid,
	    o->uid, ull(br.stat[TB_BS_CHUNKS]), nb, nb == 1 ? "" : "s",
	    ull(br.stat[TB_BS_REJECTED]),
	    ull(br.stat[TB_BS_REJ_NOMEM] + br.stat[TB_BS_KEYS_NOMEM]),
	    ull(br.stat[TB_BS_REJ_FULL]), ull(br.stat[TB_BS_REJ_FRAMING]),
	    ull(br.stat[TB_BS_REJ_LIMIT] + br.stat[TB_BS_REJ_STALE] +
		br.stat[TB_BS_REJ_TOO_BIG] + br.stat[TB_BS_REJ_BAD_ID] +
		br.stat[TB_BS_REJ_OTHER] + br.stat[TB_BS_TOO_MANY_KEYS]),
	    ull(br.stat[TB_BS_BAD_TARGET]), ull(br.stat[TB_BS_LOSS_FLAGS]));
	lost += rejected + br.stat[TB_BS_LOSS_FLAGS];
	res->refused = rejected - br.stat[TB_BS_REJ_FULL];
	res->tail_lost = after.rstat[TB_RS_SCRAPES] || rejected ||
			 d.ret == TB_EPROTO || res->missing_pending;
	for (k = 0; k < nb; k++) {
		const struct tb_buf_stats *bs;
		struct tb_buf *b = bufs[ids[k]];
		uint64_t before_pk = out->packets + out->invalid_packets;

		if (!b)
			continue;
		if (tb_trace_write_buffer(out, b, res->nbufs) < 0) {
			say(f, "trace     write failed\n");
			status = 2;
			break;
		}
		bs = tb_buf_stats(b);
		res->bufs[res->nbufs++] = *bs;
		unread = bs->bytes_written - bs->bytes_read;
		say(f, "buffer    BufferID %u, %llu B: %llu chunks, %llu "
		    "packets read; %llu bytes never completed (a writer "
		    "died mid-packet, or its continuation was lost), %llu "
		    "ABI violations, %llu chunks discarded\n", ids[k],
		    ull(bs->buffer_size), ull(bs->chunks_written),
		    ull(out->packets + out->invalid_packets - before_pk),
		    ull(unread), ull(bs->abi_violations),
		    ull(bs->chunks_discarded));
		lost += (unread != 0) + bs->abi_violations +
			bs->chunks_discarded + bs->chunks_overwritten;
		res->tail_lost |= unread || bs->chunks_discarded;
	}
	res->packets = out->packets;
	say(f, "trace     %llu packets, %llu bytes; %llu carry "
	    "previous_packet_dropped, %llu invalid ones replaced\n",
	    ull(out->packets), ull(out->bytes), ull(out->lossy_packets),
	    ull(out->invalid_packets));
	lost += out->lossy_packets + out->invalid_packets;
	tb_bridge_destroy(&br);
out:
	for (k = 0; k < nb; k++)
		tb_buf_destroy(bufs[ids[k]]);
	free(bufs);
	free(scratch);
	free(grown);
	res->lost = lost;
	if (status)
		return status;
	say(f, "lost      %s\n", lost ? "yes: see the lines above" :
	    "nothing: every published packet is in the trace");
	return lost ? 1 : 0;
}

/* A trace in memory, for the checker after a conversion. */
struct tbt_mem {
	uint8_t *p;
	size_t len, cap;
	FILE *file;			/* also written here, if set */
};

static int tbt_mem_write(void *ctx, const void *data, size_t len)
{
	struct tbt_mem *m = (struct tbt_mem *)ctx;
	uint8_t *np;
	size_t cap;

	if (m->file && fwrite(data, 1, len, m->file) != len)
		return -1;
	if (len > m->cap - m->len) {
		cap = m->cap ? m->cap : 65536;
		while (cap - m->len < len) {
			if (cap > SIZE_MAX / 2)
				return -1;
			cap *= 2;
		}
		np = (uint8_t *)realloc(m->p, cap);
		if (!np)
			return -1;
		m->p = np;
		m->cap = cap;
	}
	memcpy(m->p + m->len, data, len);
	m->len += len;
	return 0;
}

/*
 * The largest packet timestamp of the trace image @p (@len bytes) from
 * byte *@from on, or @last if larger; *@from moves past what was read.
 */
static uint64_t tbt_time_after(const uint8_t *p, size_t len, size_t *from,
			       uint64_t last)
{
	struct tb_trace_packet tp;
	struct tb_pb_reader r;
	uint64_t ts;

	if (*from >= len)
		return last;
	tb_pb_reader_init(&r, p + *from, len - *from);
	while (tb_trace_next(&r, &tp) > 0) {
		if (tb__ck_uint(tp.data, tp.size, TB__CK_TP_TIMESTAMP, &ts) &&
		    ts > last)
			last = ts;
		*from = (size_t)(r.p - p);
	}
	return last;
}

/* The largest packet timestamp of the trace image @p, or 0. */
static uint64_t tbt_last_time(const uint8_t *p, size_t len)
{
	size_t from = 0;

	return tbt_time_after(p, len, &from, 0);
}

/*
 * The end of a converted trace, as a service ends its own (tbtrace.h):
 * the ring's "events lost" counter track, and what the ring counted on
 * the service's track, at the trace's last timestamp (the writes its
 * writers could not make, the chunks they still held), then the
 * TraceStats packet of the buffers.
 */
static void tbt_convert_tail(struct tb_trace_out *out, const uint8_t *p,
			     size_t len, const struct tbt_convert_opts *o,
			     const struct tbt_convert_result *res)
{
	const struct tb_buf_stats *bs[TBT_MAX_BUFS];
	struct tb_trace_stats_extra x;
	struct tb_trace_ring_record rec;
	struct tb_buf_ident ident;
	uint64_t ts = tbt_last_time(p, len), last = 0;
	unsigned i;

	ident.uid = o->uid;
	ident.pid = o->pid;
	memset(&rec, 0, sizeof(rec));
	rec.producer = o->producer;
	rec.pid = o->pid;
	rec.end = TB_TRACE_END_LIVE;
	rec.held = res->ring.states[TB_ACQUIRED] + res->ring.states[TB_REWRITE];
	rec.holders = res->ring.nholders;	/* whose packets they left open */
	for (i = 0; i < TB_RING_HOLDERS && i < TB_TRACE_HELD_BY; i++)
		rec.held_by[i] = res->ring.holders[i];
	rec.full = res->ring.wstat[TB_WS_FULL];
	rec.no_chunk = res->ring.wstat[TB_WS_NO_CHUNK];
	rec.dropped_frags = res->ring.wstat[TB_WS_DROPPED_FRAGS];
	rec.holes = res->ring.rstat[TB_RS_HOLES];
	rec.scrapes = res->ring.rstat[TB_RS_SCRAPES];
	rec.malformed = res->ring.rstat[TB_RS_MALFORMED];
	if (ts) {	/* an instant needs a time: none if no packet has */
		tb_trace_loss_sample(out, ident, ts, o->producer, o->pid,
				     (uint64_t)rec.full + rec.no_chunk +
				     rec.dropped_frags, &last);
		tb_trace_service_track(out, ident);
		tb_trace_ring_record(out, ident, ts, &rec);
	}
	memset(&x, 0, sizeof(x));
	x.chunks_discarded = res->refused;
	for (i = 0; i < res->nbufs; i++)
		bs[i] = &res->bufs[i];
	tb_trace_write_stats(out, ident, ts, bs, res->nbufs, &x);
}

/* Converts and then checks what came out; the exit status. */
static int tbt_convert_and_check(uint8_t *img, size_t len,
				 const struct tbt_convert_opts *o,
				 FILE *file, FILE *f)
{
	struct tbt_stat_opts so = { 0, o->budget, false };
	struct tbt_convert_result res;
	struct tb_trace_out out;
	struct tbt_mem m;
	struct tb_check c;
	int st, ret;

	memset(&m, 0, sizeof(m));
	memset(&out, 0, sizeof(out));
	m.file = file;
	out.write = tbt_mem_write;
	out.ctx = &m;
	st = tbt_convert(img, len, o, &out, f, &res);
	if (st != 2)
		tbt_convert_tail(&out, m.p, m.len, o, &res);
	if (st != 2 && !tb_check_init(&c, NULL, NULL, so.budget)) {
		/* torn chunks, refusals, packets never completed: what
		 * followed the last packet of a sequence may be lost */
		c.tail_lost = res.tail_lost;
		ret = tb_check_trace(&c, m.p, m.len);
		tbt_stat_ui(f, &c);
		res.check = tbt_verdict(f, &c, ret);
		tb_check_destroy(&c);
		if (res.check && st == 0)
			st = 1;
	}
	free(m.p);
	return st;
}

static int tbt_convert_main(int argc, char **argv)
{
	struct tbt_convert_opts o;
	uint64_t v;
	uint8_t *img;
	size_t len;
	FILE *file;
	int opt, st, quiet = 0;
	long n;
	char *end;

	memset(&o, 0, sizeof(o));
	o.producer = 1;
	while ((opt = getopt(argc, argv, "P:p:u:b:m:qO:")) != -1) {
		errno = 0;
		switch (opt) {
		case 'O':
			if (tbt_size(optarg, &v)) {
				fprintf(stderr, "tbtrace convert: -O: not an "
					"offset\n");
				return 2;
			}
			o.at = true;
			o.offset = v;
			break;
		case 'P':
			n = strtol(optarg, &end, 0);
			if (errno || *end || n < 1 || n > 65535) {
				fprintf(stderr, "tbtrace convert: -P: a "
					"producer id is 1 to 65535\n");
				return 2;
			}
			o.producer = (uint16_t)n;
			break;
		case 'p':
			n = strtol(optarg, &end, 0);
			if (errno || *end || n < INT32_MIN || n > INT32_MAX) {
				fprintf(stderr, "tbtrace convert: -p: not a "
					"pid\n");
				return 2;
			}
			o.pid = (int32_t)n;
			break;
		case 'u':
			if (tbt_size(optarg, &v) || v > UINT32_MAX) {
				fprintf(stderr, "tbtrace convert: -u: not a "
					"uid\n");
				return 2;
			}
			o.uid = (uint32_t)v;
			break;
		case 'b':
			if (tbt_size(optarg, &v) || v < 4096 ||
			    v > TB_BUF_MAX_SIZE) {
				fprintf(stderr, "tbtrace convert: -b: 4k to "
					"%u bytes\n", TB_BUF_MAX_SIZE);
				return 2;
			}
			o.buf_size = v;
			break;
		case 'm':
			if (tbt_size(optarg, &v) || !v || v > SIZE_MAX)
				return 2;
			o.budget = (size_t)v;
			break;
		case 'q':
			quiet = 1;
			break;
		default:
			return 2;
		}
	}
	if (optind + 2 != argc) {
		fprintf(stderr, "usage: tbtrace convert [-P PRODUCER] [-p PID] "
			"[-u UID] [-b SIZE] [-O OFFSET] [-q] RING.bin "
			"OUT.pftrace\n");
		return 2;
	}
	if (tbt_slurp(argv[optind], &img, &len))
		return 2;
	file = fopen(argv[optind + 1], "wb");
	if (!file) {
		fprintf(stderr, "tbtrace: %s: %s\n", argv[optind + 1],
			strerror(errno));
		free(img);
		return 2;
	}
	st = tbt_convert_and_check(img, len, &o, file, quiet ? NULL : stdout);
	if (fclose(file) && st != 2) {
		fprintf(stderr, "tbtrace: %s: %s\n", argv[optind + 1],
			strerror(errno));
		st = 2;
	}
	if (st == 2)
		unlink(argv[optind + 1]);
	free(img);
	return st;
}

#include "tbt_stream.c"

/* ------------------------------------------------------------------------
 * main
 */
static void tbt_usage(FILE *f)
{
	fprintf(f,
		"usage: tbtrace stat [-v] [-t] [-m BYTES] FILE.pftrace|-\n"
		"       tbtrace ring [-w] [-n N] PATH\n"
		"       tbtrace convert [-P PRODUCER] [-p PID] [-u UID] "
		"[-b SIZE] [-O OFFSET] [-q] IMAGE OUT.pftrace\n"
		"       tbtrace stream [-P PRODUCER] [-p PID] [-u UID] "
		"[-b SIZE] [-q] IN|- OUT.pftrace\n"
		"       tbtrace --version\n"
		"\n"
		"stat     what a Perfetto trace holds, and what Perfetto's "
		"importer would drop\n"
		"         or misplace (-v: every violation, every lossy "
		"packet, every sequence\n"
		"         and track; -t: the trace lost its tail and has "
		"no TraceStats or\n"
		"         service record to say so: slices open at the end "
		"are explained;\n"
		"         -m: the checker's memory budget, default 256m; "
		"- for stdin)\n"
		"ring     a live ring, mapped read-only: a file, a /dev/shm "
		"object or\n"
		"         /proc/PID/fd/N (-w: refresh every second; -n N: "
		"N times)\n"
		"convert  a ring's raw image (RAM dump, core file) into a "
		"trace: -P, -p, -u\n"
		"         the trusted producer id, pid and uid stamped on it "
		"(default 1, 0, 0);\n"
		"         -b each central buffer's size (default: the "
		"image's chunks); -q quiet;\n"
		"         the ring is found anywhere in the image (-O: at "
		"this offset), and a\n"
		"         cut image gives the chunks it holds whole\n"
		"stream   a target's tblink.h byte stream (a UART capture; "
		"- for stdin) into a\n"
		"         trace, every skipped byte and lost frame reported; "
		"options as convert's\n"
		"         (-b default 4m)\n"
		"\n"
		"\n"
		"exit status of stat: 0 clean (nothing lost, no violation); "
		"1 violations of\n"
		"         the importer's rules that no loss explains; 2 bad "
		"command line,\n"
		"         unreadable, not a trace, or not checked to the end; "
		"3 lossy: data\n"
		"         was lost, and every violation it caused is "
		"explained\n"
		"ring: 0, or 2 unreadable.  convert: 0 nothing lost, 1 "
		"something lost or\n"
		"         violated (reported), 2 refused.  tbtrace --version: "
		"the version\n");
}

static int tbt_main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	if (!strcmp(cmd, "stat"))
		return tbt_stat_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "ring"))
		return tbt_ring_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "convert"))
		return tbt_convert_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("tbtrace %s (tbring, ring ABI %u)\n",
		       TBRING_VERSION_STRING, (unsigned)TB_RING_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "stream"))
		return tbt_stream_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "help") || !strcmp(cmd, "-h") ||
	    !strcmp(cmd, "--help")) {
		tbt_usage(stdout);
		return 0;
	}
	if (*cmd)
		fprintf(stderr, "tbtrace: unknown command '%s'\n", cmd);
	tbt_usage(stderr);
	return 2;
}

#ifndef TBTRACE_NO_MAIN
int main(int argc, char **argv)
{
	return tbt_main(argc, argv);
}
#endif
