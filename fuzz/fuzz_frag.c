/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target for tbfrag.h's parsing and cursor logic.
 *
 * The input is a list of tests; each byte picks one, later bytes give its
 * arguments.  Every buffer handed to tbfrag.h is malloc'd at its exact
 * size, so ASan sees any access past it.  Checked against an independent
 * computation in this file:
 *  - tb_frag_dir_fits() and tb_frag_parse_dir(): directory bytes, entry
 *    count (0 to 2047) and width and chunk size (256 to 32768) from the
 *    input.  The fit, the returned total and every size match, -1 exactly
 *    when an entry takes the running total past the space the directory
 *    leaves, and an accepted directory's sizes fit that space; a
 *    directory that cannot fit is refused without a byte read.
 *  - The writer cursor: a random session of open, close (with sizes past
 *    the range too), append, room and the encoder filling its whole range
 *    with junk before it closes short.  A shadow model predicts every
 *    result, cursor and room; no call that fails changes anything; no
 *    payload byte or size entry written earlier ever changes (payload and
 *    directory never overlap); and at the end tb_frag_parse_dir() reads
 *    back exactly the sizes written.  Also the BufferID round trip and
 *    the width, entry offset and largest-fragment helpers.
 *  - The varint tokenizer: tb_pb_varint_get() on truncated, overlong
 *    and 10-byte input, tb_pb_varint_len() and _put() for every bit
 *    length, the put/get round trip, and tb_pb_frags_next() over raw or
 *    framed bytes (abort markers, lengths one past the end) from any
 *    offset: the same fragments, the same end, no advance on END, ABORT
 *    or BAD, and bounded steps.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tbfrag.h"
#include "tbpb.h"
#include "fuzz/fuzz_input.h"


#define MAXTESTS	256

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	CHECK(p);
	return p;
}

static uint32_t chunk_size(struct in *in)
{
	return TB_CHUNK_MIN << get(in) % 8;	/* 256 .. 32768 */
}

/* ---- Directory --------------------------------------------------------- */

static const uint16_t edge_n[] = { 0, 1, 2, 125, 250, 251, 253, 254, 255 };

static void test_dir(struct in *in)
{
	uint32_t cs = chunk_size(in), cap, total = 0, i;
	unsigned sel = get(in), n, w, ok = 1, fits;
	uint16_t *sizes, *ref;
	uint8_t *dir;
	int32_t ret;

	w = sel & 1 ? 1 + (sel >> 1 & 1) : tb_frag_width(cs);
	switch (sel >> 2 & 3) {
	case 0: n = edge_n[get(in) % 9]; break;
	case 1: n = get(in); break;
	case 2:	/* right at the limit, or one past it */
		n = (cs - TB_FRAG_PAYLOAD_OFF) / w + get(in) % 2;
		break;
	default: n = get16(in) % 2048; break;
	}
	CHECK(tb_frag_width(cs) == (cs == 256 ? 1u : 2u));
	CHECK(tb_frag_max_size(cs) == cs - 6 - tb_frag_width(cs));
	fits = (uint64_t)n * w <= cs - TB_FRAG_PAYLOAD_OFF;
	CHECK(tb_frag_dir_fits(cs, n, w) == (int)fits);
	dir = (uint8_t *)xmalloc(fits ? n * w : 0);
	sizes = (uint16_t *)xmalloc(n * sizeof(*sizes));
	ref = (uint16_t *)xmalloc(n * sizeof(*ref));
	if (!fits) {
		/* refused before reading: dir is one byte, not n * w */
		CHECK(tb_frag_parse_dir(dir, n, w, cs, sizes) == TB_EDIR);
		goto out;
	}
	cap = cs - TB_FRAG_PAYLOAD_OFF - n * w;
	/* sizes: raw bytes, or each near an even share of the free space */
	for (i = 0; i < n; i++) {
		uint8_t *e = dir + (n - 1 - i) * w;	/* fragment i's entry */
		uint32_t s;

		if (sel & 16) {
			s = n ? cap / n : 0;
			if (!i)
				s += cap - s * n + get(in) % 3;	/* +0..2 */
			if (w == 1 && s > 255)
				s = 255;
		} else {
			s = w == 2 ? get16(in) : get(in);
		}
		e[0] = (uint8_t)s;
		if (w == 2)
			e[1] = (uint8_t)(s >> 8);
		s = w == 2 ? (uint32_t)e[0] | (uint32_t)e[1] << 8 : e[0];
		if (ok && (uint64_t)total + s > cap)
			ok = 0;
		if (ok) {
			total += s;
			ref[i] = (uint16_t)s;
		}
	}
	ret = tb_frag_parse_dir(dir, n, w, cs, sizes);
	if (!ok) {
		CHECK(ret == TB_EDIR);
		goto out;
	}
	CHECK(ret >= 0 && (uint32_t)ret == total && total <= cap);
	for (i = 0; i < n; i++)
		CHECK(sizes[i] == ref[i]);
out:
	free(dir);
	free(sizes);
	free(ref);
}

