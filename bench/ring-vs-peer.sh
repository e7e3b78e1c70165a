#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# bench/ring-vs-peer.sh [ROW...] - bench_ring against Perfetto's prototype
# of the same protocol, interleaved: for every row, PAIRS times ours then
# theirs (each one invocation of its bench: the median of TB_BENCH_RUNS
# runs), then the medians of those pairs and their spreads, side by side.
# Rows are bench_ring's names (fnmatch(3) globs, as the benches take them);
# without any, every stall and drop row the prototype also has.
#
# Environment:
#   PAIRS=5        pairs per row (the issue asks for at least 5)
#   RING=build/bench_ring            ours (make build/bench_ring)
#   PEER=build/peer/proto_ring_bench theirs (bench/peer-ring.sh build/peer)
#   BASE=          a third side, "before": bench_ring built against an
#                  older tbring.h (the same bench/ring.c, so the same
#                  rows and work), run after the other two in every pair
#   QUIET=3        before every pair, wait until the 1-minute load average
#                  is below this (0: do not wait); the load is printed
#   QUIET_WAIT=5400  give up waiting after this many seconds (the row is
#                  then measured anyway, and its load says so)
#   QUIET_CPU=0    before every pair, also wait until other processes
#                  take less than this per cent of one CPU over a 2 s
#                  sample (the load average lags by a minute and counts
#                  the benches' own threads; this does not)
#   QUIET_BUDGET=0 with QUIET_CPU, wait at most this many seconds in all
#                  the pairs together (0: QUIET_WAIT per pair only)
#   BOOST=1        run every bench in a session of its own at the top
#                  CFS priority (its own autogroup at nice -20: needs
#                  root), so that other work on a shared machine takes
#                  a few per cent of the CPUs from it, not half
#   TB_BENCH_RUNS, TB_BENCH_SECONDS, TB_BENCH_WARMUP: passed to both.
#
# Columns, per side: delivered Mpkt/s (median of the pairs' medians, and
# (max - min) / median of them, in per cent); Mpkt per CPU-second (each
# pair's Mpkt/s / (cpu% / 100), the process's CPU time over the run, then
# the median); cpu%; futex calls per chunk; loss%; the CPU of the writer
# threads together and of the reader thread per delivered packet, in ns
# (w-ns, r-ns: CLOCK_THREAD_CPUTIME_ID); then ours / theirs of the two
# medians (and before / theirs with BASE), the 1-minute load average
# seen before the pairs (min-max), and "others": the CPU that processes
# other than the bench took while it ran, in per cent of one CPU (the
# machine's busy time from /proc/stat less the bench's own user and
# system time, over its wall time; the median of all the invocations).
# Per CPU-second is the figure that counts on a machine whose cores the
# application needs: a side that spins gets more CPU, not more done.
#
# The raw lines of every invocation go to ring-vs-peer.log (LOG=...).
set -e
RING=${RING:-build/bench_ring}
PEER=${PEER:-build/peer/proto_ring_bench}
PAIRS=${PAIRS:-5}
QUIET=${QUIET:-3}
QUIET_WAIT=${QUIET_WAIT:-5400}
QUIET_CPU=${QUIET_CPU:-0}
QUIET_BUDGET=${QUIET_BUDGET:-0}
waited_all=0
LOG=${LOG:-ring-vs-peer.log}
for b in "$RING" "$PEER" ${BASE:+"$BASE"}; do
	[ -x "$b" ] || {
		echo "ring-vs-peer: no $b (make build/bench_ring;" \
		     "bench/peer-ring.sh build/peer)" >&2
		exit 2
	}
done
if [ $# -eq 0 ]; then
	set -- $("$PEER" -l)
fi
load1() { cut -d' ' -f1 /proc/loadavg; }
# The machine's busy time in clock ticks: user, nice, system, irq,
# softirq and steal of /proc/stat's first line.
busy() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9; exit }' \
	/proc/stat; }
HZ=$(getconf CLK_TCK)

# Waits (up to QUIET_WAIT s) for a 1-minute load below QUIET, and for
# other processes' CPU below QUIET_CPU % (within QUIET_BUDGET in all).
wait_quiet() {
	waited=0
	while [ "$QUIET" != 0 ] &&
	      awk -v l="$(load1)" -v q="$QUIET" 'BEGIN { exit !(l >= q) }'; do
		[ "$waited" -ge "$QUIET_WAIT" ] && return 0
		sleep 30
		waited=$((waited + 30))
	done
	while [ "$QUIET_CPU" != 0 ]; do
		b0=$(busy)
		sleep 2
		b1=$(busy)
		[ $(((b1 - b0) * 100 / (2 * HZ))) -lt "$QUIET_CPU" ] &&
			return 0
		[ "$waited" -ge "$QUIET_WAIT" ] && return 0
		[ "$QUIET_BUDGET" != 0 ] &&
			[ "$waited_all" -ge "$QUIET_BUDGET" ] && return 0
		sleep 3
		waited=$((waited + 5))
		waited_all=$((waited_all + 5))
	done
}
TIMES=$(mktemp)

