/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/bench.h - what bench/ring.c and bench/buffer.c share: the clock,
 * the environment knobs, medians and the row filter.
 *
 * Knobs (environment):
 *   TB_BENCH_RUNS     timed runs per row (default 5); a row reports the
 *                     median run.  For an even count the lower of the two
 *                     middle runs, so that the median is always one real
 *                     run and every figure of a row comes from it.
 *   TB_BENCH_SECONDS  bench_ring: seconds per timed run (default 0.5).
 *   TB_BENCH_WARMUP   bench_ring: seconds of the untimed warm-up run of
 *                     each row (default 0.2; 0: none).
 *
 * Row filter: every argument is a shell-style pattern (fnmatch(3), no
 * flags) matched against the whole row name; a row runs when any pattern
 * matches it.  A plain name selects exactly that row ("1w-512-stall" is
 * not "1w-512-stall-scrape"); "1w-512-*" or "*stall*" select several.  An
 * argument that matches no row is an error (exit 2), so that a typo does
 * not silently run nothing.  -l or --list prints the row names.
 */
#ifndef TB_BENCH_H
#define TB_BENCH_H

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_MAX_RUNS	101u

static inline double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* @name as a number >= @min; @def when unset or not a number >= @min. */
static inline double bench_env(const char *name, double def, double min)
{
	const char *s = getenv(name);
	char *end;
	double v;

	if (!s || !*s)
		return def;
	v = strtod(s, &end);
	if (*end || !(v >= min)) {
		fprintf(stderr, "bench: ignoring %s=%s (want a number >= %g)\n",
			name, s, min);
		return def;
	}
	return v;
}

static inline unsigned bench_runs(void)
{
	double v = bench_env("TB_BENCH_RUNS", 5, 1);

	return v > BENCH_MAX_RUNS ? BENCH_MAX_RUNS : (unsigned)v;
}

/*
 * Index of the median of @v[0..n): the middle element, for an even @n the
 * lower of the two middle ones.  Ties go to the earlier run.
 */
static inline unsigned bench_median_index(const double *v, unsigned n)
{
	unsigned i, j;

	for (i = 0; i < n; i++) {
		unsigned below = 0, same = 0;

		for (j = 0; j < n; j++) {
			below += v[j] < v[i];
			same += v[j] == v[i] && j < i;
		}
		if (below + same == (n - 1) / 2)
			return i;
	}
	return 0;
}

static inline double bench_median(const double *v, unsigned n)
{
	return v[bench_median_index(v, n)];
}

/* (max - min) / median, in per cent: how far this row's runs spread. */
static inline double bench_spread(const double *v, unsigned n)
{
	double lo = v[0], hi = v[0], m = bench_median(v, n);
	unsigned i;

	for (i = 1; i < n; i++) {
		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
	}
	return m > 0 ? 100.0 * (hi - lo) / m : 0;
}

/*
 * Parses the command line against the @n row @names: sets @sel[i] when
 * row i is to run (every row when there are no patterns).  Handles -l,
 * --list, -h and --help itself (and exits); exits 2 on an unknown option
 * or a pattern that matches no row.
 */
static inline void bench_select(int argc, char **argv,
				const char *const *names, unsigned n,
				unsigned char *sel)
{
	unsigned i;
	int a;

	memset(sel, argc > 1 ? 0 : 1, n);
	for (a = 1; a < argc; a++) {
		const char *pat = argv[a];
		unsigned hits = 0;

		if (!strcmp(pat, "-l") || !strcmp(pat, "--list")) {
			for (i = 0; i < n; i++)
				printf("%s\n", names[i]);
			exit(0);
		}
		if (!strcmp(pat, "-h") || !strcmp(pat, "--help")) {
			printf("usage: %s [-l | --list] [PATTERN...]\n"
			       "Runs the rows whose whole name matches a "
			       "PATTERN (an fnmatch(3) glob;\na plain name "
			       "is that row only), or every row.  -l lists "
			       "the row names.\nEnvironment: TB_BENCH_RUNS "
			       "(timed runs per row; the median is reported);"
			       "\nbench_ring also TB_BENCH_SECONDS (per run) "
			       "and TB_BENCH_WARMUP (0: none).\n",
			       argv[0]);
			exit(0);
		}
		if (pat[0] == '-' && pat[1]) {
			fprintf(stderr, "bench: unknown option %s (try -h)\n",
				pat);
			exit(2);
		}
		for (i = 0; i < n; i++) {
			if (fnmatch(pat, names[i], 0) == 0) {
				sel[i] = 1;
				hits++;
			}
		}
		if (!hits) {
			fprintf(stderr, "bench: no row matches '%s'; rows:\n",
				pat);
			for (i = 0; i < n; i++)
				fprintf(stderr, "  %s\n", names[i]);
			exit(2);
		}
	}
}

#endif /* TB_BENCH_H */
