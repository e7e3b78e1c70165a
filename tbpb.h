/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copyright (c) 2026, tbring contributors.  BSD-2-Clause: see COPYING, or
 * https://opensource.org/license/bsd-2-clause for the text.
 *
 * tbpb.h - the protobuf wire format, as much as tbring needs: varints,
 * field keys, the field writers, a validating reader of fields, and
 * Perfetto's framing of chunk payloads, in which each fragment is a
 * LEB128 length followed by that many bytes (the central buffer's input
 * format).  The one codec of tbring: every header that encodes or
 * decodes protobuf does it with these functions.
 *
 * Everything here is pure byte logic over memory the caller owns.  Input
 * is untrusted: every length is checked against what is left before it
 * is used, so no call reads past the end it was given.
 */
#ifndef TBPB_H
#define TBPB_H
#define TBPB_H_VERSION	200	/* tbbase.h: TBRING_VERSION */

#include "tbbase.h"

/* Headers of one release only: a mixed copy does not compile. */
#if TBBASE_H_VERSION != TBPB_H_VERSION
#error "tbpb.h needs the tbbase.h of its own release"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Wire types: the low three bits of a field's key.  Groups (3, 4) and
 * the unused 6 and 7 are not read: a field of those is malformed input.
 */
enum {
	TB_PB_VARINT = 0,
	TB_PB_FIXED64 = 1,
	TB_PB_LEN = 2,
	TB_PB_FIXED32 = 5,
};

#define TB_PB_VARINT_MAX	10u	/* bytes of the longest varint */
#define TB_PB_FIELD_MAX		0x1fffffffu	/* the largest field number */

/*
 * Bytes the shortest encoding of @v takes, @v >= 0x80, with 32-bit
 * compares: for cores that count no leading zeros in hardware (ARMv6-M,
 * RISC-V without Zbb), where __builtin_clzll() is a library call.
 */
static inline unsigned tb__pb_varint_len_cmp(uint64_t v)
{
	uint32_t x = (uint32_t)v, y = (uint32_t)(v >> 32);

	if (!y)
		return x < 1u << 14 ? 2 : x < 1u << 21 ? 3 :
		       x < 1u << 28 ? 4 : 5;
	return y < 1u << 3 ? 5 : y < 1u << 10 ? 6 : y < 1u << 17 ? 7 :
	       y < 1u << 24 ? 8 : y < 1u << 31 ? 9 : 10;
}

/* Bytes the shortest encoding of @v takes (folds for a constant @v). */
TB__HOT unsigned tb_pb_varint_len(uint64_t v)
{
	if (v < 0x80u)
		return 1;	/* types, flags, iids, most lengths */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__) || \
	defined(__aarch64__) || defined(__ARM_FEATURE_CLZ) || \
	defined(__riscv_zbb))
	/* ceil(bits / 7), with no division: (9 * bits + 64) / 64 */
	return ((64 - (unsigned)__builtin_clzll(v)) * 9 + 64) >> 6;
#else
	return tb__pb_varint_len_cmp(v);
#endif
}

/*
 * The encoder.  Each writer has two forms: tb_pb_X() returns the bytes it
 * wrote, tb__pb_X_at() the end of them (what an encoder that moves a
 * pointer along wants: no length to add back).
 */

/* Writes the shortest encoding of @v at @p; returns its end. */
TB__HOT uint8_t *tb__pb_varint_at(uint8_t *p, uint64_t v)
{
#if UINTPTR_MAX <= 0xffffffffu
	uint32_t x;

	while (v >> 32) {	/* a 32-bit core: 64-bit steps only as needed */
		*p++ = (uint8_t)(v | 0x80u);
		v >>= 7;
	}
	for (x = (uint32_t)v; x >= 0x80u; x >>= 7)
		*p++ = (uint8_t)(x | 0x80u);
	*p++ = (uint8_t)x;
#else
	while (v >= 0x80u) {
		*p++ = (uint8_t)(v | 0x80u);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
#endif
	return p;
}

/*
 * A 64-bit little-endian core writes a varint of up to 8 bytes as one
 * word (tb__pb_varint_wide_at()).
 */
#if UINTPTR_MAX > 0xffffffffu && defined(__BYTE_ORDER__) && \
	__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define TB__PB_WIDE	1
#else
#define TB__PB_WIDE	0
#endif

/*
 * tb__pb_varint_at() for a hot path that knows the length @n
 * (tb_pb_varint_len(@v)) and may write 8 bytes at @p (what lies past
 * the varint is written after it): where TB__PB_WIDE, and @n <= 8, the
 * 7-bit groups spread to one a byte in three steps (28, 14, 7 bits),
 * the continuation bits set below the last byte, one store: about half
 * the loop's instructions for a 7-byte timestamp.
 */
#if TB__PB_WIDE
/* The continuation bits of an @n-byte varint: every byte's but the last. */
static const uint64_t tb__pb_cont[9] = {
	0, 0, 0x80, 0x8080, 0x808080, 0x80808080, 0x8080808080ull,
	0x808080808080ull, 0x80808080808080ull
};
#endif

TB__HOT uint8_t *tb__pb_varint_wide_at(uint8_t *p, uint64_t v, unsigned n)
{
#if TB__PB_WIDE
	if (n <= 8) {
		uint64_t x = v & 0xfffffffull;

		x |= v << 4 & 0x0fffffff00000000ull;
		x = (x & 0x00003fff00003fffull) |
		    (x << 2 & 0x3fff00003fff0000ull);
		x = (x & 0x007f007f007f007full) |
		    (x << 1 & 0x7f007f007f007f00ull);
		x |= tb__pb_cont[n];
		TB_MEMCPY(p, &x, 8);
		return p + n;
	}
#endif
	(void)n;
	return tb__pb_varint_at(p, v);
}

/* Writes the shortest encoding of @v at @p; returns its length. */
static inline unsigned tb_pb_varint_put(uint8_t *p, uint64_t v)
{
	return (unsigned)(tb__pb_varint_at(p, v) - p);
}

/*
 * Decodes the varint at @p with @avail bytes readable.  Returns its length
 * (1 to 10) and stores the value (bits past 64 dropped), or returns 0 when
 * it is truncated or longer than TB_PB_VARINT_MAX bytes.
 */
static inline unsigned tb_pb_varint_get(const uint8_t *p, size_t avail,
					uint64_t *val)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < TB_PB_VARINT_MAX && i < avail; i++) {
		v |= (uint64_t)(p[i] & 0x7fu) << (7 * i);
		if (!(p[i] & 0x80u)) {
			*val = v;
			return i + 1;
		}
	}
	return 0;
}

