# SPDX-License-Identifier: BSD-2-Clause
# boards.sh - sourced by the firmware scripts: the boards the examples
# run on, and how to build for each and run it under QEMU.
#
#   FW_BOARDS          every board, in the order of the tables
#   board_cfg BOARD    sets, for BOARD:
#     core     the core, as the tables name it
#     cc       the compiler; tp its binutils' prefix (${tp}nm, ...)
#     cpu      its core flags
#     srcs     the board's sources (boards/), startup included
#     ld       its linker script (boards/, found with -L)
#     libgcc   how to link libgcc (-lgcc, or a path where the multilib
#              cannot be found from the flags)
#     qemu     the QEMU command, machine included
#     mask     1 where tbsync.h masks interrupts for its RMWs
#     nest     1 where the nested-interrupt build fits (RAM)
#     slow     1 where the 4 kHz tick's events outrun the UART's drain
#              on an 8 x 256 B ring (the headroom check of e2e.sh)
#   board_build BOARD OUT.elf FLAGS... SOURCES...: one program, no C
#              library, the board's startup, common.c and mem.c linked in
# Call from the repository's root.
FW_BOARDS="microbit an385 an386 an500 an505 rv32imac rv32imc"
fw_src=$(pwd)/examples/firmware
fw_boards=$fw_src/boards

board_cfg() {
	mask=0
	nest=1
	slow=0
	case $1 in
	microbit|an385|an386|an500|an505)
		cc=arm-none-eabi-gcc
		tp=arm-none-eabi-
		libgcc=-lgcc
		srcs="cortex_m.c mps2.c"
		ld=$1.ld
		qemu="qemu-system-arm -M mps2-$1"
		;;
	rv32imac|rv32imc)
		cc=riscv64-unknown-elf-gcc
		tp=riscv64-unknown-elf-
		cpu="-march=${1}_zicsr -mabi=ilp32"
		core="RV32${1#rv32}"
		# gcc finds no multilib for -march=..._zicsr: name it
		# without (rv32imc uses rv32im's)
		libgcc=$($cc "-march=$1" -mabi=ilp32 -print-libgcc-file-name)
		srcs="riscv_start.S riscv.c virt.c"
		ld=virt.ld
		qemu="qemu-system-riscv32 -M virt -bios none -rtc clock=vm"
		;;
	*)
		echo "boards.sh: unknown board $1 (boards: $FW_BOARDS)" >&2
		return 1
		;;
	esac
	case $1 in
	microbit)
		core=Cortex-M0
		cpu="-mcpu=cortex-m0 -mthumb"
		srcs="cortex_m.c nrf51.c"
		qemu="qemu-system-arm -M microbit"
		mask=1
		nest=0		# 16 KiB: no room for a third writer
		slow=1
		;;
	an385)	core=Cortex-M3; cpu="-mcpu=cortex-m3 -mthumb" ;;
	an386)	core=Cortex-M4F
		cpu="-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16" ;;
	an500)	core=Cortex-M7; cpu="-mcpu=cortex-m7 -mthumb -mfloat-abi=soft" ;;
	an505)	core=Cortex-M33; cpu="-mcpu=cortex-m33 -mthumb -mfloat-abi=soft" ;;
	rv32imc) mask=1 ;;
	esac
	def=BOARD_$(echo "$1" | sed 's/^rv32.*/virt/' | tr a-z A-Z)
}

board_build() {
	bb_out=$2
	shift 2
	for f in $srcs common.c mem.c; do
		set -- "$@" "$fw_boards/$f"
	done
	# shellcheck disable=SC2086
	$cc $cpu ${FW_OPT:--Os} -g -std=c99 -Wall -Wextra -Werror \
	    -ffreestanding -fno-tree-loop-distribute-patterns \
	    -ffunction-sections -fdata-sections \
	    -nostdinc -isystem "$($cc -print-file-name=include)" \
	    -I"$fw_boards/include" -I"$fw_boards" -I"$fw_src" -I. "-D$def" \
	    -L"$fw_boards" -T "$ld" "$@" -o "$bb_out" \
	    -nostdlib -nostartfiles -Wl,--gc-sections $libgcc
}
