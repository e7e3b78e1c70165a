#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# model/run.sh - model-checks model/chunk.pml with spin.
#
# Every clean configuration must end with "errors: 0" after a complete
# search; every mutation and probe must find an error, and the one it is
# meant to break (pan's first violation names the property).  pan exits 0
# even when it finds errors, so this reads its report.  Prints states,
# depth, time and memory of each run; exits 1 if a clean run finds an error
# or does not finish, or a mutation or probe goes uncaught.
#
# usage: model/run.sh [-j N] [-l] [NAME-PATTERN...]
#   -j N     N checks at once (default 2; a clean run takes up to ~2.5 GB)
#   -l       list the runs and exit
#   PATTERN  shell patterns: only the runs whose name matches one
# env: MODEL_OUT  where each run keeps its pan.c, log and trail
#                 (default model/out); replay a trail with the command
#                 printed beside it.
#      MODEL_TIMEOUT  seconds per run (default 900)
set -u
cd "$(dirname "$0")"
here=$(pwd)
out=${MODEL_OUT:-$here/out}
jobs=2
list=0
while getopts "j:l" o; do
	case $o in
	j) jobs=$OPTARG ;;
	l) list=1 ;;
	*) sed -n '2,22s/^# \{0,1\}//p' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))

for t in spin gcc; do
	command -v $t >/dev/null || {
		echo "model: $t is missing (apt-get install -y spin gcc)" >&2
		exit 2
	}
done

# Geometries: see "The small position space" in chunk.pml.
MASK="-DNCHUNK=2 -DCBITS=1 -DWBITS=1 -DPBITS=3 -DSTART=6"	# period 4
ROLL="-DNCHUNK=2 -DCBITS=1 -DWBITS=3 -DPBITS=3 -DSTART=6"	# period 8
IDENT="-DNCHUNK=2 -DCBITS=1 -DWBITS=2 -DPBITS=4 -DSTART=14"	# period 8
FOUR="-DNCHUNK=4 -DCBITS=2 -DWBITS=1 -DPBITS=3 -DSTART=6"	# period 8

# name | kind | what must fire (clean: nothing) | defines | what it is
#   kind: clean (assertions, end states, partial-order reduction),
#   nowait (adds the ltl claim; spin then searches without reduction)
runs=(
"mask|clean||$MASK -DMAXRES=5|2 chunks, tag mask wraps first (real 2-4 chunks), limit 2"
"roll|clean||$ROLL -DMAXRES=5|2 chunks, position wraps first (real >= 16 chunks)"
"ident|clean||$IDENT -DMAXRES=5|2 chunks, 2 tag bits, 16 positions, limit 6"
"four|clean||$FOUR -DMAXRES=5 -DSYNCS=0|4 chunks, both wrap together (real 8 chunks)"
"reloc|clean||$MASK -DMAXRES=6 -DSYNCS=0|6 reservations: a scraped chunk goes round again"
"batch|clean||$MASK -DMAXRES=4 -DBATCH=1|read_pos stored once per pass (older reader)"
"nowait|nowait||$MASK -DMAXRES=4 -DSOLO=0|the reader is always enabled (ltl claim)"
"reach-limit|clean|REACH_identity_limit|$MASK -DMAXRES=5 -DREACH|a stale claim succeeds at exactly LIMIT reservations"
"mut-zero-free|clean|P_not_behind_reader|$MASK -DMAXRES=5 -DMUT_ZERO_FREE|(a) all-zero Free word"
"mut-blind-inc|clean|P_no_protocol_error|$ROLL -DMAXRES=5 -DMUT_BLIND_INC|(b) reader stamps found tag + 1"
"mut-ack-early|clean|P_emitted_or_dropped|P_no_double_emit|$MASK -DMAXRES=6 -DSYNCS=0 -DMUT_ACK_EARLY|(c) acknowledge before copying the suffix"
"mut-short-id|clean|P_not_behind_reader|$IDENT -DMAXRES=5 -DMUT_SHORT_ID|(d) one tag bit less than documented"
"mut-wr-first|clean|P_sane_read_sample|$MASK -DMAXRES=5 -DMUT_WR_FIRST|(e) write_pos loaded before read_pos"
"mut-reader-waits|nowait|P_reader_never_waits|$MASK -DMAXRES=4 -DSOLO=0 -DMUT_READER_WAITS|(f) reader waits for a writer: the claim"
"mut-reader-waits-solo|clean|blocking sel in d_step|$MASK -DMAXRES=5 -DMUT_READER_WAITS|(f) the same: the frozen-writers pass"
"mut-reverse-emit|clean|P_writer_fifo|$MASK -DMAXRES=5 -DMUT_REVERSE_EMIT|(g) a chunk's fragments emitted backwards"
"mut-reloc-from-0|clean|P_no_double_emit|$MASK -DMAXRES=5 -DMUT_RELOC_FROM_0|(h) relocation copies the taken prefix too"
)
# The scenarios the mask run must reach (COVER(n) in chunk.pml).
mask_cover="1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22"

# "mut-ack-early" has two acceptable properties: split fields carefully.
field() {	# field RUN N: the Nth field, with | inside the "must fire" kept
	local IFS='|' a
	read -r -a a <<< "$1"
	local n=${#a[@]}
	case $2 in
	name) echo "${a[0]}" ;;
	kind) echo "${a[1]}" ;;
	fire) local f=("${a[@]:2:n-4}"); local IFS='|'; echo "${f[*]}" ;;
	defs) echo "${a[n-2]}" ;;
	what) echo "${a[n-1]}" ;;
	esac
}

