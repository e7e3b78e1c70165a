/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test/spawn_helpers.h - running the project's own binaries from a test:
 * build/NAME (the directory is $TB_BUILD_DIR, default "build"), with
 * $TB_EXEC_WRAP, when set, in front of it (words split on spaces; make
 * cross sets it to the target's qemu), stdout and stderr into a file.
 */
#ifndef TEST_SPAWN_HELPERS_H
#define TEST_SPAWN_HELPERS_H

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>

static inline const char *spawn_bin_dir(void)
{
	const char *d = getenv("TB_BUILD_DIR");

	return d && *d ? d : "build";
}

/*
 * Splits $TB_EXEC_WRAP into at most @max words of @argv, in @buf; returns
 * how many (0 when it is unset or empty).
 */
static inline unsigned spawn_wrap(char *buf, size_t size, const char **argv,
				  unsigned max)
{
	const char *w = getenv("TB_EXEC_WRAP");
	unsigned n = 0;
	char *p;

	if (!w || !*w)
		return 0;
	ck_assert_uint_lt(strlen(w), size);
	strcpy(buf, w);
	for (p = strtok(buf, " "); p; p = strtok(NULL, " ")) {
		ck_assert_uint_lt(n, max);
		argv[n++] = p;
	}
	return n;
}

/*
 * Starts build/@name with @args (NULL-terminated), stdout and stderr to
 * @out; the child dies with the test, whatever happens to it.
 */
static inline pid_t spawn_to(const char *name, const char *out,
			     const char **args)
{
	char path[512], wrap[256];
	const char *argv[48];
	unsigned n, k;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/%s", spawn_bin_dir(), name);
	ck_assert_msg(access(path, X_OK) == 0, "%s: %s (build it first: "
		      "make %s)", path, strerror(errno), path);
	n = spawn_wrap(wrap, sizeof(wrap), argv, 8);
	argv[n] = path;
	for (k = 0; args[k]; k++) {
		ck_assert_uint_lt(n + k + 2, sizeof(argv) / sizeof(argv[0]));
		argv[n + k + 1] = args[k];
	}
	argv[n + k + 1] = NULL;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (!pid) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		close(fd);
		if (n)	/* the wrapper is looked up in PATH */
			execvp(argv[0], (char *const *)argv);
		else
			execv(path, (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* The whole file, NUL-terminated (NULL if it cannot be read). */
static inline char *spawn_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t n = 0, cap = 0, got;
	char *buf = NULL;

	if (!f)
		return NULL;
	do {
		if (cap - n < 65536) {
			cap = cap ? 2 * cap : 65536;
			buf = (char *)realloc(buf, cap + 1);
			ck_assert_ptr_nonnull(buf);
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
	} while (got);
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

#endif /* TEST_SPAWN_HELPERS_H */
