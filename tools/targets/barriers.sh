#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# barriers.sh OBJDUMP LABEL OBJ ENTRY:NEEDS... - counts the aarch64 memory
# ordering instructions reachable from each ENTRY (an extern function of
# OBJ, plus every function of OBJ it calls or tail-calls), prints them, and
# fails if an entry lacks one of the orderings NEEDS names (comma list):
#
#   acq_load   an acquire load: ldar/ldapr, or a 32-bit ldr followed
#              (within 4 instructions, straight line) by dmb ish/ishld/sy
#   rel_store  a release store: stlr, or dmb ish/sy followed (within 4) by
#              a 32-bit str
#   acq_rmw    an acquire RMW: ldaxr, cas(a|al), an outline-atomics call
#              __aarch64_*_acq or _acq_rel, or a dmb ish/ishld/sy within 6
#              steps (fall-through and branch targets) after an stxr
#   rel_rmw    a release RMW: stlxr, cas(l|al), an outline call _rel or
#              _acq_rel, or dmb ish/sy within 4 instructions before an ldxr
#
# These are the shapes ck (fence, then relaxed ldxr/stxr, then fence) and
# the __atomic builtins (acquire/release instructions, or -moutline-atomics
# calls whose names carry the order) give on aarch64.  Without them the
# orderings the protocol needs (docs/protocol.md section 6) are not in the code.
set -eu
OBJDUMP=$1 LABEL=$2 OBJ=$3
shift 3
$OBJDUMP -d --no-show-raw-insn "$OBJ" | awk -v label="$LABEL" -v obj="$OBJ" \
    -v entries="$*" '
