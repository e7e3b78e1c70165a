#!/bin/sh
# The C blocks of README.md that come from a file in examples/ (the line
# before the block names it: "<!-- from examples/NAME.c -->") must appear
# in that file verbatim, so the README shows code that builds and runs.
set -eu
cd "$(dirname "$0")/.."
mkdir -p build
awk '
/^<!-- from examples\/[a-z_]+\.c -->$/ { file = $3; next }
file && /^```c$/ { inblock = 1; n++; out = "build/readme." n ".c";
	printf "" > out; print file > (out ".src"); next }
inblock && /^```$/ { inblock = 0; file = ""; next }
inblock { print >> out }
' README.md
status=0
for b in build/readme.*.c; do
	[ -f "$b" ] || continue
	src=$(cat "$b.src")
	# every line of the block, in order, in the file
	if ! awk 'NR == FNR { want[++n] = $0; next }
		  i < n && $0 == want[i + 1] { i++ }
		  END { exit i == n ? 0 : 1 }' "$b" "$src"; then
		echo "readme: a code block does not match $src" >&2
		status=1
	fi
	rm -f "$b" "$b.src"
done
[ $status = 0 ] && echo "readme: every code block matches its example"
exit $status
