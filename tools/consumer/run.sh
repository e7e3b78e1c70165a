#!/bin/sh
# Builds tools/consumer/main.c against tbring the three ways a user gets
# it, and runs each program:
#   1. make install, then pkg-config --cflags tbring (which must not hand
#      out ck's architecture-specific flags or -lck);
#   2. make install, then CMake's find_package(tbring) and tbring::tbring;
#   3. the source tree as a meson subproject (subprojects/tbring).
# Usage: tools/consumer/run.sh [WORKDIR]    (default build/consumer)
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
src=$top/tools/consumer
work=${1:-$top/build/consumer}
rm -rf "$work"
mkdir -p "$work"
fail() { echo "consumer: $*" >&2; exit 1; }
quiet() { log=$1; shift; "$@" >"$log" 2>&1 || { cat "$log"; fail "$* failed"; }; }

make -C "$top" -s install PREFIX=/opt/tbring DESTDIR="$work/stage" >/dev/null
prefix=$work/stage/opt/tbring
[ -f "$prefix/include/tbring/tbring.h" ] || fail "headers not under include/tbring/"

# The library is installed, the tooling is not: the headers installed are
# the Makefile's HEADERS, meson.build installs the same, and each compiles
# with the install directory alone on the include path (nothing reaches
# back into the tree).
sorted() { tr ' ' '\n' | sed '/^$/d' | sort | tr '\n' ' '; }
# shellcheck disable=SC2016
lib=$(make -s -C "$top" --no-print-directory \
	--eval 'tb-print-headers: ; @echo $(HEADERS)' tb-print-headers | sorted)
inst=$(cd "$prefix/include/tbring" && echo *.h | sorted)
[ "$inst" = "$lib" ] || fail "installed: $inst; HEADERS: $lib"
mes=$(sed -n '/^tbring_headers/,/)/p' "$top/meson.build" |
	grep -o "'[a-z_]*\.h'" | tr -d "'" | tr '\n' ' ' | sorted)
[ "$mes" = "$lib" ] || fail "meson.build installs: $mes; HEADERS: $lib"
for h in $inst; do
	printf '#include <%s>\n' "$h" | ${CC:-cc} -std=c99 -Wall -Wextra \
		-Werror -I"$prefix/include/tbring" -x c -fsyntax-only - ||
		fail "installed $h does not compile alone"
done
echo "install:    the $(echo "$inst" | wc -w) library headers, no tooling; meson.build's list the same"

# 1. pkg-config
pc="$prefix/lib/pkgconfig"
flags=$(PKG_CONFIG_PATH=$pc pkg-config --define-prefix --cflags --libs tbring)
case "$flags" in
*-D__*|*-lck*) fail "pkg-config hands out ck's flags: $flags" ;;
esac
[ "$(PKG_CONFIG_PATH=$pc pkg-config --modversion tbring)" = \
  "$(sed -n 's/^#define TBRING_VERSION_STRING[^"]*"\(.*\)"/\1/p' "$top/tbbase.h")" ] ||
	fail "tbring.pc has another version than tbbase.h"
# shellcheck disable=SC2086
${CC:-cc} -std=c99 -Wall -Wextra -Werror $flags "$src/main.c" -o "$work/pkgconfig"
printf 'pkg-config: '; "$work/pkgconfig"

# 2. CMake
quiet "$work/cmake.log" cmake -S "$src" -B "$work/cmake" \
	-DCMAKE_PREFIX_PATH="$prefix"
quiet "$work/cmake-build.log" cmake --build "$work/cmake"
printf 'cmake:      '; "$work/cmake/consumer"
# Which requests the installed version file accepts: the same major and
# not newer; before 1.0 the same minor too (0.1 is not 0.2's).
ver=$(sed -n 's/^#define TBRING_VERSION_STRING[^"]*"\(.*\)"/\1/p' "$top/tbbase.h")
maj=${ver%%.*}; rest=${ver#*.}; min=${rest%%.*}
compat() {
	cmake -DPACKAGE_FIND_VERSION="$1" -DPACKAGE_FIND_VERSION_MAJOR="${1%%.*}" \
		-DPACKAGE_FIND_VERSION_MINOR="$(echo "$1" | cut -d. -f2)" \
		-DF="$prefix/lib/cmake/tbring/tbringConfigVersion.cmake" \
		-P "$src/compat.cmake"
}
for req in "$maj.$min" "$ver" "$maj.$min.0"; do
	[ "$(compat "$req")" = TRUE ] || fail "find_package(tbring $req) refuses $ver"
done
for req in "$maj.$((min + 1))" "$((maj + 1)).0" \
    $([ "$maj" = 0 ] && [ "$min" -gt 0 ] && echo "0.$((min - 1))"); do
	[ "$(compat "$req")" = FALSE ] || fail "find_package(tbring $req) accepts $ver"
done
echo "cmake:      tbringConfigVersion.cmake accepts $maj.$min and $ver, refuses the rest"

# 3. meson, the source tree as a subproject
if command -v meson >/dev/null 2>&1 && command -v ninja >/dev/null 2>&1; then
	mkdir -p "$work/meson-src/subprojects"
	cp "$src/main.c" "$src/meson.build" "$work/meson-src/"
	ln -s "$top" "$work/meson-src/subprojects/tbring"
	quiet "$work/meson.log" meson setup "$work/meson" "$work/meson-src" \
		--force-fallback-for=tbring
	quiet "$work/meson-build.log" ninja -C "$work/meson"
	printf 'meson:      '; "$work/meson/consumer"
	grep -q "version: '$(sed -n 's/^#define TBRING_VERSION_STRING[^"]*"\(.*\)"/\1/p' "$top/tbbase.h")'" \
		"$top/meson.build" || fail "meson.build has another version than tbbase.h"
else
	fail "meson and ninja are needed (apt-get install meson)"
fi
echo "consumer: pkg-config, CMake and meson builds all work"