/* ---- Field keys: (number << 3 | wire type), a varint -------------------- */

static inline uint64_t tb__pb_key(uint32_t field, unsigned type)
{
	return (uint64_t)field << 3 | type;
}

/* Whether @key has a field number 1 to TB_PB_FIELD_MAX, a type read here. */
static inline bool tb__pb_key_ok(uint64_t key)
{
	unsigned type = (unsigned)(key & 7);

	if (!(key >> 3) || key >> 3 > TB_PB_FIELD_MAX)
		return false;
	return type == TB_PB_VARINT || type == TB_PB_FIXED64 ||
	       type == TB_PB_LEN || type == TB_PB_FIXED32;
}

/* The bytes of a fixed field's value: 8, 4, or 0 (not a fixed type). */
static inline unsigned tb__pb_fixed_size(unsigned type)
{
	return type == TB_PB_FIXED64 ? 8 : type == TB_PB_FIXED32 ? 4 : 0;
}

/* Bytes of the key of @field (folds for a constant @field). */
static inline unsigned tb__pb_tag_len(uint32_t field)
{
	if (field < 16)
		return 1;
	return field < 2048 ? 2 : tb_pb_varint_len(tb__pb_key(field, 0));
}

/*
 * Writes the key of @field, @type at @p; returns its end.  A constant
 * field below 2048 folds to one or two byte stores.
 */
TB__HOT uint8_t *tb__pb_tag_at(uint8_t *p, uint32_t field,
			       unsigned type)
{
	uint64_t k = tb__pb_key(field, type);

	if (field < 16) {
		*p++ = (uint8_t)k;
		return p;
	}
	if (field < 2048) {
		*p++ = (uint8_t)(k | 0x80u);
		*p++ = (uint8_t)(k >> 7);
		return p;
	}
	return tb__pb_varint_at(p, k);
}

/* ---- Writing fields ------------------------------------------------------ */

/* A varint field: key and value. */
TB__HOT uint8_t *tb__pb_uint_at(uint8_t *p, uint32_t field,
				uint64_t v)
{
	return tb__pb_varint_at(tb__pb_tag_at(p, field, TB_PB_VARINT), v);
}

/* The header of a length-delimited field of @len bytes. */
TB__HOT uint8_t *tb__pb_len_at(uint8_t *p, uint32_t field,
			       uint64_t len)
{
	return tb__pb_varint_at(tb__pb_tag_at(p, field, TB_PB_LEN), len);
}

