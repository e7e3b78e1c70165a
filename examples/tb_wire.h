/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * examples/tb_wire.h - what tb_service and tb_producer say to each other.
 *
 * One AF_UNIX SOCK_SEQPACKET connection per client; every message is one
 * struct tbw_msg.  A producer sends HELLO; the service answers CONFIG with
 * two file descriptors attached (SCM_RIGHTS): the producer's ring, a
 * sealed memfd of ring_len bytes already laid out by tb_ring_init(), and
 * the doorbell every ring of the service rings, a sealed memfd of
 * bell_len bytes holding a struct tb_bell at offset 0.  A producer that
 * finishes cleanly sends BYE with its totals before it closes; a
 * connection that ends without BYE is a producer that died.  A control
 * client sends STOP or FLUSH instead of HELLO and gets ACK back.
 *
 * The layout is the same for 32- and 64-bit builds (every 64-bit field
 * sits at a multiple of 8), so an -m32 producer can talk to a 64-bit
 * service.
 */
#ifndef TB_WIRE_H
#define TB_WIRE_H

#include <stdint.h>

#define TBW_MAGIC	0x31575442u	/* "TBW1" */

enum tbw_type {
	TBW_HELLO = 1,	/* producer -> service */
	TBW_CONFIG,	/* service -> producer, with the two fds */
	TBW_BYE,	/* producer -> service: clean exit, totals */
	TBW_STOP,	/* control -> service: flush, write, exit */
	TBW_FLUSH,	/* control -> service: scrape every ring now */
	TBW_ACK,	/* service -> control */
};

struct tbw_msg {
	uint32_t magic;
	uint32_t type;
	uint32_t producer_id;	/* CONFIG: this producer's id */
	uint32_t bid;		/* CONFIG: the BufferID to write to */
	uint32_t chunk_size;	/* CONFIG: ring geometry */
	uint32_t num_chunks;
	uint64_t ring_len;	/* CONFIG: bytes of the ring memfd */
	uint64_t bell_len;	/* CONFIG: bytes of the doorbell memfd */
	uint64_t service_addr;	/* CONFIG: where the service mapped it */
	uint64_t ok;		/* BYE: packets written */
	uint64_t failed;	/* BYE: packets lost */
};

typedef char tbw__msg_size_check[sizeof(struct tbw_msg) == 64 ? 1 : -1];

#endif /* TB_WIRE_H */
