#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# profile.sh [BOARD [CASE...]] - where an event's instructions go on the
# target: the bench build of fw.c (bench.h) with FW_BENCH_ONLY=CASE, run
# under qemu-system-arm one instruction per translation block (-singlestep)
# with QEMU's execution log (-d exec,nochain), which names the address of
# every instruction executed.  Only the instructions of the timed batches
# count (between fw_prof_on() and fw_prof_off()); each goes to the
# innermost function its address is in (addr2line -i: inlined helpers
# count where they belong), and that function to a phase
# (tools/phases.awk).  A call to memcpy, memset, memmove, memcmp or a
# compiler's helper (__muldi3, __clzsi2, ...) counts in the phase of its
# caller; copies (tb__copy()) count as encoding in an
# event and as ring in the raw packet write.  The empty loop (case 0,
# profiled the same way) is taken off the bench's own code, as the bench
# does.
#
# BOARD: one of the Arm boards of boards/boards.sh (an385, the
# Cortex-M3, by default; microbit the M0); CASEs: the bench's (1 slice,
# 2 slice + annotation, 3 instant, 4 instant + annotation, 5 counter, 6
# a 16-byte packet; default 3 6).  Built as e2e.sh builds (board_build);
# files in build/firmware/BOARD/prof-CASE.*.
set -eu
top=$(pwd)
. examples/firmware/boards/boards.sh
b=${1:-an385}
[ $# -gt 0 ] && shift
cases=${*:-3 6}
board_cfg "$b"
case $b in
rv32*) echo "profile.sh: $b: addr2line and the log are the Arm's here" >&2
	exit 2 ;;
esac
out=$top/build/firmware/$b
src=$fw_src
mkdir -p "$out"
events=$(awk '/define FW_BENCH_N\t/ { n = $3 } /define FW_BENCH_ROUNDS/ {
	r = $3 } END { print n * r }' "$src/bench.h")

# prof K: build, run, and print "PHASE COUNT" lines for case K's batches
prof() {
	e=$out/prof-$1
	board_build "$b" "$e.elf" -DFW_BENCH -DFW_BENCH_ONLY="$1" "$src/fw.c"
	"${tp}nm" -S "$e.elf" > "$e.syms"
	# the instructions of the timed batches: "ADDR CALLER" per execution,
	# CALLER the address that called into a mem* or compiler helper
	# function (else -)
	# shellcheck disable=SC2086
	timeout 300 $qemu -display none -monitor none \
	    -semihosting-config enable=on,target=native -icount shift=0 \
	    -singlestep -d exec,nochain -D /dev/stdout -serial null \
	    -kernel "$e.elf" 2>&1 | awk -v syms="$e.syms" '
	function hex(s,   i, v) {
		v = 0; s = tolower(s)
		for (i = 1; i <= length(s); i++)
			v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return v
	}
	BEGIN {
		while ((getline l < syms) > 0) {
			split(l, f, " ")
			if (f[4] == "fw_prof_on") on = hex(f[1])
			if (f[4] == "fw_prof_off") off = hex(f[1])
			if (f[4] ~ /^(mem(cpy|set|move|cmp)|__[a-z0-9_]+)$/) {
				lo[++m] = hex(f[1]); hi[m] = lo[m] + hex(f[2])
			}
		}
	}
	/^Trace/ {
		s = $0; sub(/^[^[]*\[[^\/]*\//, "", s); sub(/\/.*/, "", s)
		if (!(s in num)) num[s] = hex(s)
		pc = num[s]
		if (pc == on) st = 1
		else if (pc == off) st = 0
		if (!st) { prev = pc; next }
		inmem = 0
		for (i = 1; i <= m; i++)
			if (pc >= lo[i] && pc < hi[i]) inmem = 1
		if (inmem && !wasmem) caller = prev
		wasmem = inmem
		c[sprintf("%x %s", pc, inmem ? sprintf("%x", caller) : "-")]++
		prev = pc
	}
	END { for (k in c) print k, c[k] }' > "$e.pcs"
	# the innermost function of every address seen (callers too)
	awk '{ print "0x" $1; if ($2 != "-") print "0x" $2 }' "$e.pcs" |
	    sort -u | "${tp}addr2line" -a -f -i -e "$e.elf" |
	    awk '/^0x/ { a = $1; sub(/^0x0*/, "", a); want = 1; next }
		want { print (a == "" ? "0" : a), $1; want = 0 }' > "$e.fns"
	prog=$(cat tools/phases.awk; cat <<'EOF'
FNR == NR { fn[$1] = $2; next }
{
	f = $2 == "-" ? fn[$1] : fn[$2]
	p = f == "fw_bench" || f == "bench_case" ? "bench" : phase(f)
	n[p] += $3
}
END { for (p in n) print p, n[p] }
EOF
)
	awk "$prog" "$e.fns" "$e.pcs"
}

prof 0 > "$out/prof-0.phases"
loop=$(awk '$1 == "bench" { print $2 }' "$out/prof-0.phases")
echo "where an event's instructions go on $b ($core, ${FW_OPT:--Os}; QEMU"
echo "instruction trace, per event, the empty loop taken off as the bench does):"
printf '  %-28s' ""
for p in clock interning encoding ring event total; do printf ' %9s' $p; done
echo
for k in $cases; do
	prof "$k" > "$out/prof-$k.phases"
	case $k in
	1) name="slice begin+end" ;; 2) name="slice + 1 annotation" ;;
	3) name="instant" ;; 4) name="instant + 1 annotation" ;;
	5) name="counter" ;; 6) name="ring writer: 16-byte packet" ;;
	*) name="case $k" ;;
	esac
	awk -v name="$name" -v loop="${loop:-0}" -v ev="$events" -v k="$k" '
	{ n[$1] = $2 }
	END {
		n["event"] += n["bench"] - loop
		n[k == 6 ? "ring" : "encoding"] += n["copy"]
		printf "  %-28s", name
		split("clock interning encoding ring event", o, " ")
		for (i = 1; i <= 5; i++) {
			printf " %9.1f", n[o[i]] / ev
			t += n[o[i]]
		}
		printf " %9.1f\n", t / ev
	}' "$out/prof-$k.phases"
done
