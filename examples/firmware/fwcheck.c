/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fwcheck.c - checks a trace of the firmware example against what the
 * firmware says it wrote (host program; make firmware-e2e runs it).
 *
 *   fwcheck [-c | -t | -l] MAIN_WRITTEN ISR_WRITTEN FILE.pftrace
 *
 * Every tagged event (slice begins and instants) carries its writer's
 * sequence number ("seq"), which counts the events that writer was told
 * it wrote.  Per writer (1 the main loop, 2 the interrupt):
 *   -c  complete (a stream): seq 0 .. N-1, each exactly once, in order
 *   -t  tail (a flight recorder): seqs contiguous, ending at N-1
 *   -l  lossy: in order, never twice; a gap only after a packet that
 *       says previous_packet_dropped (a writer may be missing; not both)
 * and always: names from that writer's own set (never a wrong event),
 * event timestamps that never go back on a sequence (the descriptors of
 * a fresh state are stamped after the event that asked for them), and
 * the interrupt's events on a track of their own.  Exit 0 when it all
 * holds, 1 if not, 2 when the file does not parse.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "trace_decode.h"

#define MAX_IID		256
#define MAX_SEQ		8

struct fwc_seq {
	uint64_t id;
	uint64_t last_ts;
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
};

static const char *const main_names[] = {
	"frame", "work", "mark", "fill", "last", NULL
};
static const char *const isr_names[] = { "tick", "isr_work", NULL };

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

static struct fwc_writer writers[3];

static void packet(void *ctx, const struct trace_packet *tp)
{
	struct pb_reader r;
	struct pb_field f;
	struct fwc_seq *s = seq_of(tp->trusted_seq_id);
	struct fwc_event ev;
	const uint8_t *te = NULL, *id = NULL;
	size_t te_n = 0, id_n = 0;
	uint64_t ts = 0;
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
		else if (f.number == 13 && f.type == 0 && (f.value & 1))
			seq_clear(s);
		else if (f.number == 11 && f.type == 2)
			te = f.data, te_n = f.size;
		else if (f.number == 12 && f.type == 2)
			id = f.data, id_n = f.size;
	}
	if (wid < 3 && tp->dropped)
		writers[wid].dropped = 1;
	if (id)
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
	if (!ev.has_seq)
		return;
	if (wid != 1 && wid != 2) {
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

int main(int argc, char **argv)
{
	FILE *f;
	static uint8_t *buf;
	long n;
	int i = 1;

	if (argc == 5 && argv[1][0] == '-' && strchr("ctl", argv[1][1]))
		mode = argv[i++][1];
	if (argc - i != 3) {
		fprintf(stderr, "usage: fwcheck [-c|-t|-l] MAIN_WRITTEN "
				"ISR_WRITTEN FILE.pftrace\n");
		return 2;
	}
	writers[1].names = main_names;
	writers[2].names = isr_names;
	writers[1].written = strtoull(argv[i], NULL, 10);
	writers[2].written = strtoull(argv[i + 1], NULL, 10);
	f = fopen(argv[i + 2], "rb");
	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) || !(buf = malloc((size_t)n + 1)) ||
	    fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "fwcheck: cannot read %s\n", argv[i + 2]);
		return 2;
	}
	fclose(f);
	if (trace_for_each(buf, (size_t)n, packet, NULL) < 0) {
		fprintf(stderr, "fwcheck: %s is not a trace\n", argv[i + 2]);
		return 2;
	}
	verdict(1);
	verdict(2);
	if (!writers[1].seen && !writers[2].seen)
		fail("no tagged events at all");
	if (writers[1].seen && writers[2].seen &&
	    writers[1].track == writers[2].track)
		fail("the interrupt's events are on the main loop's track %llx",
		     U(writers[1].track));
	printf("fwcheck: %s: %s\n", argv[i + 2],
	       errors ? "FAILED" : "ok");
	free(buf);
	return errors ? 1 : 0;
}
