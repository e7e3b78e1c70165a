#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# e2e.sh [BOARD...] - make freertos-e2e: FreeRTOS (FREERTOS_KERNEL, the
# kernel's source tree) traced through tbfreertos.h, built for each
# board, run under QEMU with -icount, its trace taken off both ways and
# checked against what the kernel itself counted.  Traces and logs stay
# in build/freertos/<board>/.
#
#   stream    the ring drained to UART0 by the lowest task, the capture
#             turned into a trace by tbtrace stream: clean under the
#             importer's rules (tbtrace stat), each task's CPU time within
#             1 % of the kernel's run-time counters, idle included, as
#             many switches as the hooks counted, every task's events
#             once and in order on its own track (rtoscheck -c)
#   fault     a fault in a task, the RAM taken off through QEMU's gdb stub,
#             tbtrace convert finds the ring in it (rtoscheck -t)
# and what must fail: a kernel whose run-time counter runs 2 % fast
# (rtoscheck must see the CPU times disagree), a capture with bytes
# flipped (a switch lost: the check must fail, the loss be named).
# Then instructions per context switch, with and without the hooks.
set -eu
top=$(pwd)
out=$top/build/freertos
tbt=$top/build/tbtrace
check=$out/rtoscheck
src=$top/examples/freertos
K=${FREERTOS_KERNEL:?set FREERTOS_KERNEL to a FreeRTOS-Kernel source tree}
. "$top/examples/firmware/boards/boards.sh"
QEMU_TIMEOUT=120
ICOUNT=3		# 8 ns of guest time per instruction
# microbit (give it by name): since each event writer keeps its call
# sites' events encoded (TB_EV_SITES), 16 KiB leaves the handlers too
# little stack for the fault case (a lockup in HardFault), and a 1 KiB
# ring loses switches: not run by default until it fits again.
boards=${*:-an385}
fails=0

# Several boards: one run of this script each, at once (a core each),
# their logs shown in order.
if [ "$(echo $boards | wc -w)" -gt 1 ]; then
	mkdir -p "$out"
	for b in $boards; do
		sh "$0" "$b" > "$out/$b.log" 2>&1 &
		eval "pid_$b=\$!"
	done
	for b in $boards; do
		eval "wait \$pid_$b" || fails=$((fails + 1))
		cat "$out/$b.log"
	done
	[ $fails = 0 ] || { echo "freertos-e2e: $fails boards FAILED"; exit 1; }
	echo "freertos-e2e: all checks passed ($boards)"
	exit 0
fi

say() { printf 'freertos-e2e %-6s %s\n' "$b" "$*"; }
die() { say "FAILED: $*"; fails=$((fails + 1)); }

# kernel KIND FLAGS...: the kernel's own files, once per KIND (traced,
# or untraced: the hooks are all that changes them); no -Wextra (not
# ours to fix).  Sets objs.
kernel() {
	k=$d/kernel-$1
	shift
	objs=""
	for f in tasks.c queue.c list.c portable/MemMang/heap_4.c $portsrc; do
		o=$k/$(basename "$f" .c).o
		objs="$objs $o"
		[ -f "$o" ] && continue
		mkdir -p "$k"
		# shellcheck disable=SC2086
		$cc $cpu ${FW_OPT:--Os} -g -std=c99 -ffreestanding \
		    -fno-tree-loop-distribute-patterns -ffunction-sections \
		    -fdata-sections -nostdinc \
		    -isystem "$($cc -print-file-name=include)" \
		    -I"$fw_boards/include" -I"$fw_boards" -I"$top" "-D$def" \
		    "$@" -c "$K/$f" -o "$o"
	done
}

# build NAME FLAGS...: build/freertos/BOARD/NAME.elf, the board's
# support (examples/firmware/boards/) and the kernel's port for its core
build() {
	n=$1
	shift
	set -- -I"$src/include" -I"$src" -I"$K/include" \
	    -I"$K/portable/GCC/$port" "$@"
	case " $* " in
	*" -DFR_NO_TRACE "*|*" -DFR_NO_HOOKS "*) kernel untraced "$@" ;;
	*) kernel traced "$@" ;;
	esac
	# shellcheck disable=SC2086
	board_build "$b" "$d/$n.elf" "$@" "$src/main.c" $objs
}

