/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copyright (c) 2026, tbring contributors.  BSD-2-Clause: see COPYING, or
 * https://opensource.org/license/bsd-2-clause for the text.
 *
 * tbbase.h - what every tbring header shares: the version, the one result
 * space and tb_strerror(), and what a vendor may replace.
 *
 * Results are one enum for all headers, no two causes with one number:
 * 0 is success, negative numbers are errors (each names a cause a caller
 * can act on), small positive numbers are the ring reader's outcomes.
 *
 * A vendor may define, before including any tbring header:
 *   TB_MEMCPY(dst, src, n), TB_MEMSET(dst, c, n), TB_MEMCMP(a, b, n)
 *	the byte copy, fill and compare (firmware with its own, a checked
 *	one); tbevent.h also takes TB_STRLEN(s);
 *   TB_BUG_ON(cond)
 *	the check of internal invariants and caller contracts: traps in
 *	debug builds (__builtin_trap() with GNU C, assert() elsewhere),
 *	compiles out under NDEBUG (the function then returns an error code
 *	where it has one).
 *
 * C99, no allocation, nothing beyond <string.h> (and <assert.h> for
 * TB_BUG_ON where the compiler is not GNU C).
 */
#ifndef TBBASE_H
#define TBBASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TBRING_VERSION_MAJOR	0
#define TBRING_VERSION_MINOR	2
#define TBRING_VERSION_PATCH	0
#define TBRING_VERSION_STRING	"0.2.0"
/*
 * The release as one number, major * 10000 + minor * 100 + patch.  Every
 * header defines its own TB<NAME>_H_VERSION to it and refuses to compile
 * (#error) with a header of another release: a vendor who updates one
 * header updates them all.  `make headers` checks both.
 */
#define TBRING_VERSION		(TBRING_VERSION_MAJOR * 10000 + \
				 TBRING_VERSION_MINOR * 100 + \
				 TBRING_VERSION_PATCH)
#define TBBASE_H_VERSION	TBRING_VERSION

#ifndef TB_MEMCPY
#define TB_MEMCPY(dst, src, n)	memcpy((dst), (src), (n))
#endif
#ifndef TB_MEMSET
#define TB_MEMSET(dst, c, n)	memset((dst), (c), (n))
#endif
#ifndef TB_MEMCMP
#define TB_MEMCMP(a, b, n)	memcmp((a), (b), (n))
#endif
/*
 * A few instructions every write runs (an atomic's), inlined even where
 * the compiler optimises for size: a call would cost as much again.
 */
#if defined(__GNUC__)
#define TB__ALWAYS	static inline __attribute__((always_inline))
#else
#define TB__ALWAYS	static inline
#endif
/* A fast path: inlined, unless the build optimises for size. */
#if defined(__GNUC__) && !defined(__OPTIMIZE_SIZE__)
#define TB__HOT		static inline __attribute__((always_inline))
#else
#define TB__HOT		static inline
#endif
/* A rare path, kept out of line so that its callers' fast paths stay small. */
#if defined(__GNUC__)
#define TB__COLD	static __attribute__((noinline, unused))
#else
#define TB__COLD	static inline
#endif
#ifndef TB_BUG_ON
#if defined(NDEBUG)
#define TB_BUG_ON(cond)	((void)0)
#elif defined(__GNUC__)
#define TB_BUG_ON(cond)	do { if (cond) __builtin_trap(); } while (0)
#else
#include <assert.h>
#define TB_BUG_ON(cond)	assert(!(cond))
#endif
#endif

/*
 * Our names start with tb_ and TB_; so do termbox2.h's (TB_OK, TB_ERR,
 * tb_strerror(), ...), and the two cannot share a translation unit: use
 * them in different files (every function here is static inline, so
 * nothing clashes when linking).  Said here, not 100 errors later.
 */
#ifdef TB_OK
#error "tbbase.h: TB_OK is already defined (termbox2.h?): use tbring in another file"
#endif

