#!/bin/sh
# The C blocks of README.md and docs/*.md show code that builds and runs:
# each comes from a file under examples/, named on the line before it.
# "<!-- from examples/PATH -->": every line of the block, in order, is a
# line of that file.  "<!-- all of examples/PATH -->": the block is the
# whole file from its first #define or #include on, a complete program.  A C block
# that is not taken from a file says so: "<!-- sketch -->" before it.
set -eu
cd "$(dirname "$0")/.."
mkdir -p build
docs=$(echo $(ls README.md docs/*.md 2>/dev/null))
rm -f build/readme.*.c build/readme.*.c.src
status=0
awk '
FNR == 1 { file = ""; marked = 0; inblock = 0 }
/^<!-- from examples\/[a-z0-9_\/]+\.[ch] -->$/ {
	file = $3; all = 0; marked = FNR; next }
/^<!-- all of examples\/[a-z0-9_\/]+\.[ch] -->$/ {
	file = $4; all = 1; marked = FNR; next }
/^<!-- sketch -->$/ { file = ""; marked = FNR; next }
!inblock && /^```c$/ {
	if (marked != FNR - 1) {
		printf "readme: %s:%d: a C block that names no example " \
		       "(<!-- from examples/... --> or <!-- sketch -->)\n",
		       FILENAME, FNR > "/dev/stderr"
		bad = 1
	}
	marked = 0
	if (!file)
		next
	inblock = 1; n++; out = "build/readme." n ".c"
	printf "" > out
	print file > (out ".src")
	print FILENAME ":" FNR > (out ".src")
	if (all)
		print "all" > (out ".src")
	close(out ".src")
	next
}
marked && marked != FNR { marked = 0; if (file) {
	printf "readme: %s:%d: %s names no C block after it\n",
	       FILENAME, FNR - 1, file > "/dev/stderr"; bad = 1; file = "" } }
inblock && /^```$/ { inblock = 0; file = ""; close(out); next }
inblock { print >> out }
END { exit bad }
' $docs || status=1
for b in build/readme.*.c; do
	[ -f "$b" ] || continue
	src=$(sed -n 1p "$b.src")
	at=$(sed -n 2p "$b.src")
	if [ ! -f "$src" ]; then
		echo "readme: $at: $src does not exist" >&2
		status=1
	elif [ "$(sed -n 3p "$b.src")" = all ]; then
		# the file from its first #define or #include to its end
		if ! sed -n '/^#\(define\|include\)/,$p' "$src" |
		    cmp -s - "$b"; then
			echo "readme: $at: the block is not the whole of $src" >&2
			status=1
		fi
	# every line of the block, in order, in the file
	elif ! awk 'NR == FNR { want[++n] = $0; next }
		  i < n && $0 == want[i + 1] { i++ }
		  END { if (i < n) print want[i + 1]; exit i == n ? 0 : 1 }' \
		  "$b" "$src" >"$b.miss"; then
		echo "readme: $at: the block does not match $src;" \
		     "first line not found in order: $(cat "$b.miss")" >&2
		status=1
	fi
	rm -f "$b" "$b.src" "$b.miss"
done
[ $status = 0 ] && echo "readme: every code block of $docs matches its example"

# The firmware writer's header list in README.md ("A firmware writer
# needs ..." up to "; a service") names every header the producer-side
# headers include, directly or not, so a copy vendored from it compiles.
producer="tbring.h tbevent.h"
list=$(awk '/A firmware writer needs/ { on = 1 }
	    on { printf "%s ", $0 } on && /; a service/ { exit }' README.md)
todo=$producer
closure=""
while [ -n "$todo" ]; do
	h=${todo%% *}
	[ "$h" = "$todo" ] && todo="" || todo=${todo#* }
	case " $closure " in *" $h "*) continue;; esac
	closure="$closure $h"
	todo="$todo $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$h" | tr '\n' ' ')"
	todo=$(echo $todo)
done
fw=0
[ -n "$list" ] || { echo "readme: no firmware header list" >&2; fw=1; }
for h in $closure; do
	case "$list" in
	*"\`$h\`"*) ;;
	*) echo "readme: the firmware header list omits $h ($producer include it)" >&2
	   fw=1;;
	esac
done
[ $fw = 0 ] && echo "readme: the firmware header list names every header of$closure" || status=1
exit $status