selected() {
	local name=$1 p

	[ $# -gt 1 ] || return 0
	shift
	for p in "$@"; do
		# shellcheck disable=SC2254
		case $name in $p) return 0 ;; esac
	done
	return 1
}

if [ $list = 1 ]; then
	for r in "${runs[@]}"; do
		printf '%-22s %-6s %s\n' "$(field "$r" name)" "$(field "$r" kind)" \
			"$(field "$r" what)"
	done
	exit 0
fi

# run_one RUN: build and check one configuration in $out/NAME.
run_one() {
	local r=$1 name kind defs dir cfl t0

	name=$(field "$r" name)
	kind=$(field "$r" kind)
	defs=$(field "$r" defs)
	dir=$out/$name
	rm -rf "$dir"
	mkdir -p "$dir"
	cp "$here/chunk.pml" "$dir/"
	cfl="-O2 -w -DCOLLAPSE -DMEMLIM=${MODEL_MEMLIM:-6000}"
	[ "$kind" = nowait ] && defs="$defs -DNOWAIT" || cfl="$cfl -DSAFETY"
	echo "$defs" > "$dir/defines"
	t0=$(date +%s%N)
	(
		cd "$dir" &&
		spin $defs -a chunk.pml > spin.log 2>&1 &&
		gcc $cfl -o pan pan.c > gcc.log 2>&1 &&
		timeout "${MODEL_TIMEOUT:-900}" ./pan -m10000 -w26 > pan.log 2>&1
	)
	echo "rc=$? wall=$(( ($(date +%s%N) - t0) / 1000000000 ))" > "$dir/status"
}

# Start everything selected, at most $jobs at a time.
mkdir -p "$out"
sel=()
for r in "${runs[@]}"; do
	selected "$(field "$r" name)" "$@" && sel+=("$r")
done
[ ${#sel[@]} -gt 0 ] || { echo "model: no run matches $*" >&2; exit 2; }
echo "model: spin $(spin -V | awk '{print $3}'), ${#sel[@]} runs, $jobs at a time, logs in $out"
running=0
for r in "${sel[@]}"; do
	if [ $running -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
	run_one "$r" &
	running=$((running + 1))
done
wait

# Report, in table order.
fails=0
report() {	# report RUN
	local r=$1 name kind fire defs what dir log states depth secs mem
	local errs first verdict cover wall stats

	name=$(field "$r" name)
	kind=$(field "$r" kind)
	fire=$(field "$r" fire)
	defs=$(field "$r" defs)
	what=$(field "$r" what)
	dir=$out/$name
	log=$dir/pan.log
	wall=$(sed -n 's/.*wall=//p' "$dir/status" 2>/dev/null)
	if [ ! -s "$log" ]; then
		echo "  $name: FAILED to build or run (see $dir/spin.log, gcc.log)"
		fails=$((fails + 1))
		return
	fi
	states=$(awk '/states, stored/ {print $1; exit}' "$log")
	depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' "$log" | head -1)
	secs=$(sed -n 's/^pan: elapsed time \([0-9.e+]*\) seconds.*/\1/p' "$log" | head -1)
	mem=$(awk '/total actual memory usage/ {printf "%.0f", $1; exit}' "$log")
	errs=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$log" | head -1)
	first=$(grep -m1 '^pan:1:' "$log" | sed 's/ (at depth [0-9]*)//')
	cover=$(sed -n 's/^cover: *//p' "$log" | tail -1)
	printf -v stats '%10s states  depth %4s  %6s s (wall %3s s)  %5s MB' \
		"${states:-?}" "${depth:-?}" "${secs:-?}" "${wall:-?}" "${mem:-?}"
	if [ -z "$fire" ]; then
		if [ "$errs" = 0 ] && [ -n "$states" ] &&
		   ! grep -qE 'max search depth too small|MEMLIM|out of memory|aborted' "$log"; then
			verdict="ok, errors: 0"
		else
			verdict="FAILED: ${first:-incomplete search} (errors: ${errs:-?})"
			fails=$((fails + 1))
		fi
	else
		if [ -n "$errs" ] && [ "$errs" -gt 0 ] && echo "$first" | grep -qE "$fire"; then
			verdict="caught by $(echo "$first" | grep -oE "$fire" | head -1)"
		else
			verdict="NOT CAUGHT as expected ($fire): ${first:-errors: ${errs:-?}}"
			fails=$((fails + 1))
		fi
	fi
	printf '  %-22s %s\n  %-22s %s\n' "$name" "$what" "" "$stats  $verdict"
	if [ -n "$fire" ] && [ -n "$errs" ] && [ "$errs" -gt 0 ]; then
		printf '  %-22s trail: (cd %s && spin -t -p %s chunk.pml)\n' "" "$dir" "$defs$([ "$kind" = nowait ] && echo " -DNOWAIT")"
	fi
	if [ -z "$fire" ] && [ -n "$cover" ]; then
		printf '  %-22s scenarios reached: %s\n' "" "$cover"
	fi
	if [ "$name" = mask ] && [ "$verdict" = "ok, errors: 0" ]; then
		local n missing=""
		for n in $mask_cover; do
			case " $cover " in *" $n "*) ;; *) missing="$missing $n" ;; esac
		done
		if [ -n "$missing" ]; then
			printf '  %-22s FAILED: scenarios not reached:%s\n' "" "$missing"
			fails=$((fails + 1))
		fi
	fi
}
echo "model: results (clean runs must say errors: 0, mutations and probes must be caught)"
for r in "${sel[@]}"; do
	report "$r"
done
if [ $fails = 0 ]; then
	echo "model: all ${#sel[@]} runs as expected"
else
	echo "model: $fails FAILED"
fi
[ $fails = 0 ]
