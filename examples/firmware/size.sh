#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# size.sh - flash and RAM of the firmware example (the stream build of
# e2e.sh, in build/firmware/BOARD/), and the library's share, part by
# part (parts.c, -Os, the same flags and configuration).
set -eu
top=$(pwd)
out=$top/build/firmware
src=$top/examples/firmware
CC=arm-none-eabi-gcc
printf '%-56s %12s %12s\n' "bytes, -Os" "mps2-an385" "mps2-an505"
flags() {
	case $1 in
	an385) echo "-mcpu=cortex-m3" ;;
	an505) echo "-mcpu=cortex-m33 -mfloat-abi=soft" ;;
	esac
}
row() {
	printf '%-56s' "$1"
	shift
	for v in "$@"; do printf ' %12s' "$v"; done
	echo
}
text() { arm-none-eabi-size -A "$1" | awk '$1 ~ /^\.text/ { s += $2 } END { print s + 0 }'; }
for b in an385 an505; do
	[ -f "$out/$b/stream.elf" ] || { echo "size.sh: no $out/$b/stream.elf: run make firmware-e2e" >&2; exit 1; }
done
f() { arm-none-eabi-size "$out/$1/stream.elf" | awk 'NR == 2 { print $1 + $2 }'; }
r() { arm-none-eabi-size "$out/$1/stream.elf" | awk 'NR == 2 { print $2 + $3 }'; }
row "example: flash (.text + .data)" "$(f an385)" "$(f an505)"
row "example: RAM (.data + .bss, no stack)" "$(r an385)" "$(r an505)"
ram_lib() {
	t=0
	for s in fw_ring_mem main_w isr_w main_ev isr_ev rd tx main_scratch \
	    isr_scratch rd_scratch; do
		v=$(arm-none-eabi-nm -S "$out/$1/stream.elf" | awk -v s=$s '$4 == s { print $2 }')
		[ -n "$v" ] && t=$((t + 0x$v))
	done
	echo $t
}
row "  library RAM: ring 4608 + its structs" "$(ram_lib an385)" "$(ram_lib an505)"
for p in "1|writer (init, write, release)" "2|event layer (+ the writer it inlines)" \
    "3|on-target reader (drain)" "4|UART framing (tblink.h tx)"; do
	n=${p%%|*}
	label=${p#*|}
	set --
	for b in an385 an505; do
		o=$out/$b/part$n.o
		# shellcheck disable=SC2046
		$CC $(flags $b) -mthumb -Os -std=c99 -Wall -Wextra -Werror \
		    -ffreestanding -ffunction-sections \
		    -nostdinc -isystem "$($CC -print-file-name=include)" \
		    -I"$src/include" -I"$top" -DFW_PART=$n -c "$src/parts.c" -o "$o"
		set -- "$@" "$(text "$o")"
	done
	row "  library .text: $label" "$@"
done
