# tbring - header-only lock-free tracing buffers.  See README.md.
#
#   make demo    the main job: writer threads -> ring -> service -> demo.pftrace
#   make test    every check suite (installs missing packages first)
#   make test-loaded  make test, its suites beside LOAD (8) busy loops (CI)
#   make bench   throughput tables beside a memcpy baseline
#   make bench-instr  instructions per event beside the raw write of the
#                same bytes (callgrind), and where an instant's go
#   make tsan | asan | m32 | fuzz | headers | install | uninstall | clean
#   make lint    no function over 80 lines in the library and the checker
#   make consumers  a consumer project built through pkg-config, CMake and
#                meson (the tree as a subproject)
#   make deps    installs libck-dev and check (apt-get) if the compiler
#                cannot find them
#   make model   the Promela model of the chunk protocol under spin
#   make cross ARCH=aarch64|armhf|s390x
#                every suite and example cross-built with the target's own
#                ck headers (fetched into build/sysroot), run under qemu-user;
#                make cross-all runs the three
#   make barriers  aarch64 barrier probe of the writer fast path and the
#                reader drain (target ck headers, and TB_ATOMIC_BUILTINS=1)
#   make firmware  writer-only and reader-only TUs for Cortex-M0/M4/M33
#                and RV32 with and without A, bare metal, nothing
#                undefined beyond <string.h>
#   make size    .text table of the writer fast path and the reader drain
#                (x86-64, Cortex-M0, M4, M33, RV32imac, RV32imc, all -Os)
#   make firmware-e2e  the firmware example under QEMU on Cortex-M0, M3,
#                M4F, M7, M33 and RV32 with and without A: streamed over
#                the UART and dumped after a fault, checked; nested
#                interrupts, the masked RMWs; the table of
#                docs/firmware.md (make firmware-docs rewrites it), and
#                where an event's instructions go (firmware-profile)
#   make freertos-e2e  FreeRTOS traced through its own hooks (tbfreertos.h)
#                under QEMU, both ways, its CPU time per task checked
#                against the kernel's; FREERTOS_KERNEL=path to the kernel
#   make help    this list
#   build/tbtrace  stat FILE.pftrace | ring PATH | convert RING.bin OUT

CC	?= cc
PREFIX	?= /usr/local
DESTDIR	?=
VERSION	:= $(shell sed -n 's/^\#define TBRING_VERSION_STRING[^"]*"\(.*\)"/\1/p' tbbase.h)
BUILD	?= build
# The library: what make install installs and a vendor copies.  Tooling
# (the trace checker, build/tbtrace) lives under tools/ and is not
# installed.
HEADERS	:= tbbase.h tbfrag.h tbsync.h tbring.h tbpacket.h tbpb.h tbuffer.h tbbridge.h tbtracefmt.h tbtrace.h tbservice.h tbevent.h tblink.h tbfreertos.h
TOOL_HEADERS := tools/tbcheck.h
FUZZ_SECONDS ?= 30

WARN	:= -Wall -Wextra -Werror
# ck lives in a system directory; never include it with -I (its headers
# are not warning-clean unless they are system headers) and never take
# ck's pkg-config cflags, which hard-code the build machine's architecture.
BASE	:= -std=c99 $(WARN) -D_GNU_SOURCE -I. -g
CFLAGS	?= -O2
CHECK_LIBS = $(shell pkg-config --cflags --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lm) -pthread

TESTS	:= $(patsubst test/%.c,%,$(wildcard test/test_*.c))
# C++ suites (every header as C++): run natively, under the sanitizers,
# not in the -m32 and cross builds (they have no C++ compiler here).
CXX_TESTS := $(patsubst test/%.cc,%,$(wildcard test/test_*.cc))
CXX_TESTS += $(addsuffix -c++11,$(CXX_TESTS))
RUN_CXX	?= $(CXX_TESTS)
# Examples that check themselves and exit non-zero when they fail; each
# gets build/NAME.pftrace as its argument, and a trace it writes there must
# pass tbtrace stat (Perfetto's importer's rules).  first_trace-c99 is
# first_trace built as strict C99 (no _GNU_SOURCE), as a reader of
# docs/events.md may build it; given a path it cannot write, it must fail
# saying why.
RUN_EXAMPLES ?= quickstart events first_trace first_trace-c99 service_loop \
	central_buffer
