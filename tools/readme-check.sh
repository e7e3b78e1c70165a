#!/bin/sh
# The C blocks of README.md that come from a file in examples/ (the line
# before the block names it: "<!-- from examples/NAME.c -->") must appear
# in that file verbatim, so the README shows code that builds and runs.
# A block marked "<!-- all of examples/NAME.c -->" must be the whole file
# from its first #include on: a complete program.
set -eu
cd "$(dirname "$0")/.."
mkdir -p build
awk '
/^<!-- from examples\/[a-z_]+\.c -->$/ { file = $3; all = 0; next }
/^<!-- all of examples\/[a-z_]+\.c -->$/ { file = $4; all = 1; next }
file && /^```c$/ { inblock = 1; n++; out = "build/readme." n ".c";
	printf "" > out; print file > (out ".src");
	if (all) print "all" > (out ".src"); next }
inblock && /^```$/ { inblock = 0; file = ""; next }
inblock { print >> out }
' README.md
status=0
for b in build/readme.*.c; do
	[ -f "$b" ] || continue
	src=$(head -n 1 "$b.src")
	if [ "$(sed -n 2p "$b.src")" = all ]; then
		# the block is the file from its first #include to its end
		if ! sed -n '/^#include/,$p' "$src" | cmp -s - "$b"; then
			echo "readme: a code block is not the whole of $src" >&2
			status=1
		fi
	# every line of the block, in order, in the file
	elif ! awk 'NR == FNR { want[++n] = $0; next }
		  i < n && $0 == want[i + 1] { i++ }
		  END { exit i == n ? 0 : 1 }' "$b" "$src"; then
		echo "readme: a code block does not match $src" >&2
		status=1
	fi
	rm -f "$b" "$b.src"
done
[ $status = 0 ] && echo "readme: every code block matches its example"

# The firmware writer's header list ("A firmware writer needs ..." up to
# "; a service") names every header the producer-side headers include,
# directly or not, so a copy vendored from it compiles.
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