#ifdef __cplusplus
extern "C" {
#endif

enum tb_result {
	TB_OK = 0,

	/* a writer could not write (the packet is lost, loss is owed) */
	TB_FULL = -1,		/* ring full (after waiting, under TB_STALL) */
	TB_NO_CHUNK = -2,	/* claim budget spent on held chunks */
	TB_TOO_LARGE = -3,	/* can never fit one chunk */
	TB_DROPPED = -4,	/* a scraped suffix found no replacement */

	/* the caller's mistake */
	TB_EINVAL = -10,	/* bad argument (NULL, unknown enum, ...) */
	TB_EOPEN = -11,		/* a fragment is already open */
	TB_ENOTOPEN = -12,	/* no fragment is open */
	TB_ESIZE = -13,		/* more bytes than the range handed out */
	TB_EID = -14,		/* id 0 is reserved (writer, producer) */
	TB_EALIGN = -15,	/* memory not aligned as required */

	/* a mapping that is not a ring this code can attach to */
	TB_ESHORT = -20,	/* mapping shorter than the ring */
	TB_EMAGIC = -21,	/* not a tbring ring */
	TB_EVERSION = -22,	/* another version of the ring ABI */
	TB_EHEADER = -23,	/* control header of another size */
	TB_EGEOMETRY = -24,	/* chunk size or count out of range */

	/* a ring retired by its reader */
	TB_EPROTO = -30,	/* the shared words broke the protocol */
	TB_EPINNED = -31,	/* every chunk pinned by dead writers */

	/* the central buffer refused a call */
	TB_ENOMEM = -40,	/* the allocator failed */
	TB_ELIMIT = -41,	/* a size limit, not memory (table full) */
	TB_EROFS = -42,		/* the buffer is read-only (a clone) */
	TB_EBUFFULL = -43,	/* buffer full under the discard policy */
	TB_ESTALE = -44,	/* chunk id already consumed */
	TB_ETOOBIG = -45,	/* chunk larger than the buffer */
	TB_EFRAMING = -46,	/* fragments do not parse; prefix kept */
	TB_ERECOMMIT = -47,	/* a recommit that contradicts the first */
	TB_EBADID = -48,	/* writer id 0, or a chunk id out of window */
	TB_ENOENT = -49,	/* patch: no such sequence or chunk */
	TB_ERANGE = -50,	/* patch: offset out of the payload */
	TB_EBUSY = -51,		/* called from the overwrite callback */
	/* a chunk's fragments (tbfrag.h) */
	TB_ENOROOM = -52,	/* no room for (that) fragment in the chunk */
	TB_EDIR = -53,		/* a size directory that cannot be */

	/* an event writer's clock the importer could not place (tbevent.h) */
	TB_ENOCLOCK = -60,	/* none given, and no CLOCK_BOOTTIME here */
	TB_ECLOCKREF = -61,	/* not BOOTTIME, and no reference clock */
	TB_ECLOCKFN = -62,	/* no function to read it or its reference */
	TB_ECLOCKID = -63,	/* clock id 0, or above 127 */
	/* protobuf, the trace output, the event writer's build (tbpb.h...) */
	TB_EPROTOBUF = -65,	/* input is not valid protobuf */
	TB_EIO = -66,		/* a trace output's write failed */
	TB_ECONFIG = -67,	/* event writer of another TB_EV_* build */
	/* a byte-link frame that cannot be used (tblink.h) */
	TB_ECRC = -70,		/* its CRC-32 does not match */
	TB_ELINK = -71,		/* it does not decode or parse */
	TB_ELINKVER = -72,	/* another version of the link format */

	/* the ring reader's outcomes */
	TB_NODATA = 1,		/* nothing reserved: caught up */
	TB_EMITTED = 2,		/* a chunk's fragments were taken */
	TB_SKIPPED = 3,		/* the position was a hole */
	TB_RETRY_LATER = 4,	/* lost every race at one position */
	TB_PENDING = 5,		/* lazy: a writer still holds the chunk */
	TB_LIMIT = 6,		/* drain: resolved as many as allowed */
};

static inline const char *tb_strerror(int result)
{
	switch (result) {
	case TB_OK: return "ok";
	case TB_FULL: return "ring full";
	case TB_NO_CHUNK: return "no chunk could be claimed (held chunks)";
	case TB_TOO_LARGE: return "larger than a chunk can hold";
	case TB_DROPPED: return "scraped suffix dropped: no room to move it";
	case TB_EINVAL: return "invalid argument";
	case TB_EOPEN: return "a fragment is already open";
	case TB_ENOTOPEN: return "no fragment is open";
	case TB_ESIZE: return "size larger than the range handed out";
	case TB_EID: return "id 0 is reserved";
	case TB_EALIGN: return "memory not aligned as required";
	case TB_ESHORT: return "mapping shorter than the ring";
	case TB_EMAGIC: return "not a tbring ring (bad magic)";
	case TB_EVERSION: return "ring of another ABI version";
	case TB_EHEADER: return "ring control header of another size";
	case TB_EGEOMETRY: return "ring chunk size or count out of range";
	case TB_EPROTO: return "ring stopped: the protocol was broken";
	case TB_EPINNED: return "ring retired: every chunk pinned by a "
				"writer that never acknowledged a scrape";
	case TB_ENOMEM: return "out of memory";
	case TB_ELIMIT: return "size limit reached (not out of memory)";
	case TB_EROFS: return "central buffer is read-only";
	case TB_EBUFFULL: return "central buffer full (discard policy)";
	case TB_ESTALE: return "chunk already consumed";
	case TB_ETOOBIG: return "chunk larger than the central buffer";
	case TB_EFRAMING: return "malformed fragments";
	case TB_ERECOMMIT: return "invalid recommit";
	case TB_EBADID: return "invalid writer or chunk id";
	case TB_ENOENT: return "no such chunk to patch";
	case TB_ERANGE: return "patch out of the chunk's payload";
	case TB_EBUSY: return "called from the overwrite callback";
	case TB_ENOROOM: return "no room for the fragment in the chunk";
	case TB_EDIR: return "chunk size directory invalid";
	case TB_ENOCLOCK: return "no clock: CLOCK_BOOTTIME is not declared "
				 "here (strict C99 needs _POSIX_C_SOURCE or "
				 "_GNU_SOURCE); pass a struct tb_ev_clock";
	case TB_ECLOCKREF: return "a clock other than BOOTTIME needs a "
				  "reference clock (BOOTTIME) to snapshot";
	case TB_ECLOCKFN: return "no function to read the clock or its "
				 "reference";
	case TB_ECLOCKID: return "clock id 0, or above 127";
	case TB_EPROTOBUF: return "malformed protobuf";
	case TB_EIO: return "trace output: a write failed";
	case TB_ECONFIG: return "event writer built with other TB_EV_* sizes";
	case TB_ECRC: return "link frame: CRC mismatch";
	case TB_ELINK: return "link frame malformed";
	case TB_ELINKVER: return "link frame of another format version";
	case TB_NODATA: return "no data";
	case TB_EMITTED: return "emitted";
	case TB_SKIPPED: return "skipped (hole)";
	case TB_RETRY_LATER: return "retry later";
	case TB_PENDING: return "pending: a writer holds the chunk";
	case TB_LIMIT: return "limit reached";
	}
	return "unknown result";
}

/*
 * A short copy inline: a packet or a field of a few dozen bytes, where a
 * call to memcpy() costs more than the copy (and a firmware's memcpy may
 * be a byte loop).  Where the target loads and stores words at any
 * address (x86, aarch64, ARMv7-M and up: __ARM_FEATURE_UNALIGNED), as
 * small copies are done best: the first and the last two words, which
 * may overlap (a byte written twice, with the same value), and for more
 * than two words a loop of two words at a time before them; no loop a
 * compiler could turn back into a memcpy() call.  Bytes elsewhere
 * (ARMv6-M, RISC-V).  Longer than TB__COPY_INLINE: TB_MEMCPY.
 */
#define TB__COPY_INLINE	64u
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__aarch64__))
#define TB__COPY_WORD	8
#elif defined(__GNUC__) && (defined(__i386__) || \
	defined(__ARM_FEATURE_UNALIGNED))
