#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# size.sh OUTDIR - the .text table of make size.
#
# One translation unit per path (tools/targets/*.c): its extern functions
# are thin wrappers of the path's public calls and everything in the
# headers is static inline, so an unused helper is never emitted and the
# TU's code is exactly the code reachable from that path.  Each is built
# -Os -ffunction-sections (object only, nothing linked) and its .text is
# the sum of its .text* sections (size -A), wrappers included;
# OUTDIR/<target>-<row>.txt lists them function by function.
set -eu
out=$1
mkdir -p "$out"
W="-std=c99 -Wall -Wextra -Werror -I. -Os -ffunction-sections"
BI="-DTB_ATOMIC_BUILTINS=1 -DTB_NO_FUTEX"
FW="-mthumb -ffreestanding $BI"
RV="--specs=picolibc.specs -mabi=ilp32 -ffreestanding $BI"

# target label | compiler | size tool | flags (Cortex-M0 and RV32imc
# mask interrupts around their read-modify-writes: tbsync.h)
targets="x86-64/ck|gcc|size|
x86-64/builtins|gcc|size|$BI
cortex-m0|arm-none-eabi-gcc|arm-none-eabi-size|-mcpu=cortex-m0 $FW
cortex-m4|arm-none-eabi-gcc|arm-none-eabi-size|-mcpu=cortex-m4 $FW
cortex-m33|arm-none-eabi-gcc|arm-none-eabi-size|-mcpu=cortex-m33 $FW
rv32imac|riscv64-unknown-elf-gcc|riscv64-unknown-elf-size|-march=rv32imac_zicsr $RV
rv32imc|riscv64-unknown-elf-gcc|riscv64-unknown-elf-size|-march=rv32imc_zicsr $RV"
# row label | key | source | flags
rows="writer fast path: write_packet|wpacket|writer_fast.c|-DTBT_WRITER_ENTRY=1
writer span API: open + close|wspan|writer_fast.c|-DTBT_WRITER_ENTRY=2
reader drain|drain|reader_drain.c|
whole writer side (writer_side.c)|wside|writer_side.c|
whole reader side (reader_side.c)|rside|reader_side.c|
event layer: the macros|evmacro|writer_event.c|-DTBT_EVENT_ENTRY=1
event layer: every call|evall|writer_event.c|"

printf '%-36s' ".text bytes, -Os"
echo "$targets" | while IFS='|' read -r t cc sz fl; do printf ' %15s' "$t"; done
echo
echo "$rows" | while IFS='|' read -r label key src rfl; do
	printf '%-36s' "$label"
	echo "$targets" | while IFS='|' read -r t cc sz fl; do
		o="$out/$(echo "$t" | tr / -)-$key"
		# shellcheck disable=SC2086
		$cc $W $fl $rfl -c "tools/targets/$src" -o "$o.o"
		$sz -A "$o.o" | awk '$1 ~ /^\.text/' > "$o.txt"
		printf ' %15s' "$(awk '{ s += $2 } END { print s + 0 }' "$o.txt")"
	done
	echo
done
m4=$(awk '{ s += $2 } END { print s + 0 }' "$out/cortex-m4-wpacket.txt")
echo "x86-64/ck: the default build (ck, futex); x86-64/builtins and the bare-metal"
echo "columns: -DTB_ATOMIC_BUILTINS=1 -DTB_NO_FUTEX (Cortex-M: -mthumb -ffreestanding;"
echo "RV32: picolibc's headers); Cortex-M0 and RV32imc mask interrupts for each RMW."
if [ "$m4" -le 2048 ]; then v="met"; else v="NOT met"; fi
echo "goal: writer fast path <= 2048 bytes on Cortex-M4: $m4 ($v)"
echo "per function: $out/<target>-<row>.txt"
# A writer fast path over its budget fails the build (and CI): firmware
# vendors size their flash by it.
[ "$m4" -le 2048 ]
