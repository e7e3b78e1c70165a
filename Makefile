# tbring - header-only lock-free tracing buffers.  See README.md.
#
#   make demo    the main job: writer threads -> ring -> service -> demo.pftrace
#   make test    every check suite (installs missing packages first)
#   make bench   throughput tables beside a memcpy baseline
#   make tsan | asan | m32 | fuzz | headers | install | uninstall | clean

CC	?= cc
PREFIX	?= /usr/local
DESTDIR	?=
VERSION	:= 0.1.0
BUILD	?= build
HEADERS	:= tbfrag.h tbring.h tbuffer.h tbservice.h
FUZZ_SECONDS ?= 30

WARN	:= -Wall -Wextra -Werror
# ck lives in a system directory; never include it with -I (see
# ../shared/reference/toolchain.md) and never take ck's pkg-config cflags,
# which hard-code the host architecture.
BASE	:= -std=c99 $(WARN) -D_GNU_SOURCE -I. -g
CFLAGS	?= -O2
CHECK_LIBS = $(shell pkg-config --cflags --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lm) -pthread

TESTS	:= $(patsubst test/%.c,%,$(wildcard test/test_*.c))
BENCHES	:= $(patsubst bench/%.c,bench_%,$(wildcard bench/*.c))
FUZZERS	:= $(patsubst fuzz/%.c,%,$(wildcard fuzz/fuzz_*.c))
EXAMPLES := $(patsubst examples/%.c,%,$(wildcard examples/*.c))
TEST_DEPS := $(HEADERS) $(wildcard test/*.h) $(wildcard examples/*.h)

.PHONY: all test check demo bench tsan asan m32 fuzz headers deps deps-m32 \
	deps-fuzz install uninstall clean

all: $(addprefix $(BUILD)/,$(TESTS) $(BENCHES) $(EXAMPLES))

# --- dependencies ----------------------------------------------------------
# Installs libck-dev, check and pkg-config with apt-get when they are
# missing; says what to do when it cannot.
APT_INSTALL = sh -c 'if ! command -v apt-get >/dev/null; then \
	echo "tbring: missing packages: $$*. Install them with your package manager." >&2; exit 1; fi; \
	if [ "$$(id -u)" != 0 ]; then SUDO=sudo; command -v sudo >/dev/null || { \
	echo "tbring: missing packages: $$*. Run as root: apt-get install $$*" >&2; exit 1; }; fi; \
	echo "tbring: installing $$* with apt-get"; \
	{ $$SUDO apt-get update -qq || echo "tbring: apt-get update reported errors; trying the install anyway" >&2; }; DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq "$$@" >/dev/null || { \
	echo "tbring: apt-get could not install $$*; install them by hand" >&2; exit 1; }' apt-install

deps:
	@missing=""; \
	[ -f /usr/include/ck_pr.h ] || missing="$$missing libck-dev"; \
	command -v pkg-config >/dev/null || missing="$$missing pkg-config"; \
	pkg-config --exists check 2>/dev/null || missing="$$missing check"; \
	[ -z "$$missing" ] || $(APT_INSTALL) $$missing

deps-m32: deps
	@gcc -m32 -print-libgcc-file-name 2>/dev/null | grep -q 32 && \
	[ -f /usr/lib/i386-linux-gnu/pkgconfig/check.pc ] || { \
	dpkg --print-foreign-architectures | grep -q i386 || dpkg --add-architecture i386; \
	$(APT_INSTALL) gcc-12-multilib check:i386; }

deps-fuzz: deps
	@command -v clang >/dev/null && ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 || \
	$(APT_INSTALL) clang libclang-rt-14-dev

# --- tests -----------------------------------------------------------------
$(BUILD)/test_%: test/test_%.c $(TEST_DEPS) | $(BUILD)
	$(CC) $(BASE) $(CFLAGS) $(EXTRA) $< -o $@ $(CHECK_LIBS)

$(BUILD):
	@mkdir -p $@

test check: deps headers
	@$(MAKE) --no-print-directory run-tests

.PHONY: run-tests
# Tests that run the examples (cross-process) find them in TB_BUILD_DIR.
run-tests: $(addprefix $(BUILD)/,$(TESTS) $(EXAMPLES))
	@set -e; for t in $(TESTS); do echo "== $$t"; \
	TB_BUILD_DIR=$(BUILD) $(RUNNER) ./$(BUILD)/$$t; done

# Each public header compiles alone (twice, to check its guard) with gcc and
# clang when it is there.
headers: deps
	@set -e; for h in $(wildcard $(HEADERS)); do \
	for cc in gcc $$(command -v clang >/dev/null && echo clang); do \
	printf '#include "%s"\n#include "%s"\n' $$h $$h | \
	$$cc -std=c99 $(WARN) -pedantic -I. -x c -fsyntax-only - || exit 1; \
	done; done; echo "headers: each compiles on its own"

# Under ThreadSanitizer the atomics helpers switch to __atomic builtins
# (TSan cannot see ck's inline assembly); stress tests run longer.
tsan: deps
	@command -v clang >/dev/null || $(APT_INSTALL) clang
	@$(MAKE) --no-print-directory run-tests BUILD=build/tsan CC=clang \
	CFLAGS="-O1 -fsanitize=thread" TB_STRESS=long \
	RUNNER="env TSAN_OPTIONS=halt_on_error=1 CK_TIMEOUT_MULTIPLIER=20"

# ASan cannot see ck's inline assembly either: use ck's builtins port.
asan: deps
	@command -v clang >/dev/null || $(APT_INSTALL) clang
	@$(MAKE) --no-print-directory run-tests BUILD=build/asan CC=clang \
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
	@$(MAKE) --no-print-directory run-tests BUILD=build/m32 CC=gcc \
	CFLAGS="-O2 -m32 -idirafter $(M32_INC)" \
	CHECK_LIBS="$$(PKG_CONFIG_LIBDIR=/usr/lib/i386-linux-gnu/pkgconfig pkg-config --cflags --libs check) -pthread"

export TB_STRESS

# --- fuzzing ---------------------------------------------------------------
build/fuzz/%: fuzz/%.c $(HEADERS)
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

# --- bench and demo --------------------------------------------------------
$(BUILD)/bench_%: bench/%.c $(HEADERS) $(wildcard bench/*.h) | $(BUILD)
	$(CC) $(BASE) -O2 -DNDEBUG $(EXTRA) $< -o $@ -pthread -lm

bench: deps $(addprefix $(BUILD)/,$(BENCHES))
	@set -e; for b in $(BENCHES); do ./$(BUILD)/$$b; done

$(BUILD)/%: examples/%.c $(HEADERS) $(wildcard examples/*.h) | $(BUILD)
	$(CC) $(BASE) $(CFLAGS) $(EXTRA) $< -o $@ -pthread

demo: deps $(BUILD)/demo
	./$(BUILD)/demo

# --- install ---------------------------------------------------------------
install:
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 0644 $(wildcard $(HEADERS)) $(DESTDIR)$(PREFIX)/include/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' tbring.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/tbring.pc
	chmod 0644 $(DESTDIR)$(PREFIX)/lib/pkgconfig/tbring.pc

uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/include/,$(HEADERS)) \
		$(DESTDIR)$(PREFIX)/lib/pkgconfig/tbring.pc

clean:
	rm -rf build demo.pftrace
