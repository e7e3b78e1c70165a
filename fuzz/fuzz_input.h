/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz/fuzz_input.h - what every fuzz target shares: CHECK, reading the
 * input a byte at a time (zeros once it runs out), FUZZ_TRACE and the
 * default per-input timeout.
 */
#ifndef FUZZ_INPUT_H
#define FUZZ_INPUT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An oracle's rule: a broken one is a finding (libFuzzer sees the abort). */
#define CHECK(c)							\
	do {								\
		if (!(c)) {						\
			fprintf(stderr, "%s:%d: check failed: %s\n",	\
				__FILE__, __LINE__, #c);		\
			abort();					\
		}							\
	} while (0)

struct in {
	const uint8_t *p;
	size_t n;
};

static inline unsigned get(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static inline unsigned get16(struct in *in)
{
	return get(in) | get(in) << 8;
}

static inline uint32_t get32(struct in *in)
{
	return (uint32_t)get16(in) | (uint32_t)get16(in) << 16;
}

static inline uint64_t get64(struct in *in)
{
	return (uint64_t)get32(in) | (uint64_t)get32(in) << 32;
}

/* FUZZ_TRACE=1 in the environment: say what runs, to read a reproducer. */
static int trace;

#define TRACE(...)							\
	do {								\
		if (trace)						\
			fprintf(stderr, __VA_ARGS__);			\
	} while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * For LLVMFuzzerInitialize(): reads FUZZ_TRACE, and makes a hang fail a
 * 60-second run: unless the command line says otherwise, one input may
 * take 10 s (libFuzzer's default is 1200).
 */
static inline void fuzz_init(int *argc, char ***argv)
{
	static char *args[64], timeout[] = "-timeout=10";
	int i;

	trace = getenv("FUZZ_TRACE") != NULL;
	for (i = 1; i < *argc; i++)
		if (!strncmp((*argv)[i], "-timeout=", 9))
			return;
	if (*argc + 2 > (int)(sizeof(args) / sizeof(args[0])))
		return;
	for (i = 0; i < *argc; i++)
		args[i] = (*argv)[i];
	args[i++] = timeout;
	args[i] = NULL;
	*argc = i;
	*argv = args;
}

#endif /* FUZZ_INPUT_H */