function full(i) { return mn[i] == "dmb" && op[i] ~ /^(ish|sy|osh)$/ }
function acqf(i) { return mn[i] == "dmb" && op[i] ~ /^(ish|sy|osh|ishld|ld|oshld)$/ }
function target(i,   s) {	# a branch target inside this function, or -1
	s = op[i]
	if (!match(s, /[0-9a-f]+ <[^>]*>$/)) return -1
	s = substr(s, RSTART, RLENGTH)
	if (substr(s, index(s, "<") + 1) !~ ("^" fnq[i] "(\\+|>)")) return -1
	s = substr(s, 1, index(s, " ") - 1)
	return (f[i] SUBSEP s) in at ? at[f[i], s] : -1
}
# a dmb (acquire kind) reachable within k steps from instruction i
function reach(i, k,   t) {
	if (k < 0 || i > n || f[i] != f[i0]) return 0
	if (acqf(i)) return 1
	if (mn[i] == "ret" || mn[i] == "br") return 0
	t = target(i)
	if (mn[i] == "b") return t >= 0 ? reach(t, k - 1) : 0
	if (mn[i] ~ /^(b\.|cbn?z|tbn?z)/ && t >= 0 && reach(t, k - 1)) return 1
	return reach(i + 1, k - 1)
}
/^[0-9a-f]+ <.*>:$/ {
	cur = $2; sub(/^</, "", cur); sub(/>:$/, "", cur)
	fn[++nf] = cur; next
}
/^ +[0-9a-f]+:\t/ && cur != "" {
	n++; split($0, p, "\t")
	a = p[1]; gsub(/[ :]/, "", a)
	f[n] = cur; fnq[n] = cur; gsub(/\./, "\\.", fnq[n])
	mn[n] = p[2]; op[n] = p[3]; at[cur, a] = n
	# calls and tail calls to other functions of this object
	if ((mn[n] == "bl" || mn[n] == "b") && match(op[n], /<[^+>]*>$/))
		calls[cur, ++ncall[cur]] = substr(op[n], RSTART + 1, RLENGTH - 2)
}
END {
	for (i = 1; i <= n; i++) {
		g = f[i]; m = mn[i]
		if (m == "dmb") c[g, "dmb"]++
		if (m ~ /^ldapr|^ldar/) { c[g, "ldar"]++; c[g, "acq_load"]++ }
		if (m ~ /^stlr/) { c[g, "stlr"]++; c[g, "rel_store"]++ }
		if (m ~ /^ldaxr/) { c[g, "ldaxr"]++; c[g, "acq_rmw"]++ }
		if (m ~ /^stlxr/) { c[g, "stlxr"]++; c[g, "rel_rmw"]++ }
		if (m ~ /^(cas|swp|ldadd|ldclr|ldset|ldeor)(a|l|al)?[bh]?$/) {
			c[g, "lse"]++
			if (m ~ /^[a-z]+(a|al)[bh]?$/) c[g, "acq_rmw"]++
			if (m ~ /^[a-z]+(l|al)[bh]?$/) c[g, "rel_rmw"]++
		}
		if (m == "bl" && op[i] ~ /<__aarch64_(cas|swp|ldadd|ldclr|ldset|ldeor)[0-9]+_/) {
			o = op[i]; sub(/.*_/, "", o); sub(/>.*/, "", o)
			c[g, "outline"]++
			if (op[i] ~ /_acq>|_acq_rel>/) c[g, "acq_rmw"]++
			if (op[i] ~ /_rel>/) c[g, "rel_rmw"]++
		}
		# ck: relaxed access with an explicit fence beside it
		if (m == "ldr" && op[i] ~ /^w/)
			for (j = i + 1; j <= i + 4 && f[j] == g; j++) {
				if (mn[j] ~ /^(b|bl|ret|cbn?z|tbn?z|b\..*)$/) break
				if (acqf(j)) { c[g, "acq_load"]++; break }
			}
		if (m == "str" && op[i] ~ /^w/)
			for (j = i - 1; j >= i - 4 && f[j] == g; j--) {
				if (mn[j] ~ /^(b|bl|ret|cbn?z|tbn?z|b\..*)$/) break
				if (full(j)) { c[g, "rel_store"]++; break }
			}
		if (m == "ldxr")
			for (j = i - 1; j >= i - 4 && f[j] == g; j--) {
				if (mn[j] ~ /^(b|bl|ret|cbn?z|tbn?z|b\..*)$/) break
				if (full(j)) { c[g, "rel_rmw"]++; break }
			}
		if (m == "stxr") { i0 = i; if (reach(i + 1, 6)) c[g, "acq_rmw"]++ }
	}
	nk = split("dmb ldar stlr ldaxr stlxr lse outline", kind, " ")
	nq = split("acq_load rel_store acq_rmw rel_rmw", need, " ")
	printf "%-26s %-30s", "barriers " label, "entry (+ callees)"
	for (k = 1; k <= nk; k++) printf " %5s", kind[k]
	printf "  |"
	for (k = 1; k <= nq; k++) printf " %9s", need[k]
	printf "\n"
	ne = split(entries, e, " "); bad = 0
	for (x = 1; x <= ne; x++) {
		split(e[x], ep, ":"); name = ep[1]
		found = 0
		for (y = 1; y <= nf; y++) if (fn[y] == name) found = 1
		if (!found) { printf "barriers: %s: no function %s\n", obj, name; bad = 1; continue }
		# reachable set
		delete seen; seen[name] = 1; q[1] = name; qn = 1
		for (qi = 1; qi <= qn; qi++)
			for (y = 1; y <= ncall[q[qi]]; y++) {
				t = calls[q[qi], y]
				for (z = 1; z <= nf; z++) if (fn[z] == t && !(t in seen)) {
					seen[t] = 1; q[++qn] = t
				}
			}
		for (k = 1; k <= nk; k++) tot[kind[k]] = 0
		for (k = 1; k <= nq; k++) tot[need[k]] = 0
		for (s in seen) {
			for (k = 1; k <= nk; k++) tot[kind[k]] += c[s, kind[k]]
			for (k = 1; k <= nq; k++) tot[need[k]] += c[s, need[k]]
		}
		printf "%-26s %-30s", "barriers " label, name " (+" qn - 1 ")"
		for (k = 1; k <= nk; k++) printf " %5d", tot[kind[k]]
		printf "  |"
		for (k = 1; k <= nq; k++) printf " %9d", tot[need[k]]
		miss = ""
		nn = split(ep[2], req, ",")
		for (k = 1; k <= nn; k++) if (tot[req[k]] < 1) miss = miss " " req[k]
		if (miss != "") { printf "  MISSING:%s\n", miss; bad = 1 }
		else printf "  ok (needs %s)\n", ep[2]
	}
	exit bad
}'