/* ---- Writer cursor ----------------------------------------------------- */

struct shadow {
	uint32_t payload, dir, nfrags, open;
	uint32_t size[TB_FRAG_MAX + 1];
	uint32_t off[TB_FRAG_MAX + 1];	/* payload offset of each */
};

static uint8_t pattern(uint32_t frag, uint32_t i)
{
	return (uint8_t)(frag * 37 + i * 11 + 1);
}

static void same(const struct tb_frag_cursor *c, const struct shadow *s)
{
	CHECK(c->payload == s->payload && c->dir == s->dir &&
	      c->nfrags == s->nfrags && !!c->open == !!s->open);
}

static int32_t ref_room(const struct shadow *s, uint32_t w)
{
	if (s->nfrags >= TB_FRAG_MAX || s->dir - s->payload < w)
		return TB_ENOROOM;
	return (int32_t)(s->dir - w - s->payload);
}

/*
 * The fragments closed so far are intact: size entries and payload bytes
 * of the last @last of them, and fragment 0's entry (cheap enough for
 * every step; the end checks all of them).
 */
static void intact(const uint8_t *chunk, uint32_t cs, uint32_t w,
		   const struct shadow *s, uint32_t last)
{
	uint32_t i, j;

	CHECK(s->payload <= s->dir);
	CHECK(s->dir == cs - s->nfrags * w);
	if (s->nfrags)
		CHECK(tb__frag_get_le(chunk + cs - w, w) == s->size[0]);
	for (i = s->nfrags > last ? s->nfrags - last : 0; i < s->nfrags; i++) {
		CHECK(tb__frag_entry_off(cs, w, i) == cs - (i + 1) * w);
		CHECK(tb__frag_get_le(chunk + tb__frag_entry_off(cs, w, i), w) ==
		      s->size[i]);
		for (j = 0; j < s->size[i]; j++)
			CHECK(chunk[s->off[i] + j] == pattern(i, j));
		CHECK(s->off[i] + s->size[i] == (i + 1 < s->nfrags ?
						 s->off[i + 1] : s->payload));
	}
}

