# SPDX-License-Identifier: BSD-2-Clause
# rmw.sh - sourced by e2e.sh: rmw_check NAME EXPECT_LOSS runs the FW_RMW
# build NAME (rmw.h) and reads where its tick struck, instruction by
# instruction, against the disassembly of rmw_add() and rmw_cas().
#
# In each function the window is what lies between the read-modify-
# write's load and its store: an interrupt taken there (its return
# address on an instruction after the load, up to the store) ran its own
# add in between.  The load is the first one after the mask is taken
# (cpsid i; csrrc mstatus), else ldrex/ldaex/lr.w, else the last load
# before the first store; the store is the next store (strex, stlex,
# sc.w included).  A single amoadd.w has no window.
#   EXPECT_LOSS 0: nothing lost; where the build masks, no tick inside
#                  the masked stretch, and some taken right after it
#                  (they came due inside and waited)
#   EXPECT_LOSS 1: the mask compiled out: ticks inside the window, and
#                  increments lost (at most one per such tick)
# Sets rmw_say (one line for the log) and rmw_why (why it failed).

# rmw_fn ELF FUNC: "offset kind" per instruction of FUNC, kind one of
# mask unmask load store other
rmw_fn() {
	"${tp}objdump" -d --no-show-raw-insn "$1" | awk -v f="<$2>:" '
	function hex(s,  i, v) {
		v = 0
		for (i = 1; i <= length(s); i++)
			v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return v
	}
	$2 == f { on = 1; base = hex($1); next }
	on && NF == 0 { exit }
	on && $1 ~ /^[0-9a-f]+:$/ {
		a = hex(substr($1, 1, length($1) - 1)) - base
		op = $2; args = $3
		k = "other"
		if (op == "cpsid" || (op ~ /^csrrc/ && args ~ /mstatus/))
			k = "mask"
		else if ((op == "msr" && args ~ /PRIMASK/) ||
			 (op ~ /^csrs/ && args ~ /mstatus/))
			k = "unmask"
		else if (op ~ /^(ldrex|ldaex|lr\.w)/)
			k = "xload"
		else if (op ~ /^(strex|stlex|sc\.w)/)
			k = "store"
		else if (op ~ /^amo/)
			k = "amo"
		else if (op ~ /^(ldr|lw|c\.lw)$/ || op ~ /^ldr\./)
			k = "load"
		else if (op ~ /^(str|sw|c\.sw)$/ || op ~ /^str\./)
			k = "store"
		print a, k
	}'
}

# rmw_count FUNC HIST: ticks inside the window, inside the masked
# stretch and right after it: "window masked after"
rmw_count() {
	rmw_fn "$d/$rmw_name.elf" "$1" | awk -v hist="$2" '
	BEGIN {
		n = split(hist, h, ",")
		for (i = 1; i <= n; i++) {
			split(h[i], kv, ":")
			hit[kv[1]] = kv[2]
		}
	}
	{ off[NR] = $1; kind[NR] = $2 }
	END {
		for (i = 1; i <= NR; i++) {
			if (kind[i] == "mask" && !m0)
				m0 = i
			if (kind[i] == "unmask" && m0 && !m1)
				m1 = i
			if (kind[i] == "xload" && !ld)
				ld = i
			if (kind[i] == "store" && !st)
				st = i
		}
		if (m0) {		# the first load after the mask
			for (i = m0; i <= NR && !ml; i++)
				if (kind[i] == "load")
					ml = i
			ld = ml
			st = 0
			for (i = ld; i <= NR && !st; i++)
				if (kind[i] == "store")
					st = i
		} else if (!ld && st) {	# the last load before the store
			for (i = st - 1; i >= 1 && !ld; i--)
				if (kind[i] == "load")
					ld = i
		}
		w = 0
		if (ld && st)
			for (i = ld + 1; i <= st; i++)
				w += hit[off[i]]
		mk = 0
		if (m0 && m1)
			for (i = m0 + 1; i <= m1; i++)
				mk += hit[off[i]]
		after = m1 && m1 < NR ? hit[off[m1 + 1]] + 0 : 0
		print w + 0, mk + 0, after
	}'
}

rmw_check() {
	rmw_name=$1
	rmw_expect=$2
	rmw_why=""
	run "$1" || true
	line=$(grep '^fw: .* rmw ' "$d/$1.out" || true)
	[ -n "$line" ] || { rmw_why="no report: $(cat "$d/$1.out")"; return 1; }
	lost=$(val "$1" lost)
	ticks=$(val "$1" ticks)
	hadd=$(echo "$line" | sed -n 's/.* hist_add=\([0-9:,]*\).*/\1/p')
	hcas=$(echo "$line" | sed -n 's/.* hist_cas=\([0-9:,]*\).*/\1/p')
	# shellcheck disable=SC2046
	set -- $(rmw_count rmw_add "$hadd") $(rmw_count rmw_cas "$hcas")
	win=$(($1 + $4))
	masked=$(($2 + $5))
	after=$(($3 + $6))
	rmw_say="$ticks ticks, $win between a load and its store (add $1, cas $4)"
	[ "$mask" = 1 ] && [ "$rmw_expect" = 0 ] &&
	    rmw_say="$rmw_say, $masked inside the masked stretch, $after taken right at its end"
	rmw_say="$rmw_say; $lost increments lost"
	if [ "$rmw_expect" = 1 ]; then
		[ "$lost" -gt 0 ] || rmw_why="no increment lost without the mask"
		[ "$win" -gt 0 ] || rmw_why="no tick between a load and its store"
		[ "$lost" -le "$win" ] ||
		    rmw_why="$lost lost, more than the $win ticks inside a window"
	else
		[ "$lost" = 0 ] || rmw_why="$lost increments lost"
		if [ "$mask" = 1 ]; then
			[ "$masked" = 0 ] ||
			    rmw_why="$masked ticks inside the masked stretch"
			[ "$after" -gt 0 ] ||
			    rmw_why="no tick held off to the end of the mask"
		fi
	fi
	[ -z "$rmw_why" ]
}
