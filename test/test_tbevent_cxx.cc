// SPDX-License-Identifier: BSD-2-Clause
/*
 * test_tbevent_cxx.cc - tbevent.h from C++ (C++11 and C++17): the RAII
 * scoped slice (ended by its destructor, also when an exception leaves
 * the block), the macros with every kind of item, and the thread-local
 * current writer: two threads, each with its own writer, tracing through
 * the plain macros into one ring.  Packets are read back through the
 * ring's reader and decoded with trace_decode.h (Perfetto's numbers as
 * literals: TracePacket track_event 11, track_descriptor 60,
 * sequence_flags 13; TrackEvent type 9, track_uuid 11, name_iid 10;
 * TrackDescriptor uuid 1).
 */
#include <check.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tbevent.h"
#include "tbpacket.h"
#include "trace_decode.h"

namespace {

TB_CATEGORY_DEFINE(cat_cxx, "cxx", 1);
TB_CATEGORY_DEFINE(cat_cxx_off, "cxx_off", 0);

const uint32_t kChunk = 4096, kChunks = 64;
const unsigned kThreads = 2, kEvents = 300;

struct Packet {
	uint16_t writer;
	uint32_t flags;
	std::vector<uint8_t> bytes;
};

// A ring, and a reader that keeps every whole packet.
struct Ring {
	std::vector<uint8_t> mem, rscratch, ramem;
	struct tb_ring r;
	struct tb_reader rd;
	struct tb_reassembly ra;
	std::vector<Packet> packets;

	Ring() : rscratch(kChunk)
	{
		size_t len = tb_ring_size(kChunk, kChunks);

		/* over-sized: the ring starts at the first TB_RING_LINE */
		mem.resize(len + TB_RING_LINE);
		ramem.resize(tb_reassembly_size(4, 65536));
		uint8_t *at = mem.data() + (TB_RING_LINE - (uintptr_t)mem.data() %
					     TB_RING_LINE) % TB_RING_LINE;
		ck_assert_int_eq(tb_ring_init(&r, at, len, kChunk, kChunks),
				 TB_OK);
		ck_assert_int_eq(tb_reader_init(&rd, &r, rscratch.data()),
				 TB_OK);
		ck_assert_int_eq(tb_reassembly_init(&ra, ramem.data(),
						    ramem.size(), 4, 65536,
						    TB_OVERSIZE_DROP), TB_OK);
	}

	static void on_packet(void *ctx, const struct tb_packet *p)
	{
		Ring *ring = static_cast<Ring *>(ctx);
		Packet k;

		k.writer = p->writer;
		k.flags = p->flags;
		k.bytes.assign(p->data, p->data + p->len);
		ring->packets.push_back(k);
	}

	void drain()
	{
		while (tb_reader_drain_packets(&rd, &ra, 64, TB_READ_SCRAPE,
					       on_packet, this, NULL) ==
		       TB_LIMIT)
			;
	}
};

// One thread's writer pair.
struct Writer {
	std::vector<uint8_t> scratch;
	struct tb_writer w;
	struct tb_ev_writer ew;

	Writer(Ring &ring, uint16_t id, const struct tb_track *track)
		: scratch(kChunk)
	{
		ck_assert_int_eq(tb_writer_init(&w, &ring.r, id, 0, TB_DROP,
						scratch.data()), TB_OK);
		ck_assert_int_eq(tb_ev_writer_init(&ew, &w, track, NULL, 0),
				 TB_OK);
	}
};

// The fields of one message that a test looks at.
struct Fields {
	std::vector<struct pb_field> f;

	Fields(const uint8_t *p, size_t n)
	{
		struct pb_reader r;
		struct pb_field x;
		int ret;

		pb_init(&r, p, n);
		while ((ret = pb_next(&r, &x)) > 0)
			f.push_back(x);
		ck_assert_int_eq(ret, 0);
	}

	const struct pb_field *get(uint32_t num) const
	{
		for (size_t i = 0; i < f.size(); i++)
			if (f[i].number == num)
				return &f[i];
		return NULL;
	}

	uint64_t num(uint32_t n) const
	{
		const struct pb_field *x = get(n);

		ck_assert_ptr_nonnull(x);
		return x->value;
	}

	Fields sub(uint32_t n) const
	{
		const struct pb_field *x = get(n);

		ck_assert_ptr_nonnull(x);
		ck_assert_uint_eq(x->type, 2);
		return Fields(x->data, x->size);
	}
};

// The TrackEvent types (9) of the event packets, in order.
std::vector<uint64_t> event_types(const std::vector<Packet> &ps,
				  uint16_t writer)
{
	std::vector<uint64_t> types;

	for (size_t i = 0; i < ps.size(); i++) {
		if (ps[i].writer != writer)
			continue;
		Fields m(ps[i].bytes.data(), ps[i].bytes.size());

		if (m.get(11))
			types.push_back(m.sub(11).num(9));
	}
	return types;
}

void throws_inside_a_scope(struct tb_ev_writer *ew)
{
	TB_TRACE_SCOPE_W(ew, &cat_cxx, "Throws", TB_ARG_INT("depth", 1));
	throw std::runtime_error("out");
}

int evaluated;

int64_t side_effect()
{
	evaluated++;
	return 1;
}

} // namespace