BENCHES	:= $(patsubst bench/%.c,bench_%,$(wildcard bench/*.c))
FUZZERS	:= $(patsubst fuzz/%.c,%,$(wildcard fuzz/fuzz_*.c))
EXAMPLES := $(patsubst examples/%.c,%,$(wildcard examples/*.c)) first_trace-c99
TOOLS	:= tbtrace
TEST_DEPS := $(HEADERS) $(TOOL_HEADERS) $(wildcard test/*.h) $(wildcard examples/*.h)

.PHONY: all test check demo bench tsan asan m32 fuzz headers lint deps \
	deps-m32 deps-fuzz install uninstall clean help

# have-deps first: without ck a plain make says what to install.
all: have-deps $(addprefix $(BUILD)/,$(TESTS) $(RUN_CXX) $(BENCHES) $(EXAMPLES) $(TOOLS))

help:
	@sed -n '/^#   make/,/^$$/p' Makefile | sed -e 's/^# \{0,1\}//' -e '/^$$/d'

# --- dependencies ----------------------------------------------------------
# Installs libck-dev, check and pkg-config with apt-get when they are
# missing; says what to do when it cannot.
APT_INSTALL = sh -c 'if ! command -v apt-get >/dev/null; then \
	echo "tbring: missing packages: $$*. Install them with your package manager." >&2; exit 1; fi; \
	if [ "$$(id -u)" != 0 ]; then SUDO=sudo; command -v sudo >/dev/null || { \
	echo "tbring: missing packages: $$*. Run as root: apt-get install $$*" >&2; exit 1; }; fi; \
	echo "tbring: installing $$* with apt-get (log: $(BUILD)/apt.log)"; mkdir -p $(BUILD); \
	{ $$SUDO apt-get update -qq || echo "tbring: apt-get update reported errors; trying the install anyway"; } >$(BUILD)/apt.log 2>&1; \
	DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq "$$@" >>$(BUILD)/apt.log 2>&1 || { \
	tail -n 20 $(BUILD)/apt.log >&2; echo "tbring: apt-get could not install $$*; install them by hand" >&2; exit 1; }' apt-install

# What make test and make demo install; a plain make only names them.
# Found by trying what the build does, not by where a distribution puts
# files: ck_pr.h through the compiler's include path, check compiled and
# linked with CHECK_LIBS (which needs no pkg-config).  Nothing is missing
# when everything is installed, wherever it is, and nothing then reaches
# for apt-get.
PROBE_CK = printf '\043include <ck_pr.h>\n' | \
	$(CC) $(CFLAGS) $(EXTRA) -E -x c - >/dev/null 2>&1
PROBE_CHECK = printf '\043include <check.h>\nint main(void) { return !srunner_create(0); }\n' | \
	$(CC) $(CFLAGS) $(EXTRA) -x c - -o /dev/null $(CHECK_LIBS) >/dev/null 2>&1
MISSING = $(shell $(PROBE_CK) || echo libck-dev; $(PROBE_CHECK) || echo check)
MISSING_PC = $(shell command -v pkg-config >/dev/null || echo pkg-config)

deps:
	@m="$(strip $(MISSING))"; [ -z "$$m" ] || $(APT_INSTALL) $$m

.PHONY: have-deps
have-deps:
	@m="$(strip $(MISSING))"; [ -z "$$m" ] || { \
	echo "tbring: missing packages: $$m."; \
	echo "  make deps installs them (apt-get, as root); make test and make demo"; \
	echo "  do that first.  Elsewhere, install them with your package manager."; \
	exit 1; } >&2

deps-m32: deps
	@gcc -m32 -print-libgcc-file-name 2>/dev/null | grep -q 32 && \
	[ -f /usr/lib/i386-linux-gnu/pkgconfig/check.pc ] && \
	[ -z "$(MISSING_PC)" ] || { \
	dpkg --print-foreign-architectures | grep -q i386 || dpkg --add-architecture i386; \
	$(APT_INSTALL) gcc-12-multilib check:i386 $(MISSING_PC); }

# libFuzzer, found by linking a fuzz target (any clang version).
deps-fuzz: deps
	@printf 'int LLVMFuzzerTestOneInput(const char *p, unsigned long n) { return p && n > 1 << 30; }\n' | \
	clang -fsanitize=fuzzer -x c - -o /dev/null >/dev/null 2>&1 || \
	$(APT_INSTALL) clang libclang-rt-14-dev

# --- tests -----------------------------------------------------------------
$(BUILD)/test_%: test/test_%.c $(TEST_DEPS) | $(BUILD)
	$(CC) $(BASE) $(CFLAGS) $(EXTRA) $< -o $@ $(CHECK_LIBS)

# Two translation units, the second built with other TB_EV_* sizes: each
# refuses the other's event writer (TB_ECONFIG).
EV_UNIT_SIZES := -DTB_EV_TRACKS=4 -DTB_EV_NAME_BYTES=64 -DTB_EV_FLOWS=2
$(BUILD)/test_tbevent_config: test/test_tbevent_config.c \
		test/tbevent_config_unit.c $(TEST_DEPS) | $(BUILD)
	$(CC) $(BASE) $(CFLAGS) $(EXTRA) $(EV_UNIT_SIZES) -Itest -c \
		test/tbevent_config_unit.c -o $@-unit.o
	$(CC) $(BASE) -Itest $(CFLAGS) $(EXTRA) $< $@-unit.o -o $@ $(CHECK_LIBS)

CXX	?= c++
CXXSTD	?= -std=c++17
$(BUILD)/test_%: test/test_%.cc $(TEST_DEPS) | $(BUILD)
	$(CXX) $(CXXSTD) $(WARN) -I. -g $(CFLAGS) $(EXTRA) $< -o $@ $(CHECK_LIBS) $(CXX_LINK)

# The same C++ suites built, linked and run as C++11 (the oldest we claim).
$(BUILD)/test_%-c++11: test/test_%.cc $(TEST_DEPS) | $(BUILD)
	$(CXX) -std=c++11 $(WARN) -I. -g $(CFLAGS) $(EXTRA) $< -o $@ $(CHECK_LIBS) $(CXX_LINK)

$(BUILD):
	@mkdir -p $@

test check: deps headers
	@$(MAKE) --no-print-directory run-tests

# check's own timeout is 4 s per test: on a loaded machine (CI, a new
# user's, load 20 on 2 cores) that is a timing assertion, and it failed
# tests that take half a second quiet.  A test's timeout only catches a
# hang: every test case that sets none gets TEST_TIMEOUT seconds (times
# CK_TIMEOUT_MULTIPLIER where a runner sets one), those that run long set
# more, none less.
TEST_TIMEOUT ?= 60

# make test with its suites run beside LOAD busy loops, as CI runs it
# (built first, unloaded: a build has nothing to time); the loops end
# with the run, pass or fail.  (8 loops on 2 cores: a suite ran 10x to
# 1000x slower than quiet, and every one must still pass.)
LOAD	?= 8
.PHONY: test-loaded run-tests-built
test-loaded: deps headers
	@$(MAKE) --no-print-directory run-tests-built
	@pids=""; trap 'kill $$pids 2>/dev/null' EXIT INT TERM; \
	for i in $$(seq $(LOAD)); do sh -c 'while :; do :; done' & \
	pids="$$pids $$!"; done; s=$$(date +%s); \
	echo "test-loaded: the suites beside $(LOAD) busy loops"; \
	$(MAKE) --no-print-directory run-tests; rc=$$?; \
	echo "test-loaded: $$(( $$(date +%s) - s )) s, exit $$rc"; exit $$rc

run-tests-built: $(addprefix $(BUILD)/,$(TESTS) $(RUN_CXX) $(EXAMPLES) $(TOOLS))

# Every suite runs, even after one failed; one line at the end says how
# many passed and failed, and make fails if any did.  Tests that run the
# examples (cross-process) find them in TB_BUILD_DIR.
.PHONY: run-tests
run-tests: $(addprefix $(BUILD)/,$(TESTS) $(RUN_CXX) $(EXAMPLES) $(TOOLS))
	@pass=0; fail=0; failed=""; for t in $(TESTS) $(RUN_CXX); do \
	echo "== $$t"; \
	if TB_BUILD_DIR=$(BUILD) CK_DEFAULT_TIMEOUT=$(TEST_TIMEOUT) \
	    $(RUNNER) ./$(BUILD)/$$t; then \
	pass=$$((pass + 1)); else fail=$$((fail + 1)); failed="$$failed $$t"; fi; \
	done; for t in $(RUN_EXAMPLES); do echo "== example $$t"; \
	o=$(BUILD)/$$t.pftrace; rm -f $$o; \
	if $(RUNNER) ./$(BUILD)/$$t $$o >/dev/null && { [ ! -f $$o ] || \
	$(RUNNER) ./$(BUILD)/tbtrace stat $$o >/dev/null; }; then \
	pass=$$((pass + 1)); echo "ok"; \
	else fail=$$((fail + 1)); failed="$$failed $$t"; fi; done; \
	echo "== example first_trace-c99, a path it cannot write"; \
	if ! $(RUNNER) ./$(BUILD)/first_trace-c99 $(BUILD)/no-such-dir/x \
	    2>$(BUILD)/first_trace.err && grep -q . $(BUILD)/first_trace.err; \
	then pass=$$((pass + 1)); echo "ok: $$(cat $(BUILD)/first_trace.err)"; \
	else fail=$$((fail + 1)); failed="$$failed first_trace-c99-error"; fi; \
	echo "tests ($(BUILD)): $$pass passed, $$fail failed$${failed:+:$$failed}"; \
	[ $$fail = 0 ]

# Each public header, and each header of the tooling, compiles alone
# (twice, to check its guard) as C99 with gcc and clang, and as C++11 and
# C++17 with g++ and clang++, when they are there, clean of implicit
# conversions too (users build with -Wconversion); the demo compiles
# under gcc's ThreadSanitizer without a warning (-Wtsan); none compiles
# with a header of another release (tools/version-check.sh).
HDR_WARN := -Wconversion -Wsign-conversion
headers: deps
	@set -e; for h in $(wildcard $(HEADERS) $(TOOL_HEADERS)); do \
	for cc in gcc $$(command -v clang >/dev/null && echo clang); do \
	printf '#include "%s"\n#include "%s"\n' $$h $$h | \
	$$cc -std=c99 $(WARN) $(HDR_WARN) -pedantic -I. -x c -fsyntax-only - || exit 1; \
	done; \
	for cxx in g++ $$(command -v clang++ >/dev/null && echo clang++); do \
	for std in c++11 c++17; do \
	printf '#include "%s"\n#include "%s"\n' $$h $$h | \
	$$cxx -std=$$std $(WARN) $(HDR_WARN) -I. -x c++ -fsyntax-only - || exit 1; \
	done; done; done; \
	echo "headers: each compiles on its own as C99, C++11 and C++17, $(HDR_WARN)"; \
	gcc -std=c99 $(WARN) -D_GNU_SOURCE -I. -O1 -fsanitize=thread \
		-c examples/demo.c -o /dev/null; \
	printf '#define TB_OK 0\n#include "tbring.h"\n' | gcc -std=c99 -I. \
		-x c -fsyntax-only - 2>&1 | grep -q "TB_OK is already defined" || { \
		echo "headers: a TB_OK defined before tbbase.h is not named" >&2; \
		exit 1; }; \
	echo "headers: the demo compiles under gcc -fsanitize=thread with no warning"; \
	sh tools/readme-check.sh; \
	CC=gcc sh tools/version-check.sh $(HEADERS)

# Short functions: none over FN_MAX lines in the library headers and the
# checker (tools/fnlen.sh lists each one longer, longest first).  CI runs
# it.
FN_MAX	?= 80
lint:
	@sh tools/fnlen.sh -n $(FN_MAX) $(HEADERS) $(TOOL_HEADERS) || { \
	echo "lint: functions over $(FN_MAX) lines (above): split them" >&2; \
	exit 1; }
	@echo "lint: no function over $(FN_MAX) lines in $(words $(HEADERS) $(TOOL_HEADERS)) headers"

# Under ThreadSanitizer the atomics helpers switch to __atomic builtins
# (TSan cannot see ck's inline assembly); stress tests run longer.
tsan: deps
	@command -v clang >/dev/null || $(APT_INSTALL) clang
	@$(MAKE) --no-print-directory run-tests BUILD=build/tsan CC=clang CXX=clang++ \
	CFLAGS="-O1 -fsanitize=thread" TB_STRESS=long \
	RUNNER="env TSAN_OPTIONS=halt_on_error=1 CK_TIMEOUT_MULTIPLIER=20"

# ASan cannot see ck's inline assembly either: use ck's builtins port.
asan: deps
	@command -v clang >/dev/null || $(APT_INSTALL) clang
	@$(MAKE) --no-print-directory run-tests BUILD=build/asan CC=clang CXX=clang++ \
	CFLAGS="-O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -DCK_USE_CC_BUILTINS=1" \
	RUNNER="env CK_TIMEOUT_MULTIPLIER=5"

# gcc-multilib conflicts with every Debian cross gcc, and without it there
# is no /usr/include/asm (<errno.h> fails: asm/errno.h).  gcc-12-multilib
# plus a build-local link to the multiarch asm headers, searched last
# (-idirafter, so a real /usr/include/asm still wins), builds -m32 beside
# the cross compilers.
M32_INC	:= build/m32-include

$(M32_INC)/asm:
	@mkdir -p $(M32_INC) && ln -sfn /usr/include/x86_64-linux-gnu/asm $@

m32: deps-m32 $(M32_INC)/asm
	@$(MAKE) --no-print-directory run-tests BUILD=build/m32 CC=gcc RUN_CXX= \
	CFLAGS="-O2 -m32 -idirafter $(M32_INC)" \
	CHECK_LIBS="$$(PKG_CONFIG_LIBDIR=/usr/lib/i386-linux-gnu/pkgconfig pkg-config --cflags --libs check) -pthread"

export TB_STRESS

# --- cross targets under qemu-user -------------------------------------------
# make cross ARCH=aarch64|armhf|s390x builds every suite and example with the
# Debian cross compiler and the target's own ck headers, and runs each suite
# under qemu-user.  The target's ck headers are fetched into a build-local
# sysroot (apt-get download + dpkg-deb -x): installing libck-dev:<arch>
# would remove the native libck-dev, and the cross compilers search
# /usr/include, whose ck_md.h is the build machine's (tbring.h refuses a
# TSO ck_md.h on a non-TSO target).  ck comes in with -isystem, never -I.
# qemu runs with -L / (with -L /usr/<triple> threaded programs hang once a
# multiarch libc is installed); test_e2e runs the examples through
# TB_EXEC_WRAP; check's timeouts are raised by QEMU_TIMEOUT_MULTIPLIER.
ARCH	?= aarch64
XARCHES	:= aarch64 armhf s390x
X_TRIPLE_aarch64 := aarch64-linux-gnu
X_TRIPLE_armhf	 := arm-linux-gnueabihf
X_TRIPLE_s390x	 := s390x-linux-gnu
X_DEB_aarch64	:= arm64
X_DEB_armhf	:= armhf
X_DEB_s390x	:= s390x
X_QEMU_aarch64	:= qemu-aarch64
X_QEMU_armhf	:= qemu-arm
X_QEMU_s390x	:= qemu-s390x
X_TRIPLE = $(X_TRIPLE_$(ARCH))
X_DEB	= $(X_DEB_$(ARCH))
X_QEMU	= $(X_QEMU_$(ARCH)) -L /
X_BUILD	= build/cross/$(ARCH)
# The C++ suites too, where the target's g++ is installed (CI installs
# it); libstdc++ is linked in statically: qemu's -L / has no target one.
X_CXX_TESTS = $(if $(shell command -v $(X_TRIPLE)-g++ 2>/dev/null),$(CXX_TESTS))
SYSROOT	:= build/sysroot
X_CK	= $(SYSROOT)/$(X_DEB)/usr/include
QEMU_TIMEOUT_MULTIPLIER ?= 10
SUDO_IF = $$([ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: cross cross-all deps-cross cross-build cross-run

__check_arch = case " $(XARCHES) " in *" $(ARCH) "*) ;; *) \
	echo "tbring: ARCH=$(ARCH): make cross takes ARCH=one of: $(XARCHES)" >&2; \
	exit 1;; esac

deps-cross: deps
	@$(__check_arch)
	@missing=""; \
	command -v $(X_TRIPLE)-gcc >/dev/null || missing="$$missing gcc-$(X_TRIPLE)"; \
	command -v $(X_TRIPLE)-g++ >/dev/null || missing="$$missing g++-$(X_TRIPLE)"; \
	command -v $(X_QEMU_$(ARCH)) >/dev/null || missing="$$missing qemu-user"; \
	[ -f /usr/lib/$(X_TRIPLE)/pkgconfig/check.pc ] || missing="$$missing check:$(X_DEB)"; \
	missing="$$missing $(MISSING_PC)"; missing=$$(echo $$missing); \
	[ -z "$$missing" ] || { \
	dpkg --print-foreign-architectures | grep -qx $(X_DEB) || \
	$(SUDO_IF) dpkg --add-architecture $(X_DEB); \
	$(APT_INSTALL) $$missing; }

# The target's ck headers, from its libck-dev package, never installed.
$(SYSROOT)/%/usr/include/ck_md.h:
	@rm -rf $(SYSROOT)/$*.dl && mkdir -p $(SYSROOT)/$*.dl
	@echo "tbring: fetching libck-dev:$* into $(SYSROOT)/$*"
	@cd $(SYSROOT)/$*.dl && { apt-get download -qq libck-dev:$* 2>/dev/null || \
	{ $(SUDO_IF) apt-get update -qq && apt-get download -qq libck-dev:$* 2>/dev/null; } || \
	{ echo "tbring: apt-get download libck-dev:$* failed (is the $* architecture added: dpkg --add-architecture $*?)" >&2; exit 1; }; }
	@dpkg-deb -x $(SYSROOT)/$*.dl/libck-dev_*_$*.deb $(SYSROOT)/$*
	@rm -rf $(SYSROOT)/$*.dl
	@test -f $@ || { echo "tbring: libck-dev:$* has no ck_md.h" >&2; exit 1; }

cross: deps-cross
	@$(MAKE) --no-print-directory cross-build ARCH=$(ARCH)
	@$(MAKE) --no-print-directory cross-run ARCH=$(ARCH)

cross-all:
	@set -e; for a in $(XARCHES); do $(MAKE) --no-print-directory cross ARCH=$$a; done

cross-build: $(X_CK)/ck_md.h
	@$(__check_arch)
	@echo "cross $(ARCH): building $(words $(TESTS) $(X_CXX_TESTS)) suites and $(words $(EXAMPLES)) examples with $(X_TRIPLE)-gcc$(if $(X_CXX_TESTS), and -g++), ck from $(X_CK)"
	@$(MAKE) --no-print-directory -s $(addprefix $(X_BUILD)/,$(TESTS) $(X_CXX_TESTS) $(EXAMPLES) $(TOOLS)) \
	BUILD=$(X_BUILD) CC=$(X_TRIPLE)-gcc CXX=$(X_TRIPLE)-g++ CFLAGS="-O2" \
	EXTRA="-isystem $(X_CK) -Wno-psabi $(EXTRA)" \
	CXX_LINK="-static-libstdc++ -static-libgcc" \
	CHECK_LIBS="$$(PKG_CONFIG_LIBDIR=/usr/lib/$(X_TRIPLE)/pkgconfig pkg-config --cflags --libs check) -pthread"

# One line per suite: check's summary and the wall time; a failing suite's
# log (build/cross/<arch>/<suite>.log) is shown, and make fails at the end.
cross-run:
	@$(__check_arch)
	@fail=0; for t in $(TESTS) $(X_CXX_TESTS); do \
	s=$$(date +%s); \
	if TB_BUILD_DIR=$(X_BUILD) TB_EXEC_WRAP="$(X_QEMU)" \
	    CK_DEFAULT_TIMEOUT=$(TEST_TIMEOUT) \
	    CK_TIMEOUT_MULTIPLIER=$(QEMU_TIMEOUT_MULTIPLIER) \
	    $(X_QEMU) ./$(X_BUILD)/$$t > $(X_BUILD)/$$t.log 2>&1; then r=ok; \
	else r=FAILED; fail=1; fi; \
	line=$$(grep -E '^[0-9]+%: Checks:' $(X_BUILD)/$$t.log | tail -n 1); \
	printf 'cross %-7s %-15s %-44s %4ss %s\n' $(ARCH) $$t \
	    "$${line:-(no summary)}" $$(( $$(date +%s) - s )) $$r; \
	[ $$r = ok ] || { grep -E ':[FE]:' $(X_BUILD)/$$t.log | head -n 20; \
	    tail -n 5 $(X_BUILD)/$$t.log; }; \
	done; for t in $(RUN_EXAMPLES); do o=$(X_BUILD)/$$t.pftrace; \
	rm -f $$o; if $(X_QEMU) ./$(X_BUILD)/$$t $$o > $(X_BUILD)/$$t.log 2>&1 \
	    && { [ ! -f $$o ] || $(X_QEMU) ./$(X_BUILD)/tbtrace stat $$o \
	    >> $(X_BUILD)/$$t.log 2>&1; }; then r=ok; else r=FAILED; fail=1; \
	tail -n 5 $(X_BUILD)/$$t.log; fi; \
	printf 'cross %-7s example %-43s %s\n' $(ARCH) $$t $$r; \
	done; exit $$fail

# --- probes for targets that cannot run the suites: tools/targets/ ---------
# Translation units with only the writer side (writer_fast.c, writer_side.c)
# or only the reader side (reader_drain.c, reader_side.c) of tbring.h.
TGT	:= build/targets
TGT_SRC	:= $(wildcard tools/targets/*.c)
TGT_DEPS := tbfrag.h tbring.h $(TGT_SRC) $(wildcard tools/targets/*.sh)
X_WARN	:= -std=c99 $(WARN) -I.

# The barrier probe: the writer fast path and the reader drain built for
# aarch64 -O2 with the target's ck headers, and with TB_ATOMIC_BUILTINS=1;
# tools/targets/barriers.sh counts the ordering instructions reachable from
# each entry point and fails when an ordering the protocol needs is not
# there.  It must also fail on a build with every order relaxed (so it is
# not blind), and the host's ck headers must not compile at all (#error).
BARRIER_NEEDS_W := tbt_writer_open:acq_load,acq_rmw tbt_writer_close:rel_rmw \
	tbt_writer_write_packet:acq_load,acq_rmw,rel_rmw
BARRIER_NEEDS_R := tbt_reader_drain:acq_load,rel_store,rel_rmw
RELAXED	:= $(foreach o,ACQUIRE RELEASE ACQ_REL SEQ_CST,-U__ATOMIC_$(o) -D__ATOMIC_$(o)=0)

.PHONY: barriers firmware size deps-firmware

barriers:
	@$(MAKE) --no-print-directory deps-cross ARCH=aarch64
	@$(MAKE) --no-print-directory -s $(SYSROOT)/arm64/usr/include/ck_md.h
	@set -e; d=$(TGT)/aarch64; mkdir -p $$d; cc=aarch64-linux-gnu-gcc; \
	od=aarch64-linux-gnu-objdump; \
	for v in ck builtins relaxed; do \
	case $$v in ck) fl="-isystem $(SYSROOT)/arm64/usr/include";; \
	builtins) fl="-DTB_ATOMIC_BUILTINS=1";; \
	relaxed) fl="-DTB_ATOMIC_BUILTINS=1 -Wno-builtin-macro-redefined $(RELAXED)";; esac; \
	for f in writer_fast reader_drain; do \
	$$cc $(X_WARN) -O2 $$fl -c tools/targets/$$f.c -o $$d/$$f-$$v.o; done; done; \
	for v in ck builtins; do \
	sh tools/targets/barriers.sh $$od aarch64/$$v $$d/writer_fast-$$v.o $(BARRIER_NEEDS_W); \
	sh tools/targets/barriers.sh $$od aarch64/$$v $$d/reader_drain-$$v.o $(BARRIER_NEEDS_R) | tail -n 1; \
	done; \
	if sh tools/targets/barriers.sh $$od relaxed $$d/writer_fast-relaxed.o $(BARRIER_NEEDS_W) >$$d/relaxed.log || \
	   sh tools/targets/barriers.sh $$od relaxed $$d/reader_drain-relaxed.o $(BARRIER_NEEDS_R) >>$$d/relaxed.log; then \
	cat $$d/relaxed.log; echo "barriers: the probe passed a build with every order relaxed: it is blind" >&2; exit 1; fi; \
	echo "barriers: self-check: a build with every order relaxed fails the probe ($$(grep -c MISSING $$d/relaxed.log) entries missing orderings)"; \
	if $$cc $(X_WARN) -O2 -c tools/targets/writer_fast.c -o $$d/host-headers.o 2>$$d/host-headers.log; then \
	echo "barriers: aarch64 with the host's ck headers ($$(grep -o 'CK_MD_[A-Z]*' /usr/include/ck_md.h | head -n 1)) compiled: the #error in tbring.h is gone" >&2; exit 1; fi; \
	grep -q 'ck_md.h says CK_MD_TSO' $$d/host-headers.log || { cat $$d/host-headers.log; exit 1; }; \
	echo "barriers: aarch64 with the host's ck headers is refused: $$(grep -o 'error: .*' $$d/host-headers.log | head -n 1 | cut -c1-90)..."

# Bare metal needs the ARM and RISC-V compilers and a C library's
# <string.h> for each (newlib for ARM, picolibc for RISC-V, whose Debian
# compiler ships no C library headers), and for the example QEMU for both
# and gdb-multiarch.  Never their recommends (a C++ library, a GL stack).
FW_DEBS	:= gcc-arm-none-eabi libnewlib-arm-none-eabi gcc-riscv64-unknown-elf \
	picolibc-riscv64-unknown-elf
FW_E2E_DEBS := qemu-system-arm qemu-system-misc gdb-multiarch
APT_NORECS = $(subst apt-get install -y,apt-get install -y --no-install-recommends,$(APT_INSTALL))

deps-firmware: deps
	@command -v arm-none-eabi-gcc >/dev/null && \
	[ -f /usr/lib/arm-none-eabi/include/string.h ] && \
	command -v riscv64-unknown-elf-gcc >/dev/null && \
	[ -f /usr/lib/picolibc/riscv64-unknown-elf/include/string.h ] || \
	$(APT_NORECS) $(FW_DEBS)

# Bare metal: each writer-only and reader-only TU for every core with the
# builtin atomics (no ck port for bare metal) and no futex; nm must find
# nothing undefined beyond <string.h>-level functions and the compiler's
# own libgcc (__aeabi_*, __gnu_thumb1_case_*): no __atomic_* or __sync_*
# library calls, on the cores with no atomic read-modify-write
# (Cortex-M0, RV32 without A) either (tbsync.h masks interrupts there).
# (gcc finds the RV32 multilib only from an -march without _zicsr.)  And
# each compiles as C++11 there too (int32_t is long on these targets).
# Each entry: name|compiler|flags, the entries separated by ";".
FW_FLAGS := -Os -ffreestanding -DTB_ATOMIC_BUILTINS=1 -DTB_NO_FUTEX
FW_RV	:= riscv64-unknown-elf-gcc|--specs=picolibc.specs -mabi=ilp32 -march
FW_TARGETS := cortex-m0|arm-none-eabi-gcc|-mthumb -mcpu=cortex-m0; \
	cortex-m4|arm-none-eabi-gcc|-mthumb -mcpu=cortex-m4; \
	cortex-m33|arm-none-eabi-gcc|-mthumb -mcpu=cortex-m33; \
	rv32imac|$(FW_RV)=rv32imac_zicsr; rv32imc|$(FW_RV)=rv32imc_zicsr
FW_ALLOWED := memcpy memmove memset memcmp

firmware: deps-firmware
	@set -e; echo '$(FW_TARGETS)' | tr ';' '\n' | sed 's/^ *//' | \
	while IFS='|' read -r cpu cc fl; do mkdir -p $(TGT)/$$cpu; \
	nm=$${cc%gcc}nm; sz=$${cc%gcc}size; \
	for f in $(notdir $(basename $(TGT_SRC))); do o=$(TGT)/$$cpu/$$f.o; \
	$$cc $$fl $(FW_FLAGS) $(X_WARN) -c tools/targets/$$f.c -o $$o; \
	u=$$($$nm -u $$o | awk '{ print $$NF }' | sort | tr '\n' ' '); \
	lib=$$($$nm --defined-only $$($$cc $${fl%_zicsr} -print-libgcc-file-name) 2>/dev/null | awk '{ print $$3 }'); \
	bad=$$(for s in $$u; do case " $(FW_ALLOWED) " in *" $$s "*) continue;; esac; \
	case $$s in __atomic_*|__sync_*) echo $$s; continue;; esac; \
	echo "$$lib" | grep -qxF "$$s" || echo $$s; done); \
	printf 'firmware %-10s %-14s .text %5s  undefined: %s\n' $$cpu $$f \
	    $$($$sz -A $$o | awk '$$1 ~ /^\.text/ { s += $$2 } END { print s + 0 }') "$${u:-none}"; \
	[ -z "$$bad" ] || { echo "firmware: $$o needs $$bad (allowed: $(FW_ALLOWED))" >&2; exit 1; }; \
	$${cc%gcc}g++ $$fl $(FW_FLAGS) -x c++ -std=c++11 $(WARN) -I. -fsyntax-only tools/targets/$$f.c; \
	done; done; echo "firmware: each also compiles as C++11 for each core"

size: deps-firmware
	@sh tools/targets/size.sh $(TGT)/size

# The firmware example (examples/firmware/) on emulated boards, one per
# core (examples/firmware/boards/): built with no C library, run under
# QEMU, its trace taken off over the UART and from a RAM dump after a
# fault (QEMU's gdb stub), checked by fwcheck, the failure cases seen
# failing, nested interrupts and the masked read-modify-writes; then the
# table of flash, RAM and instructions, which must be docs/firmware.md's
# (make firmware-docs writes it there).  Traces in build/firmware/.
FW_E2E_TOOLS := arm-none-eabi-gcc riscv64-unknown-elf-gcc qemu-system-arm \
	qemu-system-riscv32 gdb-multiarch timeout

.PHONY: firmware-e2e have-firmware-e2e firmware-size firmware-docs
have-firmware-e2e:
	@m=""; for t in $(FW_E2E_TOOLS); do command -v $$t >/dev/null || m="$$m $$t"; done; \
	[ -z "$$m" ] || { echo "firmware-e2e: missing:$$m.  On Debian:" \
	"apt-get install --no-install-recommends gcc-arm-none-eabi gcc-riscv64-unknown-elf $(FW_E2E_DEBS)" >&2; exit 1; }

firmware-e2e: have-firmware-e2e build/tbtrace build/firmware/fwcheck
	@s=$$(date +%s); sh examples/firmware/e2e.sh && \
	sh examples/firmware/size.sh && \
	sh examples/firmware/profile.sh an385 3 5 1 6 && \
	sh examples/firmware/profile.sh microbit 3 6 && \
	echo "firmware-e2e: $$(( $$(date +%s) - s )) s"

# Where an event's instructions go on the Cortex-M3, and an instant's and
# a packet's on the M0 (QEMU's instruction trace,
# examples/firmware/profile.sh; make firmware-e2e prints it too).
.PHONY: firmware-profile
firmware-profile: have-firmware-e2e
	@sh examples/firmware/profile.sh an385 3 5 1 6 && \
	sh examples/firmware/profile.sh microbit 3 6

firmware-size: have-firmware-e2e
	@sh examples/firmware/size.sh

firmware-docs: have-firmware-e2e
	@sh examples/firmware/size.sh --update

build/firmware/fwcheck: examples/firmware/fwcheck.c test/trace_decode.h
	@mkdir -p build/firmware
	$(CC) $(BASE) -Itest $(CFLAGS) $< -o $@

# FreeRTOS traced through tbfreertos.h (examples/freertos/): the kernel's
# sources are the user's (FREERTOS_KERNEL=/path/to/FreeRTOS-Kernel), by
# default the copy beside the repository when there is one; none: skipped,
# saying so.
FREERTOS_KERNEL ?= $(firstword $(wildcard ../shared/vendor/FreeRTOS-Kernel))

.PHONY: freertos-e2e
freertos-e2e: have-firmware-e2e build/tbtrace build/freertos/rtoscheck
	@if [ ! -f "$(FREERTOS_KERNEL)/tasks.c" ]; then \
	echo "freertos-e2e: skipped: no FreeRTOS-Kernel sources (give" \
	"FREERTOS_KERNEL=/path/to/FreeRTOS-Kernel, V11)"; exit 0; fi; \
	s=$$(date +%s); \
	FREERTOS_KERNEL="$(abspath $(FREERTOS_KERNEL))" sh examples/freertos/e2e.sh && \
	echo "freertos-e2e: $$(( $$(date +%s) - s )) s"

build/freertos/rtoscheck: examples/freertos/rtoscheck.c tools/tbcheck.h \
		test/trace_decode.h $(HEADERS)
	@mkdir -p build/freertos
	$(CC) $(BASE) -Itest $(CFLAGS) $< -o $@

# --- fuzzing ---------------------------------------------------------------
build/fuzz/%: fuzz/%.c fuzz/fuzz_input.h $(HEADERS) $(TOOL_HEADERS)
	@mkdir -p build/fuzz
	clang -std=c99 -Wall -Wextra -Werror -D_GNU_SOURCE -I. -g -O1 \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-DCK_USE_CC_BUILTINS=1 $< -o $@

# Each fuzzer runs FUZZ_SECONDS on its corpus; a finding (crash, leak,
# sanitizer report, timeout) stops make with the fuzzer's report and its
# reproducer in build/fuzz/.
fuzz: deps-fuzz $(addprefix build/fuzz/,$(FUZZERS))
	@set -e; for f in $(FUZZERS); do \
	c=fuzz/corpus_$${f#fuzz_}; mkdir -p build/fuzz/$$f.corpus; \
	echo "== $$f ($(FUZZ_SECONDS) s)"; \
	if ./build/fuzz/$$f -max_total_time=$(FUZZ_SECONDS) \
	    -print_final_stats=1 -artifact_prefix=build/fuzz/$$f- \
	    build/fuzz/$$f.corpus $$( [ -d $$c ] && echo $$c ) \
	    > build/fuzz/$$f.log 2>&1; then \
		grep -E 'stat::number_of_executed_units|^Done' \
		    build/fuzz/$$f.log; \
	else \
		tail -n 40 build/fuzz/$$f.log; \
		echo "fuzz: $$f found a failure (log: build/fuzz/$$f.log)"; \
		exit 1; \
	fi; done

# --- tools -----------------------------------------------------------------
$(BUILD)/tbtrace: tools/tbtrace.c tools/tbt_stream.c $(HEADERS) $(TOOL_HEADERS) | $(BUILD)
	$(CC) $(BASE) $(CFLAGS) $(EXTRA) $< -o $@

build/fuzz/fuzz_tbcheck build/fuzz/fuzz_link: tools/tbtrace.c tools/tbt_stream.c
$(BUILD)/test_tblink: tools/tbtrace.c tools/tbt_stream.c

# --- bench and demo --------------------------------------------------------
$(BUILD)/bench_%: bench/%.c $(HEADERS) $(wildcard bench/*.h) | $(BUILD)
	$(CC) $(BASE) -O2 -DNDEBUG $(EXTRA) $< -o $@ -pthread -lm

bench: deps $(addprefix $(BUILD)/,$(BENCHES))
	@set -e; for b in $(BENCHES); do ./$(BUILD)/$$b; done

# Instructions per event (callgrind: a count the load of a shared
# machine does not move), beside the raw write of the same bytes, and
# where an instant's go (bench/instr.sh).  Needs valgrind.
.PHONY: bench-instr
bench-instr: deps $(BUILD)/bench_event
	@sh bench/instr.sh $(BUILD)/bench_event $(BUILD)/instr

$(BUILD)/%: examples/%.c $(HEADERS) $(TOOL_HEADERS) $(wildcard examples/*.h) | $(BUILD)
	$(CC) $(BASE) $(CFLAGS) $(EXTRA) $< -o $@ -pthread

$(BUILD)/first_trace-c99: examples/first_trace.c $(HEADERS) | $(BUILD)
	$(CC) -std=c99 -pedantic $(WARN) -I. -g $(CFLAGS) $(EXTRA) $< -o $@

demo: deps $(BUILD)/demo
	./$(BUILD)/demo

# --- install ---------------------------------------------------------------
# Headers under include/tbring/ (their names are too generic for
# /usr/include), a pkg-config file and a CMake package; neither hands out
# ck's flags (ck.pc hard-codes the build machine's architecture, and a
# header-only user links nothing).
INC_DIR	= $(DESTDIR)$(PREFIX)/include/tbring
PC_DIR	= $(DESTDIR)$(PREFIX)/lib/pkgconfig
CMAKE_DIR = $(DESTDIR)$(PREFIX)/lib/cmake/tbring
SUBST	= sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
	      -e 's|@MAJOR@|$(word 1,$(subst ., ,$(VERSION)))|g' \
	      -e 's|@MINOR@|$(word 2,$(subst ., ,$(VERSION)))|g'

install: $(BUILD)/tbtrace
	install -d $(INC_DIR) $(PC_DIR) $(CMAKE_DIR) $(DESTDIR)$(PREFIX)/bin
	install -m 0644 $(HEADERS) $(INC_DIR)/
	install -m 0755 $(BUILD)/tbtrace $(DESTDIR)$(PREFIX)/bin/tbtrace
	$(SUBST) tbring.pc.in > $(PC_DIR)/tbring.pc
	$(SUBST) tbringConfig.cmake.in > $(CMAKE_DIR)/tbringConfig.cmake
	$(SUBST) tbringConfigVersion.cmake.in > \
		$(CMAKE_DIR)/tbringConfigVersion.cmake
	chmod 0644 $(PC_DIR)/tbring.pc $(CMAKE_DIR)/*.cmake

uninstall:
	rm -f $(addprefix $(INC_DIR)/,$(HEADERS)) $(PC_DIR)/tbring.pc \
		$(DESTDIR)$(PREFIX)/bin/tbtrace \
		$(CMAKE_DIR)/tbringConfig.cmake \
		$(CMAKE_DIR)/tbringConfigVersion.cmake
	-rmdir $(INC_DIR) $(CMAKE_DIR) 2>/dev/null

# --- the protocol's model -------------------------------------------------
deps-model:
	@command -v spin >/dev/null || $(APT_INSTALL) spin

# The Promela model of the chunk protocol (model/chunk.pml): every clean
# configuration must pass a full search, every planted mutation must be
# caught.  About 6 minutes and 5 GB with two runs at once (MODEL_JOBS=1
# halves the memory).
model: deps-model
	@bash model/run.sh -j $(or $(MODEL_JOBS),2)

# A consumer project built against the install through pkg-config and
# CMake, and against the tree as a meson subproject.
.PHONY: consumers model deps-model
consumers:
	@command -v cmake >/dev/null && command -v meson >/dev/null && \
	command -v ninja >/dev/null && [ -z "$(MISSING_PC)" ] || \
	$(APT_INSTALL) cmake meson ninja-build $(MISSING_PC)
	@sh tools/consumer/run.sh

clean:
	rm -rf build demo.pftrace
