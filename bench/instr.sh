#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# instr.sh [BENCH [OUTDIR]] - make bench-instr: instructions per operation
# of the event layer (tbevent.h) beside tb_writer_write_packet() of the
# same bytes, counted by callgrind (an instruction count does not move
# with the load of a shared machine, as time does), and where an
# instant's instructions go.
#
# Each row of bench_event that has a raw baseline runs in a process of
# its own: bench_event --count N ROW reaches the steady state (warm-up,
# capture), then count_layer() runs the operation N times and
# count_raw() writes its captured packets N times.  callgrind counts
# only inside those two (--toggle-collect), callees included (libc's
# clock_gettime, memcpy); their inclusive counts over N are the row's
# instructions per operation.  Under valgrind clock_gettime() is a
# system call, not the vDSO: the kernel's share of a read is not counted
# (callgrind sees about ten instructions of it).
#
# The breakdown: one more run of the instant row, count_layer() only,
# each instruction given to the innermost function its source line is
# in (tools/fnlen.sh -l), and that function to a phase (tools/phases.awk,
# copies counted as encoding); a call into code outside the tree (libc)
# counts in the phase of the line that calls it.
#
# N: TB_INSTR_N (default 2000).  Per row in OUTDIR (build/instr): the
# callgrind file (ROW.cg) and valgrind's log.
set -eu
bench=${1:-build/bench_event}
out=${2:-build/instr}
n=${TB_INSTR_N:-2000}
top=$(pwd)
command -v valgrind >/dev/null || {
	echo "bench-instr: needs valgrind (Debian: apt-get install valgrind)" >&2
	exit 1
}
mkdir -p "$out"

# cg FILE: "layer raw" inclusive instructions of count_layer, count_raw:
# the cost line after a calls= line is the call's inclusive cost.
cg() {
	awk '
	/^c?fn=/ {		# one id space for fn= and cfn=
		s = $0; sub(/^c?fn=/, "", s); id = s
		sub(/\).*/, "", id)
		if (s ~ /\) /) { sub(/^\([0-9]+\) /, "", s); fn[id] = s }
		callee = fn[id]; next
	}
	/^calls=/ { pending = callee; next }
	/^[0-9+*-]/ && pending != "" {
		if (pending == "count_layer") layer += $2
		if (pending == "count_raw") raw += $2
		pending = ""
	}
	END { print layer + 0, raw + 0 }' "$1"
}

goal() {
	case $1 in
	slice) echo "<= 2" ;;
	instant|counter) echo "<= 1.5" ;;
	*) echo "" ;;
	esac
}

# callgrind runs every row under one valgrind each
rows=$("$bench" --count 1 | awk '{ print $1 }')
echo "tbevent instructions per operation (callgrind; $n operations after the"
echo "steady state; raw: tb_writer_write_packet() of the same packets)"
printf '%-16s %9s %9s %7s %7s\n' row layer raw ratio goal
for r in $rows; do
	valgrind --tool=callgrind --callgrind-out-file="$out/$r.cg" \
	    --toggle-collect=count_layer --toggle-collect=count_raw \
	    "$bench" --count "$n" "$r" > "$out/$r.out" 2> "$out/$r.log" || {
		cat "$out/$r.log" "$out/$r.out" >&2
		echo "bench-instr: $r failed" >&2
		exit 1
	}
	set -- $(cg "$out/$r.cg")
	awk -v r="$r" -v l="$1" -v w="$2" -v n="$n" -v g="$(goal "$r")" 'BEGIN {
		printf "%-16s %9.1f %9.1f %7.2f %7s\n", r, l / n, w / n,
		       w ? l / w : 0, g }'
done

# The breakdown of an instant: self instructions per source line (and
# per function outside the tree), each line's function, its phase.
r=instant
valgrind --tool=callgrind --callgrind-out-file="$out/$r-layer.cg" \
    --toggle-collect=count_layer "$bench" --count "$n" "$r" \
    > /dev/null 2> "$out/$r-layer.log"
sh tools/fnlen.sh -l ./*.h bench/*.c > "$out/functions.txt"
echo
echo "where an instant's instructions go (callgrind, per event):"
prog=$(cat tools/phases.awk; cat <<'EOF'
FNR == NR {			# tools/fnlen.sh -l: FILE FIRST LAST NAME
	f = $1; sub(/^\.\//, "", f)
	for (i = $2; i <= $3; i++)
		fnof[f ":" i] = $4
	next
}
function file(s,   id) {
	id = s; sub(/\).*/, "", id); sub(/^\(/, "", id)
	if (s ~ /\) /) { sub(/^\([0-9]+\) /, "", s); files[id] = s }
	return files[id]
}
function funame(s,   id) {
	id = s; sub(/\).*/, "", id); sub(/^\(/, "", id)
	if (s ~ /\) /) { sub(/^\([0-9]+\) /, "", s); funcs[id] = s }
	return funcs[id]
}
# the tree relative path of a file, "" outside it
function rel(s) {
	if (index(s, top "/") != 1)
		return ""
	s = substr(s, length(top) + 2)
	sub(/^\.\//, "", s)
	return s
}
/^fl=/ { fl = rel(file(substr($0, 4))); cur = fl; next }
/^(fi|fe)=/ {			# inlined from another file
	raw = file(substr($0, 4)); cur = rel(raw)
	if (cur == "" && fl != "")	# ck's atomics: the ring; else the
		cur = raw ~ /ck_pr/ ? "ck_pr" : "@"	# function it is in
	next
}
/^fn=/ { fn = funame(substr($0, 4)); cur = fl; next }
/^cf[il]=/ { callee = rel(file(substr($0, 5))); cfile = 1; next }
/^cfn=/ { funame(substr($0, 5)); next }
/^calls=/ {			# no cfi=: the callee is in this file
	if (!cfile)
		callee = cur
	call = 1; cfile = 0; next
}
/^[0-9+*-]/ {
	p = $1
	l = p == "*" ? last : p ~ /^[+-]/ ? last + p : p
	last = l
	if (call) {		# inclusive: counted here only for libc
		call = 0
		if (cur == "" || callee != "")
			next
	} else if (cur == "") {
		next		# libc: its callers count it
	}
	g = cur == "ck_pr" ? "ck_pr_" : cur == "@" ? fn : \
	    (cur ":" l) in fnof ? fnof[cur ":" l] : fn
	g = phase(g)
	ph[g == "copy" ? "encoding" : g] += $2	# an event's bytes
	tot += $2
}
END {
	split("clock interning encoding ring event", order, " ")
	for (i = 1; i <= 5; i++)
		if (ph[order[i]])
			printf "  %-10s %7.1f\n", order[i], ph[order[i]] / n
	printf "  %-10s %7.1f\n", "total", tot / n
}
EOF
)
awk -v n="$n" -v top="$top" "$prog" "$out/functions.txt" "$out/$r-layer.cg"
echo "phases: tools/phases.awk; files in $out/"
