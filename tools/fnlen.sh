#!/bin/sh
# usage: tools/fnlen.sh [-n N] FILE...
#        tools/fnlen.sh -l FILE...
#
# Lists every function longer than N lines (default 80) in the C files
# given, as "FILE:LINE: NAME: LENGTH lines", longest first, and exits 1 if
# there is any (2 on a usage error).  -l lists every function instead, as
# "FILE<tab>FIRST<tab>LAST<tab>NAME" (its signature's first line to its
# "}"), for the profiles that name the function of a source line
# (bench/instr.sh, examples/firmware/profile.sh).  Functions are found in
# kernel style:
# the signature starts at column 0 (a type, "static inline", a macro such
# as TB__BUF_HOT), the body's "{" and "}" stand alone at column 0.  The
# length counts the body from its "{" to its "}", both included; LINE is
# the line of the "{".
set -eu
max=80
list=0
if [ "${1-}" = -l ]; then
	list=1
	shift
elif [ "${1-}" = -n ]; then
	[ $# -ge 2 ] || { echo "usage: $0 [-n N] FILE..." >&2; exit 2; }
	max=$2
	shift 2
fi
case $max in
''|*[!0-9]*) echo "fnlen: -n wants a number, not '$max'" >&2; exit 2 ;;
esac
[ $# -ge 1 ] || { echo "usage: $0 [-n N] FILE..." >&2; exit 2; }
for f in "$@"; do
	[ -r "$f" ] || { echo "fnlen: cannot read $f" >&2; exit 2; }
done
awk -v max="$max" -v list="$list" '
FNR == 1 { body = 0; sig = "" }
# Outside a body: gather the signature from its first line at column 0.
!body && /^[A-Za-z_]/ { sig = $0; first = FNR; next }
!body && sig != "" && /^[ \t]/ { sig = sig " " $0; next }
!body && /^\{/ && sig != "" {
	name = sig
	sub(/\(.*/, "", name)		# up to the parameter list
	sub(/.*[^A-Za-z0-9_]/, "", name)	# the last identifier
	body = 1; start = FNR; next
}
!body { sig = ""; next }
body && /^\}/ && list {
	printf "%s\t%d\t%d\t%s\n", FILENAME, first, FNR, name
	body = 0; sig = ""
	next
}
body && /^\}/ {
	n = FNR - start + 1
	if (n > max)
		printf "%d\t%s:%d: %s: %d lines\n", n, FILENAME, start, name, n
	body = 0; sig = ""
}
' "$@" | if [ $list = 1 ]; then cat; else sort -k1,1nr | cut -f2-; fi | {
	found=0
	while IFS= read -r line; do
		echo "$line"
		found=1
	done
	[ "$found" = 0 ] || [ $list = 1 ]
}
