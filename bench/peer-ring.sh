#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# bench/peer-ring.sh OUTDIR - builds Perfetto's prototype of the chunk ring
# (the tracing-v2 SharedRingBuffer, RingWriter and ChunkReader) under the
# side-by-side driver of ../shared/tools/peer-ring, with bench/peer-ring.patch
# applied: the rows with 4 and 8 writers that bench/ring.c has, and the
# writers' and the reader's CPU per packet (CLOCK_THREAD_CPUTIME_ID), as
# bench_ring prints them.  Neither the prototype nor the driver is in this
# repository: PEER_RING names the directory that holds them (default
# ../shared/tools/peer-ring beside this checkout, or ../../shared from a
# worktree), and only our patch is
# here.  Prints the binary's path.  Needs g++ and patch.
set -e
here=$(cd "$(dirname "$0")" && pwd)
peer=${PEER_RING:-$here/../../shared/tools/peer-ring}
# a git worktree one level further down finds it one level further up
[ -n "$PEER_RING" ] || [ -d "$peer" ] || peer=$here/../../../shared/tools/peer-ring
out=${1:?usage: bench/peer-ring.sh OUTDIR}
[ -f "$peer/proto_ring_bench.cc" ] && [ -d "$peer/perfetto" ] || {
	echo "peer-ring.sh: no prototype at $peer (set PEER_RING)" >&2
	exit 2
}
peer=$(cd "$peer" && pwd)
mkdir -p "$out/obj" "$out/src"
cp "$peer/proto_ring_bench.cc" "$out/src/proto_ring_bench.cc"
chmod u+w "$out/src/proto_ring_bench.cc"
patch -s -d "$out/src" -p1 < "$here/peer-ring.patch"
F="-std=c++17 -O2 -DNDEBUG -I$peer/perfetto -I$peer/perfetto/include"
F="$F -I$peer/perfetto/include/perfetto/base/build_configs/bazel"
F="$F -Wno-deprecated-declarations"
for f in chunk_reader ring_writer shared_ring_buffer; do
	o="$out/obj/$f.o"
	[ "$o" -nt "$peer/perfetto/src/tracing/v2/$f.cc" ] ||
		g++ $F -c "$peer/perfetto/src/tracing/v2/$f.cc" -o "$o"
done
for f in logging paged_memory utils crash_keys pipe file_utils string_utils \
	 status default_platform; do
	o="$out/obj/$f.o"
	[ "$o" -nt "$peer/perfetto/src/base/$f.cc" ] ||
		g++ $F -c "$peer/perfetto/src/base/$f.cc" -o "$o"
done
g++ $F -c "$out/src/proto_ring_bench.cc" -o "$out/obj/drv.o"
g++ -O2 "$out"/obj/*.o -o "$out/proto_ring_bench" -Wl,--wrap=syscall -lpthread
echo "$out/proto_ring_bench"
