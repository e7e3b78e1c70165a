#!/bin/sh
# Mixed releases do not compile: every header defines TB<NAME>_H_VERSION
# to tbbase.h's TBRING_VERSION, and checks that each header of ours it
# includes says the same.  Here, for each header and each one it
# includes: a copy of the tree where that one is of another release (its
# number changed), and one where it is of a release before the check (no
# number at all), must both fail to compile with the #error that names
# the two headers.  CC (default cc) compiles.
set -eu
cd "$(dirname "$0")/.."
cc=${CC:-cc}
headers="$*"
tmp=build/version-check
rm -rf $tmp
mkdir -p $tmp
status=0
n=0

guard() {
	echo "$1" | sed 's/\.h$//' | tr a-z A-Z
}

# Every header's own number is the release's.
for h in $headers; do
	g=$(guard $h)_H_VERSION
	printf '#include "%s"\n#if %s != TBRING_VERSION\n#error "%s: %s is not TBRING_VERSION"\n#endif\n' \
		$h $g $h $g | $cc -std=c99 -I. -x c -fsyntax-only - || status=1
done

# try HEADER DEP HOW SED: DEP rewritten by SED must make HEADER fail.
try() {
	rm -rf $tmp/tree
	mkdir -p $tmp/tree
	cp $headers $tmp/tree/
	sed -i "$4" $tmp/tree/$2
	n=$((n + 1))
	printf '#include "%s"\n' $1 >$tmp/tree/t.c
	if $cc -std=c99 -fsyntax-only $tmp/tree/t.c >$tmp/log 2>&1; then
		echo "version-check: $1 compiles with $2 $3" >&2
		status=1
	elif ! grep -q "$1 needs the $2 of its own release" $tmp/log; then
		echo "version-check: $1 with $2 $3 fails, but not saying so:" >&2
		head -n 5 $tmp/log >&2
		status=1
	fi
}

for h in $headers; do
	for d in $(sed -n 's/^#include "\(tb[a-z]*\.h\)"$/\1/p' $h); do
		g=$(guard $d)_H_VERSION
		if [ $d = tbbase.h ]; then
			try $h $d "of another release" \
				's/^#define TBRING_VERSION_PATCH.*/&\n#define TBRING_VERSION_NEXT 1/; s/^\(#define TBBASE_H_VERSION\).*/\1 (TBRING_VERSION + 1)/'
			try $h $d "of an older release" \
				"/^#define TBBASE_H_VERSION/d"
		else
			try $h $d "of another release" \
				"s/^\\(#define $g\\)[ 	]*[0-9]*/\\1 199/"
			try $h $d "of an older release" "/^#define $g/d"
		fi
	done
done
[ $status = 0 ] && echo "version-check: each header says its release; $n mixed copies refused, each naming the two headers"
exit $status
