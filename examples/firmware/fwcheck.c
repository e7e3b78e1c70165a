/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fwcheck.c - checks a trace of the firmware example against what the
 * firmware says it wrote (host program; make firmware-e2e runs it).
 *
 *   fwcheck [-c | -t | -l] [-n] MAIN_WRITTEN ISR_WRITTEN [IRQ2_WRITTEN]
 *           FILE.pftrace
 *
 * Every tagged event (slice begins and instants) carries its writer's
 * sequence number ("seq"), which counts the events that writer was told
 * it wrote.  Per writer (1 the main loop, 2 the tick's interrupt, 3 the
 * second interrupt of a FW_NEST build, when its count is given):
 *   -c  complete (a stream): seq 0 .. N-1, each exactly once, in order
 *   -t  tail (a flight recorder): seqs contiguous, ending at N-1
 *   -l  lossy: in order, never twice; a gap only after a packet that
 *       says previous_packet_dropped (a writer may be missing; not both)
 * and always: names from that writer's own set (never a wrong event),
 * event timestamps that never go back on a sequence (the descriptors of
 * a fresh state are stamped after the event that asked for them), and
 * the interrupt's events on a track of their own.
 *   -n  nesting: an interrupt runs to its end before what it preempted
 *       goes on, so a slice of a higher level (main 1, tick 2, second
 *       interrupt 3) that overlaps one of a lower level in time lies
 *       wholly inside it; and some do, three levels deep
 * Exit 0 when it all holds, 1 if not, 2 when the file does not parse.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "trace_decode.h"

#define MAX_IID		256
#define MAX_SEQ		8
#define NW		4	/* writers 1..3 */

struct fwc_seq {
	uint64_t id;
	uint64_t last_ts;
	int valid;		/* its incremental state, as the importer's */
	char *ann[MAX_IID];	/* interned debug annotation names */
	char *name[MAX_IID];	/* interned event names */
};

struct fwc_writer {
	const char *const *names;	/* the names it may write */
	uint64_t written;		/* what the firmware says */
	uint64_t next;			/* seq expected next */
	uint64_t first, count;
	int seen, dropped;		/* a loss flag since the last event */
	uint64_t track;			/* the track of its tagged events */
	int tracks;			/* distinct tracks seen (>1 is bad) */
	uint64_t open[64];		/* begins of its open slices */
	int depth;
	struct fwc_slice *slices;	/* its slices, -n */
	size_t nslices, cap;
};

struct fwc_slice {
	uint64_t b, e;
};

static const char *const main_names[] = {
	"frame", "work", "mark", "fill", "last", "drain", NULL
};
static const char *const isr_names[] = { "tick", "isr_work", NULL };
static const char *const irq2_names[] = { "irq2_work", "deep", NULL };