# One invocation: "mpkt cpu fx loss wns rns others" of row $2 from bench
# $1; others: what other processes took meanwhile, % of one CPU.
one() {
	b0=$(busy)
	if [ "${BOOST:-0}" = 1 ]; then
		out=$(/usr/bin/time -f '%e %U %S' -o "$TIMES" setsid sh -c \
			'echo -20 > /proc/self/autogroup &&
			exec nice -n -20 "$@"' sh "$1" "$2" 2>&1) || true
	else
		out=$(/usr/bin/time -f '%e %U %S' -o "$TIMES" \
			"$1" "$2" 2>&1) || true
	fi
	b1=$(busy)
	printf '%s\n' "$out" >> "$LOG"
	printf '%s\n' "$out" | awk -v row="$2" -v b="$((b1 - b0))" \
		-v hz="$HZ" -v t="$(tail -1 "$TIMES")" '
		$1 == row && $12 == "|" { m = $2; fx = $9; cpu = $11; loss = $6 }
		$1 == row && /CPU ns per packet/ {
			s = $0; sub(/.*CPU ns per packet: writers /, "", s)
			split(s, a, /[ ;]+/); w = a[1]; r = a[3]
		}
		END {
			split(t, tt, " ")
			o = tt[1] > 0 ? 100 * (b / hz - tt[2] - tt[3]) / tt[1] : 0
			if (o < 0) o = 0
			if (m == "") { print "fail"; exit }
			printf "%s %s %s %s %s %s %.0f\n", m, cpu, fx, loss,
			       w == "" ? "-" : w, r == "" ? "-" : r, o
		}'
}

NSIDES=2
[ -n "$BASE" ] && NSIDES=3
printf '%s\n' "ring-vs-peer: $PAIRS pairs per row, ours then theirs${BASE:+ then before};" \
	"each figure the median of the pairs (spread = (max - min) / median)"
side_head() {
	printf ' %6s %5s %6s %4s %5s %5s %5s %5s |' \
		"Mpkt/s" "spr" "/cpu-s" "cpu%" "fx/ch" "loss%" "w-ns" "r-ns"
}
printf '%-20s | %-42s | %-42s |' "" "tbring" "prototype"
[ -n "$BASE" ] && printf ' %-42s |' "before"
printf ' %-11s |' "ours/theirs"
[ -n "$BASE" ] && printf ' %-11s |' "before/thrs"
printf ' %s\n' "load, others"
printf '%-20s |' "row"
side_head
side_head
[ -n "$BASE" ] && side_head
printf ' %5s %5s |' "pkt/s" "/cpu"
[ -n "$BASE" ] && printf ' %5s %5s |' "pkt/s" "/cpu"
printf ' %s\n' "1-min   cpu%"
for row in "$@"; do
	tmp=$(mktemp)
	i=0
	while [ "$i" -lt "$PAIRS" ]; do
		wait_quiet
		l=$(load1)
		echo "ours $(one "$RING" "$row") $l" >> "$tmp"
		echo "theirs $(one "$PEER" "$row") $l" >> "$tmp"
		[ -n "$BASE" ] && echo "before $(one "$BASE" "$row") $l" >> "$tmp"
		i=$((i + 1))
	done
	awk -v row="$row" -v nsides="$NSIDES" '
	function med(v, n,   i, j, t, a) {	# lower middle
		for (i = 1; i <= n; i++) a[i] = v[i]
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
				t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
			}
		return a[int((n + 1) / 2)]
	}
	function spr(v, n,   i, lo, hi, m) {
		lo = hi = v[1]
		for (i = 2; i <= n; i++) {
			if (v[i] < lo) lo = v[i]
			if (v[i] > hi) hi = v[i]
		}
		m = med(v, n)
		return m > 0 ? 100 * (hi - lo) / m : 0
	}
	{ l = $NF; if (lo == "" || l < lo) lo = l; if (hi == "" || l > hi) hi = l }
	$2 == "fail" { bad[$1]++; next }
	{
		k = ++n[$1]
		mp[$1, k] = $2; cpu[$1, k] = $3; fx[$1, k] = $4
		loss[$1, k] = $5; pc[$1, k] = $3 > 0 ? $2 / ($3 / 100) : 0
		wn[$1, k] = $6; rn[$1, k] = $7
		oth[++no] = $8
	}
	END {
		split("ours theirs before", name, " ")
		printf "%-20s |", row
		for (s = 1; s <= nsides; s++) {
			side = name[s]
			c = n[side]
			if (!c) { printf " %-42s |", "failed"; continue }
			for (i = 1; i <= c; i++) {
				a[i] = mp[side, i]; b[i] = pc[side, i]
				d[i] = cpu[side, i]; e[i] = fx[side, i]
				f[i] = loss[side, i]; g[i] = wn[side, i]
				h[i] = rn[side, i]
			}
			M[s] = med(a, c); P[s] = med(b, c)
			printf " %6.2f %4.0f%% %6.2f %4.0f %5.3f %5.2f %5.0f %5.0f |",
			       M[s], spr(a, c), P[s], med(d, c), med(e, c),
			       med(f, c), med(g, c), med(h, c)
			delete a; delete b; delete d; delete e; delete f
			delete g; delete h
		}
		for (s = 1; s <= nsides; s += 2)
			if (n[name[s]] && n["theirs"] && M[2] > 0 && P[2] > 0)
				printf " %5.2f %5.2f |", M[s] / M[2], P[s] / P[2]
			else
				printf " %5s %5s |", "-", "-"
		printf " %s-%s %4.0f", lo, hi, no ? med(oth, no) : 0
		if (bad["ours"] || bad["theirs"] || bad["before"])
			printf "  FAILED runs: ours %d theirs %d before %d",
			       bad["ours"], bad["theirs"], bad["before"]
		printf "\n"
	}' "$tmp"
	rm -f "$tmp"
done
rm -f "$TIMES"
