/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce_eal_argv(): the EAL argument vector droce's programs build, without
 * starting the EAL. The caller's arguments are kept; a default (given,
 * $DROCE_EAL_ARGS, or the built-in) only when there are none;
 * $DROCE_EAL_EXTRA_ARGS always appended; --in-memory becomes --no-shconf
 * when --no-huge is anywhere; -EINVAL and -ENOSPC for bad sizes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "droce.h"
#include "droce_test.h"

static char buf[256];
static char *av[16];

static int build(int argc, const char *defaults, const char *env,
		 const char *extra)
{
	if (env)
		setenv("DROCE_EAL_ARGS", env, 1);
	else
		unsetenv("DROCE_EAL_ARGS");
	if (extra)
		setenv("DROCE_EAL_EXTRA_ARGS", extra, 1);
	else
		unsetenv("DROCE_EAL_EXTRA_ARGS");
	return droce_eal_argv(av, argc, 16, defaults, buf, sizeof(buf));
}

/* av[0..n) joined by single spaces equals want, and av[n] is NULL. */
static void expect(int n, const char *want, const char *what)
{
	char got[512] = "";

	CHECK_CMP(n, >=, 1);
	for (int i = 1; i < n; i++) {
		if (i > 1)
			strcat(got, " ");
		strcat(got, av[i]);
	}
	if (strcmp(got, want) != 0)
		DT_FAIL_(1, "%s: got \"%s\", want \"%s\"", what, got, want);
	CHECK(av[n] == NULL);
	CHECK(strcmp(av[0], "prog") == 0);
}

int main(void)
{
	const char *dflt = sysconf(_SC_NPROCESSORS_ONLN) > 1 ?
		"-l 0-1 --in-memory --no-pci --log-level=*:warning" :
		"-l 0 --in-memory --no-pci --log-level=*:warning";
	char many[200];

	dt_watchdog(20);
	av[0] = (char *)(uintptr_t)"prog";
	expect(build(1, NULL, NULL, NULL), dflt, "built-in default");
	expect(build(1, NULL, "  -l 1\t--no-pci  ", NULL), "-l 1 --no-pci",
	       "DROCE_EAL_ARGS, odd white space");
	expect(build(1, NULL, "", NULL), dflt, "empty DROCE_EAL_ARGS");
	expect(build(1, "-l 0 --in-memory", "-l 1", NULL), "-l 0 --in-memory",
	       "the caller's default wins over DROCE_EAL_ARGS");
	expect(build(1, "-l 0 --in-memory", NULL, "--no-huge -m 512"),
	       "-l 0 --no-shconf --no-huge -m 512", "--no-huge in the extra words");
	expect(build(1, "--no-huge --in-memory -l 0", NULL, NULL),
	       "--no-huge --no-shconf -l 0", "--no-huge before --in-memory");
	av[1] = (char *)(uintptr_t)"--in-memory";
	av[2] = (char *)(uintptr_t)"-l";
	av[3] = (char *)(uintptr_t)"3";
	expect(build(4, "-l 9", "-l 8", "--no-huge"),
	       "--no-shconf -l 3 --no-huge", "the caller's own arguments");
	av[1] = (char *)(uintptr_t)"-l";
	av[2] = (char *)(uintptr_t)"3";
	expect(build(3, NULL, "-l 8", ""), "-l 3", "empty extra words");
	/* sizes */
	CHECK_EQ(droce_eal_argv(av, 1, 1, NULL, buf, sizeof(buf)), -EINVAL);
	CHECK_EQ(droce_eal_argv(av, 0, 16, NULL, buf, sizeof(buf)), -EINVAL);
	CHECK_EQ(droce_eal_argv(NULL, 1, 16, NULL, buf, sizeof(buf)), -EINVAL);
	CHECK_EQ(droce_eal_argv(av, 1, 16, NULL, NULL, 0), -EINVAL);
	memset(many, 0, sizeof(many));
	for (int i = 0; i < 20; i++)
		strcat(many, "-x ");
	CHECK_EQ(build(1, many, NULL, NULL), -ENOSPC);	/* 20 words, 16 slots */
	unsetenv("DROCE_EAL_EXTRA_ARGS");
	CHECK_EQ(droce_eal_argv(av, 1, 16, "-l 0-1 --in-memory", buf, 8),
		 -ENOSPC);				/* 8 bytes of words */
	printf("test_eal_argv: %s\n", dt_failures ? "FAILED" : "PASSED");
	return dt_failures ? 1 : 0;
}