qemu() {
	# shellcheck disable=SC2086
	timeout $QEMU_TIMEOUT $qemu -display none -monitor none \
	    -semihosting-config enable=on,target=native "$@"
}

# run NAME: to its semihosting exit; UART in NAME.uart, report NAME.out;
# the firmware reads NAME as its command line
run() {
	qemu -icount shift=$ICOUNT,sleep=off -serial file:"$d/$1.uart" \
	    -kernel "$d/$1.elf" -append "$1" > "$d/$1.out" 2>&1
}

# dump NAME: runs until the firmware stops in board_halt(); RAM in NAME.ram
dump() {
	sock=${d#"$top"/}/$1.sock	# relative: a socket path is short
	rm -f "$sock"
	qemu -icount shift=$ICOUNT,sleep=off -serial file:"$d/$1.uart" -S \
	    -gdb unix:"$sock",server=on,wait=on \
	    -kernel "$d/$1.elf" -append "$1" > "$d/$1.out" 2>&1 &
	qpid=$!
	i=0
	while [ ! -S "$sock" ] && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	timeout $QEMU_TIMEOUT gdb-multiarch -q -batch -nx "$d/$1.elf" \
	    -ex "target remote $sock" -ex 'break board_halt' \
	    -ex continue -ex "dump binary memory $d/$1.ram $ram" \
	    -ex kill > "$d/$1.gdb" 2>&1 || true
	wait $qpid || true
	[ -s "$d/$1.ram" ]
}

# crashed NAME: tbtrace stat -t (a crash ends the recording: what it cut
# short, a slice or a flow, is explained) finds nothing else (0 or 3)
crashed() {
	"$tbt" stat -t "$d/$1.pftrace" > "$d/$1.stat" 2>&1 && return 0
	[ $? = 3 ]
}

# rtos MODE NAME: rtoscheck against the firmware's report
rtos() {
	"$check" "-$1" "$d/$2.out" "$d/$2.pftrace" > "$d/$2.check" 2>&1
}

for b in $boards; do
	d=$out/$b
	rm -rf "$d"
	mkdir -p "$d"
	board_cfg "$b" || exit 2
	case $b in
	an385) port=ARM_CM3 portsrc=portable/GCC/ARM_CM3/port.c ;;
	microbit) port=ARM_CM0
		portsrc="portable/GCC/ARM_CM0/port.c portable/GCC/ARM_CM0/portasm.c" ;;
	*) echo "e2e.sh: no FreeRTOS port for board $b (an385, microbit)" >&2
	   exit 2 ;;
	esac
	build stream		# also "fault" and "skew" (QEMU's -append)
	cp "$d/stream.elf" "$d/fault.elf"
	cp "$d/stream.elf" "$d/skew.elf"
	build untraced -DFR_NO_HOOKS
	build bench -DFR_BENCH
	build bench0 -DFR_BENCH -DFR_NO_TRACE

	# --- live streaming over the UART
	if run stream; then :; else die "stream: the firmware exited $?"; fi
	"$tbt" stream "$d/stream.uart" "$d/stream.pftrace" \
	    > "$d/stream.conv" 2>&1 || die "stream: tbtrace stream failed"
	"$tbt" stat "$d/stream.pftrace" > "$d/stream.stat" 2>&1 ||
	    die "stream: tbtrace stat: not clean"
	rtos c stream || die "stream: $(cat "$d/stream.check")"
	say "stream: $(wc -c < "$d/stream.uart") UART bytes -> stream.pftrace: $(sed -n 's/^rtoscheck: .*: \([0-9]* switches.*\)/\1/p' "$d/stream.check")"
	sed -n 's/^rtoscheck: \(.*cpu .*\)/  \1/p' "$d/stream.check"
	sed -n 's/^fr: [^ ]* hooks /  hooks: /p' "$d/stream.out"

	# --- post-mortem: a fault in a task, the RAM through the gdb stub
	ram=$("${tp}nm" "$d/fault.elf" | awk '$3 == "_ram_start" { s = $1 }
	    $3 == "_ram_end" { e = $1 } END { print "0x" s " 0x" e }')
	if dump fault; then
		"$tbt" convert "$d/fault.ram" "$d/fault.pftrace" \
		    > "$d/fault.conv" 2>&1 || true
		crashed fault || die "fault: tbtrace stat -t not clean"
		rtos t fault || die "fault: $(cat "$d/fault.check")"
		grep -q ' fault$' "$d/fault.out" ||
		    die "fault: the firmware did not fault"
		say "fault: RAM dump -> fault.pftrace: $(sed -n 's/^rtoscheck: .*: \([0-9]* switches.*\)/\1/p' "$d/fault.check")"
	else
		die "fault: no RAM dump"
	fi

	# --- what must fail
	# the kernel's clock 2 % fast: the CPU times must disagree
	run skew || true	# its exit: what it counted; the check decides
	"$tbt" stream "$d/skew.uart" "$d/skew.pftrace" > "$d/skew.conv" 2>&1 ||
	    true
	if rtos c skew; then
		die "skew: rtoscheck passed a kernel clock 2 % fast"
	else
		say "skew: fails as it must: $(grep -m 1 'CPU time' "$d/skew.check")"
	fi
	# a capture with bytes flipped: frames lost, so switches
	cp "$d/stream.uart" "$d/flipped.uart"
	cp "$d/stream.out" "$d/flipped.out"
	size=$(wc -c < "$d/flipped.uart")
	for off in $((size / 5)) $((size / 3)) $((size / 2)); do
		printf '\377' | dd of="$d/flipped.uart" bs=1 seek=$off \
		    conv=notrunc 2>/dev/null
	done
	"$tbt" stream "$d/flipped.uart" "$d/flipped.pftrace" \
	    > "$d/flipped.conv" 2>&1 || true
	grep -Eq '[1-9][0-9]* frames with a bad CRC' "$d/flipped.conv" ||
	    die "flipped: tbtrace stream saw no bad frame"
	if rtos c flipped; then
		die "flipped: rtoscheck passed a damaged capture"
	else
		say "flipped: fails as it must: $(head -n 1 "$d/flipped.check")"
	fi

	# --- what tracing costs the scenario, by the kernel's own counts:
	# the idle task's share of the CPU with the kernel untraced and
	# traced; of the difference, the drain task's is the streaming
	run untraced || die "untraced: the firmware exited $?"
	# share NAME TASK: TASK's percentage of the CPU in NAME's report
	share() {
		awk -v task="name=$2" '/^fr: task / { v = 0
			for (i = 1; i <= NF; i++) if ($i ~ /^runtime_ns=/)
				v = substr($i, 12)
			t += v; if ($3 == task) mine = v }
		END { if (t) printf "%.1f", 100 * mine / t }' "$d/$1.out"
	}
	u=$(share untraced IDLE)
	t=$(share stream IDLE)
	s=$(share stream drain)
	rate=$(awk '/ hooks / { for (i = 1; i <= NF; i++) {
		if ($i ~ /^switches=/) s = substr($i, 10)
		if ($i ~ /^counted_at_ns=/) n = substr($i, 15) } }
		END { printf "%.0f", s / (n / 1e9) }' "$d/stream.out")
	say "cost: idle $u % of the CPU untraced, $t % traced: tracing $(echo "$u $t $s" | awk '{ printf "%.1f %% (recording %.1f %%, streaming %.1f %%)", $1 - $2, $1 - $2 - $3, $3 }') of $((1000 >> ICOUNT)) MIPS at $rate switches/s"

	# --- instructions per context switch (-icount shift=0: 1 ns each)
	for n in bench0 bench; do
		qemu -icount shift=0,sleep=off -serial null -kernel "$d/$n.elf" \
		    > "$d/$n.out" 2>&1 || die "$n: exited $?"
		sed -n 's/^fr: bench [^ ]* /  /p' "$d/$n.out"
	done
done
[ $fails = 0 ] || { echo "freertos-e2e: $fails checks FAILED"; exit 1; }
echo "freertos-e2e: all checks passed ($boards)"