#define TB__COPY_WORD	4
#else
#define TB__COPY_WORD	0	/* bytes: no word loads at any address */
#endif

#if TB__COPY_WORD
/* @n bytes, @w <= @n <= 2 * @w: the first and the last @w of them. */
#define TB__COPY_ENDS(d, s, n, w)					\
	do {								\
		__builtin_memcpy((d), (s), (w));			\
		__builtin_memcpy((d) + (n) - (w), (s) + (n) - (w), (w)); \
	} while (0)
#endif

TB__HOT void tb__copy(void *dst, const void *src, size_t n)
{
	uint8_t *d = (uint8_t *)dst;
	const uint8_t *s = (const uint8_t *)src;
#if TB__COPY_WORD
	const size_t w = TB__COPY_WORD;
	size_t i;

	if (n > TB__COPY_INLINE) {
		TB_MEMCPY(d, s, n);
	} else if (n > 2 * w) {
		for (i = 0; i + 2 * w < n; i += 2 * w)
			TB__COPY_ENDS(d + i, s + i, 2 * w, w);
		TB__COPY_ENDS(d + n - 2 * w, s + n - 2 * w, 2 * w, w);
	} else if (n >= w) {
		TB__COPY_ENDS(d, s, n, w);
	} else if (w == 8 && n >= 4) {
		TB__COPY_ENDS(d, s, n, 4);
	} else if (n >= 2) {
		TB__COPY_ENDS(d, s, n, 2);
	} else if (n) {
		*d = *s;
	}
#else
	if (n > TB__COPY_INLINE) {
		TB_MEMCPY(d, s, n);
		return;
	}
	for (; n >= 4; n -= 4, d += 4, s += 4) {	/* four bytes a turn */
		d[0] = s[0];
		d[1] = s[1];
		d[2] = s[2];
		d[3] = s[3];
	}
	while (n--)
		*d++ = *s++;
#endif
}

/*
 * An allocator hook: allocate (@ptr NULL), resize or free (@new_size 0)
 * a block, like Lua's lua_Alloc; NULL on failure (or after freeing).
 */
typedef void *(*tb_alloc_fn)(void *ctx, void *ptr, size_t old_size,
			     size_t new_size);

#ifdef __cplusplus
}
#endif

#endif /* TBBASE_H */