/* A fixed64's eight bytes, little-endian, at @p; returns their end. */
static inline uint8_t *tb__pb_fixed64_bits(uint8_t *p, uint64_t v)
{
	unsigned i;

	for (i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return p + 8;
}

/* A fixed64 field (a double's bits, for one): little-endian. */
TB__HOT uint8_t *tb__pb_fixed64_at(uint8_t *p, uint32_t field,
				   uint64_t v)
{
	return tb__pb_fixed64_bits(tb__pb_tag_at(p, field, TB_PB_FIXED64),
				   v);
}

/* The same, each returning the bytes it wrote at @p. */
static inline size_t tb_pb_uint(uint8_t *p, uint32_t field, uint64_t v)
{
	return (size_t)(tb__pb_uint_at(p, field, v) - p);
}

/* An int32 or int64 field: negative values are sign-extended to 64 bits. */
static inline size_t tb_pb_int(uint8_t *p, uint32_t field, int64_t v)
{
	return tb_pb_uint(p, field, (uint64_t)v);
}

static inline size_t tb_pb_len(uint8_t *p, uint32_t field, uint64_t len)
{
	return (size_t)(tb__pb_len_at(p, field, len) - p);
}

static inline size_t tb_pb_fixed64(uint8_t *p, uint32_t field, uint64_t v)
{
	return (size_t)(tb__pb_fixed64_at(p, field, v) - p);
}

/* ---- Reading fields ---------------------------------------------------- */

struct tb_pb_reader {
	const uint8_t *p;
	const uint8_t *end;
	int bad;		/* latched: the input is not protobuf */
};

struct tb_pb_field {
	uint32_t number;
	unsigned type;		/* TB_PB_VARINT, _FIXED64, _LEN, _FIXED32 */
	uint64_t value;		/* varint and fixed fields */
	const uint8_t *data;	/* TB_PB_LEN: the bytes */
	size_t size;
};

static inline void tb_pb_reader_init(struct tb_pb_reader *r, const void *p,
				     size_t n)
{
	r->p = (const uint8_t *)p;
	r->end = n ? r->p + n : r->p;	/* (NULL, 0) is an empty input */
	r->bad = 0;
}

static inline bool tb__pb_take(struct tb_pb_reader *r, uint64_t *v)
{
	unsigned n = tb_pb_varint_get(r->p, (size_t)(r->end - r->p), v);

	r->p += n;
	return n != 0;
}

/*
 * The next field: 1, 0 at the end of the input, TB_EPROTOBUF when it is
 * malformed (a truncated varint or field, field number 0 or past
 * TB_PB_FIELD_MAX, a group or an unknown wire type; latched).
 */
static inline int tb_pb_next(struct tb_pb_reader *r, struct tb_pb_field *f)
{
	uint64_t key, n = 0;
	unsigned i;

	if (r->bad)
		return TB_EPROTOBUF;
	if (r->p == r->end)
		return 0;
	if (!tb__pb_take(r, &key) || !tb__pb_key_ok(key))
		goto bad;
	f->number = (uint32_t)(key >> 3);
	f->type = (unsigned)(key & 7);
	f->value = 0;
	f->data = NULL;
	f->size = 0;
	if (f->type == TB_PB_VARINT) {
		if (!tb__pb_take(r, &f->value))
			goto bad;
		return 1;
	}
	if (f->type == TB_PB_LEN) {
		if (!tb__pb_take(r, &n) || n > (uint64_t)(r->end - r->p))
			goto bad;
		f->data = r->p;
		f->size = (size_t)n;
		r->p += n;
		return 1;
	}
	n = tb__pb_fixed_size(f->type);		/* fixed64, fixed32 */
	if ((uint64_t)(r->end - r->p) < n)
		goto bad;
	for (i = 0; i < n; i++)
		f->value |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return 1;
bad:
	r->bad = 1;
	return TB_EPROTOBUF;
}

/* ---- Perfetto's chunk framing: LEB128-length-prefixed fragments -------- */

/*
 * Each fragment is a varint length followed by that many bytes.  Length
 * 0 is an empty packet; TB_PB_SIZE_ABORT (ff ff ff 7f) marks a packet the
 * writer aborted and ends the chunk.
 */
#define TB_PB_SIZE_ABORT	0x0fffffffu

enum {
	TB_PB_FRAG_OK = 0,	/* a fragment was returned */
	TB_PB_FRAG_END,		/* no bytes left */
	TB_PB_FRAG_ABORT,	/* abort marker: no further fragments */
	TB_PB_FRAG_BAD,		/* bad varint or length past the end */
};

/* Walks the fragments of [buf, buf + size) from offset @off. */
struct tb_pb_frags {
	const uint8_t *buf;
	uint32_t size;
	uint32_t off;		/* next fragment's varint */
};

static inline void tb_pb_frags_init(struct tb_pb_frags *it,
				    const uint8_t *buf, uint32_t size,
				    uint32_t off)
{
	it->buf = buf;
	it->size = size;
	it->off = off;
}

/*
 * Returns the next fragment's bytes in *@data and *@len and advances, or
 * reports why there is none (TB_PB_FRAG_END, _ABORT, _BAD) without
 * advancing.
 */
static inline int tb_pb_frags_next(struct tb_pb_frags *it,
				   const uint8_t **data, uint32_t *len)
{
	uint32_t avail;
	uint64_t v;
	unsigned n;

	if (it->off >= it->size)
		return TB_PB_FRAG_END;
	avail = it->size - it->off;
	n = tb_pb_varint_get(it->buf + it->off, avail, &v);
	if (!n)
		return TB_PB_FRAG_BAD;
	if (v == TB_PB_SIZE_ABORT)
		return TB_PB_FRAG_ABORT;
	if (v > avail - n)
		return TB_PB_FRAG_BAD;
	*data = it->buf + it->off + n;
	*len = (uint32_t)v;
	it->off += n + (uint32_t)v;
	return TB_PB_FRAG_OK;
}

#ifdef __cplusplus
}
#endif

#endif /* TBPB_H */
