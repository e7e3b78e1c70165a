# SPDX-License-Identifier: BSD-2-Clause
#
# phases.awk - the phase of an event's instructions a function belongs to,
# for the profiles of an event (bench/instr.sh on x86-64 under callgrind,
# examples/firmware/profile.sh on Cortex-M under QEMU): clock (reading
# the time), interning (finding a name's iid), encoding (protobuf bytes:
# sizes, varints, copies of the encoded fields), ring (the ring writer:
# open, close, publication, its atomics and fragment cursor), event (the
# rest of the event layer: checks, state, slices, the call itself), and
# copy (tb__copy(), memcpy and kin), which the profiles count as encoding
# in an event (the event's bytes) and as ring in a raw packet write.
# Functions are the innermost ones a source line or an address belongs
# to, so inlined helpers count where they belong.
function phase(fn) {
	sub(/\..*/, "", fn)		# GCC's clones: name.isra.0, .part.1
	sub(/@.*/, "", fn)		# symbol versions: clock_gettime@@GLIBC
	if (fn ~ /^(tb_ev_now|tb_ev_boottime_ns|tb__ev_fast_|tb__ev_cycles|clock_gettime|__clock_gettime|__vdso_|fw_now|board_now|own_clock)/)
		return "clock"
	if (fn ~ /^tb__ev_(intern|mix|hit|room|new_iid|hash|str_plan)/)
		return "interning"
	if (fn ~ /^(tb__pb_|tb_pb_|tb__ev_(p[uhbfr]$|put|plan|body|head|vsize|lsize|value|str_put|entry|out_fits|dbits|fast$|seq|take_clear|site_put|site_size|fixed_put|enc))/)
		return "encoding"
	if (fn ~ /^(tb_writer_|tb__writer_|tb__w_|tb_frag_|tb__frag_|tb_atomic_|tb__fence|tb__ring_|tb_ring_|tb__state_|tb_state_|tb__pos_|tb__wstat|tb_bell_|ck_pr_|tb__ev_out_)/)
		return "ring"
	if (fn ~ /^(tb__copy|memcpy|memmove|memset|__mem)/)
		return "copy"
	return "event"
}
