#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# e2e.sh [BOARD...] - make firmware-e2e: the firmware example built for
# each board (boards/boards.sh: Cortex-M0, M3, M4F, M7, M33, RV32 with
# and without A), run under QEMU (-icount: deterministic), its trace
# taken off both ways and checked, and the cases that must fail seen
# failing.  The boards run side by side (FW_JOBS at once, default the
# number of CPUs); each one's log, traces and files stay in
# build/firmware/<board>/, and the logs are printed in order at the end.
#
#   stream    a clean run: the ring drained to UART0 when idle, the
#             capture turned into a trace by tbtrace stream; every event
#             written is in it, once, in order (fwcheck -c)
#   fault     flight recorder: a fault on purpose, RAM taken off through
#             QEMU's gdb stub (gdb-multiarch -batch, dump binary memory),
#             tbtrace convert finds the ring in it; the trace ends with
#             the last events before the fault (fwcheck -t)
#   isrfault  the interrupt faults while the main writer holds an open
#             packet: the same, clean apart from what is flagged
#   nest      a second interrupt at a higher priority preempts the
#             tick's handler, inside its packets too: three writers, the
#             slices of the three levels nested in time (fwcheck -c -n)
#   rmw       tbsync.h's add and CAS against an interrupt between their
#             load and store: nothing lost; where the RMWs mask
#             interrupts, the mask compiled out must lose increments
#   headroom  where the tick outruns the UART (a slow core, 8 x 256 B):
#             with the tick's writer leaving 4 chunks to the main loop's,
#             the main loop keeps nearly all its events; with none, the
#             tick takes every chunk the drain frees and the main loop
#             loses nearly all
# and the failures: a dump cut in the middle of the ring, a capture
# with bytes flipped, one with a burst of frames lost, one that starts
# mid-frame and ends early (loss flagged, never a wrong event: fwcheck
# -l; what the importer cannot decode stays within the target's restate
# period, and after a burst the host saw the states of, at 0),
# an interrupt writer sharing the main writer's id (fwcheck must fail),
# and a build without the handler-mode check (the firmware must fail).
set -eu
top=$(pwd)
. "$top/examples/firmware/boards/boards.sh"
out=$top/build/firmware
tbt=$top/build/tbtrace
fwcheck=$out/fwcheck
src=$fw_src
QEMU_TIMEOUT=${QEMU_TIMEOUT:-300}
ICOUNT=5		# 2^5 ns of guest time per instruction: ~31 MIPS

if [ "${1:-}" != --one ]; then
	boards=${*:-$FW_BOARDS}
	for b in $boards; do
		board_cfg "$b" >/dev/null || exit 2
		rm -rf "${out:?}/$b"
		mkdir -p "$out/$b"
	done
	s=$(date +%s)
	# shellcheck disable=SC2086
	printf '%s\n' $boards | xargs -P "${FW_JOBS:-$(nproc)}" -I{} \
	    sh "$0" --one {} || true
	fails=0
	for b in $boards; do
		cat "$out/$b/e2e.log"
		grep -q "^firmware-e2e $b *passed" "$out/$b/e2e.log" ||
		    fails=$((fails + 1))
	done
	echo "firmware-e2e: $(($(date +%s) - s)) s for $(echo $boards | wc -w) boards"
	[ $fails = 0 ] || { echo "firmware-e2e: $fails boards FAILED"; exit 1; }
	echo "firmware-e2e: all checks passed ($boards)"
	exit 0
fi

# --- one board, its log in build/firmware/BOARD/e2e.log
b=$2
d=$out/$b
board_cfg "$b"
exec > "$d/e2e.log" 2>&1
fails=0

say() { printf 'firmware-e2e %-8s %s\n' "$b" "$*"; }
die() { say "FAILED: $*"; fails=$((fails + 1)); }

