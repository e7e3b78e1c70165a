#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# size.sh [--update] - the table of docs/firmware.md, one column per core,
# from what make firmware-e2e built and ran (build/firmware/BOARD/):
#   - flash and RAM of the example (its stream build), and the library's
#     share: its RAM (the ring and the structs around it), and the .text
#     of its parts (parts.c, -Os, the same flags and configuration);
#   - instructions per event, from the bench build under -icount shift=0
#     (bench.h);
#   - the longest stretch the library runs with interrupts masked, where
#     it masks them (tbsync.h, TB_ATOMIC_MASK): the most instructions
#     between a mask and its unmask in any function of the stream build.
# The table goes to build/firmware/table.md and standard output; then it
# must equal the one in docs/firmware.md, between the two marker lines,
# or this fails (--update writes it there instead).
set -eu
top=$(pwd)
. "$top/examples/firmware/boards/boards.sh"
out=$top/build/firmware
doc=$top/docs/firmware.md
begin='<!-- table: made by make firmware-e2e (examples/firmware/size.sh) -->'
end='<!-- end of the table -->'
boards=$FW_BOARDS

for b in $boards; do
	[ -f "$out/$b/stream.elf" ] && [ -f "$out/$b/bench.out" ] || {
		echo "size.sh: no $out/$b/stream.elf or bench.out: run make firmware-e2e" >&2
		exit 1
	}
done

# row LABEL CMD: one line of the table, CMD BOARD for each column
row() {
	label=$1
	shift
	line="| $label |"
	for b in $boards; do
		board_cfg "$b"
		line="$line $("$@" "$b") |"
	done
	echo "$line"
}

elf() { echo "$out/$1/stream.elf"; }
machine() { echo "$qemu" | sed 's/.* -M \([^ ]*\).*/\1/'; }
flash_ram() {
	"${tp}size" "$(elf "$1")" | awk 'NR == 2 { print $1 + $2 " / " $2 + $3 }'
}
ram_lib() {
	"${tp}nm" -S "$(elf "$1")" | awk '
	$4 ~ /^(fw_ring_mem|main_w|isr_w|main_ev|isr_ev|rd|tx|main_scratch|isr_scratch|rd_scratch)$/ {
		n = 0
		for (i = 1; i <= length($2); i++)
			n = n * 16 + index("0123456789abcdef", substr($2, i, 1)) - 1
		s += n
	}
	END { print s }'
}
text() {
	"${tp}size" -A "$1" | awk '$1 ~ /^\.text/ { s += $2 } END { print s + 0 }'
}
# parts N BOARD: .text of parts.c's part N for BOARD
part() {
	o=$out/$2/part$1.o
	# shellcheck disable=SC2086
	$cc $cpu -Os -std=c99 -Wall -Wextra -Werror -ffreestanding \
	    -ffunction-sections -nostdinc -isystem "$($cc -print-file-name=include)" \
	    -I"$fw_boards/include" -I"$fw_boards" -I"$fw_src" -I"$top" \
	    "-D$def" -DFW_PART="$1" -c "$fw_src/parts.c" -o "$o"
	text "$o"
}
parts() {
	echo "$(part 1 "$1") / $(part 2 "$1") / $(part 3 "$1") / $(part 4 "$1")"
}
# bench BOARD KEY: the bench's figure, whole instructions
bench() {
	sed -n "s/^fw: bench [^ ]* $2: \([0-9]*\)\.[0-9] instructions$/\1/p" \
	    "$out/$1/bench.out"
}
pair() {
	echo "$(bench "$1" "$2") ($(bench "$1" "$2, 1 annotation"))"
}
slice() { pair "$1" "slice begin+end (the pair)"; }
instant() { pair "$1" "instant"; }
counter() { bench "$1" "counter"; }
packet() { bench "$1" "ring writer alone: a 16-byte packet"; }
# masked BOARD: the longest run of instructions between a mask (cpsid i;
# csrrc(i) rd, mstatus) and its unmask (msr PRIMASK; csrs mstatus) in
# one function, or "none" where the build never masks; the board's own
# functions (board_*, cm_*, rv_*: its clock) are not the library's
masked() {
	"${tp}objdump" -d --no-show-raw-insn "$(elf "$1")" | awk '
	/^[0-9a-f]+ <.*>:$/ { on = 0; lib = $2 !~ /^<(board|cm|rv)_/ }
	!lib { next }
	$2 == "cpsid" || ($2 ~ /^csrrci?$/ && $3 ~ /^[a-z0-9]+,mstatus,/) {
		on = 1; n = 0; next
	}
	on && (($2 == "msr" && $3 ~ /PRIMASK/) ||
	       ($2 == "csrs" && $3 ~ /^mstatus,/)) {
		if (n > max)
			max = n
		on = 0
		next
	}
	on && $1 ~ /^[0-9a-f]+:$/ { n++ }
	END { print max ? max : "none" }'
}

table() {
	line="| bytes, -Os; instructions, QEMU -icount |"
	sep="|---|"
	for b in $boards; do
		board_cfg "$b"
		line="$line $core |"
		sep="$sep---|"
	done
	echo "$line"
	echo "$sep"
	row "board (QEMU -M)" machine
	row "example: flash / RAM (no stack)" flash_ram
	row "library RAM: ring, writers, reader, scratch" ram_lib
	row "library .text: writer / event layer (with the writer) / reader / framing" parts
	row "slice begin + end, the pair (with one annotation)" slice
	row "instant (with one annotation)" instant
	row "counter" counter
	row "the ring writer alone: one 16-byte packet" packet
	row "longest masked stretch (instructions)" masked
}

table > "$out/table.md"
cat "$out/table.md"
# the block between the markers, as docs/firmware.md has it now
documented() {
	awk -v b="$begin" -v e="$end" '$0 == e { on = 0 } on { print } $0 == b { on = 1 }' "$doc"
}
if [ "${1:-}" = --update ]; then
	awk -v b="$begin" -v e="$end" -v t="$out/table.md" '
	$0 == b { print; while ((getline l < t) > 0) print l; skip = 1; next }
	$0 == e { skip = 0 }
	!skip' "$doc" > "$out/firmware.md.new"
	grep -qxF "$begin" "$doc" || { echo "size.sh: no marker line in $doc: $begin" >&2; exit 1; }
	mv "$out/firmware.md.new" "$doc"
	echo "size.sh: the table of $doc updated"
elif ! documented | cmp -s - "$out/table.md"; then
	documented | diff - "$out/table.md" || true
	echo "size.sh: the table in $doc is not what make firmware-e2e measured (above: - the docs, + now); make firmware-docs writes it there" >&2
	exit 1
else
	echo "size.sh: the table in $doc is what make firmware-e2e measured"
fi