static struct fwc_seq seqs[MAX_SEQ];
static int nseqs, errors;
static char mode = 'c';

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void fail(const char *fmt, ...)
{
	va_list ap;

	if (errors++ >= 10)
		return;
	fputs("fwcheck: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

#define U(x)	((unsigned long long)(x))

static struct fwc_seq *seq_of(uint64_t id)
{
	int i;

	for (i = 0; i < nseqs; i++)
		if (seqs[i].id == id)
			return &seqs[i];
	if (nseqs == MAX_SEQ)
		return NULL;
	seqs[nseqs].id = id;
	return &seqs[nseqs++];
}

static void seq_clear(struct fwc_seq *s)
{
	int i;

	for (i = 0; i < MAX_IID; i++) {
		free(s->ann[i]);
		free(s->name[i]);
		s->ann[i] = s->name[i] = NULL;
	}
}

/* InternedData: event_names (2) and debug_annotation_names (3). */
static void interned(struct fwc_seq *s, const uint8_t *p, size_t n)
{
	struct pb_reader r, e;
	struct pb_field f, g;

	pb_init(&r, p, n);
	while (pb_next(&r, &f) > 0) {
		uint64_t iid = 0;
		const uint8_t *str = NULL;
		size_t len = 0;
		char **slot;

		if (f.type != 2 || (f.number != 2 && f.number != 3))
			continue;
		pb_init(&e, f.data, f.size);
		while (pb_next(&e, &g) > 0) {
			if (g.number == 1 && g.type == 0)
				iid = g.value;
			else if (g.number == 2 && g.type == 2)
				str = g.data, len = g.size;
		}
		if (!str || !iid || iid >= MAX_IID)
			continue;
		slot = f.number == 2 ? &s->name[iid] : &s->ann[iid];
		free(*slot);
		*slot = malloc(len + 1);
		if (!*slot)
			exit(2);
		memcpy(*slot, str, len);
		(*slot)[len] = 0;
	}
}

struct fwc_event {
	uint64_t type, track, name_iid, seq;
	const char *name;
	int has_seq;
};

/* One debug annotation: is it "seq", with an unsigned value? */
static void annotation(struct fwc_seq *s, struct fwc_event *ev,
		       const uint8_t *p, size_t n)
{
	struct pb_reader r;
	struct pb_field f;
	const char *name = NULL;
	uint64_t v = 0;
	int has_v = 0;

	pb_init(&r, p, n);
	while (pb_next(&r, &f) > 0) {
		if (f.number == 1 && f.type == 0 && f.value < MAX_IID)
			name = s->ann[f.value];
		else if (f.number == 10 && f.type == 2 && f.size == 3 &&
			 !memcmp(f.data, "seq", 3))
			name = "seq";
		else if (f.number == 3 && f.type == 0)
			v = f.value, has_v = 1;
	}
	if (name && !strcmp(name, "seq") && has_v) {
		ev->seq = v;
		ev->has_seq = 1;
	}
}

static void track_event(struct fwc_seq *s, struct fwc_event *ev,
			const uint8_t *p, size_t n)
{
	struct pb_reader r;
	struct pb_field f;

	pb_init(&r, p, n);
	while (pb_next(&r, &f) > 0) {
		if (f.number == 9 && f.type == 0)
			ev->type = f.value;
		else if (f.number == 11 && f.type == 0)
			ev->track = f.value;
		else if (f.number == 10 && f.type == 0 && f.value < MAX_IID)
			ev->name = s->name[f.value] ? s->name[f.value] : "?";
		else if (f.number == 4 && f.type == 2)
			annotation(s, ev, f.data, f.size);
	}
}

static int known(const char *const *names, const char *n)
{
	for (; *names; names++)
		if (n && !strcmp(*names, n))
			return 1;
	return 0;
}

static void tagged(struct fwc_writer *w, unsigned id,
		   const struct fwc_event *ev)
{
	if (!known(w->names, ev->name))
		fail("writer %u: event \"%s\" (seq %llu) is not one it writes",
		     id, ev->name ? ev->name : "(no name)", U(ev->seq));
	if (!w->seen) {
		w->first = ev->seq;
		if (mode == 'c' && ev->seq != 0)
			fail("writer %u: first seq %llu, not 0", id,
			     U(ev->seq));
	} else if (ev->seq < w->next) {
		fail("writer %u: seq %llu again or out of order (expected %llu)",
		     id, U(ev->seq), U(w->next));
	} else if (ev->seq > w->next &&
		   (mode != 'l' || !w->dropped)) {
		fail("writer %u: seq %llu missing (next found %llu)", id,
		     U(w->next), U(ev->seq));
	}
	if (w->seen && w->track != ev->track && w->tracks++ == 1)
		fail("writer %u: tagged events on two tracks (%llx, %llx)",
		     id, U(w->track), U(ev->track));
	w->track = ev->track;
	w->seen = 1;
	w->dropped = 0;
	w->count++;
	if (ev->seq >= w->next)
		w->next = ev->seq + 1;
}

static struct fwc_writer writers[NW];
static int nwriters = 3, nesting;

/* -n: keeps each writer's slices, from its BEGIN and END times. */
static void slice_event(struct fwc_writer *w, uint64_t type, uint64_t ts)
{
	if (type == 1 && w->depth < 64) {
		w->open[w->depth++] = ts;
	} else if (type == 2 && w->depth > 0) {
		if (w->nslices == w->cap) {
			w->cap = w->cap ? 2 * w->cap : 1024;
			w->slices = realloc(w->slices,
					    w->cap * sizeof(*w->slices));
			if (!w->slices)
				exit(2);
		}
		w->slices[w->nslices].b = w->open[--w->depth];
		w->slices[w->nslices++].e = ts;
	}
}

static void packet(void *ctx, const struct trace_packet *tp)
{
	struct pb_reader r;
	struct pb_field f;
	struct fwc_seq *s = seq_of(tp->trusted_seq_id);
	struct fwc_event ev;
	const uint8_t *te = NULL, *id = NULL;
	size_t te_n = 0, id_n = 0;
	uint64_t ts = 0, flags = 0;
	int has_ts = 0;
	unsigned wid = (unsigned)(tp->trusted_seq_id & 0xffff);

	(void)ctx;
	if (!s)
		return;
	memset(&ev, 0, sizeof(ev));
	pb_init(&r, tp->data, tp->size);
	while (pb_next(&r, &f) > 0) {
		if (f.number == 8 && f.type == 0)
			ts = f.value, has_ts = 1;
		else if (f.number == 13 && f.type == 0)
			flags = f.value;
		else if (f.number == 11 && f.type == 2)
			te = f.data, te_n = f.size;
		else if (f.number == 12 && f.type == 2)
			id = f.data, id_n = f.size;
	}
	if (wid < NW && tp->dropped)
		writers[wid].dropped = 1;
	/*
	 * The importer's incremental state (tbcheck.h): valid from a clear,
	 * invalid after a loss; a packet that needs it while it is invalid
	 * is skipped whole, interned data then is ignored.
	 */
	if (flags & 1) {
		seq_clear(s);
		s->valid = 1;
	} else if (tp->dropped) {
		s->valid = 0;
	}
	if (!s->valid && (flags & 2))
		return;
	if (id && s->valid)
		interned(s, id, id_n);
	if (!te)
		return;
	if (has_ts) {
		if (ts < s->last_ts)
			fail("sequence %llx: event at %llu after one at %llu",
			     U(s->id), U(ts), U(s->last_ts));
		s->last_ts = ts;
	}
	track_event(s, &ev, te, te_n);
	if (nesting && wid >= 1 && wid < NW && has_ts)
		slice_event(&writers[wid], ev.type, ts);
	if (!ev.has_seq)
		return;
	if (wid < 1 || (int)wid >= nwriters) {
		fail("tagged event on sequence %llx (writer %u)",
		     U(tp->trusted_seq_id), wid);
		return;
	}
	tagged(&writers[wid], wid, &ev);
}

static void verdict(unsigned id)
{
	struct fwc_writer *w = &writers[id];

	if (!w->seen) {
		if (mode == 'l')	/* all of it may be lost */
			printf("fwcheck: writer %u: no events\n", id);
		else
			fail("writer %u: no tagged events at all", id);
		return;
	}
	printf("fwcheck: writer %u: %llu events, seq %llu..%llu of %llu written\n",
	       id, (unsigned long long)w->count,
	       (unsigned long long)w->first,
	       (unsigned long long)(w->next - 1),
	       (unsigned long long)w->written);
	if (w->next > w->written)
		fail("writer %u: seq %llu in the trace, only %llu written",
		     id, U(w->next - 1), U(w->written));
	if (mode != 'l' && w->next != w->written)
		fail("writer %u: last seq %llu, the last written was %llu",
		     id, U(w->next - 1), U(w->written - 1));
	if (mode == 'c' && w->count != w->written)
		fail("writer %u: %llu events in the trace, %llu written",
		     id, U(w->count), U(w->written));
}

/*
 * Slices of writer @hi that overlap one of writer @lo: each must lie
 * within it.  Returns how many do; *@in (if not NULL) flags them.
 */
static size_t nested_in(unsigned hi, unsigned lo, const char *in_lo,
			char *in)
{
	const struct fwc_writer *h = &writers[hi], *l = &writers[lo];
	size_t i, j, n = 0;

	for (i = 0; i < h->nslices; i++) {
		const struct fwc_slice *b = &h->slices[i];

		for (j = 0; j < l->nslices; j++) {
			const struct fwc_slice *a = &l->slices[j];

			if (a->b > b->e || a->e < b->b)
				continue;	/* no overlap */
			if (a->b <= b->b && b->e <= a->e) {
				if (!in_lo || in_lo[j]) {
					n++;
					if (in)
						in[i] = 1;
					break;
				}
				continue;
			}
			fail("writer %u's slice %llu..%llu overlaps writer "
			     "%u's %llu..%llu without nesting in it", hi,
			     U(b->b), U(b->e), lo, U(a->b), U(a->e));
		}
	}
	return n;
}

static void verdict_nesting(void)
{
	char *in2 = calloc(writers[2].nslices + 1, 1);
	size_t two, three, deep;

	if (!in2)
		exit(2);
	two = nested_in(2, 1, NULL, in2);
	three = nwriters > 3 ? nested_in(3, 2, NULL, NULL) : 0;
	deep = nwriters > 3 ? nested_in(3, 2, in2, NULL) : 0;
	if (nwriters > 3)
		(void)nested_in(3, 1, NULL, NULL);
	printf("fwcheck: nesting: %zu of %zu tick slices inside main's; "
	       "%zu of %zu second-interrupt slices inside the tick's, %zu "
	       "of them three deep\n", two, writers[2].nslices, three,
	       nwriters > 3 ? writers[3].nslices : 0, deep);
	if (!two)
		fail("no tick slice inside a main-loop slice");
	if (nwriters > 3 && !deep)
		fail("no slice three levels deep");
	free(in2);
}

int main(int argc, char **argv)
{
	FILE *f;
	static uint8_t *buf;
	const char *file;
	long n;
	int i = 1, w;

	for (; i < argc && argv[i][0] == '-' && argv[i][1] &&
	       !argv[i][2]; i++) {
		if (argv[i][1] == 'n')
			nesting = 1;
		else if (strchr("ctl", argv[i][1]))
			mode = argv[i][1];
		else
			break;
	}
	if (argc - i != 3 && argc - i != 4) {
		fprintf(stderr, "usage: fwcheck [-c|-t|-l] [-n] MAIN_WRITTEN "
				"ISR_WRITTEN [IRQ2_WRITTEN] FILE.pftrace\n");
		return 2;
	}
	nwriters = argc - i;
	writers[1].names = main_names;
	writers[2].names = isr_names;
	writers[3].names = irq2_names;
	for (w = 1; w < nwriters; w++)
		writers[w].written = strtoull(argv[i++], NULL, 10);
	file = argv[i];
	f = fopen(file, "rb");
	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) || !(buf = malloc((size_t)n + 1)) ||
	    fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "fwcheck: cannot read %s\n", file);
		return 2;
	}
	fclose(f);
	if (trace_for_each(buf, (size_t)n, packet, NULL) < 0) {
		fprintf(stderr, "fwcheck: %s is not a trace\n", file);
		return 2;
	}
	for (w = 1; w < nwriters; w++)
		verdict((unsigned)w);
	if (!writers[1].seen && !writers[2].seen)
		fail("no tagged events at all");
	if (writers[1].seen && writers[2].seen &&
	    writers[1].track == writers[2].track)
		fail("the interrupt's events are on the main loop's track %llx",
		     U(writers[1].track));
	if (nwriters > 3 && writers[3].seen &&
	    (writers[3].track == writers[1].track ||
	     writers[3].track == writers[2].track))
		fail("the second interrupt's events are on another's track");
	if (nesting)
		verdict_nesting();
	printf("fwcheck: %s: %s\n", file, errors ? "FAILED" : "ok");
	free(buf);
	return errors ? 1 : 0;
}