# build NAME FLAGS...: build/firmware/BOARD/NAME.elf
build() {
	n=$1
	shift
	board_build "$b" "$d/$n.elf" "$@" "$src/fw.c"
}

qemu() {
	# shellcheck disable=SC2086
	timeout "$QEMU_TIMEOUT" $qemu -display none -monitor none \
	    -semihosting-config enable=on,target=native "$@"
}

# run NAME: runs to its semihosting exit; the UART in NAME.uart, the
# report in NAME.out; returns QEMU's status (the firmware's exit code)
run() {
	qemu -icount shift=$ICOUNT -serial file:"$d/$1.uart" \
	    -kernel "$d/$1.elf" > "$d/$1.out" 2>&1
}

sym() { "${tp}nm" "$d/$1.elf" | awk -v s="$2" '$3 == s { print $1 }'; }

# dump NAME: runs until the firmware stops in board_halt(), as a debugger
# sees it: the whole RAM (_ram_start.._ram_end) into NAME.ram
dump() {
	sock=${d#"$top"/}/$1.sock	# relative: a socket path is short
	rm -f "$sock"
	qemu -icount shift=$ICOUNT -serial file:"$d/$1.uart" -S \
	    -gdb unix:"$sock",server=on,wait=on \
	    -kernel "$d/$1.elf" > "$d/$1.out" 2>&1 &
	qpid=$!
	i=0
	while [ ! -S "$sock" ] && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	timeout "$QEMU_TIMEOUT" gdb-multiarch -q -batch -nx "$d/$1.elf" \
	    -ex "target remote $sock" -ex 'break board_halt' \
	    -ex continue -ex "dump binary memory $d/$1.ram 0x$ram0 0x$ram1" \
	    -ex kill > "$d/$1.gdb" 2>&1 || true
	wait $qpid || true
	[ -s "$d/$1.ram" ]
}

# val NAME KEY: a number from the firmware's report
val() {
	sed -n "s/^fw: .* $2=\([0-9]*\).*/\1/p" "$d/$1.out" | tail -n 1
}

# check MODE NAME: the trace NAME.pftrace against NAME's report
check() {
	"$fwcheck" "-$1" "$(val "$2" main_written)" "$(val "$2" isr_written)" \
	    "$d/$2.pftrace" > "$d/$2.check" 2>&1
}

# summary NAME: fwcheck's findings in one line
summary() {
	sed -n 's/^fwcheck: writer \([123]\): \([0-9]*\) events, seq \(.*\) of \([0-9]*\) written/w\1 \3 of \4;/p; s/^fwcheck: writer \([123]\): no events/w\1 none;/p; s/^fwcheck: .*: \(ok\|FAILED\)$/\1/p' \
	    "$d/$1.check" | tr '\n' ' '
}

# stat_clean NAME: tbtrace stat finds nothing that the trace's own record
# of its loss (loss flags, TraceStats, the ring's end) does not explain:
# exit 0 (clean) or 3 (lossy, every violation explained), never 1 or 2.
# No -t: a crash or a cut leaves slices open, and the trace says why.
stat_clean() {
	"$tbt" stat "$d/$1.pftrace" > "$d/$1.stat" 2>&1 && return 0
	[ $? = 3 ]
}

# undecodable NAME: packets of NAME.pftrace the importer skips (no
# incremental state), ignores or cannot resolve, explained or not; and
# the bound a loss must stay under: what the target's restate period
# (fw.c's FW_RESTATE, 64 frames) holds of packets
undecodable() {
	"$tbt" stat "$d/$1.pftrace" 2>&1 | awk '/^  (needs-incremental-state|interned-while-invalid|iid-[a-z-]*|track-unknown) +[0-9]+ +[0-9]+ /{ n += $2 + $3 } END { print n + 0 }'
}
restate_bound() {
	awk -v p="$(sed -n 's/^trace *\([0-9]*\) packets.*/\1/p' "$d/stream.conv")" \
	    -v f="$(val stream frames)" 'BEGIN { print int(64 * p / f) }'
}

# to_trace NAME: tbtrace stream NAME.uart into NAME.pftrace; exit 1 is a
# loss it names (the writes refused on a full ring)
to_trace() {
	"$tbt" stream "$d/$1.uart" "$d/$1.pftrace" > "$d/$1.conv" 2>&1 ||
	    [ $? = 1 ]
}

build stream
build fault -DFW_END=1
build isrfault -DFW_END=2
build sharedid -DFW_SHARED_ID -DFW_ITERS=300
build nocheck '-DTB_IN_INTERRUPT()=0' -DFW_ITERS=300
[ "$nest" = 0 ] || build nest -DFW_NEST
build rmw -DFW_RMW
[ "$mask" = 0 ] || build nomask -DFW_RMW '-DTB_ATOMIC_ENTER()=0' \
    '-DTB_ATOMIC_EXIT(k)=((void)(k))'
build bench -DFW_BENCH
if [ "$slow" = 1 ]; then
	build tight -DFW_CHUNK=256u -DFW_ISR_HEADROOM=4u -DFW_ITERS=400
	build starved -DFW_CHUNK=256u -DFW_ISR_HEADROOM=0u -DFW_ITERS=400
fi
ram0=$(sym stream _ram_start)
ram1=$(sym stream _ram_end)
say "$core, built with $cc $cpu; RAM 0x$ram0..0x$ram1"

# --- live streaming over the UART
if run stream; then :; else die "stream: the firmware exited $?"; fi
say "stream: $(val stream ticks) ticks, $(val stream preempt_open) of them with a main-loop packet open, $(val stream isr_refused) stalling writes refused in the interrupt, $(val stream isr_waits) waits"
to_trace stream || die "stream: tbtrace stream failed"
stat_clean stream || die "stream: tbtrace stat not clean"
check c stream || die "stream: $(cat "$d/stream.check")"
say "stream: $(wc -c < "$d/stream.uart") UART bytes -> stream.pftrace: $(summary stream)"

# --- post-mortem: a fault, then the RAM through the gdb stub
for n in fault isrfault; do
	dump $n || { die "$n: no RAM dump"; continue; }
	"$tbt" convert "$d/$n.ram" "$d/$n.pftrace" > "$d/$n.conv" 2>&1 ||
	    true	# 1: a loss it names (the chunks writers held)
	[ -s "$d/$n.pftrace" ] || { die "$n: tbtrace convert wrote no trace"; continue; }
	# a crash leaves the slices it interrupted open
	stat_clean $n || die "$n: tbtrace stat not clean"
	check t $n || die "$n: $(cat "$d/$n.check")"
	say "$n: RAM dump -> $n.pftrace: $(summary $n)"
done
[ "$(val isrfault fault_mid_packet)" = 1 ] ||
    die "isrfault: the interrupt did not fault mid-packet"

# --- what must fail
# a dump cut in the middle of the ring: loss flagged, no wrong event
# (half way into the chunk of the last index among the positions the
# reader has not passed, read_pos .. write_pos - 1: every chunk before
# it stays whole, live ones among them, as the fault came after half
# the ring was written)
ring=$(sym fault fw_ring_mem)
rsize=$((0x$("${tp}nm" -S "$d/fault.elf" | awk '$4 == "fw_ring_mem" { print $2 }')))
chunk=$(sed -n 's/^#define FW_CHUNK\t*\([0-9]*\)u$/\1/p' "$src/fw.c")
nchunks=$(sed -n 's/^#define FW_NCHUNKS\t*\([0-9]*\)u$/\1/p' "$src/fw.c")
hdr=$((rsize - chunk * nchunks))
roff=$((0x$ring - 0x$ram0))
wp=$(od -An -tu4 -j $((roff + 64)) -N 4 "$d/fault.ram" | tr -d ' ')
rp=$(od -An -tu4 -j $((roff + 128)) -N 4 "$d/fault.ram" | tr -d ' ')
k=0
p=$rp
while [ "$p" -lt "$wp" ]; do
	[ $((p % nchunks)) -le $k ] || k=$((p % nchunks))
	p=$((p + 1))
done
cut=$((roff + hdr + k * chunk + chunk / 2))
head -c $cut "$d/fault.ram" > "$d/cutdump.ram"
cp "$d/fault.out" "$d/cutdump.out"
"$tbt" convert "$d/cutdump.ram" "$d/cutdump.pftrace" \
    > "$d/cutdump.conv" 2>&1 && die "cutdump: convert called a cut dump fine"
grep -q 'image truncated' "$d/cutdump.conv" ||
    die "cutdump: convert did not report the cut"
stat_clean cutdump || die "cutdump: tbtrace stat not clean"
check l cutdump || die "cutdump: $(cat "$d/cutdump.check")"
mv "$d/cutdump.check" "$d/cutdump.lcheck"
check t cutdump && die "cutdump: the trace of a cut dump looks whole"
mv "$d/cutdump.lcheck" "$d/cutdump.check"
say "cutdump: cut at byte $cut: loss flagged, no wrong event: $(summary cutdump)"

# a capture with bytes flipped
cp "$d/stream.uart" "$d/flipped.uart"
cp "$d/stream.out" "$d/flipped.out"
size=$(wc -c < "$d/flipped.uart")
for off in 101 $((size / 7)) $((size / 3)) $((size / 2)) $((size - 999)); do
	printf '\377' | dd of="$d/flipped.uart" bs=1 seek=$off \
	    conv=notrunc 2>/dev/null
done
"$tbt" stream "$d/flipped.uart" "$d/flipped.pftrace" \
    > "$d/flipped.conv" 2>&1 || true
grep -Eq '[1-9][0-9]* frames with a bad CRC|[1-9][0-9]* malformed' \
    "$d/flipped.conv" || die "flipped: tbtrace stream saw no bad frame"
check l flipped || die "flipped: $(cat "$d/flipped.check")"
check c flipped && die "flipped: nothing lost from a damaged capture"
check l flipped || true
u=$(undecodable flipped)
[ "$u" -le "$(restate_bound)" ] ||
    die "flipped: $u packets undecodable, over $(restate_bound)"
say "flipped: 5 bytes overwritten: $(sed -n 's/.* \([0-9]* frames with a bad CRC\).*/\1/p' "$d/flipped.conv"), $u packets undecodable, no wrong event: $(summary flipped)"

# a burst of frames lost mid-stream: the host restates the writers'
# states, so nothing after the burst is lost
head -c $((size / 3)) "$d/stream.uart" > "$d/burst.uart"
tail -c +$((size / 3 + 19 * 290)) "$d/stream.uart" >> "$d/burst.uart"
cp "$d/stream.out" "$d/burst.out"
"$tbt" stream "$d/burst.uart" "$d/burst.pftrace" \
    > "$d/burst.conv" 2>&1 || true
check l burst || die "burst: $(cat "$d/burst.check")"
u=$(undecodable burst)
[ "$u" = 0 ] || die "burst: $u packets undecodable after the burst"
say "burst: $(sed -n 's/.*; \([0-9]* frames lost by sequence gap\).*/\1/p' "$d/burst.conv"), $u packets undecodable, $(sed -n 's/^restate *\([0-9]* restates\).*/\1/p' "$d/burst.conv"): $(summary burst)"

# a capture that starts mid-frame and ends early
tail -c +5001 "$d/stream.uart" | head -c $((size / 2)) > "$d/cutuart.uart"
cp "$d/stream.out" "$d/cutuart.out"
"$tbt" stream "$d/cutuart.uart" "$d/cutuart.pftrace" \
    > "$d/cutuart.conv" 2>&1 || true
check c cutuart && die "cutuart: nothing lost from a cut capture"
check l cutuart || die "cutuart: $(cat "$d/cutuart.check")"
u=$(undecodable cutuart)
[ "$u" -le "$(restate_bound)" ] ||
    die "cutuart: $u packets undecodable, over $(restate_bound)"
say "cutuart: bytes 5000..$((size / 2 + 5000)) only: $(sed -n 's/^link *[0-9]* bytes: .*; \([0-9]* bytes skipped\)/\1/p' "$d/cutuart.conv"), $u packets undecodable (bound $(restate_bound)), no wrong event: $(summary cutuart)"

# an interrupt writer with the main writer's id
run sharedid || true
"$tbt" stream "$d/sharedid.uart" "$d/sharedid.pftrace" \
    > "$d/sharedid.conv" 2>&1 || true
if check c sharedid; then
	die "sharedid: fwcheck passed a shared writer id"
else
	say "sharedid: fails as it must: $(head -n 1 "$d/sharedid.check")"
fi

# no handler-mode check: the interrupt's stalling writes would wait
if run nocheck; then
	die "nocheck: passed without the handler-mode check"
else
	say "nocheck: fails as it must: isr_waits=$(val nocheck isr_waits)"
fi

# --- nested interrupts: three levels, three writers
nested() {
	if run nest; then :; else die "nest: the firmware exited $?"; fi
	to_trace nest || die "nest: tbtrace stream failed"
	stat_clean nest || die "nest: tbtrace stat not clean"
	"$fwcheck" -c -n "$(val nest main_written)" \
	    "$(val nest isr_written)" "$(val nest irq2_written)" \
	    "$d/nest.pftrace" > "$d/nest.check" 2>&1 ||
	    die "nest: $(cat "$d/nest.check")"
	say "nest: the second interrupt landed $(val nest nest_open) times with the tick's packet open, $(val nest nest_three) of them with main's open under it: $(summary nest)"
	say "nest: $(sed -n 's/^fwcheck: nesting: //p' "$d/nest.check")"
}
if [ "$nest" = 1 ]; then
	nested
else
	say "nest: not built here: a third writer does not fit in its RAM"
fi

# --- the read-modify-writes against an interrupt between load and store
. "$src/rmw.sh"
rmw_check rmw 0 || die "rmw: $rmw_why"
say "rmw: $rmw_say"
if [ "$mask" = 1 ]; then
	rmw_check nomask 1 || die "nomask: $rmw_why"
	say "nomask: fails as it must: $rmw_say"
fi

# --- a ring the tick overflows: the headroom keeps the main loop's share
if [ "$slow" = 1 ]; then
	run tight || die "tight: the firmware exited $?"
	to_trace tight || die "tight: tbtrace stream failed"
	check c tight || die "tight: $(cat "$d/tight.check")"
	mw=$(val tight main_written)
	[ $((mw / 10)) -gt "$(val tight main_failed)" ] ||
	    die "tight: the main loop lost $(val tight main_failed) of its events, kept $mw"
	say "tight: 8 x 256 B, headroom 4: main kept $mw events, lost $(val tight main_failed); the tick kept $(val tight isr_written), lost $(val tight isr_failed)"
	run starved || true
	mw=$(val starved main_written)
	if [ $((mw * 10)) -lt "$(val starved main_failed)" ]; then
		say "starved: fails as it must: no headroom: main kept $mw events, lost $(val starved main_failed); the tick kept $(val starved isr_written)"
	else
		die "starved: the main loop kept $mw events without headroom"
	fi
fi

# --- instructions per event
qemu -icount shift=0 -serial null -kernel "$d/bench.elf" \
    > "$d/bench.out" 2>&1 || die "bench: exited $?"
sed -n 's/^fw: bench [^ ]* /  /p' "$d/bench.out"

if [ $fails = 0 ]; then
	say "passed"
else
	say "$fails checks FAILED"
fi