static void test_cursor(struct in *in)
{
	uint32_t cs = TB_CHUNK_MIN << get(in) % 4, w = tb_frag_width(cs);
	uint32_t steps = get(in), i, j, len, bid = get16(in);
	uint8_t *chunk = (uint8_t *)xmalloc(cs), *b = NULL, *e = NULL;
	uint8_t src[TB_CHUNK_MAX / 8];
	struct tb_frag_cursor c;
	struct shadow s;
	uint16_t *sizes;
	uint8_t *dir;

	memset(chunk, 0xee, cs);
	tb_frag_cursor_init(&c, chunk, cs);
	tb_frag_set_bid(chunk, (uint16_t)bid);
	memset(&s, 0, sizeof(s));
	s.payload = TB_FRAG_PAYLOAD_OFF;
	s.dir = cs;
	CHECK(c.chunk == chunk && c.chunk_size == cs && c.width == w);
	same(&c, &s);
	for (i = 0; i < steps && in->n; i++) {
		unsigned op = get(in);
		int32_t room = ref_room(&s, w);
		uint8_t *nb, *ne;
		int ret;

		CHECK(tb_frag_room(&c) == room);
		switch (op % 4) {
		case 0:		/* open: the range is the free middle */
			ret = tb_frag_open(&c, &nb, &ne);
			if (s.open || room < 0) {
				CHECK(ret == (s.open ? TB_EOPEN : TB_ENOROOM));
				break;
			}
			CHECK(ret == 0);
			CHECK(nb == chunk + s.payload);
			CHECK(ne == chunk + s.dir - w);
			CHECK(ne - nb == room);
			b = nb;
			e = ne;
			s.open = 1;
			break;
		case 1:	/* the encoder fills it all, then closes short */
			len = get16(in);
			if (s.open && op & 0x10)
				len = (uint32_t)(e - b) + len % 3;
			else
				len %= s.open ? (uint32_t)(e - b) + 2 : 300;
			if (s.open) {
				memset(b, 0x5a, (size_t)(e - b));
				for (j = 0; j < len && b + j < e; j++)
					b[j] = pattern(s.nfrags, j);
			}
			ret = tb_frag_close(&c, len);
			if (!s.open || len > s.dir - w - s.payload) {
				CHECK(ret == (s.open ? TB_ESIZE : TB_ENOTOPEN));
				break;
			}
			CHECK(ret == 0);
			s.off[s.nfrags] = s.payload;
			s.size[s.nfrags++] = len;
			s.payload += len;
			s.dir -= w;
			s.open = 0;
			break;
		case 2:		/* append: open, copy, close in one */
			len = get16(in);
			if (op & 0x10 && room >= 0)
				len = (uint32_t)room + len % 3;
			else
				len %= 64;
			if (len > sizeof(src))
				len = sizeof(src);
			for (j = 0; j < len; j++)
				src[j] = pattern(s.nfrags, j);
			ret = tb__frag_append(&c, src, len);
			if (s.open || room < 0 || len > (uint32_t)room) {
				CHECK(ret == (s.open ? TB_EOPEN : TB_ENOROOM));
				break;	/* an open fragment stays open */
			}
			CHECK(ret == 0);
			s.off[s.nfrags] = s.payload;
			s.size[s.nfrags++] = len;
			s.payload += len;
			s.dir -= w;
			break;
		default:	/* many empty fragments: reach the 255 limit */
			for (j = get(in); j && !s.open && ref_room(&s, w) >= 0;
			     j--) {
				CHECK(tb__frag_append(&c, src, 0) == 0);
				s.off[s.nfrags] = s.payload;
				s.size[s.nfrags++] = 0;
				s.dir -= w;
			}
			break;
		}
		same(&c, &s);
		if (!s.open)
			intact(chunk, cs, w, &s, 2);
		CHECK(tb_frag_bid(chunk) == (uint16_t)bid);
	}
	if (s.open)	/* abandon it: the closed part stands */
		memset(b, 0x5a, (size_t)(e - b));
	intact(chunk, cs, w, &s, TB_FRAG_MAX + 1);
	/* the reader's parse reads back exactly what was written */
	dir = (uint8_t *)xmalloc(s.nfrags * w);
	sizes = (uint16_t *)xmalloc(s.nfrags * sizeof(*sizes));
	memcpy(dir, chunk + cs - s.nfrags * w, s.nfrags * w);
	CHECK(tb_frag_dir_fits(cs, s.nfrags, w));
	CHECK(tb_frag_parse_dir(dir, s.nfrags, w, cs, sizes) ==
	      (int32_t)(s.payload - TB_FRAG_PAYLOAD_OFF));
	for (i = 0; i < s.nfrags; i++)
		CHECK(sizes[i] == s.size[i]);
	free(dir);
	free(sizes);
	free(chunk);
}

/* ---- Varints ----------------------------------------------------------- */

/* Decodes like the wire format says, bit by bit: length, or 0. */
static unsigned ref_varint(const uint8_t *p, size_t avail, uint64_t *val)
{
	uint64_t v = 0;
	unsigned i, j;

	for (i = 0; i < 10 && i < avail; i++) {
		for (j = 0; j < 7; j++)
			if (7 * i + j < 64 && p[i] >> j & 1)
				v |= (uint64_t)1 << (7 * i + j);
		if (!(p[i] & 0x80)) {
			*val = v;
			return i + 1;
		}
	}
	return 0;
}

static unsigned ref_len(uint64_t v)
{
	unsigned bits = 0;

	while (bits < 64 && v >> bits)
		bits++;
	return bits ? (bits + 6) / 7 : 1;
}