START_TEST(test_scoped_slice_ends_in_its_destructor)
{
	Ring ring;
	struct tb_track proc, thread;

	tb_track_process(&proc, 10, 1, "p");
	tb_track_thread(&thread, 11, &proc, 1, 2, "t");
	Writer wr(ring, 1, &thread);
	{
		TB_TRACE_SCOPE_W(&wr.ew, &cat_cxx, "Outer");
		{
			TB_TRACE_SCOPE_W(&wr.ew, &cat_cxx, "Inner",
					 TB_ARG_STR("k", "v"));
		}
		TB_TRACE_SCOPE_W(&wr.ew, &cat_cxx_off, "Off",
				 TB_ARG_INT("n", side_effect()));
	}
	try {
		throws_inside_a_scope(&wr.ew);
	} catch (const std::exception &) {
	}
	tb_writer_release(&wr.w);
	ring.drain();
	std::vector<uint64_t> t = event_types(ring.packets, 1);
	const uint64_t want[] = { 1, 1, 2, 2, 1, 2 };

	ck_assert_uint_eq(t.size(), 6);
	for (size_t i = 0; i < 6; i++)
		ck_assert_uint_eq(t[i], want[i]);
	ck_assert_int_eq(evaluated, 0);
}
END_TEST

START_TEST(test_every_macro_compiles_and_writes)
{
	Ring ring;
	struct tb_track proc, thread, ctr, lane;
	int x = 0;

	tb_track_process(&proc, 20, 1, "p");
	tb_track_thread(&thread, 21, &proc, 1, 2, "t");
	tb_track_counter(&ctr, 22, &proc, "c", TB_UNIT_COUNT);
	tb_track_custom(&lane, 23, &proc, "lane");
	Writer wr(ring, 2, &thread);

	tb_ev_set_current(&wr.ew);
	TB_TRACE_BEGIN(&cat_cxx, "B", TB_ARG_INT("i", -1), TB_ARG_UINT("u", 2),
		       TB_ARG_DOUBLE("d", 0.5), TB_ARG_BOOL("b", true),
		       TB_ARG_STR("s", "x"), TB_ARG_STRN("n", "xyz", 2),
		       TB_ARG_PTR("p", &x), TB_FLOW(5));
	TB_TRACE_END(&cat_cxx);
	TB_TRACE_INSTANT(&cat_cxx, "I", TB_ON_TRACK(&lane), TB_FLOW_END(5),
			 TB_AT(tb_ev_now(&wr.ew)));
	TB_TRACE_COUNTER(&cat_cxx, &ctr, 3);
	TB_TRACE_COUNTER_DOUBLE(&cat_cxx, &ctr, 2.5);
	{
		TB_TRACE_SCOPE(&cat_cxx, "S");
	}
	evaluated = 0;
	TB_TRACE_INSTANT(&cat_cxx_off, "off", TB_ARG_INT("n", side_effect()));
	TB_TRACE_COUNTER(&cat_cxx_off, &ctr, side_effect());
	ck_assert_int_eq(evaluated, 0);
	tb_ev_set_current(NULL);
	TB_TRACE_INSTANT(&cat_cxx, "nobody");
	tb_writer_release(&wr.w);
	ring.drain();
	std::vector<uint64_t> t = event_types(ring.packets, 2);
	const uint64_t want[] = { 1, 2, 3, 4, 4, 1, 2 };

	ck_assert_uint_eq(t.size(), 7);
	for (size_t i = 0; i < 7; i++)
		ck_assert_uint_eq(t[i], want[i]);
	ck_assert_uint_eq(wr.ew.stats.events, 7);
	ck_assert_uint_eq(wr.ew.stats.lost, 0);
}
END_TEST

START_TEST(test_each_thread_traces_through_its_current_writer)
{
	Ring ring;
	struct tb_track proc;
	struct tb_track threads[kThreads];
	std::vector<std::thread> ts;

	tb_track_process(&proc, 100, 7, "two threads");
	for (unsigned i = 0; i < kThreads; i++)
		tb_track_thread(&threads[i], 101 + i, &proc, 7, (int32_t)i,
				"worker");
	for (unsigned i = 0; i < kThreads; i++)
		ts.emplace_back([&ring, &threads, i] {
			Writer wr(ring, (uint16_t)(1 + i), &threads[i]);

			tb_ev_set_current(&wr.ew);
			for (unsigned k = 0; k < kEvents; k++) {
				TB_TRACE_BEGIN(&cat_cxx, "Work",
					       TB_ARG_UINT("k", k));
				TB_TRACE_END(&cat_cxx);
			}
			tb_ev_set_current(NULL);
			tb_writer_release(&wr.w);
		});
	for (auto &t : ts)
		t.join();
	ring.drain();
	for (unsigned i = 0; i < kThreads; i++) {
		unsigned events = 0;
		bool first = true;

		for (const Packet &p : ring.packets) {
			if (p.writer != 1 + i)
				continue;
			Fields m(p.bytes.data(), p.bytes.size());

			if (first)	// each sequence starts cleared
				ck_assert_uint_eq(m.num(13) & 1, 1);
			first = false;
			if (!m.get(11))
				continue;
			events++;
			ck_assert_uint_eq(m.sub(11).num(11), 101 + i);
		}
		ck_assert_uint_eq(events, 2 * kEvents);
	}
}
END_TEST

int main()
{
	Suite *s = suite_create("tbevent_cxx");
	TCase *tc = tcase_create("cxx");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_scoped_slice_ends_in_its_destructor);
	tcase_add_test(tc, test_every_macro_compiles_and_writes);
	tcase_add_test(tc, test_each_thread_traces_through_its_current_writer);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