static void test_varint(struct in *in)
{
	unsigned avail = get(in) % 13, n, m, i, k;
	uint8_t *p = (uint8_t *)xmalloc(avail), *q;
	uint64_t v = 0x1234, rv = 0x5678, w;

	for (i = 0; i < avail; i++)
		p[i] = (uint8_t)get(in);
	n = tb_pb_varint_get(p, avail, &v);
	m = ref_varint(p, avail, &rv);
	CHECK(n == m);
	if (n) {
		CHECK(v == rv);
		/* the shortest encoding is never longer than this one */
		CHECK(tb_pb_varint_len(v) <= n);
	}
	free(p);
	/* put: any value, and every bit length's edges */
	k = get(in);
	w = k & 0x80 ? get64(in) : k % 65 == 64 ? ~(uint64_t)0 :
	    ((uint64_t)1 << k % 64) - (k & 0x40 ? 1 : 0);
	n = ref_len(w);
	CHECK(tb_pb_varint_len(w) == n && n <= TB_PB_VARINT_MAX);
	q = (uint8_t *)xmalloc(n);	/* exactly what it may write */
	CHECK(tb_pb_varint_put(q, w) == n);
	CHECK(tb_pb_varint_get(q, n, &v) == n && v == w);
	if (n > 1)	/* truncated */
		CHECK(tb_pb_varint_get(q, n - 1, &v) == 0);
	free(q);
}

/*
 * Framed bytes into @buf (@cap bytes): fragments that fit, abort markers,
 * overlong varints, and a last length one byte past the end.  Returns the
 * bytes used.
 */
static uint32_t frame(struct in *in, uint8_t *buf, uint32_t cap)
{
	uint32_t off = 0, len, n, i;

	while (off + 12 < cap && in->n) {
		unsigned k = get(in);

		switch (k % 8) {
		case 0:
			off += tb_pb_varint_put(buf + off,
						  TB_PB_SIZE_ABORT);
			continue;
		case 1:		/* claims one byte more than is left */
			n = tb_pb_varint_len(cap - off);
			off += tb_pb_varint_put(buf + off, cap - off - n + 1);
			while (off < cap)
				buf[off++] = (uint8_t)get(in);
			return off;
		case 2:		/* eleven bytes: one too many */
			memset(buf + off, 0x80, 10);
			buf[off + 10] = 0;
			off += 11;
			continue;
		}
		len = get(in) % 24;
		if (len > cap - off - 10)
			len = cap - off - 10;
		off += tb_pb_varint_put(buf + off, len);
		for (i = 0; i < len; i++)
			buf[off++] = (uint8_t)get(in);
	}
	return off;
}

static void test_iter(struct in *in)
{
	unsigned sel = get(in), steps = 0;
	uint32_t size = get16(in) % 400, off, ro, i;
	uint8_t *buf, tmp[400];
	struct tb_pb_frags it;
	const uint8_t *data;
	uint32_t len;
	int ret, ref;

	if (sel & 1) {
		size = frame(in, tmp, size);
		if (sel & 2 && size)
			size--;		/* the last fragment cut short */
	} else {
		for (i = 0; i < size; i++)
			tmp[i] = (uint8_t)get(in);
	}
	buf = (uint8_t *)xmalloc(size);	/* exact: ASan sees past the end */
	memcpy(buf, tmp, size);
	off = sel & 4 ? get16(in) % (size + 4) : 0;
	tb_pb_frags_init(&it, buf, size, off);
	for (ro = off;; steps++) {
		uint64_t v = 0;
		unsigned n;

		CHECK(steps <= size + 1);	/* every fragment advances */
		if (ro >= size) {
			ref = TB_PB_FRAG_END;
		} else if (!(n = ref_varint(buf + ro, size - ro, &v))) {
			ref = TB_PB_FRAG_BAD;
		} else if (v == TB_PB_SIZE_ABORT) {
			ref = TB_PB_FRAG_ABORT;
		} else if (v > size - ro - n) {
			ref = TB_PB_FRAG_BAD;
		} else {
			ref = TB_PB_FRAG_OK;
			ret = tb_pb_frags_next(&it, &data, &len);
			CHECK(ret == ref);
			CHECK(data == buf + ro + n && len == v);
			ro += n + (uint32_t)v;
			CHECK(it.off == ro);
			continue;
		}
		ret = tb_pb_frags_next(&it, &data, &len);
		CHECK(ret == ref && it.off == ro);
		/* no advance: asked again, the same answer */
		CHECK(tb_pb_frags_next(&it, &data, &len) == ref);
		CHECK(it.off == ro);
		break;
	}
	free(buf);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_init(argc, argv);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	unsigned tests = 0;

	while (in.n && tests++ < MAXTESTS) {
		switch (get(&in) % 4) {
		case 0:
			test_dir(&in);
			break;
		case 1:
			test_cursor(&in);
			break;
		case 2:
			test_varint(&in);
			break;
		default:
			test_iter(&in);
			break;
		}
	}
	return 0;
}
